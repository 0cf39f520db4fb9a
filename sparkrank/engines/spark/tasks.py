"""Executor side: the tasks of a pass over the blocks of :mod:`.store` and their combiners.

A pass over a block is the in-process engine's fused pass (``engines/tiles.py``): the block's
groups cut into tiles of ~8 MB, each tile's ``X·w``, kernel and ``Xᵀc`` while it is in cache.
Sums travel as double-doubles (dense, or :class:`SparseSums` when wide and mostly zero) and are
added by ``treeAggregate`` with the combiners here, in any order to the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ...data import memory
from ...io.spark.worker import worker_task
from ...numerics.exact_sum import DoubleDouble, dd_add, dd_round
from ...numerics.linalg import matvec
from ...numerics.sparse_sums import SparseSums, add_into_dense, add_sparse
from ..tiles import fused_pass, stats_sum
from .column_merge import SumLayout
from .kernel_state import MissingStates, drop_states, read_state, replay_state, write_state
from .store import open_block
from .tile_files import block_tiles

@dataclass(frozen=True)
class InlineValue:
    """A small value shipped inside a task, with the ``.value`` of a broadcast (see
    ``SparkEngine._broadcast``)."""

    value: Any


def executor_pass_task(w_bc, kernel, n_features: int, in_state: int | None, out_state: int | None,
                       released: tuple[int, ...], recipe_bc=None, tile_bytes: int | None = None):
    """Executor mode: the fused pass over this block's tiles (``X·w``, the kernel on each
    tile's groups, ``Xᵀc``; ``engines/tiles.py``); keeps the tiles' states on disk.  ``w_bc``
    is the vector's broadcast or :class:`InlineValue` (read through ``.value``).

    A missing input state yields :class:`MissingStates` (no task failure, so Spark does not
    retry in vain) unless ``recipe_bc`` (a broadcast :class:`StateRecipe`) is given; then it
    is recomputed.
    """

    def task(refs) -> Iterator[Any]:
        w = w_bc.value
        for ref in refs:
            if ref.n_rows == 0:
                continue
            block = open_block(ref.path, ref.width)
            tiles = block_tiles(ref.path, block, kernel, tile_bytes)
            drop_states(ref.path, released)
            states = None
            if in_state is not None:
                states = read_state(ref.path, in_state)
                if states is None:
                    if recipe_bc is None:
                        yield MissingStates(frozenset([ref.partition]))
                        continue
                    states = replay_state(block, tiles, ref, recipe_bc.value)
            results, (grad,), moments = fused_pass(block.X, tiles, w[: ref.width], kernel, states, (1,),
                                                   np.empty(ref.n_rows, dtype=np.float64))
            if out_state is not None:
                write_state(ref.path, out_state, [r.state for r in results])
            grad = None if grad is None else padded_sums(grad, n_features)
            moments = None if moments is None else [padded_sums(m, n_features) for m in moments]
            yield stats_sum(results), grad, np.array([ref.n_rows, ref.n_groups]), moments

    return worker_task(task)


def scores_task(w_bc):
    """Driver mode, first half: each partition's scores ``X·w`` tagged with its index."""

    def task(refs):
        w = w_bc.value
        for ref in refs:
            if ref.n_rows:
                yield ref.partition, matvec(open_block(ref.path, ref.width).X, w[: ref.width])

    return worker_task(task)


def column_moments_task(w_bc, kernel, n_features: int, tile_bytes: int | None = None):
    """Executor mode: ``(stats, Xᵀc, (X∘X)ᵀc, [rows, groups])`` of each block from the fused pass
    over its tiles at ``X·w``, as double-doubles (no kernel state)."""

    def task(refs):
        for ref in refs:
            if ref.n_rows == 0:
                continue
            block = open_block(ref.path, ref.width)
            results, (first, second), _ = fused_pass(block.X, block_tiles(ref.path, block, kernel, tile_bytes),
                                                  w_bc.value[: ref.width], kernel, None, (1, 2),
                                                  np.empty(ref.n_rows, dtype=np.float64))
            yield (stats_sum(results), padded_sums(first, n_features), padded_sums(second, n_features),
                   np.array([ref.n_rows, ref.n_groups]))

    return worker_task(task)


