"""Pairwise RankSVM objectives over an engine.

* :class:`HingeRisk` — L1 loss, airola2011: ``J(w) = λ‖w‖² + (1/N) Σ_P max(0, 1 - w·(x_u - x_l))``.
* :class:`SquaredHingeObjective` — L2 loss, lee-lin2014 eq. (3):
  ``f(w) = ½‖w‖² + C Σ_P max(0, 1 - w·(x_u - x_l))²``.

λ and C convert through :mod:`sparkrank.conventions` only.
"""

from __future__ import annotations

import numpy as np

from ..conventions import c_from_lambda, lambda_from_c
from ..data.block import DataError
from ..engines.base import Engine
from ..kernels.counting import DEFAULT_COUNTING, check_counting_method
from ..kernels.losses import HingeKernel, SquaredHingeHessianKernel, SquaredHingeKernel, SupportPairDiagonalKernel
from .base import EvaluatedPoint, Objective, PointCache, RegularizedRisk, hessian_diagonal_estimate


def _require_pairs(engine: Engine) -> int:
    s = engine.summary
    if s.n_pairs == 0:
        raise DataError(
            f"no preference pairs: all {s.n_groups} query group(s) have a single label level, "
            "so there is nothing to rank"
        )
    return s.n_pairs


class HingeRisk(RegularizedRisk):
    """L1-loss RankSVM in BMRM form (airola2011 eqs. (2), (4), (7), (8)).

    Parameters
    ----------
    engine : Engine
    lam : float
        λ of ``λ‖w‖²``; see :meth:`from_c` for LIBLINEAR's C.
    counting : str
        Counting method (``selection``, ``rbtree``, ``direct``, ``pairs``).
    """

    def __init__(self, engine: Engine, lam: float, counting: str = DEFAULT_COUNTING):
        self.engine = engine
        self.n_pairs = _require_pairs(engine)
        self.lam = float(lam)
        self.C = c_from_lambda(self.lam, self.n_pairs)
        self.n_features = engine.summary.n_features
        self.kernel = HingeKernel(check_counting_method(counting))
        self._cache = PointCache(engine)

    @classmethod
    def from_c(cls, engine: Engine, C: float, counting: str = DEFAULT_COUNTING) -> "HingeRisk":
        """The λ-form of LIBLINEAR's ``½‖w‖² + C Σ loss`` (same minimiser)."""
        return cls(engine, lambda_from_c(C, _require_pairs(engine)), counting)

    def _point(self, w: np.ndarray) -> EvaluatedPoint:
        def compute(w):
            r = self.engine.run(w, self.kernel)
            return EvaluatedPoint(w, r.stats, r.gradient)

        return self._cache.get(w, compute)

    def risk(self, w: np.ndarray) -> float:
        return float(self._point(w).stats[0]) / self.n_pairs

    def risk_subgradient(self, w: np.ndarray) -> np.ndarray:
        return self._point(w).xt_coef / self.n_pairs

    def progress(self, w: np.ndarray) -> dict:
        return {"support_pairs": int(self._point(w).stats[1])}


class SquaredHingeObjective(Objective):
    """L2-loss RankSVM, lee-lin2014 eqs. (3), (15)-(19).

    Parameters
    ----------
    engine : Engine
    C : float
        Weight of the summed squared hinge (LIBLINEAR convention).
    counting : str
        Counting method.
    """

    def __init__(self, engine: Engine, C: float, counting: str = DEFAULT_COUNTING):
        self.engine = engine
        self.n_pairs = _require_pairs(engine)
        self.C = float(C)
        self.lam = lambda_from_c(self.C, self.n_pairs)
        self.n_features = engine.summary.n_features
        counting = check_counting_method(counting)
        self.kernel = SquaredHingeKernel(counting)
        self.hessian_kernel = SquaredHingeHessianKernel(counting)
        self.diagonal_kernel = SupportPairDiagonalKernel(counting)
        self._cache = PointCache(engine)

    @classmethod
    def from_lambda(cls, engine: Engine, lam: float, counting: str = DEFAULT_COUNTING) -> "SquaredHingeObjective":
        return cls(engine, c_from_lambda(lam, _require_pairs(engine)), counting)

    def _point(self, w: np.ndarray) -> EvaluatedPoint:
        def compute(w):
            r = self.engine.run(w, self.kernel, keep_state=True)
            return EvaluatedPoint(w, r.stats, r.gradient, r.state)

        return self._cache.get(w, compute)

    def value(self, w: np.ndarray) -> float:
        return 0.5 * float(np.dot(w, w)) + self.C * float(self._point(w).stats[0])  # lee-lin2014 eq. (18)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return w + self.C * self._point(w).xt_coef  # eq. (19)

    def hessian_vector(self, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        point = self._point(w)
        r = self.engine.run(v, self.hessian_kernel, state=point.state)
        return v + self.C * r.gradient  # eq. (17)

    def hessian_diagonal(self, w: np.ndarray) -> np.ndarray:
        """``diag(I + C·Xᵀ(2L)X)`` estimated at ``w``'s support pairs (:func:`hessian_diagonal_estimate`)."""
        return hessian_diagonal_estimate(self.engine, w, self.diagonal_kernel, self.C)

    def progress(self, w: np.ndarray) -> dict:
        return {"support_pairs": int(self._point(w).stats[1])}
