"""The second hop through document names: a corpus's own document titles as its gazetteer.

A two-hop question about documentation reads one page that names another tool, library or file
("deluser also reads /etc/adduser.conf"), and its answer is on that other page. The offline
graph's NER names few tools, but the corpus names its documents itself: each document's file
stem and title are a name. So, with no model:

1. **Documents and their names** (`DocumentNames`): passages from one file are one document
   (their `source` path), else those sharing a title before ``:``. Its names are the file stem
   and the titles (``"adduser.conf"``, ``"Psycopg 3"``), each also without the trailing words
   most documents' names end with (``"xz-utils-NEWS"`` -> ``"xz utils"``) and without a
   parenthesised qualifier, and a file stem's first word when no other document's name starts
   with it (``"xz"``). A name two documents share names neither. Text names a document where
   the longest name at a word is its name (`name_spans`), never from inside an identifier
   (``"cli"`` of ``"langgraph-cli"``); one that starts an identifier (``"apt"`` of
   ``"apt-get"``) is less sure than a whole one.
2. **First hop**: the index's BM25 (or hybrid) ranking of the question (`DocHopConfig.base`),
   filled up to `k` by dense similarity where fewer passages share a word with the question
   (a small folder, a question in other words than its documents). A question's word the
   corpus lacks is first read as its British or American spelling the corpus holds
   (``"licence"`` -> ``"license"``, `respell`).
3. **Bridges**: the documents named in the sentences of the first hop's best `source_depth`
   passages (a passage's own document aside), each weighed by its best such sentence's match
   with the question (the idf of the question's words in it) over 1 + the passage's rank, a tie
   going to the surer name; with `entities`, also the other documents holding a graph entity
   such a sentence names, when at most `max_holders` documents do ("Robyn Speer" of wordfreq's
   page leads to ftfy's) and it is no word of the passage's own document's names (the "CLI" of
   LangGraph CLI's page is its own); and the documents the question names. The best `max_docs`
   of them (`order`).
4. **Second hop**: inside each bridged document, its passages ranked for the question's words
   with the sentences that named the document, less the document's own name words (`query`;
   or only the question's words the first hop's passage lacks, "residual"): by BM25 and by the
   idf of those words in a passage's best sentence, fused by reciprocal rank (`within`).
5. **Fusion**: the first hop's best `keep`, then the second hop's best `per_doc` passages of
   each bridged document, then the rest of the first hop.

It needs no graph (`entities` reads one when the index has it) and no model beyond the index's
own search. Retriever ``doc_hop`` (`graphseek.tools.retrievers`); figures in
docs/evaluation.md, "Issue 57".
"""

from __future__ import annotations

import re
import weakref
from collections import Counter, defaultdict
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import numpy as np

from graphseek.knowledge.fusion import rrf
from graphseek.knowledge.passages import Hit, Passage
from graphseek.knowledge.sparse import STOPWORDS, tokenize
from graphseek.knowledge.text import fold

if TYPE_CHECKING:
    from graphseek.knowledge.index_common import SearchMethod
    from graphseek.knowledge.storage import IndexStore

_TOKEN = re.compile(r"[^\W_]+")
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")
#: a name matched in text has at most this many words
MAX_NAME_WORDS = 8


def _folded(text: str) -> str:
    """`text` in lower case, accents folded (`fold`)."""
    return (text if text.isascii() else fold(text)).lower()


def words(text: str) -> list[str]:
    """Lower-case words of `text` (accents folded; ``_``, ``-``, ``.`` and ``/`` split words)."""
    return _TOKEN.findall(_folded(text))


def joined_words(text: str) -> tuple[list[str], list[bool]]:
    """`words(text)` and, for each, whether it continues the word before it in one identifier:
    a ``-`` or ``_`` between them and a letter starting it ("get" of "apt-get", not "1" of
    "gzip-1.3")."""
    text = _folded(text)
    out: list[str] = []
    joined: list[bool] = []
    end = -2
    for m in _TOKEN.finditer(text):
        start = m.start()
        joined.append(start == end + 1 and text[end] in "-_" and m.group(0)[0].isalpha())
        out.append(m.group(0))
        end = m.end()
    return out, joined


