"""The undirected entity graph every graph retriever walks, from a graph store's adjacency.

One function, so that the directory backend's `GraphView.undirected` and the rows a Postgres
index stores for push PPR (``entity_rows``, `graphseek.knowledge.postgres.graph`) are the same
matrix to the last bit.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def undirected_adjacency(adjacency: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """`adjacency` as float64 with every edge both ways (the larger weight kept), no loops, no
    zero weights and sorted indices."""
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    a = a.maximum(a.T).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    a.sort_indices()
    return a
