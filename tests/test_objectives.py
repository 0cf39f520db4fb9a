"""Objective values, (sub)gradients and Hessian products equal explicit pair enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import explicit_pairs
from sparkrank.conventions import c_from_lambda, lambda_from_c
from sparkrank.data.block import DataError, RankingData
from sparkrank.engines.local import LocalEngine
from sparkrank.choices import COUNTING_METHODS
from sparkrank.objectives.ranksvm import HingeRisk, SquaredHingeObjective


def random_data(seed, m=80, n=6, levels=4, groups=7, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    X[rng.random((m, n)) < 0.3] = 0.0  # sparse rows
    y = rng.integers(0, levels, m).astype(float) if levels else rng.normal(size=m)
    q = rng.integers(0, groups, m)
    return RankingData.from_arrays(X, y, q, dtype=dtype)


def explicit(data):
    u, l = explicit_pairs(data.labels, data.groups.offsets)
    X = data.X.toarray().astype(np.float64)
    return X[u] - X[l]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), levels=st.sampled_from([0, 2, 5]), method=st.sampled_from(COUNTING_METHODS),
       scale=st.sampled_from([0.0, 0.3, 3.0]))
def test_l2_value_gradient_hessian_match_explicit_pairs(seed, levels, method, scale):
    data = random_data(seed, levels=levels)
    D = explicit(data)
    C = 0.7
    obj = SquaredHingeObjective(LocalEngine(data), C, counting=method)
    rng = np.random.default_rng(seed + 1)
    w = rng.normal(size=data.n_features) * scale
    v = rng.normal(size=data.n_features)
    z = 1.0 - D @ w
    active = z > 0
    f = 0.5 * w @ w + C * np.sum(z[active] ** 2)
    g = w - 2 * C * D[active].T @ z[active]
    H = np.eye(len(w)) + 2 * C * D[active].T @ D[active]
    assert obj.value(w) == pytest.approx(f, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(obj.gradient(w), g, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(obj.hessian_vector(w, v), H @ v, rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), levels=st.sampled_from([0, 2, 5]), method=st.sampled_from(COUNTING_METHODS))
def test_l1_value_and_subgradient_match_explicit_pairs(seed, levels, method):
    data = random_data(seed, levels=levels)
    D = explicit(data)
    N = D.shape[0]
    lam = 0.01
    obj = HingeRisk(LocalEngine(data), lam, counting=method)
    w = np.random.default_rng(seed).normal(size=data.n_features)
    z = 1.0 - D @ w
    active = z > 0
    assert obj.risk(w) == pytest.approx(np.sum(z[active]) / N, rel=1e-10, abs=1e-12)
    assert obj.value(w) == pytest.approx(lam * w @ w + np.sum(z[active]) / N, rel=1e-10)
    np.testing.assert_allclose(obj.risk_subgradient(w), -D[active].sum(axis=0) / N, rtol=1e-9, atol=1e-12)


def test_hessian_product_equals_finite_difference_of_gradient():
    # away from kinks the squared hinge is twice differentiable: Hv = (g(w+hv) - g(w-hv)) / 2h
    data = random_data(5, m=120, levels=0)
    obj = SquaredHingeObjective(LocalEngine(data), 0.3)
    rng = np.random.default_rng(2)
    w = rng.normal(size=data.n_features) * 0.2
    v = rng.normal(size=data.n_features)
    h = 1e-6
    fd = (obj.gradient(w + h * v) - obj.gradient(w - h * v)) / (2 * h)
    np.testing.assert_allclose(obj.hessian_vector(w, v), fd, rtol=1e-5, atol=1e-5)


def test_float32_storage_gives_float64_results():
    d64 = random_data(9, dtype=np.float64)
    d32 = RankingData.from_arrays(d64.X.astype(np.float32), d64.labels, np.repeat(np.arange(d64.groups.n_groups), d64.groups.group_sizes), dtype=np.float32)
    w = np.random.default_rng(0).normal(size=d64.n_features)
    o64 = SquaredHingeObjective(LocalEngine(d64), 1.0)
    o32 = SquaredHingeObjective(LocalEngine(d32), 1.0)
    assert o32.gradient(w).dtype == np.float64
    assert o32.value(w) == pytest.approx(o64.value(w), rel=1e-5)


def test_lambda_c_conversion_is_one_rule():
    assert c_from_lambda(lambda_from_c(2.5, 1000), 1000) == pytest.approx(2.5)
    assert lambda_from_c(1.0, 50) == pytest.approx(1 / 100)
    data = random_data(1)
    eng = LocalEngine(data)
    a = HingeRisk.from_c(eng, 3.0)
    assert a.lam == pytest.approx(1 / (2 * 3.0 * data.groups.n_pairs))
    assert a.C == pytest.approx(3.0)


def test_no_pairs_is_a_clear_error():
    data = RankingData.from_arrays(np.eye(4), [1, 1, 2, 2], [1, 1, 2, 2])
    with pytest.raises(DataError, match="no preference pairs: all 2 query group"):
        SquaredHingeObjective(LocalEngine(data), 1.0)
    with pytest.raises(DataError, match="no preference pairs"):
        HingeRisk.from_c(LocalEngine(data), 1.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), levels=st.sampled_from([0, 2, 5]), method=st.sampled_from(COUNTING_METHODS),
       scale=st.sampled_from([0.0, 0.3, 3.0]))
def test_l2_diagonal_from_the_value_pass_equals_its_own_pass_and_the_explicit_pairs(seed, levels, method, scale):
    from sparkrank.kernels.losses import SquaredHingeDiagonalKernel, SquaredHingeKernel, SupportPairDiagonalKernel
    from sparkrank.objectives.base import hessian_diagonal_estimate

    data = random_data(seed, levels=levels)
    C = 0.7
    engine = LocalEngine(data)
    obj = SquaredHingeObjective(engine, C, counting=method)
    w = np.random.default_rng(seed + 1).normal(size=data.n_features) * scale
    obj.hessian_diagonal(np.zeros_like(w))  # the first diagonal: a pass of its own, as a solver starts
    obj.value(w)
    passes = engine.passes
    diagonal = obj.hessian_diagonal(w)
    assert engine.passes == passes  # it came with the value pass
    own_pass = hessian_diagonal_estimate(engine, w, SupportPairDiagonalKernel(method), C)
    assert diagonal.tobytes() == own_pass.tobytes()
    # the estimate itself: 1 + C Σ_i a_i (x_ik - μ_k)², a_i = 2 x (support pairs of row i), μ the a-weighted mean
    u, l = explicit_pairs(data.labels, data.groups.offsets)
    X = data.X.toarray()
    active = (1.0 - (X[u] - X[l]) @ w) > 0
    a = 2.0 * (np.bincount(u[active], minlength=data.n_rows) + np.bincount(l[active], minlength=data.n_rows))
    if a.sum() > 0:
        mu = a @ X / a.sum()
        np.testing.assert_allclose(diagonal, 1.0 + C * (a @ (X - mu) ** 2), rtol=1e-9, atol=1e-9)
    # the value kernel with the diagonal gives the plain kernel's loss, coefficients and state
    scores = X @ w
    plain = SquaredHingeKernel(method)(data.groups, scores, None)
    both = SquaredHingeDiagonalKernel(method)(data.groups, scores, None)
    assert both.stats[:2].tobytes() == plain.stats.tobytes() and both.coef.tobytes() == plain.coef.tobytes()
    assert both.moment_coef.tobytes() == SupportPairDiagonalKernel(method)(data.groups, scores, None).coef.tobytes()
