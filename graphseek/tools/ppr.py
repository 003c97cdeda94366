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

`push_pagerank` is the local form (Andersen, Chung and Lang's approximate PPR by push) for a
graph that is not in memory: it asks for the neighbours of a whole frontier at a time and
touches only nodes whose residual reaches `eps`, so it reads O(1 / ((1 - alpha) eps)) rows
whatever the graph's size. It solves the same equation as `PageRank.run` (dangling mass jumps to
the personalisation); every score is a lower bound of the exact one and the mass still
unpushed, at most `eps` per node, bounds the difference.
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
#: neighbours and edge weights of a node, as `push_pagerank`'s `rows` returns them
Row = tuple[np.ndarray, np.ndarray]
DEFAULT_PUSH_EPS = 1e-6


def _load_matvec() -> Any:
    """scipy's compiled CSR mat-vec kernel (``y += A @ x`` into a given buffer), or None.

    The power iteration calls it directly: through ``A @ x`` each step pays ~10 us of scipy's
    Python dispatch and a fresh output array, most of a step on a small graph."""
    try:
        from scipy.sparse import _sparsetools

        return _sparsetools.csr_matvec
    except (ImportError, AttributeError):  # a scipy without it: the public operator
        return None


_CSR_MATVEC = _load_matvec()


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


def push_pagerank(
    rows: Callable[[Sequence[int]], Mapping[int, Row]],
    seeds: Mapping[int, float],
    n: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    eps: float = DEFAULT_PUSH_EPS,
    degree_normalize: bool = False,
    max_rounds: int = 1000,
) -> np.ndarray:
    """Approximate personalised PageRank of an undirected weighted graph read lazily.

    `rows(nodes)` returns, for each of `nodes`, its neighbours and the weights of the edges to
    them (one batched read per call; a node without neighbours maps to empty arrays). `seeds`
    is the personalisation (node -> weight), divided by each seed's number of neighbours when
    `degree_normalize` (A2RAG eq. 10, as `PageRank.run`). Pushes, round by round, every node
    whose residual is at least `eps`; returns the scores of all `n` nodes (0 for nodes never
    reached)."""
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")
    if eps <= 0:
        raise ValueError(f"eps must be positive, got {eps}")
    known: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}

    def fetch(nodes: Sequence[int]) -> None:
        missing = [u for u in nodes if u not in known]
        if missing:
            got = rows(missing)
            for u in missing:
                nbrs, weights = got.get(u, (np.zeros(0, np.int64), np.zeros(0)))
                weights = np.asarray(weights, dtype=np.float64)
                known[u] = (np.asarray(nbrs, dtype=np.int64), weights, float(weights.sum()))

    fetch(sorted(int(s) for s in seeds))
    pi: dict[int, float] = {}
    for s, w in seeds.items():
        weight = float(w)
        if degree_normalize:
            weight /= max(len(known[int(s)][0]), 1)
        if weight < 0:
            raise ValueError("personalization weights must be non-negative")
        pi[int(s)] = pi.get(int(s), 0.0) + weight
    total = sum(pi.values())
    if total <= 0:
        raise ValueError("personalization has no positive weight on any node")
    pi = {s: w / total for s, w in pi.items()}
    p = np.zeros(n, dtype=np.float64)
    residual = dict(pi)
    for _ in range(max_rounds):
        active = sorted(u for u, r in residual.items() if r >= eps)
        if not active:
            break
        fetch(active)
        for u in active:
            ru = residual.pop(u, 0.0)
            if ru <= 0.0:
                continue
            p[u] += (1.0 - alpha) * ru
            nbrs, weights, out = known[u]
            if out > 0:
                share = alpha * ru / out
                for v, w in zip(nbrs.tolist(), weights.tolist(), strict=True):
                    residual[v] = residual.get(v, 0.0) + share * w
            else:  # dangling: the walk restarts from the personalisation
                for s, w in pi.items():
                    residual[s] = residual.get(s, 0.0) + alpha * ru * w
    return p


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
