"""Whether the files of a directory index are whole: what its manifest records of them, the
cheap checks made when it opens, and the checksums compared on demand.

**Recorded when written.** The manifest of an index written by this version holds, under
``"integrity"``, every file of the index directory (the graph's included, the manifest itself
excepted): its size in bytes, its SHA-256 and, for a ``.npy`` array, its shape and dtype
(`record_files`). The manifest is written last, so the record is of the files as they were
swapped into place.

**Checked when opened** (`check_index`, from `Index.open`; `check_graph_store`, from
`SQLiteGraphStore.open`), in a few milliseconds whatever the index's size (a stat and the first
bytes of each file, nothing read whole):

- each recorded file exists and has its recorded size (a truncated or lengthened file), and a
  ``.npy`` its recorded shape and dtype;
- each file's format, from its first and last bytes: a ``.npy`` header that parses and accounts
  for the file's size; a ``.npz`` that is a zip archive with its central directory; JSON that
  starts and ends as JSON does; ``graph.sqlite``'s header (SQLite's magic, and page size times
  page count equal to the file's size) and its tables; ``faiss.index``'s header (dimension,
  rows, and for an exact index its size);
- what the manifests count: the passage vectors are (passages, dim) float32, the FAISS index
  and BM25 hold one row per passage, the graph's entity and hyperedge vectors one row per
  entity and hyperedge of its manifest, and the graph has the index's passages.

``PRAGMA quick_check`` is not run: it reads every page, which takes seconds for the gigabytes
of a large store. The passage file is
read whole by `Index.open` anyway, and checked there (lines that parse, the manifest's count).

An index written before the record existed is checked the same way against its layout
(`INDEX_FILES`, `GRAPH_FILES`: a missing file the layout requires is damage), so truncation and
a damaged head are found in it too; a byte changed in the middle of a file, in either kind of
index, is found only by its checksum.

**Verified on demand** (`verify_index`, ``graphseek stats --verify``): every recorded file's
SHA-256 is computed and compared (every byte read: seconds for a large index, hence never when
opening).

Any damage is an `IndexFormatError` of one line naming the file and the command that rebuilds
the index (`rebuild_hint`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
import sqlite3
import stat
import struct
import zipfile
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.errors import IndexFormatError

INTEGRITY = "integrity"
"""The manifest's key for the record of its files (`record_files`)."""
ALGORITHM = "sha256"

INDEX_MANIFEST = "manifest.json"
GRAPH_DIR = "graph"
GRAPH_MANIFEST = "graph/manifest.json"
EMBEDDINGS = "dense/embeddings.npy"
FAISS = "dense/faiss.index"
BM25_PARAMS = "bm25/params.index.json"

INDEX_FILES = (
    "passages.jsonl",
    BM25_PARAMS,
    "bm25/vocab.index.json",
    "bm25/data.csc.index.npy",
    "bm25/indices.csc.index.npy",
    "bm25/indptr.csc.index.npy",
    EMBEDDINGS,
    FAISS,
)
"""The files every directory index has had (`graphseek.knowledge.index`); what an index without
a record is checked against, with `INDEX_LATER` where present."""

INDEX_LATER = ("bm25/tokens.npz",)
"""Files later versions of the index added (checked where present in an index without a
record)."""

GRAPH_FILES = (
    "manifest.json",
    "graph.sqlite",
    "entity_vectors.npy",
    "relation_vectors.npy",
    "hyperedge_vectors.npy",
    "base_vectors.npy",
    "adjacency_entity.npz",
    "adjacency_full.npz",
    "entity_passage.npz",
    "nodes.json",
)
"""The files every graph store has had (`graphseek.knowledge.graph.store`), relative to it,
with `GRAPH_LATER` where present."""

GRAPH_LATER = (
    "mention_vectors.npy",
    "matcher.json",
    "sentences.json",
    "sentences.npz",
    "sentence_vectors.npy",
)
"""Files later versions of the graph store added (checked where present)."""

