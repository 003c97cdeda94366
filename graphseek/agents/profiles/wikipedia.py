"""The `wikipedia` profile: what only holds for encyclopedia passages and 2Wiki-style questions.

Selected with `Context.profile = "wikipedia"` (`--profile wikipedia`); off by default. Tuned on
2WikiMultihopQA's dev questions (0-199): a relation lexicon down to "detention", kinship terms
read as two hops, the question grammar of biographies and works (head nouns such as "film" or
"husband", events such as "founded" or "detained", older / younger, same nationality), cue
phrases next to which a relation's answer stands ("directed by"), rules that guess what a
passage's title names, re-ask templates, and repairs of the tokenisation artefacts of
Wikipedia dumps. None of it applies to a user's own documents; the
`general` profile reads those (`graphseek.agents.reading`).
"""

from __future__ import annotations

import re

from graphseek.agents.profiles.base import Cue, Profile, Relation, stored_operating_point

PERSON = ["PERSON"]
PLACE = ["GPE", "LOC", "FAC"]
DATE = ["DATE"]


def _rel(key: str, labels: list[str], nouns: list[str], person: bool = False) -> Relation:
    return Relation(key=key, labels=labels, nouns=nouns, person=person)


# Relations between an entity and a person ("the director of X", "X's mother").
PERSON_RELATIONS: dict[str, Relation] = {
    r.key: r
    for r in [
        _rel("director", PERSON, ["director", "film director"], True),
        _rel("producer", PERSON + ["ORG"], ["producer"], True),
        _rel("performer", PERSON + ["ORG"], ["performer", "singer", "artist"], True),
        _rel("composer", PERSON, ["composer"], True),
        _rel("lyricist", PERSON, ["lyricist"], True),
        _rel("author", PERSON, ["author", "writer", "novelist"], True),
        _rel("screenwriter", PERSON, ["screenwriter"], True),
        _rel("founder", PERSON + ["ORG"], ["founder", "co-founder"], True),
        _rel("creator", PERSON, ["creator"], True),
        _rel("publisher", ["ORG", "PERSON"], ["publisher"], True),
        _rel("editor", PERSON, ["editor"], True),
        _rel("cinematographer", PERSON, ["cinematographer"], True),
        _rel("architect", PERSON, ["architect"], True),
        _rel("designer", PERSON, ["designer"], True),
        _rel("owner", PERSON + ["ORG"], ["owner"], True),
        _rel("presenter", PERSON, ["presenter", "host"], True),
        _rel("father", PERSON, ["father", "dad"], True),
        _rel("mother", PERSON, ["mother", "mom"], True),
        _rel("spouse", PERSON, ["spouse", "wife", "husband", "consort", "partner"], True),
        _rel("child", PERSON, ["child", "son", "daughter", "children", "kid"], True),
        _rel("sibling", PERSON, ["sibling", "brother", "sister"], True),
        _rel("grandparent", PERSON, ["grandfather", "grandmother", "grandparent"], True),
        _rel("stepparent", PERSON, ["stepmother", "stepfather"], True),
        _rel("uncle", PERSON, ["uncle", "aunt"], True),
        _rel("in_law", PERSON, ["father-in-law", "mother-in-law", "son-in-law"], True),
    ]
}

# Attributes of an entity ("the place of birth of X", "When did X die?").
ATTRIBUTE_RELATIONS: dict[str, Relation] = {
    r.key: r
    for r in [
        _rel("birth_date", DATE, ["date of birth", "birthday", "birth date", "birthdate"]),
        _rel("death_date", DATE, ["date of death", "death date"]),
        _rel("birth_place", PLACE, ["place of birth", "birthplace", "birth place"]),
        _rel("death_place", PLACE, ["place of death", "death place"]),
        _rel("burial_place", PLACE, ["place of burial", "burial place", "resting place"]),
        _rel("nationality", ["NORP", "GPE"], ["nationality", "citizenship"]),
        _rel("country", ["GPE", "LOC"], ["country"]),
        _rel("cause_of_death", ["TEXT"], ["cause of death"]),
        _rel("education", ["ORG", "FAC", "GPE"], ["alma mater", "education"]),
        _rel("employer", ["ORG", "FAC", "GPE"], ["employer", "workplace"]),
        _rel("date", DATE, ["release date", "publication date", "founding date"]),
        _rel("location", PLACE + ["ORG"], ["location", "headquarters"]),
        _rel("award", ["WORK_OF_ART", "EVENT", "ORG", "TEXT"], ["award", "prize"]),
        _rel("detention", ["FAC", "ORG", "GPE"], ["prison"]),
    ]
}

