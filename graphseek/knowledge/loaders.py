"""Load a corpus from disk into passages.

`load_corpus(path)` accepts:

- a JSON list of records, HippoRAG style: `[{"title": ..., "text": ...}, ...]`; the text may also
  be under `paragraph_text` (MuSiQue) or `contents`, an `id` is kept when present, and a plain
  string in the list is a text with no title;
- a JSON object mapping titles to texts, HotpotQA style: `{"title": ["sentence", ...]}` (the
  sentences are joined with no separator, as HotpotQA's sentences carry their own spaces) or
  `{"title": "text"}`;
- JSONL (`.jsonl` / `.ndjson`): one record per line, same keys as the JSON list;
- a single `.txt` file, read by its layout (`plaintext`): hard-wrapped lines joined, sections at
  its headings (underlined, flush left of an indented text, or standing alone in capitals or
  title case), blocks at blank lines and indents (an option or term with the description
  indented under it is one block), titled as Markdown's are below (the file stem unless the
  text has its own title); a text without layout is its paragraphs, one section;
- a single Markdown (`.md` / `.markdown`), reStructuredText (`.rst`) or HTML (`.html` / `.htm`)
  file, converted to clean text by `markup` (links keep their text; link targets, badges,
  images and comments are dropped; code is kept between backticks) and split at its headings:
  each section is chunked on its own and titled "<document title>: <heading path>" (the
  document title is the document's own title, e.g. its lone top-level heading, else the file
  stem; text before the first heading has the document title alone);
- a folder of such files, searched recursively in sorted order (hidden files and folders
  skipped).

Texts longer than `chunk_size` characters are split by `chunking.chunk_text` (a plain text's
sections with `whole_paragraphs=True`: its blocks are packed whole, a block over the budget is
cut at sentence ends, and no passage starts inside a sentence; every chunk keeps the title; a
given id becomes `<id>#<n>` for chunk n; otherwise ids come from
`passage_id(title, text)`). Identical (title, text) pairs are kept once; a given id that repeats
with different content gets a `~2`, `~3`, ... suffix and a warning, so ids are unique.

Every problem raises `CorpusError` naming the path and what is wrong. A file that is not UTF-8,
cannot be read, or whose text is mostly control characters (binary data: NUL bytes and the like)
is a bad input; so is a record without a usable text. `on_bad_file="skip"` skips those (a file of
a folder, a record of a JSON / JSONL file) and `read_corpus` reports each with its reason;
`"fail"` (the default) raises on the first one. A corpus that is not there, of an unsupported
type, or not valid JSON as a whole always raises.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

from graphseek.errors import CorpusError
from graphseek.knowledge.chunking import chunk_text
from graphseek.knowledge.passages import Passage, passage_id

logger = logging.getLogger(__name__)

PLAIN_SUFFIXES = (".txt",)
#: read through `markup` (imported on first use: its parsers take a while to load)
MARKUP_SUFFIXES = (".md", ".markdown", ".rst", ".html", ".htm")
#: the files read from a folder (and as single files): plain text and markup
TEXT_SUFFIXES = PLAIN_SUFFIXES + MARKUP_SUFFIXES
JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + JSON_SUFFIXES + JSONL_SUFFIXES
TEXT_KEYS = ("text", "paragraph_text", "contents")

OnBadFile = Literal["skip", "fail"]
ON_BAD_FILE: tuple[str, ...] = get_args(OnBadFile)

#: a text is rejected as binary data when more than this share of its non-space characters are
#: control characters (C0/C1 controls but tab and line breaks, NUL included; surrogates;
#: private-use code points)
MAX_CONTROL_SHARE = 0.1
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff\ue000-\uf8ff]")
_SPACE = re.compile(r"\s")


class _Record(NamedTuple):
    title: str
    text: str
    given_id: str | None
    source: str
    whole_paragraphs: bool = False  # chunked a block at a time (a plain text's sections)


@dataclass(frozen=True)
class Skipped:
    """A bad file (or record) that `on_bad_file="skip"` left out, and why."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class LoadedCorpus:
    """What `read_corpus` found: the passages, and what it skipped with the reason."""

    passages: list[Passage]
    skipped: list[Skipped] = field(default_factory=list)