GRAPH_TABLES = (
    "meta",
    "passages",
    "mentions",
    "raw_relations",
    "raw_facts",
    "entities",
    "entity_aliases",
    "entity_types",
    "provenance",
    "entity_passages",
    "relations",
    "relation_passages",
    "hyperedges",
    "hyperedge_members",
    "hyperedge_passages",
    "topics",
    "base_entities",
    "merge_pairs",
)
"""The tables of ``graph.sqlite`` (the schema of `graphseek.knowledge.graph.store.writer`; a
test keeps the two equal)."""

SQLITE_MAGIC = b"SQLite format 3\x00"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a member first; an empty archive
ZIP_END = struct.Struct("<4s4H2LH")  # the end of central directory record (22 bytes)
FAISS_HEADER = struct.Struct("<4siq")  # fourcc, d, ntotal (`write_index_header`)
FAISS_EXACT = (b"IxFI", b"IxF2")  # IndexFlatIP, IndexFlatL2: the header, then the rows
FAISS_EXACT_HEADER = 45  # fourcc, d, ntotal, two dummies, is_trained, metric, codes' length


# -- recording ------------------------------------------------------------------------------------


def _files(directory: Path, under: str, skip: Collection[str]) -> Iterator[str]:
    """Relative paths (``/``-separated) of the files under `directory`/`under`, sorted; names
    starting with a dot (lock, temporary and building files) and the files and folders of
    `skip` (relative paths) left out."""
    root = directory / under if under else directory
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(directory)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and (here / d).as_posix() not in skip
        )
        for name in sorted(filenames):
            rel = (here / name).as_posix()
            if not name.startswith(".") and rel not in skip:
                yield rel


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, ALGORITHM).hexdigest()


def record_file(path: Path) -> dict[str, Any]:
    """A file's record: its size, SHA-256 and, for a ``.npy``, shape and dtype."""
    record: dict[str, Any] = {"bytes": path.stat().st_size}
    if path.suffix == ".npy":
        header = _npy_header(path)
        if header is not None:
            record["shape"] = list(header[0])
            record["dtype"] = header[1].str
    record[ALGORITHM] = _sha256(path)
    return record


def record_files(
    directory: Path, under: str = "", skip: Collection[str] = (INDEX_MANIFEST,)
) -> dict[str, dict[str, Any]]:
    """The records (`record_file`) of every file under `directory` (or its subdirectory
    `under`), keyed by path relative to `directory`; `skip`: relative paths of files and
    folders left out."""
    return {rel: record_file(directory / rel) for rel in _files(directory, under, skip)}


