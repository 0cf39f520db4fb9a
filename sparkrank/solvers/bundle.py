"""BMRM's cutting-plane bundle and its dual QP over the simplex (airola2011 Algorithm 1, line 8).

The bundle holds planes ``a_i`` (rows of a matrix), offsets ``b_i`` and their Gram matrix
``G = A Aᵀ``.  ``w_t = argmin λ‖w‖² + max_i ⟨w, a_i⟩ + b_i`` comes from the dual

    max_{α ∈ Δ_t}  -(1/(4λ)) αᵀGα + bᵀα,     w = -(1/(2λ)) Aᵀα,

solved by cvxopt's interior-point ``coneqp`` (as airola2011 did).  Three things keep it cheap
however many iterations BMRM needs:

* **Pruning.** A plane whose dual weight stayed zero for ``inactive_limit`` consecutive QPs is
  dropped, as SVMstruct's 1-slack solver does (``remove_inactive_constraints``, 50
  iterations) and Teo et al. (JMLR 2010, §5) suggest.  A dropped plane has zero weight in the
  latest QP, so the current ``w_t`` does not change, and any subset of planes still gives a
  lower bound of ``J``: the gap ``J(w_b) - J_t(w_t)`` stays an honest bound on the
  suboptimality of ``w_b``.
* **A structured KKT solver.** The QP's inequality constraints are ``-α ≤ 0`` (``G = -I``) and
  its one equality is ``1ᵀα = 1``; cvxopt's default KKT solver treats ``G`` as a dense matrix
  (a t×t×t ``syrk`` per interior-point step).  :func:`_simplex_kkt_solver` eliminates ``G``
  and the equality by hand: one Cholesky of ``P + diag(z/s)`` and two triangular solves.
* **A warm start.** The previous duals (``α``, the equality's multiplier, the bounds'
  multipliers), extended by the new plane and pulled a little towards the simplex centre
  (an interior-point method must start strictly inside), start the next QP.

When the interior point fails (with ``λ ≈ 1e-9``, e.g. a large C on a global ranking, the
QP's quadratic term is ~1e9 times its linear one and cvxopt can raise "domain error"), the
best dual point among other attempts and the simplex's vertices is taken: any ``α`` of the
simplex gives a valid lower bound, so the gap BMRM stops on stays certified.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("sparkrank.bmrm")

_QP_OPTIONS = {"show_progress": False, "abstol": 1e-10, "reltol": 1e-9, "feastol": 1e-10, "maxiters": 200}
_QP_FALLBACK = {"show_progress": False, "maxiters": 200}

#: A plane counts as active at ``w_t`` when its value there is within this share of the model's
#: value ``max_i ⟨w_t, a_i⟩ + b_i`` (KKT: only such tight planes can carry dual weight; the
#: interior point leaves ~1e-7 of weight on planes far from tight, so weights cannot tell).
ACTIVE_SLACK = 1e-7

#: Default number of consecutive QPs a plane may stay not tight before it is dropped: SVMstruct's
#: 50.  On MQ2008 (C = 1) 40-80 needed as many iterations as keeping every plane (10-20 needed
#: up to 40% more) with bundles of ~100 planes instead of ~700.
DEFAULT_INACTIVE_LIMIT = 50

#: Share of the simplex centre mixed into a warm start (strictly interior, close to the last solution).
_WARM_CENTRE_WEIGHT = 0.1


@dataclass
class SimplexQPSolution:
    """The dual weights ``α`` and the interior-point multipliers that warm-start the next QP."""

    alpha: np.ndarray
    multiplier: float = 0.0
    """Of the equality ``1ᵀα = 1`` (cvxopt's ``y``; in the problem's scaled units)."""
    bound_multipliers: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Of ``α ≥ 0`` (cvxopt's ``z``)."""
    iterations: int = 0


