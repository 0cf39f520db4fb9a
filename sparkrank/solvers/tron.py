"""Trust-region Newton (TRON) as in LIBLINEAR's ``tron.cpp``/``newton.cpp`` and lee-lin2014 §4.1.

The solver sees only ``value``, ``gradient``, ``hessian_vector`` and (preconditioned)
``hessian_diagonal`` of an objective.  Steihaug conjugate gradient solves the trust-region
subproblem; the radius update uses η0=1e-4, η1=0.25, η2=0.75, σ1=0.25, σ2=0.5, σ3=4
(Lin, Weng & Keerthi 2008).

Preconditioning (default; LIBLINEAR ≥ 2.30, Hsia, Chiang & Lin 2018, "Preconditioned
conjugate gradient methods in truncated Newton frameworks for large-scale linear
classification"): CG runs on ``M^{-1/2} H M^{-1/2}`` with the diagonal
``M = (1 − α)I + α·diag(H)``, α = 0.01, recomputed at every accepted iterate, and the
trust region is measured in the M-norm ``‖s‖_M = √(sᵀMs)``.  The mixing with ``I`` keeps
``M`` safe when the diagonal is a poor estimate (Hsia et al. §3).  The problem solved is
unchanged; only the path to its minimiser is.

Stopping rule: ``‖∇f(w_k)‖ ≤ ε‖∇f(0)‖`` (LIBLINEAR's, relative to the gradient at
``w = 0`` even from a warm start).  Without preconditioning the norm is Euclidean, as in
LIBLINEAR.  With it the norm is ``‖g‖_{D₀⁻¹} = √(gᵀD₀⁻¹g)``, ``D₀`` the Hessian-diagonal
estimate at ``w = 0``.  Why: under a change of units ``x_k ↦ s_k x_k`` the gradient's
component k scales by ``s_k`` and ``D₀``'s by ``s_k²``, so the ``D₀⁻¹``-norm (and with it the
tolerance's meaning) does not depend on the units of the features; the Euclidean norm is
dominated by the largest-unit features and stops before the small-unit ones have moved
(issue 11: raw California housing stopped 0.007 below the optimum's pairwise accuracy).
Near the optimum ``f(w) − f* ≈ ½ gᵀH⁻¹g``, which this norm approximates when ``D₀ ≈ H``,
so ε = 1e-3 gives an objective within about ε² of the reduction from ``w = 0``.
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

log = logging.getLogger("sparkrank.tron")

ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0
#: LIBLINEAR's ``alpha_pcg``: weight of the Hessian diagonal in the preconditioner.
ALPHA_PCG = 0.01


def _mnorm(v: np.ndarray, M: np.ndarray, scratch: np.ndarray | None = None) -> float:
    """``‖v‖_M = √(vᵀ(M∘v))`` (``scratch``: a vector of v's length to hold ``M∘v``)."""
    return math.sqrt(float(v @ np.multiply(M, v, out=scratch)))


class _CGBuffers:
    """The six vectors of a Steihaug CG solve, allocated once per fit: each solve starting in
    fresh arrays faulted 6 × 128 MB of new pages at 2²⁴ hashed feature ids (~0.1 s a TRON
    iteration); the step and residual a solve returns are read before the next one starts."""

    def __init__(self, like: np.ndarray):
        self.arrays = [np.empty_like(like) for _ in range(6)]


def _steihaug_pcg(objective: Objective, w: np.ndarray, g: np.ndarray, delta: float, max_cg: int,
                  M: np.ndarray, buffers: _CGBuffers | None = None):
    """Approximately minimise ``gᵀs + ½ sᵀHs`` s.t. ``‖s‖_M ≤ δ`` (``newton.cpp`` ``trpcg``).

    With ``M = 1`` this is ``tron.cpp``'s plain ``trcg``.  Returns the step ``s``, the
    residual ``r = -g - Hs`` and the CG iteration count (``s`` and ``r`` in ``buffers``, when
    given: valid until the next solve with them).

    The vectors are updated in place in six buffers, each operation the one LIBLINEAR's
    expressions name (``s + α·d``, ``r − α·Hd``, ``r / M``, ``z + β·d``; ``a + b`` and ``b + a``
    are the same bits): a CG step allocates no vector of the full width but the Hessian
    product's, which at 2²⁴ hashed feature ids was a dozen arrays of 128 MB a step.
    """
    s, r, z, d, trial, scratch = (buffers or _CGBuffers(g)).arrays  # trial: s + α·d; scratch: α·d, α·Hd, M∘v, β·d
    s.fill(0.0)
    np.negative(g, out=r)
    np.divide(r, M, out=z)
    np.copyto(d, z)
    ztr = float(z @ r)
    cg_tol = 0.1 * math.sqrt(ztr)
    it = 0
    while math.sqrt(ztr) > cg_tol and it < max_cg:
        it += 1
        hd = objective.hessian_vector(w, d)
        dhd = float(d @ hd)
        if not math.isfinite(dhd):
            raise NonFiniteError(f"a Hessian-vector product is not finite (dᵀHd = {dhd!r})")
        alpha = ztr / dhd if dhd > 0 else math.inf
        np.add(s, np.multiply(d, alpha, out=scratch), out=trial)
        if not math.isfinite(alpha) or _mnorm(trial, M, scratch) > delta:
            # step to the trust-region boundary along d, in the M-norm
            std = float(s @ np.multiply(M, d, out=scratch))
            sts = float(s @ np.multiply(M, s, out=scratch))
            dtd = float(d @ np.multiply(M, d, out=scratch))
            rad = math.sqrt(max(std * std + dtd * (delta * delta - sts), 0.0))
            alpha = (delta * delta - sts) / (std + rad) if std >= 0 else (rad - std) / dtd
            s += np.multiply(d, alpha, out=scratch)
            r -= np.multiply(hd, alpha, out=scratch)
            break
        s, trial = trial, s
        r -= np.multiply(hd, alpha, out=scratch)
        np.divide(r, M, out=z)
        znew = float(z @ r)
        d *= znew / ztr
        d += z
        ztr = znew
    return s, r, it


def _updated_radius(delta: float, snorm: float, gs: float, denom: float, actred: float, prered: float) -> float:
    """The trust region's next radius after a finite trial step (LIBLINEAR's rule: the ratio of
    the actual to the predicted reduction against η₀..η₂, the step length scaled by α, the
    minimiser of the quadratic interpolating f along the step; ``denom`` = f(w+s) - f(w) - gᵀs)."""
    alpha = SIGMA3 if denom <= 0 else max(SIGMA1, -0.5 * (gs / denom))
    if actred < ETA0 * prered:
        return min(max(alpha, SIGMA1) * snorm, SIGMA2 * delta)
    if actred < ETA1 * prered:
        return max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
    if actred < ETA2 * prered:
        return max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
    return max(delta, min(alpha * snorm, SIGMA3 * delta))


def tron(
    objective: Objective,
    w0: np.ndarray | None = None,
    *,
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_cg: int = 1000,
    precondition: bool = True,
    callback: IterationCallback | None = None,
    resume: dict | None = None,
) -> SolverResult:
    """Minimise a twice-differentiable objective by trust-region Newton.

    Parameters
    ----------
    objective : Objective
        Needs ``value``, ``gradient``, ``hessian_vector`` and, when preconditioning,
        ``hessian_diagonal``.
    w0 : ndarray, optional
        Start (zeros by default, as lee-lin2014); must be finite.
    tol : float
        Relative gradient-norm tolerance ε (norm: see the module docstring).
    max_iter : int
        Cap on trial steps (accepted Newton iterations and rejected ones alike), so a run
        whose steps keep failing still ends.
    max_cg : int
        Cap on CG iterations per Newton step.
    precondition : bool
        Diagonally preconditioned CG and the ``D₀⁻¹``-norm stopping rule (default); False
        gives LIBLINEAR < 2.30's plain TRON with the Euclidean rule.
    callback : callable, optional
        ``callback(record)`` after every trial step (:class:`IterationRecord`; a rejected
        step has ``accepted=False`` and repeats the iteration number).
    resume : dict, optional
        ``{"iter": k, "trial": t, "delta": Δ}``, an accepted iteration's ``record.state``, with ``w0``
        its weights: continue exactly as the run that wrote it (``f``, ``∇f`` and the
        preconditioner at ``w0`` are recomputed bit for bit; the radius and the counts are
        all else TRON keeps).

    Raises
    ------
    NonFiniteError
        The objective or gradient at the start, or a Hessian product, is not finite.
    """
    t0 = time.perf_counter()
    w = start_point(w0, objective.n_features)
    f = objective.value(w)
    g = objective.gradient(w)
    require_finite_start(f, g)
    at_zero = not np.any(w)
    metric = None
    if precondition:
        metric = objective.hessian_diagonal(np.zeros_like(w))
        M = (1.0 - ALPHA_PCG) + ALPHA_PCG * (metric if at_zero else objective.hessian_diagonal(w))
    else:
        M = np.ones_like(w)
    gnorm = stable_norm(g, metric)
    # relative to the gradient at w = 0 even from a warm start (as LIBLINEAR), so a start at
    # the optimum stops at once
    gnorm0 = gnorm if at_zero else stable_norm(objective.gradient(np.zeros_like(w)), metric)
    if not math.isfinite(gnorm0):
        raise NonFiniteError(f"the gradient at w = 0 is not finite (norm {gnorm0!r})")
    delta = stable_norm(g, M) if resume is None else float(resume["delta"])  # ‖g‖_{M⁻¹}: a Cauchy-length first region
    report = SolverReport(callback, log)
    message = zero_gradient_message() if gnorm0 == 0 else None
    converged = gnorm0 > 0 and gnorm <= tol * gnorm0
    it, trials = (0, 0) if resume is None else (int(resume["iter"]), int(resume["trial"]))
    buffers = _CGBuffers(w)
    while not converged and gnorm0 > 0 and trials < max_iter:
        trials += 1
        s, r, cg_iter = _steihaug_pcg(objective, w, g, delta, max_cg, M, buffers)
        w_new = w + s
        gs = float(g @ s)
        prered = -0.5 * (gs - float(s @ r))
        f_new = objective.value(w_new)
        actred = f - f_new
        snorm = _mnorm(s, M)
        if it == 0:
            delta = min(delta, snorm)
        if not math.isfinite(f_new):
            # the trial point overflows: a failed step, shrink the region (σ1) and try again
            delta = SIGMA1 * min(delta, snorm)
            accepted = False
        else:
            delta = _updated_radius(delta, snorm, gs, f_new - f - gs, actred, prered)
            accepted = actred > ETA0 * prered
        if accepted:
            it += 1
            w, f = w_new, f_new
            g = objective.gradient(w)
            gnorm = stable_norm(g, metric)
            if not math.isfinite(gnorm):
                raise NonFiniteError(f"the gradient at iteration {it} is not finite")
            if precondition:
                M = (1.0 - ALPHA_PCG) + ALPHA_PCG * objective.hessian_diagonal(w)
        report(IterationRecord(
            it, f, gnorm / gnorm0, "grad_ratio", accepted, time.perf_counter() - t0,
            {"trial": trials, "grad_norm": gnorm, "actred": actred, "prered": prered, "delta": delta,
             "cg_iter": cg_iter, **objective.progress(w)},
            w=w, state={"iter": it, "trial": trials, "delta": delta} if accepted else None))
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
    if converged:
        message = "gradient norm below tolerance"
    elif message is None:
        message = f"reached max_iter={max_iter} trial steps ({it} accepted)"
    return gradient_ratio_result(w, f, it, converged, report.history.records, time.perf_counter() - t0, message,
                                 gnorm, gnorm0)
