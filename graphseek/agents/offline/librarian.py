"""Extractive answering (offline policy of the Librarian role).

Given a sub-question and the retrieved passages, the Librarian drafts an answer without a
generative model. Under the default `general` profile, factoid questions go to the general
reader (`graphseek.agents.reading`). A profile with a cue table (`wikipedia`,
`graphseek.agents.profiles.wikipedia`) reads them here instead, from its tables:

1. the expected answer (`answer_types.expected_answer` under the profile's relation lexicon):
   labels, relation, focus entity;
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
from graphseek.agents.profiles import Profile, get_profile
from graphseek.agents.reading.reader import ExtractiveReader, get_reader
from graphseek.agents.roles import Step
from graphseek.agents.text import content_words, normalize, overlap, stem
from graphseek.knowledge.nlp import get_nlp
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import Draft, EvidenceItem

_CROSS_LABEL = 0.3
# Wikipedia-style passages are about their title: a passage whose title names the question's
# entity holds the answer far more often than one that only mentions it.
_NAME_LABELS = {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "WORK_OF_ART", "PRODUCT", "EVENT"}
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


class OfflineLibrarian:
    """Librarian role, offline policy: extractive drafting by answer type and sentence scoring."""

    def __init__(
        self,
        embedder: Any = None,
        cache_size: int = 4096,
        max_candidates: int = 5,
        profile: str | Profile | None = None,
    ):
        # `general` (None): the general reader (`graphseek.agents.reading`) answers factoid
        # questions; a profile with a cue table (`wikipedia`) reads by its relation cues and
        # title rules instead
        self.profile = get_profile(profile)
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
            texts = [self.profile.clean_text(p.text) for p in missing]
            for p, text, doc in zip(missing, texts, nlp.pipe(texts, batch_size=32), strict=True):
                self._store(p.id, _parse_doc(p.title, text, doc, self.profile))
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
        qa = expected_answer(question, self.profile)
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
        """The extractive reader: the process-wide one (`get_reader`), whose parse of each
        passage the evidence a reply shows reuses, unless this Librarian has its own embedder."""
        if self._reader is None:
            self._reader = (
                get_reader()
                if self._embedder is None
                else ExtractiveReader(embedder=self._embedder)
            )
        return self._reader

    def rank_candidates(self, question: str, hits: Sequence[Hit]) -> list[Any]:
        """All candidate answers for a factoid question, best first (one per distinct answer)."""
        if not self.profile.reads_by_cues:
            return self.reader.rank(question, hits)
        qa = expected_answer(question, self.profile)
        return self._candidates(question, qa, hits)[0]

    def _draft_entity(self, question: str, qa: AnswerType, hits: Sequence[Hit]) -> Draft:
        if not self.profile.reads_by_cues:
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
        q_words = content_words(question)
        focus = qa.focus or ""
        focus_norm = normalize(focus)
        relation_words = q_words - content_words(focus)
        cues = self.profile.compiled_cues.get(qa.relation or "", [])
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
                lex = overlap(relation_words, sent.text)
                s_score = (
                    0.30 * float(sim)
                    + 0.15 * lex
                    + 0.10 * rank_score
                    + self.profile.title_weight * title_match * (1.0 if sent.index == 0 else 0.85)
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
                    score += _value_bonus(qa, text, label, sent, start, self.profile)
                    key = _candidate_key(text, qa, self.profile)
                    prev = pool.get(key)
                    if prev is None or score > prev.score:
                        support = prev.support + 1 if prev else 1
                        pool[key] = _Candidate(
                            text=_surface(text, label, self.profile),
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
                draft = self._draft_entity(sub, expected_answer(sub, self.profile), hits)
                if not draft.answer:
                    values[option] = []
                    confidences.append(0.0)
                    continue
                subject = draft.answer
                evidence.extend(draft.evidence)
                confidences.append(draft.confidence)
            answers = []
            for sub in attribute_questions(comparison, subject, self.profile):
                draft = self._draft_entity(sub, expected_answer(sub, self.profile), hits)
                answers.append(draft.answer)
                evidence.extend(draft.evidence)
                confidences.append(draft.confidence if draft.answer else 0.0)
            values[option] = answers
        verdict = compare_values(comparison, values, self.profile)
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
        words = content_words(question)
        best = (0.0, "", hits[0].passage)
        for hit, doc in zip(hits, parsed, strict=True):
            for sent in doc.sentences:
                cover = overlap(words, f"{doc.title} {sent.text}")
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


def _parse_doc(title: str, text: str, doc: Any, profile: Profile) -> _Parsed:
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
            titled = profile.name_title_re
            if titled is not None and label in {"PERSON", "GPE", "ORG", "NORP"}:
                m = titled.match(stext, end)
                if m:  # "Carlos, Duke of Madrid": a person, and the title is part of the name
                    etext, label, end = stext[start : m.end()], "PERSON", m.end()
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
        title=title, text=text, sentences=sentences, title_label=_title_label(title, doc, profile)
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


def _title_label(title: str, doc: Any, profile: Profile) -> str:
    """Guess what a passage's title names, from its first sentence (and the profile's title
    rules)."""
    if not title:
        return ""
    sents = list(doc.sents)
    first = sents[0].text if sents else doc.text
    head = first[:400]
    low = head.lower()
    # the profile's mark of a person just after the title (life dates in brackets)
    if profile.person_title and re.search(profile.person_title, head[: len(title) + 80]):
        return "PERSON"
    m = re.search(r"\b(?:is|was|are|were)\s+(?:an?|the)\s+([^.;]{0,80})", low)
    descr = m.group(1) if m else low[len(title) : len(title) + 80]
    words = descr.split()[:8]
    descr_head = " ".join(words)
    person_words = profile.person_words_re
    for pattern, label in profile.title_types:
        if re.search(pattern, descr_head):
            if (
                label == "WORK_OF_ART"
                and profile.work_names_person is not None
                and profile.work_names_person(descr_head)
            ):
                return "PERSON"
            return label
    if person_words is not None and person_words.search(descr_head):
        return "PERSON"
    for e in doc.ents:
        if normalize(e.text) == normalize(title):
            return e.label_
    if re.search(r"\b(?:he|she|his|her)\b", doc.text.lower()):
        return "PERSON"
    return ""


# ---------------------------------------------------------------------------------------------
# scoring


def _proximity(words: set[str], sentence: str, start: int, end: int) -> float:
    """How close a span stands to the question's words in the sentence (0..1)."""
    if not words or start < 0:
        return 0.0
    best = 0.0
    for m in re.finditer(r"[A-Za-z0-9]+", sentence):
        if stem(m.group(0).lower()) in words:
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


