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
from typing import Callable

import numpy as np
from numba import njit

from .exact_sum import DoubleDouble, two_sum
from .simd import DD_ROWS
from .sparse_sums import BlockColumns, TileSumBuffers


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


def tile_columns(X, bounds: list[tuple[int, int]], map_tiles: Callable = map) -> list[TileColumns]:
    """CSR ``X``'s rows of each row range of ``bounds`` (tiles) column by column, over the
    distinct columns of all of them.  O(nnz) per tile (radix passes), once; ``map_tiles``
    (``ThreadRunner.map``, say) makes the tiles on several threads at once."""
    bits = max(1, int(X.shape[1] - 1).bit_length())
    indices = np.asarray(X.indices)
    if indices.dtype != np.int32:  # the kernel's one signature (CSR of under 2^31 columns)
        indices = indices.astype(np.int32)

    def by_column(bound):
        a, b = bound
        distinct, col_ptr, rows, values = _by_column(X.indptr[a: b + 1], indices, X.data, bits)
        return distinct, col_ptr, rows.astype(np.uint16) if b - a < (1 << 16) else rows, values, b - a

    per_tile = list(map_tiles(by_column, bounds))
    block, positions = block_columns([d for d, *_ in per_tile], int(X.shape[1]), map_tiles)
    return [TileColumns(col_ptr, rows, values, where, block, n)
            for (_, col_ptr, rows, values, n), where in zip(per_tile, positions)]


#: Bytes per column of the marks and ranks :func:`block_columns` keeps while it runs (a uint8
#: and an int32), against the 16 bytes per tile column of sorting their concatenation.
_MARK_COLUMN_BYTES = 1 + 4


def block_columns(distinct: list[np.ndarray], n_features: int, map_tiles: Callable = map
                  ) -> tuple[BlockColumns, list[np.ndarray]]:
    """The block's distinct columns (the union of the tiles' ``distinct``, each ascending) and
    each tile's columns' places among them (int32): ``sorted_union`` and ``positions_in``.

    Why marks: the tiles of hashed rows touch a column about once each (25k rows x 40 ids
    of 2²⁴), so sorting their concatenation sorts every stored entry (40 tiles: 3.6 s with the
    galloping walks), where marking each tile's columns in a byte per column and counting the
    marks costs O(entries + n) and runs on the threads (0.3 s): the same arrays, whenever the
    marks take fewer bytes than the sort (else, a wide space sparsely touched, the sort).
    """
    entries = sum(int(d.shape[0]) for d in distinct)
    if _MARK_COLUMN_BYTES * n_features > 16 * entries:
        block = BlockColumns(sorted_union(distinct), n_features)
        return block, list(map_tiles(lambda d: positions_in(block.columns, d), distinct))
    marks = np.zeros(n_features, dtype=np.uint8)
    # every thread writes only 1s: the marks are the same whichever thread writes a column first
    list(map_tiles(lambda d: _mark(marks, d), distinct))
    # the outputs come from numpy, which asks for huge pages (a fault per 2 MB, not per 4 kB:
    # 0.14 s instead of 0.05 at 2^24 columns, when allocated in the compiled loop)
    ranks = np.empty(n_features, dtype=np.int32)
    columns = np.empty(_ranks(marks, ranks), dtype=np.int64)
    _marked_columns(marks, ranks, columns)
    return BlockColumns(columns, n_features), list(map_tiles(lambda d: _gather(ranks, d), distinct))


@njit(cache=True, nogil=True)
def _mark(marks, columns):
    for i in range(columns.shape[0]):
        marks[columns[i]] = 1


@njit(cache=True, nogil=True)
def _ranks(marks, ranks):
    # each column's place among the marked ones (a marked column's own; np.cumsum of uint8
    # takes 15x longer), and how many are marked
    count = 0
    for j in range(marks.shape[0]):
        ranks[j] = count
        count += marks[j]
    return count


@njit(cache=True, nogil=True)
def _marked_columns(marks, ranks, columns):
    # the marked columns, ascending (np.flatnonzero)
    for j in range(marks.shape[0]):
        if marks[j]:
            columns[ranks[j]] = j


@njit(cache=True, nogil=True)
def _gather(values, at):
    out = np.empty(at.shape[0], dtype=values.dtype)
    for i in range(at.shape[0]):
        out[i] = values[at[i]]
    return out


#: Bits of a column a radix pass of :func:`_by_column` sorts by (4096 counters: L1-resident).
_RADIX_BITS = 12