@dataclass
class _BadInputs:
    mode: str
    skipped: list[Skipped] = field(default_factory=list)

    def handle(self, where: str, exc: CorpusError) -> None:
        """Raise `exc` (mode "fail", with a hint) or remember it as skipped (mode "skip")."""
        if self.mode == "fail":
            raise CorpusError(
                f"{exc} To leave bad files out, pass on_bad_file='skip' (CLI: --on-bad-file skip)."
            ) from exc
        self.skipped.append(Skipped(where, _reason(exc, where)))


def _reason(exc: CorpusError, where: str) -> str:
    text = str(exc)
    for prefix in (f"Cannot read {where}: ", f"Unsupported record in {where}: "):
        if text.startswith(prefix):
            return text[len(prefix) :].rstrip(".")
    return text.rstrip(".")


def text_problem(text: str) -> str | None:
    """Why `text` is not text (mostly control characters, e.g. NUL bytes), or None if it is."""
    controls = len(_CONTROL.findall(text))
    if not controls:
        return None
    visible = len(text) - len(_SPACE.findall(text))
    if controls > MAX_CONTROL_SHARE * max(visible, 1):
        nul = " (NUL bytes)" if "\x00" in text else ""
        share = controls / max(visible, 1)
        return (
            f"{min(share, 1.0):.0%} of its characters are control characters{nul}: "
            "binary data, not text"
        )
    return None


def load_corpus(
    path: str | Path,
    *,
    chunk_size: int = 1200,
    overlap: int = 150,
    on_bad_file: OnBadFile = "fail",
) -> list[Passage]:
    """Read the corpus at `path` (see the module docstring) into passages, in corpus order.

    `chunk_size=0` keeps every text whole (useful for benchmark corpora whose passages are
    the retrieval units). `on_bad_file="skip"` leaves bad files and records out (logged as
    warnings; `read_corpus` returns them).
    """
    loaded = read_corpus(path, chunk_size=chunk_size, overlap=overlap, on_bad_file=on_bad_file)
    for skipped in loaded.skipped:
        logger.warning("Skipped %s", skipped)
    return loaded.passages


def read_corpus(
    path: str | Path,
    *,
    chunk_size: int = 1200,
    overlap: int = 150,
    on_bad_file: OnBadFile = "fail",
) -> LoadedCorpus:
    """`load_corpus` that returns what `on_bad_file="skip"` left out, and why, for the caller to
    report (nothing is logged for them here)."""
    skipped: list[Skipped] = []
    stream = iter_corpus(
        path, chunk_size=chunk_size, overlap=overlap, on_bad_file=on_bad_file, skipped=skipped
    )
    return LoadedCorpus(list(stream), skipped)


def iter_corpus(
    path: str | Path,
    *,
    chunk_size: int = 1200,
    overlap: int = 150,
    on_bad_file: OnBadFile = "fail",
    skipped: list[Skipped] | None = None,
) -> Iterator[Passage]:
    """`read_corpus`'s passages one at a time, read a file at a time (a corpus spooled as it is
    read, `graphseek.knowledge.graph.memory.spool.PassageSpool`, is never in memory whole): what
    `on_bad_file="skip"` leaves out goes to `skipped` as it is met. The arguments and the path
    are checked at once; an empty corpus raises `CorpusError` once it is read. Held while
    reading: a 16-byte digest of every (title, text) kept and every passage id."""
    if chunk_size < 0 or (chunk_size > 0 and not 0 <= overlap < chunk_size):
        raise ValueError(
            f"need chunk_size >= 0 and 0 <= overlap < chunk_size, got {chunk_size=}, {overlap=}"
        )
    if on_bad_file not in ON_BAD_FILE:
        raise ValueError(
            f"on_bad_file must be one of {', '.join(ON_BAD_FILE)}, got {on_bad_file!r}"
        )
    path = Path(path).expanduser()
    if not path.exists():
        raise CorpusError(f"Corpus not found: {path} does not exist.")
    bad = _BadInputs(on_bad_file, [] if skipped is None else skipped)
    records = _read_folder(path, bad) if path.is_dir() else _read_file(path, bad)
    return _counted(_to_passages(records, chunk_size=chunk_size, overlap=overlap), path, bad)


