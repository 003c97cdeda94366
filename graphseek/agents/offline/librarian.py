"""Extractive answering (offline policy of the Librarian role).

Given a sub-question and the retrieved passages, the Librarian drafts an answer without a
generative model:

1. the expected answer (`answer_types.expected_answer`): labels, relation, focus entity;
2. each passage is split into sentences by the spaCy parser (docs cached per passage id in an
   LRU dict, since the same passages come back for many sub-questions);
3. candidate spans are the sentences' named entities of an accepted label, dates found by
   pattern, noun chunks for free-text answers, and the passage title (Wikipedia-style
   passages are about their title: "X is a film directed by Y" answers "Who directed X?" from
   passage X, and "He was the son of X" answers "Who is the child of X?" with the title);
4. a candidate's score adds the sentence's score (MiniLM similarity to the question, lexical
   overlap, retrieval rank, and how well the passage title matches the focus entity) and a cue
   bonus: how close it stands to words that express the relation ("directed by", "born in",
   "son of ... and" for a mother), nearest first;
5. spans already in the question are excluded; the best candidate is the answer, the sentence
   and passage it came from the evidence, and the next distinct candidates the alternatives.

Yes/no and choice questions that reach the Librarian whole take a dedicated path: the attribute
of each option is drafted separately, then compared (dates, numbers, countries).
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz import fuzz

from graphseek.agents.offline.answer_types import (
    AnswerType,
    Comparison,
    country_of,
    expected_answer,
    is_country,
)
from graphseek.agents.reading.reader import ExtractiveReader
from graphseek.agents.roles import Step
from graphseek.agents.text import normalize
from graphseek.knowledge.nlp import get_nlp
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import Draft, EvidenceItem

# ---------------------------------------------------------------------------------------------
# relation cues: (regex, where the answer stands relative to the match, weight)
#   "after": the answer follows the cue; "before": it precedes it; "subject": the answer is the
#   passage's subject (its title) and the focus entity follows the cue.

_Cue = tuple[str, str, float]
_PARENT = r"\b(?:son|daughter|child|children|eldest son|second son|youngest son|heir)s?"
_PARENT_OF = _PARENT + r" of\b"

CUES: dict[str, list[_Cue]] = {
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

_COMPILED: dict[str, list[tuple[re.Pattern[str], str, float]]] = {
    key: [(re.compile(rx, re.I), where, w) for rx, where, w in cues] for key, cues in CUES.items()
}

_CROSS_LABEL = 0.3
# Wikipedia-style passages are about their title: a passage whose title names the question's
# entity holds the answer far more often than one that only mentions it.
_TITLE_WEIGHT = 0.55
_NAME_LABELS = {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "WORK_OF_ART", "PRODUCT", "EVENT"}
_STOP = set(
    "a an the of in on at to for from by with and or is are was were be been being do does did "
    "has have had who whom whose what which when where why how that this these those it its his "
    "her their there as into than then also not no yes".split()
)
_PRONOUNS = {"he", "she", "it", "they", "him", "her", "them", "his", "its", "their", "i", "we",
             "you", "this", "that", "who", "which", "one"}  # fmt: skip
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sep\.?|Sept\.?|Oct\.?|Nov\.?|Dec\.?)"
)
_DATE_RE = re.compile(
    rf"\b(?:\d{{1,2}}\s+{_MONTH}\s*,?\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}}\s*,\s*\d{{3,4}}|"
    rf"{_MONTH}\s+\d{{3,4}}|\d{{3,4}}\s*(?:BC|BCE|AD|CE)\b|(?<![\d.,])\d{{4}}(?![\d.,]\d))"
)
_TITLE_TYPES: list[tuple[str, str]] = [
    (r"\b(?:film|movie|song|single|album|novel|book|series|play|opera|documentary|sitcom|"
     r"video game|poem|painting|ep|soundtrack|musical|anthology|comic|episode|magazine|"
     r"newspaper|journal)\b", "WORK_OF_ART"),
    (r"\b(?:village|town|city|municipality|commune|river|mountain|island|district|county|"
     r"province|region|lake|peak|settlement|hamlet|suburb|neighbourhood|neighborhood|parish|"
     r"capital|state)\b", "GPE"),
    (r"\b(?:company|band|group|university|college|school|club|team|party|organization|"
     r"organisation|label|corporation|studio|firm|institute|museum|agency|network)\b", "ORG"),
]  # fmt: skip
_PERSON_WORDS = re.compile(
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
    r"vocalist|frontman|performer|entertainer|personality|socialite|member)\b",
    re.I,
)


@dataclass
class _Sentence:
    text: str
    index: int
    ents: list[tuple[str, str, int, int]]  # (text, label, start, end) relative to the sentence
    chunks: list[tuple[str, int, int, bool]]  # (text, start, end, proper)


@dataclass
class _Parsed:
    title: str
    text: str
    sentences: list[_Sentence]
    title_label: str
    vectors: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Candidate:
    text: str
    label: str
    score: float
    sentence: str
    passage: Passage
    hit_score: float
    support: int = 1


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


class OfflineLibrarian:
    """Librarian role, offline policy: extractive drafting by answer type and sentence scoring."""

    def __init__(
        self,
        embedder: Any = None,
        cache_size: int = 4096,
        max_candidates: int = 5,
        profile: str | None = None,
    ):
        # profile None: the general reader (`graphseek.agents.reading`) answers factoid questions;
        # "wikipedia": the relation cues and title rules below, tuned to Wikipedia-style passages
        self.profile = profile
        self._reader: ExtractiveReader | None = None
        self._embedder = embedder
        self._cache: OrderedDict[str, _Parsed] = OrderedDict()
        self._cache_size = cache_size
        self._questions: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.RLock()  # Send branches call one instance from several threads
        self.max_candidates = max_candidates

    # -- resources ------------------------------------------------------------------------

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from graphseek.knowledge.embedder import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    def _parse_all(self, passages: Sequence[Passage]) -> list[_Parsed]:
        with self._lock:
            return self._parse_locked(passages)

    def _encode_question(self, question: str) -> np.ndarray:
        with self._lock:
            vector = self._questions.get(question)
            if vector is None:
                vector = np.asarray(self.embedder.encode([question])[0])
                self._questions[question] = vector
                while len(self._questions) > 512:
                    self._questions.popitem(last=False)
            return vector

    def _parse_locked(self, passages: Sequence[Passage]) -> list[_Parsed]:
        missing = [p for p in passages if p.id not in self._cache]
        if missing:
            nlp = get_nlp()
            texts = [clean_text(p.text) for p in missing]
            for p, text, doc in zip(missing, texts, nlp.pipe(texts, batch_size=32), strict=True):
                self._store(p.id, _parse_doc(p.title, text, doc))
            sentences = [s.text for p in missing for s in self._cache[p.id].sentences]
            if sentences:
                vectors = self.embedder.encode(sentences)
                i = 0
                for p in missing:
                    parsed = self._cache[p.id]
                    n = len(parsed.sentences)
                    parsed.vectors = vectors[i : i + n]
                    i += n
        out = []
        for p in passages:
            self._cache.move_to_end(p.id)
            out.append(self._cache[p.id])
        return out

    def _store(self, key: str, parsed: _Parsed) -> None:
        self._cache[key] = parsed
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    # -- the role ----------------------------------------------------------------------------

    def draft(self, question: str, hits: Sequence[Hit]) -> Step[Draft]:
        question = " ".join(question.split())
        qa = expected_answer(question)
        if not hits:
            return Step(Draft(question=question, answer="", confidence=0.0))
        if qa.comparison is not None:
            return Step(self._draft_comparison(question, qa, qa.comparison, hits))
        if qa.kind == "yesno":
            return Step(self._draft_yesno(question, qa, hits))
        return Step(self._draft_entity(question, qa, hits))

    # -- factoid questions ---------------------------------------------------------------------

    @property
    def reader(self) -> ExtractiveReader:
        if self._reader is None:
            self._reader = ExtractiveReader(embedder=self._embedder)
        return self._reader

    def rank_candidates(self, question: str, hits: Sequence[Hit]) -> list[Any]:
        """All candidate answers for a factoid question, best first (one per distinct answer)."""
        if self.profile != "wikipedia":
            return self.reader.rank(question, hits)
        qa = expected_answer(question)
        return self._candidates(question, qa, hits)[0]

    def _draft_entity(self, question: str, qa: AnswerType, hits: Sequence[Hit]) -> Draft:
        if self.profile != "wikipedia":
            return self.reader.read(question, hits)
        return self._draft_entity_by_cues(question, qa, hits)

    def _draft_entity_by_cues(self, question: str, qa: AnswerType, hits: Sequence[Hit]) -> Draft:
        ranked, focus_match = self._candidates(question, qa, hits)
        if not ranked:
            return Draft(question=question, answer="", confidence=0.0)
        best = ranked[0]
        second = ranked[1].score if len(ranked) > 1 else 0.0
        confidence = _confidence(best.score, second)
        if qa.focus and focus_match < 0.7:
            # no retrieved passage is about the question's entity: the answer is a guess
            confidence = round(confidence * 0.35, 4)
        evidence = [
            EvidenceItem(
                passage_id=best.passage.id,
                title=best.passage.title,
                text=best.passage.text,
                sentence=best.sentence,
                score=round(best.score, 4),
            )
        ]
        alternatives: list[str] = []
        for cand in ranked[1:]:
            if cand.score < best.score - 0.7 or len(alternatives) >= self.max_candidates:
                break
            alternatives.append(cand.text)
        return Draft(
            question=question,
            answer=best.text,
            evidence=evidence,
            confidence=confidence,
            candidates=alternatives,
        )

    def _candidates(
        self, question: str, qa: AnswerType, hits: Sequence[Hit]
    ) -> tuple[list[_Candidate], float]:
        """Candidates best first (one per distinct answer), and the best title match."""
        hits = list(hits)
        parsed = self._parse_all([h.passage for h in hits])
        q_vec = self._encode_question(question)
        focus_match = 0.0
        q_norm = normalize(question)
        q_words = _content_words(question)
        focus = qa.focus or ""
        focus_norm = normalize(focus)
        relation_words = q_words - _content_words(focus)
        cues = _COMPILED.get(qa.relation or "", [])
        labels = qa.labels or ["TEXT"]
        pool: dict[str, _Candidate] = {}
        for position, (hit, doc) in enumerate(zip(hits, parsed, strict=True)):
            rank = hit.rank or position + 1
            rank_score = 1.0 / (1.0 + 0.35 * (rank - 1))
            title_match = _title_match(hit.passage.title, focus, question)
            focus_match = max(focus_match, title_match)
            sims = doc.vectors @ q_vec if doc.vectors is not None else np.zeros(len(doc.sentences))
            title_ok = _label_ok(doc.title_label, labels) and title_match < 0.75
            for sent, sim in zip(doc.sentences, sims, strict=True):
                lex = _overlap(relation_words, sent.text)
                s_score = (
                    0.30 * float(sim)
                    + 0.15 * lex
                    + 0.10 * rank_score
                    + _TITLE_WEIGHT * title_match * (1.0 if sent.index == 0 else 0.85)
                )
                spans = _spans(sent, labels, qa)
                if title_ok:
                    spans.append((doc.title, doc.title_label, -1, -1, 0.85))
                for text, label, start, end, type_weight in spans:
                    cand_norm = normalize(text)
                    if not cand_norm or cand_norm in _PRONOUNS:
                        continue
                    if _in_question(cand_norm, q_norm, focus_norm):
                        continue
                    cue = _cue_score(cues, sent, start, end, focus, spans)
                    if not cues:
                        cue = 0.6 * _proximity(relation_words, sent.text, start, end)
                    score = s_score + 0.45 * cue + 0.25 * type_weight
                    score += _value_bonus(qa, text, label, sent, start)
                    key = _candidate_key(text, qa)
                    prev = pool.get(key)
                    if prev is None or score > prev.score:
                        support = prev.support + 1 if prev else 1
                        pool[key] = _Candidate(
                            text=_surface(text, label),
                            label=label,
                            score=score,
                            sentence=sent.text,
                            passage=hit.passage,
                            hit_score=hit.score,
                            support=support,
                        )
                    else:
                        prev.support += 1
        ranked = sorted(
            pool.values(),
            key=lambda c: (-(c.score + 0.03 * min(c.support - 1, 3)), c.text),
        )
        return ranked, focus_match

    # -- yes/no and choice -------------------------------------------------------------------

    def _draft_comparison(
        self, question: str, qa: AnswerType, comparison: Comparison, hits: Sequence[Hit]
    ) -> Draft:
        from graphseek.agents.offline.decomposer import attribute_questions
        from graphseek.agents.offline.seeker import compare_values

        values: dict[str, list[str]] = {}
        evidence: list[EvidenceItem] = []
        confidences: list[float] = []
        for option in comparison.options:
            subject = option
            if comparison.via:
                sub = f"Who is the {comparison.via} of {option}?"
                draft = self._draft_entity(sub, expected_answer(sub), hits)
                if not draft.answer:
                    values[option] = []
                    confidences.append(0.0)
                    continue
                subject = draft.answer
                evidence.extend(draft.evidence)
                confidences.append(draft.confidence)
            answers = []
            for sub in attribute_questions(comparison, subject):
                draft = self._draft_entity(sub, expected_answer(sub), hits)
                answers.append(draft.answer)
                evidence.extend(draft.evidence)
                confidences.append(draft.confidence if draft.answer else 0.0)
            values[option] = answers
        verdict = compare_values(comparison, values)
        if verdict is None:
            return Draft(question=question, answer="", evidence=evidence, confidence=0.0)
        confidence = min(confidences) if confidences else 0.0
        unique: list[EvidenceItem] = []
        for item in evidence:
            if all(item.passage_id != u.passage_id for u in unique):
                unique.append(item)
        return Draft(question=question, answer=verdict, evidence=unique, confidence=confidence)

    def _draft_yesno(self, question: str, qa: AnswerType, hits: Sequence[Hit]) -> Draft:
        """A plain yes/no question: yes when one sentence holds most of the question's words."""
        parsed = self._parse_all([h.passage for h in hits])
        words = _content_words(question)
        best = (0.0, "", hits[0].passage)
        for hit, doc in zip(hits, parsed, strict=True):
            for sent in doc.sentences:
                cover = _overlap(words, f"{doc.title} {sent.text}")
                if cover > best[0]:
                    best = (cover, sent.text, hit.passage)
        cover, sentence, passage = best
        negated = bool(re.search(r"\b(?:not|never|no)\b", sentence.lower()))
        answer = "yes" if cover >= 0.75 and not negated else "no"
        evidence = [
            EvidenceItem(passage_id=passage.id, title=passage.title, text=passage.text,
                         sentence=sentence, score=round(cover, 4))
        ]  # fmt: skip
        return Draft(
            question=question,
            answer=answer,
            evidence=evidence,
            confidence=round(min(1.0, 0.3 + abs(cover - 0.6)), 4),
        )


