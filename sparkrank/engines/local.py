"""The in-process engine: one block, numpy/numba products, kernel on the whole data."""

from __future__ import annotations

import numpy as np

from ..data.block import RankingData
from .base import ColumnMoments, DataSummary, Engine, FeatureStatistics, PassResult, ScoreKernel, StateHandle
from .exact_sum import csr_tdot_dd, dd_round
from .linalg import csr_dot


class LocalEngine(Engine):
    """Runs every pass in this process over one :class:`RankingData` block.

    ``passes`` counts the passes run (:meth:`run` and :meth:`column_moments`), for tests and
    benchmarks that measure work in passes rather than seconds.
    """

    def __init__(self, data: RankingData):
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

    @property
    def summary(self) -> DataSummary:
        return self._summary

    def run(self, vector, kernel: ScoreKernel, *, state=None, keep_state=False) -> PassResult:
        if state is not None and state.released:
            raise RuntimeError("kernel state was already released")
        self.passes += 1
        scores = csr_dot(self.data.X, vector)
        result = kernel(self.data.groups, scores, None if state is None else state.payload)
        # sums rounded once from double-doubles, as the Spark engine does over its blocks
        gradient = None if result.coef is None else dd_round(csr_tdot_dd(self.data.X, result.coef))
        handle = StateHandle(result.state) if keep_state else None
        return PassResult(dd_round(result.stats_dd()), gradient, handle)

    def release(self, state: StateHandle) -> None:
        state.payload = None
        state.released = True

    def column_moments(self, vector, kernel: ScoreKernel) -> ColumnMoments:
        self.passes += 1
        result = kernel(self.data.groups, csr_dot(self.data.X, vector), None)
        first, second = (dd_round(csr_tdot_dd(self.data.X, result.coef, power)) for power in (1, 2))
        return ColumnMoments(dd_round(result.stats_dd()), first, second)

    def feature_statistics(self) -> FeatureStatistics:
        X = self.data.X
        return FeatureStatistics.from_csr(X.indptr, X.indices, X.data, X.shape[0], X.shape[1])
