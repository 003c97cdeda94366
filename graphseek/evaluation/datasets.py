"""Dataset loaders for QA evaluation (2WikiMultiHopQA, MuSiQue, HotpotQA, docqa, sample).

Every loader returns a `Dataset`: the questions as `EvalQuestion`s and the retrieval corpus as
`Passage`s whose ids come from `passage_id(title, text)`, so gold ids are stable across runs and
equal to the ids an index built from the same corpus uses.

Gold passages follow the rules of `shared/data/README.md`:

- MuSiQue (and the HippoRAG sample): the paragraphs with `is_supporting`, matched on
  `(title, text)`, never on the title alone (MuSiQue titles are not unique).
- 2WikiMultiHopQA in HippoRAG's question format: the pages of the distinct subjects of the
  `evidence` triples, each mapped to a corpus title by exact match, then a unique
  case-insensitive match, then a unique match after dropping a trailing "(...)".
- HotpotQA (and 2Wiki in its full original format): the distinct `supporting_facts` titles.

A question whose gold passages cannot all be found in the corpus is kept and `flagged`, with the
reason; retrieval metrics skip flagged questions, answer metrics do not.

A question whose gold answer is empty (docqa's unanswerable questions) has `answers == []` and
`answerable == False`: the right response to it is an abstention (see
`graphseek.evaluation.scoring`).

`docqa` is the dev set of the software-documentation corpus (HotpotQA-style records). Its
held-out questions live outside this repository; the name `docqa-heldout` is reserved for them
and needs the file: `--dataset docqa-heldout=PATH` (or $GRAPHSEEK_DOCQA_HELDOUT). Any question
file can be given a name the same way: `NAME=PATH`.

Document-folder sets (format `docs`, see `DEVSETS`): records with `supporting` =
`[{"doc": <file or title>, "quote": <text holding the fact>}]` beside a `docs/` folder that
`graphseek.knowledge.loaders.load_corpus` reads, markup and all, as `graphseek ask` would. A gold
passage is the first passage of the supporting document (its source file name, else a title equal
to the document's name or stem or starting with it and ':') whose text holds the quote, compared
on lower-case letters and digits only; when the loader split the quote, the passage of that
document sharing most of its words.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graphseek.errors import CorpusError, GraphseekError
from graphseek.knowledge.passages import Passage, passage_id

__all__ = [
    "DATASETS",
    "DEVSETS",
    "Dataset",
    "DatasetError",
    "DatasetSpec",
    "EvalQuestion",
    "HELDOUT_FILES",
    "default_data_dir",
    "load_dataset",
    "parse_slice",
]


class DatasetError(GraphseekError, ValueError):
    """A dataset name, path, slice or file the loaders cannot use."""


class EvalQuestion(BaseModel):
    """One evaluation question with its gold answers and gold passages."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    answers: list[str] = Field(description="The gold answer first, then its aliases.")
    gold_passage_ids: list[str] = Field(default_factory=list)
    gold_titles: list[str] = Field(
        default_factory=list,
        description="Titles of the gold passages (the dataset's name where none was found).",
    )
    flagged: bool = Field(
        default=False, description="True when not every gold passage was found in the corpus."
    )
    flag_reason: str = ""
    type: str = Field(default="", description="Question type: compositional, bridge, 2hop, ...")
    hops: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def answer(self) -> str:
        return self.answers[0] if self.answers else ""

    @property
    def answerable(self) -> bool:
        """False when the gold answer is empty: the right response is to abstain."""
        return any(a.strip() for a in self.answers)