def integrity_record(files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The manifest's ``"integrity"`` value for these file records."""
    return {"algorithm": ALGORITHM, "files": {rel: dict(files[rel]) for rel in sorted(files)}}


def _well_formed(record: Any) -> bool:
    """A file record as `record_file` writes it."""
    if not isinstance(record, dict) or not isinstance(record.get("bytes"), int):
        return False
    shape = record.get("shape", [])
    return isinstance(shape, list) and all(isinstance(n, int) for n in shape)


def recorded_files(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The file records of a manifest; None for one written before they were recorded."""
    record = manifest.get(INTEGRITY)
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        return None
    return record["files"]  # type: ignore[no-any-return]


# -- messages -------------------------------------------------------------------------------------


def rebuild_hint(directory: Path, manifest: Mapping[str, Any] | None = None) -> str:
    """The command that rebuilds the index in `directory`, as messages end: its recorded corpus
    (else CORPUS), ``--no-graph`` when it has no graph."""
    manifest = manifest or {}
    source = str(manifest.get("source") or "")
    command = f"graphseek index {shlex.quote(source) if source else 'CORPUS'} "
    command += f"--out {shlex.quote(str(directory))}"
    if manifest.get("graph") is False:
        command += " --no-graph"
    embedder = manifest.get("embedder")
    if isinstance(embedder, dict) and embedder.get("spec"):
        command += f" --embedder {shlex.quote(str(embedder['spec']))}"
    return f"rebuild it with `{command}`"


def damaged(path: Path, reason: str, hint: str) -> IndexFormatError:
    """The one-line error for a damaged file."""
    return IndexFormatError(f"Index file {path} is damaged: {reason}; {hint}.")


def missing(path: Path, hint: str) -> IndexFormatError:
    return IndexFormatError(f"Index file {path} is missing; {hint}.")


# -- the cheap checks -----------------------------------------------------------------------------


_NPY_HEADER = re.compile(
    rb"\{'descr': '([<>|=]?[a-zA-Z]\d*)', 'fortran_order': (?:False|True), "
    rb"'shape': \(((?:\d+, ?)*\d*)\), \}"
)
"""The header dict as ``np.save`` writes it (a regular expression reads it in microseconds;
numpy's reader compiles it as Python, a tenth of a millisecond a file)."""


def _npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype[Any], int] | None:
    """(shape, dtype, bytes before the data) from a ``.npy`` header; None if it has none."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(128)  # np.save pads its header to 64 bytes: most fit in 128
            if head[:6] != b"\x93NUMPY" or head[6:8] not in (b"\x01\x00", b"\x02\x00"):
                return None
            width = 2 if head[6] == 1 else 4
            start = 8 + width
            length = int.from_bytes(head[8:start], "little")
            if start + length > len(head):
                head += handle.read(start + length - len(head))
            found = _NPY_HEADER.match(head, start, start + length)
            if found is None:  # another writer's spelling: numpy's own reader
                handle.seek(0)
                fmt = np.lib.format
                version = fmt.read_magic(handle)
                read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
                shape, _, dtype = read(handle)
                return tuple(int(n) for n in shape), dtype, handle.tell()
            dtype = np.dtype(found.group(1).decode("ascii"))
            shape = tuple(int(n) for n in found.group(2).split(b",") if n.strip())
            return shape, dtype, start + length
    except (ValueError, OSError, SyntaxError, TypeError, AttributeError):
        return None


def _check_npy(path: Path, size: int) -> tuple[str, tuple[int, ...] | None, str]:
    """(reason or "", shape, dtype string) of a ``.npy`` file of `size` bytes."""
    header = _npy_header(path)
    if header is None:
        return "not a NumPy array (no readable .npy header)", None, ""
    shape, dtype, offset = header
    if dtype.hasobject:
        return "a NumPy array of Python objects", shape, dtype.str
    expected = offset + math.prod(shape) * dtype.itemsize
    if size != expected:
        return (
            f"{size:,} bytes, where its header ({_shape(shape)} {dtype.str}) needs {expected:,}",
            shape,
            dtype.str,
        )
    return "", shape, dtype.str


def _shape(shape: tuple[int, ...] | list[int]) -> str:
    return "x".join(str(n) for n in shape) if shape else "scalar"


def _ends(path: Path, size: int, width: int = 64) -> tuple[bytes, bytes]:
    """The first and last `width` bytes of a file, whitespace stripped."""
    with open(path, "rb") as handle:
        head = handle.read(width)
        if size > width:
            handle.seek(size - width)
            tail = handle.read()
        else:
            tail = head
    return head.lstrip(), tail.rstrip()


def _check_json(path: Path, size: int) -> str:
    head, tail = _ends(path, size)
    if not head or (head[:1], tail[-1:]) not in ((b"{", b"}"), (b"[", b"]")):
        return "not whole JSON (it does not start and end as an object or a list does)"
    return ""


def _check_jsonl(path: Path, size: int) -> str:
    if not size:
        return ""
    head, tail = _ends(path, size)
    if head[:1] != b"{" or tail[-1:] != b"}":
        return "not whole JSON lines (it does not start and end as an object does)"
    return ""


def _check_npz(path: Path, size: int) -> str:
    """A zip archive: its first member's signature, and its end record (where numpy and scipy
    put it: the last 22 bytes, no comment) pointing at a central directory that ends there;
    else `zipfile` reads it."""
    with open(path, "rb") as handle:
        if handle.read(4) not in ZIP_MAGICS:
            return "not a zip archive (.npz)"
        if size >= ZIP_END.size:
            handle.seek(size - ZIP_END.size)
            end = ZIP_END.unpack(handle.read(ZIP_END.size))
            if end[0] == b"PK\x05\x06" and end[6] + end[5] == size - ZIP_END.size and not end[7]:
                return ""
    try:
        with zipfile.ZipFile(path) as archive:
            archive.infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        return f"not a whole zip archive (.npz): {exc}"
    return ""


def _check_sqlite(path: Path, size: int, tables: Collection[str] = GRAPH_TABLES) -> str:
    """SQLite's header (magic; page size x page count = the file's size, where the count is
    valid) and that the database opens read-only and has `tables`."""
    with open(path, "rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        return "not an SQLite database (no SQLite header)"
    (page,) = struct.unpack_from(">H", header, 16)
    page = 65_536 if page == 1 else page
    (pages,) = struct.unpack_from(">I", header, 28)
    counted = header[24:28] == header[92:96]  # the count is valid (SQLite's file format, 1.3.9)
    if page < 512 or page & (page - 1) or (counted and pages and size != page * pages):
        return f"{size:,} bytes, where its header counts {pages:,} pages of {page:,}"
    try:
        con = sqlite3.connect(f"file:{path.as_posix()}?mode=ro", uri=True)
        try:
            found = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"an SQLite database that cannot be read ({exc})"
    lacking = [t for t in tables if t not in found]
    if lacking:
        return f"its tables {', '.join(lacking)} are missing"
    return ""


def faiss_header(path: Path) -> tuple[bytes, int, int] | None:
    """(fourcc, dimension, rows) from the header of a FAISS index file; None if too short."""
    with open(path, "rb") as handle:
        head = handle.read(FAISS_HEADER.size)
    if len(head) < FAISS_HEADER.size:
        return None
    fourcc, dim, rows = FAISS_HEADER.unpack(head)
    return fourcc, dim, rows


def _check_faiss(path: Path, size: int) -> str:
    header = faiss_header(path)
    if header is None or not header[0].isalnum():
        return "not a FAISS index (no FAISS header)"
    fourcc, dim, rows = header
    if dim <= 0 or rows < 0:
        return f"a FAISS header of dimension {dim} and {rows} rows"
    if fourcc in FAISS_EXACT and size != FAISS_EXACT_HEADER + rows * dim * 4:
        expected = FAISS_EXACT_HEADER + rows * dim * 4
        return f"{size:,} bytes, where its header ({rows:,} rows of {dim}) needs {expected:,}"
    return ""


@dataclass
class FileCheck:
    """What the cheap checks read of one file (for the checks against the manifests)."""

    shape: tuple[int, ...] | None = None
    dtype: str = ""
    faiss: tuple[bytes, int, int] | None = None


def check_file(path: Path, record: Mapping[str, Any] | None, hint: str) -> FileCheck:
    """The cheap checks of one file against its record (None: an index without one) and its
    format; `IndexFormatError` (one line) if it is missing or damaged."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise missing(path, hint) from None
    except OSError as exc:
        raise damaged(path, f"it cannot be read ({exc.strerror or exc})", hint) from None
    if not stat.S_ISREG(status.st_mode):
        raise damaged(path, "it is not a file", hint)
    size = status.st_size
    if record is not None and size != record.get("bytes", size):
        raise damaged(path, f"{size:,} bytes, where {record['bytes']:,} were written", hint)
    found = FileCheck()
    name = path.name
    try:
        if name.endswith(".npy"):
            reason, found.shape, found.dtype = _check_npy(path, size)
            if not reason and record is not None and "shape" in record:
                if list(found.shape or ()) != list(record["shape"]) or found.dtype != record.get(
                    "dtype", found.dtype
                ):
                    reason = (
                        f"its header says {_shape(found.shape or ())} {found.dtype}, where "
                        f"{_shape(record['shape'])} {record.get('dtype')} was written"
                    )
        elif name.endswith(".npz"):
            reason = _check_npz(path, size)
        elif name.endswith(".jsonl"):
            reason = _check_jsonl(path, size)
        elif name.endswith(".json"):
            reason = _check_json(path, size)
        elif name.endswith(".sqlite"):
            reason = _check_sqlite(path, size)
        elif name == "faiss.index":
            reason = _check_faiss(path, size)
            if not reason:
                found.faiss = faiss_header(path)
        else:
            reason = ""
    except OSError as exc:
        reason = f"it cannot be read ({exc.strerror or exc})"
    if reason:
        raise damaged(path, reason, hint)
    return found


