"""Polak–Ribière nonlinear conjugate gradient (raykar2007 §4; Nocedal & Wright 2006 §5.2).

Directions ``d_{k+1} = -g_{k+1} + β d_k`` with ``β = max(0, g_{k+1}·(g_{k+1} - g_k)/‖g_k‖²)``
(PR+), restarted (``β = 0``) every ``n`` iterations (``n`` = number of features by default)
and replaced by ``-g`` whenever it is not a descent direction.

The line search uses gradients only, like raykar2007 (Newton–Raphson / secant on the
directional derivative): it looks for ``α`` with ``|φ'(α)| ≤ η|φ'(0)|`` where
``φ'(α) = ∇f(w + αd)·d``, by secant steps safeguarded by a bracket ``[α_lo, α_hi]`` with
``φ'(α_lo) < 0 < φ'(α_hi)`` (bisection when a secant step leaves it; geometric expansion until
the minimum is bracketed).  For a convex ``f``, ``φ' < 0`` on ``[0, α_lo]``, so falling back to
``α_lo`` after the evaluation cap still decreases ``f``.  No objective value is needed, which
matters for RankNCG: the exact log-sigmoid value is O(pairs) while the fast gradient is
O(m).  The value is logged only if the objective says it is cheap (``monitor_value``).

Preconditioning (default): PR+ on the variables ``D^{1/2} w`` with the objective's fixed
Hessian-diagonal estimate ``D`` (Nocedal & Wright 2006 §5.1 "preconditioning", Algorithm 5.3
carried to the nonlinear method): ``z = D⁻¹g``, ``β = z_{k+1}·(g_{k+1} − g_k)/(z_k·g_k)``,
``d = −z + βd``.  It does not change the problem, only the metric of the steps; badly scaled
features (units 1e-3 to 1e4) otherwise make CG crawl along the small-unit directions.

Stops when ``‖∇f(w_k)‖ ≤ tol·‖∇f(0)‖`` (tol = 1e-3, raykar2007 §6) or after ``max_iter``
line searches.  Preconditioned, the norm is ``√(gᵀD⁻¹g)``, which does not depend on the
units of the features (see :mod:`sparkrank.solvers.tron`); plain, it is Euclidean.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ..objectives.base import Objective
from .callbacks import SolverReport
from .result import IterationCallback, IterationRecord, SolverResult, gradient_ratio_result
from .safeguards import NonFiniteError, require_finite_start, stable_norm, start_point, zero_gradient_message

log = logging.getLogger("sparkrank.ncg")

#: Curvature tolerance η of the line search: accept ``|φ'(α)| ≤ η|φ'(0)|``.
LINE_SEARCH_ETA = 0.1
#: Gradient evaluations per line search before falling back to the bracket's lower end.
MAX_LINE_SEARCH = 30


class _LineSearch:
    """Safeguarded secant search for a root of ``φ'(α) = ∇f(w + αd)·d`` (convex ``f``)."""

    def __init__(self, objective: Objective, w: np.ndarray, d: np.ndarray, slope0: float, eta: float, max_evals: int):
        self.objective, self.w, self.d = objective, w, d
        self.slope0, self.eta, self.max_evals = slope0, eta, max_evals
        self.evals = 0

    def _probe(self, alpha: float):
        w_new = self.w + alpha * self.d
        g = self.objective.gradient(w_new)
        self.evals += 1
        return w_new, g, float(g @ self.d)

    def run(self, alpha: float):
        """Return ``(alpha, w_new, g_new)``, or ``alpha = 0`` when no descent was found."""
        lo, w_lo, g_lo = 0.0, None, None
        hi = math.inf
        prev, slope_prev = 0.0, self.slope0
        target = self.eta * abs(self.slope0)
        while self.evals < self.max_evals:
            w_new, g, slope = self._probe(alpha)
            if not (math.isfinite(slope) and np.all(np.isfinite(g))):
                hi = alpha  # overflow: treat as beyond the minimum
                alpha = lo + 0.25 * (alpha - lo)
                continue
            if abs(slope) <= target:
                return alpha, w_new, g
            if slope < 0:
                lo, w_lo, g_lo = alpha, w_new, g
            else:
                hi = alpha
            # secant step on φ' through the two latest points (Newton–Raphson with a
            # finite-difference φ''); φ' increases for convex f
            denom = slope - slope_prev
            cand = alpha - slope * (alpha - prev) / denom if denom > 0 else math.nan
            prev, slope_prev = alpha, slope
            if math.isinf(hi):
                alpha = min(max(cand, 2.0 * alpha), 10.0 * alpha) if math.isfinite(cand) else 4.0 * alpha
            else:
                width = hi - lo
                inside = math.isfinite(cand) and lo + 0.01 * width < cand < hi - 0.01 * width
                alpha = cand if inside else 0.5 * (lo + hi)
        if w_lo is None:
            return 0.0, self.w, None
        return lo, w_lo, g_lo


