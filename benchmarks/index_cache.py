"""Index-build benchmark: the store write's index builds under two SQLite page caches.

`store_writer._write_database` inserts every row with a large page cache (`CACHE_KIB`: the
UNIQUE id indexes take keys in random order), then builds the secondary indexes (`_INDEXES`)
from sorted keys. SQLite's sorter holds up to the cache's size of keys in memory before it
spills to ``TMPDIR``, so with the large cache it held both at the write's top;
`INDEX_CACHE_KIB` is the cache the index builds now run with. This takes a stored
``graph.sqlite``, drops its secondary indexes (a copy in ``TMPDIR``), and builds them again in a
fresh child process per cache size: the seconds, the child's peak RSS (VmHWM) and whether the
files are the same bytes.

    .venv/bin/python benchmarks/index_cache.py STORE_DIR [--caches 262144,16384] [--repeat 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def child(path: Path, cache_kib: int) -> dict[str, float]:
    from graphseek.knowledge.graph.store.writer import _INDEXES

    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute(f"PRAGMA cache_size=-{cache_kib}")
    started = time.perf_counter()
    con.executescript(_INDEXES)
    con.commit()
    seconds = time.perf_counter() - started
    con.close()
    return {
        "seconds": seconds,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a graph store directory")
    parser.add_argument("--caches", default="262144,16384", help="page caches to compare, KiB")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child[0]), int(args.child[1]))))
        return

    from graphseek.knowledge.graph.store.writer import _INDEXES

    names = re.findall(r"CREATE INDEX (\w+)", _INDEXES)
    with tempfile.TemporaryDirectory(prefix="index-cache-") as tmp:
        bare = Path(tmp) / "bare.sqlite"
        shutil.copyfile(args.store / "graph.sqlite", bare)
        con = sqlite3.connect(bare)
        for name in names:
            con.execute(f"DROP INDEX IF EXISTS {name}")
        con.execute("VACUUM")
        con.close()
        print(f"{len(names)} indexes over {bare.stat().st_size / 2**20:,.0f} MB of rows")
        print(f"{'cache KiB':>10} {'seconds':>8} {'peak MB':>8}  sha256")
        caches = [int(c) for c in args.caches.split(",")]
        digests: set[str] = set()
        for _ in range(args.repeat):
            for cache in caches:
                path = Path(tmp) / f"with-{cache}.sqlite"
                shutil.copyfile(bare, path)
                out = subprocess.run(
                    [sys.executable, __file__, str(args.store), "--child", str(path), str(cache)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                row = json.loads(out.stdout.strip().splitlines()[-1])
                sha = digest(path)
                digests.add(sha)
                print(f"{cache:>10} {row['seconds']:>8.1f} {row['peak_mb']:>8.0f}  {sha[:16]}")
                path.unlink()
        print(f"the same file under every cache: {len(digests) == 1}")


if __name__ == "__main__":
    main()