def add_moments(a: Any, b: Any):
    """``treeAggregate`` combiner for :func:`column_moments_task` tuples."""
    if a is None:
        return b
    if b is None:
        return a
    return add_dd(a[0], b[0]), add_dd(a[1], b[1]), add_dd(a[2], b[2]), a[3] + b[3]


def labels_task():
    """Driver mode set-up: each partition's labels and group ids, tagged with its index."""

    def task(refs):
        for ref in refs:
            if ref.n_rows:
                b = open_block(ref.path, ref.width)
                sizes = np.diff(b.groups.offsets)
                qid_rows = None if b.qids is None else np.repeat(b.qids, sizes)
                weights = None
                if b.groups.weighted:  # row weights, and group weights per row
                    weights = (np.array(b.groups.row_weights), np.repeat(b.groups.group_weights, sizes))
                yield ref.partition, np.array(b.groups.labels), qid_rows, weights

    return worker_task(task)


def digest_task(plans: dict[int, dict] | None):
    """Each block's :func:`~sparkrank.data.digest.block_digest` ``(digest, pieces)``; ``plans``: per
    partition where its rows start and end in their queries (driver placement), else ``None``."""
    from ...data.digest import block_digest, group_keys

    def task(refs):
        for ref in refs:
            if ref.n_rows:
                b = open_block(ref.path, ref.width)
                g = b.groups
                yield block_digest(b.X, g.labels, g.offsets, group_keys(b.qids, g.n_groups),
                                   row_weights=g.row_weights, group_weights=g.group_weights,
                                   **(plans[ref.partition] if plans else {}))

    return worker_task(task)


#: A block's column sums over at least this many features travel as their non-zero columns
#: when those are at most a quarter of them (:class:`SparseSums`; the memory model's bound too).
SPARSE_SUMS_MIN_FEATURES = memory.SPARSE_SUMS_MIN_FEATURES


def padded_sums(dd: DoubleDouble | SparseSums, n_features: int):
    """A block's double-double column sums (its width) over ``n_features`` columns: padded with
    zeros, or as :class:`SparseSums` when they are wide and mostly zero.

    Why sparse: a task's result travels through the JVM, and dense sums cost 16 bytes per feature
    per product whatever the block holds: one SVMlight row with feature 4,000,000 made every pass
    ship ~200 MB per block and ran the local driver's JVM out of heap.  Adding only the non-zero
    columns gives the dense sum's bits (:mod:`sparkrank.numerics.sparse_sums`)."""
    if isinstance(dd, SparseSums):  # a sparse pass's sums over the block's columns
        if n_features >= SPARSE_SUMS_MIN_FEATURES and 4 * dd.columns.shape[0] <= n_features:
            return dd.widened(n_features)
        dd = dd.dense()
    hi, lo = dd
    if n_features >= SPARSE_SUMS_MIN_FEATURES:
        columns = np.flatnonzero((hi != 0) | (lo != 0))
        if 4 * columns.shape[0] <= n_features:
            return SparseSums(columns, hi[columns], lo[columns], n_features)
    pad = n_features - hi.shape[0]
    return np.pad(hi, (0, pad)), np.pad(lo, (0, pad))


def rounded_sums(dd) -> np.ndarray:
    """``dd_round(dense_sums(dd))`` without the dense double-double of a :class:`SparseSums`; a
    float64 vector is already rounded (the column-sliced merge rounds on the executors)."""
    if isinstance(dd, np.ndarray):
        return dd
    return dd.rounded() if isinstance(dd, SparseSums) else dd_round(dd)


def dense_sums(dd):
    """``dd`` as dense double-doubles (a :class:`SparseSums` expanded; ``None`` stays ``None``)."""
    return dd.dense() if isinstance(dd, SparseSums) else dd


