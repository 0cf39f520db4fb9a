"""The engine interface: where ``X·w``, the score-space kernel and ``Xᵀ·c`` run.

An objective asks an engine for one *pass*: ``p = X v`` over all rows, a
:class:`~sparkrank.kernels.base.ScoreKernel` applied to the scores of whole query groups, and ``Xᵀ c`` of the
coefficients the kernel returns, summed over blocks (Spark ML's ``RDDLossFunction``
shape: broadcast the vector, aggregate per-block results, release the broadcast).  A
kernel may keep per-block state (sorted order, scores) that a later pass at the same
point reuses; the engine keeps it where the block lives and hands back an opaque
:class:`StateHandle`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kernels.base import ScoreKernel
from ..numerics.linalg import dense_column_sums


@dataclass(frozen=True)
class DataSummary:
    """Sizes of the training data as an engine sees it."""

    n_rows: int
    n_features: int
    n_groups: int
    n_pairs: int
    n_groups_without_pairs: int


@dataclass(frozen=True)
class FeatureStatistics:
    """Per-feature count, mean, variance, min and max over all rows (implicit zeros included).

    Blocks are merged with Chan et al.'s pairwise update of ``(count, mean, M2)``, which
    stays accurate where ``Σx² − (Σx)²/n`` would cancel.

    Attributes
    ----------
    count : int
        Rows seen.
    mean, m2, min, max : float64 arrays (n_features,)
        ``m2`` is the sum of squared deviations from the mean.
    """

    count: int
    mean: np.ndarray
    m2: np.ndarray
    min: np.ndarray
    max: np.ndarray

    @property
    def n_features(self) -> int:
        return int(self.mean.shape[0])

    def variance(self, ddof: int = 1) -> np.ndarray:
        """Per-feature variance (``ddof=1``: the unbiased sample variance, as Spark's ``StandardScaler``)."""
        if self.count - ddof <= 0:
            return np.zeros_like(self.mean)
        return self.m2 / (self.count - ddof)

    @classmethod
    def empty(cls, n_features: int) -> "FeatureStatistics":
        z = np.zeros(n_features)
        return cls(0, z, z.copy(), np.full(n_features, np.inf), np.full(n_features, -np.inf))

    @classmethod
    def from_csr(cls, indptr, indices, data, n_rows: int, n_features: int) -> "FeatureStatistics":
        """Statistics of one CSR block (scipy or memory-mapped arrays); absent entries are zeros."""
        if n_rows == 0:
            return cls.empty(n_features)
        idx = np.asarray(indices[: indptr[n_rows]], dtype=np.int64)
        val = np.asarray(data[: indptr[n_rows]], dtype=np.float64)
        total = np.bincount(idx, weights=val, minlength=n_features)[:n_features]
        nnz = np.bincount(idx, minlength=n_features)[:n_features]
        mean = total / n_rows
        zeros = n_rows - nnz
        # deviations of the stored values, plus the implicit zeros' (0 - mean)²; a feature near
        # the float64 limit overflows to inf here quietly: the overflow check reports it by name
        with np.errstate(over="ignore", invalid="ignore"):
            m2 = np.bincount(idx, weights=(val - mean[idx]) ** 2, minlength=n_features)[:n_features] \
                + zeros * mean**2
        lo = np.full(n_features, np.inf)
        hi = np.full(n_features, -np.inf)
        np.minimum.at(lo, idx, val)
        np.maximum.at(hi, idx, val)
        has_zero = zeros > 0
        lo[has_zero] = np.minimum(lo[has_zero], 0.0)
        hi[has_zero] = np.maximum(hi[has_zero], 0.0)
        return cls(int(n_rows), mean, m2, lo, hi)

    @classmethod
    def from_dense(cls, values: np.ndarray) -> "FeatureStatistics":
        """Statistics of dense rows, equal bit for bit to :meth:`from_csr` of the same rows."""
        n_rows, n_features = values.shape
        if n_rows == 0:
            return cls.empty(n_features)
        total, nnz, lo, hi = dense_column_sums(values, np.zeros(0))
        mean = total / n_rows
        zeros = n_rows - nnz
        with np.errstate(over="ignore", invalid="ignore"):  # inf quietly, as from_csr
            m2 = dense_column_sums(values, mean)[0] + zeros * mean**2
        has_zero = zeros > 0
        lo[has_zero] = np.minimum(lo[has_zero], 0.0)
        hi[has_zero] = np.maximum(hi[has_zero], 0.0)
        return cls(int(n_rows), mean, m2, lo, hi)

    def padded(self, n_features: int) -> "FeatureStatistics":
        """The same statistics over ``n_features`` columns (missing columns are all-zero)."""
        pad = n_features - self.n_features
        if pad <= 0:
            return self
        zero_lo, zero_hi = (0.0, 0.0) if self.count else (np.inf, -np.inf)
        return FeatureStatistics(self.count, np.pad(self.mean, (0, pad)), np.pad(self.m2, (0, pad)),
                                 np.pad(self.min, (0, pad), constant_values=zero_lo),
                                 np.pad(self.max, (0, pad), constant_values=zero_hi))

    def merge(self, other: "FeatureStatistics | None") -> "FeatureStatistics":
        """Statistics of the union of two disjoint row sets (Chan, Golub & LeVeque 1979)."""
        if other is None or other.count == 0:
            return self
        if self.count == 0:
            return other
        n = max(self.n_features, other.n_features)
        a, b = self.padded(n), other.padded(n)
        count = a.count + b.count
        with np.errstate(over="ignore", invalid="ignore"):  # inf statistics stay inf, quietly (as above)
            delta = b.mean - a.mean
            mean = a.mean + delta * (b.count / count)
            m2 = a.m2 + b.m2 + delta**2 * (a.count * b.count / count)
        return FeatureStatistics(count, mean, m2, np.minimum(a.min, b.min), np.maximum(a.max, b.max))


@dataclass
class PassResult:
    """Summed statistics, ``Xᵀc`` (if the kernel produced coefficients), kept state, and the
    column moments ``[Xᵀa, (X∘X)ᵀa]`` of the kernel's ``moment_coef`` ``a`` (if it gave one)."""

    stats: np.ndarray
    gradient: np.ndarray | None
    state: "StateHandle | None"
    moments: "list[np.ndarray] | None" = None


@dataclass
class ColumnMoments:
    """Kernel-weighted column moments from one pass (:meth:`Engine.column_moments`).

    Attributes
    ----------
    stats : float64 array (s,)
        The kernel's summed statistics.
    first : float64 array (n_features,)
        ``Xᵀc = Σ_i c_i x_i``.
    second : float64 array (n_features,)
        ``(X∘X)ᵀc = Σ_i c_i x_i²`` (column sums of squares weighted per row).
    """

    stats: np.ndarray
    first: np.ndarray
    second: np.ndarray


class StateHandle:
    """Opaque reference to per-block kernel state kept by an engine."""

    __slots__ = ("payload", "released")

    def __init__(self, payload: Any):
        self.payload = payload
        self.released = False


class Engine(ABC):
    """Runs passes over the training rows; knows nothing about the maths."""

    @property
    @abstractmethod
    def summary(self) -> DataSummary:
        """Sizes of the data (rows, features, groups, pairs)."""

    @abstractmethod
    def run(
        self,
        vector: np.ndarray,
        kernel: ScoreKernel,
        *,
        state: StateHandle | None = None,
        keep_state: bool = False,
    ) -> PassResult:
        """One pass: ``p = X vector``, ``kernel`` per block, ``Xᵀ c`` summed (and, when the
        kernel gives ``moment_coef`` ``a``, ``Xᵀa`` and ``(X∘X)ᵀa`` summed: ``PassResult.moments``).

        Parameters
        ----------
        vector : float64 array (n_features,)
        kernel : ScoreKernel
        state : StateHandle, optional
            State kept by an earlier pass; handed to the kernel block by block.
        keep_state : bool
            Keep the state this pass's kernel returns and return a handle to it.
        """

    @abstractmethod
    def release(self, state: StateHandle) -> None:
        """Free kept state."""

    @abstractmethod
    def column_moments(self, vector: np.ndarray, kernel: ScoreKernel) -> ColumnMoments:
        """One stateless pass: ``p = X vector``, ``kernel`` per block, then ``Xᵀc`` and ``(X∘X)ᵀc``.

        What a diagonal preconditioner needs (``diag(Xᵀ A X) ≈ Σ_i a_i x_i²``, see
        :func:`sparkrank.objectives.base.hessian_diagonal_estimate`).  Sums are double-double
        exact like :meth:`run`'s, so every engine gives the same float64 results.
        """

    def progress(self) -> dict[str, int]:
        """Work done since the last call, for solver log lines (e.g. passes, rows, groups).

        The in-process engine reports nothing; the Spark engine reports what its tasks did.
        """
        return {}

    @abstractmethod
    def feature_statistics(self) -> FeatureStatistics:
        """Per-feature count, mean, variance, min and max of the training rows (one pass)."""

    def close(self) -> None:
        """Release resources (cached data, sessions)."""

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
