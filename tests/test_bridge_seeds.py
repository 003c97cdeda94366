"""Semantic bridging as an option of `higra` and `progressive` (issue 57 item 2):
`Context.bridge_seeds` adds the entities the bridge retriever's rounds reach to their seeds.

On the tiny corpus, "Where did Ada Lovelace's father die?" names Ada Lovelace only; the father,
Lord Byron, is named in a sentence of Annabella Milbanke's page ("She married Lord Byron ... the
mother of Ada Lovelace"), and the answer is on his page and Missolonghi's. Off, the option
changes nothing; on, Lord Byron's passage (the second hop) moves up in both retrievers."""

from __future__ import annotations

from typing import Any

import pytest

from graphseek.knowledge.passages import Passage

QUESTION = "Where did Ada Lovelace's father die?"
OTHERS = [
    "In which country was the woman who won the Nobel Prize twice born?",
    "Who designed the Analytical Engine?",
    "programmable computer",
]


@pytest.fixture(scope="module")
def graph_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Any:
    from graphseek.knowledge.index import Index

    path = tmp_path_factory.mktemp("bridge-seeds") / "index"
    return Index.build(tiny_passages, path, show_progress=False, graph=True)


def ids(hits: list[Any]) -> list[str]:
    return [h.passage.id for h in hits]


def test_the_option_is_a_described_context_field_off_by_default() -> None:
    import dataclasses

    from graphseek.errors import ContextError
    from graphseek.state.context import Context

    field = {f.name: f for f in dataclasses.fields(Context)}["bridge_seeds"]
    assert field.default is False and "higra and progressive" in field.metadata["description"]
    assert Context().bridge_seeds is False and Context(bridge_seeds=True).bridge_seeds is True
    with pytest.raises(ContextError, match="bridge_seeds must be true or false"):
        Context(bridge_seeds="yes")  # type: ignore[arg-type]


def test_bridging_reaches_the_father_only(graph_index: Any) -> None:
    from graphseek.tools.graph_retrievers import bridge_seeds_for

    with graph_index.open_graph_store() as store:
        names = {e.id: e.name for e in store.entities()}
    reached = bridge_seeds_for(graph_index, QUESTION)
    assert [names[e] for e, _ in reached] == ["Lord Byron"]
    assert 0.35 <= reached[0][1] <= 1.0  # δ <= activation (seed score 1 x similarity)
    # a question that names no entity of the graph reaches nothing
    assert bridge_seeds_for(graph_index, "what was never completed") == []


@pytest.mark.parametrize("name", ["higra", "progressive"])
def test_off_is_a_no_op(graph_index: Any, name: str) -> None:
    """Off (explicitly, or by default outside a run) gives what the retriever object gives with
    no extra seed: the figures measured before the option existed do not move."""
    from graphseek.tools import graph_retrievers as gr

    for query in [QUESTION, *OTHERS]:
        for k in (2, 5):
            default = _without_option(name, graph_index, query, k)
            assert ids(getattr(gr, name)(graph_index, query, k, bridge_seeds=False)) == ids(default)
            assert ids(getattr(gr, name)(graph_index, query, k)) == ids(default)


def test_on_higra_puts_the_second_hop_in_the_top_two(graph_index: Any) -> None:
    from graphseek.tools.graph_retrievers import higra, higra_retriever

    assert ids(higra(graph_index, QUESTION, 2)) == ["ada", "milbanke"]
    assert ids(higra(graph_index, QUESTION, 2, bridge_seeds=True)) == ["ada", "byron"]
    # the bridged entity is a seed of its own kind, restarting PPR with its activation
    result = higra_retriever(graph_index).retrieve(
        QUESTION, extra_seeds=[(e, 0.5) for e in _byron(graph_index)]
    )
    assert [(s.name, s.source) for s in result.seeds] == [
        ("Ada Lovelace", "mention"),
        ("Lord Byron", "bridge"),
    ]


def test_on_progressive_reaches_the_answer_passage(graph_index: Any) -> None:
    from graphseek.tools.graph_retrievers import progressive

    off = ids(progressive(graph_index, QUESTION, 5))
    on = ids(progressive(graph_index, QUESTION, 5, bridge_seeds=True))
    assert "missolonghi" not in off
    assert on[:2] == ["milbanke", "byron"] and "missolonghi" in on
    assert "byron" not in ids(progressive(graph_index, QUESTION, 3))
    assert "byron" in ids(progressive(graph_index, QUESTION, 3, bridge_seeds=True))


def test_a_run_reads_the_option_from_its_context(graph_index: Any) -> None:
    """`ask(..., bridge_seeds=True)`: the workflow's retrieval (the registry's `higra` and
    `progressive`, reading `Context.bridge_seeds`) finds Lord Byron's passage; off, the
    evidence is the default run's."""
    from graphseek.api import ask

    for retriever in ("higra", "progressive"):
        runs = {
            on: [e.passage_id for e in ask(
                graph_index, QUESTION, topology="naive", retriever=retriever, top_k=2,
                bridge_seeds=on,
            ).evidence]
            for on in (None, False, True)
        }  # fmt: skip
        assert runs[None] == runs[False] and "byron" not in runs[False], retriever
        assert "byron" in runs[True], retriever


