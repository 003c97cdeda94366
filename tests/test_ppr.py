"""Personalised PageRank against networkx.pagerank on small graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from graphseek.tools.ppr import (
    BatchRows,
    PageRank,
    PageRankConvergenceError,
    csr_rows,
    personalized_pagerank,
    push_pagerank,
    top_nodes,
    transition_rows,
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


# -- local push ----------------------------------------------------------------------------------


def _reader(a: sp.csr_matrix, calls: list[list[int]]) -> BatchRows:
    rows = csr_rows(a)

    def read(nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        calls.append(nodes.tolist())
        return rows(nodes)

    return read


def _weighted_graph(n: int = 120) -> sp.csr_matrix:
    rng = np.random.default_rng(11)
    graph = nx.gnp_random_graph(n, 0.04, seed=2)
    for a, b in graph.edges:
        graph[a][b]["weight"] = float(rng.uniform(0.5, 2.0))
    graph.add_node(n)  # isolated seed: its mass keeps restarting there
    return sp.csr_matrix(nx.to_scipy_sparse_array(graph, nodelist=range(n + 1), format="csr"))


@pytest.mark.parametrize("degree_normalize", [False, True])
@pytest.mark.parametrize("eps", [1e-3, 1e-5, 1e-7])
def test_push_is_within_eps_degree_of_networkx(degree_normalize: bool, eps: float) -> None:
    """ACL's guarantee on an unweighted graph: 0 <= exact(v) - push(v) <= eps * degree(v)."""
    graph = nx.barabasi_albert_graph(300, 3, seed=4)  # hubs: the degree-scaled rule matters
    graph.add_node(300)
    n = 301
    a = sp.csr_matrix(nx.to_scipy_sparse_array(graph, nodelist=range(n), format="csr"))
    degree = np.diff(a.indptr)
    seeds = {0: 1.0, 50: 1.0, 299: 1.0, 300: 1.0}
    weights = {s: 1.0 / max(int(degree[s]), 1) if degree_normalize else 1.0 for s in seeds}
    exact = _reference(graph, n, personalization=weights)
    approx = push_pagerank(csr_rows(a), seeds, degree, eps=eps, degree_normalize=degree_normalize)
    assert (approx <= exact + 1e-12).all()  # push scores are lower bounds
    assert (exact - approx <= eps * np.maximum(degree, 1) + 1e-12).all()
    if eps <= 1e-7:
        assert top_nodes(approx, 10) == top_nodes(exact, 10)


def test_push_on_a_weighted_graph_converges_to_power_iteration() -> None:
    a = _weighted_graph()
    degree = np.diff(a.indptr)
    seeds = {0: 1.0, 7: 1.0, 120: 1.0}
    exact = PageRank.from_adjacency(a).run(seeds, tol=1e-14, max_iter=10_000, degree_normalize=True)
    calls: list[list[int]] = []
    approx = push_pagerank(_reader(a, calls), seeds, degree, eps=1e-10, degree_normalize=True)
    assert (approx <= exact + 1e-12).all()
    np.testing.assert_allclose(approx, exact, atol=1e-7)
    assert top_nodes(approx, 10) == top_nodes(exact, 10)
    # one read per round, of the pushed nodes only, in ascending order
    assert all(call == sorted(set(call)) for call in calls)


def test_push_reads_only_the_component_of_the_seeds_and_stops_early() -> None:
    # two components: a path 0-1-...-9 and a clique on 10..29; seeds on the path
    path = nx.path_graph(10)
    clique = nx.relabel_nodes(nx.complete_graph(20), {i: i + 10 for i in range(20)})
    graph = nx.union(path, clique)
    a = sp.csr_matrix(nx.to_scipy_sparse_array(graph, nodelist=range(30), format="csr"))
    degree = np.diff(a.indptr)
    calls: list[list[int]] = []
    scores = push_pagerank(_reader(a, calls), {0: 1.0}, degree, eps=1e-9)
    read = {u for call in calls for u in call}
    assert read <= set(range(10)) and scores[10:].sum() == 0
    calls.clear()
    coarse = push_pagerank(_reader(a, calls), {0: 1.0}, degree, eps=1e-2)
    assert {u for call in calls for u in call} < read  # a coarser eps reads fewer rows
    assert coarse.argmax() == scores.argmax()


def test_a_hub_is_read_only_once_its_residual_scales_with_its_degree() -> None:
    # a star: hub 0 with 200 leaves, seed on leaf 1; eps * 200 is more than the hub ever gets
    star = sp.csr_matrix(nx.to_scipy_sparse_array(nx.star_graph(200), format="csr"))
    degree = np.diff(star.indptr)
    calls: list[list[int]] = []
    push_pagerank(_reader(star, calls), {1: 1.0}, degree, eps=0.01)
    assert 0 not in {u for call in calls for u in call}
    calls.clear()
    push_pagerank(_reader(star, calls), {1: 1.0}, degree, eps=0.001)
    assert 0 in {u for call in calls for u in call}


def test_push_errors() -> None:
    a = _weighted_graph(10)
    degree = np.diff(a.indptr)
    with pytest.raises(ValueError, match="no positive weight"):
        push_pagerank(csr_rows(a), {}, degree)
    with pytest.raises(ValueError, match="outside the graph"):
        push_pagerank(csr_rows(a), {50: 1.0}, degree)
    with pytest.raises(ValueError, match="eps"):
        push_pagerank(csr_rows(a), {0: 1.0}, degree, eps=0)
    with pytest.raises(ValueError, match="alpha"):
        push_pagerank(csr_rows(a), {0: 1.0}, degree, alpha=1.0)


def test_rows_read_in_batches_equal_the_whole_matrix_bit_for_bit() -> None:
    """A store's reader normalises each batch it reads; `csr_rows` normalises the whole matrix
    once: the same probabilities to the last bit, so both backends push the same scores."""
    a = _weighted_graph(60)
    whole = csr_rows(a)
    for batch in ([0], [3, 4, 5], list(range(0, 61, 7)), list(range(61))):
        nodes = np.asarray(batch)
        counts, nbrs, probs = whole(nodes)
        raw = [a.data[a.indptr[u] : a.indptr[u + 1]] for u in batch]
        alone = transition_rows(counts, np.concatenate(raw))
        assert np.array_equal(alone, probs)
        assert np.array_equal(
            nbrs, np.concatenate([a.indices[a.indptr[u] : a.indptr[u + 1]] for u in batch])
        )
