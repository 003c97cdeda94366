"""Dataset loaders: every format, gold resolution by the data README's rules, slices, names.

Fixtures are tiny files written in tmp_path in each format; nothing reads ../shared/data.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from graphseek.evaluation.datasets import (
    DatasetError,
    default_data_dir,
    load_dataset,
    load_questions_file,
    parse_slice,
)
from graphseek.knowledge.passages import passage_id


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- MuSiQue --------------------------------------------------------------------------------

ALPHA_1 = "Alpha is a river in the north."
ALPHA_2 = "Alpha is a 1999 film directed by Bo."
BETA = "Beta was born in Alpha."


def _musique_records() -> list[dict[str, Any]]:
    def para(idx: int, title: str, text: str, sup: bool) -> dict[str, Any]:
        return {"idx": idx, "title": title, "paragraph_text": text, "is_supporting": sup}

    return [
        {
            "id": "2hop__1_2",
            "question": "Where does the Alpha river flow?",
            "answer": "north",
            "answer_aliases": ["the north", "North"],
            "answerable": True,
            "question_decomposition": [{"id": 1}, {"id": 2}],
            "paragraphs": [para(0, "Alpha", ALPHA_1, True), para(1, "Alpha", ALPHA_2, False)],
        },
        {
            "id": "3hop1__3_4_5",
            "question": "Who directed the film Alpha, where Beta was born?",
            "answer": "Bo",
            "answer_aliases": [],
            "answerable": True,
            "paragraphs": [
                para(0, "Alpha", ALPHA_2, True),
                para(1, "Beta", BETA, True),
                para(2, "Alpha", ALPHA_1, False),
            ],
        },
        {
            "id": "2hop__6_7",
            "question": "Missing gold?",
            "answer": "x",
            "paragraphs": [para(0, "Gamma", "Gamma is not in the corpus file.", True)],
        },
    ]


def test_musique_gold_on_title_and_text_with_corpus_file(tmp_path: Path) -> None:
    q = _write(tmp_path / "musique_train.json", _musique_records())
    corpus = [{"title": "Alpha", "text": ALPHA_1}, {"title": "Alpha", "text": ALPHA_2}]
    corpus.append({"title": "Beta", "text": BETA})
    c = _write(tmp_path / "musique_train_corpus.json", corpus)
    ds = load_questions_file(q, c)
    assert [p.id for p in ds.corpus] == [passage_id(x["title"], x["text"]) for x in corpus]
    q1, q2, q3 = ds.questions
    # the two "Alpha" passages are different gold passages
    assert q1.gold_passage_ids == [passage_id("Alpha", ALPHA_1)]
    assert q2.gold_passage_ids == [passage_id("Alpha", ALPHA_2), passage_id("Beta", BETA)]
    assert q2.gold_titles == ["Alpha", "Beta"]
    assert not q1.flagged and not q2.flagged
    assert q1.answers == ["north", "the north", "North"]
    assert (q1.type, q1.hops) == ("2hop", 2)
    assert (q2.type, q2.hops) == ("3hop1", 3)
    # a supporting paragraph that is not in the corpus: flagged, not dropped
    assert q3.flagged and "Gamma" in q3.flag_reason and q3.gold_passage_ids == []


def test_musique_corpus_built_by_dedup_in_question_order(tmp_path: Path) -> None:
    q = _write(tmp_path / "musique_qa_100.json", _musique_records())
    ds = load_questions_file(q)  # no *_corpus.json beside it
    assert [(p.title, p.text) for p in ds.corpus] == [
        ("Alpha", ALPHA_1),
        ("Alpha", ALPHA_2),
        ("Beta", BETA),
        ("Gamma", "Gamma is not in the corpus file."),
    ]
    assert ds.n_flagged == 0  # every supporting paragraph is in the derived corpus
    assert ds.questions[1].gold_passage_ids == [
        passage_id("Alpha", ALPHA_2),
        passage_id("Beta", BETA),
    ]


def test_sample_format_answer_list_and_text_field(tmp_path: Path) -> None:
    sample = [
        {
            "id": "sample/question_1.json",
            "question": "Which professor works on X?",
            "answer": ["Thomas C. Sudhof"],
            "answerable": True,
            "paragraphs": [
                {"title": "T", "text": "Intro\nT is a professor.", "is_supporting": True, "idx": 0}
            ],
        }
    ]
    q = _write(tmp_path / "sample.json", sample)
    _write(
        tmp_path / "sample_corpus.json",
        [
            {"title": "T", "text": "Intro\nT is a professor.", "idx": 0},
            {"title": "U", "text": "U."},
        ],
    )
    ds = load_questions_file(q)  # finds sample_corpus.json beside it
    assert len(ds.corpus) == 2
    (question,) = ds.questions
    assert question.answers == ["Thomas C. Sudhof"]
    assert question.gold_passage_ids == [passage_id("T", "Intro\nT is a professor.")]


# --- 2WikiMultiHopQA ------------------------------------------------------------------------

WIKI_CORPUS = [
    {"title": "Lothair II", "text": "Lothair II was a king."},
    {"title": "Ermengarde of Tours", "text": "Ermengarde died on 20 March 851."},
    {"title": "Blue Moon (song)", "text": "Blue Moon is a song."},
    {"title": "Seven Women (1944 film)", "text": "A 1944 film."},
    {"title": "Seven Women (1953 film)", "text": "A 1953 film."},
    {"title": "The Matrix", "text": "A 1999 film."},
]


def _wiki_q(qid: str, subjects: list[str], qtype: str = "compositional") -> dict[str, Any]:
    evidence = [[s, "rel", "obj"] for s in subjects]
    return {
        "id": qid,
        "question_type": qtype,
        "question": f"question {qid}?",
        "answer": "20 March 851",
        "evidence": evidence,
        "evidence_relations": evidence,
        "source": "2wikimultihopqa",
    }


def test_twowiki_gold_from_evidence_subjects(tmp_path: Path) -> None:
    questions = [
        _wiki_q("exact", ["Lothair II", "Ermengarde of Tours", "Lothair II"]),
        _wiki_q("paren", ["Blue Moon"]),  # unique match after dropping "(song)"
        _wiki_q("ambiguous", ["Lothair II", "Seven Women"]),  # two "(... film)" pages
        _wiki_q("case", ["the matrix"], "comparison"),
        _wiki_q("none", []),
    ]
    q = _write(tmp_path / "2wiki" / "questions.json", questions)
    c = _write(tmp_path / "2wiki" / "2wikimultihopqa_corpus.json", WIKI_CORPUS)
    ds = load_questions_file(q, c, name="2wiki")
    by_id = {x.id: x for x in ds.questions}
    pid = {x["title"]: passage_id(x["title"], x["text"]) for x in WIKI_CORPUS}

    exact = by_id["exact"]
    assert exact.gold_passage_ids == [pid["Lothair II"], pid["Ermengarde of Tours"]]
    assert not exact.flagged
    assert exact.answers == ["20 March 851"] and exact.type == "compositional"

    paren = by_id["paren"]
    assert paren.gold_passage_ids == [pid["Blue Moon (song)"]]
    assert paren.gold_titles == ["Blue Moon (song)"] and not paren.flagged

    ambiguous = by_id["ambiguous"]
    assert ambiguous.flagged and "Seven Women" in ambiguous.flag_reason
    assert ambiguous.gold_passage_ids == [pid["Lothair II"]]
    assert ambiguous.gold_titles == ["Lothair II", "Seven Women"]

    assert by_id["case"].gold_passage_ids == [pid["The Matrix"]]
    assert by_id["none"].flagged and "no gold" in by_id["none"].flag_reason
    assert ds.n_flagged == 2


# --- HotpotQA -------------------------------------------------------------------------------


def test_hotpotqa_dict_corpus_and_supporting_titles(tmp_path: Path) -> None:
    corpus = {
        "Alû": ["Alû is a demon.", " It is Akkadian."],
        "Lilu (mythology)": ["Lilu is a spirit."],
        "Demon Dice": ["A game."],
    }
    records = [
        {
            "_id": "h1",
            "question": "If Gallu is a demon Lilu is what?",
            "answer": "a spirit",
            "supporting_facts": [["Alû", 1], ["Lilu (mythology)", 0], ["Alû", 0]],
            "context": [[t, s] for t, s in corpus.items()],
            "type": "bridge",
            "level": "easy",
        },
        {
            "_id": "h2",
            "question": "Missing?",
            "answer": "no",
            "supporting_facts": [["Nowhere", 0]],
            "context": [["Demon Dice", ["A game."]]],
            "type": "comparison",
            "level": "hard",
        },
    ]
    q = _write(tmp_path / "hotpotqa_train.json", records)
    c = _write(tmp_path / "hotpotqa_train_corpus.json", corpus)
    ds = load_questions_file(q, c)
    assert [p.text for p in ds.corpus][0] == "Alû is a demon. It is Akkadian."
    h1, h2 = ds.questions
    assert h1.gold_passage_ids == [
        passage_id("Alû", "Alû is a demon. It is Akkadian."),
        passage_id("Lilu (mythology)", "Lilu is a spirit."),
    ]
    assert h1.gold_titles == ["Alû", "Lilu (mythology)"]
    assert (h1.type, h1.hops, h1.metadata["level"]) == ("bridge", 2, "easy")
    assert h2.flagged and "Nowhere" in h2.flag_reason


def test_gzip_question_file(tmp_path: Path) -> None:
    path = tmp_path / "musique_qa_100.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(_musique_records(), f)
    assert len(load_questions_file(path).questions) == 3


# --- slices, names, errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("0:200", slice(0, 200)),
        ("50:", slice(50, None)),
        (":20", slice(None, 20)),
        ("20", slice(0, 20)),
        ("all", slice(None)),
        (None, slice(None)),
        (5, slice(0, 5)),
    ],
)
def test_parse_slice(spec: Any, expected: slice) -> None:
    assert parse_slice(spec) == expected


def test_bad_slice_is_a_clear_error() -> None:
    with pytest.raises(DatasetError, match="START:STOP"):
        parse_slice("first ten")


def _data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    questions = [_wiki_q(f"q{i}", ["Lothair II"]) for i in range(6)]
    _write(root / "2wikimultihopqa" / "questions.json", questions)
    _write(root / "2wikimultihopqa" / "2wikimultihopqa_corpus.json", WIKI_CORPUS)
    _write(root / "musique" / "musique_qa_100.json", _musique_records())
    return root


def test_named_datasets_and_slices_keep_the_whole_corpus(tmp_path: Path) -> None:
    root = _data_dir(tmp_path)
    ds = load_dataset("2wiki", data_dir=root, questions="2:5")
    assert ds.name == "2wiki"
    assert [q.id for q in ds.questions] == ["q2", "q3", "q4"]
    assert len(ds.corpus) == len(WIKI_CORPUS)
    assert [q.id for q in load_dataset("2wiki", data_dir=root, questions="4:").questions] == [
        "q4",
        "q5",
    ]
    assert len(load_dataset("2wiki", data_dir=root, questions=":2").questions) == 2
    dev = load_dataset("musique-dev100", data_dir=root, questions=None)
    assert len(dev.corpus) == 4 and len(dev.questions) == 3
    # an explicit path works too, and the hash is stable across loads
    again = load_dataset(root / "2wikimultihopqa" / "questions.json", questions="0:1")
    assert again.corpus_hash() == ds.corpus_hash()


def test_data_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _data_dir(tmp_path)
    monkeypatch.setenv("GRAPHSEEK_DATA_DIR", str(root))
    assert default_data_dir() == root
    assert len(load_dataset("2wiki", questions="0:3").questions) == 3


def test_unknown_names_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="Unknown dataset 'squad'; known datasets: "):
        load_dataset("squad", data_dir=tmp_path)
    with pytest.raises(DatasetError, match="Unknown dataset '2wikki'; did you mean '2wiki'"):
        load_dataset("2wikki", data_dir=tmp_path)
    with pytest.raises(DatasetError, match="not found"):
        load_dataset("hotpotqa-train", data_dir=tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DatasetError, match="cannot read"):
        load_questions_file(bad)
    _write(tmp_path / "odd.json", [{"foo": 1}])
    with pytest.raises(DatasetError, match="question"):
        load_questions_file(tmp_path / "odd.json")


# --- docqa (HotpotQA-style records, a {title, text} corpus, unanswerable questions) ----------

DOC_CORPUS = [
    {"title": "zlib: part 3", "text": "The deflate format was defined by Phil Katz."},
    {"title": "libpng: README", "text": "libpng relies on the zlib compression library."},
    {"title": "tmux: intro", "text": "tmux is a terminal multiplexer."},
]


def _docqa_records() -> list[dict[str, Any]]:
    return [
        {
            "_id": "dq-1",
            "question": "Who defined the deflate format used by the library libpng relies on?",
            "answer": "Phil Katz",
            "answer_aliases": ["P. Katz"],
            "type": "two_hop",
            "supporting_facts": [["libpng: README", 0], ["zlib: part 3", 0]],
            "bridge": "zlib",
        },
        {
            "_id": "dq-2",
            "question": "In what year was tmux first released?",
            "answer": "",
            "answer_aliases": [],
            "type": "unanswerable",
            "supporting_facts": [],
            "bridge": None,
        },
    ]


def _docqa_dir(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    _write(root / "docqa" / "docqa_dev.json", _docqa_records())
    _write(root / "docqa" / "docqa_corpus.json", DOC_CORPUS)
    return root


def test_docqa_named_dataset_with_unanswerable_questions(tmp_path: Path) -> None:
    ds = load_dataset("docqa", data_dir=_docqa_dir(tmp_path))
    assert ds.name == "docqa" and len(ds.corpus) == 3
    two_hop, unanswerable = ds.questions
    assert two_hop.answers == ["Phil Katz", "P. Katz"] and two_hop.answerable
    assert two_hop.gold_passage_ids == [
        passage_id("libpng: README", DOC_CORPUS[1]["text"]),
        passage_id("zlib: part 3", DOC_CORPUS[0]["text"]),
    ]
    assert not two_hop.flagged and two_hop.type == "two_hop"
    assert two_hop.metadata["bridge"] == "zlib"
    # empty gold answer: no answers at all, unanswerable, flagged out of retrieval metrics
    assert unanswerable.answers == [] and not unanswerable.answerable
    assert unanswerable.flagged and unanswerable.flag_reason.startswith("unanswerable")


def test_docqa_heldout_is_reserved_for_a_given_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _docqa_dir(tmp_path)
    monkeypatch.delenv("GRAPHSEEK_DOCQA_HELDOUT", raising=False)
    with pytest.raises(DatasetError, match="docqa-heldout=PATH"):
        load_dataset("docqa-heldout", data_dir=root)
    # the held-out file elsewhere, no corpus beside it: the docqa corpus is used
    heldout = _write(tmp_path / "private" / "heldout.json", _docqa_records()[:1])
    ds = load_dataset(f"docqa-heldout={heldout}", data_dir=root, questions=None)
    assert ds.name == "docqa-heldout" and len(ds.questions) == 1 and len(ds.corpus) == 3
    assert not ds.questions[0].flagged
    monkeypatch.setenv("GRAPHSEEK_DOCQA_HELDOUT", str(heldout))
    assert load_dataset("docqa-heldout", data_dir=root).corpus_hash() == ds.corpus_hash()
    # NAME=PATH for any file; a missing file or a bundled name is a clear error
    other = load_dataset(f"mine={root / 'docqa' / 'docqa_dev.json'}", questions=None)
    assert other.name == "mine" and len(other.questions) == 2
    with pytest.raises(DatasetError, match="not found"):
        load_dataset(f"docqa-heldout={tmp_path / 'nope.json'}", data_dir=root)
    with pytest.raises(DatasetError, match="bundled"):
        load_dataset(f"2wiki={heldout}", data_dir=root)


# --- document folders (format "docs") --------------------------------------------------------

WORDS_DOC = (
    "# wordfreq\n\nwordfreq looks up word frequencies.\n\n## Chinese\n\n"
    "For Chinese, wordfreq uses the external Python library `jieba` to split words.\n"
)
TOOL_DOC = "Tool README\n\nThe default port is 8123.\n"


def _docs_records() -> list[dict[str, Any]]:
    return [
        {
            "_id": "pd-1",
            "type": "single",
            "question": "Which library does wordfreq use to split Chinese?",
            "answer": "jieba",
            "answer_aliases": [],
            "bridge": None,
            # the quote without the code span's backticks still finds the passage
            "supporting": [
                {"doc": "wordfreq.md", "quote": "uses the external Python library jieba"}
            ],
        },
        {
            "_id": "pd-2",
            "type": "two_hop",
            "question": "What port does the tool wordfreq mentions use?",
            "answer": "8123",
            "answer_aliases": [],
            "bridge": "Tool",
            "supporting": [
                {"doc": "wordfreq.md", "quote": "wordfreq looks up word frequencies."},
                {"doc": "tool.txt", "quote": "The default port is 8123."},
            ],
        },
        {
            "_id": "pd-3",
            "type": "unanswerable",
            "question": "What licence does wordfreq have?",
            "answer": "",
            "answer_aliases": [],
            "bridge": None,
            "supporting": [],
        },
        {
            "_id": "pd-4",
            "type": "single",
            "question": "What is in the missing file?",
            "answer": "nothing",
            "supporting": [{"doc": "missing.md", "quote": "nothing"}],
        },
    ]


def _docs_dir(tmp_path: Path) -> Path:
    (tmp_path / "set" / "docs").mkdir(parents=True)
    (tmp_path / "set" / "docs" / "wordfreq.md").write_text(WORDS_DOC, encoding="utf-8")
    (tmp_path / "set" / "docs" / "tool.txt").write_text(TOOL_DOC, encoding="utf-8")
    return _write(tmp_path / "set" / "questions.json", _docs_records())


def _holding(ds: Any, text: str) -> list[str]:
    return [p.id for p in ds.corpus if text in p.text]


def test_docs_format_reads_the_folder_beside_the_questions(tmp_path: Path) -> None:
    from graphseek.knowledge.loaders import load_corpus

    ds = load_questions_file(_docs_dir(tmp_path), questions=None)
    assert [p.id for p in ds.corpus] == [p.id for p in load_corpus(tmp_path / "set" / "docs")]
    single, two_hop, unanswerable, missing = ds.questions
    assert single.answers == ["jieba"] and single.type == "single" and not single.flagged
    assert single.gold_passage_ids == _holding(ds, "library `jieba`")
    assert two_hop.gold_passage_ids == [
        *_holding(ds, "looks up word frequencies"),
        *_holding(ds, "port is 8123"),
    ]
    assert two_hop.hops == 2 and two_hop.metadata["bridge"] == "Tool"
    assert unanswerable.answers == [] and not unanswerable.answerable and unanswerable.flagged
    assert missing.flagged and "missing.md" in missing.flag_reason


def test_docs_format_gold_is_the_chunk_holding_the_quote(tmp_path: Path) -> None:
    path = _docs_dir(tmp_path)
    filler = "\n\n".join(
        f"Paragraph {i} talks about nothing in particular at all." for i in range(60)
    )
    (tmp_path / "set" / "docs" / "tool.txt").write_text(f"{filler}\n\n{TOOL_DOC}", encoding="utf-8")
    ds = load_questions_file(path, questions="1:2")
    tool = [p for p in ds.corpus if p.source.endswith("tool.txt")]
    assert len(tool) > 2  # chunked by the loader
    (question,) = ds.questions
    assert question.gold_passage_ids[1] == _holding(ds, "port is 8123")[0] != tool[0].id


def test_docs_format_matches_titles_when_the_corpus_is_a_records_file(tmp_path: Path) -> None:
    corpus = _write(
        tmp_path / "corpus.json",
        [
            {"title": "Tool: Install", "text": "Run pip install tool."},
            {"title": "Tool: Usage", "text": "The default port is 8123."},
            {"title": "Toolbox: Usage", "text": "The default port is 8123."},
        ],
    )
    record = {**_docs_records()[1], "supporting": [{"doc": "Tool", "quote": "port is 8123"}]}
    questions = _write(tmp_path / "q.json", [record])
    (question,) = load_questions_file(questions, corpus).questions
    assert question.gold_passage_ids == [passage_id("Tool: Usage", "The default port is 8123.")]


def test_docs_format_errors_name_the_problem(tmp_path: Path) -> None:
    lone = _write(tmp_path / "lone" / "questions.json", _docs_records())
    with pytest.raises(DatasetError, match="no docs/ folder"):
        load_questions_file(lone)
    bad = _write(tmp_path / "bad" / "questions.json", [{**_docs_records()[0], "supporting": "x"}])
    (tmp_path / "bad" / "docs").mkdir()
    (tmp_path / "bad" / "docs" / "a.md").write_text("text", encoding="utf-8")
    with pytest.raises(DatasetError, match="'supporting' must be a list"):
        load_questions_file(bad)
    with pytest.raises(DatasetError, match="bundled"):
        load_dataset(f"pkgdocs={lone}")


@pytest.mark.parametrize("name", ["manpages", "configref", "changelogs"])
def test_each_genre_dev_set_is_named_and_grounded_in_its_documents(name: str) -> None:
    """The documentation genres of `benchmarks/devsets/`: at least 25 questions of the three
    types; every quote in its document, and every answerable question's answer (or an alias)
    in one of its supporting documents, compared on letters and digits."""
    import re

    from graphseek.evaluation.datasets import DEVSETS

    assert name in DEVSETS
    ds = load_dataset(name, questions=None)
    assert ds.name == name and len(ds.questions) >= 25
    types = {q.type for q in ds.questions}
    assert types == {"single", "two_hop", "unanswerable"}
    docs = Path(ds.source).parent / "docs"

    def squash(text: str) -> str:
        return re.sub(r"[^0-9a-z]", "", text.lower())

    for q in ds.questions:
        supporting = q.metadata.get("supporting", [])
        texts = [squash((docs / s["doc"]).read_text(encoding="utf-8")) for s in supporting]
        for s, text in zip(supporting, texts, strict=True):
            assert squash(s["quote"]) in text, q.id
        assert q.answerable == (q.type != "unanswerable") == bool(supporting), q.id
        if q.answerable:
            assert any(squash(a) in t for a in q.answers for t in texts), q.id


def test_pkgdocs_dev_set_is_named_and_its_quotes_are_in_its_documents() -> None:
    import re

    ds = load_dataset("pkgdocs", questions=None)
    assert ds.name == "pkgdocs" and len(ds.questions) == 39
    types = [q.type for q in ds.questions]
    assert (types.count("single"), types.count("two_hop"), types.count("unanswerable")) == (
        21,
        12,
        6,
    )
    assert all(q.answerable == (q.type != "unanswerable") for q in ds.questions)
    docs = Path(ds.source).parent / "docs"

    def squash(text: str) -> str:
        return re.sub(r"[^0-9a-z]", "", text.lower())

    for q in ds.questions:
        for s in q.metadata.get("supporting", []):
            assert squash(s["quote"]) in squash((docs / s["doc"]).read_text(encoding="utf-8")), q.id