# ---------------------------------------------------------------------------------------------
# parsing


def _parse_doc(title: str, text: str, doc: Any) -> _Parsed:
    sentences: list[_Sentence] = []
    for i, sent in enumerate(doc.sents):
        base = sent.start_char
        ents = []
        for e in sent.ents:
            if e.label_ == "DATE":
                continue
            etext, end = e.text, e.end_char - base
            m = re.search(r"\s*['’]s?$", etext)
            if m and len(etext) > len(m.group(0)) + 1:  # "Frank Sinatra's" -> "Frank Sinatra"
                etext, end = etext[: m.start()], end - len(m.group(0))
            ents.append((etext, e.label_, e.start_char - base, end))
        stext = sent.text
        ents = _merge_adjacent(ents, stext)
        expanded = []
        for etext, label, start, end in ents:
            if label in {"PERSON", "ORG", "FAC", "WORK_OF_ART"}:
                etext, end = _expand_name(stext, start, end)
            expanded.append((etext, label, start, end))
        ents = expanded
        for m in _DATE_RE.finditer(stext):
            ents.append((m.group(0), "DATE", m.start(), m.end()))
        for e in sent.ents:
            if e.label_ == "DATE" and re.search(r"\d", e.text):
                s, t = e.start_char - base, e.end_char - base
                if not any(d[1] == "DATE" and d[2] < t and s < d[3] for d in ents):
                    ents.append((e.text, "DATE", s, t))
        chunks = []
        for c in sent.noun_chunks:
            proper = all(
                t.pos_ in {"PROPN", "NUM", "ADP", "DET", "CCONJ", "PART"} for t in c
            ) and any(t.pos_ == "PROPN" for t in c)
            chunks.append((c.text, c.start_char - base, c.end_char - base, proper))
        sentences.append(_Sentence(text=stext, index=i, ents=ents, chunks=chunks))
    return _Parsed(
        title=title, text=text, sentences=sentences, title_label=_title_label(title, doc)
    )