# Kinship terms that are two hops: "paternal grandfather" = father's father.
INFERRED_CHAINS: dict[str, list[str]] = {
    "paternal grandfather": ["father", "father"],
    "paternal grandmother": ["father", "mother"],
    "maternal grandfather": ["mother", "father"],
    "maternal grandmother": ["mother", "mother"],
    "grandfather": ["father", "father"],
    "grandmother": ["father", "mother"],
    "father-in-law": ["spouse", "father"],
    "mother-in-law": ["spouse", "mother"],
    "son-in-law": ["child", "spouse"],
    "daughter-in-law": ["child", "spouse"],
    "child-in-law": ["child", "spouse"],
    "sibling-in-law": ["spouse", "sibling"],
    "brother-in-law": ["spouse", "brother"],
    "sister-in-law": ["spouse", "sister"],
    "stepmother": ["father", "spouse"],
    "stepfather": ["mother", "spouse"],
    "uncle": ["father", "brother"],
    "aunt": ["father", "sister"],
    "grandson": ["child", "son"],
    "granddaughter": ["child", "daughter"],
    "grandchild": ["child", "child"],
}

RELATIONS: dict[str, Relation] = {**PERSON_RELATIONS, **ATTRIBUTE_RELATIONS}

# Question phrasings of an attribute relation, tried in order.
ATTRIBUTE_PATTERNS: list[tuple[str, str]] = [
    (r"\b(?:date of birth|birth ?date|birthday|when (?:was|is) .+ born|born when|"
     r"what year was .+ born|year of birth)\b", "birth_date"),
    (r"\b(?:date of death|death date|when did .+ (?:die|pass away)|year of death|"
     r"when was .+ killed|what year did .+ die)\b", "death_date"),
    (r"\b(?:place of birth|birthplace|birth place|where (?:was|is) .+ born|born where|"
     r"(?:city|town|country) (?:was|is) .+ born in)\b", "birth_place"),
    (r"\b(?:place of death|death place|where did .+ (?:die|pass away)|died where|"
     r"(?:city|town|country) did .+ die)\b", "death_place"),
    (r"\b(?:place of burial|burial place|where (?:was|is) .+ buried|resting place)\b",
     "burial_place"),
    (r"\b(?:cause of death|why did .+ die|how did .+ die|what did .+ die (?:of|from))\b",
     "cause_of_death"),
    (r"\b(?:nationality|citizenship|what country is .+ from|which country .+ (?:is|was|are|"
     r"were) from|which country is .+ (?:from|a citizen of))\b", "nationality"),
    (r"\b(?:where did .+ (?:study|graduate|go to school|get .+ degree)|educated|alma mater|"
     r"which (?:university|college|school) did)\b", "education"),
    (r"\b(?:where (?:does|did|do) .+ work|employer|works? (?:at|for)|workplace)\b", "employer"),
    (r"\b(?:which country|what country|in which country|in what country)\b.*\b(?:located|"
     r"situated|in)\b", "country"),
    (r"\b(?:where (?:was|is|were|are) .+ (?:detained|imprisoned|incarcerated|held))\b",
     "detention"),
    (r"\b(?:when|what year|which year|what date|in which year|in what year)\b.*\b(?:released|"
     r"come out|came out|published|founded|established|formed|opened|built|created|launched|"
     r"premiered|aired|written|made|produced|recorded|started|introduced|incorporated|issued|"
     r"debuted)\b", "date"),
    (r"\bwhere (?:is|was|are|were) .+ (?:located|situated|based|headquartered)\b", "location"),
    (r"\b(?:award|prize) (?:did|has|was)\b|\bwhat .+ (?:won|win|receive)\b", "award"),
]  # fmt: skip

# Verbs of "Who directed X?"-questions and the relation they ask about.
RELATION_VERBS: dict[str, str] = {
        "directed": "director", "produced": "producer", "composed": "composer",
        "wrote": "author", "written": "author", "founded": "founder", "created": "creator",
        "performed": "performer", "sang": "performer", "sung": "performer",
        "published": "publisher", "married": "spouse", "marry": "spouse",
        "designed": "designer",
}  # fmt: skip

# ---------------------------------------------------------------------------------------------
# relation cues in passages: (regex, where the answer stands relative to the match, weight)

_PARENT = r"\b(?:son|daughter|child|children|eldest son|second son|youngest son|heir)s?"
_PARENT_OF = _PARENT + r" of\b"

