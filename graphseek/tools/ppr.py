"""Personalised PageRank on scipy sparse matrices: the one implementation every retriever uses.

For an adjacency matrix ``A`` (``A[i, j] > 0``: an edge i -> j of that weight), the transition
matrix is ``M = D^-1 A`` (rows normalised by out-weight ``D``), and the scores are the fixed point

    p = alpha * (M^T p + (sum of p over dangling nodes) * d) + (1 - alpha) * pi

where ``pi`` is the personalisation (restart) distribution, ``alpha`` the damping factor (the
probability of following an edge; A2RAG's teleport probability is ``1 - alpha``) and ``d`` the
distribution that the mass of dangling nodes (no out-edge) jumps to: ``pi`` by default, as in
networkx, or uniform. With ``alpha = 0.85`` this is HiGraAgent §4.4's
``p_t = alpha M^T p_{t-1} + (1 - alpha) pi``.

Options used by the papers:

- ``add_inverse``: add every edge's inverse (A2RAG's augmented graph with inverse edges), so a
  directed relation graph can be walked both ways; an edge present both ways keeps the larger
  weight.
- ``degree_normalize``: divide each seed's personalisation weight by its degree before
  normalising (A2RAG eq. 10), so a hub seed does not drown the others.

`PageRank` prepares the transposed transition matrix once, so many queries over one graph pay
for the sparse algebra only once. `personalized_pagerank` is the one-shot form. Results are
float64 arrays summing to 1 (up to the tolerance).

`push_pagerank` is the local form (Andersen, Chung and Lang's approximate PPR by push, with
their degree-scaled residual threshold ``eps * degree(u)``), the one the progressive retriever
runs on every backend: it asks for the neighbours of a whole frontier at a time (`csr_rows` over
an in-memory matrix, or one query to a store) and reads only the rows of the nodes it pushes,
O(1 / ((1 - alpha) eps)) neighbours whatever the graph's size. It solves the same equation as
`PageRank.run` (dangling mass jumps to the personalisation); every score is a lower bound of
the exact one, within ``eps * degree`` of it on an unweighted graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

Dangling = Literal["personalization", "uniform"]

DEFAULT_ALPHA = 0.85
DEFAULT_TOL = 1e-8
DEFAULT_MAX_ITER = 100

Personalization = np.ndarray | Mapping[int, float] | Sequence[int]
#: `push_pagerank`'s reader: ascending node positions -> (neighbour counts, neighbours,
#: transition probabilities); see `push_pagerank`
BatchRows = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
DEFAULT_PUSH_EPS = 1e-6
DEFAULT_PUSH_ROUNDS = 1000


def _load_kernel(name: str) -> Any:
    """One of scipy's compiled sparse kernels, or None.

    ``csr_matvec`` (``y += A @ x`` into a given buffer): through ``A @ x`` each power-iteration
    step pays scipy's Python dispatch and a fresh output array, most of a step on a small
    graph. ``csc_matvec`` and ``csr_row_index``: a push round's scatter and gather, in C."""
    try:
        from scipy.sparse import _sparsetools

        return getattr(_sparsetools, name)
    except (ImportError, AttributeError):  # a scipy without it: the public operators / numpy
        return None


_CSR_MATVEC = _load_kernel("csr_matvec")
_CSC_MATVEC = _load_kernel("csc_matvec")
_CSR_ROW_INDEX = _load_kernel("csr_row_index")


class PageRankConvergenceError(RuntimeError):
    """Power iteration did not reach the tolerance within `max_iter` steps."""


