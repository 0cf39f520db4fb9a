"""TRON and BMRM reach optima found independently on explicit pairs."""

from __future__ import annotations

import numpy as np
import pytest
from cvxopt import matrix, solvers
from scipy.optimize import minimize

from conftest import explicit_pairs
from sparkrank.data.block import RankingData
from sparkrank.engines.local import LocalEngine
from sparkrank.objectives.ranksvm import HingeRisk, SquaredHingeObjective
from sparkrank.solvers.bmrm import bmrm
from sparkrank.solvers.tron import tron
from sparkrank.training import train


def problem(seed, m=150, n=6, real_labels=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    u = X @ rng.normal(size=n) + rng.normal(size=m)
    y = u if real_labels else np.digitize(u, np.quantile(u, [0.3, 0.6, 0.85])).astype(float)
    q = rng.integers(0, 9, m)
    data = RankingData.from_arrays(X, y, q)
    up, lo = explicit_pairs(data.labels, data.groups.offsets)
    Xd = data.X.toarray()
    return data, Xd[up] - Xd[lo]


@pytest.mark.parametrize("real_labels", [False, True])
@pytest.mark.parametrize("C", [0.01, 1.0])
def test_tron_reaches_l2_optimum(real_labels, C):
    data, D = problem(1, real_labels=real_labels)

    def f(w):
        z = np.maximum(0.0, 1.0 - D @ w)
        return 0.5 * w @ w + C * z @ z, w - 2 * C * D.T @ z

    ref = minimize(f, np.zeros(D.shape[1]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 20000})
    res = tron(SquaredHingeObjective(LocalEngine(data), C), tol=1e-6)
    assert res.converged
    assert abs(res.objective - ref.fun) <= 1e-6 * abs(ref.fun)
    # the default stopping rule: ‖∇f(w)‖ ≤ 1e-3 ‖∇f(0)‖
    obj = SquaredHingeObjective(LocalEngine(data), C)
    res_default = tron(obj)
    assert res_default.converged
    assert np.linalg.norm(obj.gradient(res_default.w)) <= 1e-3 * np.linalg.norm(obj.gradient(np.zeros(D.shape[1])))


def explicit_l1_optimum(D, lam):
    """min λ‖w‖² + (1/N) Σ ξ  s.t. ξ ≥ 0, ξ ≥ 1 − Dw, solved as one QP by cvxopt."""
    N, n = D.shape
    P = np.zeros((n + N, n + N))
    P[:n, :n] = 2 * lam * np.eye(n)
    q = np.concatenate([np.zeros(n), np.full(N, 1.0 / N)])
    G = np.block([[-D, -np.eye(N)], [np.zeros((N, n)), -np.eye(N)]])
    h = np.concatenate([-np.ones(N), np.zeros(N)])
    sol = solvers.qp(matrix(P), matrix(q), matrix(G), matrix(h),
                     options={"show_progress": False, "abstol": 1e-10, "reltol": 1e-10, "feastol": 1e-10})
    return sol["primal objective"], np.array(sol["x"]).ravel()[:n]


@pytest.mark.parametrize("real_labels", [False, True])
@pytest.mark.parametrize("lam", [1e-3, 1e-1])
def test_bmrm_reaches_l1_optimum_within_eps(real_labels, lam):
    data, D = problem(2, m=90, real_labels=real_labels)
    opt, _ = explicit_l1_optimum(D, lam)
    eps = 1e-3
    res = bmrm(HingeRisk(LocalEngine(data), lam), tol=eps)
    assert res.converged
    assert opt - 1e-9 <= res.objective <= opt + eps
    # the objective it reports is the true J at the returned w
    assert res.objective == pytest.approx(HingeRisk(LocalEngine(data), lam).value(res.w), rel=1e-12)


def test_bmrm_keeps_best_iterate_and_gap_decreases_to_tol():
    data, _ = problem(3)
    res = bmrm(HingeRisk.from_c(LocalEngine(data), 1.0), tol=1e-4)
    best = [h["objective"] for h in res.history]
    assert all(b2 <= b1 + 1e-15 for b1, b2 in zip(best, best[1:]))
    assert res.history[-1]["gap"] < 1e-4
    lowers = [h["lower_bound"] for h in res.history]
    assert all(l2 >= l1 - 1e-9 for l1, l2 in zip(lowers, lowers[1:]))  # the bundle only tightens


def test_counting_methods_train_the_same_model():
    data, _ = problem(4, real_labels=True)
    ws = [train(data, solver="tron", C=0.5, counting=c).weights for c in ("selection", "rbtree", "direct", "pairs")]
    for w in ws[1:]:
        np.testing.assert_allclose(w, ws[0], rtol=1e-10, atol=1e-12)


def test_warm_start_from_optimum_stops_immediately():
    data, _ = problem(5)
    first = train(data, solver="tron", C=1.0, tol=1e-6)
    again = train(data, solver="tron", C=1.0, tol=1e-3, w0=first.weights)
    assert again.summary["iterations"] == 0


def test_one_log_line_per_iteration(caplog):
    data, _ = problem(6)
    with caplog.at_level("INFO", logger="sparkrank"):
        model = train(data, solver="tron", C=1.0)
    lines = [r for r in caplog.records if r.name == "sparkrank.tron"]
    assert len(lines) == len(model.summary["history"]) >= 1
    assert "|g|" in lines[0].getMessage()


class _StateCountingEngine(LocalEngine):
    """Counts kernel states kept and released."""

    def __init__(self, data):
        super().__init__(data)
        self.kept = self.released = 0

    def run(self, vector, kernel, *, state=None, keep_state=False):
        self.kept += bool(keep_state)
        return super().run(vector, kernel, state=state, keep_state=keep_state)

    def release(self, state):
        self.released += not state.released
        super().release(state)


@pytest.mark.parametrize("solver", ["tron", "ncg", "toppush"])
def test_train_releases_every_kept_state(solver):
    from sparkrank.datasets import make_ranking_data

    data, _ = make_ranking_data(400, 5, rows_per_group=20, n_levels=3, seed=2)
    engine = _StateCountingEngine(data)
    for C in (0.1, 1.0):  # an engine shared by several fits, as tune and fitMultiple do
        train(engine, solver=solver, C=C, max_iter=20)
    assert engine.released == engine.kept
    if solver != "ncg":  # TRON keeps sorted scores for Hv, TopPush its dual iterates; NCG keeps none
        assert engine.kept > 0


def test_take_groups_keeps_a_valid_input_order():
    from sparkrank.datasets import make_ranking_data
    from sparkrank.selection import take_groups

    data, _ = make_ranking_data(300, 4, rows_per_group=20, seed=1)
    part = take_groups(data, np.array([3, 0, 5]))
    assert sorted(part.row_order.tolist()) == list(range(part.n_rows))
    scores = part.to_input_order(np.arange(part.n_rows, dtype=float))
    assert scores.shape == (part.n_rows,)
