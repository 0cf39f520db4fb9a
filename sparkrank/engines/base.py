"""The engine interface: where ``X·w``, the score-space kernel and ``Xᵀ·c`` run.

An objective asks an engine for one *pass*: ``p = X v`` over all rows, a
:class:`ScoreKernel` applied to the scores of whole query groups, and ``Xᵀ c`` of the
coefficients the kernel returns, summed over blocks (Spark ML's ``RDDLossFunction``
shape: broadcast the vector, aggregate per-block results, release the broadcast).  A
kernel may keep per-block state (sorted order, scores) that a later pass at the same
point reuses; the engine keeps it where the block lives and hands back an opaque
:class:`StateHandle`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..data.groups import QueryGroups


@dataclass
class KernelResult:
    """What a score-space kernel returns for one block of whole query groups.

    Attributes
    ----------
    stats : float64 array (s,)
        Additive statistics (loss partial sums, counts); summed over blocks.
    coef : float64 array (m_block,) or None
        Per-row coefficients ``c``; the engine returns ``Xᵀ c`` summed over blocks.
    state : object
        Block-local state to keep for later passes (only if the caller asked).
    """

    stats: np.ndarray
    coef: np.ndarray | None = None
    state: Any = None


class ScoreKernel(Protocol):
    """A picklable callable ``(groups, scores, state) -> KernelResult``.

    ``scores`` is ``X v`` for the rows of ``groups`` (float64), ``state`` the block's state
    from an earlier pass or ``None``.
    """

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state: Any) -> KernelResult: ...


@dataclass(frozen=True)
class DataSummary:
    """Sizes of the training data as an engine sees it."""

    n_rows: int
    n_features: int
    n_groups: int
    n_pairs: int
    n_groups_without_pairs: int


@dataclass
class PassResult:
    """Summed statistics, ``Xᵀc`` (if the kernel produced coefficients) and kept state."""

    stats: np.ndarray
    gradient: np.ndarray | None
    state: "StateHandle | None"


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
        """One pass: ``p = X vector``, ``kernel`` per block, ``Xᵀ c`` summed.

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

    def close(self) -> None:
        """Release resources (cached data, sessions)."""

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