@dataclass(frozen=True)
class PageRank:
    """A graph prepared for repeated personalised PageRank runs.

    Build with `PageRank.from_adjacency`; call `run` with a personalisation per query.
    """

    transition_t: sp.csr_matrix  # M^T: column j holds node j's out-distribution
    dangling: np.ndarray  # bool mask of nodes with no out-weight
    degree: np.ndarray  # out-degree (number of out-edges) of every node

    @classmethod
    def from_adjacency(
        cls, adjacency: sp.spmatrix | sp.sparray | np.ndarray, *, add_inverse: bool = False
    ) -> PageRank:
        """Prepare `adjacency` (square; entry (i, j) = weight of edge i -> j, >= 0)."""
        a = sp.csr_matrix(adjacency, dtype=np.float64)
        if a.shape[0] != a.shape[1]:
            raise ValueError(f"adjacency must be square, got shape {a.shape}")
        if a.nnz and a.data.min() < 0:
            raise ValueError("adjacency weights must be non-negative")
        if add_inverse:
            a = a.maximum(a.T.tocsr()).tocsr()
        a.sum_duplicates()
        a.eliminate_zeros()
        n = a.shape[0]
        counts = np.diff(a.indptr)
        rows = np.repeat(np.arange(n), counts)
        out_weight = np.bincount(rows, weights=a.data, minlength=n).astype(np.float64)
        dangling = out_weight <= 0
        scale = np.zeros_like(out_weight)
        scale[~dangling] = 1.0 / out_weight[~dangling]
        # M = D^-1 A, stored transposed: scale each row's entries, then transpose
        transition = sp.csr_matrix((a.data * scale[rows], a.indices, a.indptr), shape=a.shape)
        return cls(
            transition_t=transition.T.tocsr(), dangling=dangling, degree=counts.astype(np.int64)
        )

    @property
    def n(self) -> int:
        return int(self.transition_t.shape[0])

    @cached_property
    def _dangling_nodes(self) -> np.ndarray:
        """Positions of the dangling nodes (a gather is cheaper than a boolean mask; a BLAS dot
        product would start OpenBLAS threads, which on a busy host cost more than the step)."""
        return np.flatnonzero(self.dangling)

    def personalization_vector(
        self, personalization: Personalization, *, degree_normalize: bool = False
    ) -> np.ndarray:
        """The normalised restart distribution for node weights, a node list or a dense vector."""
        pi = _as_vector(personalization, self.n)
        if degree_normalize:
            pi = pi / np.maximum(self.degree, 1)
        total = pi.sum()
        if total <= 0:
            raise ValueError("personalization has no positive weight on any node")
        return pi / total

    def run(
        self,
        personalization: Personalization,
        *,
        alpha: float = DEFAULT_ALPHA,
        tol: float = DEFAULT_TOL,
        max_iter: int = DEFAULT_MAX_ITER,
        dangling: Dangling | np.ndarray = "personalization",
        degree_normalize: bool = False,
        strict: bool = False,
    ) -> np.ndarray:
        """PPR scores of every node. Stops when the L1 change of one step is below `tol`; after
        `max_iter` steps returns the last iterate, or raises `PageRankConvergenceError` if
        `strict`."""
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {alpha}")
        pi = self.personalization_vector(personalization, degree_normalize=degree_normalize)
        if isinstance(dangling, np.ndarray):
            jump = _normalised(dangling.astype(np.float64), "dangling")
        elif dangling == "uniform":
            jump = np.full(self.n, 1.0 / self.n)
        elif dangling == "personalization":
            jump = pi
        else:
            raise ValueError(f"unknown dangling policy {dangling!r}")
        has_dangling = bool(self.dangling.any())
        restart = (1.0 - alpha) * pi
        matrix = self.transition_t
        n = self.n
        matvec = _CSR_MATVEC if matrix.indices.dtype == np.int32 else None
        dangling_nodes = self._dangling_nodes
        x = pi.copy()
        new = np.empty(n, dtype=np.float64)
        diff = np.empty(n, dtype=np.float64)
        for _ in range(max_iter):
            # new = alpha * (M^T x + (dangling mass of x) * jump) + (1 - alpha) * pi, in place
            if matvec is not None:
                new.fill(0.0)
                matvec(n, n, matrix.indptr, matrix.indices, matrix.data, x, new)
            else:
                new[:] = matrix @ x
            new *= alpha
            new += restart
            if has_dangling:
                new += (alpha * float(x.take(dangling_nodes).sum())) * jump
            np.subtract(new, x, out=diff)
            np.abs(diff, out=diff)
            err = float(diff.sum())
            x, new = new, x
            if err < tol:
                return x
        if strict:
            raise PageRankConvergenceError(
                f"personalised PageRank did not converge to {tol} in {max_iter} iterations"
            )
        return x