def _counted(passages: Iterator[Passage], path: Path, bad: _BadInputs) -> Iterator[Passage]:
    """`passages`, then a log line with their number, or `CorpusError` if there were none."""
    count = 0
    for p in passages:
        count += 1
        yield p
    if not count:
        skipped = f" (skipped {len(bad.skipped)} bad: {bad.skipped[0]}, …)" if bad.skipped else ""
        raise CorpusError(f"Empty corpus: no passages with text were found in {path}{skipped}.")
    logger.info("Loaded %d passages from %s", count, path)


def _read_folder(folder: Path, bad: _BadInputs) -> Iterator[_Record]:
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in TEXT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise CorpusError(
            f"Empty corpus: the folder {folder} holds no "
            f"{' / '.join(TEXT_SUFFIXES)} files (searched recursively)."
        )
    return _folder_records(files, bad)


def _folder_records(files: list[Path], bad: _BadInputs) -> Iterator[_Record]:
    """The records of each file in turn (a bad file's: none, all of it read before any is
    given)."""
    for file in files:
        try:
            records = list(_read_text_file(file))
        except CorpusError as exc:
            bad.handle(str(file), exc)
            continue
        yield from records


def _read_file(path: Path, bad: _BadInputs) -> Iterator[_Record]:
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return _read_text_file(path)
    if suffix in JSON_SUFFIXES:
        return _read_json(path, bad)
    if suffix in JSONL_SUFFIXES:
        return _read_jsonl(path, bad)
    raise CorpusError(
        f"Unsupported corpus file type {suffix or '(no extension)'!r}: {path}. "
        f"Use one of {', '.join(SUPPORTED_SUFFIXES)} or a folder of text files."
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"Cannot read {path}: not UTF-8 text (byte {exc.start}: {exc.reason})."
        ) from exc
    except OSError as exc:
        raise CorpusError(f"Cannot read {path}: {exc.strerror or exc}.") from exc


def _read_text_file(path: Path) -> Iterator[_Record]:
    text = _read_text(path)
    problem = text_problem(text)
    if problem:
        raise CorpusError(f"Cannot read {path}: {problem}.")
    if not text.strip():
        logger.warning("Skipping empty file %s", path)
        return
    suffix = path.suffix.lower()
    if suffix not in MARKUP_SUFFIXES:
        from graphseek.knowledge.plaintext import plain_document

        plain = plain_document(text)
        if not plain.sections:
            logger.warning("Skipping %s: no text once its layout is read", path)
        yield from _sections(path, plain.title, plain.sections, whole_paragraphs=True)
        return
    from graphseek.knowledge import markup

    try:
        document = markup.convert(text, suffix)
    except markup.MarkupError as exc:
        raise CorpusError(f"Cannot read {path}: {exc}.") from exc
    if not document.sections:
        logger.warning("Skipping %s: no text once its markup is removed", path)
    yield from _sections(path, document.title, document.sections, whole_paragraphs=False)


def _sections(
    path: Path, title: str, sections: Iterable[tuple[str, str]], *, whole_paragraphs: bool
) -> Iterator[_Record]:
    """A document's sections as records titled "<document title>: <heading path>"."""
    title = title or path.stem
    for heading, text in sections:
        section_title = f"{title}: {heading}" if heading else title
        yield _Record(section_title, text, None, str(path), whole_paragraphs)


def _checked(item: Any, where: str, source: str, bad: _BadInputs) -> Iterator[_Record]:
    """The record of one JSON item, unless it is bad (then `bad` raises or skips it)."""
    try:
        record = _record(item, where=where, source=source)
        problem = text_problem(record[1]) or text_problem(record[0])
        if problem:
            raise CorpusError(f"Unsupported record in {where}: {problem}.")
    except CorpusError as exc:
        bad.handle(where, exc)
        return
    yield record