_NAME_LINK = r"(?:of|de|del|della|di|da|du|von|van|der|den|la|le|y|mac|bin|ibn|al|ap)"


def _expand_name(text: str, start: int, end: int) -> tuple[str, int]:
    """Extend a person name the NER cut short: "Eleanor" -> "Eleanor of Arborea", "Mapy" ->
    "Mapy Cortés" (capitalised words, and a linking particle followed by one)."""
    rest = text[end:]
    m = re.match(rf"(?:\s+(?:{_NAME_LINK}\s+)?[A-Z][\w'’.-]*)+", rest)
    if m and "\n" not in m.group(0):
        words = m.group(0).split()
        # stop before a word that starts a new clause
        keep: list[str] = []
        for w in words:
            if w in {"The", "A", "An", "He", "She", "It", "In", "On", "At", "His", "Her", "They"}:
                break
            if w.endswith(".") and not re.fullmatch(r"(?:[A-Z]\.)+|Jr\.|Sr\.|St\.", w):
                keep.append(w[:-1])  # a sentence's full stop, not an initial
                break
            keep.append(w)
        while keep and (re.fullmatch(_NAME_LINK, keep[-1]) or not keep[-1]):
            keep.pop()
        if keep:
            extra = " ".join(keep)
            idx = rest.find(extra)
            end = end + idx + len(extra)
    return text[start:end], end