def name_spans(
    text: str, tables: Sequence[Container[tuple[str, ...]]]
) -> list[tuple[tuple[str, ...], bool]]:
    """The names of `tables` that `text` holds, in order, each with whether it ends where its
    identifier does: at each word the longest name of the first table holding one there,
    unless it lies within one found before; none starts inside an identifier ("cli" of
    "langgraph-cli" is no name, "langgraph cli" is one; "pam" of "pam_limits" is one, not
    whole)."""
    tokens, joined = joined_words(text)
    joined.append(False)
    out: list[tuple[tuple[str, ...], bool]] = []
    covered = 0
    for i in range(len(tokens)):
        if joined[i]:
            continue
        longest = min(MAX_NAME_WORDS, len(tokens) - i)
        for table in tables:
            n = next((n for n in range(longest, 0, -1) if tuple(tokens[i : i + n]) in table), 0)
            if n:
                if i + n > covered:
                    out.append((tuple(tokens[i : i + n]), not joined[i + n]))
                    covered = i + n
                break
    return out


def document_key(passage: Passage) -> str:
    """The document a passage belongs to: its source file, else its title before ``:``."""
    source = passage.source
    if source and ("/" in source or PurePath(source).suffix):
        return source
    return passage.title.split(":", 1)[0].strip()


@dataclass(frozen=True)
class DocumentNames:
    """Each document of a corpus and the names that point to it (the module docstring, step 1).

    `documents[d]` is a document's key, `passages[d]` its passage positions in the index's order,
    `doc_of[i]` the document of passage `i` and `names` a name's words -> its document."""

    documents: list[str]
    passages: list[np.ndarray]
    doc_of: np.ndarray
    names: dict[tuple[str, ...], int]

    @classmethod
    def of(cls, passages: Sequence[Passage], generic_share: float = 0.1) -> DocumentNames:
        """The documents of `passages` and their names; a trailing word is generic (dropped
        from a name's variant) when at least `generic_share` of the documents, and 3, end a
        name with it."""
        position: dict[str, int] = {}
        doc_of = np.empty(len(passages), dtype=np.int64)
        titles: dict[int, set[str]] = defaultdict(set)
        stems: dict[int, set[str]] = defaultdict(set)
        for i, p in enumerate(passages):
            key = document_key(p)
            d = position.setdefault(key, len(position))
            doc_of[i] = d
            title = p.title.split(":", 1)[0].strip()
            if title:
                titles[d].add(title)
            if key == p.source:
                stems[d].add(PurePath(p.source).stem)
        documents = list(position)

        def keys(texts: Iterable[str]) -> set[tuple[str, ...]]:
            return {k for k in (tuple(words(_QUALIFIER.sub("", t) or t)) for t in texts) if k}

        full = {d: keys(titles[d] | stems[d]) for d in range(len(documents))}
        stem_keys = {d: keys(stems[d]) for d in range(len(documents))}
        last = Counter(n[-1] for ns in full.values() for n in ns if len(n) > 1)
        generic = {w for w, c in last.items() if c >= max(3, generic_share * len(documents))}
        variants: dict[int, set[tuple[str, ...]]] = {}
        for d, ns in full.items():
            out = set(ns)
            for n in ns:
                cut = list(n)
                while len(cut) > 1 and cut[-1] in generic:
                    cut.pop()
                out.add(tuple(cut))
            variants[d] = out
        # a file stem's first word ("xz" of "xz-utils"), where no other document's name starts so
        firsts = Counter(n[0] for ns in variants.values() for n in {n[:1] for n in ns})
        for d, ns in stem_keys.items():
            for n in ns:
                if len(n) > 1 and firsts[n[0]] == 1:
                    variants[d].add(n[:1])
        exact: dict[tuple[str, ...], set[int]] = defaultdict(set)
        claims: dict[tuple[str, ...], set[int]] = defaultdict(set)
        for d in range(len(documents)):
            for n in full[d]:
                exact[n].add(d)
            for n in variants[d]:
                claims[n].add(d)
        names: dict[tuple[str, ...], int] = {}
        for n, ds in claims.items():
            if len(n) > MAX_NAME_WORDS or _weak(n):
                continue
            owners = exact.get(n, set()) if len(ds) > 1 else ds
            if len(owners) == 1:
                names[n] = next(iter(owners))
        groups = [np.flatnonzero(doc_of == d) for d in range(len(documents))]
        return cls(documents, groups, doc_of, names)

    def words_of(self, d: int) -> frozenset[str]:
        """The words of document `d`'s names."""
        return self._name_words.get(d, frozenset())

    @cached_property
    def _name_words(self) -> dict[int, frozenset[str]]:
        out: dict[int, set[str]] = defaultdict(set)
        for n, d in self.names.items():
            out[d].update(n)
        return {d: frozenset(ws) for d, ws in out.items()}

    def mentioned(self, text: str) -> list[int]:
        """The documents `text` names, in the order of their first mention (longest name
        first where names overlap; `name_spans`)."""
        out: list[int] = []
        for key, _ in name_spans(text, [self.names]):
            if self.names[key] not in out:
                out.append(self.names[key])
        return out