CUES: dict[str, list[Cue]] = {
    "director": [
        (r"\bdirected by\b|\bhelmed by\b|\bdirection of\b", "after", 1.0),
        (r"\bdirected and (?:written|produced) by\b|\bwritten and directed by\b", "after", 1.0),
        (r"\bdirector\b|\bfilmmaker\b", "after", 0.7),
        (r"\bfilm by\b|\bmovie by\b", "after", 0.7),
        (r"\bdirected\b|\bdirector\b", "before", 0.5),
        (
            r"\bstarring\b|\bstars\b|\bproduced by\b|(?<!and )\bwritten by\b|\bmusic by\b",
            "after",
            -0.5,
        ),
        (r"\bdirected\b|\bdirector of\b|\bdirectorial\b", "subject", 0.8),
    ],
    "producer": [
        (r"\bproduced by\b", "after", 1.0),
        (r"\bproducer\b", "after", 0.7),
        (r"\bproduced\b", "subject", 0.6),
    ],
    "performer": [
        (r"\b(?:song|single|album|track|ep|ballad|hit) (?:by|from)\b", "after", 1.0),
        (
            r"\b(?:recorded|performed|sung|released|written and performed|covered) by\b",
            "after",
            0.9,
        ),
        (r"\b(?:singer|rapper|band|musician|artist|group|duo|singer-songwriter)\b", "after", 0.6),
        (r"\bby\b", "after", 0.5),
        (r"'s (?:album|single|song|record|debut|ep)\b", "before", 1.0),
        (r"\brecorded\b|\breleased\b|\bsang\b|\bperformed\b", "before", 0.5),
        (
            r"\b(?:written|composed|produced|co-written) by\b|\(music\)|\(words\)|\blyrics\b",
            "after",
            -0.6,
        ),
        (r"\brecorded\b|\breleased\b|\bsingle\b|\bsang\b", "subject", 0.5),
    ],  # fmt: skip
    "composer": [
        (r"\b(?:composed|scored) by\b|\bmusic (?:was )?(?:composed |written )?by\b", "after", 1.0),
        (r"\bcomposer\b|\bscore\b|\bsoundtrack\b|\bmusic\b", "after", 0.7),
        (r"\bwritten by\b", "after", 0.5),
        (r"\bcomposed\b|\bscored\b", "before", 0.5),
        (r"\bcomposed\b|\bscore\b|\bcomposer\b", "subject", 0.6),
    ],
    "lyricist": [(r"\blyrics (?:by|written by)\b|\blyricist\b", "after", 1.0)],
    "author": [
        (r"\bwritten by\b|\b(?:novel|book|story|play|poem|memoir|series) by\b", "after", 1.0),
        (r"\bauthor\b|\bwriter\b|\bnovelist\b", "after", 0.7),
        (r"\bwrote\b", "before", 0.7),
        (r"\bwrote\b|\bauthor of\b", "subject", 0.7),
    ],
    "screenwriter": [(r"\bscreenplay by\b|\bwritten by\b|\bscreenwriter\b", "after", 1.0)],
    "founder": [
        (r"\b(?:founded|established|created|started|formed|co-founded) by\b", "after", 1.0),
        (r"\bfounder\b|\bco-founder\b", "after", 0.8),
        (r"\bfounded\b|\bestablished\b", "before", 0.6),
        (r"\bfounded\b|\bfounder of\b|\bco-founded\b", "subject", 0.7),
    ],
    "creator": [(r"\bcreated by\b|\bcreator\b", "after", 1.0), (r"\bcreated\b", "subject", 0.6)],
    "publisher": [
        (r"\bpublished by\b|\bpublisher\b|\bowned by\b|\bissued by\b", "after", 1.0),
        (r"\bpublishes\b|\bpublished\b", "before", 0.6),
        (r"\bpublishes\b|\bpublisher of\b", "subject", 0.7),
    ],
    "editor": [(r"\bedited by\b|\beditor\b", "after", 1.0)],
    "cinematographer": [(r"\bcinematography by\b|\bcinematographer\b", "after", 1.0)],
    "architect": [(r"\bdesigned by\b|\barchitect\b", "after", 1.0)],
    "designer": [(r"\bdesigned by\b|\bdesigner\b", "after", 1.0)],
    "owner": [(r"\bowned by\b|\bowner\b", "after", 1.0)],
    "presenter": [(r"\bpresented by\b|\bhosted by\b|\bpresenter\b|\bhost\b", "after", 1.0)],
    "father": [
        (_PARENT_OF, "after", 1.0),
        (r"\bfather\b(?! of)|\bborn\b[^.;]{0,40}?\bto\b|\bsired by\b", "after", 0.9),
        (_PARENT + r" of\b[^.;]*?\band\b", "after", -0.6),  # "son of A and B": B is the mother
        (r"\bfather of\b|\bmother of\b|\bgrandfather\b|\bgrandmother\b", "after", -0.5),
        (r"\bfather of\b|\b(?:his|her) (?:son|daughter|children)\b", "subject", 0.7),
    ],
    "mother": [
        (r"\bmother\b(?! of)", "after", 1.0),
        (r"\bfather of\b|\bmother of\b|\bgrandmother\b", "after", -0.5),
        (_PARENT + r" of\b[^.;]*?\band\b", "after", 1.0),
        (r"\bborn\b[^.;]{0,40}?\bto [^.;]*? and\b", "after", 0.9),
        (r"\bmother of\b", "subject", 0.8),
    ],
    "spouse": [
        (r"\bmarried\b|\bmarriage to\b|\bwedded\b", "after", 1.0),
        (r"\b(?:wife|husband|spouse|consort|widow|widower|queen consort)\b", "after", 0.9),
        (r"\bmarried\b", "before", 0.6),
        (r",? (?:whom|who) (?:he|she) (?:married|wed)\b", "before", 1.0),
        (r"\bmarried\b|\bwife of\b|\bhusband of\b|\bconsort of\b|\bwidow of\b", "subject", 0.8),
    ],
    "child": [
        (r"\b(?:son|daughter|sons|daughters|children|child|heir|issue)\b(?! of)", "after", 0.9),
        (_PARENT_OF + r"|\bfather\b(?! of)|\bmother\b(?! of)", "after", -0.5),
        (r"\bfather of\b|\bmother of\b|\bparents? of\b", "after", 1.0),
        (_PARENT_OF, "subject", 1.0),
    ],
    "sibling": [
        (r"\b(?:brother|sister|sibling|half-brother|half-sister)s?\b(?! of)", "after", 1.0),
        (r"\b(?:brother|sister|sibling) of\b", "subject", 1.0),
    ],
    "birth_date": [
        (r"\bborn\b|\bb\.", "after", 1.0),
        (r"\bbirth\b", "after", 0.6),
    ],
    "death_date": [
        (
            r"\bdied\b|\bd\.|\bdeath\b|\bkilled\b|\bexecuted\b|\bpassed away\b"
            r"|\bassassinated\b|\bmurdered\b",
            "after",
            1.0,
        ),
    ],
    "birth_place": [
        (r"\bborn\b[^.;]{0,60}?\b(?:in|at|near)\b", "after", 1.0),
        (r"\bnative of\b|\bhometown\b|\bbirthplace\b|\bborn and raised in\b", "after", 0.9),
        (r"\bborn\b", "after", 0.5),
    ],
    "death_place": [
        (r"\bdied\b[^.;]{0,60}?\b(?:in|at|near)\b", "after", 1.0),
        (
            r"\bdeath\b[^.;]{0,40}?\b(?:in|at)\b|\b(?:killed|assassinated|murdered|executed)\b"
            r"[^.;]{0,70}?\b(?:in|at)\b",
            "after",
            0.9,
        ),
        (r"\bdied\b", "after", 0.5),
    ],
    "burial_place": [
        (r"\b(?:buried|interred|laid to rest|entombed)\b[^.;]{0,40}?\b(?:in|at)\b", "after", 1.0),
        (r"\bburial\b|\bgrave\b|\btomb\b|\bburied\b", "after", 0.6),
    ],
    "nationality": [
        (r"\b(?:is|was) an?\b", "after", 0.8),
        (r"\bcitizen of\b|\bnationality\b|\bfrom\b|\bborn in\b", "after", 0.6),
    ],
    "country": [
        (
            r"\b(?:located|situated|village|town|city|municipality|commune|district|in)\b",
            "after",
            0.5,
        ),
    ],  # fmt: skip
    "origin_country": [
        (r"\b(?:film|movie|drama|comedy|documentary|series|thriller|western)\b", "before", 1.0),
        (r"\b(?:is|was) an?\b", "after", 0.6),
        (r"\bproduced in\b|\bfilmed in\b|\bfrom\b", "after", 0.5),
    ],
    "education": [
        (
            r"\b(?:studied|educated|graduated|attended|enrolled|alumnus|alumna|student|degree|"
            r"studies|trained|matriculated)\b",
            "after",
            1.0,
        ),
    ],  # fmt: skip
    "employer": [
        (
            r"\b(?:worked|works|working|professor|lecturer|taught|teaches|employed|joined|faculty|"
            r"teacher|researcher|fellow)\b",
            "after",
            1.0,
        ),
    ],  # fmt: skip
    "cause_of_death": [
        (
            r"\bdied (?:of|from|after|due to)\b|\bdeath from\b|\bsuccumbed to\b|\bcause of death\b"
            r"|\bdied as a result of\b|\bdiagnosed with\b|\bsuffering from\b|\bsuffered from\b"
            r"|\bkilled (?:in|by)\b|\bclaimed (?:his|her) life\b",
            "after",
            1.0,
        ),
    ],  # fmt: skip
    "date": [
        (
            r"\b(?:released|founded|established|published|premiered|formed|opened|built|created|"
            r"launched|aired|debuted|issued|started|incorporated|completed)\b",
            "after",
            1.0,
        ),
        (
            r"\b(?:film|movie|song|album|single|novel|magazine|newspaper|book|series|"
            r"documentary|drama|comedy|thriller|musical|western|opera|play|game|company|band|"
            r"museum)\b",
            "before",
            0.8,
        ),
        (r"\b(?:is|was) an?\b", "after", 0.7),
        (r"\bin\b", "after", 0.3),
    ],  # fmt: skip
    "detention": [
        (
            r"\b(?:detained|incarcerated|imprisoned|held|prison|jail|correctional|sentenced|"
            r"custody)\b",
            "after",
            1.0,
        ),
    ],  # fmt: skip
    "location": [
        (
            r"\b(?:located|situated|based|headquartered|lies)\b[^.;]{0,30}?\b(?:in|at|on)\b",
            "after",
            1.0,
        ),
    ],  # fmt: skip
    "award": [(r"\b(?:won|received|awarded|nominated|honored|honoured)\b", "after", 1.0)],
}

