"""The sentences most likely to hold a question's answer, ranked without guessing the answer.

A reply shows sentences, not only passages: the sentence a user reads to check an answer, or to
find it when the workflow abstains. They are ranked by how relevant each is to the question, and
by nothing the reader guessed about the answer's type, so a wrong guess never hides the sentence
that holds the answer. Each sentence of the retrieved passages (split and embedded once per
passage by the extractive reader's cache, `ExtractiveReader.parse`) is scored on `FEATURES`:

- its MiniLM cosine to the question, and the mean cosine of its neighbours (the sentence before
  and after: "-S, --source" is followed by the line that says what it does);
- the rarity-weighted share of the question's words (`term_weight`, English word frequencies)
  that the sentence holds, and that the sentence with its neighbours and its passage's title
  (document and section) hold, and that the sentence with the title alone holds; and the share
  of the words the title lacks that the sentence holds (the title says what the passage is
  about, "zstd"; the sentence must hold the rest, "default", "level");
- the share its passage holds, and the passage's retrieval rank;
- whether it is a fragment of fewer than `SHORT_WORDS` words (a heading, a lone flag);
- whether it holds a specific token the question does not: a number, an option, a path or an
  identifier, a capitalised name inside the sentence (`specific_token_list`). A sentence that only
  restates the question's words tells less than one that adds a value to them.

The score is a linear function of them whose weights are fitted on the documentation dev genres
and judged leave-one-genre-out (`benchmarks/sentence_ranker.py`, `sentence_model.json`). Each
ranked sentence carries its context: itself with one neighbour on each side, when the sentence
is short enough for a neighbour to help. Sentences that address the reader are skipped, as the
reader skips them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.agents.reading.question import analyse_question
from graphseek.agents.text import content_words
from graphseek.knowledge.passages import Hit, Passage

#: what a sentence's score is made of, in the order of `RankedSentence.features`
FEATURES = (
    "similarity",  # cosine of the sentence to the question (MiniLM)
    "neighbour_similarity",  # mean cosine of the sentences before and after it
    "coverage",  # rarity-weighted share of the question's words in the sentence
    "title_coverage",  # ... in the sentence and its passage's title
    "rest_coverage",  # ... of the question's words its passage's title lacks, in the sentence
    "near_coverage",  # ... in the sentence, its neighbours and its passage's title
    "passage_coverage",  # ... in its passage (title included)
    "retrieval_rank",  # 1 / (1 + 0.3 (rank - 1))
    "fragment",  # fewer than SHORT_WORDS words: a heading, a lone flag
    "specific",  # holds a specific token the question lacks: a number, a flag, a path, a name
)
#: the weights the ranker was written with, used when no fitted model file is found
HAND_WEIGHTS = (0.35, 0.10, 0.35, 0.10, 0.10, 0.10, 0.05, 0.10, -0.20, 0.05)
MODEL_FILE = "sentence_model.json"
#: a sentence of fewer words is a fragment
SHORT_WORDS = 4
#: a sentence longer than this (characters) is shown without its neighbours
CONTEXT_BELOW = 240
#: a neighbour shown as context is cut to this many characters
NEIGHBOUR_CHARS = 200


@dataclass(frozen=True)
class RankedSentence:
    """A sentence of a retrieved passage with its relevance to the question."""

    passage: Passage
    index: int  # its position among the passage's sentences
    text: str
    context: str  # the sentence with a neighbour on each side (the sentence alone when long)
    score: float
    features: tuple[float, ...]


def load_weights(path: str | Path | None = None) -> tuple[float, ...]:
    """The weights of `FEATURES` stored at `path` (a `sentence_model.json` record; default the
    package's); raises when the file is missing, unreadable or lacks a feature."""
    if path is None:
        text = files("graphseek.agents.reading").joinpath(MODEL_FILE).read_text()
    else:
        text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text)
    return tuple(float(data["weights"][name]) for name in FEATURES)


@lru_cache(maxsize=1)
def weights() -> tuple[float, ...]:
    """The fitted weights of `FEATURES` (`sentence_model.json`), else `HAND_WEIGHTS`."""
    try:
        return load_weights()
    except (OSError, KeyError, ValueError, TypeError):
        return HAND_WEIGHTS


def _cut(text: str, n: int, from_end: bool = False) -> str:
    if len(text) <= n:
        return text
    return "…" + text[-(n - 1) :].lstrip() if from_end else text[: n - 1].rstrip() + "…"


_TOKEN = re.compile(r"[^\s,;:()\[\]{}\"'`]+")
_SPECIFIC = re.compile(r"\d|^-{1,2}\w|[/_.=<>@$]\w|^[A-Z][A-Z0-9_]{1,}$|^\w+[a-z][A-Z]")


def known_tokens(text: str) -> frozenset[str]:
    """The lower-cased tokens of `text`, as `specific_token_list` reads them."""
    return frozenset(m.group().rstrip(".!?").lower() for m in _TOKEN.finditer(text))


