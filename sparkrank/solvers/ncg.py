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

Stops when ``‖∇f(w_k)‖ ≤ tol·‖∇f(0)‖`` (tol = 1e-3, raykar2007 §6) or after ``max_iter``.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ..objectives.base import Objective
from .result import IterationCallback, SolverResult, engine_progress_text

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
        lo, slope_lo, w_lo, g_lo = 0.0, self.slope0, None, None
        hi, slope_hi = math.inf, math.nan
        prev, slope_prev = 0.0, self.slope0
        target = self.eta * abs(self.slope0)
        while self.evals < self.max_evals:
            w_new, g, slope = self._probe(alpha)
            if not (math.isfinite(slope) and np.all(np.isfinite(g))):
                hi, slope_hi = alpha, math.inf  # overflow: treat as beyond the minimum
                alpha = lo + 0.25 * (alpha - lo)
                continue
            if abs(slope) <= target:
                return alpha, w_new, g
            if slope < 0:
                lo, slope_lo, w_lo, g_lo = alpha, slope, w_new, g
            else:
                hi, slope_hi = alpha, slope
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
) -> SolverResult:
    """Minimise a smooth convex objective by Polak–Ribière (PR+) nonlinear CG.

    Parameters
    ----------
    objective : Objective
        Needs ``gradient``; ``value`` is called per iteration only when the objective's
        ``monitor_value`` attribute is true (default true), else records hold NaN.
    w0 : ndarray, optional
        Start (zeros by default).
    tol : float
        Relative gradient-norm tolerance: stop when ``‖∇f(w)‖ ≤ tol·‖∇f(0)‖``.
    max_iter : int
        Cap on CG iterations.
    callback : callable, optional
        ``callback(iteration, w, record)`` after every iteration.
    restart_every : int, optional
        Reset ``β = 0`` every this many iterations (default: number of features).
    eta : float
        Line-search curvature tolerance (``0 < η < 1``; smaller is more exact).
    max_line_search : int
        Gradient evaluations per line search.
    """
    if not (0.0 < eta < 1.0):
        raise ValueError(f"eta must be in (0, 1), got {eta!r}")
    t0 = time.perf_counter()
    monitor = bool(getattr(objective, "monitor_value", True))
    w = np.zeros(objective.n_features) if w0 is None else np.array(w0, dtype=np.float64)
    g = objective.gradient(w)
    gnorm = float(np.linalg.norm(g))
    # relative to the gradient at w = 0 even from a warm start (as tron.py)
    gnorm0 = gnorm if not np.any(w) else float(np.linalg.norm(objective.gradient(np.zeros_like(w))))
    f = objective.value(w) if monitor else math.nan
    n_restart = restart_every or max(1, objective.n_features)
    d = -g
    since_restart = 0
    alpha_prev = slope_prev = None
    history: list[dict] = []
    message = "gradient norm below tolerance"
    converged = gnorm <= tol * gnorm0 or gnorm == 0.0
    it = 0
    while not converged and it < max_iter:
        slope = float(g @ d)
        restarted = False
        if not slope < 0:  # not a descent direction: steepest descent
            d, slope, restarted = -g, -gnorm * gnorm, True
        # initial step: the previous step's first-order change (Nocedal & Wright eq. (3.60))
        if alpha_prev:
            alpha0 = alpha_prev * slope_prev / slope
        else:
            alpha0 = 1.0 / max(float(np.linalg.norm(d)), 1e-300)
        ls = _LineSearch(objective, w, d, slope, eta, max_line_search)
        alpha, w_new, g_new = ls.run(alpha0)
        if g_new is None and not restarted:
            d, slope, restarted = -g, -gnorm * gnorm, True
            ls2 = _LineSearch(objective, w, d, slope, eta, max_line_search)
            alpha, w_new, g_new = ls2.run(1.0 / max(gnorm, 1e-300))
            ls.evals += ls2.evals
        if g_new is None:
            message = "line search found no descent (gradient too inexact for the tolerance?)"
            break
        it += 1
        since_restart = 1 if restarted else since_restart + 1
        # PR+ (raykar2007 §4 uses Polak–Ribière); restart every n iterations
        beta = max(0.0, float(g_new @ (g_new - g)) / float(g @ g))
        if since_restart >= n_restart:
            beta, since_restart = 0.0, 0
        alpha_prev, slope_prev = alpha, slope
        w, g = w_new, g_new
        gnorm = float(np.linalg.norm(g))
        d = -g + beta * d
        if monitor:
            f = objective.value(w)
        record = {
            "iter": it, "objective": f, "grad_norm": gnorm, "step": alpha, "line_search": ls.evals,
            "beta": beta, "restart": restarted, "seconds": time.perf_counter() - t0, **objective.progress(w),
        }
        history.append(record)
        if callback is not None:
            callback(it, w, record)
        log.info("iter %3d  f %.6e  |g| %.3e  step %.3e  ls %2d  beta %.3f%s%s  %.2fs",
                 it, f, gnorm, alpha, ls.evals, beta, "  restart" if restarted else "",
                 engine_progress_text(record), record["seconds"])
        if gnorm <= tol * gnorm0:
            converged = True
            break
    if not converged and it >= max_iter:
        message = f"reached max_iter={max_iter}"
    return SolverResult(w, f, it, converged, history, time.perf_counter() - t0, message)