def _first_step(d: np.ndarray, slope: float, P: np.ndarray | None) -> float:
    """First trial step along ``d``: the minimiser of the diagonal model ``½sᵀPs + gᵀs``
    (1 for ``d = −P⁻¹g``, whatever the units), or a unit-length step without ``P``."""
    curvature = float(d @ (P * d)) if P is not None else 0.0
    if curvature > 0 and math.isfinite(curvature):
        return -slope / curvature
    return 1.0 / max(stable_norm(d), 1e-300)


def _start(objective: Objective, w0: np.ndarray | None, resume: dict | None, precondition: bool, monitor: bool):
    """The state :func:`ncg` starts its loop with: fresh at ``w0``, or ``resume``'s, with the
    preconditioner ``P`` (a fixed function of the data: recomputed bit for bit on resume) and
    the stopping rule's metric and norms."""
    n = objective.n_features
    if resume is None:
        w = start_point(w0, n)
        g = objective.gradient(w)
        f = objective.value(w) if monitor else math.nan
        require_finite_start(f if monitor else None, g)
    P = objective.hessian_diagonal(np.zeros(n)) if precondition else np.ones(n)
    metric = P if precondition else None
    if resume is None:
        gnorm = stable_norm(g, metric)
        # relative to the gradient at w = 0 even from a warm start (as tron.py)
        gnorm0 = gnorm if not np.any(w) else stable_norm(objective.gradient(np.zeros_like(w)), metric)
        return w, g, -(g / P), f, P, metric, gnorm, gnorm0, 0, 0, 0, None, None
    w, g, d, f, gnorm0 = resume["w"], resume["g"], resume["d"], float(resume["f"]), float(resume["gnorm0"])
    return (w, g, d, f, P, metric, stable_norm(g, metric), gnorm0, int(resume["since_restart"]), int(resume["iter"]),
            int(resume["trial"]), resume["alpha_prev"], resume["slope_prev"])


