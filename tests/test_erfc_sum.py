"""The fast erfc summation is ε-exact: ``max|Ê - E| ≤ ε·Σ|q|`` (raykar2007 §5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkrank.data.block import DataError
from sparkrank.kernels.erfc_sum import beaulieu_erfc, erfc_sum, erfc_sum_parameters

EPSILONS = [1e-3, 1e-6, 1e-10]


def check_bound(y, z, q, eps):
    fast = erfc_sum(y, z, q, eps)
    direct = erfc_sum(y, z, q, method="direct")
    qabs = float(np.abs(q).sum())
    err = float(np.max(np.abs(fast - direct))) if y.size else 0.0
    assert err <= eps * qabs + 1e-300, (err, eps * qabs)
    return err


@pytest.mark.parametrize("eps", [1e-3, 1e-6, 1e-10, 1e-12])
def test_parameters_satisfy_eq6_and_series_error_is_below_it(eps):
    prm = erfc_sum_parameters(eps)
    bound = prm.truncation_bound()
    assert bound <= eps / 2  # eq. (6) at the largest series argument, half the budget
    assert math.erfc(prm.r_y - prm.r_x) <= eps / 2 * (1 + 1e-9)  # far clusters
    s = np.linspace(-prm.series_radius, prm.series_radius, 20001)
    series = beaulieu_erfc(s, prm.p, prm.h)
    exact = np.array([math.erfc(v) for v in s])
    assert np.max(np.abs(series - exact)) <= max(bound, 1e-15)


def adversarial_sets(rng):
    m = 700
    yield "normal", rng.normal(size=m), rng.normal(size=m), np.ones(m)
    centres = rng.choice([-20.0, -3.0, 0.0, 0.4, 11.0], size=m)
    yield "clustered", centres + 1e-3 * rng.normal(size=m), rng.choice(centres, size=m) + rng.normal(size=m) * 0.5, \
        rng.random(m)
    yield "spread", rng.uniform(-50, 50, m), rng.uniform(-55, 55, m), rng.normal(size=m)
    yield "negative", rng.normal(size=m) * 4, rng.normal(size=m) * 4, -rng.random(m)
    dup = np.repeat(rng.normal(size=7), 100)
    yield "duplicates", dup, np.concatenate([dup[:300], rng.normal(size=200)]), rng.choice([-1.0, 2.0], size=dup.size)
    yield "targets far outside", rng.normal(size=m), np.concatenate([rng.uniform(-200, -30, m // 2),
                                                                      rng.uniform(30, 200, m - m // 2)]), rng.normal(size=m)
    yield "sparse grid", rng.uniform(-1e4, 1e4, 60), rng.uniform(-1e4, 1e4, 60), rng.normal(size=60)


@pytest.mark.parametrize("eps", EPSILONS)
def test_fast_sum_meets_bound_on_adversarial_sets(eps, rng):
    for name, z, y, q in adversarial_sets(rng):
        try:
            check_bound(y, z, q, eps)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    z=st.lists(st.floats(-60, 60), min_size=0, max_size=60),
    y=st.lists(st.floats(-70, 70), min_size=0, max_size=40),
    wseed=st.integers(0, 2**31),
    eps=st.sampled_from(EPSILONS),
)
def test_fast_sum_meets_bound_hypothesis(z, y, wseed, eps):
    z = np.array(z, dtype=np.float64)
    y = np.array(y, dtype=np.float64)
    q = np.random.default_rng(wseed).normal(size=z.size)
    out = erfc_sum(y, z, q, eps)
    assert out.shape == y.shape
    if z.size:
        check_bound(y, z, q, eps)
    else:
        assert np.all(out == 0.0)


def test_degenerate_inputs():
    assert erfc_sum(np.array([1.0, -2.0]), np.zeros(0)).tolist() == [0.0, 0.0]  # N = 0
    assert erfc_sum(np.zeros(0), np.array([1.0, 2.0])).shape == (0,)  # M = 0
    same = np.full(50, 3.25)
    out = erfc_sum(same, same, np.ones(50), 1e-10)
    np.testing.assert_allclose(out, 50.0 * math.erfc(0.0), rtol=0, atol=1e-10 * 50)  # all points equal
    assert np.all(erfc_sum(np.arange(5.0), np.arange(5.0), np.zeros(5)) == 0.0)  # zero weights
    # huge spread: far clusters are exactly 0 or 2 per unit weight
    z = np.array([-1e12, 0.0, 1e12])
    y = np.array([-1e12 + 0.5, 0.25, 1e12 - 0.5])
    check_bound(y, z, np.array([1.0, -2.0, 3.0]), 1e-10)


def test_bad_input_is_rejected_clearly():
    with pytest.raises(DataError, match=r"sources\[1\] is not finite"):
        erfc_sum(np.zeros(2), np.array([0.0, np.nan]))
    with pytest.raises(DataError, match="3 sources but 2 weights"):
        erfc_sum(np.zeros(2), np.zeros(3), np.ones(2))
    with pytest.raises(DataError, match="one-dimensional"):
        erfc_sum(np.zeros((2, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="epsilon must be in"):
        erfc_sum(np.zeros(2), np.zeros(3), epsilon=1e-20)
    with pytest.raises(DataError, match="too wide for the cluster grid"):
        erfc_sum(np.zeros(2), np.array([-1e300, 1e300]))
    with pytest.raises(ValueError, match="unknown erfc summation method"):
        erfc_sum(np.zeros(2), np.zeros(3), method="fmm")
