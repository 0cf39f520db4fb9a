"""What every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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
    """

    w: np.ndarray
    objective: float
    iterations: int
    converged: bool
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    message: str = ""
