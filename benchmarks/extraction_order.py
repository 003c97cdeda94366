"""Whether a passage's offline extraction depends on the passages parsed before it.

Extracts N synthetic passages (`benchmarks/indexing.py`'s corpus) three ways: in one process
in corpus order, in one process in reverse order, and with 2 forked workers (which worker parses
which chunk is decided by timing). Prints, for the reversed and the forked run, how many
passages' extractions differ from the first run's and how many relation labels. A build is
reproducible only when both are 0 (before the lemma cache was keyed by POS, a verb's label
followed the first POS its process had seen for it).

``--lemma-keys`` also lists, from the first run, the (text, fine tag) pairs of relation verbs
whose lemma differs by POS ("became"/VBD: "become" as a verb, "became" as an auxiliary), with
how often each lemma was given and the first passages that gave it: the verbs whose labels a
cache keyed by text and tag alone made depend on the order of parsing.

    .venv/bin/python benchmarks/extraction_order.py --data-dir ../shared/data [--passages 3000]
        [--lemma-keys]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
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
    """Records every lemma `SpacyTables.lemma` gives, by (text, tag), with the passages."""

    def __init__(self) -> None:
        from graphseek.knowledge.graph import spacy_tables

        self.passage = -1
        self.seen: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(
            lambda: defaultdict(list)
        )
        original = spacy_tables.SpacyTables.lemma

        def lemma(tables: Any, doc: Any, i: int, lower: str, tag: str, pos: str) -> str:
            out = original(tables, doc, i, lower, tag, pos)
            self.seen[(lower, tag)][out].append(self.passage)
            return out

        spacy_tables.SpacyTables.lemma = lemma  # type: ignore[method-assign,assignment]

    def conflicts(self) -> dict[tuple[str, str], dict[str, list[int]]]:
        return {key: lemmas for key, lemmas in self.seen.items() if len(lemmas) > 1}


def logged_extraction(passages: list) -> tuple[list, LemmaLog]:
    """One process, in order, with every lemma recorded."""
    from graphseek.knowledge.graph.offline import OfflineExtractor

    log = LemmaLog()
    extractor = OfflineExtractor(n_process=1)
    out = []
    for k, (doc, passage) in enumerate(zip(extractor.parse(passages), passages, strict=True)):
        log.passage = k
        out.append(extractor.extract_doc(doc, passage))
    return out, log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--passages", type=int, default=3000)
    parser.add_argument("--lemma-keys", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from indexing import synthetic

    from graphseek.knowledge.graph.offline import OfflineExtractor

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
        conflicts = log.conflicts()
        print(
            f"verbs (text, tag) lemmatised: {len(log.seen)}; with a lemma by POS: {len(conflicts)}"
        )
        for key, lemmas in sorted(conflicts.items()):
            shown = ", ".join(
                f"{lemma!r} x{len(at)} (first in passages {at[:3]})" for lemma, at in lemmas.items()
            )
            print(f"  {key}: {shown}")


if __name__ == "__main__":
    main()
