"""Bundle method for regularized risk minimization (BMRM), airola2011 Algorithm 1.

Minimises ``J(w) = λ‖w‖² + R(w)`` for a convex, possibly non-smooth risk ``R`` given by a
:class:`~sparkrank.objectives.base.RegularizedRisk`.  Cutting planes
``a_t = ∂R(w_{t-1})``, ``b_t = R(w_{t-1}) - ⟨w_{t-1}, a_t⟩`` build the lower bound
``R_t(w) = max_i ⟨w, a_i⟩ + b_i``; ``w_t = argmin λ‖w‖² + R_t(w)`` is found through its
dual, a QP over the simplex solved by cvxopt (as the paper did):

    max_{α ∈ Δ_t}  -(1/(4λ)) αᵀ(A Aᵀ)α + bᵀα,     w = -(1/(2λ)) Aᵀα.

The bundle, its pruning of planes that stay inactive and the warm-started QP live in
:mod:`sparkrank.solvers.bundle`.

The best point seen so far ``w_b`` is kept (Franc & Sonnenburg 2009) and the solver stops
when ``J(w_b) - J_t(w_t) < ε``.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from ..objectives.base import RegularizedRisk
from .bundle import DEFAULT_INACTIVE_LIMIT, CuttingPlaneBundle
from .callbacks import SolverReport
from .result import IterationCallback, IterationRecord, SolverResult
from .safeguards import NonFiniteError, require_finite_start, start_point

log = logging.getLogger("sparkrank.bmrm")

def bmrm(
    objective: RegularizedRisk,
    w0: np.ndarray | None = None,
    *,
    tol: float = 1e-3,
    max_iter: int = 5000,
    callback: IterationCallback | None = None,
    resume: dict | None = None,
    inactive_limit: int | None = DEFAULT_INACTIVE_LIMIT,
) -> SolverResult:
    """Minimise ``λ‖w‖² + R(w)`` by BMRM.

    Parameters
    ----------
    objective : RegularizedRisk
        Gives ``lam``, ``risk`` and ``risk_subgradient``.
    w0 : ndarray, optional
        Start (zeros by default).
    tol : float
        Stop when the gap ``J(w_b) - J_t(w_t)`` is below ``tol`` (SVMrank's default 1e-3).
    max_iter : int
        Cap on cutting planes (each one engine pass and one QP).
    callback : callable, optional
        ``callback(record)`` after every iteration (``record.w`` is ``w_b``; ``record.state``
        is the state ``resume`` takes).
    resume : dict, optional
        The state of an earlier run's iteration (its bundle: planes ``a_i``, offsets ``b_i``,
        Gram matrix, idle counts and last duals; ``w_t`` with its risk and subgradient, ``w_b``
        and ``J(w_b)``): continue exactly as that run did (``w0`` is then ignored).
    inactive_limit : int or None
        Drop a cutting plane after this many consecutive iterations with zero dual weight
        (``None`` keeps them all); see :class:`~sparkrank.solvers.bundle.CuttingPlaneBundle`.
    """
    t0 = time.perf_counter()
    lam = objective.lam
    report = SolverReport(callback, log)
    converged = False
    message = f"reached max_iter={max_iter}"
    if resume is None:
        w = start_point(w0, objective.n_features)
        bundle = CuttingPlaneBundle(objective.n_features, inactive_limit)
        risk = objective.risk(w)
        a = objective.risk_subgradient(w)
        require_finite_start(risk, a)
        w_best, j_best = w, lam * float(w @ w) + risk
        done, gap = 0, float("nan")
    else:
        if "bundle" not in resume:
            raise ValueError("this BMRM checkpoint was written before the pruned bundle (it has no 'bundle' "
                             "state); start the fit afresh or use another checkpoint directory")
        bundle = CuttingPlaneBundle.from_state(resume["bundle"], objective.n_features)
        w, risk, a = resume["w"], float(resume["risk"]), resume["subgradient"]
        w_best, j_best = resume["w_best"], float(resume["j_best"])
        done, gap = int(resume["iter"]), float(resume["gap"])
    for t in range(done + 1, max_iter + 1):
        # airola2011 Algorithm 1, lines 5-7: the cutting plane at w_{t-1}
        bundle.add(a, risk - float(w @ a))
        # line 8: w_t = argmin J_t through the dual QP (then planes idle too long are dropped)
        w, lower = bundle.minimize(lam)
        # lines 9-12: evaluate the true J at w_t (this also gives the next plane)
        risk = objective.risk(w)
        a = objective.risk_subgradient(w)
        j = lam * float(w @ w) + risk
        if not (np.isfinite(j) and np.all(np.isfinite(a))):
            raise NonFiniteError(f"the objective or its subgradient at iteration {t} is not finite (J = {float(j):.3g})")
        if j < j_best:
            w_best, j_best = w, j
        gap = j_best - lower
        state = None
        if callback is not None:
            state = {"iter": t, "gap": gap, "bundle": bundle.state(), "w": w, "risk": risk, "subgradient": a,
                     "w_best": w_best, "j_best": j_best}
        report(IterationRecord(t, j_best, gap, "gap", True, time.perf_counter() - t0,
                               {"objective_at_w_t": j, "lower_bound": lower, "planes": len(bundle),
                                **objective.progress(w)},
                               w=w_best, state=state))
        if gap < tol:
            converged = True
            message = "gap below tolerance"
            break
    history = report.history.records
    gap = history[-1]["gap"] if history else gap
    return SolverResult(w_best, j_best, done + len(history), converged, history, time.perf_counter() - t0, message,
                        "gap", gap)
