"""RankNCG: log-sigmoid kernel, objective and PR+ NCG against explicit pairs and scipy."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import erfc, expit

from conftest import explicit_pairs
from sparkrank.conventions import c_from_raykar_lambda, raykar_lambda_from_c
from sparkrank.data.block import DataError, RankingData
from sparkrank.data.groups import QueryGroups
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.kernels.ranknet import SIGMOID_ERFC_SCALE, RankNetKernel, surrogate_pair_loss
from sparkrank.objectives.ranknet import RankNetObjective
from sparkrank.solvers.ncg import ncg
from sparkrank.training import train, training_objective_value

A = SIGMOID_ERFC_SCALE


def pair_oracle(labels, offsets, scores):
    """Brute force over explicit pairs: exact loss, exact-σ coef, erfc-approximated coef, counts."""
    u, l = explicit_pairs(labels, offsets)
    z = scores[u] - scores[l]
    m = labels.size
    exact, approx, count = np.zeros(m), np.zeros(m), np.zeros(m)
    s = expit(-z)
    np.add.at(exact, u, -s)
    np.add.at(exact, l, s)
    e = 0.5 * erfc(A * z)
    np.add.at(approx, u, -e)
    np.add.at(approx, l, e)
    np.add.at(count, u, 1.0)
    np.add.at(count, l, 1.0)
    return float(np.logaddexp(0.0, -z).sum()), exact, approx, count


def random_groups(rng, n_groups, max_size, levels):
    sizes = rng.integers(0, max_size + 1, n_groups)
    sizes[: min(3, n_groups)] = [1, 2, 0][: min(3, n_groups)]  # tiny groups
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    m = int(offsets[-1])
    labels = rng.normal(size=m) if levels == 0 else rng.integers(0, levels, m).astype(float)
    return labels, offsets


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), levels=st.sampled_from([0, 1, 2, 5]), scale=st.sampled_from([0.0, 0.5, 8.0, 80.0]),
       tied_scores=st.booleans())
def test_kernel_matches_explicit_pairs(seed, levels, scale, tied_scores):
    rng = np.random.default_rng(seed)
    labels, offsets = random_groups(rng, 9, 40, levels)
    scores = scale * rng.normal(size=labels.size)
    if tied_scores:
        scores = np.round(scores)  # many equal scores
    groups = QueryGroups.from_offsets(labels, offsets)
    loss, exact, approx, count = pair_oracle(labels, offsets, scores)
    r = RankNetKernel("direct")(groups, scores, None)
    assert r.stats[0] == pytest.approx(loss, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(r.coef, exact, rtol=0, atol=1e-11 * max(1.0, count.max()))
    for eps in (1e-3, 1e-6, 1e-10):
        for small in (True, False):
            f = RankNetKernel("fast", eps, value=True, direct_small_groups=small)(groups, scores, None)
            assert f.stats[0] == pytest.approx(loss, rel=1e-12, abs=1e-12)
            # each row: two ε-exact erfc sums with weights ½ (raykar2007 §5 bound)
            assert np.all(np.abs(f.coef - approx) <= 0.5 * eps * count + 1e-12)


@pytest.mark.parametrize("levels", [2, 5, 0])
@pytest.mark.parametrize("eps", [1e-3, 1e-6, 1e-10])
def test_fast_gradient_on_large_groups_within_bound(levels, eps):
    rng = np.random.default_rng(levels)
    labels, offsets = random_groups(rng, 4, 700, levels)  # real-valued labels: every row its own level
    scores = 6.0 * rng.normal(size=labels.size) + np.repeat(rng.normal(size=4) * 30, np.diff(offsets))
    groups = QueryGroups.from_offsets(labels, offsets)
    _, exact, approx, count = pair_oracle(labels, offsets, scores)
    fast = RankNetKernel("fast", eps)(groups, scores, None).coef
    assert np.all(np.abs(fast - approx) <= 0.5 * eps * count + 1e-12)
    # and the erfc form of σ (raykar2007 §4) stays close to the exact gradient
    sig_err = max(abs(expit(z) - (1 - 0.5 * math.erfc(A * z))) for z in np.linspace(-20, 20, 4001))
    assert np.all(np.abs(fast - exact) <= (sig_err + eps) * count + 1e-12)


def random_data(seed, m=120, n=6, levels=4, groups=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    X[rng.random((m, n)) < 0.3] = 0.0
    y = rng.integers(0, levels, m).astype(float) if levels else rng.normal(size=m)
    return RankingData.from_arrays(X, y, rng.integers(0, groups, m))


def pair_differences(data):
    u, l = explicit_pairs(data.labels, data.groups.offsets)
    X = data.X.toarray()
    return X[u] - X[l]


def exact_fun(D, C):
    def f(w):
        z = D @ w
        return 0.5 * w @ w + C * np.logaddexp(0.0, -z).sum(), w - C * D.T @ expit(-z)
    return f


def surrogate_fun(D, C):
    def f(w):
        z = D @ w
        return 0.5 * w @ w + C * surrogate_pair_loss(z).sum(), w - C * D.T @ (0.5 * erfc(A * z))
    return f


def scipy_optimum(fun, n):
    r = minimize(fun, np.zeros(n), jac=True, method="L-BFGS-B",
                 options=dict(gtol=1e-13, ftol=1e-16, maxiter=20000, maxcor=30))
    return r.x


def test_objective_value_gradient_and_conventions():
    data = random_data(1, levels=0)
    D = pair_differences(data)
    C = 0.3
    w = np.random.default_rng(2).normal(size=data.n_features)
    f_ref, g_ref = exact_fun(D, C)(w)
    _, gs_ref = surrogate_fun(D, C)(w)
    direct = RankNetObjective(LocalEngine(data), C, gradient="direct")
    fast = RankNetObjective(LocalEngine(data), C, gradient="fast", epsilon=1e-10)
    assert direct.value(w) == pytest.approx(f_ref, rel=1e-12)
    assert fast.value(w) == pytest.approx(f_ref, rel=1e-12)
    np.testing.assert_allclose(direct.gradient(w), g_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fast.gradient(w), gs_ref, rtol=0, atol=1e-8 * C * len(D))
    assert direct.monitor_value and not fast.monitor_value
    # raykar2007's L(w) = -(λ/2)‖w‖² + Σ log σ equals -λ f(w) when C = 1/λ
    lam = 2.5
    obj = RankNetObjective.from_lambda(LocalEngine(data), lam, gradient="direct")
    assert obj.C == c_from_raykar_lambda(lam) == 1.0 / lam and raykar_lambda_from_c(obj.C) == pytest.approx(lam)
    L = -0.5 * lam * w @ w - np.logaddexp(0.0, -(D @ w)).sum()
    assert -lam * obj.value(w) == pytest.approx(L, rel=1e-12)


def test_objective_rejects_bad_options_and_data():
    data = random_data(3)
    with pytest.raises(ValueError, match="unknown RankNet gradient"):
        RankNetObjective(LocalEngine(data), 1.0, gradient="exact")
    with pytest.raises(ValueError, match="epsilon must be in"):
        RankNetObjective(LocalEngine(data), 1.0, epsilon=0.0)
    with pytest.raises(ValueError, match="C must be a finite positive"):
        RankNetObjective(LocalEngine(data), -1.0)
    groups = QueryGroups.from_offsets(np.array([0.0, 1.0]), np.array([0, 2]))
    with pytest.raises(FloatingPointError, match="score of row 1 is not finite"):
        RankNetKernel("fast")(groups, np.array([0.0, np.inf]), None)
    with pytest.raises(ValueError, match="eta must be in"):
        ncg(RankNetObjective(LocalEngine(data), 1.0), eta=1.5)
    flat = RankingData.from_arrays(np.ones((4, 2)), [1.0, 1.0, 2.0, 2.0], [1, 1, 2, 2])
    with pytest.raises(DataError, match="no preference pairs"):
        RankNetObjective(LocalEngine(flat), 1.0)


@pytest.mark.parametrize("levels", [2, 4, 0])
def test_ncg_direct_reaches_scipy_optimum(levels):
    data = random_data(10 + levels, levels=levels)
    C = 0.2
    w_ref = scipy_optimum(exact_fun(pair_differences(data), C), data.n_features)
    records = []
    res = ncg(RankNetObjective(LocalEngine(data), C, gradient="direct"), tol=1e-10, max_iter=500,
              callback=lambda rec: records.append((rec.iteration, rec.extras["grad_norm"])))
    assert res.converged, res.message
    assert np.max(np.abs(res.w - w_ref)) <= 1e-5 * np.max(np.abs(w_ref))
    assert [r[0] for r in records] == list(range(1, res.iterations + 1)) == [h["iter"] for h in res.history]
    assert res.objective == pytest.approx(exact_fun(pair_differences(data), C)(res.w)[0], rel=1e-12)
    # objective values decrease monotonically (exact line search on a convex function)
    fs = [h["objective"] for h in res.history]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(fs, fs[1:]))


def test_ncg_fast_reaches_the_erfc_surrogate_optimum():
    data = random_data(7, m=300, levels=3, groups=2)  # groups of ~150 rows use the fast sweeps
    C = 0.5
    D = pair_differences(data)
    w_ref = scipy_optimum(surrogate_fun(D, C), data.n_features)
    res = ncg(RankNetObjective(LocalEngine(data), C, gradient="fast", epsilon=1e-10), tol=1e-9, max_iter=500)
    assert res.converged, res.message
    assert np.max(np.abs(res.w - w_ref)) <= 1e-5 * np.max(np.abs(w_ref))
    assert math.isnan(res.objective)  # the O(pairs) value is not monitored in fast mode
    # the erfc form of σ matches its variance, not its slope at 0 (a/√π ≈ 0.156 vs 1/4), so
    # the surrogate optimum is a slightly rescaled log-sigmoid optimum: same direction
    w_exact = scipy_optimum(exact_fun(D, C), data.n_features)
    cosine = res.w @ w_exact / (np.linalg.norm(res.w) * np.linalg.norm(w_exact))
    assert cosine > 0.995 and np.max(np.abs(res.w - w_exact)) <= 0.25 * np.max(np.abs(w_exact))


def test_ncg_stops_at_once_at_the_optimum_and_logs(caplog):
    data = random_data(5)
    obj = RankNetObjective(LocalEngine(data), 1.0, gradient="direct")
    first = ncg(obj, tol=1e-8)
    with caplog.at_level(logging.INFO, logger="sparkrank.ncg"):
        again = ncg(obj, first.w, tol=1e-8)
    assert again.iterations == 0 and again.converged
    capped = ncg(obj, tol=1e-12, max_iter=2)
    assert capped.iterations == 2 and not capped.converged and "max_iter" in capped.message
    with caplog.at_level(logging.INFO, logger="sparkrank.ncg"):
        ncg(obj, tol=1e-2)
    assert any(r.message.startswith("iter") and "|g|" in r.message for r in caplog.records)


def test_train_registry_and_options():
    data, _ = make_ranking_data(400, 5, rows_per_group=50, n_levels=3, seed=8)
    fast = train(data, solver="ncg", C=0.1)
    direct = train(data, solver="ncg", C=0.1, solver_options={"gradient": "direct"})
    assert fast.summary["converged"] and direct.summary["converged"]
    assert fast.options == {} and direct.options == {"gradient": "direct"}
    assert np.corrcoef(fast.weights, direct.weights)[0, 1] > 0.99
    value = training_objective_value(direct, LocalEngine(data))
    assert value == pytest.approx(direct.summary["objective"], rel=1e-9)


@pytest.mark.parametrize("placement, gradient", [("executor", "fast"), ("driver", "direct")])
def test_spark_engine_gives_the_local_model(spark, tmp_path, placement, gradient):
    from sparkrank.io.files import write_parquet
    from sparkrank.engines.spark.engine import SparkEngine

    data, _ = make_ranking_data(600, 6, rows_per_group=60, n_levels=4, density=0.6, seed=21)
    path = tmp_path / "train.parquet"
    write_parquet(path, data)
    # three iterations (~10 passes) keep the test quick; the iterates must agree to rounding
    options = {"gradient": gradient}
    local = train(data, solver="ncg", C=0.05, max_iter=3, solver_options=options)
    with SparkEngine(spark.read.parquet(str(path)), placement=placement, num_partitions=3) as engine:
        model = train(engine, solver="ncg", C=0.05, max_iter=3, solver_options=options)
    assert model.summary["iterations"] == local.summary["iterations"] == 3
    np.testing.assert_allclose(model.weights, local.weights, rtol=0, atol=1e-9 * np.max(np.abs(local.weights)))
