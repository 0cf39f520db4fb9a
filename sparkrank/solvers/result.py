"""What every solver reports: one :class:`IterationRecord` per iteration, and a :class:`SolverResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class IterationRecord:
    """One solver iteration, the same shape for every solver (like LightGBM's ``CallbackEnv``).

    Attributes
    ----------
    iteration : int
        Accepted iterations so far (a rejected trial step repeats the last number).
    objective : float
        Objective value of the current solution, NaN when the solver does not compute it
        (RankNCG's fast gradient without ``monitor``).
    measure : float
        What the stopping rule compares with the tolerance (:attr:`measure_name`).
    measure_name : str
        ``grad_ratio`` (‖∇f‖/‖∇f(0)‖: TRON, NCG), ``gap`` (BMRM), ``relative_gap`` (TopPush).
    accepted : bool
        Whether the step moved the solution (TRON's rejected trust-region steps do not).
    seconds : float
        Wall time since the solver started.
    extras : dict
        Solver-specific plain facts (support pairs, trust-region radius, L, ...); callbacks
        may add to it (the engine's work on Spark) before history and log see it.
    w : ndarray
        The current solution (not part of :meth:`as_dict`).
    state : dict or None
        Everything the solver needs to continue exactly from here (its ``resume=`` argument,
        :mod:`sparkrank.checkpoints`); None for a solver that cannot resume or a rejected step.
    """

    iteration: int
    objective: float
    measure: float
    measure_name: str
    accepted: bool
    seconds: float
    extras: dict[str, Any] = field(default_factory=dict)
    w: np.ndarray | None = field(default=None, repr=False)
    state: dict[str, Any] | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The plain facts, as history and model files keep them (:meth:`from_dict` reads them back)."""
        return {"iter": self.iteration, "objective": self.objective, self.measure_name: self.measure,
                "measure_name": self.measure_name, "accepted": self.accepted, "seconds": self.seconds,
                **self.extras}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "IterationRecord":
        """A history entry as a record (also one written before records named their measure)."""
        name = d.get("measure_name") or next((k for k in _MEASURES if k in d), "")
        main = {"iter", "objective", "measure_name", "accepted", "seconds", name}
        return cls(int(d["iter"]), float(d.get("objective", math.nan)), float(d.get(name, math.nan)), name,
                   bool(d.get("accepted", True)), float(d.get("seconds", math.nan)),
                   {k: v for k, v in d.items() if k not in main})


#: The stopping measures, in the order old history entries are searched for one.
_MEASURES = ("grad_ratio", "relative_gap", "gap")


#: ``callback(record)``: called by every solver once per iteration (rejected steps included).
IterationCallback = Callable[[IterationRecord], None]


@dataclass
class SolverResult:
    """Weights and a training summary.

    Attributes
    ----------
    w : ndarray
        The solution.
    objective : float
        Objective value at ``w``.
    iterations : int
        Outer iterations run.
    converged : bool
        Whether the stopping rule was met (not the iteration cap).
    history : list of dict
        :meth:`IterationRecord.as_dict` of every iteration.
    seconds : float
        Wall time.
    message : str
        Why the solver stopped.
    measure : str
        What the stopping rule compares with the tolerance (``gradient ratio``,
        ``relative gap``, ``gap``), for summaries.
    measure_value : float
        Its value when the solver stopped.
    zero_solution : bool
        The solution is ``w = 0``, or within the tolerance of it (a model that ranks nothing);
        ``message`` then says why and what to change.
    """

    w: np.ndarray
    objective: float
    iterations: int
    converged: bool
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    message: str = ""
    measure: str = ""
    measure_value: float = float("nan")
    zero_solution: bool = False


def gradient_ratio_result(w: np.ndarray, f: float, iterations: int, converged: bool, history: list[dict],
                          seconds: float, message: str, gnorm: float, gnorm0: float) -> SolverResult:
    """The result of a solver that stops on ``‖∇f(w)‖ ≤ tol·‖∇f(w₀)‖`` (TRON, NCG): LIBLINEAR's rule."""
    ratio = gnorm / gnorm0 if gnorm0 > 0 else float("nan")
    return SolverResult(w, f, iterations, converged, history, seconds, message, "gradient ratio", ratio)


def accepted_records(history: list[dict]) -> list[IterationRecord]:
    """The records of a history's accepted iterations (a rejected trial step moves nothing)."""
    return [r for r in map(IterationRecord.from_dict, history) if r.accepted]
