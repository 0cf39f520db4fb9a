"""TopPush (li2014): projection, dual kernel, objective, solver, engines and metrics."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparkrank.data.block import DataError, RankingData
from sparkrank.engines.local import LocalEngine
from sparkrank.kernels.simplex_projection import project_groups, project_groups_sorted, project_pair
from sparkrank.kernels.toppush import TopPushStepKernel
from sparkrank.objectives.toppush import TopPushObjective
from sparkrank.solvers.apg import apg


# --------------------------------------------------------------------------- projection


def _qp_projection(z, is_pos):
    """``argmin ½‖x − z‖²`` over ``x ≥ 0, Σ_pos x = Σ_neg x`` by cvxopt (independent oracle)."""
    from cvxopt import matrix, solvers

    n = z.size
    solvers.options["show_progress"] = False
    solvers.options["abstol"] = solvers.options["reltol"] = solvers.options["feastol"] = 1e-12
    A = np.where(is_pos, 1.0, -1.0)[None, :]
    sol = solvers.qp(matrix(np.eye(n)), matrix(-z), matrix(-np.eye(n)), matrix(np.zeros(n)),
                     matrix(A), matrix(np.zeros(1)))
    return np.array(sol["x"]).ravel()


def _random_point(rng, n, kind):
    if kind == "ties":
        return rng.integers(-2, 3, size=n).astype(float)
    if kind == "zeros":
        return np.zeros(n)
    return rng.normal(size=n) * rng.choice([0.1, 1.0, 10.0])


@pytest.mark.parametrize("kind", ["normal", "ties", "zeros"])
def test_projection_matches_sort_reference_and_qp(rng, kind):
    for _ in range(40):
        n = int(rng.integers(1, 15))
        z = _random_point(rng, n, kind)
        is_pos = rng.random(n) < 0.5
        off = np.array([0, n])
        fast = project_groups(z, is_pos, off)
        ref = project_groups_sorted(z, is_pos, off)
        np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-12)
        assert np.all(fast >= 0)
        assert fast[is_pos].sum() == pytest.approx(fast[~is_pos].sum(), abs=1e-12)
    for _ in range(8):
        n = int(rng.integers(2, 12))
        z = _random_point(rng, n, kind)
        is_pos = rng.random(n) < 0.5
        np.testing.assert_allclose(project_groups(z, is_pos, np.array([0, n])), _qp_projection(z, is_pos),
                                   atol=1e-6)


def test_projection_with_one_side_empty_is_zero(rng):
    z = rng.normal(size=7) + 1.0
    alpha, beta = project_pair(z, np.zeros(0))
    assert alpha.shape == (7,) and beta.shape == (0,)
    np.testing.assert_array_equal(alpha, 0.0)
    alpha, beta = project_pair(np.zeros(0), z)
    np.testing.assert_array_equal(beta, 0.0)


def test_projection_of_a_feasible_point_is_itself(rng):
    a = rng.random(5)
    b = rng.random(4)
    b *= a.sum() / b.sum()
    alpha, beta = project_pair(a, b)
    np.testing.assert_allclose(alpha, a, atol=1e-14)
    np.testing.assert_allclose(beta, b, atol=1e-14)


def test_projection_is_per_group_and_skips_inactive_groups(rng):
    sizes = [5, 0, 8, 3, 6]
    off = np.concatenate([[0], np.cumsum(sizes)])
    z = rng.normal(size=off[-1])
    is_pos = rng.random(off[-1]) < 0.4
    active = np.array([True, True, True, False, True])
    out = project_groups(z, is_pos, off, active)
    np.testing.assert_allclose(out, project_groups_sorted(z, is_pos, off, active), atol=1e-12)
    for g in range(len(sizes)):
        s = slice(off[g], off[g + 1])
        if not active[g]:
            np.testing.assert_array_equal(out[s], 0.0)
            continue
        one = project_groups(z[s], is_pos[s], np.array([0, sizes[g]]))
        np.testing.assert_array_equal(out[s], one)
        assert out[s][is_pos[s]].sum() == pytest.approx(out[s][~is_pos[s]].sum(), abs=1e-12)


def test_projection_large_group_matches_reference(rng):
    n = 20000
    z = rng.normal(size=n)
    is_pos = rng.random(n) < 0.1
    off = np.array([0, n])
    np.testing.assert_allclose(project_groups(z, is_pos, off), project_groups_sorted(z, is_pos, off), atol=1e-10)


def test_projection_rejects_bad_input():
    with pytest.raises(ValueError, match="non-finite"):
        project_groups(np.array([np.nan, 1.0]), np.array([True, False]), np.array([0, 2]))
    with pytest.raises(ValueError, match="offsets"):
        project_groups(np.zeros(3), np.zeros(3, bool), np.array([0, 2]))
    with pytest.raises(ValueError, match="same length"):
        project_groups(np.zeros(3), np.zeros(2, bool), np.array([0, 3]))