def _weak(name: tuple[str, ...]) -> bool:
    """A name too weak to stand for a document: one short, numeric or function word."""
    if len(name) > 1:
        return False
    word = name[0]
    return len(word) < 2 or word.isdigit() or word in STOPWORDS


@dataclass(frozen=True)
class DocHopConfig:
    """The document-name hop's settings (the module docstring), chosen on the documentation dev
    genres (docs/evaluation.md, "Issue 57": leave-one-genre-out)."""

    #: the first hop: the index's "bm25" or "hybrid" search
    base: SearchMethod = "bm25"
    #: the first hop's depth (its ranking fills what the second hop leaves)
    depth: int = 50
    #: first-hop passages whose sentences are searched for document names
    source_depth: int = 10
    #: first-hop passages kept ahead of the second hop
    keep: int = 1
    #: documents searched in the second hop at most
    max_docs: int = 1
    #: second-hop passages taken from each document
    per_doc: int = 2
    #: the order of the bridged documents: "sentence" (those the first hop's sentences name,
    #: by their sentence's weight, then those the question names) or "question" (the question's
    #: first)
    order: str = "sentence"
    #: the second hop's query: the question's words ("question"), or those the first hop's best
    #: passage from another document lacks ("residual"); "+sentence": with the sentences that
    #: named the document
    query: str = "question+sentence"
    #: how a document's passages are ranked: "bm25", "sentence" (the idf of the query's words
    #: in its best sentence) or "both" (the two fused by reciprocal rank, constant `rrf_k`)
    within: str = "both"
    rrf_k: int = 10
    #: a graph entity named in a first-hop sentence also leads to the other documents holding
    #: it, when at most `max_holders` do (read from the index's graph, when it has one)
    entities: bool = True
    max_holders: int = 3
    #: a question's word the corpus lacks is read as its spelling variant the corpus holds
    #: ("licence" -> "license"; `respelled`)
    respell: bool = True


#: British and American spellings: word endings that stand for one another (`spellings`)
_SPELLING_ENDINGS = (
    ("ence", "ense"),
    ("ences", "enses"),
    ("our", "or"),
    ("ours", "ors"),
    ("oured", "ored"),
    ("ise", "ize"),
    ("ised", "ized"),
    ("ises", "izes"),
    ("ising", "izing"),
    ("isation", "ization"),
    ("isations", "izations"),
    ("yse", "yze"),
    ("ysed", "yzed"),
    ("tre", "ter"),
    ("tres", "ters"),
    ("ogue", "og"),
    ("ogues", "ogs"),
    ("elled", "eled"),
    ("elling", "eling"),
)


def spellings(word: str) -> list[str]:
    """The other spellings of `word` (lower case) by `_SPELLING_ENDINGS`, either way round,
    where at least three letters stay before the ending ("licence" -> "license")."""
    out = []
    for a, b in _SPELLING_ENDINGS:
        for have, other in ((a, b), (b, a)):
            if word.endswith(have) and len(word) - len(have) >= 3:
                out.append(word[: len(word) - len(have)] + other)
    return out


def respelled(text: str, vocabulary: Container[str]) -> str:
    """`text` with each word `vocabulary` lacks written as its spelling variant it holds."""

    def one(match: re.Match[str]) -> str:
        word = match.group(0).lower()
        if word in vocabulary or word in STOPWORDS:
            return match.group(0)
        return next((v for v in spellings(word) if v in vocabulary), match.group(0))

    return _TOKEN.sub(one, text)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


