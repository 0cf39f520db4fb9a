"""Column sums over the columns some rows touch: a pass costs O(nnz) per tile, O(n) once.

Why: on hashed features (2²⁰–2²⁴ feature ids, tens of non-zeros per row) a tile of a few MB
touches under a million of the ``n`` columns, and a dense double-double ``Xᵀc`` per tile (five
arrays of width ``n``: sums, step sums, marks, column lists) cost O(n) per tile, thread and
Spark partition: 200k rows x 2²⁴ ids took over 30 minutes and 8.5 GB in process, and a Spark
pass ran the JVM out of heap.  Here each tile keeps, once per engine, its rows column by column
over its own distinct columns (:class:`~sparkrank.numerics.tile_columns.TileColumns`, which also
says why that is fast), so a tile's ``Xᵀc`` costs O(its entries), and the tiles' sums are
added into one accumulator over the block's distinct columns (:class:`ColumnSums`), each
column's additions in tile order whatever the threads: batch by batch of tiles, one sweep of the
accumulator per batch rather than per tile (:data:`SUM_BATCH_BYTES`).

Why the bits are those of the dense sums (``exact_sum``'s convention, Ogita–Rump–Oishi Sum2):
a tile's per-column step sums and TwoSum additions are the dense loop's, operation for
operation (``tile_columns.py``); a column a tile does not
touch holds ``(0, 0)`` there, and adding ``(0, 0)`` to a finite double-double changes no bit
(``dd_add``: ``s = hi + 0 = hi``, error 0, ``lo + 0 + 0 = lo``; a sum is never ``-0.0``), so
leaving it out gives the dense accumulator's bits.  (After an overflow the dense sum turns an
``inf`` into ``nan`` on such an addition, the sparse one keeps ``inf``: both are non-finite.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
from numba import njit
from numba.typed import List

from .exact_sum import DoubleDouble

#: Bytes of tiles' sums held at once (at least; :func:`batch_bytes`) to be added into a block's
#: accumulator in one sweep (:meth:`ColumnSums.add_batch`).  Why batches: a tile of 25k hashed
#: rows touches ~1M of the 2²⁴ columns, spread over all of them, so adding its sums alone reads
#: and writes a cache line of the accumulator per column, which costs a sweep of the whole
#: accumulator per tile (1M rows x 40 ids of 2²⁴, a value pass: 4.6 of 6.9 s, one thread at a time).
SUM_BATCH_BYTES = 256 << 20

#: Columns of the accumulator a batch is added into at a time, tile after tile: 64 KB of ``hi``
#: and ``lo`` per product, read in order first, so the tiles' additions find them in cache
#: (8 tiles x 675k of 15M columns x 3 products: 49 ns an addition tile by tile, 45 ns by
#: chunks of 16k columns, 16 ns by chunks read first, 15 ns by chunks of 4k).
_ADD_CHUNK = 1 << 12

#: CSR rows over at least this many columns take the sparse passes (below it a tile's dense sums
#: cost less than renaming the columns; a block's sums travel sparse from the same width).
SPARSE_PASS_MIN_FEATURES = 1 << 16


def wants_sparse_passes(X) -> bool:
    """Whether a pass over ``X`` sums its columns sparsely: CSR rows of at least
    :data:`SPARSE_PASS_MIN_FEATURES` columns."""
    return not isinstance(X, np.ndarray) and X.shape[1] >= SPARSE_PASS_MIN_FEATURES


@dataclass(frozen=True)
class SparseSums:
    """Double-double column sums over ``n_features`` columns, stored for ``columns`` only (ascending;
    every other column's sum is ``(0, 0)``)."""

    columns: np.ndarray
    hi: np.ndarray
    lo: np.ndarray
    n_features: int

    def dense(self) -> DoubleDouble:
        hi, lo = np.zeros(self.n_features), np.zeros(self.n_features)
        hi[self.columns], lo[self.columns] = self.hi, self.lo
        return hi, lo

    def rounded(self) -> np.ndarray:
        """``dd_round`` of :meth:`dense` (a ``(0, 0)`` column rounds to ``0.0``) without the dense pair.

        Columns covering more than 1/16 of the width are written in one sweep in order (the
        zeros between them too): a zeroed array and a scatter of ``hi + lo`` into it fault
        every page and write the width twice (2²⁴ ids, 91% touched: 145 ms against 60).
        Fewer columns are scattered into ``np.zeros``, whose untouched pages are never
        written.  The same ``hi + lo`` either way."""
        if 16 * self.columns.shape[0] <= self.n_features:
            out = np.zeros(self.n_features)
            out[self.columns] = self.hi + self.lo
            return out
        out = np.empty(self.n_features)
        _rounded_into(self.columns, self.hi, self.lo, out)
        return out

    def widened(self, n_features: int) -> "SparseSums":
        """The same sums over ``n_features >= self.n_features`` columns."""
        return SparseSums(self.columns, self.hi, self.lo, int(n_features))

    def nbytes(self) -> int:
        return self.columns.nbytes + self.hi.nbytes + self.lo.nbytes

    def __reduce__(self):
        # pickled (a Spark task's result) with each of hi and lo as its non-zero entries when that
        # is smaller: a column's lo is 0 unless two of its steps added terms, so on hashed ids
        # most are (89% of a 100k-row block's, 200k rows x 40 ids of 2²⁴); columns stay one
        # array object, which pickle writes once for all the block's products
        return _unpacked_sums, (self.columns, packed_values(self.hi), packed_values(self.lo), self.n_features)


@njit(cache=True, nogil=True)
def _rounded_into(columns, hi, lo, out):
    # out[columns[k]] = hi[k] + lo[k] and 0.0 elsewhere, written in order (columns ascending)
    j = 0
    for k in range(columns.shape[0]):
        c = columns[k]
        while j < c:
            out[j] = 0.0
            j += 1
        out[c] = hi[k] + lo[k]
        j = c + 1
    while j < out.shape[0]:
        out[j] = 0.0
        j += 1


def packed_values(values: np.ndarray):
    """``values`` (float64), or ``(size, positions, entries)`` of its entries whose bits are not
    all zero (``-0.0`` is kept) when those take fewer bytes (an int32 position and a float64 each)."""
    nonzero = np.flatnonzero(np.ascontiguousarray(values).view(np.int64))
    if values.shape[0] >= 1 << 31 or 3 * nonzero.shape[0] >= 2 * values.shape[0]:
        return values
    return values.shape[0], nonzero.astype(np.int32), values[nonzero]


def unpacked_values(packed) -> np.ndarray:
    """The float64 array that :func:`packed_values` packed."""
    if isinstance(packed, np.ndarray):
        return packed
    size, positions, entries = packed
    values = np.zeros(size)
    values[positions] = entries
    return values


def _unpacked_sums(columns, hi, lo, n_features) -> SparseSums:
    return SparseSums(columns, unpacked_values(hi), unpacked_values(lo), n_features)


@njit(cache=True, nogil=True)
def _add_at(acc_hi, acc_lo, positions, hi, lo):
    # (acc_hi[p], acc_lo[p]) = dd_add((acc_hi[p], acc_lo[p]), (hi[t], lo[t])) for p = positions[t],
    # dd_add's expressions in its order (exact_sum.dd_add), one column at a time
    for t in range(positions.shape[0]):
        p = positions[t]
        a = acc_hi[p]
        b = hi[t]
        s = a + b
        bb = s - a
        err = (a - (s - bb)) + (b - bb)
        acc_hi[p] = s
        acc_lo[p] = acc_lo[p] + lo[t] + err


@njit(cache=True, nogil=True)
def _add_batch_at(acc_hi, acc_lo, positions, hi, lo, k, first, last):
    # _add_at of every tile (positions[b]; hi/lo[b * k + q] its sums of product q) whose
    # positions fall in [first, last), chunk of columns by chunk: within a chunk product by
    # product, tile after tile, so each column's additions come in tile order (the bits of
    # _add_at tile by tile) while the chunk's accumulators stay in cache.  Returns a sum of
    # the chunks' values read ahead (which keeps that read from being compiled away).
    tiles = len(positions)
    ahead = 0.0
    at = np.empty(tiles, dtype=np.int64)
    end = np.empty(tiles, dtype=np.int64)
    for b in range(tiles):
        at[b] = np.searchsorted(positions[b], first)
    for chunk in range(first, last, _ADD_CHUNK):
        stop = min(chunk + _ADD_CHUNK, last)
        for b in range(tiles):
            cols = positions[b]
            e = at[b]
            while e < cols.shape[0] and cols[e] < stop:
                e += 1
            end[b] = e
        for q in range(k):
            for p in range(chunk, stop, 8):  # a cache line at a time, in order: prefetched
                ahead += acc_hi[q, p] + acc_lo[q, p]
            for b in range(tiles):
                cols, h, low = positions[b], hi[b * k + q], lo[b * k + q]
                for e in range(at[b], end[b]):
                    p = cols[e]
                    a = acc_hi[q, p]
                    x = h[e]
                    s = a + x
                    bb = s - a
                    err = (a - (s - bb)) + (x - bb)
                    acc_hi[q, p] = s
                    acc_lo[q, p] = acc_lo[q, p] + low[e] + err
        for b in range(tiles):
            at[b] = end[b]
    return ahead


@njit(cache=True, nogil=True)
def _union_sums(ca, ha, la, cb, hb, lb):
    # the sorted union of two sparse sums; a column in both is dd_add of the two
    out_c = np.empty(ca.shape[0] + cb.shape[0], dtype=np.int64)
    out_h = np.empty(out_c.shape[0])
    out_l = np.empty(out_c.shape[0])
    i = j = k = 0
    while i < ca.shape[0] or j < cb.shape[0]:
        if j == cb.shape[0] or (i < ca.shape[0] and ca[i] < cb[j]):
            out_c[k], out_h[k], out_l[k] = ca[i], ha[i], la[i]
            i += 1
        elif i == ca.shape[0] or cb[j] < ca[i]:
            out_c[k], out_h[k], out_l[k] = cb[j], hb[j], lb[j]
            j += 1
        else:
            a, b = ha[i], hb[j]
            s = a + b
            bb = s - a
            err = (a - (s - bb)) + (b - bb)
            out_c[k], out_h[k], out_l[k] = ca[i], s, la[i] + lb[j] + err
            i += 1
            j += 1
        k += 1
    return out_c[:k], out_h[:k], out_l[:k]


def add_sparse(a: SparseSums, b: SparseSums) -> SparseSums:
    """``a + b`` as ``dd_add`` of their dense forms would give it (a column in one only keeps its sum)."""
    c, h, lo = _union_sums(np.asarray(a.columns, dtype=np.int64), a.hi, a.lo,
                           np.asarray(b.columns, dtype=np.int64), b.hi, b.lo)
    return SparseSums(c, h, lo, max(a.n_features, b.n_features))


def add_into_dense(dense: DoubleDouble, b: SparseSums) -> DoubleDouble:
    """``dd_add(dense, b.dense())``, in place in ``dense``'s arrays (which must be writable)."""
    hi, lo = dense
    _add_at(hi, lo, np.asarray(b.columns, dtype=np.int64), b.hi, b.lo)
    return hi, lo


def sum_batches(widths: Sequence[int], products: int, minimum: int = 1, block_width: int = 0
                ) -> list[tuple[int, int]]:
    """Runs ``a:b`` of consecutive tiles (of ``widths`` columns each) whose sums of ``products``
    products take about :func:`batch_bytes` (``block_width``: the block's distinct columns), and
    at least ``minimum`` tiles each (the threads that make them) but the last."""
    cuts, held, enough = [0], 0, batch_bytes(products, block_width)
    for t, width in enumerate(widths):
        held += 16 * products * int(width)
        if held >= enough and t + 1 - cuts[-1] >= minimum:
            cuts.append(t + 1)
            held = 0
    if cuts[-1] != len(widths):
        cuts.append(len(widths))
    return list(zip(cuts[:-1], cuts[1:]))


def added_batches(columns: Sequence, products: int, one_tile: Callable, sums_of: Callable,
                  accumulator: "ColumnSums", map_: Callable | None = None, threads: int = 1) -> Iterator[list]:
    """Tiles' column sums batch by batch (:func:`sum_batches`): ``one_tile(k, slot)`` for each tile
    ``k`` of a batch (``slot``: its place in the batch, for :class:`TileSumBuffers`), on ``map_``
    (``ThreadRunner.map``; ``None``: in turn), then the batch's sums (``sums_of`` of each output)
    added into ``accumulator`` in tile order over ``threads`` ranges of columns.  Yields each
    batch's outputs once added.  ``columns``: the tiles' :class:`~.tile_columns.TileColumns`, of
    one block."""
    run = map_ or (lambda f, ks: [f(k) for k in ks])
    block_width = columns[0].block.columns.shape[0]
    for a, b in sum_batches([c.width for c in columns], max(1, products), threads, block_width):
        batch = run(lambda k: one_tile(k, k - a), range(a, b))
        accumulator.add_batch(columns[a:b], [sums_of(out) for out in batch], map_, threads)
        yield batch


class TileSumBuffers:
    """Arrays tiles write their sums into (``tile_columns.tile_products``), one pair per slot (a
    tile's place in its batch), kept from batch to batch and pass to pass.

    Why: a tile of 25k hashed rows sums over ~1M columns, 48 MB of fresh ``hi`` and ``lo`` for
    three products, and fresh pages cost a fault each: allocated per tile, three products'
    column sums took 60 ns an entry, written into kept arrays 29 (25k rows x 40 ids of 2²⁴ a
    tile, one core).  A slot's arrays are the caller's until it takes that slot again; slots may be taken on
    several threads at once.
    """

    def __init__(self):
        self._slots: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def take(self, slot: int, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """C-contiguous ``hi`` and ``lo`` of ``shape`` (products, columns), their values undefined."""
        size = int(shape[0]) * int(shape[1])
        kept = self._slots.get(slot)
        if kept is None or kept[0].shape[0] < size:
            kept = (np.empty(size), np.empty(size))
            self._slots[slot] = kept
        return kept[0][:size].reshape(shape), kept[1][:size].reshape(shape)

    def nbytes(self) -> int:
        return sum(hi.nbytes + lo.nbytes for hi, lo in self._slots.values())


def batch_bytes(products: int, block_width: int) -> int:
    """Bytes of tiles' sums a batch holds before they are added: :data:`SUM_BATCH_BYTES`, or the
    accumulator's own bytes (``products`` double-doubles over ``block_width`` columns) when that
    is more.  Why: each batch sweeps the whole accumulator (read and written), so a batch smaller
    than it costs more in sweeps than in the sums it adds (10M rows x 40 ids of 2²⁴: 800 MB of
    accumulator, 19 GB of tiles' sums a value pass; batches of 256 MB swept it 75 times)."""
    return max(SUM_BATCH_BYTES, 16 * int(products) * int(block_width))


@dataclass(frozen=True)
class BlockColumns:
    """The distinct columns (ascending, int64) of a block's rows, of ``n_features``."""

    columns: np.ndarray
    n_features: int


class ColumnSums:
    """The double-double sums of ``k`` products over a block's distinct columns, to which tiles'
    sums are added (:meth:`add`) in the caller's order; ``k`` is set by the first addition.

    ``workspace``: a dict in which the arrays are kept for the next pass over the same block
    (the caller's, who must be done with :meth:`sums` by then).  Why: the block touches up to
    ``n`` columns (2²⁴ hashed ids: ~15M at 1M rows, 0.7 GB for three products), and fresh
    pages cost a fault each, 0.2-1 s a pass on this machine, where zeroing kept ones costs
    a sequential write.
    """

    def __init__(self, block: BlockColumns, workspace: dict | None = None):
        self.block = block  # every tile added must be one of this block's
        self.workspace = workspace
        self.hi: np.ndarray | None = None
        self.lo: np.ndarray | None = None

    def _arrays(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        # the workspace holds one block's arrays for the most products a pass has asked for
        kept = None if self.workspace is None else self.workspace.get("sums")
        if kept is None or kept[2] is not self.block or kept[0].shape[0] < k:
            kept = (np.zeros((k, self.block.columns.shape[0])), np.zeros((k, self.block.columns.shape[0])), self.block)
            if self.workspace is not None:
                self.workspace["sums"] = kept
            return kept[0], kept[1]
        hi, lo = kept[0][:k], kept[1][:k]
        hi.fill(0.0)
        lo.fill(0.0)
        return hi, lo

    def add(self, columns, sums: list[DoubleDouble]) -> None:
        """Add a tile's sums over its columns (``columns.positions``: their places among the block's)."""
        if self.hi is None:
            self.hi, self.lo = self._arrays(len(sums))
        for q, (hi, lo) in enumerate(sums):
            _add_at(self.hi[q], self.lo[q], columns.positions, hi, lo)

    def add_batch(self, columns: Sequence, sums: Sequence[list[DoubleDouble] | None],
                  map_ranges: Callable | None = None, parts: int = 1) -> None:
        """Add several tiles' sums (``None``: a tile without any) in one sweep, with the bits of
        :meth:`add` tile after tile: each column's additions in tile order.  ``map_ranges``
        (``ThreadRunner.map``, say) runs the sweep over ``parts`` ranges of columns at once."""
        kept = [(c, s) for c, s in zip(columns, sums) if s is not None]
        if not kept:
            return
        k = len(kept[0][1])
        if self.hi is None:
            self.hi, self.lo = self._arrays(k)
        positions = List([np.asarray(c.positions) for c, _ in kept])
        his = List([np.ascontiguousarray(h) for _, s in kept for h, _ in s])
        los = List([np.ascontiguousarray(lo) for _, s in kept for _, lo in s])
        width = self.block.columns.shape[0]
        cuts = np.linspace(0, width, max(1, min(parts, width)) + 1).astype(np.int64).tolist()
        ranges = list(zip(cuts[:-1], cuts[1:]))
        sweep = lambda r: _add_batch_at(self.hi, self.lo, positions, his, los, k, r[0], r[1])  # noqa: E731
        list(map(sweep, ranges)) if map_ranges is None else map_ranges(sweep, ranges)

    def sums(self) -> list[SparseSums] | None:
        """One :class:`SparseSums` per product (``None`` when nothing was added)."""
        if self.hi is None:
            return None
        return [SparseSums(self.block.columns, self.hi[q], self.lo[q], self.block.n_features)
                for q in range(self.hi.shape[0])]