def _merge_adjacent(
    ents: list[tuple[str, str, int, int]], text: str
) -> list[tuple[str, str, int, int]]:
    """Join same-label entities separated by a space or hyphen ("Cuban American")."""
    out: list[tuple[str, str, int, int]] = []
    for ent in sorted(ents, key=lambda e: e[2]):
        if out and ent[1] == out[-1][1] and ent[1] in {"NORP", "PERSON", "GPE"}:
            gap = text[out[-1][3] : ent[2]]
            if gap in {" ", "-", "- ", " - "}:
                prev = out[-1]
                out[-1] = (text[prev[2] : ent[3]], prev[1], prev[2], ent[3])
                continue
        out.append(ent)
    return out


def _title_label(title: str, doc: Any) -> str:
    """Guess what a passage's title names, from its first sentence."""
    if not title:
        return ""
    sents = list(doc.sents)
    first = sents[0].text if sents else doc.text
    head = first[:400]
    low = head.lower()
    # "X (born 1942) is ...", "X (12 June 1967 – 3 May 2001) was ..."
    if re.search(r"\((?:[^)]*\b(?:born|died|b\.|d\.|c\.)\b[^)]*|\s*\d{1,2}\s+\w+\s+\d{3,4}[^)]*)\)",
                 head[: len(title) + 80]):  # fmt: skip
        return "PERSON"
    m = re.search(r"\b(?:is|was|are|were)\s+(?:an?|the)\s+([^.;]{0,80})", low)
    descr = m.group(1) if m else low[len(title) : len(title) + 80]
    words = descr.split()[:8]
    descr_head = " ".join(words)
    for pattern, label in _TITLE_TYPES:
        if re.search(pattern, descr_head):
            if label == "WORK_OF_ART" and _PERSON_WORDS.search(descr_head.split(" film")[0]):
                if re.search(r"\b(?:film|movie)\s+(?:director|producer|actor|actress)", descr_head):
                    return "PERSON"
            return label
    if _PERSON_WORDS.search(descr_head):
        return "PERSON"
    for e in doc.ents:
        if normalize(e.text) == normalize(title):
            return e.label_
    if re.search(r"\b(?:he|she|his|her)\b", doc.text.lower()):
        return "PERSON"
    return ""


