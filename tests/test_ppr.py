"""Personalised PageRank against networkx.pagerank on small graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from graphseek.tools.ppr import (
    PageRank,
    PageRankConvergenceError,
    personalized_pagerank,
    top_nodes,
)

TOL = 1e-12


def _reference(graph: nx.Graph, n: int, **kwargs: object) -> np.ndarray:
    ref = nx.pagerank(graph, tol=TOL, max_iter=10_000, **kwargs)  # type: ignore[arg-type]
    return np.array([ref[i] for i in range(n)])


def _graphs() -> list[tuple[str, nx.Graph]]:
    directed = nx.gnp_random_graph(40, 0.07, seed=3, directed=True)
    directed.add_edge(0, 40)  # 40 is dangling (no out-edge)
    directed.add_node(41)  # isolated: dangling too
    undirected = nx.gnp_random_graph(40, 0.1, seed=5)
    undirected.add_node(40)
    weighted = nx.DiGraph()
    rng = np.random.default_rng(7)
    for _ in range(80):
        a, b = rng.integers(0, 25, size=2)
        if a != b:
            weighted.add_edge(int(a), int(b), weight=float(rng.uniform(0.1, 3.0)))
    weighted.add_nodes_from(range(25))
    return [("directed", directed), ("undirected", undirected), ("weighted", weighted)]


@pytest.mark.parametrize(("name", "graph"), _graphs())
@pytest.mark.parametrize("alpha", [0.5, 0.85])
def test_matches_networkx(name: str, graph: nx.Graph, alpha: float) -> None:
    n = graph.number_of_nodes()
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(n))
    personalization = {0: 1.0, 3: 2.0, 7: 0.5}
    ours = personalized_pagerank(adjacency, personalization, alpha=alpha, tol=TOL, max_iter=10_000)
    expected = _reference(graph, n, alpha=alpha, personalization=personalization)
    np.testing.assert_allclose(ours, expected, atol=1e-10)
    assert ours.sum() == pytest.approx(1.0)


@pytest.mark.parametrize(("name", "graph"), _graphs())
def test_uniform_dangling_matches_networkx(name: str, graph: nx.Graph) -> None:
    n = graph.number_of_nodes()
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(n))
    ours = personalized_pagerank(adjacency, [1, 2], dangling="uniform", tol=TOL, max_iter=10_000)
    expected = _reference(
        graph, n, personalization={1: 1, 2: 1}, dangling=dict.fromkeys(range(n), 1.0)
    )
    np.testing.assert_allclose(ours, expected, atol=1e-10)


def test_inverse_edges_equal_the_undirected_graph() -> None:
    graph = _graphs()[0][1]
    n = graph.number_of_nodes()
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(n))
    ours = personalized_pagerank(adjacency, [0], add_inverse=True, tol=TOL, max_iter=10_000)
    expected = _reference(graph.to_undirected(), n, personalization={0: 1})
    np.testing.assert_allclose(ours, expected, atol=1e-10)


def test_degree_normalised_personalisation() -> None:
    graph = _graphs()[1][1]
    n = graph.number_of_nodes()
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(n))
    seeds = [0, 1, 2]
    ours = personalized_pagerank(adjacency, seeds, degree_normalize=True, tol=TOL, max_iter=10_000)
    weights = {s: 1.0 / max(graph.degree(s), 1) for s in seeds}
    expected = _reference(graph, n, personalization=weights)
    np.testing.assert_allclose(ours, expected, atol=1e-10)


def test_prepared_graph_is_reusable_and_inputs_are_equivalent() -> None:
    graph = _graphs()[1][1]
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(graph.number_of_nodes()))
    pr = PageRank.from_adjacency(adjacency)
    vector = np.zeros(pr.n)
    vector[[4, 9]] = 1.0
    by_list = pr.run([4, 9], tol=TOL)
    np.testing.assert_allclose(pr.run({4: 1.0, 9: 1.0}, tol=TOL), by_list)
    np.testing.assert_allclose(pr.run(vector, tol=TOL), by_list)
    np.testing.assert_allclose(pr.run(vector, tol=TOL), by_list)  # no state kept between runs


def test_restart_on_an_isolated_seed_keeps_all_mass_there() -> None:
    adjacency = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    scores = personalized_pagerank(adjacency, [2])
    np.testing.assert_allclose(scores, [0.0, 0.0, 1.0])


def test_errors() -> None:
    adjacency = sp.identity(3, format="csr")
    with pytest.raises(ValueError, match="no positive weight"):
        personalized_pagerank(adjacency, {})
    with pytest.raises(ValueError, match="outside the graph"):
        personalized_pagerank(adjacency, [5])
    with pytest.raises(ValueError, match="square"):
        personalized_pagerank(sp.csr_matrix((2, 3)), [0])
    with pytest.raises(ValueError, match="alpha"):
        personalized_pagerank(adjacency, [0], alpha=1.0)
    cycle = sp.csr_matrix(np.array([[0, 1], [1, 0]], dtype=float))
    with pytest.raises(PageRankConvergenceError):
        personalized_pagerank(cycle, [0], max_iter=2, tol=1e-15, strict=True)


def test_top_nodes() -> None:
    scores = np.array([0.1, 0.4, 0.0, 0.4, 0.2])
    assert top_nodes(scores, 3) == [1, 3, 4]
    assert top_nodes(scores, 10) == [1, 3, 4, 0]
    assert top_nodes(scores, 2, exclude=[1]) == [3, 4]
    assert top_nodes(scores, 0) == []