# What a passage's title names, from the head of its first description.
TITLE_TYPES: list[tuple[str, str]] = [
    (r"\b(?:film|movie|song|single|album|novel|book|series|play|opera|documentary|sitcom|"
     r"video game|poem|painting|ep|soundtrack|musical|anthology|comic|episode|magazine|"
     r"newspaper|journal)\b", "WORK_OF_ART"),
    (r"\b(?:village|town|city|municipality|commune|river|mountain|island|district|county|"
     r"province|region|lake|peak|settlement|hamlet|suburb|neighbourhood|neighborhood|parish|"
     r"capital|state)\b", "GPE"),
    (r"\b(?:company|band|group|university|college|school|club|team|party|organization|"
     r"organisation|label|corporation|studio|firm|institute|museum|agency|network)\b", "ORG"),
]  # fmt: skip

# Nouns that describe a person ("X is an American actor").
PERSON_WORDS = (
    r"\b(?:actor|actress|singer|politician|writer|director|player|footballer|king|queen|prince|"
    r"princess|duke|duchess|count|countess|bishop|composer|poet|painter|musician|rapper|artist|"
    r"author|producer|screenwriter|journalist|businessman|businesswoman|scientist|nobleman|"
    r"noblewoman|lady|emperor|empress|filmmaker|cinematographer|novelist|lawyer|judge|"
    r"general|officer|soldier|physician|architect|engineer|historian|philosopher|economist|"
    r"mathematician|coach|athlete|cyclist|boxer|wrestler|dancer|model|comedian|presenter|"
    r"entrepreneur|activist|priest|monk|saint|pope|margrave|landgrave|baron|earl|marquess|"
    r"knight|consort|heir|son|daughter|wife|husband|guitarist|drummer|bassist|pianist|"
    r"sculptor|photographer|designer|diplomat|explorer|inventor|professor|teacher|chef|"
    r"cricketer|swimmer|skier|tennis|golfer|jockey|racing driver|astronaut|monarch|ruler|"
    r"chieftain|lord|abbess|abbot|nun|missionary|theologian|astronomer|physicist|chemist|"
    r"biologist|botanist|linguist|archaeologist|sociologist|psychologist|critic|editor|"
    r"publisher|illustrator|cartoonist|animator|songwriter|conductor|violinist|organist|"
    r"vocalist|frontman|performer|entertainer|personality|socialite|member)\b"
)

