"""Feature standardization for ranking: exact, for any engine, applied again at predict time.

Kinds
-----
* ``none``: the raw features.
* ``minmax``: ``(x − min) / (max − min)``, each feature mapped onto [0, 1].
* ``standard``: ``(x − mean) / std`` with the unbiased sample standard deviation
  (as Spark's ``StandardScaler``).

A feature with zero spread (constant, or never non-zero) keeps scale 1: it cannot change a
ranking, and dividing by zero would.

Why training never centres
--------------------------
Every ranking loss here sees the scores only through differences ``p_u − p_l`` inside a
group, and ``(x_u − s)·D w − (x_l − s)·D w = (x_u − x_l)·D w``: the shift ``s`` cancels.
So training runs on ``X D`` only (:class:`~sparkrank.engines.scaled.ScaledEngine`, a
reparametrisation that keeps sparse rows sparse), and the solver's ``w'`` is the solution
on the standardized features.  A model scores a row as ``w'·((x − shift)·scale)``, which it
computes without densifying ``x`` as ``x·(scale·w') − (shift·scale)·w'``: raw-space
weights :meth:`Standardization.raw_weights` plus a constant :meth:`Standardization.intercept`
(the same for every row, so rankings and metrics never depend on it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .choices import STANDARDIZATIONS, check_choice
from .data.block import DataError
from .engines.base import Engine, FeatureStatistics
from .engines.scaled import ScaledEngine




#: What to do with a feature too large for float64 arithmetic (its square or spread overflows).
RESCALE_ADVICE = "rescale or clip it before training (e.g. log1p, or divide it by a power of ten)"


def check_kind(kind: str) -> str:
    """``kind`` if it is a known standardization, else a ``ValueError`` naming the choices."""
    return check_choice(kind, STANDARDIZATIONS, "standardization")


@dataclass(frozen=True)
class Standardization:
    """``x ↦ (x − shift)·scale`` per feature.

    Attributes
    ----------
    kind : {"none", "minmax", "standard"}
    shift, scale : float64 arrays (n_features,)
    """

    kind: str
    shift: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, kind: str, stats: FeatureStatistics) -> "Standardization":
        """The standardization of ``kind`` for data with per-feature ``stats``."""
        check_kind(kind)
        n = stats.n_features
        if kind == "none":
            return cls(kind, np.zeros(n), np.ones(n))
        if stats.count == 0:
            raise ValueError("cannot fit a standardization on data without rows")
        with np.errstate(over="ignore", invalid="ignore"):
            if kind == "minmax":
                shift, spread = stats.min.copy(), stats.max - stats.min
            else:
                shift, spread = stats.mean.copy(), np.sqrt(stats.variance(ddof=1))
        overflowed = np.flatnonzero(~np.isfinite(spread))
        if overflowed.size:  # finite data whose spread float64 cannot hold: no scale would be right
            k = int(overflowed[0])
            top = max(abs(float(stats.min[k])), abs(float(stats.max[k])))
            what = "range" if kind == "minmax" else "standard deviation"
            raise DataError(f"cannot standardize ({kind}) feature {k + 1} (weight index {k}): |x| up to {top:.3g} "
                            f"makes its {what} overflow float64; {RESCALE_ADVICE}")
        scale = np.ones(n)
        ok = np.isfinite(spread) & (spread > 0)
        scale[ok] = 1.0 / spread[ok]
        return cls(kind, shift, scale)

    @property
    def n_features(self) -> int:
        return int(self.scale.shape[0])

    def raw_weights(self, w: np.ndarray) -> np.ndarray:
        """Weights on the raw features that rank exactly like ``w`` on the standardized ones: ``scale·w``."""
        return self.scale * self._fit_length(w)

    def intercept(self, w: np.ndarray) -> float:
        """The constant ``−(shift·scale)·w`` that completes ``w'·((x − shift)·scale)``."""
        return -float(np.dot(self.shift * self.scale, self._fit_length(w)))

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Dense ``(X − shift)·scale`` (tests and small data; training never materialises it)."""
        X = np.asarray(X, dtype=np.float64)
        return (X - self.shift[: X.shape[1]]) * self.scale[: X.shape[1]]

    def _fit_length(self, w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.n_features,):
            raise ValueError(f"weights have shape {w.shape} but the standardization has {self.n_features} features")
        return w

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "shift": [float(v) for v in self.shift], "scale": [float(v) for v in self.scale]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Standardization":
        for key in ("kind", "shift", "scale"):
            if key not in d:
                raise ValueError(f"standardization record has no {key!r}")
        shift = np.asarray(d["shift"], dtype=np.float64)
        scale = np.asarray(d["scale"], dtype=np.float64)
        if shift.shape != scale.shape:
            raise ValueError(f"standardization shift has {shift.shape[0]} entries but scale {scale.shape[0]}")
        return cls(check_kind(d["kind"]), shift, scale)


def standardized_engine(engine: Engine, kind: str) -> tuple[Engine, Standardization | None]:
    """``engine`` seen through ``kind`` standardization, and the fitted standardization.

    ``none`` returns ``engine`` itself and ``None``; otherwise one statistics pass fits the
    standardization and a :class:`ScaledEngine` applies its scale (the shift cancels in every
    ranking loss, see the module docstring).
    """
    if check_kind(kind) == "none":
        return engine, None
    st = Standardization.fit(kind, engine.feature_statistics())
    return ScaledEngine(engine, st.scale), st