class Dataset(BaseModel):
    """A named set of questions and the merged retrieval corpus they are asked over."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    questions: list[EvalQuestion]
    corpus: list[Passage]
    source: str = ""

    def corpus_hash(self) -> str:
        """A digest of the corpus (passage ids in order); indexes are cached under it."""
        digest = hashlib.sha1()
        for p in self.corpus:
            digest.update(p.id.encode())
            digest.update(b"\n")
        return digest.hexdigest()

    @property
    def n_flagged(self) -> int:
        return sum(q.flagged for q in self.questions)


class DatasetSpec(BaseModel):
    """Where a named dataset lives under the data directory."""

    model_config = ConfigDict(frozen=True)

    questions: str
    corpus: str | None = None
    format: str
    note: str = ""


DATASETS: dict[str, DatasetSpec] = {
    "2wiki": DatasetSpec(
        questions="2wikimultihopqa/questions.json",
        corpus="2wikimultihopqa/2wikimultihopqa_corpus.json",
        format="2wiki",
        note="HippoRAG dev-1000; gold from evidence subjects (approximate). Dev slice 0:200.",
    ),
    "musique-train": DatasetSpec(
        questions="musique/musique_train.json",
        corpus="musique/musique_train_corpus.json",
        format="musique",
        note="HippoRAG v1 train-100 (the MuSiQue dev slice); exact gold.",
    ),
    "musique-dev100": DatasetSpec(
        questions="musique/musique_qa_100.json",
        corpus=None,
        format="musique",
        note="100 dev questions (held out); corpus = de-duplicated paragraphs in question order.",
    ),
    "musique-dev1000": DatasetSpec(
        questions="musique/questions.json",
        corpus=None,
        format="2wiki",
        note="Questions and answers only: no corpus, no gold labels (every question flagged).",
    ),
    "hotpotqa-train": DatasetSpec(
        questions="hotpotqa/hotpotqa_train.json",
        corpus="hotpotqa/hotpotqa_train_corpus.json",
        format="hotpotqa",
        note="HippoRAG v1 train-100; gold at title level.",
    ),
    "docqa": DatasetSpec(
        questions="docqa/docqa_dev.json",
        corpus="docqa/docqa_corpus.json",
        format="hotpotqa",
        note="Software documentation, 40 dev questions (single, two-hop, unanswerable).",
    ),
    "sample": DatasetSpec(
        questions="sample/sample.json",
        corpus="sample/sample_corpus.json",
        format="musique",
        note="HippoRAG's one-question debugging sample.",
    ),
}


DEVSETS: dict[str, str] = {
    "pkgdocs": "benchmarks/devsets/pkgdocs/questions.json",
    "manpages": "benchmarks/devsets/manpages/questions.json",
    "configref": "benchmarks/devsets/configref/questions.json",
    "changelogs": "benchmarks/devsets/changelogs/questions.json",
}
"""Dev sets kept in this repository (question file relative to the repository root, its corpus
in the `docs/` folder beside it), one documentation genre each: package READMEs with their
markup (`pkgdocs`), rendered man pages of tools (`manpages`), configuration-file references
(`configref`) and release notes (`changelogs`). Each folder's README says how it was made."""


HELDOUT_FILES: dict[str, tuple[str, str]] = {
    "docqa-heldout": ("GRAPHSEEK_DOCQA_HELDOUT", "docqa/docqa_corpus.json"),
}
"""Reserved names of held-out sets kept outside the repository: name -> (environment variable
naming the question file, corpus under the data directory used when none sits beside it)."""


# ------------------------------------------------------------------------------------------
# paths, files, slices


def default_data_dir() -> Path:
    """The data directory: $GRAPHSEEK_DATA_DIR, else ../shared/data from here or the repo."""
    env = os.environ.get("GRAPHSEEK_DATA_DIR")
    if env:
        return Path(env).expanduser()
    repo = Path(__file__).resolve().parents[2]
    candidates = [
        Path.cwd() / ".." / "shared" / "data",
        Path.cwd() / "shared" / "data",
        repo / ".." / "shared" / "data",
    ]
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return candidates[0]


def _read_json(path: Path) -> Any:
    """Read a .json or .json.gz file (also `path` + .gz when `path` is missing)."""
    if not path.exists() and Path(str(path) + ".gz").exists():
        path = Path(str(path) + ".gz")
    if not path.exists():
        raise DatasetError(f"dataset file not found: {path}")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read dataset file {path}: {exc}") from exc


def parse_slice(spec: str | slice | int | None) -> slice:
    """'0:200', '50:', ':20', '20' (the first 20), 'all'/''/None (everything) -> a slice."""
    if spec is None:
        return slice(None)
    if isinstance(spec, slice):
        return spec
    if isinstance(spec, int):
        return slice(0, spec)
    text = spec.strip()
    if text in ("", ":", "all", "*"):
        return slice(None)
    m = re.fullmatch(r"(-?\d*)\s*:\s*(-?\d*)", text)
    if m:
        start = int(m.group(1)) if m.group(1) else None
        stop = int(m.group(2)) if m.group(2) else None
        return slice(start, stop)
    if re.fullmatch(r"\d+", text):
        return slice(0, int(text))
    raise DatasetError(f"bad question slice {spec!r}: use START:STOP such as '0:200', '50:', ':20'")


# ------------------------------------------------------------------------------------------
# corpus