def _expected(
    directory: Path, manifest: Mapping[str, Any], records: Mapping[str, Any] | None
) -> list[str]:
    """The relative paths to check: the recorded ones, else the layout's (with the graph's
    when the manifest says there is one, or there is a graph directory)."""
    if records is not None:
        return list(records)
    names = list(INDEX_FILES)
    later = list(INDEX_LATER)
    if manifest.get("graph") or (
        manifest.get("graph") is None and (directory / GRAPH_DIR).is_dir()
    ):
        names += [f"{GRAPH_DIR}/{name}" for name in GRAPH_FILES]
        later += [f"{GRAPH_DIR}/{name}" for name in GRAPH_LATER]
    return names + [rel for rel in later if (directory / rel).exists()]


def check_index(directory: Path, manifest: Mapping[str, Any]) -> None:
    """The cheap checks of every file of the directory index in `directory` (the module
    docstring); `IndexFormatError` (one line, naming the file and `rebuild_hint`) at the first
    damage. `manifest`: its manifest, already read and checked for its format."""
    hint = rebuild_hint(directory, manifest)
    records = recorded_files(manifest)
    if manifest.get(INTEGRITY) is not None and (
        records is None or not all(_well_formed(r) for r in records.values())
    ):
        raise IndexFormatError(
            f"Malformed index manifest {directory / INDEX_MANIFEST}: its {INTEGRITY!r} record "
            f"is not one this graphseek writes; {hint}."
        )
    checked = {
        rel: check_file(directory / rel, None if records is None else records.get(rel), hint)
        for rel in _expected(directory, manifest, records)
    }
    passages = int(manifest["counts"]["passages"])
    dim = int(manifest["embedder"]["dim"])
    vectors = checked.get(EMBEDDINGS)
    if vectors is not None and (vectors.shape != (passages, dim) or vectors.dtype != "<f4"):
        raise damaged(
            directory / EMBEDDINGS,
            f"it holds {_shape(vectors.shape or ())} {vectors.dtype}, where the manifest "
            f"counts {passages} passages of dim {dim} (float32, <f4)",
            hint,
        )
    faiss = checked.get(FAISS)
    if faiss is not None and faiss.faiss is not None and faiss.faiss[1:] != (dim, passages):
        raise damaged(
            directory / FAISS,
            f"it holds {faiss.faiss[2]} vectors of dim {faiss.faiss[1]}, where the manifest "
            f"counts {passages} passages of dim {dim}",
            hint,
        )
    if BM25_PARAMS in checked:
        _check_bm25(directory, passages, hint)
    if GRAPH_MANIFEST in checked:
        graph = read_graph_manifest(directory / GRAPH_MANIFEST, hint)
        _check_graph_counts(directory / GRAPH_DIR, graph, checked, GRAPH_DIR + "/", hint)
        counted = _counts(graph).get("passages")
        if isinstance(counted, int) and counted != passages:
            raise damaged(
                directory / GRAPH_MANIFEST,
                f"the graph counts {counted} passages, where the index counts {passages}",
                hint,
            )


