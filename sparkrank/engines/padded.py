"""An engine over ``[X 0]``: rows given zero columns up to a wider model's width, for any engine.

``sparkrank evaluate`` reads the rows at their own width, so that data wider than the model is
the one error ``predict`` gives for it (:meth:`~sparkrank.model.RankingModel.check_width`), and
a model wider than its data is evaluated on the rows with the model's width: the scores need
only the first columns (``[X 0] v = X v[:n]``), the summed ``[X 0]ᵀ c`` is ``Xᵀc`` and zeros,
and the training objective sees every weight (its ``½‖w‖²`` would miss the ones beyond ``n``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..kernels.base import ScoreKernel
from ..numerics.vectors import fit_length
from .base import ColumnMoments, DataSummary, Engine, FeatureStatistics, PassResult, StateHandle


class PaddedEngine(Engine):
    """Runs every pass of ``engine`` as if its rows had ``n_features`` columns, the added ones zero.

    Parameters
    ----------
    engine : Engine
        The engine over the rows (it stays owned by the caller; :meth:`close` does not close it).
    n_features : int
        At least the engine's own width.
    """

    def __init__(self, engine: Engine, n_features: int):
        n = engine.summary.n_features
        if n_features < n:
            raise ValueError(f"cannot pad {n} feature columns to {n_features}")
        self.inner, self.n_features, self._inner_width = engine, int(n_features), n

    @property
    def summary(self) -> DataSummary:
        return replace(self.inner.summary, n_features=self.n_features)

    def _pad(self, columns: np.ndarray | None) -> np.ndarray | None:
        return None if columns is None else fit_length(columns, self.n_features)

    def run(self, vector, kernel: ScoreKernel, *, state: StateHandle | None = None,
            keep_state: bool = False) -> PassResult:
        v = np.asarray(vector, dtype=np.float64)[: self._inner_width]  # the zero columns score nothing
        r = self.inner.run(v, kernel, state=state, keep_state=keep_state)
        moments = None if r.moments is None else [self._pad(m) for m in r.moments]
        return PassResult(r.stats, self._pad(r.gradient), r.state, moments)

    def release(self, state: StateHandle) -> None:
        self.inner.release(state)

    def column_moments(self, vector, kernel: ScoreKernel) -> ColumnMoments:
        r = self.inner.column_moments(np.asarray(vector, dtype=np.float64)[: self._inner_width], kernel)
        return ColumnMoments(r.stats, self._pad(r.first), self._pad(r.second))

    def progress(self) -> dict[str, int]:
        return self.inner.progress()

    def data_digest(self):
        return self.inner.data_digest()  # the rows as the inner engine holds them (the width is in the summary)

    def feature_statistics(self) -> FeatureStatistics:
        s = self.inner.feature_statistics()  # an added column is all zeros: mean, spread, min, max 0
        return FeatureStatistics(s.count, self._pad(s.mean), self._pad(s.m2), self._pad(s.min), self._pad(s.max))