def ncg(
    objective: Objective,
    w0: np.ndarray | None = None,
    *,
    tol: float = 1e-3,
    max_iter: int = 1000,
    callback: IterationCallback | None = None,
    restart_every: int | None = None,
    eta: float = LINE_SEARCH_ETA,
    max_line_search: int = MAX_LINE_SEARCH,
    precondition: bool = True,
    resume: dict | None = None,
) -> SolverResult:
    """Minimise a smooth convex objective by (preconditioned) Polak–Ribière (PR+) nonlinear CG.

    Parameters
    ----------
    objective : Objective
        Needs ``gradient`` (and ``hessian_diagonal`` when preconditioning); ``value`` is
        called per iteration only when the objective's ``monitor_value`` is true (the
        :class:`~sparkrank.objectives.base.Objective` default), else records hold NaN.
    w0 : ndarray, optional
        Start (zeros by default); must be finite.
    tol : float
        Relative gradient-norm tolerance: stop when ``‖∇f(w)‖ ≤ tol·‖∇f(0)‖``.
    max_iter : int
        Cap on line searches (each is one iteration; a failed one counts too).
    callback : callable, optional
        ``callback(record)`` after every iteration (:class:`IterationRecord`).
    restart_every : int, optional
        Reset ``β = 0`` every this many iterations (default: number of features).
    eta : float
        Line-search curvature tolerance (``0 < η < 1``; smaller is more exact).
    max_line_search : int
        Gradient evaluations per line search.
    precondition : bool
        Use the objective's Hessian-diagonal estimate as a fixed preconditioner and as the
        stopping rule's metric (default); False gives plain PR+ with the Euclidean rule.
    resume : dict, optional
        ``record.state`` of an earlier run's iteration (``w``, gradient, direction,
        ``f``, ``‖∇f(0)‖``, the previous step and slope, the restart counter and the counts):
        continue exactly as that run did (``w0`` is then ignored; the preconditioner, a fixed
        function of the data, is recomputed bit for bit).

    Raises
    ------
    NonFiniteError
        The gradient (or monitored value) at the start is not finite.
    """
    if not (0.0 < eta < 1.0):
        raise ValueError(f"eta must be in (0, 1), got {eta!r}")
    t0 = time.perf_counter()
    monitor = bool(objective.monitor_value)
    n_restart = restart_every or max(1, objective.n_features)
    (w, g, d, f, P, metric, gnorm, gnorm0, since_restart, it, trials, alpha_prev,
     slope_prev) = _start(objective, w0, resume, precondition, monitor)
    if not math.isfinite(gnorm0):
        raise NonFiniteError(f"the gradient at w = 0 is not finite (norm {gnorm0!r})")
    z = g / P
    report = SolverReport(callback, log)
    message = zero_gradient_message() if gnorm0 == 0 else None
    converged = gnorm0 > 0 and gnorm <= tol * gnorm0
    while not converged and gnorm0 > 0 and trials < max_iter:
        trials += 1
        slope = float(g @ d)
        restarted = False
        if not slope < 0:  # not a descent direction: (preconditioned) steepest descent
            d, slope, restarted = -z, -float(g @ z), True
        if not slope < 0:  # gᵀP⁻¹g is 0 or NaN although ‖g‖ > 0: the products underflow
            message = f"the gradient's squared norm is {-slope!r} in float64 (underflow); no step possible"
            break
        # initial step: the previous step's first-order change (Nocedal & Wright eq. (3.60))
        if alpha_prev:
            alpha0 = alpha_prev * slope_prev / slope
        else:
            alpha0 = _first_step(d, slope, P if precondition else None)
        ls = _LineSearch(objective, w, d, slope, eta, max_line_search)
        alpha, w_new, g_new = ls.run(alpha0)
        if g_new is None and not restarted and trials < max_iter:
            trials += 1  # the steepest-descent retry is a trial of its own
            d, slope, restarted = -z, -float(g @ z), True
            ls2 = _LineSearch(objective, w, d, slope, eta, max_line_search)
            alpha, w_new, g_new = ls2.run(_first_step(d, slope, P if precondition else None))
            ls.evals += ls2.evals
        if g_new is None:
            message = "line search found no descent (gradient too inexact for the tolerance?)"
            break
        it += 1
        since_restart = 1 if restarted else since_restart + 1
        z_new = g_new / P
        # PR+ (raykar2007 §4 uses Polak–Ribière), preconditioned; restart every n iterations
        beta = max(0.0, float(z_new @ (g_new - g)) / float(z @ g))
        if since_restart >= n_restart:
            beta, since_restart = 0.0, 0
        alpha_prev, slope_prev = alpha, slope
        w, g, z = w_new, g_new, z_new
        gnorm = stable_norm(g, metric)
        d = -z + beta * d
        if monitor:
            f = objective.value(w)
        report(IterationRecord(
            it, f, gnorm / gnorm0, "grad_ratio", True, time.perf_counter() - t0,
            {"grad_norm": gnorm, "step": alpha, "line_search": ls.evals, "beta": beta, "restart": restarted,
             **objective.progress(w)},
            w=w, state={"iter": it, "trial": trials, "w": w, "g": g, "d": d, "f": f, "gnorm0": gnorm0,
                        "since_restart": since_restart, "alpha_prev": alpha_prev, "slope_prev": slope_prev}))
        if gnorm <= tol * gnorm0:
            converged = True
            break
    if converged:
        message = "gradient norm below tolerance"
    elif message is None:
        message = f"reached max_iter={max_iter}"
    return gradient_ratio_result(w, f, it, converged, report.history.records, time.perf_counter() - t0, message,
                                 gnorm, gnorm0)
