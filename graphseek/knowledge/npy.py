"""`np.save`'s file written a block of rows at a time.

A build's large arrays (the passage vectors, the graph's vectors) wait in temporary files
(`graphseek.knowledge.graph.memory.spool.SpilledArray`); writing one as ``np.save`` would first read it
whole into memory. `save_blocks` writes the same bytes (the version 1.0 header ``np.save``
writes for a C-order array, then the rows) from blocks. Written by hand because numpy has no
streaming writer for its format (``np.lib.format.open_memmap`` maps the file, whose dirty pages
count in the process's RSS)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["save_blocks"]


def save_blocks(
    path: str | Path, blocks: Iterable[np.ndarray], shape: tuple[int, int], dtype: Any
) -> None:
    """Write the `shape` array of `dtype` whose rows `blocks` give, in order, to `path` as
    ``np.save`` would (`ValueError` if they hold another number of rows or another width)."""
    dtype = np.dtype(dtype)
    header = {
        "descr": np.lib.format.dtype_to_descr(dtype),
        "fortran_order": False,
        "shape": (int(shape[0]), int(shape[1])),
    }
    rows = 0
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        for block in blocks:
            if block.ndim != 2 or block.shape[1] != shape[1]:
                raise ValueError(f"a block of shape {block.shape} for rows of {shape[1]}")
            handle.write(np.ascontiguousarray(block, dtype=dtype).data)  # no bytes copy
            rows += len(block)
    if rows != shape[0]:
        raise ValueError(f"{rows} rows written for an array of {shape[0]}")