def _read_json(path: Path, bad: _BadInputs) -> Iterator[_Record]:
    raw = _read_text(path)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        hint = ""
        if exc.msg == "Extra data":
            hint = " (one JSON value per line? name the file .jsonl)"
        raise CorpusError(
            f"Malformed JSON in {path} at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}."
        ) from exc
    source = str(path)
    if isinstance(data, list):
        for i, item in enumerate(data):
            yield from _checked(item, f"{path}, record {i}", source, bad)
    elif isinstance(data, dict):
        for title, value in data.items():
            where = f"{path}, entry {title!r}"
            if isinstance(value, list) and all(isinstance(s, str) for s in value):
                entry: dict[str, str] = {"title": str(title), "text": "".join(value)}
            elif isinstance(value, str):
                entry = {"title": str(title), "text": value}
            else:
                bad.handle(
                    where,
                    CorpusError(
                        f"Unsupported record in {where}: a JSON object corpus maps titles to a "
                        f"text or a list of sentences, got {type(value).__name__}."
                    ),
                )
                continue
            yield from _checked(entry, where, source, bad)
    else:
        raise CorpusError(
            f"Unsupported JSON corpus in {path}: expected a list of records or an object "
            f"mapping titles to texts, got {type(data).__name__}."
        )


def _read_jsonl(path: Path, bad: _BadInputs) -> Iterator[_Record]:
    source = str(path)
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {lineno}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.handle(
                where,
                CorpusError(
                    f"Malformed JSON in {path} at line {lineno}, column {exc.colno}: {exc.msg}."
                ),
            )
            continue
        yield from _checked(item, where, source, bad)


def _record(item: Any, *, where: str, source: str) -> _Record:
    if isinstance(item, str):
        return _Record("", item, None, source)
    if not isinstance(item, dict):
        raise CorpusError(
            f"Unsupported record in {where}: expected an object with a text, "
            f"got {type(item).__name__}."
        )
    text = next((item[k] for k in TEXT_KEYS if item.get(k) is not None), None)
    if text is None:
        raise CorpusError(
            f"Record without text in {where}: expected one of the keys "
            f"{', '.join(TEXT_KEYS)}; found {', '.join(map(str, item)) or 'no keys'}."
        )
    if isinstance(text, list) and all(isinstance(s, str) for s in text):
        text = "".join(text)
    if not isinstance(text, str):
        raise CorpusError(
            f"Record without text in {where}: the text is a {type(text).__name__}, not a string."
        )
    title = item.get("title") or ""
    given = item.get("id")
    return _Record(str(title), text, None if given in (None, "") else str(given), source)


def _to_passages(records: Iterable[_Record], *, chunk_size: int, overlap: int) -> Iterator[Passage]:
    seen_content: set[bytes] = set()  # digests of the (title, text) pairs kept
    seen_ids: set[str] = set()
    skipped_empty = 0
    for title, text, given_id, source, whole_paragraphs in records:
        title = title.strip()
        if not text.strip():
            skipped_empty += 1
            continue
        if chunk_size > 0:
            pieces = chunk_text(text, chunk_size, overlap, whole_paragraphs=whole_paragraphs)
        else:
            pieces = [text.strip()]
        for n, piece in enumerate(pieces):
            digest = _content_digest(title, piece)
            if digest in seen_content:
                continue
            seen_content.add(digest)
            if given_id is None:
                pid = passage_id(title, piece)
            else:
                pid = given_id if len(pieces) == 1 else f"{given_id}#{n}"
            if pid in seen_ids:
                base, suffix = pid, 2
                while f"{base}~{suffix}" in seen_ids:
                    suffix += 1
                pid = f"{base}~{suffix}"
                logger.warning("Duplicate passage id %r in %s; renamed to %r", base, source, pid)
            seen_ids.add(pid)
            yield Passage(id=pid, title=title, text=piece, source=source)
    if skipped_empty:
        logger.warning("Skipped %d records with empty text", skipped_empty)


def _content_digest(title: str, text: str) -> bytes:
    """A 16-byte digest of a (title, text) pair: equal pairs are kept once (two different
    pairs share one with a chance of about n^2 / 2^129 among n passages)."""
    return hashlib.blake2b(
        f"{len(title)}:{title}{text}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()
