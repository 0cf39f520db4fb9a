"""A tile's wide CSR rows kept column by column: ``Xᵀc`` at cache speed.

Why: on hashed features (2²⁰–2²⁴ feature ids, tens of non-zeros per row) a tile of ~25k rows
touches ~1M columns, and a row-order sweep reads and writes those columns' accumulators at
random, five arrays of ~8 MB each (partial, mark, list, ``hi``, ``lo``): every entry is a
miss in the last-level cache, ~170 ns per entry and product (200k rows x 40 ids of 2²⁴, one
core).  Column by column the entries of one column are read in a row, each column's sum is
finished before the next starts, and what is read at random is indexed by the tile's rows (its
coefficients and step ids, ~0.2 MB), which stay in the second-level cache: 4-6 ns.  ``X·v``
stays a row sweep over the CSR rows (``linalg.matvec``): its cost is gathering the full-width
``v`` (~20 ns per entry), which a column-major sweep measured no faster.

Why the bits are the row sweep's (``exact_sum._csr_tdot_dd``): column ``j``'s step sums
(:mod:`sparkrank.numerics.exact_sum`: a query's rows in steps of
:data:`~sparkrank.numerics.simd.DD_ROWS` from its first row) add the same terms in row order
from ``+0.0``, a step that adds a term goes to the column's double-double by one TwoSum, steps
in row order: operation for operation the row sweep's, only the columns' interleaving differs,
and no column's sum depends on another's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .exact_sum import DoubleDouble, two_sum
from .simd import DD_ROWS
from .sparse_sums import BlockColumns


@dataclass(frozen=True, eq=False)
class TileColumns:
    """A tile's rows column by column, over its distinct columns in ascending order.

    ``col_ptr`` (int32, ``width + 1``): tile column ``t``'s entries are ``col_ptr[t]:col_ptr[t+1]``
    of ``rows`` (its rows within the tile, ascending; uint16 when the tile has fewer than 2¹⁶
    rows, else int32) and ``values`` (the rows' stored values, their dtype); ``positions``
    (int32): each tile column's place among ``block``'s (shared by the block's tiles).
    """

    col_ptr: np.ndarray
    rows: np.ndarray
    values: np.ndarray
    positions: np.ndarray
    block: BlockColumns
    n_rows: int

    @property
    def width(self) -> int:
        return int(self.positions.shape[0])

    def nbytes(self) -> int:
        return self.col_ptr.nbytes + self.rows.nbytes + self.values.nbytes + self.positions.nbytes


def tile_columns(X, bounds: list[tuple[int, int]]) -> list[TileColumns]:
    """CSR ``X``'s rows of each row range of ``bounds`` (tiles) column by column, over the
    distinct columns of all of them.  O(nnz log nnz) once."""
    per_tile = []
    for a, b in bounds:
        first, last = int(X.indptr[a]), int(X.indptr[b])
        entries = np.asarray(X.indices[first:last])
        order = np.argsort(entries, kind="stable")  # by column, rows ascending within one
        by_column = entries[order]
        starts = np.flatnonzero(np.diff(by_column)) + 1 if by_column.shape[0] else np.zeros(0, dtype=np.int64)
        distinct = by_column[np.concatenate(([0], starts))] if by_column.shape[0] else by_column
        col_ptr = np.concatenate(([0], starts, [by_column.shape[0]])).astype(np.int32) \
            if by_column.shape[0] else np.zeros(1, dtype=np.int32)
        row_of = np.repeat(np.arange(b - a, dtype=np.int32), np.diff(np.asarray(X.indptr[a: b + 1])))
        rows = row_of[order].astype(np.uint16 if b - a < (1 << 16) else np.int32)
        values = np.asarray(X.data[first:last])[order]
        per_tile.append((distinct, col_ptr, rows, values, b - a))
    block = BlockColumns(sorted_union([d for d, *_ in per_tile]), int(X.shape[1]))
    return [TileColumns(col_ptr, rows, values, np.searchsorted(block.columns, distinct).astype(np.int32), block, n)
            for distinct, col_ptr, rows, values, n in per_tile]


def sorted_union(arrays: list[np.ndarray]) -> np.ndarray:
    """The distinct values of ``arrays`` (each ascending and distinct), ascending, as int64:
    ``np.unique`` of their concatenation.  Why not ``np.unique``: it hashes before it sorts,
    2.4 s of CPU for a 100k-row block's 4M hashed ids where sorting and dropping repeats takes 0.3 s."""
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    values = np.sort(np.concatenate(arrays).astype(np.int64), kind="stable")  # merges the sorted runs
    keep = np.ones(values.shape[0], dtype=bool)
    keep[1:] = values[1:] != values[:-1]
    return values[keep]


def step_ids(starts: np.ndarray, n_rows: int) -> np.ndarray:
    """Each row's step (:mod:`sparkrank.numerics.exact_sum`: steps of ``DD_ROWS`` rows from each of
    the step origins ``starts``, which run from 0 to ``n_rows``), numbered in row order."""
    starts = np.asarray(starts, dtype=np.int64)
    segment = np.repeat(np.arange(starts.shape[0] - 1), np.diff(starts))
    per_segment = -(-np.diff(starts) // DD_ROWS)
    first_step = np.concatenate(([0], np.cumsum(per_segment)[:-1]))
    return (first_step[segment] + (np.arange(n_rows) - starts[segment]) // DD_ROWS).astype(np.int32)


@njit(cache=True, nogil=True)
def _column_major_tdot_dd(col_ptr, rows, values, coefs, powers, steps):
    # per column and product: its step sums in row order, each step that added a term one
    # TwoSum into the column's double-double (exact_sum._csr_tdot_dd's operations, column by column)
    k = powers.shape[0]
    width = col_ptr.shape[0] - 1
    hi = np.zeros((k, width))
    lo = np.zeros((k, width))
    for t in range(width):
        for q in range(k):
            h = 0.0
            low = 0.0
            partial = 0.0
            step = -1
            for e in range(col_ptr[t], col_ptr[t + 1]):
                x = np.float64(values[e])
                if x == 0.0:
                    continue
                r = rows[e]
                ci = coefs[q, r]
                if ci == 0.0:
                    continue
                if steps[r] != step:
                    if step >= 0:
                        h, low = two_sum(h, low, partial)
                    partial = 0.0
                    step = steps[r]
                partial += x * ci if powers[q] == 1 else (x * x) * ci
            if step >= 0:
                h, low = two_sum(h, low, partial)
            hi[q, t] = h
            lo[q, t] = low
    return hi, lo


def tile_products(columns: TileColumns, products: list[tuple[np.ndarray, int]], starts: np.ndarray) -> list[DoubleDouble]:
    """``rmatvec_dd_products`` of the tile's rows (each ``c`` of those rows), over the tile's own
    columns (``columns.width`` of them, ascending), with the step origins ``starts`` (0, each
    query start inside the tile, its row count): the row sweep's bits at those columns."""
    powers = np.array([p for _, p in products], dtype=np.int64)
    if not products or np.any((powers != 1) & (powers != 2)):
        raise ValueError(f"powers must be 1 and/or 2, got {tuple(powers.tolist())!r}")
    coefs = np.empty((len(products), columns.n_rows))
    for q, (c, _) in enumerate(products):
        coefs[q] = c
    starts = np.asarray(starts, dtype=np.int64)
    if starts[0] != 0 or starts[-1] != columns.n_rows:
        raise ValueError(f"step origins must run from 0 to {columns.n_rows}")
    hi, lo = _column_major_tdot_dd(columns.col_ptr, columns.rows, columns.values, coefs, powers,
                                   step_ids(starts, columns.n_rows))
    return [(hi[q], lo[q]) for q in range(len(products))]
