"""An engine over ``X D``: per-feature scaling as a reparametrisation, for any engine.

Ranking losses depend on scores only through differences inside a group, so centring
the features never changes the fit; scaling by a positive diagonal ``D`` is the change of
variables ``X' = X D``.  Then ``X' v = X (D v)`` and ``X'ᵀ c = D (Xᵀ c)``: the wrapper
scales the vector before the inner engine's pass and the summed ``Xᵀc`` after it, so the
rows are never rewritten and objectives and solvers are untouched.  A solution ``w'`` on
``X'`` scores raw rows as ``x·(D w')``.
"""

from __future__ import annotations

import numpy as np

from ..kernels.base import ScoreKernel
from .base import ColumnMoments, DataSummary, Engine, FeatureStatistics, PassResult, StateHandle


class ScaledEngine(Engine):
    """Runs every pass of ``engine`` on the columns scaled by ``scale``.

    Parameters
    ----------
    engine : Engine
        The engine over the raw rows (it stays owned by the caller; :meth:`close` does not close it).
    scale : float64 array (n_features,)
        Finite, positive per-feature factors ``diag(D)``.
    """

    def __init__(self, engine: Engine, scale: np.ndarray):
        scale = np.asarray(scale, dtype=np.float64)
        n = engine.summary.n_features
        if scale.shape != (n,):
            raise ValueError(f"scale has shape {scale.shape}, expected ({n},) for the engine's features")
        if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
            bad = int(np.flatnonzero(~(np.isfinite(scale) & (scale > 0)))[0])
            raise ValueError(f"scale must be finite and positive; feature {bad} has {scale[bad]!r}")
        self.inner = engine
        self.scale = scale

    @property
    def summary(self) -> DataSummary:
        return self.inner.summary

    def run(self, vector, kernel: ScoreKernel, *, state: StateHandle | None = None,
            keep_state: bool = False) -> PassResult:
        # (X D) v = X (D v): the kernel sees exactly the scaled rows' scores
        r = self.inner.run(self.scale * np.asarray(vector, dtype=np.float64), kernel, state=state,
                           keep_state=keep_state)
        # (X D)ᵀ c = D (Xᵀ c)
        gradient = None if r.gradient is None else np.multiply(r.gradient, self.scale, out=r.gradient)  # a pass's own
        moments = None if r.moments is None else list(self._scaled_moments(*r.moments))
        return PassResult(r.stats, gradient, r.state, moments)

    def _scaled_moments(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Σ_i c_i (x_ik d_k) = d_k Σ_i c_i x_ik  and  Σ_i c_i (x_ik d_k)² = d_k² Σ_i c_i x_ik²
        # (no shift: this engine only scales; centring is done by the caller's estimate)
        return self.scale * first, self.scale**2 * second

    def release(self, state: StateHandle) -> None:
        self.inner.release(state)

    def column_moments(self, vector, kernel: ScoreKernel) -> ColumnMoments:
        r = self.inner.column_moments(self.scale * np.asarray(vector, dtype=np.float64), kernel)
        return ColumnMoments(r.stats, *self._scaled_moments(r.first, r.second))

    def progress(self) -> dict[str, int]:
        return self.inner.progress()

    def data_digest(self):
        return self.inner.data_digest()  # the rows as read: the scale is a setting derived from them

    def feature_statistics(self) -> FeatureStatistics:
        s = self.inner.feature_statistics()
        d = self.scale
        return FeatureStatistics(s.count, s.mean * d, s.m2 * d**2, s.min * d, s.max * d)