def specific_token_list(text: str, known: frozenset[str]) -> list[str]:
    """The tokens of `text` that name something specific that `known` (lower-cased tokens)
    lacks: a number, an option (`-S`, `--source`), a path or dotted name, an ALL-CAPS or
    camelCase identifier, or a capitalised word that does not open the sentence."""
    out = []
    for k, m in enumerate(_TOKEN.finditer(text)):
        tok = m.group().rstrip(".!?")
        if len(tok) < 2 or tok.lower() in known:
            continue
        if _SPECIFIC.search(tok) or (k > 0 and tok[0].isupper() and tok[1:].islower()):
            out.append(tok)
    return out


def context_of(texts: Sequence[str], i: int) -> str:
    """Sentence `i` of `texts` with the sentence before and after it (each cut to
    `NEIGHBOUR_CHARS`), or alone when it is `CONTEXT_BELOW` characters or longer."""
    text = texts[i]
    if len(text) >= CONTEXT_BELOW:
        return text
    before = _cut(texts[i - 1], NEIGHBOUR_CHARS, from_end=True) if i > 0 else ""
    after = _cut(texts[i + 1], NEIGHBOUR_CHARS) if i + 1 < len(texts) else ""
    return " ".join(t for t in (before, text, after) if t)


def sentence_features(
    question: str, hits: Sequence[Hit], reader: Any = None
) -> list[RankedSentence]:
    """Every readable sentence of `hits` (in passage order) with its `FEATURES`, score 0."""
    if reader is None:
        from graphseek.agents.reading.reader import get_reader

        reader = get_reader()
    from graphseek.agents.reading.reader import match_keys, question_weights, rank_score

    question = " ".join(question.split())
    if not hits or not question:
        return []
    weights_of = question_weights(analyse_question(question))
    total = sum(weights_of.values()) or 1.0

    def share(stems: set[str] | frozenset[str]) -> float:
        return sum(w for t, w in weights_of.items() if t in stems) / total

    known = known_tokens(question)
    q_vec = reader.question_vector(question)
    out: list[RankedSentence] = []
    for position, (hit, doc) in enumerate(
        zip(hits, reader.parse([h.passage for h in hits]), strict=True)
    ):
        sents = doc.sentences
        if not sents:
            continue
        in_passage = share(doc.words)
        title_words = match_keys(content_words(doc.passage.title))
        rest = {t: w for t, w in weights_of.items() if t not in title_words}
        rest_total = sum(rest.values()) or 1.0
        sims = doc.vectors @ q_vec
        stems = [set(s.stems) | set(s.alts) for s in sents]
        texts = [s.text for s in sents]
        for i, sent in enumerate(sents):
            if sent.meta:
                continue
            around = [j for j in (i - 1, i + 1) if 0 <= j < len(sents)]
            near = set(stems[i]) | title_words
            for j in around:
                near |= stems[j]
            features = (
                float(sims[i]),
                float(np.mean([sims[j] for j in around])) if around else 0.0,
                share(stems[i]),
                share(stems[i] | title_words),
                sum(w for t, w in rest.items() if t in stems[i]) / rest_total,
                share(near),
                in_passage,
                rank_score(hit.rank or position + 1),
                1.0 if len(sent.text.split()) < SHORT_WORDS else 0.0,
                min(1.0, len(specific_token_list(sent.text, known)) / 2.0),
            )
            out.append(
                RankedSentence(doc.passage, i, sent.text, context_of(texts, i), 0.0, features)
            )
    return out


def rank_sentences(
    question: str, hits: Sequence[Hit], reader: Any = None, model: Sequence[float] | None = None
) -> list[RankedSentence]:
    """Every readable sentence of `hits`, the most relevant to `question` first (ties: the
    earlier passage, then the earlier sentence). `model`: weights of `FEATURES` (default the
    fitted `weights()`)."""
    w = np.asarray(model if model is not None else weights(), dtype=np.float64)
    scored = [
        RankedSentence(s.passage, s.index, s.text, s.context, float(w @ s.features), s.features)
        for s in sentence_features(question, hits, reader)
    ]
    order = {h.passage.id: k for k, h in enumerate(hits)}
    return sorted(scored, key=lambda s: (-s.score, order.get(s.passage.id, 0), s.index))


def top_sentences(ranked: Sequence[RankedSentence], limit: int) -> list[RankedSentence]:
    """The first `limit` of `ranked` (best first), skipping a sentence that a sentence already
    taken shows as its context (its neighbour in the same passage), and a sentence whose words a
    sentence already taken says (passages that overlap, a line repeated across a document)."""
    taken: list[RankedSentence] = []
    said: set[str] = set()
    for s in ranked:
        if len(taken) >= limit:
            break
        if any(t.passage.id == s.passage.id and abs(t.index - s.index) <= 1 for t in taken):
            continue
        words = " ".join(s.text.casefold().split())
        if words in said:
            continue
        said.add(words)
        taken.append(s)
    return taken


def best_in_passage(
    ranked: Sequence[RankedSentence], passage_id: str, holding: str = ""
) -> RankedSentence | None:
    """The best-ranked sentence of one passage; with `holding`, the best that holds it first."""
    from graphseek.agents.text import contains

    mine = [s for s in ranked if s.passage.id == passage_id]
    if holding:
        inside = [s for s in mine if contains(s.text, holding)]
        if inside:
            return inside[0]
    return mine[0] if mine else None