def _corpus_from_records(records: Any, source: str, where: Path | str) -> list[Passage]:
    """A corpus file: a list of {title, text} or a dict {title: [sentences]} (HotpotQA)."""
    items: list[tuple[str, str]] = []
    if isinstance(records, Mapping):
        for title, sentences in records.items():
            text = "".join(sentences) if isinstance(sentences, list) else str(sentences)
            items.append((str(title), text))
    elif isinstance(records, list):
        for i, r in enumerate(records):
            if not isinstance(r, Mapping) or "text" not in r and "paragraph_text" not in r:
                raise DatasetError(f"corpus record {i} in {where} has no 'text': {r!r:.120}")
            items.append((str(r.get("title", "")), str(r.get("text", r.get("paragraph_text")))))
    else:
        raise DatasetError(f"corpus {where} is neither a list of {{title, text}} nor a dict")
    return _dedupe(items, source)


def _dedupe(items: Iterable[tuple[str, str]], source: str) -> list[Passage]:
    seen: set[tuple[str, str]] = set()
    out: list[Passage] = []
    for title, text in items:
        if (title, text) in seen:
            continue
        seen.add((title, text))
        out.append(Passage.from_title_text(title, text, source=source))
    return out


def _paragraph_text(p: Mapping[str, Any]) -> str:
    return str(p.get("paragraph_text", p.get("text", "")))


# ------------------------------------------------------------------------------------------
# formats


def _answers(record: Mapping[str, Any]) -> list[str]:
    """The gold answer then its aliases; empty strings dropped (no answer: unanswerable)."""
    raw = record.get("answer", [])
    answers = [str(a) for a in raw if a is not None] if isinstance(raw, list) else [str(raw)]
    aliases = record.get("answer_aliases") or []
    return list(dict.fromkeys(a for a in [*answers, *map(str, aliases)] if a.strip()))


def _musique_hops(qid: str, record: Mapping[str, Any]) -> tuple[str, int | None]:
    m = re.match(r"(?:musique_)?((\d)hop\d*)__", qid)
    if m:
        return m.group(1), int(m.group(2))
    decomposition = record.get("question_decomposition")
    if isinstance(decomposition, list) and decomposition:
        return f"{len(decomposition)}hop", len(decomposition)
    return "", None


def _flag(missing: Sequence[str], n_gold: int, answerable: bool = True) -> tuple[bool, str]:
    if n_gold == 0 and not missing:
        if not answerable:
            return True, "unanswerable: no gold answer and no gold passages"
        return True, "no gold passages labelled"
    if missing:
        return True, "gold passage not found in corpus: " + "; ".join(map(repr, missing))
    return False, ""


def _question(
    record: Mapping[str, Any],
    qid: str,
    gold_ids: list[str],
    gold_titles: list[str],
    missing: Sequence[str],
    *,
    type: str,
    hops: int | None,
    metadata: dict[str, Any],
) -> EvalQuestion:
    """The `EvalQuestion` of one record of any format: its answers (`_answers`), the gold
    passages found, and a flag when some were not found or none are labelled (`_flag`)."""
    answers = _answers(record)
    flagged, reason = _flag(missing, len(gold_ids), bool(answers))
    return EvalQuestion(
        id=qid,
        question=str(record["question"]),
        answers=answers,
        gold_passage_ids=gold_ids,
        gold_titles=gold_titles,
        flagged=flagged,
        flag_reason=reason,
        type=type,
        hops=hops,
        metadata=metadata,
    )


def _musique_questions(records: list[Any], corpus: list[Passage]) -> list[EvalQuestion]:
    """MuSiQue-Ans / sample records: gold = paragraphs with is_supporting, on (title, text)."""
    ids = {p.id for p in corpus}
    out = []
    for i, r in enumerate(records):
        qid = str(r.get("id", r.get("_id", i)))
        gold_ids, gold_titles, missing = [], [], []
        for p in r.get("paragraphs", []):
            if not p.get("is_supporting"):
                continue
            title, text = str(p.get("title", "")), _paragraph_text(p)
            pid = passage_id(title, text)
            gold_titles.append(title)
            if pid in ids:
                if pid not in gold_ids:
                    gold_ids.append(pid)
            else:
                missing.append(title)
        qtype, hops = _musique_hops(qid, r)
        meta = {"answerable": r.get("answerable", True)}
        out.append(
            _question(r, qid, gold_ids, gold_titles, missing, type=qtype, hops=hops, metadata=meta)
        )
    return out


_TRAILING_PAREN = re.compile(r"\s*\([^()]*\)$")