def _simplex_kkt_solver(P: np.ndarray):
    """cvxopt ``kktsolver`` for ``min ½αᵀPα + qᵀα`` s.t. ``-α ≤ 0``, ``1ᵀα = 1``.

    cvxopt hands the scaling ``W = diag(d)`` and asks for the ``(ux, uy, v)`` (``v`` the
    scaled ``W·uz``) of

        P ux + 1·uy - W⁻¹v = bx,    1ᵀux = by,    -ux - W v = bz.

    The third equation gives ``v = -(ux + bz)/d``; substituted into the first,
    ``(P + D) ux + 1·uy = bx - D bz`` with ``D = diag(d⁻²)``, and the single equality is
    eliminated through ``H⁻¹1`` (``H = P + D``, positive definite since ``D > 0``).
    """
    from cvxopt import blas, lapack, matrix, mul

    t = P.shape[0]
    P = matrix(P)

    def factor(W):
        D = mul(W["di"], W["di"])
        H = +P
        H[:: t + 1] += D
        lapack.potrf(H)  # H = L Lᵀ (ArithmeticError if not positive definite: the caller falls back)
        h_ones = matrix(1.0, (t, 1))
        lapack.potrs(H, h_ones)
        ones_h_ones = sum(h_ones)

        def solve(x, y, z):
            r = x - mul(D, z)
            lapack.potrs(H, r)
            uy = (sum(r) - y[0]) / ones_h_ones
            blas.axpy(h_ones, r, alpha=-uy)
            z[:] = -mul(W["di"], r + z)
            blas.copy(r, x)
            y[0] = uy

        return solve

    return factor


def solve_simplex_qp(gram: np.ndarray, b: np.ndarray, lam: float,
                     start: SimplexQPSolution | None = None) -> SimplexQPSolution:
    """Dual of the BMRM master problem: ``argmax_{α ∈ simplex} -αᵀGα/(4λ) + bᵀα``.

    The QP is divided by ``max |b_i|`` first, so that cvxopt's absolute tolerances are in
    units of the risk (dividing by ``max |G/(2λ)|`` instead, which reaches 1e7 with small λ,
    left the dual weights accurate to ~1e-3 only).  ``start`` (the previous solution with the
    new planes appended) warm-starts it.  If that does not reach an optimal status, it is
    retried cold; if that fails too, :func:`_best_simplex_point` takes over.
    """
    from cvxopt import matrix

    t = b.shape[0]
    if t == 1:
        return SimplexQPSolution(np.ones(1), 0.0, np.zeros(1), 0)
    P = gram / (2.0 * lam)
    q = -np.asarray(b, dtype=np.float64)
    scale = float(np.abs(q).max()) or max(float(np.abs(P).max()), 1e-300)
    initvals = None
    if start is not None and start.alpha.shape == (t,):
        centre = 1.0 / t
        alpha0 = (1.0 - _WARM_CENTRE_WEIGHT) * start.alpha + _WARM_CENTRE_WEIGHT * centre
        z0 = np.maximum(start.bound_multipliers, 0.0) + _WARM_CENTRE_WEIGHT * max(
            float(np.abs(start.bound_multipliers).max(initial=0.0)), 1e-8)
        initvals = {"x": matrix(alpha0), "s": matrix(alpha0), "y": matrix([start.multiplier]), "z": matrix(z0)}
    # warm, then cold with the structured KKT solver: a warm start near the boundary sometimes
    # stalls the interior point (status "unknown") when λ is tiny and the QP ill-conditioned
    for start_values in ([initvals] if initvals is not None else []) + [None]:
        sol = _coneqp(P, q, scale, start_values, structured=True, options=_QP_OPTIONS)
        if sol is not None and sol["status"] == "optimal":
            return _from_cvxopt(sol, 1.0)
    return _best_simplex_point(gram, b, lam, P, q, scale, start)


def _coneqp(P: np.ndarray, q: np.ndarray, scale: float, initvals, *, structured: bool, options: dict):
    """cvxopt's ``coneqp`` on ``min ½αᵀPα + qᵀα`` over the simplex, both divided by ``scale``;
    ``None`` if it fails (a singular KKT system, or "domain error": the interior point's scaling
    left the cone, which cvxopt raises on QPs as ill-conditioned as ``λ ≈ 1e-9`` gives)."""
    from cvxopt import matrix, solvers

    t = q.shape[0]
    P, q = P / scale, q / scale
    problem = {"P": matrix(P), "q": matrix(q), "G": matrix(-np.eye(t)), "h": matrix(np.zeros(t)),
               "A": matrix(np.ones((1, t))), "b": matrix(1.0)}
    try:
        return solvers.coneqp(**problem, initvals=initvals, kktsolver=_simplex_kkt_solver(P) if structured else None,
                              options=options)
    except (ArithmeticError, ValueError):
        return None


