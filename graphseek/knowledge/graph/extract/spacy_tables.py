"""`SpacyTables`: part-of-speech and lemma lookups that stand in for spaCy's disabled pipes.

`OfflineExtractor` runs without the ``attribute_ruler`` and ``lemmatizer`` pipes: tags are mapped
to universal POS with the ruler's own table, and lemmas computed on demand, cached.
"""

from __future__ import annotations

from typing import Any


class SpacyTables:
    """Per-pipeline lookups: fine tag -> universal POS (from the attribute ruler's own patterns
    and its dependency rules), ruler lemma exceptions, rule lemmas cached (see `lemma`), hash ->
    string."""

    def __init__(self, nlp: Any) -> None:
        self.strings = nlp.vocab.strings
        self._str: dict[int, str] = {}
        self.tag_pos: dict[str, str] = {}
        self.pos_exceptions: dict[tuple[str, str], str] = {}
        self.lemma_exceptions: dict[tuple[str, str], str] = {}
        """The ruler's lemmas by (lower, fine tag): "is"/VBZ -> "be", whatever the POS."""
        self._rule_lemmas: dict[tuple[str, str, str], str] = {}
        """Rule lemmas computed so far, by (lower, fine tag, the POS lemmatised as)."""
        try:
            self.lemmatizer: Any = nlp.get_pipe("lemmatizer")
        except KeyError:  # pragma: no cover - every English pipeline has one
            self.lemmatizer = None
        try:
            ruler = nlp.get_pipe("attribute_ruler")
        except KeyError:  # pragma: no cover
            return
        for pattern in ruler.patterns:
            pos, lemma = pattern["attrs"].get("POS"), pattern["attrs"].get("LEMMA")
            for token_pattern in pattern["patterns"]:
                if len(token_pattern) != 1:
                    continue
                spec = token_pattern[0]
                if set(spec) == {"TAG"} and isinstance(spec["TAG"], str) and pos:
                    self.tag_pos.setdefault(spec["TAG"], pos)
                elif set(spec) == {"TAG", "LOWER"} and isinstance(spec["TAG"], str):
                    lowers = spec["LOWER"]
                    values = [lowers] if isinstance(lowers, str) else lowers.get("IN", [])
                    for lower in values:
                        if pos:
                            self.pos_exceptions[(spec["TAG"], lower)] = pos
                        if lemma:
                            self.lemma_exceptions[(lower, spec["TAG"])] = lemma

    def string(self, key: int) -> str:
        value = self._str.get(key)
        if value is None:
            value = self.strings[key] if key else ""
            self._str[key] = value
        return value

    def pos(self, tag: str, dep: str, lower: str) -> str:
        if dep in ("aux", "auxpass") and tag != "TO":
            return "AUX"
        if tag in ("DT", "WDT") and dep not in ("det", "quantmod"):
            return "PRON"
        if tag == "IN" and dep == "mark":
            return "SCONJ"
        return self.pos_exceptions.get((tag, lower)) or self.tag_pos.get(tag, "X")

    def lemma(self, doc: Any, i: int, lower: str, tag: str, pos: str) -> str:
        """The lemma of token `i` of `doc` (`lower`, `tag`, `pos`: its lower-case text, fine
        tag and universal POS).

        The true auxiliaries' lemmas are the ruler's exceptions ("has"/VBZ -> "have", "was"
        -> "be"). Any other word the parser makes an auxiliary is lemmatised as a verb: the
        rule lemmatizer has no rules for AUX and gives such a word back unchanged
        ("influenced"/VBN would be "influenced" as an AUX and "influence" as a VERB). With the
        cache keyed by text and tag, a relation's label would follow the POS of the first such
        token its process parsed, and in forked extraction (which worker parses which chunk is
        decided by timing) one build could write "influenced among" and the next "influence
        among"."""
        lemma = self.lemma_exceptions.get((lower, tag))
        if lemma is not None:
            return lemma
        rule_pos = "VERB" if pos == "AUX" else pos
        key = (lower, tag, rule_pos)
        lemma = self._rule_lemmas.get(key)
        if lemma is None:
            lemma = lower
            if self.lemmatizer is not None:
                tok = doc[i]
                tok.pos_ = rule_pos
                try:
                    found = self.lemmatizer.rule_lemmatize(tok)
                    lemma = (found[0] if found else lower).lower()
                except Exception:  # pragma: no cover - lookup tables missing
                    lemma = lower
            self._rule_lemmas[key] = lemma
        return lemma