@njit(cache=True, nogil=True)
def _by_column(indptr, indices, data, bits):
    # the entries of rows indptr[0]:indptr[-1] ordered by column, rows ascending within one: a
    # stable LSD radix sort (np.argsort(kind="stable")'s permutation), then the distinct
    # columns, their entry pointers, rows (from 0) and values
    first, count = indptr[0], indptr[-1] - indptr[0]
    order = np.arange(count).astype(np.int32)
    spare = np.empty(count, dtype=np.int32)
    mask = (1 << _RADIX_BITS) - 1
    for shift in range(0, bits, _RADIX_BITS):
        starts = np.zeros(mask + 2, dtype=np.int64)
        for e in range(count):
            starts[((indices[first + order[e]] >> shift) & mask) + 1] += 1
        for d in range(mask + 1):
            starts[d + 1] += starts[d]
        for e in range(count):
            d = (indices[first + order[e]] >> shift) & mask
            spare[starts[d]] = order[e]
            starts[d] += 1
        order, spare = spare, order
    row_of = np.empty(count, dtype=np.int32)
    for r in range(indptr.shape[0] - 1):
        row_of[indptr[r] - first: indptr[r + 1] - first] = r
    rows = np.empty(count, dtype=np.int32)
    values = np.empty(count, dtype=data.dtype)
    distinct = np.empty(count, dtype=indices.dtype)
    col_ptr = np.empty(count + 1, dtype=np.int32)
    width = 0
    for e in range(count):
        k = order[e]
        column = indices[first + k]
        if width == 0 or distinct[width - 1] != column:
            distinct[width] = column
            col_ptr[width] = e
            width += 1
        rows[e] = row_of[k]
        values[e] = data[first + k]
    col_ptr[width] = count
    return distinct[:width].copy(), col_ptr[: width + 1].copy(), rows, values


@njit(cache=True, nogil=True)
def positions_in(ascending: np.ndarray, subset: np.ndarray) -> np.ndarray:
    """Each of ``subset`` (ascending, all in ``ascending``)'s index in ``ascending``:
    ``np.searchsorted(ascending, subset)`` by a galloping walk from the last one found, which
    reads ``ascending`` forwards instead of by a binary search of the whole (at 2^24 columns
    a cache miss per step)."""
    out = np.empty(subset.shape[0], dtype=np.int32)
    n = ascending.shape[0]
    lo = 0
    for i in range(subset.shape[0]):
        x = subset[i]
        if lo < n and ascending[lo] < x:  # ascending[lo] < x: gallop, then search (lo, hi]
            step = 1
            while lo + step < n and ascending[lo + step] < x:
                lo += step
                step *= 2
            hi = min(lo + step, n)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if ascending[mid] < x:
                    lo = mid
                else:
                    hi = mid
            lo = hi
        out[i] = lo
    return out


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
def _column_major_tdot_dd(col_ptr, rows, values, coefs, powers, steps, hi, lo):
    # per column and product: its step sums in row order, each step that added a term one
    # TwoSum into the column's double-double (exact_sum._csr_tdot_dd's operations, column by
    # column), written to hi[q, t] and lo[q, t]
    k = powers.shape[0]
    width = col_ptr.shape[0] - 1
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


def tile_products(columns: TileColumns, products: list[tuple[np.ndarray, int]], starts: np.ndarray,
                  buffers: TileSumBuffers | None = None, slot: int = 0) -> list[DoubleDouble]:
    """``rmatvec_dd_products`` of the tile's rows (each ``c`` of those rows), over the tile's own
    columns (``columns.width`` of them, ascending), with the step origins ``starts`` (0, each
    query start inside the tile, its row count): the row sweep's bits at those columns.

    ``buffers``: the sums are written into its arrays of ``slot`` (valid until that slot is
    taken again) instead of fresh ones."""
    powers = np.array([p for _, p in products], dtype=np.int64)
    if not products or np.any((powers != 1) & (powers != 2)):
        raise ValueError(f"powers must be 1 and/or 2, got {tuple(powers.tolist())!r}")
    coefs = np.empty((len(products), columns.n_rows))
    for q, (c, _) in enumerate(products):
        coefs[q] = c
    starts = np.asarray(starts, dtype=np.int64)
    if starts[0] != 0 or starts[-1] != columns.n_rows:
        raise ValueError(f"step origins must run from 0 to {columns.n_rows}")
    shape = (len(products), columns.width)
    hi, lo = (np.empty(shape), np.empty(shape)) if buffers is None else buffers.take(slot, shape)
    _column_major_tdot_dd(columns.col_ptr, columns.rows, columns.values, coefs, powers,
                          step_ids(starts, columns.n_rows), hi, lo)
    return [(hi[q], lo[q]) for q in range(len(products))]
