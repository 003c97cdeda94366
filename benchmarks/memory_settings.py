"""What each memory-budget setting holds (`graphseek.knowledge.graph.memory.budget`'s `WORKER_MB` and
`THREAD_MB`), measured on N synthetic passages (`benchmarks/indexing.py`'s corpus).

Each measurement runs in a fresh child process:

- ``extract``: the offline extractor with 2 forked workers; prints each worker's most private
  memory (``/proc/PID/smaps_rollup``: Private_Clean + Private_Dirty), sampled every 0.2 s;
- ``pass 1`` and ``pass 2``: the passage pass (`encode_passages`) over the extractions with 1
  and 2 encoder threads (`Embedder.bulk_threads`); prints how far the process's RSS rose above
  its start (ONNX Runtime's working memory per running batch) and the seconds.

    .venv/bin/python benchmarks/memory_settings.py [--passages 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]


def child(mode: str, threads: int, n: int, data_dir: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bounded_build import _rollup_mb, children_private_mb
    from indexing import synthetic

    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    passages = synthetic(data_dir, n)
    extractor = OfflineExtractor(n_process=2)
    extractor.prepare()
    rss_peak = [0]
    workers: dict[str, int] = {}
    stop = threading.Event()

    def sample() -> None:
        me = os.getpid()
        while not stop.wait(0.2):
            rss_peak[0] = max(rss_peak[0], _rollup_mb(me).get("Rss", 0))
            for pid, private in children_private_mb(me).items():
                workers[pid] = max(workers.get(pid, 0), private)

    extractions = extractor.extract(passages) if mode == "pass" else []
    sampler = threading.Thread(target=sample, daemon=True)
    if mode == "extract":
        sampler.start()
        started = time.perf_counter()
        extractor.extract(passages)
        stop.set()
        sampler.join()
        result: dict[str, object] = {"workers_private_mb": sorted(workers.values())}
    else:
        from graphseek.knowledge.embedder import get_embedder
        from graphseek.knowledge.graph.algorithms.contextual import encode_passages

        embedder = get_embedder()
        embedder.encode(["warm up"])
        before = _rollup_mb(os.getpid()).get("Rss", 0)
        sampler.start()
        started = time.perf_counter()
        with embedder.bulk_threads(threads):
            encode_passages(embedder, passages, extractions)
        stop.set()
        sampler.join()
        result = {"rss_rise_mb": rss_peak[0] - before}
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.passages, args.data_dir)
        return
    results = {}
    for mode, threads in (("extract", 2), ("pass", 1), ("pass", 2)):
        cmd = [sys.executable, __file__, "--child", mode, str(threads)]
        cmd += ["--passages", str(args.passages), "--data-dir", str(args.data_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{mode} {threads} failed:\n{done.stderr}")
        results[(mode, threads)] = json.loads(done.stdout.strip().splitlines()[-1])
    extract = results[("extract", 2)]
    one, two = results[("pass", 1)], results[("pass", 2)]
    print(f"{args.passages:,} passages")
    print(
        f"extraction, 2 forked workers: private MB each {extract['workers_private_mb']} "
        f"({extract['seconds']} s)"
    )
    print(
        f"passage pass, RSS rise: 1 encoder thread {one['rss_rise_mb']} MB ({one['seconds']} s), "
        f"2 threads {two['rss_rise_mb']} MB ({two['seconds']} s): "
        f"{two['rss_rise_mb'] - one['rss_rise_mb']} MB for the second thread"
    )


if __name__ == "__main__":
    main()