def add_dd(a: Any, b: Any):
    """``treeAggregate`` combiner for double-doubles, dense or :class:`SparseSums` (``None`` =
    nothing yet).  Two sparse ones add up sparse while their columns together are at most two
    thirds of all (:func:`stays_sparse`), else into dense arrays."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, SparseSums):
        a, b = b, a  # dd_add is symmetric: the same bits either way
    if not isinstance(b, SparseSums):
        return dd_add(a, b)
    if isinstance(a, SparseSums):
        return add_sparse(a, b) if stays_sparse(a, b) else add_into_dense(a.dense(), b)
    return add_into_dense(tuple(np.array(x) for x in a), b)


def stays_sparse(a: SparseSums, b: SparseSums) -> bool:
    """Whether ``a + b`` is kept sparse: while their columns together are at most two thirds of
    the features, their union (an int64 index and a double-double, 24 bytes a column, in arrays
    of both sizes) takes no more room than the dense pair (16 bytes a feature).  Why not dense
    sooner: the dense pair's fresh pages cost more than the merge (two blocks' three products
    over 2²⁴ hashed ids, 3.5M columns each, on the driver: 2.2 s of CPU to make them dense, 0.34 s
    to merge); the final rounding of a sparse sum (:func:`rounded_sums`) needs no dense pair."""
    return 3 * (a.columns.shape[0] + b.columns.shape[0]) <= 2 * max(a.n_features, b.n_features)


def entrywise(add: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A ``treeAggregate`` combiner for lists added entry by entry with ``add`` (``None`` = nothing yet)."""

    def combine(a: Any, b: Any):
        if a is None:
            return b
        if b is None:
            return a
        return [add(x, y) for x, y in zip(a, b)]

    return combine


#: ``treeAggregate`` combiner for lists of double-doubles, added entry by entry.
add_dd_lists = entrywise(add_dd)


def add_pair(a: Any, b: Any):
    """``treeAggregate`` combiner for ``(stats, gradient, [rows, groups], moments)`` of executor passes.

    ``stats`` and ``gradient`` are double-doubles, ``moments`` ``None`` or two double-doubles
    (``Xᵀa``, ``(X∘X)ᵀa``); the counts are what the tasks processed.  :class:`MissingStates`
    absorbs results (the pass is redone) and merges with its kind.
    """
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, MissingStates) or isinstance(b, MissingStates):
        parts = [x.partitions for x in (a, b) if isinstance(x, MissingStates)]
        return MissingStates(frozenset().union(*parts))
    moments = add_dd_lists(a[3], b[3])
    return add_dd(a[0], b[0]), add_dd(a[1], b[1]), a[2] + b[2], moments


def _take_pass_sums(output):
    if isinstance(output, MissingStates):
        return output, []
    stats, grad, counts, moments = output
    return (stats, None, counts, None), [grad, *(moments or [])]


def _put_pass_sums(rest, sums):
    stats, _, counts, _ = rest
    return stats, sums[0] if sums else None, counts, list(sums[1:]) or None


#: Where :func:`executor_pass_task`'s, :func:`column_moments_task`'s and :func:`centred_squares_task`'s
#: outputs keep their column sums (:mod:`.column_merge`).
PASS_SUMS = SumLayout(add_pair, _take_pass_sums, _put_pass_sums, add_dd, rounded_sums)
MOMENT_SUMS = SumLayout(add_moments, lambda o: ((o[0], None, None, o[3]), [o[1], o[2]]),
                        lambda rest, sums: (rest[0], sums[0], sums[1], rest[3]), add_dd, rounded_sums)
COLUMN_SUMS = SumLayout(add_dd, lambda o: (None, [o]), lambda rest, sums: sums[0], add_dd, rounded_sums)


def column_totals_task():
    """The first pass of the feature statistics: each block's
    :class:`~sparkrank.engines.base.ColumnTotals` over its own width (padded as they are added up by
    ``treeAggregate``, :func:`add_totals`)."""
    from ..base import ColumnTotals

    def task(refs):
        for ref in refs:
            if ref.n_rows:
                yield ColumnTotals.of_rows(open_block(ref.path, ref.width).X, ref.width)

    return worker_task(task)


def add_totals(a: Any, b: Any):
    """``treeAggregate`` combiner for :class:`~sparkrank.engines.base.ColumnTotals` (any order: the same bits)."""
    if a is None:
        return b
    return a.add(b)


def centred_squares_task(mean_bc, n_features: int):
    """The second pass of the feature statistics: each block's exact sums of ``(x − mean)²`` over
    its non-zero entries (``mean_bc``: the means' broadcast; added up by :func:`add_dd`)."""
    from ...numerics.exact_sum import column_sums_dd

    def task(refs):
        mean = mean_bc.value
        for ref in refs:
            if ref.n_rows:
                yield padded_sums(column_sums_dd(open_block(ref.path, ref.width).X, ref.width, mean[: ref.width])[0],
                              n_features)

    return worker_task(task)