# Titles of nobility and office that Wikipedia writes into a person's name after a comma
# ("William, Duke of Saxe-Weimar"): the article's title, so the answer's full form.
NAME_TITLES = (
    r"(?:Grand |Arch)?(?:Duke|Duchess)|Count|Countess|Earl|Margrave|Margravine|Landgrave|"
    r"Elector|Electress|Prince|Princess|King|Queen|Emperor|Empress|Lord|Lady|Baron|Baroness|"
    r"Viscount|Viscountess|Marquess|Marquis|Marchioness|Abbess|Abbot|Bishop|Archbishop"
)

# ---------------------------------------------------------------------------------------------
# Wikipedia-dump clean-up

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sep\.?|Sept\.?|Oct\.?|Nov\.?|Dec\.?)"
)


def clean_text(text: str) -> str:
    """Repair tokenisation artefacts of Wikipedia dumps: "Name( born" -> "Name (born",
    "(March 25, 1942August 16, 2018)" -> "(March 25, 1942 – August 16, 2018)"."""
    text = re.sub(rf"(\d{{3,4}})(?={_MONTH}\s)", r"\1 – ", text)
    text = re.sub(r"(\b\d{1,2} [A-Z][a-z]+ \d{4})(?=\d{1,2} [A-Z][a-z]+ \d{4})", r"\1 – ", text)
    text = text.replace("’", "'")
    text = re.sub(r"(?<=\w)\(", " (", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"\s+\)", ")", text)
    text = re.sub(r"(?<=[A-Za-z])- (?=[A-Za-z])", "-", text)
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# question wordings