def _from_cvxopt(sol, units: float) -> SimplexQPSolution:
    """cvxopt's solution as a point of the simplex; ``units`` converts its multipliers to the
    units of :func:`solve_simplex_qp`'s problem (divided by ``max |b_i|``)."""
    alpha = np.maximum(np.array(sol["x"]).ravel(), 0.0)
    return SimplexQPSolution(alpha / alpha.sum(), float(sol["y"][0]) * units, np.array(sol["z"]).ravel() * units,
                             int(sol["iterations"]))


def _simplex_dual(gram: np.ndarray, b: np.ndarray, lam: float, alpha: np.ndarray) -> float:
    return float(b @ alpha) - float(alpha @ gram @ alpha) / (4.0 * lam)


def _on_its_faces(gram: np.ndarray, b: np.ndarray, lam: float, alpha: np.ndarray) -> list[np.ndarray]:
    """The exact maximisers on the faces of the simplex where ``α`` is not negligible, at a few
    thresholds of "negligible" (an interior point leaves ~1e-8 on planes that are not tight):
    each solves the KKT system of its face, ``G_S α_S/(2λ) + ν1 = b_S``, ``1ᵀα_S = 1``, and is
    kept if it stays in the simplex."""
    found = []
    for share in (1e-9, 1e-6, 1e-3):
        support = np.flatnonzero(alpha > share * alpha.max())
        k = support.shape[0]
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = gram[np.ix_(support, support)] / (2.0 * lam)
        kkt[:k, k] = kkt[k, :k] = 1.0
        try:
            solution = np.linalg.solve(kkt, np.append(b[support], 1.0))
        except np.linalg.LinAlgError:
            continue
        if np.all(np.isfinite(solution)) and np.all(solution[:k] >= 0.0):
            face = np.zeros_like(alpha)
            face[support] = solution[:k]
            found.append(face / face.sum())
    return found


def _best_simplex_point(gram: np.ndarray, b: np.ndarray, lam: float, P: np.ndarray, q: np.ndarray,
                        scale: float, start: SimplexQPSolution | None) -> SimplexQPSolution:
    """When the interior point fails on the usual problem: the best dual point among cvxopt's
    default KKT solver, the problem in units of ``max |P|`` (better conditioned when λ is tiny,
    less accurate), each refined on its faces (:func:`_on_its_faces`), the warm start and the
    vertices.  Any ``α`` of the simplex is a valid dual point: ``bᵀα - λ‖w(α)‖²`` stays a lower
    bound of ``min J`` (weak duality), so BMRM's certified gap holds whichever is chosen."""
    candidates = [SimplexQPSolution(np.eye(b.shape[0])[i], 0.0, np.ones(b.shape[0])) for i in range(b.shape[0])]
    if start is not None and start.alpha.shape == b.shape and start.alpha.sum() > 0:
        candidates.append(SimplexQPSolution(start.alpha / start.alpha.sum(), start.multiplier, start.bound_multipliers))
    p_scale = max(float(np.abs(P).max()), 1e-300)
    for units, structured, options in ((scale, False, _QP_FALLBACK), (p_scale, True, _QP_OPTIONS)):
        sol = _coneqp(P, q, units, None, structured=structured, options=options)
        if sol is not None and np.all(np.isfinite(np.array(sol["x"]))) and np.any(np.array(sol["x"]) > 0):
            found = _from_cvxopt(sol, units / scale)
            candidates.append(found)
            candidates += [SimplexQPSolution(face, found.multiplier, found.bound_multipliers, found.iterations)
                           for face in _on_its_faces(gram, b, lam, found.alpha)]
    best = max(candidates, key=lambda c: _simplex_dual(gram, b, lam, c.alpha))
    log.debug("bmrm: the dual QP's interior point failed (λ %.3g, %d planes): the best of %d simplex points",
              lam, b.shape[0], len(candidates))
    return best