def test_without_sentence_nodes_the_option_adds_nothing(
    graph_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.tools import graph_retrievers as gr
    from graphseek.tools.bridge import NoSentenceLayerError

    def missing(index: Any) -> Any:
        raise NoSentenceLayerError("no sentence nodes")

    monkeypatch.setattr(gr, "bridge_retriever", missing)
    assert gr.bridge_seeds_for(graph_index, QUESTION) == []
    for name in ("higra", "progressive"):
        fn = getattr(gr, name)
        assert ids(fn(graph_index, QUESTION, 3, bridge_seeds=True)) == ids(
            fn(graph_index, QUESTION, 3)
        )


def _without_option(name: str, index: Any, query: str, k: int) -> list[Any]:
    """The retriever objects' hits with no extra seed (the code path before the option)."""
    from graphseek.tools.graph_retrievers import higra_retriever, progressive_retriever

    if name == "progressive":
        return progressive_retriever(index).retrieve(query, k).hits
    retriever = higra_retriever(index)
    if k > retriever.config.entity_passage_top_k:
        retriever = retriever.with_config(entity_passage_top_k=k)
    return retriever.hits(retriever.retrieve(query), k)


def _byron(index: Any) -> list[str]:
    with index.open_graph_store() as store:
        return [e.id for e in store.entities() if e.name == "Lord Byron"]


# -- the option in the retrieval evaluation and the benchmark --------------------------------------


def _dataset(passages: list[Passage]) -> Any:
    from graphseek.evaluation.datasets import Dataset, EvalQuestion

    question = EvalQuestion(
        id="byron", question=QUESTION, answers=["Missolonghi"], gold_passage_ids=["ada", "byron"]
    )
    return Dataset(name="tiny", questions=[question], corpus=passages)


def test_eval_retrieval_only_takes_the_option_from_context(
    graph_index: Any, tiny_passages: list[Passage], tmp_path: Any
) -> None:
    """`graphseek eval --retrieval-only --context bridge_seeds=true`: outside a run the
    retrievers cannot read the context, so the evaluation passes the option to those that take
    it, as rows `higra+bridge` and `progressive+bridge`; the others, and the rows with it off,
    are the plain retrievers'. Settings no retriever takes are left alone, as before."""
    from graphseek.errors import ContextError
    from graphseek.evaluation.cli import _parse_context, run_eval
    from graphseek.tools.graph_retrievers import higra, progressive

    def report(context: dict[str, Any] | None, out: str) -> Any:
        return run_eval(
            [_dataset(tiny_passages)],
            retrieval_only=True,
            retrievers=["bm25", "higra", "progressive"],
            context=context,
            out=tmp_path / out,
            progress=False,
            index_factory=lambda ds: graph_index,
        )["retrieval"][0]

    on = _parse_context(["bridge_seeds=true", "top_k=3"])
    assert on == {"bridge_seeds": True, "top_k": 3}
    reports = {
        "default": report(None, "default"),
        "off": report({"bridge_seeds": False}, "off"),
        "on": report(on, "on"),
    }
    names = {key: [s.retriever for s in r.scores] for key, r in reports.items()}
    assert names["default"] == names["off"] == ["bm25", "higra", "progressive"]
    assert names["on"] == ["bm25", "higra+bridge", "progressive+bridge"]
    ranked = {
        key: {row["retriever"]: row["ranked"] for row in r.per_question}
        for key, r in reports.items()
    }
    assert ranked["default"] == ranked["off"]
    assert ranked["on"]["bm25"] == ranked["off"]["bm25"]
    for name, fn in (("higra", higra), ("progressive", progressive)):
        assert ranked["off"][name] == ids(fn(graph_index, QUESTION, 10, bridge_seeds=False))
        assert ranked["on"][f"{name}+bridge"] == ids(
            fn(graph_index, QUESTION, 10, bridge_seeds=True)
        )
    recall = {key: {s.retriever: s.recall[2] for s in r.scores} for key, r in reports.items()}
    assert recall["off"]["higra"] == 0.5 and recall["on"]["higra+bridge"] == 1.0
    assert "| higra+bridge |" in (tmp_path / "on" / "table.md").read_text(encoding="utf-8")
    with pytest.raises(ContextError, match="bridge_seeds must be true or false"):
        report({"bridge_seeds": "yes"}, "bad")


def test_the_benchmark_rows_with_bridge_seeds(graph_index: Any) -> None:
    """`benchmarks/graph_retrieval.py --bridge-seeds`: `higra+bridge` and `progressive+bridge`
    follow their retrievers and rank as the registry's functions with `bridge_seeds=True`
    (with no `--set`); the plain rows as with it off."""
    import importlib.util
    import sys
    from pathlib import Path

    from graphseek.tools import graph_retrievers as gr

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "graph_retrieval.py"
    spec = importlib.util.spec_from_file_location("bench_graph_retrieval", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_graph_retrieval"] = bench
    spec.loader.exec_module(bench)

    assert bench.with_seeded(["bm25", "higra", "progressive", "bridge"]) == [
        "bm25", "higra", "higra+bridge", "progressive", "progressive+bridge", "bridge",
    ]  # fmt: skip
    assert bench.with_seeded(["hybrid", "higra+bridge", "higra"]) == [
        "hybrid", "higra+bridge", "higra",
    ]  # fmt: skip
    table = bench.method_table(graph_index, bench._overrides([]), 5)
    for name in ("higra", "progressive"):
        plain, seeded = table[name](), table[f"{name}+bridge"]()
        fn = getattr(gr, name)
        for query in [QUESTION, *OTHERS]:
            assert ids(plain(query)) == ids(fn(graph_index, query, 5, bridge_seeds=False)), query
            assert ids(seeded(query)) == ids(fn(graph_index, query, 5, bridge_seeds=True)), query
    assert "byron" in ids(table["higra+bridge"]()(QUESTION)[:2])
