"""Grammar-based question decomposition (offline policy of the Decomposer role).

The plan is built from the question's structures, innermost first, each reduced structure
becoming a sub-question whose answer is referred to as `#N` by the steps that use it:

- relative clauses ("the city where the performer of X was formed" -> "In which city was
  the performer of X formed?"), found in the spaCy parse (`graphseek.agents.grammar`);
- "of"-structures with a relation noun ("the director of film X" -> "Who is the director of
  film X?");
- possessives ("Lothair II's mother" -> "Who is the mother of Lothair II?");
- two-hop kinship terms are expanded ("paternal grandfather" -> father of the father);
- comparisons ("Which film came out first, A or B?") become one independent sub-question per
  option and attribute, behind a bridge step where the question compares the options' directors
  (or performers, ...), followed by a final step that restates the comparison and depends on
  them all; the Seeker resolves that final step by comparing the answers, not the Librarian.

What remains of the question after the reductions ("When did #1 die?") is the last step, unless
it is trivial ("Who is #2?").
"""

from __future__ import annotations

import re
from functools import lru_cache

from graphseek.agents.grammar import question_features
from graphseek.agents.offline.answer_types import Comparison, parse_comparison
from graphseek.agents.profiles import GENERAL, Profile, get_profile
from graphseek.agents.reading.decompose import plan_steps
from graphseek.agents.roles import Step
from graphseek.state.models import SubQuestion

_NAME_CONNECTORS = {"of", "de", "the", "and", "von", "van", "la", "le", "du", "da", "del", "&"}
_QUESTION_START = {
    "when", "where", "who", "whom", "whose", "what", "which", "why", "how", "is", "was", "are",
    "were", "did", "does", "do", "in",
}  # fmt: skip


@lru_cache(maxsize=8)
def _relation_patterns(profile: Profile) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """ "the <noun> of" and "'s <noun>" over the profile's person-relation nouns, longest first
    so "father-in-law" wins over "father"."""
    nouns = sorted(
        set(profile.relation_nouns) | set(profile.inferred_chains), key=len, reverse=True
    )
    alternation = "|".join(re.escape(n) for n in nouns)
    return (
        re.compile(rf"\bthe ((?:{alternation}))s? of (?=\S)"),
        re.compile(rf"'s ((?:{alternation}))s?\b"),
    )


_TRIVIAL_RE = re.compile(r"^(?:who|what|which \w+) (?:is|was|are|were) (#\d+)\??$", re.I)
_MAX_STEPS = 8


class OfflineDecomposer:
    """Decomposer role, offline policy: grammar features and rules, no model call.

    Under the `general` profile a question is split where it describes its bridge entity
    (`graphseek.agents.reading.decompose`); the `wikipedia` profile adds the relation-noun
    chains of encyclopedia questions ("the director of film X", kinship terms)."""

    def __init__(self, profile: str | Profile | None = None) -> None:
        self.profile = get_profile(profile)

    def decompose(self, question: str) -> Step[list[SubQuestion]]:
        return Step(decompose_question(question, self.profile))


def decompose_question(question: str, profile: str | Profile | None = None) -> list[SubQuestion]:
    """An ordered plan of sub-questions with `#N` placeholders and dependencies."""
    profile = get_profile(profile)
    q = " ".join(question.replace("’", "'").split()).strip()
    if not q:
        return []
    if not q.endswith("?"):
        q += "?"
    comparison = parse_comparison(q, profile)
    if comparison is None:
        # a profile with a relation lexicon chains its relation nouns; otherwise the question
        # is split where it describes its bridge entity
        texts = _chain_steps(q, profile) if profile.relations else plan_steps(q)
        return [
            SubQuestion(id=i + 1, question=text, depends_on=_refs(text, i + 1))
            for i, text in enumerate(texts)
        ]
    texts, value_ids = comparison_steps(q, comparison, profile)
    plan = [
        SubQuestion(id=i + 1, question=text, depends_on=_refs(text, i + 1))
        for i, text in enumerate(texts[:-1])
    ]
    plan.append(SubQuestion(id=len(texts), question=texts[-1], depends_on=value_ids))
    return plan


def _refs(text: str, own_id: int) -> list[int]:
    return sorted({int(n) for n in re.findall(r"#(\d+)", text) if int(n) < own_id})


# ---------------------------------------------------------------------------------------------
# comparisons