class CuttingPlaneBundle:
    """The planes ``(a_i, b_i)`` BMRM has collected, with pruning and a warm-started dual QP.

    Parameters
    ----------
    n_features : int
    inactive_limit : int or None
        Drop a plane after this many consecutive QPs with zero dual weight (``None``: keep
        every plane, the textbook BMRM).
    """

    def __init__(self, n_features: int, inactive_limit: int | None = DEFAULT_INACTIVE_LIMIT):
        if inactive_limit is not None and inactive_limit < 1:
            raise ValueError(f"inactive_limit must be a positive number of iterations or None; got {inactive_limit}")
        self.inactive_limit = inactive_limit
        self.planes = np.zeros((0, n_features))
        self.offsets = np.zeros(0)
        self.gram = np.zeros((0, 0))
        self.idle = np.zeros(0, dtype=np.int64)
        """Consecutive QPs after which each plane was not tight (so had zero dual weight)."""
        self.last: SimplexQPSolution | None = None
        self.pruned = 0

    def __len__(self) -> int:
        return self.offsets.shape[0]

    def add(self, a: np.ndarray, offset: float) -> None:
        """Append the plane ``⟨w, a⟩ + offset`` (airola2011 Algorithm 1, lines 5-7)."""
        cross = self.planes @ a
        t = len(self)
        gram = np.empty((t + 1, t + 1))
        gram[:t, :t] = self.gram
        gram[t, :t] = gram[:t, t] = cross
        gram[t, t] = float(a @ a)
        self.gram = gram
        self.planes = np.vstack([self.planes, a[None, :]])
        self.offsets = np.append(self.offsets, offset)
        self.idle = np.append(self.idle, 0)

    def minimize(self, lam: float) -> tuple[np.ndarray, float]:
        """``w_t = argmin λ‖w‖² + max_i ⟨w, a_i⟩ + b_i`` and a lower bound of ``min J``.

        The bound is the dual value of the QP's ``α``, ``bᵀα - λ‖w_t‖²`` (``= J_t(w_t)`` when
        the QP is solved exactly, never above it).  Then planes not tight at ``w_t`` for
        ``inactive_limit`` QPs in a row are dropped (``w_t`` does not depend on them).
        """
        start = None
        if self.last is not None:
            grown = len(self) - self.last.alpha.shape[0]
            start = SimplexQPSolution(np.append(self.last.alpha, np.zeros(grown)), self.last.multiplier,
                                      np.append(self.last.bound_multipliers, np.ones(grown)))
        solution = solve_simplex_qp(self.gram, self.offsets, lam, start)
        alpha = solution.alpha
        w = -(self.planes.T @ alpha) / (2.0 * lam)
        values = self.planes @ w + self.offsets
        top = float(np.max(values))
        # weak duality: the dual value of any α in the simplex is ≤ min J_t ≤ min J, however
        # accurately the QP was solved and whichever planes were dropped before
        lower = float(self.offsets @ alpha) - lam * float(w @ w)
        tight = values >= top - ACTIVE_SLACK * max(1.0, abs(top))
        self.idle = np.where(tight, 0, self.idle + 1)
        self.last = solution
        if self.inactive_limit is not None:
            self._keep(self.idle < self.inactive_limit)
        return w, lower

    def _keep(self, keep: np.ndarray) -> None:
        if keep.all():
            return
        self.pruned += int((~keep).sum())
        self.planes, self.offsets, self.idle = self.planes[keep], self.offsets[keep], self.idle[keep]
        self.gram = self.gram[np.ix_(keep, keep)]
        last = self.last
        self.last = SimplexQPSolution(last.alpha[keep] / last.alpha[keep].sum(), last.multiplier,
                                      last.bound_multipliers[keep], last.iterations)

    # -- checkpoints: everything the next iteration depends on, bit for bit ------------------------
    def state(self) -> dict:
        """The bundle as plain values and arrays (for ``IterationRecord.state``, :mod:`sparkrank.checkpoints`)."""
        last = self.last
        return {"planes": self.planes.copy(), "offsets": self.offsets.copy(), "gram": self.gram.copy(),
                "idle": [int(i) for i in self.idle], "pruned": self.pruned, "inactive_limit": self.inactive_limit,
                "alpha": None if last is None else last.alpha.copy(),
                "multiplier": None if last is None else last.multiplier,
                "bound_multipliers": None if last is None else last.bound_multipliers.copy()}

    @classmethod
    def from_state(cls, state: dict, n_features: int) -> "CuttingPlaneBundle":
        """The bundle :meth:`state` described."""
        bundle = cls(n_features, state["inactive_limit"])
        bundle.planes = np.asarray(state["planes"], dtype=np.float64).reshape(-1, n_features)
        bundle.offsets = np.asarray(state["offsets"], dtype=np.float64)
        bundle.gram = np.asarray(state["gram"], dtype=np.float64).reshape(len(bundle), len(bundle))
        bundle.idle = np.asarray(state["idle"], dtype=np.int64)
        bundle.pruned = int(state["pruned"])
        if state["alpha"] is not None:
            bundle.last = SimplexQPSolution(np.asarray(state["alpha"], dtype=np.float64), float(state["multiplier"]),
                                            np.asarray(state["bound_multipliers"], dtype=np.float64))
        return bundle
