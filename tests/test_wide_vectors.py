"""Vectors of the full width on hashed features (2²⁴ ids): what a fit holds and allocates.

A pass's non-zeros are few, but the objective, its point cache and TRON handle vectors of the
full width: these must be the same bits as the plain expressions they replace, and a Hessian
product or a TRON step must not allocate more of them than it returns.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from sparkrank.engines.local import LocalEngine
from sparkrank.numerics.same_bits import frozen_copy, is_frozen, same_bits
from sparkrank.objectives.ranksvm import SquaredHingeObjective
from sparkrank.solvers import tron as tron_module
from sparkrank.solvers.safeguards import stable_norm
from test_sparse_passes import hashed


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def test_same_bits_is_equality_of_the_bytes():
    a = np.array([0.0, 1.5, np.nan, -2.0])
    assert same_bits(a, a.copy()) and same_bits(a, a)
    signed = a.copy()
    signed[0] = -0.0  # equal as numbers, not as bytes
    assert not same_bits(a, signed) and a.tobytes() != signed.tobytes()
    other = a.copy()
    other[3] = np.nextafter(-2.0, 0.0)
    assert not same_bits(a, other)
    assert not same_bits(a, a[:3])
    key = frozen_copy(a)
    assert is_frozen(key) and not is_frozen(a) and not is_frozen(key[1:])
    with pytest.raises(ValueError):
        key[0] = 1.0


def _plain_steihaug(objective, w, g, delta, max_cg, M):
    # the CG step as it was written before its vectors were updated in place (tron.py's oracle)
    def mnorm(v):
        return math.sqrt(float(v @ (M * v)))

    s = np.zeros_like(g)
    r = -g
    z = r / M
    d = z.copy()
    ztr = float(z @ r)
    cg_tol = 0.1 * math.sqrt(ztr)
    it = 0
    while math.sqrt(ztr) > cg_tol and it < max_cg:
        it += 1
        hd = objective.hessian_vector(w, d)
        dhd = float(d @ hd)
        alpha = ztr / dhd if dhd > 0 else math.inf
        s_next = s + alpha * d
        if not math.isfinite(alpha) or mnorm(s_next) > delta:
            std, sts, dtd = float(s @ (M * d)), float(s @ (M * s)), float(d @ (M * d))
            rad = math.sqrt(max(std * std + dtd * (delta * delta - sts), 0.0))
            alpha = (delta * delta - sts) / (std + rad) if std >= 0 else (rad - std) / dtd
            s = s + alpha * d
            r = r - alpha * hd
            break
        s = s_next
        r = r - alpha * hd
        z = r / M
        znew = float(z @ r)
        d = z + (znew / ztr) * d
        ztr = znew
    return s, r, it


@pytest.mark.parametrize("delta", [1e-3, 1.0, 1e6])
def test_cg_in_place_is_the_plain_expressions_bit_for_bit(delta):
    data = hashed(600, 4000, 12, 10, seed=11)
    rng = np.random.default_rng(12)
    with LocalEngine(data, threads=2) as engine:
        objective = SquaredHingeObjective(engine, C=0.7)
        w = rng.normal(size=data.n_features) * 0.05
        g = objective.gradient(w)
        M = 0.99 + 0.01 * objective.hessian_diagonal(w)
        got = tron_module._steihaug_pcg(objective, w, g, delta, 50, M)
        want = _plain_steihaug(objective, w, g, delta, 50, M)
    assert got[2] == want[2] and got[2] >= 1
    assert np.array_equal(_bits(got[0]), _bits(want[0])) and np.array_equal(_bits(got[1]), _bits(want[1]))


def test_stable_norm_is_the_plain_expression_bit_for_bit():
    rng = np.random.default_rng(3)
    v = rng.normal(size=1001) * np.exp(rng.normal(size=1001) * 20)
    metric = np.exp(rng.normal(size=1001))
    for x, m in ((v, None), (v, metric), (np.zeros(5), None), (-np.abs(v), metric)):
        u = x if m is None else x / np.sqrt(m)
        top = float(np.max(np.abs(u)))
        want = top if top == 0.0 else top * float(np.sqrt(np.dot(u / top, u / top)))
        assert _bits([stable_norm(x, m)]) == _bits([want])
    assert math.isnan(stable_norm(np.array([1.0, np.nan]))) and stable_norm(np.array([np.inf, 1.0])) == np.inf


def _peak_vectors(call, n: int) -> float:
    """Peak bytes newly allocated during ``call()``, in vectors of ``n`` float64 (tracemalloc)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / (8 * n)
    finally:
        tracemalloc.stop()


def test_a_tron_fit_on_2_24_columns_allocates_a_few_vectors_of_the_width():
    """A Hessian product returns one vector of the width and allocates no other (the pass's own
    sums are scaled in place; the point is found without a copy of ``w``); a gradient at an
    evaluated point likewise; two TRON iterations stay under 20 at their peak (the cache's two
    points, TRON's iterate, gradient, step, residual, preconditioner and metric, six CG buffers).
    Before: 3, 2 and 25."""
    n = 1 << 24
    data = hashed(3200, n, 40, 50, seed=7)
    w = np.random.default_rng(0).normal(size=n) * 1e-3
    with LocalEngine(data, threads=2) as engine:
        objective = SquaredHingeObjective(engine, C=1.0)
        objective.value(w)
        objective.hessian_vector(w, w)  # compiled
        assert _peak_vectors(lambda: objective.hessian_vector(w, w), n) < 1.1
        assert _peak_vectors(lambda: objective.gradient(w), n) < 1.1
        assert _peak_vectors(lambda: objective.value(w), n) < 0.01  # cached: found by its bits
        objective.close()
        assert _peak_vectors(lambda: tron_module.tron(objective, max_iter=2), n) < 20
