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
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..data.digest import DataDigest
from ..kernels.base import ScoreKernel
from ..numerics.exact_sum import DoubleDouble, column_sums_dd, dd_add, dd_round


@dataclass(frozen=True)
class DataSummary:
    """Sizes of the training data as an engine sees it."""

    n_rows: int
    n_features: int
    n_groups: int
    n_pairs: int
    n_groups_without_pairs: int
    #: Whether rows or groups carry weights (:mod:`sparkrank.data.weights`); ``n_pairs`` counts
    #: the pairs whatever their weights.
    weighted: bool = False


@dataclass(frozen=True)
class ColumnTotals:
    """The first of the two passes of :class:`FeatureStatistics` over some rows: how many, and per
    column the exact sum of the non-zero entries (a double-double), their count, min and max.
    Totals of disjoint row sets add up in any order to the same bits
    (:func:`~sparkrank.numerics.exact_sum.column_sums_dd`)."""

    count: int
    total: DoubleDouble
    nonzero: np.ndarray
    min: np.ndarray
    max: np.ndarray

    @classmethod
    def of_rows(cls, X, n_features: int) -> "ColumnTotals":
        """The totals of ``X``'s rows (dense rows, or CSR: scipy, or memory-mapped arrays)."""
        total, nonzero, low, high = column_sums_dd(X, n_features)
        return cls(int(X.shape[0]), total, nonzero, low, high).padded(n_features)

    def padded(self, n_features: int) -> "ColumnTotals":
        """The same totals over ``n_features`` columns (missing columns hold no non-zero entry)."""
        pad = n_features - self.nonzero.shape[0]
        if pad <= 0:
            return self
        return ColumnTotals(self.count, tuple(np.pad(t, (0, pad)) for t in self.total),
                            np.pad(self.nonzero, (0, pad)), np.pad(self.min, (0, pad), constant_values=np.inf),
                            np.pad(self.max, (0, pad), constant_values=-np.inf))

    def add(self, other: "ColumnTotals | None") -> "ColumnTotals":
        """The totals of the union of two disjoint row sets."""
        if other is None:
            return self
        n = max(self.nonzero.shape[0], other.nonzero.shape[0])
        a, b = self.padded(n), other.padded(n)
        return ColumnTotals(a.count + b.count, dd_add(a.total, b.total), a.nonzero + b.nonzero,
                            np.minimum(a.min, b.min), np.maximum(a.max, b.max))

    def mean(self) -> np.ndarray:
        """Per-column mean over all rows (implicit zeros included)."""
        return dd_round(self.total) / self.count if self.count else np.zeros_like(self.min)


@dataclass(frozen=True)
class FeatureStatistics:
    """Per-feature count, mean, variance, min and max over all rows (implicit zeros included).

    Two passes, each an exact (double-double) sum, so every engine and partitioning gives the
    same bits: :class:`ColumnTotals` (the sums, hence the mean), then the sums of squared
    deviations from that mean (:meth:`from_totals`); not ``Σx² − (Σx)²/n``, which cancels.

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
    def from_totals(cls, totals: ColumnTotals, squares: DoubleDouble) -> "FeatureStatistics":
        """The statistics from all rows' :class:`ColumnTotals` and the exact sums ``squares`` of
        ``(x − mean)²`` over their non-zero entries (``column_sums_dd`` with ``totals.mean()``)."""
        n = totals.nonzero.shape[0]
        if totals.count == 0:
            return cls.empty(n)
        mean = totals.mean()
        zeros = totals.count - totals.nonzero
        # the implicit zeros' (0 - mean)²; a feature near the float64 limit overflows to inf here
        # quietly: the overflow check reports it by name
        with np.errstate(over="ignore", invalid="ignore"):
            m2 = dd_round(squares) + zeros * mean**2
        low, high = totals.min.copy(), totals.max.copy()
        has_zero = zeros > 0
        low[has_zero] = np.minimum(low[has_zero], 0.0)
        high[has_zero] = np.maximum(high[has_zero], 0.0)
        return cls(int(totals.count), mean, m2, low, high)

    @classmethod
    def of_rows(cls, X, n_features: int | None = None) -> "FeatureStatistics":
        """The statistics of ``X``'s rows (dense rows, or CSR), both passes in this process."""
        n = X.shape[1] if n_features is None else n_features
        totals = ColumnTotals.of_rows(X, n)
        return cls.from_totals(totals, column_sums_dd(X, n, totals.mean())[0] if totals.count else (0.0, 0.0))

    @classmethod
    def from_csr(cls, indptr, indices, data, n_rows: int, n_features: int) -> "FeatureStatistics":
        """:meth:`of_rows` of CSR arrays (scipy's, or memory-mapped ones); absent entries are zeros."""
        return cls.of_rows(SimpleNamespace(indptr=indptr, indices=indices, data=data, shape=(n_rows, n_features)))

    @classmethod
    def from_dense(cls, values: np.ndarray) -> "FeatureStatistics":
        """:meth:`of_rows` of dense rows: equal bit for bit to :meth:`from_csr` of the same rows."""
        return cls.of_rows(values)

    def padded(self, n_features: int) -> "FeatureStatistics":
        """The same statistics over ``n_features`` columns (missing columns are all-zero)."""
        pad = n_features - self.n_features
        if pad <= 0:
            return self
        zero_lo, zero_hi = (0.0, 0.0) if self.count else (np.inf, -np.inf)
        return FeatureStatistics(self.count, np.pad(self.mean, (0, pad)), np.pad(self.m2, (0, pad)),
                                 np.pad(self.min, (0, pad), constant_values=zero_lo),
                                 np.pad(self.max, (0, pad), constant_values=zero_hi))


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

    @abstractmethod
    def data_digest(self) -> DataDigest:
        """The :class:`~sparkrank.data.digest.DataDigest` of the rows: every group id, label,
        feature value and index (one pass, on first use; what a checkpoint is resumed against).
        The same rows give the same digest on every engine and partitioning."""

    def close(self) -> None:
        """Release resources (cached data, sessions)."""

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
