"""The in-process engine: one block (CSR or dense rows), numba products and kernels on all cores.

Groups are cut into tiles of a few MB of rows (a group never splits) and the tiles into one
run per thread; a pass computes a tile's ``X·v``, its score-space kernel and its ``Xᵀ·c``
back to back while its rows are in cache, so ``X`` is read from memory once per pass, on a
thread pool (:mod:`sparkrank.engines.threads` says why the result does not depend on the
number of threads).  A kernel that needs every group at once gets all scores, computed over
row chunks of about equal non-zeros.  So does a group too large for a tile (one global ranking):
its kernel runs once its scores are in, then its ``Xᵀ·c`` goes over the threads, in row chunks
(dense rows) or in parts of a tile's size cut where no step of the double-double sums crosses
(sparse rows, :attr:`~sparkrank.engines.tiles.Tile.parts`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import numpy as np

from ..data.block import RankingData
from ..data.digest import DataDigest, digest_of
from ..kernels.base import KernelResult, ScoreKernel
from ..numerics.exact_sum import dd_add, dd_round, rmatvec_dd_products, step_boundary, step_starts
from ..numerics.linalg import matvec
from ..numerics.same_bits import is_frozen, same_bits
from ..numerics.sparse_sums import ColumnSums, TileSumBuffers
from ..numerics.tile_columns import tile_products
from .base import ColumnMoments, DataSummary, Engine, FeatureStatistics, PassResult, StateHandle
from .threads import ThreadRunner, balanced_cuts, check_threads
from .tiles import (fused_pass, make_tiles, oversized, pass_products, split_products, stats_sum, summed_batches,
                    tile_pass, tile_steps)


class RememberedScores:
    """``X·v`` of the last pass's ``v``: a pass at the same point (the preconditioner's after
    the value's, say) skips the product."""

    def __init__(self):
        self._vector: np.ndarray | None = None
        self._scores: np.ndarray | None = None

    def get(self, v: np.ndarray) -> np.ndarray | None:
        # bit for bit, without a temporary of the width (-0.0 and 0.0 differ here: a recount)
        same = self._vector is not None and same_bits(self._vector, v)
        return self._scores if same else None

    def keep(self, v: np.ndarray, scores: np.ndarray) -> None:
        # an objective's point (a frozen copy) is kept as it is: no second vector of the width
        self._vector, self._scores = (v if is_frozen(v) else v.copy()), scores


def _round_sum(parts: list) -> np.ndarray:
    """Double-double partial sums added in list order and rounded once."""
    return dd_round(reduce(dd_add, parts))


