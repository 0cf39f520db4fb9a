"""What every score-space kernel is and returns (docs/design.md §2, step 2).

A kernel maps the scores ``p = X v`` of whole query groups (and their labels) to additive
statistics and per-row coefficients ``c``; an engine (:mod:`sparkrank.engines`) runs it
where the rows live and turns ``c`` into ``Xᵀ c``.  Kernels know nothing of ``X``, of
engines or of Spark; engines know nothing of what a kernel computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from ..data.groups import QueryGroups
from ..numerics.exact_sum import dd_add, dd_round, sum_dd


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
    stats_lo : float64 array (s,) or None
        Low parts of ``stats`` when the kernel summed them as double-doubles
        (:mod:`sparkrank.numerics.exact_sum`); engines then merge blocks without order
        dependence, so every engine and partitioning gives the same float64 totals.
    moment_coef : float64 array (m_block,) or None
        Per-row weights ``a`` whose column moments ``Xᵀa`` and ``(X∘X)ᵀa`` the engine also
        returns, summed over blocks, from the same pass (a diagonal preconditioner's weights,
        computed where the kernel already has what they need).
    """

    stats: np.ndarray
    coef: np.ndarray | None = None
    state: Any = None
    stats_lo: np.ndarray | None = None
    moment_coef: np.ndarray | None = None

    def stats_dd(self) -> tuple[np.ndarray, np.ndarray]:
        """``(stats, stats_lo)`` as float64 arrays (``lo`` zeros if the kernel gave none)."""
        hi = np.asarray(self.stats, dtype=np.float64)
        lo = np.zeros_like(hi) if self.stats_lo is None else np.asarray(self.stats_lo, dtype=np.float64)
        return hi, lo


class ScoreKernel:
    """Base of every score-space kernel: a picklable callable ``(groups, scores, state) -> KernelResult``.

    ``scores`` is ``X v`` for the rows of ``groups`` (float64), ``state`` the block's state
    from an earlier pass or ``None``.  Kernels are small frozen dataclasses so the Spark
    engine can ship them to executors.

    Engines may run a kernel on several blocks of whole groups and add up the results, so a
    kernel's output for a group must depend on that group alone.  A kernel that ranks
    across group boundaries (TopPush's global scope) sets :attr:`spans_groups`: the local
    engine then runs it on all rows as one block, the Spark engine's driver placement always
    does, and its executor placement gives one block per partition (TopPush's objective
    counts the blocks and refuses more than one).
    """

    #: True when the kernel's output for a group depends on other groups (one block needed).
    spans_groups: ClassVar[bool] = False
    #: The names of ``KernelResult.stats``, in order: callers read an engine's summed vector
    #: by name (``Statistics.of(kernel.statistics, stats)[name]``), never by position.
    statistics: ClassVar[tuple[str, ...]] = ()
    #: The name of a compiled per-group form of the kernel (:mod:`sparkrank.kernels.group_forms`)
    #: that engines may run group by group instead of calling the kernel on a tile
    #: (:mod:`sparkrank.engines.group_passes`): the same coefficients, bit for bit.
    group_form: ClassVar[str | None] = None

    def named(self, stats: np.ndarray) -> "Statistics":
        """An engine's summed ``stats`` of this kernel, by name."""
        return Statistics.of(self.statistics, stats)

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state: Any) -> KernelResult:
        raise TypeError(f"{type(self).__name__} does not define __call__")


class Statistics:
    """Named additive statistics of one block, summed exactly and merged by name.

    Each value is a double-double ``hi + lo`` (:mod:`sparkrank.numerics.exact_sum`), so
    merging blocks in any order (:meth:`merge`, or an engine adding the
    :meth:`result` arrays block by block) rounds to the same float64 totals.  The order of
    :attr:`names` is the order of ``KernelResult.stats``; :meth:`of` reads an engine's summed
    vector back by name.

    Parameters
    ----------
    names : tuple of str
    hi, lo : float64 arrays (len(names),)
    """

    __slots__ = ("names", "hi", "lo", "_index")

    def __init__(self, names: tuple[str, ...], hi: np.ndarray, lo: np.ndarray | None = None):
        self.names = tuple(names)
        self.hi = np.asarray(hi, dtype=np.float64)
        self.lo = np.zeros_like(self.hi) if lo is None else np.asarray(lo, dtype=np.float64)
        if self.hi.shape != (len(self.names),) or self.lo.shape != self.hi.shape:
            raise ValueError(f"{len(self.names)} statistic names but values of shape {self.hi.shape}")
        self._index = {name: i for i, name in enumerate(self.names)}

    @classmethod
    def summed(cls, values: Mapping[str, np.ndarray | float]) -> "Statistics":
        """Each named value (a scalar, or an array whose entries are added up) as an exact sum."""
        names = tuple(values)
        hi, lo = np.empty(len(names)), np.empty(len(names))
        for i, name in enumerate(names):
            hi[i], lo[i] = sum_dd(np.atleast_1d(np.asarray(values[name], dtype=np.float64)))
        return cls(names, hi, lo)

    @classmethod
    def of(cls, names: tuple[str, ...], stats: np.ndarray) -> "Statistics":
        """Statistics named ``names`` from an engine's summed vector (all zero when no block ran)."""
        stats = np.asarray(stats, dtype=np.float64)
        return cls(names, np.zeros(len(names)) if stats.size == 0 else stats)

    def merge(self, other: "Statistics") -> "Statistics":
        """The statistics of both blocks (same names, added exactly)."""
        if other.names != self.names:
            raise ValueError(f"cannot merge statistics {other.names} into {self.names}")
        hi, lo = dd_add((self.hi, self.lo), (other.hi, other.lo))
        return Statistics(self.names, hi, lo)

    def __getitem__(self, name: str) -> float:
        i = self._index[name]
        return float(self.hi[i] + self.lo[i])

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.names, dd_round((self.hi, self.lo)).tolist()))

    def result(self, coef: np.ndarray | None = None, state: Any = None,
               moment_coef: np.ndarray | None = None) -> KernelResult:
        """These statistics as what a kernel returns to an engine."""
        return KernelResult(self.hi.copy(), coef, state, stats_lo=self.lo.copy(), moment_coef=moment_coef)
