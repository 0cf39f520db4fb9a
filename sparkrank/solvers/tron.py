"""Trust-region Newton (TRON) as in LIBLINEAR's ``tron.cpp`` and lee-lin2014 §4.1.

The solver sees only ``value``, ``gradient`` and ``hessian_vector`` of an objective.
Steihaug conjugate gradient solves the trust-region subproblem; the radius update uses
η0=1e-4, η1=0.25, η2=0.75, σ1=0.25, σ2=0.5, σ3=4 (Lin, Weng & Keerthi 2008).  It stops
when ``‖∇f(w_k)‖ ≤ ε‖∇f(0)‖``.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from ..objectives.base import Objective
from .result import IterationCallback, SolverResult, engine_progress_text

log = logging.getLogger("sparkrank.tron")

ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0


def _steihaug_cg(objective: Objective, w: np.ndarray, g: np.ndarray, delta: float, max_cg: int):
    """Approximately minimise ``gᵀs + ½ sᵀHs`` s.t. ``‖s‖ ≤ δ`` (tron.cpp ``trcg``).

    Returns the step ``s``, the residual ``r = -g - Hs`` and the CG iteration count.
    """
    s = np.zeros_like(g)
    r = -g
    d = r.copy()
    rtr = float(r @ r)
    cg_tol = 0.1 * np.sqrt(float(g @ g))
    it = 0
    while np.sqrt(rtr) > cg_tol and it < max_cg:
        it += 1
        hd = objective.hessian_vector(w, d)
        dhd = float(d @ hd)
        alpha = rtr / dhd if dhd > 0 else np.inf
        s_next = s + alpha * d
        if not np.isfinite(alpha) or np.linalg.norm(s_next) > delta:
            # step to the trust-region boundary along d
            std, sts, dtd = float(s @ d), float(s @ s), float(d @ d)
            rad = np.sqrt(max(std * std + dtd * (delta * delta - sts), 0.0))
            alpha = (delta * delta - sts) / (std + rad) if std >= 0 else (rad - std) / dtd
            s = s + alpha * d
            r = r - alpha * hd
            break
        s = s_next
        r = r - alpha * hd
        rnew = float(r @ r)
        d = r + (rnew / rtr) * d
        rtr = rnew
    return s, r, it


def tron(
    objective: Objective,
    w0: np.ndarray | None = None,
    *,
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_cg: int = 1000,
    callback: IterationCallback | None = None,
    resume: dict | None = None,
) -> SolverResult:
    """Minimise a twice-differentiable objective by trust-region Newton.

    Parameters
    ----------
    objective : Objective
        Needs ``value``, ``gradient`` and ``hessian_vector``.
    w0 : ndarray, optional
        Start (zeros by default, as lee-lin2014).
    tol : float
        Relative gradient-norm tolerance ε.
    max_iter : int
        Cap on outer (Newton) iterations.
    max_cg : int
        Cap on CG iterations per Newton step.
    callback : callable, optional
        ``callback(iteration, w, record)`` after every iteration (checkpoints, progress).
    resume : dict, optional
        ``{"iter": k, "delta": Δ}`` of an accepted iteration's record, with ``w0`` its
        weights: continue exactly as the run that wrote it (``f`` and ``∇f`` at ``w0`` are
        recomputed bit for bit; the radius and the iteration count are all else TRON keeps).
    """
    t0 = time.perf_counter()
    w = np.zeros(objective.n_features) if w0 is None else np.array(w0, dtype=np.float64)
    f = objective.value(w)
    g = objective.gradient(w)
    gnorm = float(np.linalg.norm(g))
    # the stopping rule is relative to the gradient at w = 0 even from a warm start
    # (as LIBLINEAR's tron.cpp), so a start at the optimum stops at once
    gnorm0 = gnorm if not np.any(w) else float(np.linalg.norm(objective.gradient(np.zeros_like(w))))
    delta = gnorm if resume is None else float(resume["delta"])
    history: list[dict] = []
    message = "gradient norm below tolerance"
    converged = gnorm <= tol * gnorm0 or gnorm == 0.0
    it = 0 if resume is None else int(resume["iter"])
    while not converged and it < max_iter:
        s, r, cg_iter = _steihaug_cg(objective, w, g, delta, max_cg)
        w_new = w + s
        gs = float(g @ s)
        prered = -0.5 * (gs - float(s @ r))
        f_new = objective.value(w_new)
        actred = f - f_new
        snorm = float(np.linalg.norm(s))
        if it == 0:
            delta = min(delta, snorm)
        denom = f_new - f - gs
        alpha = SIGMA3 if denom <= 0 else max(SIGMA1, -0.5 * (gs / denom))
        if actred < ETA0 * prered:
            delta = min(max(alpha, SIGMA1) * snorm, SIGMA2 * delta)
        elif actred < ETA1 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
        elif actred < ETA2 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
        else:
            delta = max(delta, min(alpha * snorm, SIGMA3 * delta))
        accepted = actred > ETA0 * prered
        if accepted:
            it += 1
            w, f = w_new, f_new
            g = objective.gradient(w)
            gnorm = float(np.linalg.norm(g))
        record = {
            "iter": it, "objective": f, "grad_norm": gnorm, "actred": actred, "prered": prered,
            "delta": delta, "cg_iter": cg_iter, "accepted": accepted,
            "seconds": time.perf_counter() - t0, **objective.progress(w),
        }
        history.append(record)
        if callback is not None and accepted:  # a rejected step leaves w (and the iteration) as they were
            callback(record["iter"], w, record)
        log.info(
            "iter %3d  f %.6e  |g| %.3e  act %.3e  pre %.3e  delta %.3e  CG %3d  sv %s%s  %.2fs",
            it, f, gnorm, actred, prered, delta, cg_iter, record.get("support_pairs", "-"),
            engine_progress_text(record), record["seconds"],
        )
        if gnorm <= tol * gnorm0:
            converged = True
            break
        if f < -1.0e32:
            message = "objective below -1e32 (unbounded)"
            break
        if abs(actred) <= 0 and prered <= 0:
            message = "actual and predicted reduction <= 0"
            break
        if abs(actred) <= 1.0e-12 * abs(f) and abs(prered) <= 1.0e-12 * abs(f):
            message = "actual and predicted reduction too small"
            break
    if not converged and it >= max_iter:
        message = f"reached max_iter={max_iter}"
    return SolverResult(w, f, it, converged, history, time.perf_counter() - t0, message)
