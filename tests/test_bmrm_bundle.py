"""BMRM's bundle: pruned and warm-started it reaches the same optimum, its QP matches cvxopt's
default solver, and a checkpointed bundle resumes bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cvxopt import matrix, solvers

from sparkrank.checkpoints import CheckpointWriter, latest
from sparkrank.data.block import RankingData
from sparkrank.engines.local import LocalEngine
from sparkrank.objectives.ranksvm import HingeRisk
from sparkrank.solvers.bmrm import bmrm
from sparkrank.solvers.bundle import SimplexQPSolution, solve_simplex_qp
from test_solvers import explicit_l1_optimum, problem

DATA = Path(__file__).parent / "data"


def tied_problem(seed: int):
    """Several groups, graded labels (many tied pairs excluded) and duplicated rows (tied scores)."""
    data, _ = problem(seed, m=120, n=5)
    X = data.X.toarray()
    X[1::7] = X[::7][: X[1::7].shape[0]]  # every 7th row repeated: equal scores for any w
    from conftest import explicit_pairs

    tied = RankingData.from_arrays(X, data.labels, np.repeat(np.arange(len(data.groups.offsets) - 1),
                                                              np.diff(data.groups.offsets)))
    up, lo = explicit_pairs(tied.labels, tied.groups.offsets)
    return tied, X[up] - X[lo]


class _Bundles:
    """A callback recording the bundle size after every iteration."""

    def __init__(self):
        self.sizes: list[int] = []
        self.pruned = 0

    def __call__(self, record):
        state = record.state["bundle"]
        self.sizes.append(len(state["offsets"]))
        self.pruned = state["pruned"]


@pytest.mark.parametrize("lam", [1e-3, 3e-2])
def test_pruned_warm_started_bundle_reaches_the_unpruned_optimum(lam):
    data, D = tied_problem(7)
    opt, _ = explicit_l1_optimum(D, lam)
    tol = 1e-4
    full = bmrm(HingeRisk(LocalEngine(data), lam), tol=tol, inactive_limit=None)
    seen = _Bundles()
    pruned = bmrm(HingeRisk(LocalEngine(data), lam), tol=tol, inactive_limit=2, callback=seen)
    assert full.converged and pruned.converged
    assert seen.pruned > 0 and max(seen.sizes) < pruned.iterations, "nothing was pruned"
    for res in (full, pruned):
        # the gap certifies the result against the exact optimum of the same objective
        assert opt - 1e-9 <= res.objective <= opt + tol
        assert res.history[-1]["lower_bound"] <= opt + 1e-9
    assert abs(pruned.objective - full.objective) <= tol


def test_every_reported_lower_bound_is_below_the_optimum():
    data, D = tied_problem(8)
    lam = 1e-3
    opt, _ = explicit_l1_optimum(D, lam)
    res = bmrm(HingeRisk(LocalEngine(data), lam), tol=1e-5, inactive_limit=1)
    assert res.converged
    assert all(h["lower_bound"] <= opt + 1e-9 for h in res.history)
    assert all(h["gap"] >= h["objective"] - opt - 1e-9 for h in res.history)


@pytest.mark.parametrize("t", [2, 7, 40])
def test_simplex_qp_matches_cvxopt_default_solver(t):
    rng = np.random.default_rng(t)
    A = rng.normal(size=(t, 6)) * np.exp(rng.uniform(-3, 3, size=(t, 1)))
    gram, b, lam = A @ A.T, rng.normal(size=t), 1e-3
    sol = solvers.qp(matrix(gram / (2 * lam)), matrix(-b), matrix(-np.eye(t)), matrix(np.zeros(t)),
                     matrix(np.ones((1, t))), matrix(1.0),
                     options={"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12})
    expected = np.array(sol["x"]).ravel()

    def dual(alpha):
        return b @ alpha - alpha @ gram @ alpha / (4 * lam)

    cold = solve_simplex_qp(gram, b, lam)
    # warm: from the solution of the problem without its last plane
    previous = solve_simplex_qp(gram[:-1, :-1], b[:-1], lam) if t > 1 else None
    warm = solve_simplex_qp(gram, b, lam, SimplexQPSolution(np.append(previous.alpha, 0.0), previous.multiplier,
                                                             np.append(previous.bound_multipliers, 1.0)))
    for got in (cold, warm):
        assert got.alpha.min() >= 0 and got.alpha.sum() == pytest.approx(1.0, abs=1e-12)
        assert dual(got.alpha) == pytest.approx(dual(expected), abs=1e-8 * max(1.0, abs(dual(expected))))


def _face_optimum(gram, b, lam):
    """The exact maximiser of the dual over the simplex: the best KKT point over every face (small t)."""
    import itertools

    t, best = b.shape[0], None
    for k in range(1, t + 1):
        for face in itertools.combinations(range(t), k):
            face = list(face)
            kkt = np.block([[gram[np.ix_(face, face)] / (2 * lam), np.ones((k, 1))], [np.ones((1, k)), np.zeros((1, 1))]])
            try:
                solution = np.linalg.solve(kkt, np.append(b[face], 1.0))
            except np.linalg.LinAlgError:
                continue
            if np.any(solution[:k] < 0):
                continue
            alpha = np.zeros(t)
            alpha[face] = solution[:k]
            value = b @ alpha - alpha @ gram @ alpha / (4 * lam)
            best = value if best is None or value > best else best
    return best


def test_a_qp_the_interior_point_cannot_solve_still_gives_its_optimum(monkeypatch):
    """A real BMRM master problem (cadata as one global ranking, C = 16: λ ≈ 8e-10, six planes, one
    of norm 1e-2) on which cvxopt raises "domain error" with either KKT solver: the answer is
    still the dual optimum, to 1e-9, and a point of the simplex."""
    qp = np.load(DATA / "bmrm_domain_error_qp.npz")
    gram, b, lam = qp["gram"], qp["b"], float(qp["lam"])
    start = SimplexQPSolution(qp["alpha"], float(qp["mult"]), qp["z"])
    best = _face_optimum(gram, b, lam)
    for warm in (start, None):
        got = solve_simplex_qp(gram, b, lam, warm)
        assert got.alpha.min() >= 0 and got.alpha.sum() == pytest.approx(1.0, abs=1e-12)
        value = b @ got.alpha - got.alpha @ gram @ got.alpha / (4 * lam)
        assert value <= best + 1e-9 * abs(best)  # weak duality: no simplex point beats the optimum
        assert value == pytest.approx(best, rel=1e-9)
    # and if cvxopt fails on every attempt, the best vertex or warm start still bounds J from below
    monkeypatch.setattr(solvers, "coneqp", lambda *a, **k: (_ for _ in ()).throw(ValueError("domain error")))
    got = solve_simplex_qp(gram, b, lam, start)
    vertices = [b[i] - gram[i, i] / (4 * lam) for i in range(b.shape[0])]
    at_start = b @ start.alpha - start.alpha @ gram @ start.alpha / (4 * lam)
    assert b @ got.alpha - got.alpha @ gram @ got.alpha / (4 * lam) == pytest.approx(max(*vertices, at_start))


def test_resume_with_a_pruned_bundle_is_bitwise(tmp_path):
    data, _ = tied_problem(9)
    lam, tol, limit = 1e-3, 1e-6, 2

    def fit(**kwargs):
        return bmrm(HingeRisk(LocalEngine(data), lam), tol=tol, inactive_limit=limit, **kwargs)

    undisturbed = fit()
    seen = _Bundles()
    fit(callback=seen)
    kill_at = next(i for i, size in enumerate(seen.sizes, 1) if size < i) + 2  # planes were dropped
    assert kill_at < undisturbed.iterations, "too few iterations to interrupt after pruning"

    class Killed(Exception):
        pass

    writer = CheckpointWriter(str(tmp_path), 1, {"solver": "bmrm"})

    def kill(record):
        writer(record)
        if record.iteration == kill_at:
            raise Killed

    with pytest.raises(Killed):
        fit(callback=kill)
    found = latest(str(tmp_path))
    assert found["iteration"] == kill_at
    resumed = fit(resume=found["solver_state"])
    assert resumed.history[0]["iter"] == kill_at + 1
    np.testing.assert_array_equal(resumed.w, undisturbed.w)
    assert resumed.iterations == undisturbed.iterations
    assert [h["gap"] for h in resumed.history] == [h["gap"] for h in undisturbed.history[kill_at:]]


def test_a_checkpoint_without_bundle_state_is_a_clear_error():
    data, _ = tied_problem(10)
    old_state = {"iter": 2, "gap": 1.0, "planes": [np.zeros(5)], "offsets": [1.0], "gram": np.zeros((1, 1)),
                 "w": np.zeros(5), "risk": 1.0, "subgradient": np.zeros(5), "w_best": np.zeros(5), "j_best": 1.0}
    with pytest.raises(ValueError, match="before the pruned bundle"):
        bmrm(HingeRisk(LocalEngine(data), 1e-3), resume=old_state)


def test_inactive_limit_is_a_registered_option_that_reaches_the_bundle(tmp_path):
    """``--inactive-limit`` / ``solver_options={"inactive_limit": k}``: a smaller limit keeps a
    smaller bundle and reaches the same optimum within the gap; 0 is refused before any pass."""
    from sparkrank.training import train

    data, _ = tied_problem(3)
    results = {k: train(data, solver="bmrm", C=1.0, tol=1e-6, max_iter=2000, solver_options={"inactive_limit": k})
               for k in (1, 10_000)}
    history = {k: model.summary["history"] for k, model in results.items()}
    assert max(r["planes"] for r in history[1]) < max(r["planes"] for r in history[10_000])
    assert history[10_000][-1]["planes"] == len(history[10_000])  # nothing dropped
    assert results[1].options == {"inactive_limit": 1}  # the model remembers it
    assert abs(results[1].summary["objective"] - results[10_000].summary["objective"]) < 1e-6
    with pytest.raises(ValueError, match="inactive_limit=0: must be an integer >= 1"):
        train(data, solver="bmrm", solver_options={"inactive_limit": 0})
