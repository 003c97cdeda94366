"""Whether a passage's offline extraction depends on the passages parsed before it.

Extracts N synthetic passages (`benchmarks/indexing.py`'s corpus) three ways: in one process
in corpus order, in one process in reverse order, and with 2 forked workers (which worker parses
which chunk is decided by timing). Prints, for the reversed and the forked run, how many
passages' extractions differ from the first run's and how many relation labels. A build is
reproducible only when both are 0 (see ``--lemma-keys`` for the case that was not).

``--lemma-keys`` also lists, from the first run, the relation verbs (text, fine tag) the parser
made both a VERB and an AUX, how many lemma calls each (about two per token: the relation's
verb, then its label), and the lemmas given them: one lemma each since
`SpacyTables.lemma` lemmatises a non-auxiliary AUX as a verb (before, "influenced"/VBN was
"influenced" as an AUX and "influence" as a VERB, and its cache, keyed by text and tag, gave
every later token the first token's lemma: labels that followed the order of parsing).

    .venv/bin/python benchmarks/extraction_order.py --data-dir ../shared/data [--passages 3000]
        [--lemma-keys]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def differences(reference: list, other: list) -> tuple[int, int]:
    """(passages whose extractions differ, relation labels that differ) between two runs over
    the same passages, in the same order."""
    passages = labels = 0
    for a, b in zip(reference, other, strict=True):
        if a != b:
            passages += 1
            first = sorted((r.source, r.target, r.label) for r in a.relations)
            second = sorted((r.source, r.target, r.label) for r in b.relations)
            labels += len(set(first) ^ set(second))
    return passages, labels


class LemmaLog:
    """Records every lemma `SpacyTables.lemma` gives, by (text, tag): the POS and the lemma."""

    def __init__(self) -> None:
        from graphseek.knowledge.graph.extract import spacy_tables

        self.seen: dict[tuple[str, str], Counter[tuple[str, str]]] = defaultdict(Counter)
        self.original = original = spacy_tables.SpacyTables.lemma

        def lemma(tables: Any, doc: Any, i: int, lower: str, tag: str, pos: str) -> str:
            out = original(tables, doc, i, lower, tag, pos)
            self.seen[(lower, tag)][(pos, out)] += 1
            return out

        spacy_tables.SpacyTables.lemma = lemma  # type: ignore[method-assign,assignment]

    def stop(self) -> None:
        from graphseek.knowledge.graph.extract import spacy_tables

        spacy_tables.SpacyTables.lemma = self.original  # type: ignore[method-assign]

    def both(self) -> dict[tuple[str, str], Counter[tuple[str, str]]]:
        """The (text, tag) pairs lemmatised both as a VERB and as an AUX."""
        return {
            key: found
            for key, found in self.seen.items()
            if {pos for pos, _ in found} >= {"VERB", "AUX"}
        }


def logged_extraction(passages: list) -> tuple[list, LemmaLog]:
    """One process, in order, with every lemma recorded."""
    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    log = LemmaLog()
    try:
        return OfflineExtractor(n_process=1).extract(passages), log
    finally:
        log.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--passages", type=int, default=3000)
    parser.add_argument("--lemma-keys", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from indexing import synthetic

    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    passages = synthetic(args.data_dir, args.passages)
    runs = {}
    for name, processes, order in (
        ("one process, in order", 1, 1),
        ("one process, reversed", 1, -1),
        ("2 forked workers", 2, 1),
    ):
        start = time.perf_counter()
        if args.lemma_keys and processes == 1 and order == 1:
            out, log = logged_extraction(passages)
        else:
            out = OfflineExtractor(n_process=processes).extract(passages[::order])
        runs[name] = out[::order]
        seconds = time.perf_counter() - start
        print(f"{name:24s} {seconds:7.1f} s", flush=True)
    reference = runs["one process, in order"]
    print(f"{args.passages} passages: differences from one process in corpus order")
    for name in ("one process, reversed", "2 forked workers"):
        changed, labels = differences(reference, runs[name])
        print(f"  {name:24s} passages {changed:5d}   relations {labels:5d}")
    if args.lemma_keys:
        both = log.both()
        split = [key for key, found in both.items() if len({lemma for _, lemma in found}) > 1]
        print(
            f"relation verbs (text, tag): {len(log.seen)}; both VERB and AUX: {len(both)}; "
            f"given two lemmas: {len(split)}"
        )
        for key, found in sorted(both.items()):
            shown = ", ".join(f"{pos} {lemma!r} x{n}" for (pos, lemma), n in sorted(found.items()))
            print(f"  {key}: {shown}")


if __name__ == "__main__":
    main()
