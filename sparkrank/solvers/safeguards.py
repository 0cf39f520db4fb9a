"""What keeps every solver from hanging or reporting garbage (issue 13 item 3, docs/design.md §6).

* Norms that neither overflow nor underflow (``‖g‖`` of a gradient with entries 1e-300 or
  1e200 is still a positive finite number, not 0 or inf).
* Starting points must be finite; a non-finite value or gradient before the first step is
  a :class:`NonFiniteError` naming what was not finite (the training driver then adds which
  feature overflows, from the engine's feature statistics).
* A gradient-norm stopping rule relative to ``‖∇f(0)‖`` means nothing when that norm is 0:
  :func:`zero_gradient_message` says so, and the solver reports "not converged".
"""

from __future__ import annotations

import math

import numpy as np


from ..objectives.base import NonFiniteError

__all__ = ["NonFiniteError", "require_finite_start", "stable_norm", "start_point", "zero_gradient_message"]


def stable_norm(v: np.ndarray, metric: np.ndarray | None = None) -> float:
    """``‖v‖₂`` (or ``√(vᵀ diag(metric)⁻¹ v)``) without spurious overflow or underflow.

    Scaling by the largest magnitude first keeps ``Σv²`` representable; ``inf`` only when an
    entry is infinite, NaN when one is NaN.
    """
    v = np.asarray(v, dtype=np.float64)
    if metric is not None:
        root = np.sqrt(metric)
        v = np.divide(v, root, out=root)
    if v.size == 0:
        return 0.0
    # max |v| from the extremes, and v / top once: the same bits with one vector of the full
    # width, not five (2²⁴ hashed feature ids: 128 MB each)
    top = max(abs(float(np.max(v))), abs(float(np.min(v))))
    if top == 0.0 or not math.isfinite(top):
        return top
    unit = v / top
    return top * float(np.sqrt(np.dot(unit, unit)))


def start_point(w0: np.ndarray | None, n_features: int) -> np.ndarray:
    """A float64 copy of ``w0`` (zeros when None); non-finite entries are a ``ValueError``."""
    if w0 is None:
        return np.zeros(n_features)
    w = np.array(w0, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise ValueError(f"initial weights are not finite: weight {int(bad[0])} is {float(w[bad[0]])} "
                         f"({bad.size} non-finite of {w.size})")
    return w


def require_finite_start(value: float | None, gradient: np.ndarray | None) -> None:
    """Raise :class:`NonFiniteError` when the objective or its gradient at the start is not finite."""
    if value is not None and not math.isfinite(value):
        raise NonFiniteError(f"the objective at the starting point is {float(value)}")
    if gradient is not None:
        bad = np.flatnonzero(~np.isfinite(gradient))
        if bad.size:
            raise NonFiniteError(f"the gradient at the starting point is not finite "
                                 f"(component {int(bad[0])} is {float(gradient[bad[0]])}; {bad.size} non-finite)")


def zero_gradient_message(what: str = "the gradient at w = 0") -> str:
    """The stop message of a solver whose reference gradient norm is exactly zero."""
    return (f"{what} is exactly zero: the features give this loss nothing to fit (all zero, or so "
            "small that the products underflow); w is left at the start and is not a converged model")