class _TitleLocator:
    """Maps a name to one corpus passage: exact, then case-insensitive, then without '(...)'."""

    def __init__(self, corpus: Sequence[Passage]) -> None:
        self.exact: dict[str, list[Passage]] = defaultdict(list)
        self.lower: dict[str, list[Passage]] = defaultdict(list)
        self.base: dict[str, list[Passage]] = defaultdict(list)
        for p in corpus:
            self.exact[p.title].append(p)
            self.lower[p.title.lower()].append(p)
            self.base[_TRAILING_PAREN.sub("", p.title).strip().lower()].append(p)

    def locate(self, name: str) -> Passage | None:
        hits = self.exact.get(name, [])
        if hits:
            return hits[0]
        for table in (self.lower, self.base):
            hits = table.get(name.lower(), [])
            if len(hits) == 1:
                return hits[0]
        return None

    def by_title(self, title: str, text: str | None = None) -> Passage | None:
        """Exact title; among several passages with that title, the one with `text`."""
        hits = self.exact.get(title, [])
        if len(hits) == 1:
            return hits[0]
        if text is not None:
            for p in hits:
                if p.text == text:
                    return p
        return None


def _twowiki_questions(records: list[Any], corpus: list[Passage]) -> list[EvalQuestion]:
    """HippoRAG-style questions with `evidence` triples: gold = the subjects' pages."""
    locator = _TitleLocator(corpus)
    out = []
    for i, r in enumerate(records):
        qid = str(r.get("id", r.get("_id", i)))
        evidence = r.get("evidence") or []
        subjects = list(dict.fromkeys(str(e[0]) for e in evidence if isinstance(e, list) and e))
        gold_ids, gold_titles, missing = [], [], []
        for s in subjects:
            p = locator.locate(s)
            if p is None:
                missing.append(s)
                gold_titles.append(s)
            else:
                gold_titles.append(p.title)
                if p.id not in gold_ids:
                    gold_ids.append(p.id)
        qtype = str(r.get("question_type") or r.get("type") or "")
        hops = len(evidence) or None
        meta = {"evidence": evidence}
        out.append(
            _question(r, qid, gold_ids, gold_titles, missing, type=qtype, hops=hops, metadata=meta)
        )
    return out


def _context_items(records: list[Any]) -> list[tuple[str, str]]:
    items = []
    for r in records:
        for title, sentences in r.get("context", []):
            items.append((str(title), "".join(sentences)))
    return items


def _hotpot_questions(records: list[Any], corpus: list[Passage]) -> list[EvalQuestion]:
    """HotpotQA / full 2Wiki records: gold = distinct supporting_facts titles."""
    locator = _TitleLocator(corpus)
    out = []
    for i, r in enumerate(records):
        qid = str(r.get("_id", r.get("id", i)))
        context = {str(t): "".join(s) for t, s in r.get("context", [])}
        titles = list(dict.fromkeys(str(t) for t, _ in r.get("supporting_facts", [])))
        gold_ids, missing = [], []
        for t in titles:
            p = locator.by_title(t, context.get(t))
            if p is None:
                missing.append(t)
            elif p.id not in gold_ids:
                gold_ids.append(p.id)
        meta = {k: r[k] for k in ("level", "supporting_facts", "bridge") if r.get(k) is not None}
        qtype, hops = str(r.get("type", "")), len(titles) or None
        out.append(
            _question(r, qid, gold_ids, titles, missing, type=qtype, hops=hops, metadata=meta)
        )
    return out


_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def _squashed(text: str) -> str:
    """Lower-case letters and digits only: a quote and a passage compare whatever the markup."""
    return _NON_ALNUM.sub("", text.lower())


def _words(text: str) -> set[str]:
    return {w for w in _NON_ALNUM.split(text.lower()) if w}


def _document_passages(corpus: Sequence[Passage], doc: str) -> list[Passage]:
    """The passages of document `doc` (a file name, or a title): by source file name, else by
    a title that is the name (or its stem) or starts with it followed by ':'."""
    by_file = [p for p in corpus if p.source and Path(p.source).name == doc]
    if by_file:
        return by_file
    names = {doc, Path(doc).stem}
    return [p for p in corpus if p.title in names or p.title.split(":", 1)[0].strip() in names]


def _quoted_passage(passages: Sequence[Passage], quote: str) -> Passage | None:
    """The first passage holding `quote`; else the one sharing most of its words."""
    if not passages:
        return None
    if quote.strip():
        key = _squashed(quote)
        for p in passages:
            if key in _squashed(p.text):
                return p
    words = _words(quote)
    return max(passages, key=lambda p: len(words & _words(p.text)))