# ---------------------------------------------------------------------------------------------
# scoring


def _content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", normalize(text))
    return {_stem(w) for w in words if w not in _STOP and len(w) > 1}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _overlap(words: set[str], text: str) -> float:
    if not words:
        return 0.0
    return len(words & _content_words(text)) / len(words)


def _proximity(words: set[str], sentence: str, start: int, end: int) -> float:
    """How close a span stands to the question's words in the sentence (0..1)."""
    if not words or start < 0:
        return 0.0
    best = 0.0
    for m in re.finditer(r"[A-Za-z0-9]+", sentence):
        if _stem(m.group(0).lower()) in words:
            dist = start - m.end() if m.end() <= start else m.start() - end
            if dist < 0:
                continue
            best = max(best, max(0.0, 1.0 - dist / 80.0))
    return best


def _title_match(title: str, focus: str, question: str) -> float:
    """How well a passage title names the question's focus entity (0..1)."""
    if not title:
        return 0.0
    t_full = normalize(title)
    t_base = normalize(re.sub(r"\s*\([^)]*\)\s*$", "", title))
    if focus:
        f_full = normalize(focus)
        f_base = normalize(re.sub(r"\s*\([^)]*\)\s*$", "", focus))
        if t_full == f_full:
            return 1.0
        if t_base == f_base:
            return 0.95 if t_full != t_base and f_full == f_base else 0.85
        ratio = fuzz.ratio(t_base, f_base) / 100.0
        score = ((ratio - 0.75) / 0.25) ** 2 if ratio > 0.75 else 0.0
        t_words, f_words = t_base.split(), f_base.split()
        if f_words and len(f_words) < len(t_words) and t_words[: len(f_words)] == f_words:
            # "Conchobar" / "Conchobar mac Nessa": the title starts with the (short) name
            score = max(score, 0.6 + 0.2 * len(f_words) / len(t_words))
        return score
    q = normalize(question)
    if t_base and len(t_base) > 3 and f" {t_base} " in f" {q} ":
        return 0.8
    return 0.0


