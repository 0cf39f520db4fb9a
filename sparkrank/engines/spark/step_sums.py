"""Driver and range placement: the blocks' ``Xᵀc`` where blocks cut one ranking's steps.

In driver and range placement the blocks are row ranges of one ranking (or of queries cut
anywhere), so a block's first and last rows may belong to a step of ``Xᵀc`` (``exact_sum``'s
convention: :data:`~sparkrank.numerics.simd.DD_ROWS` rows from each query's first row) that the
next block shares.  A block sums its whole steps and keeps the terms of the rows of the steps it
cuts (:mod:`sparkrank.numerics.cut_steps`): one :class:`SteppedSums` per product.  They are added
up like any pass's column sums, by ``treeAggregate`` or by the column-sliced merge
(:data:`STEPPED_SUMS`, :mod:`.column_merge`: each slice gets its columns of the cut steps too),
and :func:`rounded_stepped` adds the cut steps before it rounds: the one sweep's bits wherever
the blocks begin.

Wide CSR rows (hashed features) sum their whole steps column by column, tile by tile over each
tile's own columns (:func:`~sparkrank.numerics.tile_columns.tile_products`; tiles cut where no
step crosses, kept beside the block, :func:`~.tile_files.step_tiles`), so a pass costs O(the
block's entries) and its sums travel sparse when they may, as an executor pass's do; the cut
rows' terms are their stored entries'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...io.spark.worker import worker_task
from ...numerics.cut_steps import CutSteps, add_cut_steps, cut_terms
from ...numerics.exact_sum import rmatvec_dd_products, split_steps, step_boundary, step_starts
from ...numerics.sparse_sums import ColumnSums, SparseSums, TileSumBuffers, added_batches, wants_sparse_passes
from ...numerics.tile_columns import tile_products
from ..tiles import step_bounds, tile_steps
from .column_merge import SumLayout, unwired, wired_piece
from .store import open_block
from .tasks import add_dd, entrywise, padded_sums, rounded_sums
from .tile_files import step_tiles


@dataclass(frozen=True)
class SteppedSums:
    """One product's column sums over ``n_features`` columns: ``sums``, the double-double
    (dense, :class:`~sparkrank.numerics.sparse_sums.SparseSums` or ``None``) of whole steps,
    and ``cut``, the terms of the rows of steps that blocks cut."""

    sums: Any
    cut: CutSteps
    n_features: int


def step_plans(refs, row_start: dict[int, int], offsets: np.ndarray | None) -> dict:
    """Each partition's ``(head, tail, step origins, first step)`` of ``Xᵀc`` for
    :func:`block_products` (``offsets``: where the queries start in block order; ``None``: one
    ranking): :func:`~sparkrank.numerics.exact_sum.split_steps` relative to the block, the step
    origins of its rows ``head:tail`` (relative to ``head``), and the global first row of the step
    its first rows finish."""
    plans = {}
    for r in refs:
        a = row_start[r.partition]
        head, tail = split_steps(offsets, a, a + r.n_rows)
        plans[r.partition] = (head - a, tail - a, step_starts(offsets, head, tail), step_boundary(offsets, a))
    return plans


def driver_products_task(coef_bcs, products: tuple[tuple[int, int], ...], row_start: dict[int, int],
                         n_features: int, plans_bc):
    """Driver placement, second half of a pass: for each ``(k, power)`` of ``products``, with this
    partition's slice of the broadcast coefficient vector ``c = coef_bcs[k]``, ``Xᵀc`` (power 1)
    or ``(X∘X)ᵀc`` (power 2) from one sweep over the block (one job for every product of a pass),
    as :func:`block_products` (``plans_bc``: the broadcast :func:`step_plans`)."""

    def task(refs):
        coefs = [bc.value for bc in coef_bcs]
        plans = plans_bc.value
        for ref in refs:
            if ref.n_rows:
                block = open_block(ref.path, ref.width)
                start = row_start[ref.partition]
                wanted = [(coefs[k][start: start + ref.n_rows], p) for k, p in products]
                yield block_products(block, ref, start, wanted, plans[ref.partition], n_features)

    return worker_task(task)


def block_products(block, ref, start: int, wanted: list[tuple[np.ndarray, int]], plan, n_features: int
                   ) -> list[SteppedSums]:
    """One block's :class:`SteppedSums` of the products ``wanted`` (``(c, power)`` of its rows)
    with ``plan`` (:func:`step_plans`); ``start``: its first row's global index."""
    if not wanted:
        return []
    head, tail, starts, first_step = plan
    n_rows = int(ref.n_rows)
    X = block.X
    cut = [*range(head), *range(tail, n_rows)]
    keys = [first_step] * head + [start + tail] * (n_rows - tail)
    if wants_sparse_passes(X):
        # the cut rows' coefficients zeroed: no term of theirs in the whole steps' sums
        inside = np.zeros(n_rows, dtype=bool)
        inside[head:tail] = True
        origins = np.unique(np.concatenate([[0, head], head + np.asarray(starts, dtype=np.int64), [tail, n_rows]]))
        sums = tiled_products(ref.path, block, [(np.where(inside, c, 0.0), p) for c, p in wanted], origins)
    else:
        sums = rmatvec_dd_products(X, wanted, (head, tail), starts)
    rows = np.asarray(cut, dtype=np.int64)
    return [SteppedSums(padded_sums(dd, n_features), cut_terms(X, rows, keys, rows + start, c, p), n_features)
            for dd, (c, p) in zip(sums, wanted)]