# Re-ask templates of a one-hop question, per relation.
REPHRASE: dict[str, list[str]] = {
    "director": ["Who directed {f}?", "Who is the director of {f}?"],
    "performer": ["Who performed {f}?", "Who is the performer of {f}?"],
    "composer": ["Who composed the music for {f}?", "Who is the composer of {f}?"],
    "author": ["Who wrote {f}?", "Who is the author of {f}?"],
    "producer": ["Who produced {f}?", "Who is the producer of {f}?"],
    "founder": ["Who founded {f}?", "Who is the founder of {f}?"],
    "publisher": ["Who published {f}?", "Who is the publisher of {f}?"],
    "father": ["Who was the father of {f}?", "Who is the father of {f}?"],
    "mother": ["Who was the mother of {f}?", "Who is the mother of {f}?"],
    "spouse": ["Who did {f} marry?", "Who is the spouse of {f}?"],
    "child": ["Who was the child of {f}?", "Who is the child of {f}?"],
    "sibling": ["Who was the sibling of {f}?", "Who is the sibling of {f}?"],
    "birth_date": ["When was {f} born?", "What is the date of birth of {f}?"],
    "death_date": ["When did {f} die?", "What is the date of death of {f}?"],
    "birth_place": ["Where was {f} born?", "In which city was {f} born?"],
    "death_place": ["Where did {f} die?", "In which city did {f} die?"],
    "burial_place": ["Where was {f} buried?", "Where is {f} buried?"],
    "nationality": ["What nationality is {f}?", "Which country is {f} from?"],
    "origin_country": ["Which country is {f} from?", "What nationality is {f}?"],
    "country": ["Which country is {f} located in?", "In which country is {f}?"],
    "education": ["Where did {f} study?", "Where was {f} educated?"],
    "employer": ["Where did {f} work?", "Who employed {f}?"],
    "cause_of_death": ["Why did {f} die?", "What was the cause of death of {f}?"],
    "date": ["When was {f} first released or founded?"],
}

# Attribute questions about a placeholder, in the wording retrieval handles best.
CANONICAL: list[tuple[str, str]] = [
    (
        r"^(?:what|where) (?:is|was) the (?:place of birth|birthplace) of (#\d+)\?$",
        "Where was {} born?",
    ),
    (r"^(?:what|where) (?:is|was) the place of death of (#\d+)\?$", "Where did {} die?"),
    (r"^(?:what|where) (?:is|was) the place of burial of (#\d+)\?$", "Where was {} buried?"),
    (r"^(?:what|when) (?:is|was) the date of birth of (#\d+)\?$", "When was {} born?"),
    (r"^when is (#\d+)'s birthday\?$", "When was {} born?"),
    (r"^(?:what|when) (?:is|was) the date of death of (#\d+)\?$", "When did {} die?"),
    (r"^(?:what|which) (?:is|was) the cause of death of (#\d+)\?$", "Why did {} die?"),
]


# ---------------------------------------------------------------------------------------------
# question reading beyond the general rules (`graphseek.agents.offline.answer_types`)

# Type words before a title ("film Blood Street") and of a comparison's options.
CATEGORY_WORDS: tuple[str, ...] = (
    "film", "movie", "song", "album", "book", "novel", "magazine", "newspaper", "band",
    "company", "series", "show", "play", "single", "tv series", "video game", "game",
    "opera", "painting", "poem", "documentary",
)  # fmt: skip

