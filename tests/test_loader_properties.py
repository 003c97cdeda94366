"""Property-based tests of the corpus loaders: random bytes and random JSON shapes.

Whatever is on disk, `read_corpus` either returns passages that are text (non-empty, not mostly
control characters, unique ids) or raises `CorpusError`, never another exception; with
`on_bad_file="skip"` every bad record is reported rather than raised.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphseek.errors import CorpusError
from graphseek.knowledge.loaders import LoadedCorpus, read_corpus, text_problem

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["title", "text", "id", "paragraph_text", "x"]), children)
    ),
    max_leaves=12,
)
records = st.fixed_dictionaries(
    {},
    optional={
        "title": json_values,
        "text": json_values | st.text(max_size=200),
        "id": json_values,
        "contents": json_values,
    },
)


def _load(name: str, data: bytes, **kwargs: Any) -> LoadedCorpus | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            loaded = read_corpus(path, chunk_size=300, overlap=50, **kwargs)
        except CorpusError as exc:
            assert str(exc)  # a message naming what is wrong
            return None
    _check(loaded)
    return loaded


def _check(loaded: LoadedCorpus) -> None:
    assert loaded.passages
    ids = [p.id for p in loaded.passages]
    assert len(ids) == len(set(ids))
    for p in loaded.passages:
        assert p.text.strip()
        assert text_problem(p.text) is None


@SETTINGS
@given(data=st.binary(max_size=600), suffix=st.sampled_from([".txt", ".md", ".json", ".jsonl"]))
def test_random_bytes_load_or_raise_corpus_error(data: bytes, suffix: str) -> None:
    _load("corpus" + suffix, data)
    _load("corpus" + suffix, data, on_bad_file="skip")


@SETTINGS
@given(value=json_values)
def test_random_json_shapes_load_or_raise_corpus_error(value: Any) -> None:
    _load("corpus.json", json.dumps(value).encode())


@SETTINGS
@given(items=st.lists(records | json_values, max_size=6))
def test_random_record_lists_skip_exactly_the_bad_records(items: list[Any]) -> None:
    raw = json.dumps(items).encode()
    strict = _load("corpus.json", raw)
    lenient = _load("corpus.json", raw, on_bad_file="skip")
    lines = "\n".join(json.dumps(item) for item in items).encode()
    by_line = _load("corpus.jsonl", lines, on_bad_file="skip")
    if strict is not None:  # nothing was bad: skipping changes nothing
        assert lenient is not None and lenient.skipped == []
        # each load writes its own temporary file: compare what was read, not where from
        assert [(p.id, p.title, p.text) for p in lenient.passages] == [
            (p.id, p.title, p.text) for p in strict.passages
        ]
    if lenient is not None and by_line is not None:
        assert [p.text for p in by_line.passages] == [p.text for p in lenient.passages]
