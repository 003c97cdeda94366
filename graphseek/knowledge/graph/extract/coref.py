"""Coreference before extraction: the rule-based pronoun resolver.

HiGra (§3.1, App. D) runs fastcoref before extraction. fastcoref loads its model from the Hugging
Face hub at first use, which graphseek must not do (no network at run time), and no other
coreference package on PyPI ships its weights inside the wheel. `RuleCoreferencer` is the offline
stand-in: it replaces third-person pronouns with the name of their antecedent, found as
`OfflineExtractor` finds it (the subject of the latest earlier sentence that is a compatible
entity, else the latest compatible mention, else the passage title; he/she/his/her -> PERSON,
it/its -> ORG, GPE, LOC, FAC, work and event types). Possessives become ``Name's``.

Use it in front of `LLMExtractor` (``build_graph(..., coreferencer=RuleCoreferencer())``);
`OfflineExtractor` already resolves pronouns on its own parse and needs no rewrite.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.knowledge.graph.extract.offline import OfflineExtractor
from graphseek.knowledge.passages import Passage

_POSSESSIVE = frozenset({"his", "its", "hers"})


class RuleCoreferencer:
    """Rewrites pronouns to their antecedents' names (ids and titles kept)."""

    def __init__(self, extractor: OfflineExtractor | None = None) -> None:
        self.extractor = extractor or OfflineExtractor(noun_chunks=True)

    def resolve(self, passages: Sequence[Passage]) -> list[Passage]:
        out: list[Passage] = []
        for doc, passage in zip(self.extractor.parse(passages), passages, strict=True):
            analysis = self.extractor.analyse(doc, passage)
            replacements = analysis.pronoun_antecedents()
            if not replacements:
                out.append(passage)
                continue
            text = passage.text
            pieces: list[str] = []
            cursor = 0
            for i, (start, end, name) in sorted(replacements.items()):
                word = text[start:end]
                lower = word.lower()
                possessive = lower in _POSSESSIVE or (lower == "her" and analysis.tag[i] == "PRP$")
                pieces.append(text[cursor:start])
                pieces.append(f"{name}'s" if possessive else name)
                cursor = end
            pieces.append(text[cursor:])
            out.append(passage.model_copy(update={"text": "".join(pieces)}))
        return out