def attribute_questions(
    comparison: Comparison, subject: str, profile: Profile = GENERAL
) -> list[str]:
    """Sub-questions that fetch the compared attribute of one option (or of its bridge entity):
    the profile's templates for the attribute, else the general ones."""
    attr = comparison.attribute
    s = subject
    if attr in profile.attribute_questions:
        return [template.format(s=s) for template in profile.attribute_questions[attr]]
    if attr == "date":
        verb = comparison.verb
        if verb in {"come out", "came out"}:
            return [f"When did {s} come out?"]
        verb = verb or profile.category_date_verbs.get(comparison.category, "established")
        return [f"When was {s} {verb}?"]
    if attr == "country":
        return [f"Which country is {s} located in?"]
    if attr == "quantity":
        return [f"How {comparison.quantity or 'large'} is {s}?"]
    return [f"What is the {attr.replace('_', ' ')} of {s}?"]


def comparison_steps(
    question: str, comparison: Comparison, profile: Profile = GENERAL
) -> tuple[list[str], list[int]]:
    """Step texts for a comparison (per-option lookups, then the comparison itself) and the ids
    of the steps whose answers are compared."""
    texts: list[str] = []
    value_ids: list[int] = []
    if comparison.via:
        noun = _relation_noun(comparison.via, profile)
        kind = f"{comparison.category} " if comparison.category not in {"", "person"} else ""
        bridge_ids = []
        for option in comparison.options:
            texts.append(f"Who is the {noun} of {kind}{option}?")
            bridge_ids.append(len(texts))
        for bid in bridge_ids:
            for text in attribute_questions(comparison, f"#{bid}", profile):
                texts.append(text)
                value_ids.append(len(texts))
    else:
        for option in comparison.options:
            for text in attribute_questions(comparison, option, profile):
                texts.append(text)
                value_ids.append(len(texts))
    texts.append(question)
    return texts, value_ids


def _relation_noun(key: str, profile: Profile) -> str:
    rel = profile.relations.get(key)
    return rel.nouns[0] if rel and rel.nouns else key


# ---------------------------------------------------------------------------------------------
# chains of relations


def _chain_steps(question: str, profile: Profile) -> list[str]:
    steps: list[str] = []
    final = _reduce(question, steps, 0, profile)
    final = _canonical(_reorder(final), profile)
    if not steps:
        return [final]
    trivial = _TRIVIAL_RE.match(final.strip())
    if trivial and trivial.group(1) == f"#{len(steps)}":
        return steps
    steps.append(final)
    return steps


def _reduce(question: str, steps: list[str], depth: int, profile: Profile) -> str:
    """Reduce the structures of `question` into `steps`; return what is left of it."""
    q = question
    for _ in range(_MAX_STEPS):
        if len(steps) >= _MAX_STEPS or depth > 3:
            break
        reduced = (
            _reduce_relative_clause(q, steps, depth, profile)
            or _reduce_of(q, steps, profile)
            or _reduce_possessive(q, steps, profile)
        )
        if reduced is None or reduced == q:
            break
        q = reduced
    return q


def _add_relation_steps(noun: str, obj: str, steps: list[str], profile: Profile) -> str:
    """Append the sub-questions for "the <noun> of <obj>"; return the placeholder."""
    noun = noun.lower()
    chain = profile.inferred_chains.get(noun)
    if chain is None:
        steps.append(f"Who is the {noun} of {obj}?")
        return f"#{len(steps)}"
    subject = obj
    for rel in chain:
        steps.append(f"Who is the {rel} of {subject}?")
        subject = f"#{len(steps)}"
    return subject


def _object_text(rest: str, profile: Profile) -> str:
    """The object of an "of": the name after it, without the question's trailing predicate."""
    text = rest.strip()
    if text.endswith("?"):
        text = text[:-1].rstrip()
    text = re.split(r",\s+(?:and|or|but)\s+", text)[0]
    m = re.match(r"^(#\d+)\b", text)
    if m:
        return m.group(1)
    tail = profile.object_tail_re
    stripped = tail.sub("", text) if tail is not None else text
    words = stripped.split()
    j = len(words)
    while j > 0 and words[j - 1][:1].islower() and words[j - 1].lower() not in {"of"}:
        j -= 1
    if 0 < j < len(words) and any(w[:1].isupper() or w[:1].isdigit() for w in words[:j]):
        return " ".join(words[:j])
    return stripped


def _reduce_of(q: str, steps: list[str], profile: Profile) -> str | None:
    matches = list(_relation_patterns(profile)[0].finditer(q))
    if not matches:
        return None
    m = matches[-1]  # innermost
    noun = m.group(1)
    obj = _object_text(q[m.end() :], profile)
    if not obj:
        return None
    end = q.find(obj, m.end()) + len(obj)
    if end < m.end():
        return None
    placeholder = _add_relation_steps(noun, obj, steps, profile)
    return q[: m.start()] + placeholder + q[end:]


