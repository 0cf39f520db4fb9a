"""Nesterov's accelerated projected gradient with backtracking (li2014 Algorithm 1; FISTA form).

The solver minimises a smooth convex function over a convex set through an objective
that offers (:class:`ProjectedGradientProblem`)

* ``initial_point()`` — a feasible start with its value,
* ``projected_step(point, eta, L)`` — from the search point ``y = x_k + η(x_k − x_{k−1})``
  the step ``x₊ = Π(y − ∇F(y)/L)`` together with ``F(y)``, ``⟨∇F(y), x₊ − y⟩`` and
  ``‖x₊ − y‖²``, so the solver can test Nemirovski's condition
  ``F(x₊) ≤ F(y) + ⟨∇F(y), x₊ − y⟩ + (L/2)‖x₊ − y‖²`` and double ``L`` until it holds,
* ``release(point)``, ``primal_bound(F)`` and ``value(w)``/``n_features`` (the primal).

Momentum follows Beck & Teboulle (2009): ``t₊ = (1 + √(1 + 4t²))/2``, ``η = (t − 1)/t₊``;
it is reset (``t = 1``) when the objective goes up (O'Donoghue & Candès 2015's function
restart), which keeps the iteration monotone in practice without changing its rate.
It stops when ``|F_k − F_{k−1}| ≤ tol·|F_k|`` (li2014's relative change, default 1e-4),
when the step vanishes, or at ``max_iter``.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Protocol

import numpy as np

from .result import IterationCallback, SolverResult, engine_progress_text

log = logging.getLogger("sparkrank.apg")

#: Start of the Lipschitz estimate and its growth factor on a failed test.
INITIAL_L = 1.0
BACKTRACK_FACTOR = 2.0
MAX_BACKTRACKS = 60


class ProjectedGradientProblem(Protocol):
    """What :func:`apg` needs from an objective (see :mod:`sparkrank.objectives.toppush`)."""

    n_features: int

    def initial_point(self) -> Any: ...

    def projected_step(self, current: Any, eta: float, L: float) -> Any: ...

    def release(self, point: Any) -> None: ...

    def primal_bound(self, dual_value: float) -> float: ...

    def value(self, w: np.ndarray) -> float: ...


def apg(
    objective: ProjectedGradientProblem,
    w0: np.ndarray | None = None,
    *,
    tol: float = 1e-4,
    max_iter: int = 1000,
    callback: IterationCallback | None = None,
) -> SolverResult:
    """Minimise the objective's dual by accelerated projected gradient.

    Parameters
    ----------
    objective : ProjectedGradientProblem
        E.g. :class:`~sparkrank.objectives.toppush.TopPushObjective`.
    w0 : ndarray, optional
        Must be None or zeros: the dual starts at its feasible origin (``w = 0``); a primal
        warm start has no dual counterpart.
    tol : float
        Relative change of the dual objective between iterations.
    max_iter : int
        Cap on iterations (each is one engine pass plus one per backtracking step).
    callback : callable, optional
        ``callback(iteration, w, record)`` after every iteration.

    Returns
    -------
    SolverResult
        ``w(x_k)`` of the last dual iterate, ``objective`` = the primal value there (one
        extra pass); every history record has the dual value ``F``, the primal value at the
        search point, the duality gap bound, ``L`` and the backtracking count.
    """
    if w0 is not None and np.any(np.asarray(w0) != 0):
        raise ValueError("the accelerated projected gradient solver starts from the dual origin (w = 0); "
                         "a non-zero w0 cannot be used")
    if not (tol >= 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a finite non-negative number, got {tol!r}")
    t0 = time.perf_counter()
    current = objective.initial_point()
    L = INITIAL_L
    t = 1.0
    eta = 0.0
    best_primal = math.inf
    history: list[dict] = []
    converged = False
    message = f"reached max_iter={max_iter}"
    it = 0
    while it < max_iter:
        it += 1
        backtracks = 0
        while True:
            trial = objective.projected_step(current, eta, L)
            if trial.sufficient_decrease(L):
                break
            objective.release(trial.candidate)
            backtracks += 1
            if backtracks > MAX_BACKTRACKS:
                raise RuntimeError(f"backtracking did not find a Lipschitz estimate (L = {L:.3e}); "
                                   "the objective is not smooth or not finite")
            L *= BACKTRACK_FACTOR
        new = trial.candidate
        change = abs(new.value - current.value)
        increased = new.value > current.value
        objective.release(current)
        current = new
        best_primal = min(best_primal, trial.primal_y)
        gap = best_primal - objective.primal_bound(current.value)
        if increased:
            t, eta = 1.0, 0.0  # function restart
        else:
            t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            eta = (t - 1.0) / t_next
            t = t_next
        record = {
            "iter": it, "dual_objective": current.value, "primal_at_search_point": trial.primal_y,
            "gap": gap, "L": L, "backtracks": backtracks, "restart": increased,
            "positives_not_at_top": trial.not_at_top_y, "seconds": time.perf_counter() - t0,
            **(objective.engine_progress() if hasattr(objective, "engine_progress") else {}),
        }
        history.append(record)
        if callback is not None:
            callback(it, current.w, record)
        log.info("iter %3d  F %.6e  P(y) %.6e  gap %.3e  L %.3e  bt %d  not-top %d%s  %.2fs",
                 it, current.value, trial.primal_y, gap, L, backtracks, trial.not_at_top_y,
                 engine_progress_text(record), record["seconds"])
        if trial.dist2 == 0.0:
            converged, message = True, "projected gradient step is zero (stationary point)"
            break
        # a restart step (F went up) says nothing about convergence: its change can be tiny
        if not increased and change <= tol * abs(current.value):
            converged, message = True, "relative change of the dual objective below tolerance"
            break
    # li2014's model is w(x_k) of the last dual iterate.  (The best search point w(y) can
    # have a lower primal value early on, e.g. w = 0 at the start, but it is no model.)
    w = current.w.copy()
    objective.release(current)
    primal = objective.value(w)
    return SolverResult(w, primal, it, converged, history, time.perf_counter() - t0, message)
