"""The in-process engine: one block (CSR or dense rows), numba products and kernels on all cores.

Rows are cut into chunks of about equal non-zeros for ``X·v`` / ``Xᵀ·c``, and groups into
chunks of about equal rows for the score-space kernel (a group never splits), all run on
a thread pool (:mod:`sparkrank.engines.threads` says why the result does not depend on
the number of threads).
"""

from __future__ import annotations

from functools import reduce

import numpy as np

from ..data.block import RankingData
from ..kernels.base import KernelResult, ScoreKernel
from ..numerics.exact_sum import dd_add, dd_round, rmatvec_dd
from ..numerics.linalg import matvec
from .base import ColumnMoments, DataSummary, Engine, FeatureStatistics, PassResult, StateHandle
from .threads import ThreadRunner, balanced_cuts, check_threads


class LocalEngine(Engine):
    """Runs every pass in this process over one :class:`RankingData` block.

    Parameters
    ----------
    data : RankingData
    threads : int, optional
        Threads for the products and the kernel (default: every core this process may use).
        The model is the same bit for bit for any value.

    Attributes
    ----------
    passes : int
        Passes run (:meth:`run` and :meth:`column_moments`), for tests and benchmarks that
        measure work in passes rather than seconds.
    """

    def __init__(self, data: RankingData, threads: int | None = None):
        self.data = data
        self.passes = 0
        g = data.groups
        self._summary = DataSummary(
            n_rows=data.n_rows,
            n_features=data.n_features,
            n_groups=g.n_groups,
            n_pairs=g.n_pairs,
            n_groups_without_pairs=g.n_groups_without_pairs,
        )
        self.threads = check_threads(threads)
        self._runner = ThreadRunner(self.threads)
        X = data.X
        # rows cut into chunks of about equal non-zeros (dense rows: equal rows)
        row_cuts = balanced_cuts(np.arange(X.shape[0] + 1) if isinstance(X, np.ndarray) else X.indptr, self.threads)
        self._row_chunks = list(zip(row_cuts[:-1].tolist(), row_cuts[1:].tolist()))
        group_cuts = balanced_cuts(g.offsets, self.threads)
        self._group_chunks = [g.slice(a, b) for a, b in zip(group_cuts[:-1], group_cuts[1:])]
        self._group_rows = [(int(g.offsets[a]), int(g.offsets[b])) for a, b in zip(group_cuts[:-1], group_cuts[1:])]

    @property
    def summary(self) -> DataSummary:
        return self._summary

    def run(self, vector, kernel: ScoreKernel, *, state=None, keep_state=False) -> PassResult:
        if state is not None and state.released:
            raise RuntimeError("kernel state was already released")
        results = self._kernel_pass(vector, kernel, None if state is None else state.payload)
        gradient = None if results[0].coef is None else self._tdot(results, 1)
        handle = StateHandle([r.state for r in results]) if keep_state else None
        return PassResult(self._stats(results), gradient, handle)

    def release(self, state: StateHandle) -> None:
        state.payload = None
        state.released = True

    def column_moments(self, vector, kernel: ScoreKernel) -> ColumnMoments:
        results = self._kernel_pass(vector, kernel, None)
        return ColumnMoments(self._stats(results), self._tdot(results, 1), self._tdot(results, 2))

    def feature_statistics(self) -> FeatureStatistics:
        X = self.data.X
        if isinstance(X, np.ndarray):
            return FeatureStatistics.from_dense(X)
        return FeatureStatistics.from_csr(X.indptr, X.indices, X.data, X.shape[0], X.shape[1])

    def close(self) -> None:
        self._runner.close()

    # -- one pass: X·v by row chunks, the kernel by group chunks -----------------------------
    def _kernel_pass(self, vector, kernel: ScoreKernel, states: list | None) -> list[KernelResult]:
        self.passes += 1
        X = self.data.X
        v = np.ascontiguousarray(vector, dtype=np.float64)
        scores = np.concatenate(self._runner.map(lambda rows: matvec(X, v, rows), self._row_chunks))
        whole = kernel.spans_groups
        chunks, spans = ([self.data.groups], [(0, self.data.n_rows)]) if whole else (self._group_chunks,
                                                                                    self._group_rows)
        return self._runner.map(lambda groups, span, st: kernel(groups, scores[span[0]: span[1]], st),
                                chunks, spans, [None] * len(chunks) if states is None else states)

    def _tdot(self, results: list[KernelResult], power: int) -> np.ndarray:
        """``Xᵀc`` (or ``(X∘X)ᵀc``) of the kernels' coefficients: double-double partials per row
        chunk, merged in chunk order and rounded once, as the Spark engine does over blocks."""
        X = self.data.X
        coef = np.concatenate([r.coef for r in results])
        parts = self._runner.map(lambda rows: rmatvec_dd(X, coef, power, rows), self._row_chunks)
        return dd_round(reduce(dd_add, parts))

    @staticmethod
    def _stats(results: list[KernelResult]) -> np.ndarray:
        return dd_round(reduce(dd_add, [r.stats_dd() for r in results]))