def _docs_questions(records: list[Any], corpus: list[Passage]) -> list[EvalQuestion]:
    """Document-folder records: gold = the passage of each supporting document with the quote."""
    out = []
    for i, r in enumerate(records):
        qid = str(r.get("_id", r.get("id", i)))
        supporting = r.get("supporting") or []
        if not isinstance(supporting, list):
            raise DatasetError(f"question {qid}: 'supporting' must be a list of {{doc, quote}}")
        gold_ids, gold_titles, missing = [], [], []
        for s in supporting:
            if not isinstance(s, Mapping) or not s.get("doc"):
                raise DatasetError(f"question {qid}: a supporting entry needs a 'doc': {s!r:.80}")
            doc = str(s["doc"])
            p = _quoted_passage(_document_passages(corpus, doc), str(s.get("quote", "")))
            if p is None:
                missing.append(doc)
            elif p.id not in gold_ids:
                gold_ids.append(p.id)
                gold_titles.append(p.title)
        meta = {k: r[k] for k in ("bridge", "supporting") if r.get(k)}
        qtype, hops = str(r.get("type", "")), len(supporting) or None
        out.append(
            _question(r, qid, gold_ids, gold_titles, missing, type=qtype, hops=hops, metadata=meta)
        )
    return out


def _folder_corpus(folder: Path) -> list[Passage]:
    """The passages of a document folder, read as `graphseek ask` reads one."""
    from graphseek.knowledge.loaders import load_corpus  # the parsers load only when needed

    if not folder.is_dir():
        raise DatasetError(f"document folder not found: {folder}")
    try:
        return load_corpus(folder)
    except CorpusError as exc:
        raise DatasetError(f"cannot load the documents in {folder}: {exc}") from exc


def detect_format(records: Any) -> str:
    """'musique' (paragraphs), 'hotpotqa' (supporting_facts) or '2wiki' (evidence triples)."""
    if not isinstance(records, list) or not records or not isinstance(records[0], Mapping):
        raise DatasetError("a question file must be a non-empty JSON list of records")
    first = records[0]
    if "question" not in first:
        raise DatasetError(f"question records need a 'question' field; got {sorted(first)}")
    if "paragraphs" in first:
        return "musique"
    if "supporting_facts" in first:
        return "hotpotqa"
    if "supporting" in first:
        return "docs"
    if "evidence" in first or "answer" in first:
        return "2wiki"
    raise DatasetError(f"unknown question format with fields {sorted(first)}")


_FORMATS = {
    "musique": _musique_questions,
    "2wiki": _twowiki_questions,
    "hotpotqa": _hotpot_questions,
    "docs": _docs_questions,
}


def _build_corpus(records: list[Any], fmt: str, corpus_path: Path | None, name: str) -> list:
    if corpus_path is not None and corpus_path.is_dir():
        return _folder_corpus(corpus_path)
    if corpus_path is not None:
        return _corpus_from_records(_read_json(corpus_path), name, corpus_path)
    if fmt == "musique":
        items = [
            (str(p.get("title", "")), _paragraph_text(p))
            for r in records
            for p in r.get("paragraphs", [])
        ]
        return _dedupe(items, name)
    if fmt == "hotpotqa":
        return _dedupe(_context_items(records), name)
    return []


def _guess_corpus(questions_path: Path) -> Path | None:
    """`<stem>_corpus.json` beside the question file, else the only `*_corpus.json` there."""
    stem = questions_path.name.removesuffix(".gz").removesuffix(".json")
    for candidate in (f"{stem}_corpus.json", f"{stem}_corpus.json.gz"):
        if (questions_path.parent / candidate).exists():
            return questions_path.parent / candidate
    others = sorted(questions_path.parent.glob("*_corpus.json*"))
    if len(others) == 1 and not stem.endswith("_corpus"):
        return others[0]
    return None