class LocalEngine(Engine):
    """Runs every pass in this process over one :class:`RankingData` block.

    Parameters
    ----------
    data : RankingData
    threads : int, optional
        Threads for the products and the kernel (default: every core this process may use).
        The model is the same bit for bit for any value.
    sparse : bool, optional
        Sum ``Xᵀc`` over the columns each tile touches (:mod:`sparkrank.numerics.sparse_sums`):
        by default for CSR rows of many columns (hashed features).  The same bits either way.

    Attributes
    ----------
    passes : int
        Passes run (:meth:`run` and :meth:`column_moments`), for tests and benchmarks that
        measure work in passes rather than seconds.
    """

    def __init__(self, data: RankingData, threads: int | None = None, sparse: bool | None = None):
        self.data = data
        self.passes = 0
        g = data.groups
        self._summary = DataSummary(
            n_rows=data.n_rows,
            n_features=data.n_features,
            n_groups=g.n_groups,
            n_pairs=g.n_pairs,
            n_groups_without_pairs=g.n_groups_without_pairs,
            weighted=g.weighted,
        )
        self.threads = check_threads(threads)
        self._runner = ThreadRunner(self.threads)
        X = data.X
        # rows cut into chunks of about equal non-zeros (dense rows: equal rows)
        row_cuts = balanced_cuts(np.arange(X.shape[0] + 1) if isinstance(X, np.ndarray) else X.indptr, self.threads)
        # each cut moved back to a step boundary of Xᵀc (exact_sum's steps), so a chunk holds whole steps
        row_cuts = [step_boundary(g.offsets, int(c)) for c in row_cuts.tolist()]
        self._row_chunks = [(a, b) for a, b in zip(row_cuts[:-1], row_cuts[1:]) if b > a] or [(0, 0)]
        # groups cut into tiles (engines/tiles.py), the tiles into one run per thread of about
        # equal bytes
        self._tiles, bytes_at_tiles = make_tiles(X, g, sparse=sparse, map_tiles=self._runner.map, split=True)
        self.sparse = self._tiles[0].columns is not None or self._tiles[0].parts is not None
        # the sparse passes' column tiles, each with its tile's index: a tile, or a too large
        # tile's parts (one global ranking's), whose kernel then runs before their sums
        self._sum_tiles = [(k, part) for k, t in enumerate(self._tiles) for part in (t.parts or (t,))]
        # dense rows of one too large tile (one global ranking): passes as _whole_pass's, over
        # the threads' row chunks, rather than one thread's fused pass
        self._whole_tile = not self.sparse and len(self._tiles) == 1 and oversized(bytes_at_tiles[-1])
        self._sums_workspace: dict = {}  # the sparse passes' column sums, kept between passes
        run_cuts = balanced_cuts(bytes_at_tiles, self.threads).tolist()
        self._runs = list(zip(run_cuts[:-1], run_cuts[1:]))  # tiles a:b, one run per thread
        self._scores = RememberedScores()
        self._digest: DataDigest | None = None  # data_digest(), made on first use (a checkpointed fit)

    @property
    def summary(self) -> DataSummary:
        return self._summary

    def run(self, vector, kernel: ScoreKernel, *, state=None, keep_state=False) -> PassResult:
        if state is not None and state.released:
            raise RuntimeError("kernel state was already released")
        results, sums, moments = self._pass(vector, kernel, None if state is None else state.payload, powers=(1,))
        handle = StateHandle([r.state for r in results]) if keep_state else None
        return PassResult(self._stats(results), None if sums is None else sums[0], handle, moments)

    def release(self, state: StateHandle) -> None:
        state.payload = None
        state.released = True

    def column_moments(self, vector, kernel: ScoreKernel) -> ColumnMoments:
        results, (first, second), _ = self._pass(vector, kernel, None, powers=(1, 2))
        return ColumnMoments(self._stats(results), first, second)

    def feature_statistics(self) -> FeatureStatistics:
        return FeatureStatistics.of_rows(self.data.X)

    def data_digest(self) -> DataDigest:
        if self._digest is None:  # one run of whole groups per thread (BLAKE2b lets go of the GIL)
            if len(self._runs) < 2:
                self._digest = digest_of(self.data)
            else:
                starts = [t.start for t in self._tiles] + [self.data.n_rows]
                parts = self._runner.map(lambda run: digest_of(self.data, (starts[run[0]], starts[run[1]])), self._runs)
                self._digest = reduce(DataDigest.add, parts)
        return self._digest

    def close(self) -> None:
        self._runner.close()

    # -- one pass ---------------------------------------------------------------------------
    def _pass(self, vector, kernel: ScoreKernel, states: list | None, powers: tuple[int, ...]):
        """``X·v``, the kernel, and for each of ``powers`` ``Xᵀc`` (1) or ``(X∘X)ᵀc`` (2) of its ``c``.

        Returns the kernels' results in row order (their states are what ``states`` must be on a
        later pass), the rounded sums, one per power, or ``None`` when the kernel gives no ``c``,
        and ``[Xᵀa, (X∘X)ᵀa]`` of the kernel's ``moment_coef`` ``a`` (``None`` when it gives none).
        """
        self.passes += 1
        v = np.ascontiguousarray(vector, dtype=np.float64)
        scores = self._scores.get(v)
        if self.sparse:
            return self._sparse_pass(v, scores, kernel, states, powers)
        whole_or_tiled = self._whole_pass if kernel.spans_groups or self._whole_tile else self._tiled_pass
        return whole_or_tiled(v, scores, kernel, states, powers)

    def _sparse_pass(self, v, scores, kernel, states, powers):
        # tile by tile on the threads, in batches of tiles: each tile's sums over its own
        # columns, then the batch's added into one accumulator over the data's columns in one
        # sweep, split over the threads by columns, each column's additions in tile order
        # (numerics/sparse_sums.py): O(nnz) a tile, O(n) a batch, and the same bits for any
        # number of threads.  A kernel that sees every group at once, or a tile's groups summed
        # in parts, runs first (_kernels_ahead); then its products go part by part.
        X = self.data.X
        fresh = scores is None
        if fresh:
            scores = np.empty(self.data.n_rows, dtype=np.float64)
        ahead = self._kernels_ahead(v, scores, fresh, kernel, states)
        accumulator = ColumnSums(self._sum_tiles[0][1].columns.block, self._sums_workspace)
        buffers = self._sums_workspace.setdefault("tiles", TileSumBuffers())
        offsets = self.data.groups.offsets

        def one_tile(k: int, slot: int):
            owner, tile = self._sum_tiles[k]
            if owner not in ahead:
                return tile_pass(X, tile, v, kernel, None if states is None else states[owner], powers, scores, fresh,
                                 buffers, slot)
            r, base = ahead[owner]
            products = [(c[tile.start - base:tile.stop - base], p) for c, p in pass_products(r, powers)]
            sums = tile_products(tile.columns, products, tile_steps(offsets, tile.start, tile.stop), buffers, slot) \
                if products else None
            first = not kernel.spans_groups and tile.start == self._tiles[owner].start  # a tile's result once
            return (replace(r, coef=None, moment_coef=None) if first else None), r, sums

        results, last = summed_batches([t for _, t in self._sum_tiles], kernel, powers, one_tile, accumulator,
                                       self._runner.map, self.threads)
        results = [r for r in results if r is not None]
        if fresh and (kernel.spans_groups or states is None):
            self._scores.keep(v, scores)
        if kernel.spans_groups:
            results = [replace(ahead[0][0], coef=None, moment_coef=None)]
        sums = accumulator.sums()
        if sums is None:
            return results, None, None
        coef_parts, moment_parts = split_products(last, powers, [s.rounded() for s in sums])
        return results, coef_parts, moment_parts

    def _kernels_ahead(self, v, scores, fresh, kernel, states) -> dict[int, tuple[KernelResult, int]]:
        """The sparse pass's kernels that run before their tiles' sums, by tile: one over every
        group (``kernel.spans_groups``), for every tile; else each tile's that has parts.  Each
        with the first row its coefficients start at; ``X·v`` (when ``fresh``) over row chunks."""
        X = self.data.X
        rows = [] if not fresh else self._row_chunks if kernel.spans_groups else \
            [c for t in self._tiles if t.parts for c in _even_chunks(t.start, t.stop, self.threads)]
        for (a, b), part in zip(rows, self._runner.map(lambda r: matvec(X, v, r), rows)):
            scores[a:b] = part
        if kernel.spans_groups:
            whole = kernel(self.data.groups, scores, None if states is None else states[0])
            return {k: (whole, 0) for k in range(len(self._tiles))}
        split = [k for k, t in enumerate(self._tiles) if t.parts]
        done = self._runner.map(lambda k: kernel(self._tiles[k].groups, scores[self._tiles[k].start:self._tiles[k].stop],
                                                 None if states is None else states[k]), split)
        return {k: (r, self._tiles[k].start) for k, r in zip(split, done)}

    def _tiled_pass(self, v, scores, kernel, states, powers):
        # each thread runs the fused pass (engines/tiles.py) over its run of tiles
        X = self.data.X
        fresh = scores is None
        if fresh:
            scores = np.empty(self.data.n_rows, dtype=np.float64)

        def run_of_tiles(run: tuple[int, int]):
            first, last = run
            return fused_pass(X, self._tiles[first:last], v, kernel, None if states is None else states[first:last],
                              powers, scores, fresh)

        done = self._runner.map(run_of_tiles, self._runs)
        if fresh and states is None:  # a Hessian pass's X·v is never asked for again: let it go
            self._scores.keep(v, scores)
        results = [r for rs, _, _ in done for r in rs]
        run_moments = [m for _, _, m in done if m is not None]
        moments = [_round_sum([m[k] for m in run_moments]) for k in range(2)] if run_moments else None
        # the runs' partials merged in run order and rounded once, as Spark merges blocks
        per_power = [[p[k] for _, p, _ in done if p[k] is not None] for k in range(len(powers))]
        if not per_power[0]:  # the kernel gives no c
            return results, None, moments
        return results, [_round_sum(parts) for parts in per_power], moments

    def _whole_pass(self, v, scores, kernel, states, powers):
        # a kernel that sees every group at once (one global ranking's top, say), or dense rows
        # of one too large tile: all scores first
        X = self.data.X
        if scores is None:
            scores = np.concatenate(self._runner.map(lambda rows: matvec(X, v, rows), self._row_chunks))
            if kernel.spans_groups or states is None:
                self._scores.keep(v, scores)
        result = kernel(self.data.groups, scores, None if states is None else states[0])

        products = pass_products(result, powers)
        if not products:
            return [result], None, None
        offsets = self.data.groups.offsets
        chunks = self._runner.map(lambda rows: rmatvec_dd_products(X, products, rows, step_starts(offsets, *rows)),
                                  self._row_chunks)
        sums = [_round_sum([chunk[k] for chunk in chunks]) for k in range(len(products))]
        gradient_sums, moments = split_products(result, powers, sums)
        return [result], gradient_sums, moments

    @staticmethod
    def _stats(results: list[KernelResult]) -> np.ndarray:
        return dd_round(stats_sum(results))


def _even_chunks(start: int, stop: int, n: int) -> list[tuple[int, int]]:
    """Rows ``start:stop`` in ``n`` contiguous chunks of about equal rows (none empty)."""
    cuts = np.linspace(start, stop, max(1, n) + 1).astype(np.int64).tolist()
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