@lru_cache(maxsize=1 << 16)
def sentences(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The sentences of `text` (cut at a sentence end or a blank line), each with its words
    (`tokenize`)."""
    return tuple((s, frozenset(tokenize(s))) for s in _SENTENCE_END.split(text) if s.strip())


@dataclass
class DocHop:
    """The second hop through document names over one index (the module docstring)."""

    index: IndexStore
    names: DocumentNames
    config: DocHopConfig
    #: a word's inverse document frequency over the passages (a word none holds: absent)
    idf: dict[str, float]
    #: the graph's named entities held by a few documents: name's words -> those documents
    #: (`shared_names`; built on first use when `DocHopConfig.entities` is on)
    shared: dict[tuple[str, ...], frozenset[int]] | None = None

    @classmethod
    def from_index(cls, index: IndexStore, config: DocHopConfig | None = None) -> DocHop:
        bm25 = index.lexical_ranker()
        passages = index.passages
        df = (
            bm25.document_frequencies()
            if bm25 is not None
            else Counter(w for p in passages for w in set(tokenize(p.content)))
        )
        n = len(passages)
        idf = {w: float(np.log((n + 1) / (c + 0.5))) for w, c in df.items()}
        return cls(index, DocumentNames.of(passages), config or DocHopConfig(), idf)

    def with_config(self, **changes: Any) -> DocHop:
        """This hop with other settings, sharing what it read from the index."""
        return replace(self, config=replace(self.config, **changes))

    def _named(self, sentence: str, own: int) -> list[int]:
        """The documents `sentence` (of document `own`) names, `own` aside, the surest first:
        by a whole name, by a name that starts an identifier ("apt" of "apt-get"), and
        (`entities`) by a graph entity that `own` and at most `max_holders` - 1 others hold,
        not one of `own`'s name words (the "CLI" of LangGraph CLI's page is its own)."""
        names = self.names.names
        shared: dict[tuple[str, ...], frozenset[int]] = {}
        if self.config.entities:
            if self.shared is None:
                self.shared = shared_names(self.index, self.names, self.config.max_holders)
            shared = self.shared
        whole: list[int] = []
        part: list[int] = []
        held: list[int] = []
        for key, ends in name_spans(sentence, [names, shared]):
            if key in names:
                (whole if ends else part).append(names[key])
            if own in shared.get(key, ()) and not set(key) <= self.names.words_of(own):
                held += sorted(shared[key])
        return list(dict.fromkeys(d for d in [*whole, *part, *held] if d != own))

    def _lexical(self, text: str, group: np.ndarray) -> dict[int, float]:
        """The BM25 score of each passage of `group` (positions) for `text`: the index's
        lexical ranker's scores at those rows (`BM25Index.scores_of`), no ranking of the corpus
        (a store without one: its best 500 by BM25 search; 0 for the others)."""
        bm25 = self.index.lexical_ranker()
        if bm25 is not None:
            return dict(zip(group.tolist(), bm25.scores_of(text, group).tolist(), strict=True))
        index = self.index
        found = {
            index.position(h.passage.id): h.score
            for h in index.search(text, k=min(len(index), 500), method="bm25")
        }
        return {i: found.get(i, 0.0) for i in group.tolist()}

    def _terms(self, text: str) -> dict[str, float]:
        """The words of `text`, each with its idf (0 for a word the corpus lacks)."""
        return {w: self.idf.get(w, 0.0) for w in set(tokenize(text))}

    def _sentence_score(self, terms: dict[str, float], text: str) -> float:
        """The idf of `terms` found in the best sentence of `text`."""
        return max((self._overlap(terms, ws) for _, ws in sentences(text)), default=0.0)

    @staticmethod
    def _overlap(terms: dict[str, float], words: frozenset[str]) -> float:
        return sum(v for w, v in terms.items() if w in words)

    def retrieve(self, query: str, k: int = 5) -> list[Hit]:
        cfg = self.config
        if cfg.respell:
            query = respelled(query, self.idf)
        first = self.index.search(query, k=max(cfg.depth, k), method=cfg.base)
        if len(first) < k and cfg.base != "dense":  # fewer passages share a word than asked
            have = {h.passage.id for h in first}
            more = [
                h for h in self.index.search(query, k=k, method="dense") if h.passage.id not in have
            ]
            first = [h.model_copy(update={"rank": r + 1}) for r, h in enumerate([*first, *more])]
        if not first:
            return first
        bridges = self.bridges(query, first)
        if not bridges:
            return first[:k]
        second = self._second_hop(query, bridges, first)
        chosen: list[Passage] = [h.passage for h in first[: cfg.keep]]
        seen = {p.id for p in chosen}
        for p in [*second, *(h.passage for h in first)]:
            if len(chosen) >= k:
                break
            if p.id not in seen:
                chosen.append(p)
                seen.add(p.id)
        n = len(chosen)
        return [Hit(passage=p, score=float(n - r), rank=r + 1) for r, p in enumerate(chosen)]

    def bridges(self, query: str, first: list[Hit]) -> dict[int, list[str]]:
        """The documents to search in the second hop, in order, each with the sentences of the
        first hop that named it: those the question names and those its best passages name
        (not their own), the best first (`order`); at most `max_docs`."""
        cfg, names, index = self.config, self.names, self.index
        found: dict[int, list[str]] = {}
        weight: dict[int, tuple[float, int]] = {}
        terms = self._terms(query)
        asked = names.mentioned(query)
        for rank, h in enumerate(first[: cfg.source_depth]):
            own = int(names.doc_of[index.position(h.passage.id)])
            for sentence, words in sentences(h.passage.text):
                score = self._overlap(terms, words) / (1 + rank)
                for j, d in enumerate(self._named(sentence, own)):
                    found.setdefault(d, []).append(sentence)
                    weight[d] = max(weight.get(d, (0.0, -j)), (score, -j))  # ties: surer first
        by_weight = sorted(found, key=lambda d: (-weight[d][0], -weight[d][1]))
        order = [*asked, *by_weight] if cfg.order == "question" else [*by_weight, *asked]
        out: dict[int, list[str]] = {}
        for d in order:
            if d in out:
                continue
            out[d] = found.get(d, [])
            if len(out) >= cfg.max_docs:
                break
        return out

    def _second_hop(
        self, query: str, documents: dict[int, list[str]], first: list[Hit]
    ) -> list[Passage]:
        """Each document's best `per_doc` passages for the second hop's query (`query`),
        interleaved by their rank within the document."""
        cfg, names, index = self.config, self.names, self.index
        passages = index.passages
        ranked: list[list[Passage]] = []
        for d, named_by in documents.items():
            text = query
            if cfg.query.startswith("residual"):
                source = next(
                    (h.passage for h in first if names.doc_of[index.position(h.passage.id)] != d),
                    None,
                )
                held = set(tokenize(source.content)) if source is not None else set()
                text = " ".join(w for w in tokenize(query) if w not in held) or query
            if cfg.query.endswith("+sentence"):
                text = " ".join([text, *named_by])
            own = names.words_of(d)
            text = " ".join(w for w in tokenize(text) if w not in own) or text
            group = names.passages[d].tolist()
            lexical = self._lexical(text, names.passages[d])
            order = sorted(group, key=lambda i: -lexical[i])
            if cfg.within != "bm25":
                terms = self._terms(text)
                best = {i: self._sentence_score(terms, passages[i].content) for i in group}
                by_sentence = sorted(order, key=lambda i: -best[i])
                both = [i for i, _ in rrf([order, by_sentence], k=cfg.rrf_k)]
                order = by_sentence if cfg.within == "sentence" else both
            ranked.append([passages[i] for i in order[: cfg.per_doc]])
        out: list[Passage] = []
        for r in range(cfg.per_doc):
            out += [group[r] for group in ranked if r < len(group)]
        return out


def shared_names(
    index: IndexStore, names: DocumentNames, max_holders: int
) -> dict[tuple[str, ...], frozenset[int]]:
    """The index graph's named entities (not concepts, dates or amounts) linked to passages of
    2 to `max_holders` documents: each name's words -> those documents; {} without a graph."""
    from graphseek.errors import IndexNotFoundError
    from graphseek.tools.graph_access import graph_view

    try:
        view = graph_view(index)
    except IndexNotFoundError:
        return {}
    position = {pid: j for j, pid in enumerate(view.passage_ids)}
    doc_of = np.full(len(view.passage_ids), -1, dtype=np.int64)
    for i, p in enumerate(index.passages):
        j = position.get(p.id)
        if j is not None:
            doc_of[j] = names.doc_of[i]
    links = view.links.tocsr()
    out: dict[tuple[str, ...], frozenset[int]] = {}
    for e in range(len(view.entity_ids)):
        if view.is_concept(e) or set(view.types[e]) & _AMOUNTS:
            continue
        held = frozenset(
            int(d) for d in doc_of[links.indices[links.indptr[e] : links.indptr[e + 1]]] if d >= 0
        )
        key = tuple(words(view.names[e]))
        if 2 <= len(held) <= max_holders and key and not _weak(key):
            out[key] = held | out.get(key, frozenset())
    return out


_AMOUNTS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "PERCENT", "MONEY", "QUANTITY"})
_hops: weakref.WeakKeyDictionary[Any, tuple[str, DocHop]] = weakref.WeakKeyDictionary()


def doc_hop_of(index: IndexStore) -> DocHop:
    """The `DocHop` of an index (default `DocHopConfig`), built once per index revision."""
    from graphseek.tools.graph_access import per_revision

    return per_revision(_hops, index, lambda: DocHop.from_index(index))  # type: ignore[no-any-return]


def doc_hop(index: IndexStore, query: str, k: int) -> list[Hit]:
    """Retriever ``doc_hop``: the first hop's best passages, then the passages of the documents
    it names that answer the rest of the question (the module docstring)."""
    return doc_hop_of(index).retrieve(query, k)
