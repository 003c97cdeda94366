"""One parsed passage to its `Extraction`: mentions, aliases, pronouns, relations and facts.

`DocAnalysis` reads one spaCy doc of `OfflineExtractor.parse`:

- **Entities**: named entities (types = NER labels; cardinal/ordinal/percent/quantity dropped),
  and noun chunks that are not named entities (type ``CONCEPT``; leading articles, possessives
  and embedded named entities cut off: "a 1965 American drama film" -> "drama film").
  The passage title is an entity too; a title with a qualifier ("Seven Women (1944 film)") renames
  the passage's mentions of its base name, so two films of one name stay apart.
- **Aliases**: parentheses after a name ("National Basketball Association (NBA)", "(born X)",
  "(also known as X)"), appositions naming the same kind of entity, "known as / called /
  nicknamed X", and acronyms used anywhere in the passage whose letters are the initials of a
  multi-word entity name ("... the NBA ..."). An alias that is itself a mention is folded into
  the entity it names.
- **Pronouns** (he/she/his/her..., it/its, who/which/that): resolved to the subject of the
  latest earlier sentence that is a compatible entity, else the latest compatible mention, else
  the passage title (PERSON for he/she, ORG/GPE/LOC/work-like types for it). Definite noun
  phrases naming the title entity's class ("the film" in the passage "Seven Women (1965 film)",
  or in a passage saying "<title> is a ... film") refer to the title entity.
- **Relations** from dependency patterns, labelled by the verb lemma (the participle for passives:
  "born in", "directed by"): subject-verb-object, subject-verb-preposition-object (one level of
  nesting: "by marriage to"), copulas "X is a Y" (when Y is a name; a lower-case class such as
  "film" becomes X's description instead of a hub edge) and "X is the Y of Z" ("daughter of"), reduced
  relatives attached to a copula's attribute ("X is a film directed by Y"), and
  location appositions ("Akron, Ohio": located in).
- **Facts**: every sentence is an n-ary fact over the entities it mentions (with resolved
  pronouns), kept when it involves at least `min_fact_entities` entities.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from graphseek.knowledge.graph.models import (
    CONCEPT,
    Extraction,
    Mention,
    RawFact,
    RawRelation,
    fact_id,
    mention_id,
)
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.text import (
    is_acronym,
    is_acronym_of,
    normalize_name,
    split_qualifier,
)

if TYPE_CHECKING:
    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

PERSON_PRONOUNS = frozenset({"he", "him", "his", "she", "her", "hers", "himself", "herself"})
THING_PRONOUNS = frozenset({"it", "its", "itself"})
RELATIVE_PRONOUNS = frozenset({"who", "whom", "whose", "which", "that"})
PERSON_TYPES = frozenset({"PERSON"})
THING_TYPES = frozenset(
    {"ORG", "GPE", "LOC", "FAC", "PRODUCT", "WORK_OF_ART", "EVENT", "NORP", "LAW"}
)
#: appositions between these types make aliases ("Snoop Dogg, Calvin Broadus")
ALIAS_APPOS_TYPES = frozenset({"PERSON", "ORG", "WORK_OF_ART", "PRODUCT", "EVENT", "FAC"})
LOCATION_TYPES = frozenset({"GPE", "LOC"})
_ALIAS_VERBS = {"known": ("as",), "called": (), "nicknamed": ("as",), "dubbed": ()}
_ALIAS_PREFIX = re.compile(
    r"^(?:also\s+known\s+as|a\.?k\.?a\.?|better\s+known\s+as|formerly|born|n[ée]e)\s+(?P<name>.+)$",
    re.IGNORECASE,
)
_SUBJECT_DEPS = ("nsubj", "nsubjpass")
_BE_FORMS = frozenset({"is", "was", "are", "were", "be", "been", "'s"})
_MAX_DESCRIPTION_TOKENS = 20


@dataclass
class _Span:
    start: int  # token index; -1 for the title mention when the text does not name it
    end: int
    name: str
    types: list[str]
    aliases: list[str] = field(default_factory=list)
    description: str = ""
    sentence: int = 0
    is_title: bool = False


_NP_DEPS = frozenset(
    {"oprd", "nsubj", "dobj", "nsubjpass", "pcomp", "pobj", "dative", "appos", "attr", "ROOT"}
)
_NOMINAL = frozenset({"NOUN", "PROPN", "PRON"})
_ACRONYM_CANDIDATE = re.compile(r"(?<![\w.])[A-Z][A-Za-z.&]{1,9}(?![\w])")
_ARRAY_ATTRS = ["LOWER", "TAG", "DEP", "HEAD", "IDX", "LENGTH", "SENT_START", "IS_STOP", "IS_ALPHA"]


class DocAnalysis:
    """Mentions, aliases, pronoun links, relations and facts of one spaCy doc.

    Works on integer arrays and strings taken from ``doc.to_array`` rather than on `Token`
    objects, which cost a Python object each time they are touched.
    """

    def __init__(self, doc: Any, passage: Passage, extractor: OfflineExtractor) -> None:
        self.doc = doc
        self.text_of_doc: str = doc.text
        self.passage = passage
        self.x = extractor
        t = self.t = extractor.tables
        n = self.n = len(doc)
        array = doc.to_array(_ARRAY_ATTRS) if n else np.zeros((0, 9), dtype=np.uint64)
        cols = array.T.tolist()  # hashes stay unsigned
        signed = array.view(np.int64).T.tolist()  # relative heads and sentence starts are signed
        cols[3], cols[6] = signed[3], signed[6]
        self.lower = [t.string(h) for h in cols[0]]
        self.tag = [t.string(h) for h in cols[1]]
        self.dep = [t.string(h) for h in cols[2]]
        self.head = [i + rel for i, rel in enumerate(cols[3])]
        self.idx: list[int] = cols[4]
        self.length: list[int] = cols[5]
        self.is_stop = [bool(v) for v in cols[7]]
        self.is_alpha = [bool(v) for v in cols[8]]
        self.pos = [
            t.pos(tg, dp, lw) for tg, dp, lw in zip(self.tag, self.dep, self.lower, strict=True)
        ]
        self.children: list[list[int]] = [[] for _ in range(n)]
        self.sent_of = [0] * n
        self.sent_bounds: list[tuple[int, int]] = []
        sentence, start = -1, 0
        for i in range(n):
            h = self.head[i]
            if h != i:
                self.children[h].append(i)
            if i == 0 or cols[6][i] == 1:
                if sentence >= 0:
                    self.sent_bounds.append((start, i))
                sentence, start = sentence + 1, i
            self.sent_of[i] = sentence
        if n:
            self.sent_bounds.append((start, n))
        self.left = list(range(n))
        self.right = list(range(n))
        for i in range(n):
            j, h = i, self.head[i]
            steps = 0
            while h != j and steps < n:
                if i < self.left[h]:
                    self.left[h] = i
                if i > self.right[h]:
                    self.right[h] = i
                j, h = h, self.head[h]
                steps += 1
        self.spans: list[_Span] = []
        self.tok2span: dict[int, int] = {}
        self.redirect: dict[int, int] = {}
        self.pronoun: dict[int, int] = {}
        self.title_index: int | None = None
        self.title_classes: set[str] = set()
        self._find_spans()
        self._find_title()
        self._find_aliases()
        if extractor.resolve_pronouns:
            self._definite_title_references()
            self._resolve_pronouns()

    # -- helpers -------------------------------------------------------------------------------

    def text(self, start: int, end: int) -> str:
        """The doc text of tokens [start, end)."""
        if start >= end:
            return ""
        return self.text_of_doc[self.idx[start] : self.idx[end - 1] + self.length[end - 1]]

    def token_text(self, i: int) -> str:
        return self.text_of_doc[self.idx[i] : self.idx[i] + self.length[i]]

    def trim(self, start: int, end: int) -> tuple[int, int]:
        """Cut leading articles, possessives and punctuation, and a trailing possessive."""
        while start < end and (
            self.pos[start] in ("DET", "PUNCT", "PART", "CCONJ")
            or self.tag[start] in ("PRP$", "WP$", "POS", "DT")
        ):
            start += 1
        while end > start and (self.tag[end - 1] == "POS" or self.pos[end - 1] == "PUNCT"):
            end -= 1
        return start, end

    def span_root(self, span: _Span) -> int:
        for i in range(span.start, span.end):
            h = self.head[i]
            if h == i or not span.start <= h < span.end:
                return i
        return span.end - 1

    def description(self, i: int) -> str:
        """The phrase token `i` heads, without leading articles, capped at 20 tokens."""
        start, end = self.trim(self.left[i], self.right[i] + 1)
        end = min(end, start + _MAX_DESCRIPTION_TOKENS)
        return " ".join(self.text(start, end).split()).strip(" ,;:")

    def kids(self, i: int, *deps: str) -> list[int]:
        return [c for c in self.children[i] if self.dep[c] in deps]

    def expand(self, i: int) -> list[int]:
        """A token and the tokens coordinated with it ("X and Y")."""
        return [i, *self.kids(i, "conj")]

    def resolve(self, index: int | None) -> int | None:
        while index is not None and index in self.redirect:
            index = self.redirect[index]
        return index

    def span_at(self, i: int) -> int | None:
        """The mention token `i` belongs to (a pronoun: its antecedent), or None."""
        index = self.tok2span.get(i)
        if index is None:
            index = self.pronoun.get(i)
        return self.resolve(index)

    # -- spans ---------------------------------------------------------------------------------

    def _noun_chunks(self) -> Iterator[tuple[int, int, int]]:
        """(start, end, root) of base noun phrases, as spaCy's English iterator finds them."""
        prev_end = -1
        for i in range(self.n):
            if self.pos[i] not in _NOMINAL or self.left[i] <= prev_end:
                continue
            dep = self.dep[i]
            if dep not in _NP_DEPS:
                if dep != "conj":
                    continue
                h = self.head[i]
                while self.dep[h] == "conj" and self.head[h] < h:
                    h = self.head[h]
                if self.dep[h] not in _NP_DEPS:
                    continue
            prev_end = i
            yield self.left[i], i + 1, i

    def _find_spans(self) -> None:
        ent_tokens: set[int] = set()
        found: list[tuple[int, int, list[str]]] = []
        for ent in self.doc.ents:
            if ent.label_ not in self.x.ner_labels:
                continue
            start, end = self.trim(ent.start, ent.end)
            if start < end:
                found.append((start, end, [ent.label_]))
                ent_tokens.update(range(ent.start, ent.end))
        if self.x.noun_chunks:
            for chunk_start, _, root in self._noun_chunks():
                if root in ent_tokens or self.pos[root] == "PRON":
                    continue
                if self.lower[root] in RELATIVE_PRONOUNS:
                    continue
                start = chunk_start
                for i in range(chunk_start, root):
                    if i in ent_tokens:
                        start = i + 1
                start, end = self.trim(start, root + 1)
                if start >= end:
                    continue
                if all(self.is_stop[i] or not self.is_alpha[i] for i in range(start, end)):
                    continue
                found.append((start, end, [CONCEPT]))
        for start, end, types in sorted(found, key=lambda s: (s[0], s[1])):
            if any(i in self.tok2span for i in range(start, end)):
                continue
            name = _clean_name(self.text(start, end))
            if not name or not any(c.isalnum() for c in name):
                continue
            index = len(self.spans)
            self.spans.append(
                _Span(start=start, end=end, name=name, types=types, sentence=self.sent_of[start])
            )
            for i in range(start, end):
                self.tok2span[i] = index

    def _find_title(self) -> None:
        title = " ".join(self.passage.title.split())
        if not self.x.include_title or not title:
            return
        base, qualifier = split_qualifier(title)
        self.title_classes = {w.lower() for w in qualifier.split() if w.isalpha()}
        keys = {normalize_name(base), normalize_name(title)}
        matches = [k for k, s in enumerate(self.spans) if normalize_name(s.name) in keys]
        if matches:
            for k in matches:
                span = self.spans[k]
                if qualifier:
                    span.name = title
                    span.description = span.description or qualifier
                span.is_title = True
            self.title_index = matches[0]
            return
        self.title_index = len(self.spans)
        self.spans.append(
            _Span(
                start=-1, end=-1, name=title, types=[CONCEPT], description=qualifier, is_title=True
            )
        )

    def _absorb(self, keep: int | None, alias: int | None) -> None:
        """Fold mention `alias` into mention `keep` as an alias."""
        keep, alias = self.resolve(keep), self.resolve(alias)
        if keep is None or alias is None or keep == alias:
            return
        target, source = self.spans[keep], self.spans[alias]
        for name in (source.name, *source.aliases):
            _add_alias(target, name)
        if target.types == [CONCEPT] and source.types != [CONCEPT]:
            target.types = list(source.types)  # NER on an acronym alone is unreliable otherwise
        target.is_title = target.is_title or source.is_title
        self.redirect[alias] = keep
        if self.title_index == alias:
            self.title_index = keep

    # -- aliases -------------------------------------------------------------------------------

    def _find_aliases(self) -> None:
        for k, span in enumerate(self.spans):
            if span.start < 0 or self.resolve(k) != k:
                continue
            self._parenthesis_alias(k, span)
            for child in self.kids(self.span_root(span), "appos"):
                self._apposition(k, child)
        for i in range(self.n):  # "X, also known as Y" / "X is called Y"
            preps = _ALIAS_VERBS.get(self.lower[i])
            if preps is None or self.pos[i] != "VERB":
                continue
            if self.dep[i] == "acl":
                owner = self.span_at(self.head[i])
            else:
                subjects = self.kids(i, "nsubjpass")
                owner = self.span_at(subjects[0]) if subjects else None
            if owner is None:
                continue
            for child in self.children[i]:
                targets: list[int] = []
                if self.dep[child] == "prep" and self.lower[child] in preps:
                    targets = self.kids(child, "pobj")
                elif self.dep[child] in ("oprd", "attr") and not preps:
                    targets = [child]
                for target in targets:
                    alias = self.span_at(target)
                    if alias is not None and alias != owner:
                        self._absorb(owner, alias)
        self._acronyms()

    def _acronyms(self) -> None:
        """Acronyms used anywhere whose letters are the initials of a multi-word mention."""
        long_names = [
            k
            for k, s in enumerate(self.spans)
            if len(s.name.split()) >= 2 and "DATE" not in s.types and self.resolve(k) == k
        ]
        if not long_names:
            return
        for match in _ACRONYM_CANDIDATE.finditer(self.text_of_doc):
            word = match.group()
            if not is_acronym(word):
                continue
            i = bisect_right(self.idx, match.start()) - 1
            if i < 0 or self.idx[i] != match.start():
                continue
            own = self.tok2span.get(i)
            if own is not None and self.spans[own].end - self.spans[own].start > 1:
                continue
            for k in long_names:
                if is_acronym_of(word, self.spans[k].name):
                    if own is not None:
                        self._absorb(k, own)
                    else:
                        _add_alias(self.spans[self.resolve(k) or k], word)
                    break

    def _parenthesis_alias(self, k: int, span: _Span) -> None:
        end = span.end
        if end >= self.n or self.lower[end] != "(":
            return
        close = next(
            (i for i in range(end + 1, min(self.n, end + 12)) if self.lower[i] == ")"), None
        )
        if close is None or close == end + 1:
            return
        text = self.text(end + 1, close).strip()
        inner = {self.tok2span[i] for i in range(end + 1, close) if i in self.tok2span}
        if is_acronym_of(text, span.name):
            for other in sorted(inner):
                self._absorb(k, other)
            _add_alias(self.spans[k], text)
            return
        match = _ALIAS_PREFIX.match(text)
        if match and not any(c.isdigit() for c in match.group("name")):
            name = _clean_name(match.group("name").split(";")[0].split(",")[0])
            if name and name[0].isupper():
                for other in sorted(inner):
                    self._absorb(k, other)
                _add_alias(self.spans[k], name)

    def _apposition(self, k: int, i: int) -> None:
        other = self.span_at(i)
        span = self.spans[k]
        if other is None or other == k:
            if other is None and self.pos[i] == "NOUN" and not span.description:
                span.description = self.description(i)
            return
        o = self.spans[other]
        if set(span.types) & set(o.types) & ALIAS_APPOS_TYPES and self.pos[i] == "PROPN":
            self._absorb(k, other)
        elif CONCEPT in o.types and not span.description:
            span.description = self.description(i)

    def _definite_title_references(self) -> None:
        """ "The film stars X" in the passage about a film: a definite noun phrase naming the
        title entity's class (the title's qualifier, or Y in "<title> is a Y") refers to it."""
        title = self.resolve(self.title_index)
        if title is None:
            return
        classes = set(self.title_classes)
        for v in range(self.n):
            if self.pos[v] != "AUX" or self.lower[v] not in _BE_FORMS:
                continue
            if any(self.span_at(c) == title for c in self.kids(v, "nsubj")):
                classes.update(self.lower[a] for a in self.kids(v, "attr"))
        if not classes:
            return
        for k, span in enumerate(self.spans):
            if (
                k == title
                or span.start <= 0
                or span.types != [CONCEPT]
                or self.resolve(k) != k
                or span.end - span.start != 1
                or self.lower[span.start] not in classes
                or self.lower[span.start - 1] not in ("the", "this")
            ):
                continue
            self.redirect[k] = title  # coreference, not an alias

    # -- pronouns ------------------------------------------------------------------------------

    def _compatible(self, index: int | None, pronoun: str) -> bool:
        if index is None:
            return False
        span = self.spans[index]
        wanted = PERSON_TYPES if pronoun in PERSON_PRONOUNS else THING_TYPES
        if not wanted.isdisjoint(span.types):
            return True
        return span.is_title and span.types == [CONCEPT]

    def _resolve_pronouns(self) -> None:
        subjects: list[int | None] = []
        for start, end in self.sent_bounds:
            for i in range(start, end):
                if self.tag[i] not in ("PRP", "PRP$") or i in self.tok2span:
                    continue
                lower = self.lower[i]
                if lower in PERSON_PRONOUNS or lower in THING_PRONOUNS:
                    antecedent = self._antecedent(i, lower, subjects)
                    if antecedent is not None:
                        self.pronoun[i] = antecedent
            subject: int | None = None
            for i in range(start, end):
                if self.dep[i] in _SUBJECT_DEPS and self.dep[self.head[i]] == "ROOT":
                    subject = self.span_at(i)
                    break
            subjects.append(subject)

    def _antecedent(self, i: int, lower: str, subjects: list[int | None]) -> int | None:
        for index in reversed(subjects):
            if self._compatible(self.resolve(index), lower):
                return self.resolve(index)
        best: int | None = None
        for k, span in enumerate(self.spans):
            if 0 <= span.start < i and self.resolve(k) == k and self._compatible(k, lower):
                if best is None or span.start > self.spans[best].start:
                    best = k
        if best is not None:
            return best
        title = self.resolve(self.title_index)
        return title if self._compatible(title, lower) else None

    # -- relations -----------------------------------------------------------------------------

    def _subjects(self, verb: int, depth: int = 0) -> list[int]:
        found: list[int] = []
        for child in self.children[verb]:
            dep = self.dep[child]
            if dep == "csubj" and depth <= 2:  # "Teutberga( died 875) was a queen"
                found.extend(self._subjects(child, depth + 1))
                continue
            if dep not in _SUBJECT_DEPS:
                continue
            for tok in self.expand(child):
                if self.lower[tok] in RELATIVE_PRONOUNS and self.dep[verb] == "relcl":
                    index = self.span_at(self.head[verb])
                else:
                    index = self.span_at(tok)
                if index is not None:
                    found.append(index)
        if found or depth > 2:
            return found
        head = self.head[verb]
        if self.dep[verb] == "conj" and self.pos[head] in ("VERB", "AUX"):
            return self._subjects(head, depth + 1)
        if self.dep[verb] in ("acl", "relcl"):
            if self.dep[head] == "attr" and self.pos[self.head[head]] in ("AUX", "VERB"):
                copula_subjects = self._subjects(self.head[head], depth + 1)
                if copula_subjects:
                    return copula_subjects
            index = self.span_at(head)
            return [index] if index is not None else []
        return found

    def _label(self, verb: int) -> str:
        deps = {self.dep[c] for c in self.children[verb]}
        passive = bool(deps & {"auxpass", "nsubjpass"}) or (
            self.dep[verb] == "acl" and self.tag[verb] == "VBN"
        )
        if passive:
            label = self.lower[verb]
        else:
            label = self.t.lemma(self.doc, verb, self.lower[verb], self.tag[verb], self.pos[verb])
        particles = [self.lower[c] for c in self.kids(verb, "prt")]
        if particles:
            label = f"{label} {' '.join(particles)}"
        if "neg" in deps:
            label = f"not {label}"
        return label

    def relations(self) -> list[tuple[int, str, int, int]]:
        """(subject, label, object, sentence) over resolved mention indices, deduplicated."""
        out: list[tuple[int, str, int, int]] = []
        seen: set[tuple[int, str, int]] = set()

        def add(s: int | None, label: str, o: int | None, sentence: int) -> None:
            s, o = self.resolve(s), self.resolve(o)
            if s is None or o is None or s == o or not label:
                return
            key = (s, label, o)
            if key not in seen:
                seen.add(key)
                out.append((s, label, o, sentence))

        for v in range(self.n):
            pos = self.pos[v]
            if pos != "VERB" and pos != "AUX":
                continue
            subjects = self._subjects(v)
            if not subjects:
                continue
            sentence = self.sent_of[v]
            lemma = self.t.lemma(self.doc, v, self.lower[v], self.tag[v], pos)
            is_copula = pos == "AUX" and lemma == "be"
            label = "is" if is_copula else self._label(v)
            for child in self.children[v]:
                dep = self.dep[child]
                if dep == "dobj" and not is_copula:
                    for obj in self.expand(child):
                        for s in subjects:
                            add(s, label, self.span_at(obj), sentence)
                elif dep == "prep" or dep == "agent":
                    word = "by" if dep == "agent" else self.lower[child]
                    self._prep_relations(subjects, f"{label} {word}", child, sentence, add)
                elif dep == "attr" and is_copula:
                    for attr in self.expand(child):
                        self._copula(subjects, attr, sentence, add)
        for k, span in enumerate(self.spans):  # "Akron, Ohio": located in
            if span.start < 0 or self.resolve(k) != k or LOCATION_TYPES.isdisjoint(span.types):
                continue
            for child in self.kids(self.span_root(span), "appos"):
                other = self.span_at(child)
                if other is not None and not LOCATION_TYPES.isdisjoint(self.spans[other].types):
                    add(k, "located in", other, span.sentence)
        return out

    def _prep_relations(
        self, subjects: list[int], label: str, prep: int, sentence: int, add: _Add
    ) -> None:
        for pobj in self.kids(prep, "pobj"):
            for obj in self.expand(pobj):
                target = self.span_at(obj)
                if target is not None:
                    for s in subjects:
                        add(s, label, target, sentence)
                    if self.spans[target].types != [CONCEPT]:
                        continue
                for inner in self.kids(obj, "prep"):  # "by marriage to X"
                    for pobj2 in self.kids(inner, "pobj"):
                        chained = f"{label} {self.lower[obj]} {self.lower[inner]}"
                        for s in subjects:
                            add(s, chained, self.span_at(pobj2), sentence)

    def _copula(self, subjects: list[int], attr: int, sentence: int, add: _Add) -> None:
        attr_index = self.span_at(attr)
        has_article = any(self.lower[c] in ("a", "an") for c in self.kids(attr, "det"))
        # "X is a film": the class goes into X's description, not into a hub edge to "film"
        classed = attr_index is not None and not self._common_concept(attr_index)
        for s in subjects:
            if classed:
                add(s, "is a" if has_article else "is", attr_index, sentence)
            span = self.spans[s]
            if not span.description and self.pos[attr] in ("NOUN", "PROPN"):
                span.description = self.description(attr)
        for prep in self.kids(attr, "prep"):  # "X is the daughter of Y"
            label = f"{self.lower[attr]} {self.lower[prep]}"
            for pobj in self.kids(prep, "pobj"):
                for obj in self.expand(pobj):
                    target = self.span_at(obj)
                    for s in subjects:
                        add(s, label, target, sentence)

    def _common_concept(self, index: int) -> bool:
        """A lower-case noun-chunk mention ("film director"), as opposed to a name."""
        span = self.spans[index]
        first = next((c for c in span.name if c.isalpha()), "")
        return span.types == [CONCEPT] and not first.isupper()

    # -- output --------------------------------------------------------------------------------

    def extraction(self) -> Extraction:
        pid = self.passage.id
        relations = self.relations()
        order = sorted(
            (k for k in range(len(self.spans)) if self.resolve(k) == k),
            key=lambda k: (self.spans[k].start, k),
        )
        ids = {k: mention_id(pid, n) for n, k in enumerate(order)}
        spans = {k: self.content_span(k) for k in order}
        mentions = [
            Mention(
                id=ids[k],
                passage_id=pid,
                name=self.spans[k].name,
                aliases=list(self.spans[k].aliases),
                description=self.spans[k].description,
                types=list(self.spans[k].types),
                sentence=self.spans[k].sentence,
                start=spans[k][0],
                end=spans[k][1],
            )
            for k in order
        ]
        raw_relations = [
            RawRelation(passage_id=pid, source=ids[s], label=label, target=ids[o], sentence=n)
            for s, label, o, n in relations
        ]
        # sentence -> mention -> first token position (mentions, then resolved pronouns)
        members: list[dict[int, int]] = [{} for _ in self.sent_bounds]
        for k, span in enumerate(self.spans):
            index = self.resolve(k)
            if span.start >= 0 and index is not None:
                members[span.sentence].setdefault(index, span.start)
                if members[span.sentence][index] > span.start:
                    members[span.sentence][index] = span.start
        for i, k in self.pronoun.items():
            index = self.resolve(k)
            if index is not None:
                current = members[self.sent_of[i]].get(index)
                if current is None or current > i:
                    members[self.sent_of[i]][index] = i
        facts: list[RawFact] = []
        minimum = max(1, self.x.min_fact_entities)
        for n, (start, end) in enumerate(self.sent_bounds):
            if len(members[n]) < minimum:
                continue
            ordered = sorted(members[n], key=lambda k: (members[n][k], k))
            facts.append(
                RawFact(
                    id=fact_id(pid, len(facts)),
                    passage_id=pid,
                    relation=" ".join(self.text(start, end).split()),
                    mentions=[ids[k] for k in ordered],
                    sentence=n,
                )
            )
        return Extraction(passage_id=pid, mentions=mentions, relations=raw_relations, facts=facts)

    def content_span(self, k: int) -> tuple[int, int]:
        """Characters of span `k` in `Passage.content` (title, newline, text); the title
        mention that the text does not name is the title itself."""
        span = self.spans[k]
        title = self.passage.title
        if span.start < 0 or span.end <= span.start:
            return (0, len(title)) if span.is_title and title else (-1, -1)
        offset = len(title) + 1 if title else 0
        start = self.idx[span.start]
        end = self.idx[span.end - 1] + self.length[span.end - 1]
        return offset + start, offset + end

    def pronoun_antecedents(self) -> dict[int, tuple[int, int, str]]:
        """Resolved pronouns: token index -> (char start, char end, antecedent name)."""
        out: dict[int, tuple[int, int, str]] = {}
        for i, k in sorted(self.pronoun.items()):
            index = self.resolve(k)
            if index is not None:
                start = self.idx[i]
                out[i] = (start, start + self.length[i], self.spans[index].name)
        return out


_Add = Callable[[int | None, str, int | None, int], None]


def _clean_name(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;:-\u2013")
    return re.sub(r"(?:'s|\u2019s)$", "", text).strip()


def _add_alias(span: _Span, alias: str) -> None:
    alias = _clean_name(alias)
    key = normalize_name(alias)
    if not key or key == normalize_name(span.name):
        return
    if all(normalize_name(a) != key for a in span.aliases):
        span.aliases.append(alias)
