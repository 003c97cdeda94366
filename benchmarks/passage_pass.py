"""Passage-pass benchmark: a build's passage pass alone, from a stored build, with its RSS by block.

The passage pass (`graphseek.knowledge.graph.algorithms.contextual.encode_passages`: the passage
vectors and every mention's contextual vector, from one MiniLM run) is a whole build's peak. This
runs it alone on a stored graph's passages and extractions (read back from ``graph.sqlite`` into an
`ExtractionSpool`, as `benchmarks/reduce_stages.py` does), in a process whose C heap is bounded
as a build's is (`graphseek.knowledge.heap.bound_heap`), and prints the RSS when the pass
begins, after each block of passages (longest first), its most (sampled every 50 ms), and after
the encoder's memory is released. ``--blocks K`` stops after K blocks (the level is set by the
first ones: a 100K store's first blocks take minutes, its whole pass half an hour).

    .venv/bin/python benchmarks/passage_pass.py STORE_DIR [--blocks K] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reduce_stages import PhaseSampler  # noqa: E402

rss_mb = PhaseSampler.rss_mb


class Stop(Exception):
    """Raised after the blocks asked for."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a graph store directory")
    parser.add_argument("--blocks", type=int, help="stop after this many blocks")
    parser.add_argument("--threads", type=int, help="encoder threads (default: the build's)")
    args = parser.parse_args()

    from graphseek.knowledge.heap import bound_heap

    bound_heap()

    from graphseek.knowledge.embedder import Embedder, get_embedder
    from graphseek.knowledge.graph.algorithms import contextual
    from graphseek.knowledge.graph.memory.spool import ExtractionSpool
    from graphseek.knowledge.graph.store import SQLiteGraphStore

    stored = SQLiteGraphStore.open(args.store)
    passages = stored.passages()
    spool = ExtractionSpool.of(stored.extractions())
    stored.close()
    encoder = get_embedder()
    encoder.encode(["warm"])  # the model loaded, as after a build's extraction

    sampler = PhaseSampler()  # the RSS every 50 ms; its most in the phase "pass"

    def most() -> int:
        return sampler.peaks.get("pass", [0, 0])[1]

    blocks: list[tuple[int, int, int]] = []  # (block, RSS after it, most so far)
    original = Embedder.encode_spans

    def counted(self: Embedder, *a: object, **kw: object) -> object:
        out = original(self, *a, **kw)  # type: ignore[arg-type]
        blocks.append((len(blocks) + 1, rss_mb(), most()))
        if args.blocks and len(blocks) >= args.blocks:
            raise Stop
        return out

    Embedder.encode_spans = counted  # type: ignore[assignment,method-assign]
    begin = rss_mb()
    sampler.phase = "pass"
    started = time.perf_counter()
    limit = encoder.bulk_threads(args.threads)
    try:
        with limit:
            contextual.encode_passages(encoder, passages, spool)
    except Stop:
        pass
    seconds = time.perf_counter() - started
    sampler.phase = "after"
    held, peak = rss_mb(), max(most(), rss_mb())
    encoder.release_memory()
    print(f"{len(passages):,} passages, {len(blocks)} blocks in {seconds:.0f} s")
    print(f"RSS at the pass's start {begin:,} MB; its most {peak:,} MB (+{peak - begin:,})")
    for k, after, peak in blocks:
        if k <= 12 or k % 10 == 0 or k == len(blocks):
            print(f"  block {k:>4}: RSS {after:>6,} MB, most so far {peak:>6,}")
    print(f"at the end {held:,} MB; after release_memory {rss_mb():,} MB")


if __name__ == "__main__":
    main()
