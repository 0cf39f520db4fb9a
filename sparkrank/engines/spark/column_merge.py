"""The column-sliced merge: a pass's wide column sums added up on the executors, slice by slice.

Why: ``treeAggregate`` brings every task's column sums to the driver (at depth 2, the sums of
groups of about √P tasks), and on hashed features each is as wide as the feature space: a block
of 500k rows with 40 ids out of 2²⁴ touches ~70% of the columns, so one value pass's three
double-double products are ~800 MB a block.  At 1M rows on ``local[2]`` the driver received
1.6 GB a value pass, its JVM grew to 11 GB, and shipping was ~18 of the pass's 22 s (the tasks'
own work: 3.7 s).  Here each task cuts its (already added) sums into chunks of
:data:`CHUNK_COLUMNS` columns; a shuffle brings each chunk from every task to the task of its
slice (chunk ``k`` to slice ``k mod slices``), which adds and rounds them; the driver receives
each column once, whatever the number of blocks.  The engine takes this way only where
``treeAggregate`` would send the driver more (``building.merge_slices``).

Why the bits are those of ``treeAggregate``: the pieces are double-doubles added with
:func:`~sparkrank.engines.spark.tasks.add_dd`, whose rounded result does not depend on the order of
the additions (``numerics/exact_sum.py``), and rounding a slice is rounding its columns.

A pass's output has a :class:`SumLayout`: which of its parts are column sums, and how the rest (loss
statistics, counts, a :class:`~sparkrank.engines.spark.kernel_state.MissingStates`) is combined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...data.memory import PARTIAL_FEATURE_BYTES
from ...io.spark.worker import worker_task
from ...numerics.sparse_sums import SparseSums, packed_values, unpacked_values
from .kernel_state import MissingStates

#: Columns of one record of a task's pieces (a slice holds at least one): sums travel as records
#: of ~1 MB an array, as PySpark's own batches do.  Why: records of hundreds of MB cost the JVM
#: more per byte (2 tasks' 4 arrays of 2²⁴ float64 each through a shuffle on ``local[2]``: 6.8 s
#: in two records a task, 4.8 s in 64).
CHUNK_COLUMNS = 1 << 17


@dataclass(frozen=True)
class SumLayout:
    """Where a pass's output keeps its column sums.

    ``take(output) -> (rest, sums)``: the output without its column sums (``None`` in their
    place) and the list of them (each a double-double ``(hi, lo)``, a
    :class:`~sparkrank.numerics.sparse_sums.SparseSums` or ``None``); ``put(rest, sums)`` the
    inverse; ``combine`` adds two outputs (``None``: nothing yet), as ``treeAggregate`` would;
    ``add`` adds two column sums and ``rounded`` rounds one to a float64 vector (the combiners'
    own, :mod:`.tasks`).  ``piece(sums, first, end)``: columns ``first:end`` of a column sum as
    they travel, ``unpiece`` that piece back as ``add`` takes it (default: a double-double's or
    :class:`SparseSums`' own, :func:`wired_piece` and :func:`unwired`)."""

    combine: Callable[[Any, Any], Any]
    take: Callable[[Any], tuple[Any, list]]
    put: Callable[[Any, list], Any]
    add: Callable[[Any, Any], Any]
    rounded: Callable[[Any], np.ndarray]
    piece: Callable[[Any, int, int], Any] | None = None
    unpiece: Callable[[Any], Any] | None = None

    def piece_of(self, sums, first: int, end: int):
        return (self.piece or wired_piece)(sums, first, end)

    def unpiece_of(self, piece):
        return (self.unpiece or unwired)(piece)


def slice_count(n_features: int, parallelism: int, worker_bytes: int | None = None) -> int:
    """Slices of a column-sliced merge: one per core of the cluster (``parallelism``), or a multiple
    of that where a slice's sums and a task's piece of them (double-double products,
    :data:`~sparkrank.data.memory.PARTIAL_FEATURE_BYTES` a column each) would take more than a
    quarter of a Python worker's ``worker_bytes``; at most one a chunk (:data:`CHUNK_COLUMNS`)."""
    cores = max(int(parallelism), 1)
    wanted = cores
    if worker_bytes:
        wanted = max(cores, -(-8 * PARTIAL_FEATURE_BYTES * int(n_features) // int(worker_bytes)))
    return max(1, min(-(-wanted // cores) * cores, -(-int(n_features) // CHUNK_COLUMNS)))


def slice_bounds(n_features: int, n_slices: int) -> np.ndarray:
    """The first column of each of ``n_slices`` even slices of the columns, and the width."""
    return np.linspace(0, n_features, n_slices + 1).astype(np.int64)


def column_merged(outputs, layout: SumLayout, n_features: int, n_slices: int, rounded: bool):
    """The sum of an RDD of pass outputs (as ``outputs.treeAggregate(None, layout.combine, ...)``),
    its column sums added slice by slice on the executors (module docstring); ``None`` when no task
    gave an output.  ``rounded``: the sums come back as float64 vectors (``dd_round`` of the
    double-double, done by the slices' tasks), else as dense double-doubles."""
    bounds = slice_bounds(n_features, -(-n_features // CHUNK_COLUMNS))
    parts = outputs.mapPartitions(_split_task(layout, bounds)) \
        .partitionBy(n_slices, lambda key: key % n_slices) \
        .mapPartitions(_merge_task(layout, bounds.shape[0] - 1, rounded)).collect()
    return merged_result(parts, layout, bounds, rounded)


def merged_result(parts: list, layout: SumLayout, bounds: np.ndarray, rounded: bool):
    """The driver's half of :func:`column_merged`: the records of the slices' tasks (a rest under
    the key ``len(bounds) - 1``, each chunk's sums under its index) put together."""
    n_chunks = bounds.shape[0] - 1
    rests = [value for key, value in parts if key == n_chunks]
    if not rests:
        return None
    rest = rests[0]  # one record: the slice that the rest's key falls in combined every task's
    if isinstance(rest, MissingStates):
        return rest
    slices = {key: value for key, value in parts if key < n_chunks}
    return layout.put(rest, _assembled(slices, bounds, rounded))


def _split_task(layout: SumLayout, bounds: np.ndarray):
    """Map side: a task's outputs added (``layout.combine``), then sent as the rest (key
    ``n_chunks``) and one record of pieces per chunk of columns (key: its index)."""
    n_chunks = bounds.shape[0] - 1

    def task(outputs):
        total = None
        for output in outputs:
            total = layout.combine(total, output)
        if total is None:
            return
        rest, sums = layout.take(total)
        yield n_chunks, rest
        if not sums:
            return
        for k in range(n_chunks):
            yield k, [None if s is None else layout.piece_of(s, int(bounds[k]), int(bounds[k + 1])) for s in sums]

    return worker_task(task)


def _merge_task(layout: SumLayout, n_chunks: int, rounded: bool):
    """Reduce side: the rest's records combined (key ``n_chunks``); each chunk's pieces added,
    then rounded when asked, and sent on packed (:func:`_wire`)."""

    def task(records):
        rest, has_rest, slices = None, False, {}
        for key, value in records:
            if key == n_chunks:
                rest, has_rest = layout.combine(rest, value), True
                continue
            pieces = [None if p is None else layout.unpiece_of(p) for p in value]
            held = slices.get(key)
            slices[key] = pieces if held is None else [layout.add(a, b) for a, b in zip(held, pieces)]
        if has_rest:
            yield n_chunks, rest
        for key, pieces in slices.items():
            yield key, [None if p is None else packed_values(layout.rounded(p)) if rounded else _wire(p)
                        for p in pieces]

    return worker_task(task)


def wired_piece(sums, first: int, end: int):
    """Columns ``first:end`` of a double-double or :class:`SparseSums` as they travel (:func:`_wire`)."""
    return _wire(_piece(sums, first, end))


def _piece(sums, first: int, end: int):
    """Columns ``first:end`` of a double-double or :class:`SparseSums` (over the slice's own columns)."""
    if isinstance(sums, SparseSums):
        a, b = np.searchsorted(sums.columns, (first, end))
        return SparseSums(sums.columns[a:b] - first, sums.hi[a:b], sums.lo[a:b], end - first)
    hi, lo = sums
    return hi[first:end], lo[first:end]


def _wire(piece):
    """A piece as it travels: a :class:`SparseSums` as it is (it pickles packed), a dense pair as
    ``(hi, lo)`` each :func:`packed_values` (on hashed ids most columns' ``lo`` is zero: a column
    one step touched has no rounding error)."""
    if isinstance(piece, SparseSums):
        return piece
    return _DensePiece(packed_values(piece[0]), packed_values(piece[1]))


@dataclass(frozen=True)
class _DensePiece:
    hi: Any
    lo: Any


def unwired(piece):
    """A piece as :func:`wired_piece` sent it, back as a double-double or :class:`SparseSums`."""
    if isinstance(piece, _DensePiece):
        return unpacked_values(piece.hi), unpacked_values(piece.lo)
    return piece


def _assembled(slices: dict[int, list], bounds: np.ndarray, rounded: bool) -> list:
    """The slices' pieces put together: per sum, a float64 vector (``rounded``), a dense
    double-double, or ``None`` where every task had none."""
    if not slices:
        return []
    n = int(bounds[-1])
    out = []
    for i in range(len(next(iter(slices.values())))):
        pieces = {k: v[i] for k, v in slices.items() if v[i] is not None}
        if not pieces:
            out.append(None)
            continue
        whole = np.zeros(n) if rounded else (np.zeros(n), np.zeros(n))
        for k, piece in pieces.items():
            a, b = int(bounds[k]), int(bounds[k + 1])
            if rounded:
                whole[a:b] = unpacked_values(piece)
                continue
            piece = unwired(piece)
            hi, lo = piece.dense() if isinstance(piece, SparseSums) else piece
            whole[0][a:b], whole[1][a:b] = hi, lo
        out.append(whole)
    return out