def _owner_start(q: str, end: int) -> int:
    """Start of the possessor name that ends at `end` (just before "'s")."""
    tokens = list(re.finditer(r"\S+", q[:end]))
    start = end
    for idx in range(len(tokens) - 1, -1, -1):
        tok = tokens[idx].group(0)
        word = tok.strip(",")
        low = word.lower()
        if idx == 0 and low in _QUESTION_START:
            break
        capital = word[:1].isupper() or word[:1].isdigit() or word[:1] in "(#'\""
        closing = word.endswith(")")
        connector = low in _NAME_CONNECTORS and idx > 0
        if capital or closing or connector:
            start = tokens[idx].start()
            continue
        break
    # do not start on a connector
    while True:
        head = q[start:end].split(" ", 1)
        if len(head) == 2 and head[0].lower() in _NAME_CONNECTORS:
            start += len(head[0]) + 1
            continue
        break
    return start


def _reduce_possessive(q: str, steps: list[str], profile: Profile) -> str | None:
    m = _relation_patterns(profile)[1].search(q)
    if not m:
        return None
    start = _owner_start(q, m.start())
    owner = q[start : m.start()].strip(" ,")
    if not owner:
        return None
    placeholder = _add_relation_steps(m.group(1), owner, steps, profile)
    return q[:start] + placeholder + q[m.end() :]


def _reduce_relative_clause(q: str, steps: list[str], depth: int, profile: Profile) -> str | None:
    if re.match(r"^(?:who|what|which)\b", q, re.I) and q.count(" ") < 3:
        return None
    features = question_features(q)
    for span in features.full_relative_clauses:
        sub = _clause_question(span, profile)
        if sub is None or span not in q:
            continue
        if len(span) > 0.85 * len(q.rstrip("?")):
            continue
        inner = _reduce(sub, steps, depth + 1, profile)
        steps.append(_reorder(inner))
        return q.replace(span, f"#{len(steps)}", 1)
    return None


_AUX = r"was|were|is|are|has|have|had"


def _clause_question(span: str, profile: Profile) -> str | None:
    """ "the company that published X" -> "Which company published X?" (None if not handled)."""
    m = re.match(
        r"^(?:the|a|an)\s+(?P<noun>[\w\- ]+?)\s+(?P<rel>who|that|which|where|when)\s+(?P<c>.+)$",
        span,
        flags=re.I,
    )
    if not m:
        return None
    noun, rel, clause = m.group("noun"), m.group("rel").lower(), m.group("c").strip()
    person = noun.lower() in profile.relation_nouns or noun.lower() in {"man", "woman", "person"}
    if rel in {"who", "that", "which"}:
        first = clause.split()[0]
        if first.lower() in {"the", "a", "an", "he", "she", "they", "it", "i", "we", "you"}:
            return None  # object relative: not handled
        if first[:1].isupper():
            return None
        wh = "Who" if rel == "who" or person else f"Which {noun}"
        return f"{wh} {clause}?"
    # where / when: "the city where the band was formed" -> "In which city was the band formed?"
    aux = list(re.finditer(rf"\s({_AUX})\s", f" {clause} "))
    if not aux:
        return None
    a = aux[-1]
    subject = f" {clause} "[: a.start()].strip()
    rest = f" {clause} "[a.end() :].strip()
    if not subject or not rest:
        return None
    prep = "In" if rel == "where" or noun.lower() not in {"year", "day"} else "In"
    return f"{prep} which {noun} {a.group(1)} {subject} {rest}?"


def _canonical(q: str, profile: Profile) -> str:
    """Attribute questions about a placeholder in the profile's wording that retrieval handles
    best."""
    for pattern, template in profile.canonical:
        m = re.match(pattern, q, flags=re.I)
        if m:
            return template.format(m.group(1))
    return q


def _reorder(q: str) -> str:
    """ "Which country #1 is from?" -> "Which country is #1 from?"."""
    m = re.match(r"^(Which|What)\s+(\w+)\s+(.+?)\s+(is|was|are|were)\s+(from|located in|based in)"
                 r"\?$", q)  # fmt: skip
    if m and not m.group(3).lower().startswith(("is ", "was ")):
        return f"{m.group(1)} {m.group(2)} {m.group(4)} {m.group(3)} {m.group(5)}?"
    return q
