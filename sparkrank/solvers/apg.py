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
It stops on a *certified* relative duality gap (issue 11): every pass at the search point
``y`` also gives the primal value ``P(w(y))`` of a real weight vector, and every feasible
dual iterate ``x_k`` gives the lower bound ``−F(x_k)/m ≤ min P`` (weak duality, li2014
Theorem 1).  With ``P_best`` the lowest primal value seen (its ``w`` is kept) and ``D_best``
the highest bound, ``P_best − min P ≤ P_best − D_best``; the solver stops when
``(P_best − D_best)/P_best ≤ tol`` (default 1e-3), when the step vanishes, or when
``max_iter`` passes (every backtracking trial counts) are spent.  li2014's own rule, a
relative change of ``F`` below 1e-4, certifies nothing: on a9a (λ = 1) it stopped at a
primal 5% above the optimum.  The returned model is the better of ``w(x_k)`` (one extra
pass) and the best search point, so the reported gap bounds its suboptimality.

A model at ``w = 0`` ranks nothing.  When the returned ``w`` is 0, or the certified bound shows
that no ``w`` improves on ``P(0)`` by more than the tolerance, the result says so
(``zero_solution``) and its message adds the objective's explanation
(``zero_solution_message``: for TopPush, why and which option to change).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Protocol

import numpy as np

from .callbacks import SolverReport
from .result import IterationCallback, IterationRecord, SolverResult
from .safeguards import NonFiniteError

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

    def value_at_zero(self) -> float: ...

    def zero_solution_message(self, certified: bool, bound: float) -> str: ...


def relative_gap(primal: float, dual_bound: float) -> float:
    """``(P − D)/P`` for a primal value ``P ≥ 0`` and a lower bound ``D`` (0 when ``P = D``)."""
    gap = primal - dual_bound
    if gap <= 0:
        return 0.0
    return gap / primal if primal > 0 else math.inf


def _momentum(t: float, restart: bool) -> tuple[float, float]:
    """FISTA's next ``(t, η)``: ``t' = (1 + √(1 + 4t²))/2``, ``η = (t - 1)/t'``; a function
    restart (the dual value went up) resets them to ``(1, 0)``."""
    if restart:
        return 1.0, 0.0
    t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
    return t_next, (t - 1.0) / t_next


def apg(
    objective: ProjectedGradientProblem,
    w0: np.ndarray | None = None,
    *,
    tol: float = 1e-3,
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
        Certified relative duality gap ``(P_best − D_best)/P_best`` to stop at.
    max_iter : int
        Cap on engine passes of projected steps (an iteration is one, plus one per
        backtracking trial).
    callback : callable, optional
        ``callback(record)`` after every iteration (:class:`IterationRecord`; its
        objective is the primal value at the search point).

    Returns
    -------
    SolverResult
        The model ``w`` (see the module docstring), ``objective`` = its primal value; every
        history record has the dual value ``F``, the primal value at the search point, the
        gap and relative gap, ``L`` and the backtracking count.

    Raises
    ------
    NonFiniteError
        The dual value at a search point is not finite, or no Lipschitz estimate makes the
        step finite (features overflow).
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
    best_primal, best_w = math.inf, current.w
    best_bound = objective.primal_bound(current.value)
    report = SolverReport(callback, log)
    converged = False
    message = f"reached max_iter={max_iter} passes"
    it = passes = 0
    while passes < max_iter:
        it += 1
        backtracks = 0
        while True:
            trial = objective.projected_step(current, eta, L)
            passes += 1
            if not math.isfinite(trial.value_y):
                objective.release(trial.candidate)
                raise NonFiniteError(f"the dual objective at the search point of iteration {it} is {float(trial.value_y):.3g}")
            if trial.sufficient_decrease(L) or passes >= max_iter:
                break
            objective.release(trial.candidate)
            backtracks += 1
            if backtracks > MAX_BACKTRACKS:
                raise NonFiniteError(f"backtracking did not find a Lipschitz estimate (L = {L:.3e}, dual value "
                                     f"{float(trial.candidate.value):.3g}): the step overflows")
            L *= BACKTRACK_FACTOR
        if not trial.sufficient_decrease(L):  # out of passes in the middle of backtracking
            objective.release(trial.candidate)
            it -= 1
            break
        new = trial.candidate
        increased = new.value > current.value
        objective.release(current)
        current = new
        if trial.primal_y < best_primal:
            best_primal, best_w = trial.primal_y, trial.w_search.copy()
        best_bound = max(best_bound, objective.primal_bound(current.value))
        gap = best_primal - best_bound
        rel_gap = relative_gap(best_primal, best_bound)
        t, eta = _momentum(t, increased)
        report(IterationRecord(
            it, trial.primal_y, rel_gap, "relative_gap", True, time.perf_counter() - t0,
            {"dual_objective": current.value, "primal_at_search_point": trial.primal_y, "gap": gap, "L": L,
             "backtracks": backtracks, "restart": increased, "positives_not_at_top": trial.not_at_top_y},
            w=current.w))
        if rel_gap <= tol:
            converged, message = True, "certified relative duality gap below tolerance"
            break
        if trial.dist2 == 0.0:
            converged, message = True, "projected gradient step is zero (stationary point)"
            break
    # the model: w(x_k) of the last dual iterate (one more pass for its primal value), or the
    # best search point when that one is better; the gap certifies whichever is returned
    w = current.w.copy()
    objective.release(current)
    primal = objective.value(w)
    if not primal <= best_primal:
        w, primal = best_w, best_primal
    rel_gap = relative_gap(primal, best_bound)
    if not math.isfinite(primal):
        raise NonFiniteError(f"the primal objective of the final model is {primal!r}")
    # w = 0 certified optimal to the tolerance (no w beats P(0) by more), or simply returned
    certified = best_bound >= objective.value_at_zero() * (1.0 - tol)
    zero = certified or not np.any(w)
    if zero:
        message = f"{message}; {objective.zero_solution_message(certified, best_bound)}"
        log.warning("%s", message)
    return SolverResult(w, primal, it, converged, report.history.records, time.perf_counter() - t0, message,
                        "relative gap", rel_gap, zero)