# Head nouns of "which/what N"-questions beyond the general noun classes: kinds of works,
# occupations, titles and kinship terms, and the labels they expect.
HEAD_NOUNS: list[tuple[list[str], str]] = [
    (["DATE"], "birthday"),
    (["NORP", "GPE"], "nationality citizenship"),
    (
        ["WORK_OF_ART", "TITLE"],
        "film movie song album book novel series show play opera painting game single episode "
        "poem track sitcom documentary",
    ),
    (["ORG"], "band magazine newspaper publisher"),
    (
        ["PERSON"],
        "actor actress singer director king queen bassist guitarist drummer musician author "
        "writer composer emperor footballer artist poet painter producer rapper husband wife "
        "father mother son daughter brother sister child spouse prince princess duke pope saint",
    ),
    (["TEXT"], "award prize"),
]

# Verbs ending "When was X born?"-questions (life events, and the events of the entities a
# biography names: where a person studied or was detained, when a company was founded), and
# the frames of "Who directed X?"-questions.
FOCUS_VERBS = (
    r"born|die|died|buried|married|pass away|study|studied|founded|formed|detained|imprisoned|"
    r"educated|graduate|killed|headquartered"
)
FOCUS_FRAMES: list[str] = [
    r"^(?:what|which) (?:nationality) (?:is|was|are|were) (?P<f>.+?)(?: from)?$",
    r"^who (?:did|does) (?P<f>.+?) (?:marry|wed)$",
    r"^who (?:directed|composed|performed|sang) (?P<f>.+)$",
    r"^who (?:produced|wrote|founded|created|published|designed) (?P<f>.+)$",
]

# Events of works and organisations whose dates a comparison compares ("Which film premiered
# first?"), and the event a date step asks for when the comparison names none.
DATE_VERBS = (
    r"founded|formed|premiered|aired|produced|recorded|composed|painted|incorporated|debuted"
)
CATEGORY_DATE_VERBS: dict[str, str] = {
    **{word: "released" for word in CATEGORY_WORDS},
    **{word: "founded" for word in ("company", "band", "magazine", "newspaper")},
}

# Comparisons through a bridge person: "Which film has the director who was born later?"
COMPARISON_BRIDGES: list[str] = [
    r"\b(?:has|have|had|with|whose|of)\s+(?:the\s+)?(director|performer|composer|author|"
    r"writer|producer|founder|creator|singer|publisher|screenwriter)s?\b",
    r"\b(director|performer|composer|author|producer|founder|creator)s of\b",
]
# Life events compared: (regex over the criterion, attribute, pick or "" for first / later).
COMPARISON_EVENTS: list[tuple[str, str, str]] = [
    (r"\blived longer\b|\blonger life\b|\blived the longest\b", "lifespan", "max"),
    (r"\blived shorter\b|\bshorter life\b", "lifespan", "min"),
    (r"\bborn\b", "birth_date", ""),
    (r"\b(?:died|die|dead|death|passed away)\b", "death_date", ""),
]

_PERSON_WORDS_RE = re.compile(PERSON_WORDS, re.I)


def same_attribute(text: str, category: str, via: str | None) -> str | None:
    """The attribute a "same ..." question about persons, works or places compares."""
    low = text.lower()
    if re.search(r"\bsame nationalit|\bnationality\b", low):
        return "nationality"
    if re.search(r"\bsame (?:country|state)\b", low):
        if via or category in {"person"}:
            return "nationality"
        if re.search(r"\blocated\b|\bsituated\b|\bfound in\b", low):
            return "country"
        if category in {"", "mountain", "river", "island", "place", "city", "village", "town"}:
            if re.search(r"\b(?:from|originate|come from|made|produced)\b", low):
                return "origin_country"
            return "country"
        return "origin_country"
    if re.search(r"\bsame (?:place|city|town)\b", low):
        if re.search(r"\bdied|\bdeath", low):
            return "death_place"
        return "birth_place"
    if re.search(r"\bsame (?:year|date|day)\b", low):
        return "birth_date" if re.search(r"\bborn\b", low) else "date"
    if re.search(r"\bsame (?:genre|occupation|profession|job)\b", low):
        return "genre" if "genre" in low else "occupation"
    return None


# Sub-questions fetching one option's compared attribute.
ATTRIBUTE_QUESTIONS: dict[str, list[str]] = {
    "birth_date": ["When was {s} born?"],
    "death_date": ["When did {s} die?"],
    "lifespan": ["When was {s} born?", "When did {s} die?"],
    "origin_country": ["Which country is {s} from?"],
    "nationality": ["What nationality is {s}?"],
    "birth_place": ["Where was {s} born?"],
    "death_place": ["Where did {s} die?"],
}