def tiled_products(path: str, block, products: list[tuple[np.ndarray, int]], origins: np.ndarray,
                   tile_bytes: int | None = None) -> list[SparseSums]:
    """``rmatvec_dd_products`` of a block of wide CSR rows with the step ``origins`` (relative to
    the block, from 0 to its rows), tile by tile over each tile's own columns and added into one
    accumulator over the block's in tile order, as an executor pass's tiles are (:func:`step_bounds`,
    :func:`~.tile_files.step_tiles`; the rounded sums of one sweep)."""
    X = block.X
    tiles = step_tiles(path, block, step_bounds(X, origins, tile_bytes))
    accumulator, buffers = ColumnSums(tiles[0].columns.block), TileSumBuffers()

    def one_tile(k: int, slot: int):
        t = tiles[k]
        return tile_products(t.columns, [(c[t.start:t.stop], p) for c, p in products],
                             tile_steps(origins, t.start, t.stop), buffers, slot)

    for _ in added_batches([t.columns for t in tiles], len(products), one_tile, lambda sums: sums, accumulator):
        pass
    return accumulator.sums()


def add_stepped(a: Any, b: Any):
    """Two :class:`SteppedSums` added (``None``: nothing yet): sums by :func:`~.tasks.add_dd`, cut
    steps' rows gathered."""
    if a is None:
        return b
    if b is None:
        return a
    return SteppedSums(add_dd(a.sums, b.sums), a.cut.joined(b.cut), max(a.n_features, b.n_features))


#: ``treeAggregate`` combiner for lists of :class:`SteppedSums`, added entry by entry.
add_stepped_lists = entrywise(add_stepped)


def rounded_stepped(s) -> np.ndarray:
    """``s``'s sums with its cut steps added (:func:`~sparkrank.numerics.cut_steps.add_cut_steps`),
    rounded to float64; a float64 vector is already that (the column-sliced merge's)."""
    if isinstance(s, np.ndarray):
        return s
    out = np.zeros(s.n_features) if s.sums is None else rounded_sums(s.sums)  # a fresh vector
    if s.cut.n_rows == 0:
        return out
    touched = s.cut.touched()
    hi, lo = _at_columns(s.sums, touched)
    add_cut_steps(hi, lo, np.searchsorted(touched, s.cut.columns), s.cut)
    out[touched] = hi + lo
    return out


def _at_columns(sums, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the double-double ``sums`` (dense, sparse or ``None``) at ``columns``."""
    if sums is None:
        return np.zeros(columns.shape[0]), np.zeros(columns.shape[0])
    if not isinstance(sums, SparseSums):
        return np.array(sums[0][columns]), np.array(sums[1][columns])
    hi, lo = np.zeros(columns.shape[0]), np.zeros(columns.shape[0])
    if sums.columns.shape[0]:
        at = np.minimum(np.searchsorted(sums.columns, columns), sums.columns.shape[0] - 1)
        found = sums.columns[at] == columns
        hi[found], lo[found] = sums.hi[at[found]], sums.lo[at[found]]
    return hi, lo


def _piece(s: SteppedSums, first: int, end: int) -> SteppedSums:
    return SteppedSums(None if s.sums is None else wired_piece(s.sums, first, end), s.cut.columns_in(first, end),
                       end - first)


def _unpiece(p: SteppedSums) -> SteppedSums:
    return SteppedSums(None if p.sums is None else unwired(p.sums), p.cut, p.n_features)


#: Where :func:`driver_products_task`'s outputs (a list of :class:`SteppedSums`) keep their column
#: sums (:mod:`.column_merge`); each slice rounds with its columns' cut steps added.
STEPPED_SUMS = SumLayout(add_stepped_lists, lambda o: (None, list(o)), lambda rest, sums: sums, add_stepped,
                         rounded_stepped, _piece, _unpiece)