def _label_ok(label: str, labels: list[str]) -> bool:
    if not label:
        return False
    if label in labels:
        return True
    return label == "WORK_OF_ART" and "TITLE" in labels


def _spans(
    sent: _Sentence, labels: list[str], qa: AnswerType
) -> list[tuple[str, str, int, int, float]]:
    """Candidate spans of a sentence with their label and type weight."""
    out: list[tuple[str, str, int, int, float]] = []
    covered: list[tuple[int, int]] = []
    free_text = "TEXT" in labels
    names = any(lab in labels for lab in _NAME_LABELS)
    for text, label, start, end in sent.ents:
        covered.append((start, end))
        if label in labels:
            weight = 1.0 if label == labels[0] else 0.85
            out.append((text, label, start, end, weight))
        elif names and label in _NAME_LABELS and label != "NORP" and "NORP" not in labels:
            # a name the NER labelled otherwise ("Chaturbhuj Doshi" as GPE): a weak candidate;
            # the small model often tags towns as ORG or PERSON, so places are less penalised
            if labels[0] in {"GPE", "LOC", "FAC"}:
                if label == "EVENT" or (label == "PERSON" and " " in text):
                    continue
                out.append((text, labels[0], start, end, 0.6))
            else:
                out.append((text, labels[0], start, end, _CROSS_LABEL))
    for text, start, end, proper in sent.chunks:
        if any(s < end and start < e for s, e in covered):
            continue
        if free_text:
            out.append((text, "TEXT", start, end, 0.7))
        elif names and proper:
            # a name the NER left unlabelled
            out.append((text, labels[0], start, end, 0.45))
    return out