def load_questions_file(
    questions_path: str | Path,
    corpus_path: str | Path | None = None,
    *,
    name: str | None = None,
    fmt: str | None = None,
    questions: str | slice | int | None = None,
    guess_corpus: bool = True,
) -> Dataset:
    """Load any supported question file (format detected from its records) and its corpus.

    The corpus is `corpus_path`, else a `*_corpus.json` beside the file, else built from the
    records' own paragraphs/context (MuSiQue, HotpotQA). The whole corpus is kept whatever the
    question slice, so retrieval runs over the same merged corpus as in HippoRAG.
    """
    qpath = Path(questions_path)
    records = _read_json(qpath)
    fmt = fmt or detect_format(records)
    if fmt not in _FORMATS:
        raise DatasetError(f"unknown format {fmt!r}; choose one of {sorted(_FORMATS)}")
    cpath = Path(corpus_path) if corpus_path is not None else None
    if cpath is None and fmt == "docs":
        cpath = qpath.parent / "docs"
        if not cpath.is_dir():
            raise DatasetError(
                f"no docs/ folder beside {qpath}: pass the document folder as corpus"
            )
    elif cpath is None and guess_corpus:
        cpath = _guess_corpus(qpath)
    label = name or qpath.stem
    corpus = _build_corpus(records, fmt, cpath, label)
    chosen = records[parse_slice(questions)]
    return Dataset(
        name=label,
        questions=_FORMATS[fmt](chosen, corpus),
        corpus=corpus,
        source=str(qpath),
    )


def load_dataset(
    name_or_path: str | Path,
    *,
    data_dir: str | Path | None = None,
    questions: str | slice | int | None = "0:200",
    corpus: str | Path | None = None,
) -> Dataset:
    """Load a named dataset (see `DATASETS`) or a question file by path.

    `questions` picks records by index: "0:200" (default), "50:", ":20", or None for all.
    """
    key = str(name_or_path)
    label: str | None = None
    if "=" in key and not Path(key).expanduser().exists():
        label, _, key = (part.strip() for part in key.partition("="))
        if not label or not key:
            raise DatasetError(f"bad dataset {name_or_path!r}: use NAME, PATH or NAME=PATH")
    elif key in HELDOUT_FILES:
        env, _ = HELDOUT_FILES[key]
        if not os.environ.get(env):
            raise DatasetError(
                f"{key} questions are kept outside this repository: pass "
                f"--dataset {key}=PATH (or set {env})"
            )
        label, key = key, os.environ[env]
    if label is not None:
        if label in DATASETS or label in DEVSETS:
            raise DatasetError(f"{label!r} names a bundled dataset; give the file another name")
        return _load_named_file(label, key, corpus, data_dir, questions)
    if key in DATASETS:
        spec = DATASETS[key]
        root = Path(data_dir) if data_dir is not None else default_data_dir()
        if not root.is_dir():
            raise DatasetError(
                f"data directory not found: {root} (set GRAPHSEEK_DATA_DIR or pass data_dir)"
            )
        cpath = root / spec.corpus if spec.corpus else None
        return load_questions_file(
            root / spec.questions,
            cpath,
            name=key,
            fmt=spec.format,
            questions=questions,
            guess_corpus=False,
        )
    if key in DEVSETS:
        path = Path(__file__).resolve().parents[2] / DEVSETS[key]
        if not path.is_file():
            raise DatasetError(
                f"{key} ships with the source repository and was not found at {path}: pass "
                "its questions.json path instead"
            )
        return load_questions_file(path, corpus, name=key, questions=questions)
    path = Path(key).expanduser()
    if path.exists():
        return load_questions_file(path, corpus, questions=questions)
    from graphseek.state.validation import unknown_name

    names = sorted([*DATASETS, *DEVSETS, *HELDOUT_FILES])
    raise DatasetError(f"{unknown_name('dataset', key, names)} Or give a question file's path.")


def _load_named_file(
    label: str,
    path_text: str,
    corpus: str | Path | None,
    data_dir: str | Path | None,
    questions: str | slice | int | None,
) -> Dataset:
    """`NAME=PATH`: the question file under that name; a reserved held-out name falls back to
    its data set's corpus when no corpus is given or sits beside the file."""
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise DatasetError(f"question file for {label!r} not found: {path}")
    if corpus is None and label in HELDOUT_FILES and _guess_corpus(path) is None:
        root = Path(data_dir) if data_dir is not None else default_data_dir()
        corpus = root / HELDOUT_FILES[label][1]
        if not corpus.exists():
            raise DatasetError(
                f"corpus for {label!r} not found: {corpus} (set GRAPHSEEK_DATA_DIR or pass "
                "--data-dir)"
            )
    return load_questions_file(path, corpus, name=label, questions=questions)


def require_corpus(dataset: Dataset) -> None:
    """Raise a clear error when a dataset has no corpus to retrieve from."""
    if not dataset.corpus:
        raise CorpusError(f"dataset {dataset.name!r} has no retrieval corpus ({dataset.source})")
