"""Tiles of whole query groups, and the fused pass over them that both engines run.

A tile is a run of whole groups holding about :data:`TILE_BYTES` of ``X``.  A pass computes a
tile's ``X·v``, its groups' score-space kernel and its ``Xᵀc`` (one product per power) back
to back while the tile's rows are still in the last-level cache, so ``X`` is read from memory
once per pass instead of once per product: on two cores the memory, not the arithmetic, is
the limit of a separate ``X·v`` and ``Xᵀc``.  The in-process engine runs runs of tiles on its
threads (:mod:`sparkrank.engines.local`); a Spark executor runs the tiles of its block
(:mod:`sparkrank.engines.spark.store`).  A kernel with a compiled group form (TRON's Hessian product)
runs group by group inside one compiled loop instead (:mod:`sparkrank.engines.group_passes`),
so its pass reads ``X`` from memory once even where the last-level cache is no faster than
memory.

Why the tiles change no bit of a model: each row's score is its own sum (the same over any row
range); the kernels' statistics and every ``Xᵀc`` partial are double-doubles
(:mod:`sparkrank.numerics.exact_sum`), added tile after tile and rounded once by the caller,
as blocks are on Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce
from typing import Callable, Sequence

import numpy as np

from ..data.groups import QueryGroups
from ..kernels.base import KernelResult, ScoreKernel
from ..numerics.exact_sum import DoubleDouble, dd_add, rmatvec_dd_products
from ..numerics.linalg import matvec
from ..numerics.simd import DD_ROWS
from ..numerics.sparse_sums import ColumnSums, TileSumBuffers, added_batches, wants_sparse_passes
from ..numerics.tile_columns import TileColumns, tile_columns, tile_products
from .group_passes import group_pass, runs_group_form
from .threads import balanced_cuts

#: Bytes of ``X`` in a tile: small enough that the rows are still in the last-level cache when
#: ``Xᵀc`` reads them right after ``X·v`` and the kernel, large enough that a tile's few Python
#: calls cost nothing next to its arithmetic (300k x 136 float64 rows on 2 cores, a TRON fit:
#: 2 MB tiles 2.0 s, 8-24 MB 1.7 s, one tile per thread 2.5 s).
TILE_BYTES = 8 << 20


#: A tile of whole groups of over this many :data:`TILE_BYTES` (a group larger than a tile: one
#: global ranking) is too large for one thread's fused pass: the in-process engine runs its kernel
#: first, then sums its columns in parts of about a tile each (:func:`step_bounds`; sparse rows)
#: or over row chunks (dense rows).
SPLIT_TILES = 2


@dataclass(frozen=True)
class Tile:
    """Groups ``groups`` (self-contained, offsets from 0) = rows ``start:stop`` of ``X``; for the
    sparse passes (:mod:`sparkrank.numerics.sparse_sums`) its rows column by column.  ``groups``
    ``None``: rows for column sums only (Spark's ``step_sums.py``, a tile's ``parts``).
    ``parts``: a tile too large to sum in one, cut where no step of ``Xᵀc`` crosses, each part
    with its ``columns`` (the tile's own are then ``None``)."""

    groups: QueryGroups | None
    start: int
    stop: int
    columns: TileColumns | None = None
    parts: tuple["Tile", ...] | None = None


def bytes_at_groups(X, offsets: np.ndarray) -> np.ndarray:
    """Bytes of ``X`` (CSR: values and indices; dense rows: the whole rows) before each group boundary."""
    if isinstance(X, np.ndarray):
        return offsets.astype(np.int64) * (X.shape[1] * X.itemsize)
    return X.indptr[offsets].astype(np.int64) * (X.data.itemsize + X.indices.itemsize)


def make_tiles(X, groups: QueryGroups, tile_bytes: int | None = None, sparse: bool | None = None,
               map_tiles: Callable = map, split: bool = False) -> tuple[list[Tile], np.ndarray]:
    """``X``'s groups cut into tiles of about ``tile_bytes`` (default :data:`TILE_BYTES`; a
    group never splits), and the bytes of ``X`` before each tile boundary (for balancing runs
    of tiles over threads).  No rows give one empty tile.  ``sparse``: whether the tiles' passes
    sum their columns sparsely (CSR rows only; default
    :func:`~sparkrank.numerics.sparse_sums.wants_sparse_passes`); ``map_tiles``: how their
    column-major copies are made (``ThreadRunner.map``: on several threads); ``split``: a sparse
    tile of over :data:`SPLIT_TILES` tiles' bytes gets :attr:`Tile.parts` instead of columns."""
    tile_bytes = TILE_BYTES if tile_bytes is None else int(tile_bytes)
    bytes_at = bytes_at_groups(X, groups.offsets)
    cuts = balanced_cuts(bytes_at, max(1, -(-int(bytes_at[-1]) // tile_bytes))).tolist()
    offsets = groups.offsets
    group_runs = list(zip(cuts[:-1], cuts[1:]))
    bounds = [(int(offsets[a]), int(offsets[b])) for a, b in group_runs]
    sparse = wants_sparse_passes(X) if sparse is None else sparse and not isinstance(X, np.ndarray)
    # each tile's column tiles: itself, or its parts
    column_bounds = [step_bounds(X, offsets, tile_bytes, (start, stop))
                     if split and sparse and oversized(bytes_at[b] - bytes_at[a], tile_bytes) else [(start, stop)]
                     for (a, b), (start, stop) in zip(group_runs, bounds)]
    columns = iter(tile_columns(X, [c for cs in column_bounds for c in cs], map_tiles) if sparse else [])
    tiles = []
    for (a, b), (start, stop), cs in zip(group_runs, bounds, column_bounds):
        if len(cs) == 1:
            tiles.append(Tile(groups.slice(a, b), start, stop, next(columns, None)))
        else:
            tiles.append(Tile(groups.slice(a, b), start, stop, None,
                              tuple(Tile(None, pa, pb, next(columns)) for pa, pb in cs)))
    return tiles, bytes_at[cuts]


def oversized(nbytes: int, tile_bytes: int | None = None) -> bool:
    """Whether a tile of ``nbytes`` of ``X`` is too large to sum in one (over :data:`SPLIT_TILES`
    tiles of ``tile_bytes``, default :data:`TILE_BYTES`)."""
    return int(nbytes) > SPLIT_TILES * (TILE_BYTES if tile_bytes is None else int(tile_bytes))


def step_bounds(X, origins: np.ndarray, tile_bytes: int | None = None, rows: tuple[int, int] | None = None
                ) -> list[tuple[int, int]]:
    """Row ranges of ``X``'s ``rows`` (default: all) of about ``tile_bytes`` (default
    :data:`TILE_BYTES`) of stored entries that begin and end on step boundaries (a step origin of
    ``origins``, which holds ``rows``' first, or one plus a multiple of
    :data:`~sparkrank.numerics.simd.DD_ROWS`), so that no step of ``Xᵀc`` crosses a range.

    Why: a tile's rows column by column sum at cache speed while its coefficients stay in the
    second-level cache; 500k hashed rows as one tile read them from memory, 10 s for three
    products where tiles of 20k rows take 4.5 s, additions included."""
    start, stop = (0, int(X.shape[0])) if rows is None else (int(rows[0]), int(rows[1]))
    n_rows = stop - start
    entries = int(X.indptr[stop] - X.indptr[start])
    per_row = max(entries * (X.data.itemsize + X.indices.itemsize) // max(n_rows, 1), 1)
    step = max(DD_ROWS, int(TILE_BYTES if tile_bytes is None else tile_bytes) // per_row)
    cuts = [start]
    for target in range(start + step, stop, step):
        k = int(np.searchsorted(origins, target, side="right")) - 1
        at = int(origins[k]) + (target - int(origins[k])) // DD_ROWS * DD_ROWS
        if cuts[-1] < at < stop:
            cuts.append(at)
    cuts.append(stop)
    return list(zip(cuts[:-1], cuts[1:]))


def tile_steps(origins: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The step origins of rows ``start:stop`` (a range of :func:`step_bounds`) from its first
    row: 0, each of ``origins`` inside it, its row count (as ``tile_products`` takes them)."""
    origins = np.asarray(origins)
    inner = origins[(origins > start) & (origins < stop)] - start
    return np.concatenate([[0], inner, [stop - start]]).astype(np.int64)


def pass_products(r: KernelResult, powers: tuple[int, ...]) -> list[tuple[np.ndarray, int]]:
    """The column sums a pass wants of a kernel's result, as ``rmatvec_dd_products`` takes them:
    ``Xᵀc`` / ``(X∘X)ᵀc`` of its ``coef`` for each of ``powers``, then, when it gives
    ``moment_coef`` ``a``, ``Xᵀa`` and ``(X∘X)ᵀa`` (the preconditioner's moments)."""
    products = [] if r.coef is None else [(r.coef, p) for p in powers]
    return products + ([] if r.moment_coef is None else [(r.moment_coef, 1), (r.moment_coef, 2)])


def split_products(r: KernelResult, powers: tuple[int, ...], sums: list):
    """``sums`` of :func:`pass_products` split into (per power for ``coef``, the two moments),
    each ``None`` when the kernel gave no such coefficients."""
    n = 0 if r.coef is None else len(powers)
    return (None if r.coef is None else sums[:n]), (None if r.moment_coef is None else sums[n:])


def fused_pass(X, tiles: Sequence[Tile], v: np.ndarray, kernel: ScoreKernel, states: Sequence | None,
               powers: tuple[int, ...], scores: np.ndarray, fresh: bool = True
               ) -> tuple[list[KernelResult], list[DoubleDouble | None], list[DoubleDouble] | None]:
    """One pass over ``tiles``: per tile ``X·v`` (into ``scores``, rows as in ``X``, when
    ``fresh``; else ``scores`` already holds them), the kernel on its groups with its state
    from ``states`` (``None``: no states), and ``Xᵀc`` (power 1) or ``(X∘X)ᵀc`` (power 2) of
    its ``c`` for each of ``powers``; and, when the kernel gives ``moment_coef`` ``a`` and
    ``powers`` is not empty, ``Xᵀa`` and ``(X∘X)ᵀa``.

    Returns the kernels' results, one per tile, with their statistics and states but not their
    coefficients (dropped once their products are summed, so a pass holds one tile's at a time,
    not a vector per row for the whole pass), per power the double-double sum of the tiles'
    products (``None`` when the kernel gives no ``c`` or there are no tiles), and the two
    moments of ``a`` (``None`` when the kernel gives none).

    Where :func:`~sparkrank.engines.group_passes.runs_group_form` allows it, each tile runs
    group by group (:func:`~sparkrank.engines.group_passes.group_pass`), with the same bits.
    Tiles with :attr:`Tile.columns` (wide CSR rows) sum over their own columns into one
    accumulator over the block's, in tile order; their sums are then
    :class:`~sparkrank.numerics.sparse_sums.SparseSums` over the block's columns, with the bits
    of the dense ones.
    """
    results: list[KernelResult] = []
    partials: list[DoubleDouble | None] = [None] * len(powers)
    moments: list[DoubleDouble] | None = None
    if runs_group_form(kernel, X, states, powers, fresh) and len({t.groups.weighted for t in tiles}) <= 1:
        # X·v, the kernel and Xᵀc group by group, X read once (group_passes.py); weighted rows
        # too, when every tile is (one weighting of the work arrays for the whole pass)
        return group_pass(X, tiles, v, kernel, states, powers, scores, fresh)
    if tiles and tiles[0].columns is not None:
        return _sparse_fused_pass(X, tiles, v, kernel, states, powers, scores, fresh)
    for k, tile in enumerate(tiles):
        result, r, sums = tile_pass(X, tile, v, kernel, None if states is None else states[k], powers, scores, fresh)
        results.append(result)
        if sums is None:
            continue
        coef_parts, moment_parts = split_products(r, powers, sums)
        for j, part in enumerate(coef_parts or ()):
            partials[j] = part if partials[j] is None else dd_add(partials[j], part)
        if moment_parts is not None:
            moments = moment_parts if moments is None else [dd_add(m, p) for m, p in zip(moments, moment_parts)]
    return results, partials, moments


def _sparse_fused_pass(X, tiles: Sequence[Tile], v, kernel: ScoreKernel, states, powers, scores, fresh):
    # fused_pass over tiles with columns: batch by batch of tiles, each tile's sums over its own
    # columns, then the batch's added into the block's accumulator in tile order
    # (ColumnSums.add_batch): SparseSums over the block's columns, the dense sums' bits
    accumulator, buffers = ColumnSums(tiles[0].columns.block), TileSumBuffers()

    def one_tile(k: int, slot: int):
        return tile_pass(X, tiles[k], v, kernel, None if states is None else states[k], powers, scores, fresh,
                         buffers, slot)

    results, last = summed_batches(tiles, kernel, powers, one_tile, accumulator)
    if accumulator.sums() is None:
        return results, [None] * len(powers), None
    coef_parts, moments = split_products(last, powers, accumulator.sums())
    return results, (list(coef_parts) if coef_parts is not None else [None] * len(powers)), moments


def summed_batches(tiles: Sequence[Tile], kernel: ScoreKernel, powers: tuple[int, ...], one_tile: Callable,
                   accumulator: ColumnSums, map_=None, threads: int = 1) -> tuple[list, KernelResult | None]:
    """A sparse pass's tiles batch by batch (:func:`~sparkrank.numerics.sparse_sums.added_batches`):
    ``one_tile(k, slot)`` (:func:`tile_pass`'s triple for tile ``k``, its sums in the batch's buffer
    ``slot``) over each batch, on ``map_`` (``ThreadRunner.map``; ``None``: in turn), the batch's
    sums added into ``accumulator``.  Returns the tiles' results without coefficients and the last
    result with them that had sums."""
    expected = len(powers) + (2 if getattr(kernel, "with_diagonal", False) else 0)
    results, last = [], None
    for batch in added_batches([t.columns for t in tiles], expected, one_tile, lambda out: out[2], accumulator,
                               map_, threads):
        results.extend(result for result, _, _ in batch)
        last = next((r for _, r, sums in reversed(batch) if sums is not None), last)
    return results, last


def tile_pass(X, tile: Tile, v: np.ndarray, kernel: ScoreKernel, state, powers: tuple[int, ...],
              scores: np.ndarray, fresh: bool, buffers: TileSumBuffers | None = None, slot: int = 0
              ) -> tuple[KernelResult, KernelResult, list[DoubleDouble] | None]:
    """One tile of :func:`fused_pass`: its ``X·v`` (when ``fresh``), the kernel on its groups, and
    the double-double sums of :func:`pass_products` over the tile's rows (``None`` when there are
    none): over every column, or over the tile's own (:attr:`Tile.columns`) for sparse passes,
    written into ``buffers``' arrays of ``slot`` when given (``tile_columns.tile_products``).
    Returns the kernel's result without and with its coefficients, and the sums."""
    a, b = tile.start, tile.stop
    if fresh:
        scores[a:b] = matvec(X, v, (a, b))
    r = kernel(tile.groups, scores[a:b], state)
    products = pass_products(r, powers) if powers else []
    sums = None
    if products:  # one sweep over the tile's rows, still in cache, for every product
        # in steps from each of the tile's query starts (exact_sum's convention)
        if tile.columns is None:
            sums = rmatvec_dd_products(X, products, (a, b), tile.groups.offsets)
        else:
            sums = tile_products(tile.columns, products, tile.groups.offsets, buffers, slot)
    return replace(r, coef=None, moment_coef=None), r, sums


def stats_sum(results: Sequence[KernelResult]) -> DoubleDouble:
    """The kernels' statistics of several tiles, added as double-doubles in order (not rounded)."""
    return reduce(dd_add, [r.stats_dd() for r in results])
