"""The in-process engine: one block, numpy/numba products, kernel on the whole data."""

from __future__ import annotations

import numpy as np

from ..data.block import RankingData
from .base import DataSummary, Engine, PassResult, ScoreKernel, StateHandle
from .linalg import csr_dot, csr_tdot


class LocalEngine(Engine):
    """Runs every pass in this process over one :class:`RankingData` block."""

    def __init__(self, data: RankingData):
        self.data = data
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
        scores = csr_dot(self.data.X, vector)
        result = kernel(self.data.groups, scores, None if state is None else state.payload)
        gradient = None if result.coef is None else csr_tdot(self.data.X, result.coef)
        handle = StateHandle(result.state) if keep_state else None
        return PassResult(np.asarray(result.stats, dtype=np.float64), gradient, handle)

    def release(self, state: StateHandle) -> None:
        state.payload = None
        state.released = True