def _value_bonus(
    qa: AnswerType, text: str, label: str, sent: _Sentence, start: int, profile: Profile
) -> float:
    """Relation-specific preferences: date ranges, country names, demonyms."""
    rel = qa.relation
    bonus = 0.0
    if label == "DATE" and start >= 0:
        before = sent.text[max(0, start - 40) : start]
        after = sent.text[start + len(text) : start + len(text) + 6]
        in_range_end = bool(re.search(r"\d[^()]*[–—-]\s*(?:c\.\s*)?$", before)) and "(" in before
        in_range_start = bool(re.match(r"\s*[–—-]", after))
        end, other_end = profile.date_range_ends.get(rel or "", ("", ""))
        if end:
            at_end, at_other = (
                (in_range_start, in_range_end) if end == "start" else (in_range_end, in_range_start)
            )
            bonus += 0.35 if at_end else (-0.3 if at_other else 0.0)
            if re.search(other_end, before):
                bonus -= 0.3
        if (rel == "date" or end) and not re.search(r"\d{3,4}", text):
            bonus -= 0.2
    if rel == "country" or rel in profile.nationality_relations:
        if rel == "country" and is_country(text):
            bonus += 0.35
        elif country_of(text):
            bonus += 0.2
    if rel in profile.place_relations:
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


def _candidate_key(text: str, qa: AnswerType, profile: Profile) -> str:
    key = normalize(text)
    if qa.relation in profile.nationality_relations:
        return country_of(text) or key
    return key


def _surface(text: str, label: str, profile: Profile) -> str:
    text = text.strip(" ,;:()")
    if label == "PERSON":
        text = re.sub(r"^(?:the|The)\s+(?=[A-Z])", "", text)
        if profile.honorifics_re is not None:
            # "Prince Norodom Sutharot" -> "Norodom Sutharot"
            text = profile.honorifics_re.sub("", text)
    text = re.sub(r"\s*['’]s$", "", text)
    return text


def _confidence(best: float, second: float) -> float:
    """Map a raw score (about 0..1.5) and its margin over the runner-up to [0, 1]."""
    base = 1.0 / (1.0 + math.exp(-8.0 * (best - 0.65)))
    margin = min(1.0, max(0.0, best - second) / 0.2)
    return round(max(0.0, min(1.0, base * (0.75 + 0.25 * margin))), 4)