def personalized_pagerank(
    adjacency: sp.spmatrix | sp.sparray | np.ndarray,
    personalization: Personalization,
    *,
    alpha: float = DEFAULT_ALPHA,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    dangling: Dangling | np.ndarray = "personalization",
    degree_normalize: bool = False,
    add_inverse: bool = False,
    strict: bool = False,
) -> np.ndarray:
    """One-shot personalised PageRank (see the module docstring for the parameters)."""
    return PageRank.from_adjacency(adjacency, add_inverse=add_inverse).run(
        personalization,
        alpha=alpha,
        tol=tol,
        max_iter=max_iter,
        dangling=dangling,
        degree_normalize=degree_normalize,
        strict=strict,
    )


def transition_rows(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Edge weights divided by their node's total, for rows laid out node after node
    (`counts[i]` edges for the i-th node): each row's total is summed in order, so a row gives
    the same probabilities whether it is normalised alone, in a batch or in a whole matrix."""
    weights = np.asarray(weights, dtype=np.float64)
    if not len(weights):
        return weights
    owner = np.repeat(np.arange(len(counts)), counts)
    totals = np.bincount(owner, weights=weights, minlength=len(counts))
    return weights / totals[owner]


def row_positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Where the entries of some rows lie in flat buffers that hold rows entry after entry: the
    row starting at ``starts[i]`` with ``counts[i]`` entries, for each i in turn."""
    total = int(counts.sum())
    return np.arange(total) + np.repeat(starts - (np.cumsum(counts) - counts), counts)


def csr_rows(adjacency: sp.csr_matrix) -> BatchRows:
    """`push_pagerank`'s reader over an in-memory CSR matrix (row i: node i's neighbours)."""
    a = sp.csr_matrix(adjacency, copy=True)  # (pruned below: not the caller's arrays)
    if not a.has_sorted_indices:
        a = a.sorted_indices()
    a.eliminate_zeros()
    indptr = a.indptr.astype(np.int64)
    indices = a.indices.astype(np.int64)
    probs = transition_rows(np.diff(indptr), a.data)

    def rows(nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nodes = np.asarray(nodes, dtype=np.int64)
        starts = indptr[nodes]
        counts = indptr[nodes + 1] - starts
        total = int(counts.sum())
        out_indices = np.empty(total, dtype=np.int64)
        out_probs = np.empty(total, dtype=np.float64)
        if total and _CSR_ROW_INDEX is not None:
            _CSR_ROW_INDEX(len(nodes), nodes, indptr, indices, probs, out_indices, out_probs)
        elif total:
            at = row_positions(starts, counts)
            out_indices, out_probs = indices[at], probs[at]
        return counts, out_indices, out_probs

    return rows


def push_pagerank(
    rows: BatchRows,
    seeds: Mapping[int, float],
    degree: np.ndarray,
    *,
    alpha: float = DEFAULT_ALPHA,
    eps: float = DEFAULT_PUSH_EPS,
    degree_normalize: bool = False,
    max_rounds: int = DEFAULT_PUSH_ROUNDS,
) -> np.ndarray:
    """Approximate personalised PageRank by local push (Andersen, Chung and Lang, 2006).

    The graph is undirected and read lazily: `rows(nodes)` returns, for an ascending array of
    node positions, ``(counts, neighbours, probabilities)``: the number of neighbours of each
    node and all their neighbours, node after node, with each edge's weight divided by its
    node's total (`transition_rows`); `csr_rows` reads a CSR matrix, a store reads a batch.
    `degree[u]` is u's number of neighbours, known for every node before its row is read.
    `seeds` is the personalisation (node -> weight), divided by each seed's degree when
    `degree_normalize` (A2RAG eq. 10, as `PageRank.run`).

    Round after round, every node whose residual reaches ``eps * degree`` (ACL's degree-scaled
    rule, 1 for a node without neighbours) is pushed: it keeps ``1 - alpha`` of its residual as
    score and spreads ``alpha`` of it over its edges in proportion to their weights (a node
    without neighbours sends it back to the personalisation, as `PageRank.run` does with
    dangling mass). On return every residual is below its threshold: each score is a lower
    bound of the exact PPR, and on an unweighted graph ``exact(v) - score(v) <= eps *
    degree(v)``. Rows read are those of pushed nodes only, at most ``1 / ((1 - alpha) eps)``
    neighbours in all whatever the graph's size, and a hub needs a residual proportional to
    its degree before it is read. The arithmetic depends only on the rows, in the order
    returned, so two stores returning the same rows give bit-identical scores."""
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")
    if eps <= 0:
        raise ValueError(f"eps must be positive, got {eps}")
    degree = np.asarray(degree)
    n = len(degree)
    pi = np.zeros(n, dtype=np.float64)
    for s, w in seeds.items():
        if not 0 <= int(s) < n:
            raise ValueError(f"personalization node {s} is outside the graph (n={n})")
        if w < 0:
            raise ValueError("personalization weights must be non-negative")
        weight = float(w)
        if degree_normalize:
            weight /= max(int(degree[int(s)]), 1)
        pi[int(s)] += weight
    total = pi.sum()
    if total <= 0:
        raise ValueError("personalization has no positive weight on any node")
    pi /= total
    restart_nodes = np.flatnonzero(pi)
    restart_weights = pi[restart_nodes]
    threshold = eps * np.maximum(degree, 1).astype(np.float64)
    p = np.zeros(n, dtype=np.float64)
    residual = pi.copy()
    for _ in range(max_rounds):
        active = np.flatnonzero(residual >= threshold)
        if not len(active):
            break
        mass = residual[active]
        residual[active] = 0.0
        p[active] += (1.0 - alpha) * mass
        counts, nbrs, probs = rows(active)
        spread = alpha * mass
        _scatter(counts, nbrs, probs, spread, residual)
        dangling = counts == 0
        if dangling.any():  # no neighbours: the walk restarts from the personalisation
            residual[restart_nodes] += float(spread[dangling].sum()) * restart_weights
    return p


def _scatter(
    counts: np.ndarray, nbrs: np.ndarray, probs: np.ndarray, x: np.ndarray, y: np.ndarray
) -> None:
    """``y[v] += x[i] * probs[e]`` for every edge e (i -> v) of the batch, edge after edge."""
    if not len(nbrs):
        return
    if _CSC_MATVEC is not None:  # the batch's rows are the columns of a CSC matrix
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        _CSC_MATVEC(len(y), len(counts), indptr, nbrs.astype(np.int64, copy=False), probs, x, y)
    else:
        np.add.at(y, nbrs, np.repeat(x, counts) * probs)


def top_nodes(scores: np.ndarray, k: int, *, exclude: Sequence[int] = ()) -> list[int]:
    """Positions of the `k` highest positive scores, best first, ties by position."""
    if k <= 0:
        return []
    s = np.asarray(scores, dtype=np.float64).copy()
    if len(exclude):
        s[np.asarray(exclude, dtype=np.int64)] = 0.0
    candidates = np.flatnonzero(s > 0)
    if len(candidates) > k:
        kth = np.partition(-s[candidates], k - 1)[k - 1]
        candidates = candidates[-s[candidates] <= kth]
    order = np.lexsort((candidates, -s[candidates]))[:k]
    return [int(i) for i in candidates[order]]


def _as_vector(personalization: Personalization, n: int) -> np.ndarray:
    if isinstance(personalization, np.ndarray):
        if personalization.shape != (n,):
            raise ValueError(
                f"personalization vector has shape {personalization.shape}, expected ({n},)"
            )
        pi = personalization.astype(np.float64, copy=True)
    else:
        pi = np.zeros(n, dtype=np.float64)
        items = (
            personalization.items()
            if isinstance(personalization, Mapping)
            else ((node, 1.0) for node in personalization)
        )
        for node, weight in items:
            if not 0 <= int(node) < n:
                raise ValueError(f"personalization node {node} is outside the graph (n={n})")
            pi[int(node)] += float(weight)
    if (pi < 0).any():
        raise ValueError("personalization weights must be non-negative")
    return pi


def _normalised(v: np.ndarray, what: str) -> np.ndarray:
    total = v.sum()
    if total <= 0 or (v < 0).any():
        raise ValueError(f"{what} weights must be non-negative with a positive sum")
    return v / total
