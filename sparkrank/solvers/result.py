"""What every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

#: The key of the record a solver hands its callback that holds everything the solver needs to
#: continue exactly from that iteration (its ``resume=`` argument; see :mod:`sparkrank.checkpoints`).
#: Only the callback sees it: the history keeps plain facts.
STATE_KEY = "resume_state"


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
        One record per iteration (the same facts as the log line).
    seconds : float
        Wall time.
    message : str
        Why the solver stopped.
    measure : str
        What the stopping rule compares with the tolerance (``gradient ratio``,
        ``relative gap``, ``gap``), for summaries.
    measure_value : float
        Its value when the solver stopped.
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


#: ``callback(iteration, w, record)``: called by every solver once per iteration with the
#: current solution and the iteration's log record (the same dict as in ``history``).
IterationCallback = Callable[[int, np.ndarray, dict[str, Any]], None]


def engine_progress_text(record: dict[str, Any]) -> str:
    """``"  rows R  groups G  passes P"`` when the record carries engine work (Spark), else ``""``."""
    if "rows" not in record:
        return ""
    return f"  rows {record['rows']}  groups {record['groups']}  passes {record['passes']}"
