"""What a solver sees: ``value``, ``gradient`` and (when it exists) ``hessian_vector``.

Like LIBLINEAR's ``fun/grad/Hv``, evaluating the value at ``w`` may compute per-``w`` state
(sorted scores, support-pair counts) that the gradient and the Hessian products at the
same ``w`` reuse.  That state belongs to the objective (:class:`PointCache`), never to the
solver; solvers always pass ``w`` explicitly, so a rejected trial point cannot corrupt
the state of the current iterate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engines.base import Engine, StateHandle


class Objective(ABC):
    """A differentiable (or subdifferentiable) function of the weights."""

    n_features: int

    @abstractmethod
    def value(self, w: np.ndarray) -> float:
        """Objective value at ``w``."""

    @abstractmethod
    def gradient(self, w: np.ndarray) -> np.ndarray:
        """Gradient (or a subgradient) at ``w``."""

    def hessian_vector(self, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(Generalized) Hessian at ``w`` times ``v``."""
        raise TypeError(f"{type(self).__name__} has no Hessian")

    def progress(self, w: np.ndarray) -> dict[str, Any]:
        """Extra per-iteration facts for the log line (e.g. violated pairs)."""
        return {}

    #: Evaluated points with engine-kept state (objectives that keep some set it).
    _cache: "PointCache | None" = None

    def close(self) -> None:
        """Release the engine-kept state of every cached point (the objective stays usable)."""
        if self._cache is not None:
            self._cache.clear()


class RegularizedRisk(Objective):
    """``J(w) = λ‖w‖² + R(w)``: what BMRM needs (airola2011 eq. (2))."""

    lam: float

    @abstractmethod
    def risk(self, w: np.ndarray) -> float:
        """``R(w)``."""

    @abstractmethod
    def risk_subgradient(self, w: np.ndarray) -> np.ndarray:
        """A subgradient of ``R`` at ``w``."""

    def value(self, w: np.ndarray) -> float:
        return self.lam * float(np.dot(w, w)) + self.risk(w)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return 2.0 * self.lam * w + self.risk_subgradient(w)


@dataclass
class EvaluatedPoint:
    """One engine pass at ``w``: summed kernel statistics, ``Xᵀc`` and kept state."""

    w: np.ndarray
    stats: np.ndarray
    xt_coef: np.ndarray | None
    state: StateHandle | None = None
    extras: dict = field(default_factory=dict)


class PointCache:
    """The last few evaluated points of an objective (2: the iterate and a trial point)."""

    def __init__(self, engine: Engine, size: int = 2):
        self.engine = engine
        self.size = size
        self._points: OrderedDict[bytes, EvaluatedPoint] = OrderedDict()

    def get(self, w: np.ndarray, compute) -> EvaluatedPoint:
        key = np.ascontiguousarray(w, dtype=np.float64).tobytes()
        point = self._points.get(key)
        if point is None:
            point = compute(np.array(w, dtype=np.float64))
            self._points[key] = point
            while len(self._points) > self.size:
                _, old = self._points.popitem(last=False)
                if old.state is not None:
                    self.engine.release(old.state)
        else:
            self._points.move_to_end(key)
        return point

    def clear(self) -> None:
        for point in self._points.values():
            if point.state is not None:
                self.engine.release(point.state)
        self._points.clear()