# The predicate that ends a relation chain's object ("the director of X was born in").
OBJECT_TAIL = (
    r"\s+(?:(?:was|is|were|are|did|does|do|has|had)\s+)?(?:born|die|died|buried|"
    r"work(?:s|ed)?(?:\s+at|\s+for)?|stud(?:y|ied)|live[sd]?|located|situated|based|from|"
    r"founded|formed|established|released|published|detained|educated|graduated?|married|"
    r"marry|come from|originate|start(?:ed)?|end(?:ed)?|receive[sd]?|win|won|play(?:s|ed)?|"
    r"go(?:\s+to)?|attend(?:ed)?)(?:\s+(?:at|in|from|for|to))?$"
)


def work_names_person(descr_head: str) -> bool:
    """ "actor and film director": a first description typed a work that names a person."""
    return bool(
        _PERSON_WORDS_RE.search(descr_head.split(" film")[0])
        and re.search(r"\b(?:film|movie)\s+(?:director|producer|actor|actress)", descr_head)
    )


WIKIPEDIA = Profile(
    name="wikipedia",
    operating_point=stored_operating_point("wikipedia"),
    description="relation cues and title rules tuned to Wikipedia-style passages and "
    "2WikiMultihopQA-style questions",
    relations=RELATIONS,
    attribute_patterns=ATTRIBUTE_PATTERNS,
    relation_verbs=RELATION_VERBS,
    inferred_chains=INFERRED_CHAINS,
    rephrasings=REPHRASE,
    canonical=CANONICAL,
    cues=CUES,
    title_types=TITLE_TYPES,
    person_words=PERSON_WORDS,
    clean_text=clean_text,
    name_titles=NAME_TITLES,
    category_words=CATEGORY_WORDS,
    head_nouns=HEAD_NOUNS,
    focus_verbs=FOCUS_VERBS,
    focus_frames=FOCUS_FRAMES,
    comparison_bridges=COMPARISON_BRIDGES,
    comparison_events=COMPARISON_EVENTS,
    comparison_event_verbs=r"born|died|dead|founded|formed|older|younger",
    date_verbs=DATE_VERBS,
    category_date_verbs=CATEGORY_DATE_VERBS,
    older_words=r"older|oldest|elder",
    younger_words=r"younger|youngest",
    person_criterion=r"born",
    age_attribute="birth_date",
    same_attribute=same_attribute,
    same_as_verbs=r"born in",
    same_verbs=r"born|died|play|produced",
    option_prefixes=r"movies?|films?|directors of films?|directors of|songs?|albums?|books?|"
    r"bands?|magazines?|newspapers",
    option_suffixes=r"films?|movies?|songs?|albums?|books?|magazines?",
    bridge_prefix=r"(?:directors?|performers?|composers?|authors?|producers?)\s+of\s+(?:the\s+)?",
    implied_category=(r"(?:films?|movies?)", "film"),
    origin_attributes={"film": "origin_country", "movie": "origin_country"},
    attribute_questions=ATTRIBUTE_QUESTIONS,
    duration_attributes=frozenset({"lifespan"}),
    nationality_relations=frozenset({"nationality", "origin_country"}),
    place_relations=frozenset({"birth_place", "death_place", "burial_place"}),
    date_range_ends={
        "birth_date": ("start", r"\bdied\b|\bd\.\s*$"),
        "death_date": ("end", r"\bborn\b|\bb\.\s*$"),
    },
    relation_phrases={
        "death_place": "place of death",
        "birth_place": "place of birth",
        "death_date": "date of death",
        "birth_date": "date of birth",
        "burial_place": "place of burial",
    },
    titled_relations=frozenset({"director", "performer", "composer", "producer", "author"}),
    object_tail=OBJECT_TAIL,
    # Wikipedia passages are about their title: "X is a film directed by Y" answers "Who
    # directed X?" from the passage titled X
    title_weight=0.55,
    person_title=r"\((?:[^)]*\b(?:born|died|b\.|d\.|c\.)\b[^)]*|\s*\d{1,2}\s+\w+\s+\d{3,4}[^)]*)\)",
    honorifics=r"King|Queen|Prince|Princess|Emperor|Empress|Sir|Dame|Lord|Lady|Pope|Saint|St\.|"
    r"Dr\.|President|General|Count|Countess|Duke|Duchess|Archduke|Archduchess|Tsar|Sultan|Shah",
    work_names_person=work_names_person,
    mention_nouns=frozenset({"film", "song", "album", "book"}),
    mention_verbs=frozenset({"born", "died"}),
)