def _cue_score(
    cues: list[tuple[re.Pattern[str], str, float]],
    sent: _Sentence,
    start: int,
    end: int,
    focus: str,
    spans: list[tuple[str, str, int, int, float]],
) -> float:
    """Cue bonus of a span: the best positive cue near it on the expected side (nearest span
    first), plus the strongest negative cue ("starring" before a name asked as a director)."""
    if not cues:
        return 0.0
    text = sent.text
    best = 0.0
    worst = 0.0
    focus_low = normalize(focus)
    for pattern, where, weight in cues:
        for occurrence, m in enumerate(pattern.finditer(text)):
            score = 0.0
            if occurrence and weight > 0:
                # a later mention of the relation is more often about someone else
                weight = weight * 0.6
            if where == "subject":
                if start != -1:
                    continue
                after = normalize(text[m.end() :])
                if focus_low and focus_low[:30] in after:
                    score = weight
            elif start < 0:
                # the title stands at the subject position, before every cue
                if where == "before" and m.start() < 60:
                    score = weight * 0.6
            elif where == "after" and start >= m.end() - 1:
                dist = start - m.end()
                between = sum(1 for s in spans if m.end() <= s[2] < start and s[2] >= 0)
                decay = 0.7**between if weight > 0 else (1.0 if between == 0 else 0.0)
                score = weight * max(0.0, 1.0 - dist / 130.0) * decay
            elif where == "before" and end <= m.start() + 1:
                dist = m.start() - end
                between = sum(1 for s in spans if end <= s[2] and s[3] <= m.start() and s[2] >= 0)
                decay = 0.7**between if weight > 0 else (1.0 if between == 0 else 0.0)
                score = weight * max(0.0, 1.0 - dist / 60.0) * decay
            best = max(best, score)
            worst = min(worst, score)
    return best + worst


def _value_bonus(qa: AnswerType, text: str, label: str, sent: _Sentence, start: int) -> float:
    """Relation-specific preferences: date ranges, country names, demonyms."""
    rel = qa.relation
    bonus = 0.0
    if label == "DATE" and start >= 0:
        before = sent.text[max(0, start - 40) : start]
        after = sent.text[start + len(text) : start + len(text) + 6]
        in_range_end = bool(re.search(r"\d[^()]*[–—-]\s*(?:c\.\s*)?$", before)) and "(" in before
        in_range_start = bool(re.match(r"\s*[–—-]", after))
        if rel == "birth_date":
            bonus += 0.35 if in_range_start else (-0.3 if in_range_end else 0.0)
            if re.search(r"\bdied\b|\bd\.\s*$", before):
                bonus -= 0.3
        elif rel == "death_date":
            bonus += 0.35 if in_range_end else (-0.3 if in_range_start else 0.0)
            if re.search(r"\bborn\b|\bb\.\s*$", before):
                bonus -= 0.3
        if rel in {"birth_date", "death_date", "date"} and not re.search(r"\d{3,4}", text):
            bonus -= 0.2
    if rel in {"country", "origin_country", "nationality"}:
        if rel == "country" and is_country(text):
            bonus += 0.35
        elif country_of(text):
            bonus += 0.2
    if rel in {"birth_place", "death_place", "burial_place"}:
        if is_country(text):
            bonus -= 0.15  # the place asked for is nearly always a town, not a country
        elif label == "GPE":
            bonus += 0.05
    return bonus


def _in_question(cand: str, q_norm: str, focus_norm: str) -> bool:
    if f" {cand} " in f" {q_norm} ":
        return True
    if focus_norm and (cand == focus_norm or fuzz.ratio(cand, focus_norm) >= 88):
        return True
    return False


def _candidate_key(text: str, qa: AnswerType) -> str:
    key = normalize(text)
    if qa.relation in {"nationality", "origin_country"}:
        return country_of(text) or key
    return key


_HONORIFIC = re.compile(
    r"^(?:King|Queen|Prince|Princess|Emperor|Empress|Sir|Dame|Lord|Lady|Pope|Saint|St\.|Dr\.|"
    r"President|General|Count|Countess|Duke|Duchess|Archduke|Archduchess|Tsar|Sultan|Shah)\s+"
    r"(?=[A-Z]\S*\s+\S)"
)


def _surface(text: str, label: str) -> str:
    text = text.strip(" ,;:()")
    if label == "PERSON":
        text = re.sub(r"^(?:the|The)\s+(?=[A-Z])", "", text)
        text = _HONORIFIC.sub("", text)  # "Prince Norodom Sutharot" -> "Norodom Sutharot"
    text = re.sub(r"\s*['’]s$", "", text)
    return text


def _confidence(best: float, second: float) -> float:
    """Map a raw score (about 0..1.5) and its margin over the runner-up to [0, 1]."""
    base = 1.0 / (1.0 + math.exp(-8.0 * (best - 0.65)))
    margin = min(1.0, max(0.0, best - second) / 0.2)
    return round(max(0.0, min(1.0, base * (0.75 + 0.25 * margin))), 4)