def _check_bm25(directory: Path, passages: int, hint: str) -> None:
    path = directory / BM25_PARAMS
    try:
        params = json.loads(path.read_text(encoding="utf-8"))
        documents = params["num_docs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise damaged(path, f"unreadable BM25 parameters ({exc})", hint) from None
    if documents != passages:
        raise damaged(
            path, f"BM25 counts {documents} documents, where the manifest counts {passages}", hint
        )


def read_graph_manifest(path: Path, hint: str) -> dict[str, Any]:
    """A graph store's manifest, parsed (`IndexFormatError` naming it if it does not parse)."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise damaged(path, f"unreadable JSON ({exc})", hint) from None
    if not isinstance(manifest, dict):
        raise damaged(path, "not a JSON object", hint)
    return manifest


def _check_graph_counts(
    store: Path,
    manifest: Mapping[str, Any],
    checked: Mapping[str, FileCheck],
    prefix: str,
    hint: str,
) -> None:
    """The entity and hyperedge vectors have one row per entity and hyperedge counted."""
    counts = _counts(manifest)
    for name, key in (("entity_vectors.npy", "entities"), ("hyperedge_vectors.npy", "hyperedges")):
        found = checked.get(prefix + name)
        count = counts.get(key)
        if found is None or found.shape is None or not isinstance(count, int):
            continue
        if len(found.shape) != 2 or found.shape[0] != count:
            raise damaged(
                store / name,
                f"it holds {_shape(found.shape)} vectors, where the graph counts {count} {key}",
                hint,
            )


def _counts(manifest: Mapping[str, Any]) -> dict[str, Any]:
    counts = manifest.get("counts")
    return counts if isinstance(counts, dict) else {}


def check_graph_store(store: Path, manifest: Mapping[str, Any], hint: str) -> None:
    """The cheap checks of the files of the graph store in `store` (its manifest read), by its
    layout (`GRAPH_FILES`, and the later files where present), and of its counts."""
    names = list(GRAPH_FILES) + [name for name in GRAPH_LATER if (store / name).exists()]
    checked = {name: check_file(store / name, None, hint) for name in names}
    _check_graph_counts(store, manifest, checked, "", hint)


def graph_hint(store: Path) -> str:
    """`rebuild_hint` for the index a graph store belongs to (its parent, when that holds an
    index manifest), else how a store alone is rebuilt."""
    parent = store.parent / INDEX_MANIFEST
    if store.name == GRAPH_DIR and parent.is_file():
        try:
            manifest = json.loads(parent.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = None
        return rebuild_hint(store.parent, manifest if isinstance(manifest, dict) else None)
    return "rebuild the store with `build_graph(passages, out_dir)`"


# -- verifying ------------------------------------------------------------------------------------


@dataclass
class Verified:
    """What `verify_index` compared: files and bytes read, and the damaged files with why."""

    files: int = 0
    bytes: int = 0
    damaged: list[tuple[str, str]] = field(default_factory=list)


def verify_index(directory: Path, manifest: Mapping[str, Any]) -> Verified:
    """Compare every recorded file's size and SHA-256 with the manifest's record (reads every
    byte). `IndexFormatError` when the manifest records none (an index written before they were
    recorded)."""
    records = recorded_files(manifest)
    if records is None:
        raise IndexFormatError(
            f"The index at {directory} records no checksums (it was written before graphseek "
            "recorded them; its files' sizes and headers were checked); "
            f"{rebuild_hint(directory, manifest)} to record them."
        )
    result = Verified()
    for rel, record in records.items():
        path = directory / rel
        try:
            size = path.stat().st_size
            if size != record.get("bytes", size):
                result.damaged.append((rel, f"{size:,} bytes, {record['bytes']:,} written"))
                continue
            digest = _sha256(path)
        except FileNotFoundError:
            result.damaged.append((rel, "missing"))
            continue
        except OSError as exc:
            result.damaged.append((rel, f"unreadable: {exc.strerror or exc}"))
            continue
        result.files += 1
        result.bytes += size
        if digest != record.get(ALGORITHM):
            result.damaged.append((rel, f"{ALGORITHM} differs from the one written"))
    return result
