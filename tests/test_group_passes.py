"""The group-by-group passes (``engines/group_passes.py``, ``kernels/group_forms.py``) give the
tile path's results bit for bit: the Hessian product's scores and ``Xᵀc`` (which also agree with
an all-pairs oracle) and every output of the squared hinge's value pass.

Random dense rows in float32 and float64, widths that are and are not a multiple of the eight
score lanes, groups of one row to 80, one-level groups, real-valued labels with ties,
scores with ties (entries from a few values), tiles of one group, a few, or all, and weighted
rows and groups (zero weights among them) as well as unweighted ones.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkrank.conventions import MARGIN
from sparkrank.data.block import RankingData
from sparkrank.data.groups import QueryGroups
from sparkrank.engines import tiles as tiling
from sparkrank.engines.group_passes import runs_group_form
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.tiles import fused_pass, make_tiles
from sparkrank.kernels.losses import (HingeKernel, SquaredHingeDiagonalKernel, SquaredHingeHessianKernel,
                                     SquaredHingeKernel)
from sparkrank.numerics.exact_sum import dd_round
from sparkrank.training import train


@st.composite
def problems(draw):
    # groups of a few rows, and some longer than the sort's directly ranked runs (32 rows)
    sizes = draw(st.lists(st.integers(1, 30) | st.integers(33, 80), min_size=1, max_size=12))
    width = draw(st.sampled_from([1, 3, 8, 13, 17]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    m = sum(sizes)
    # entries from a few values (and zeros): tied scores, rows that are all zero
    X = rng.choice([0.0, 0.0, 0.5, -1.0, 2.0, 0.25], size=(m, width)).astype(dtype)
    if draw(st.booleans()):
        X += rng.normal(size=X.shape).astype(dtype)
    # up to 8 levels, 9-16 (the sweep plan's wider lanes) and more than 16 (a taller tree: no plan)
    levels = draw(st.sampled_from([[0.0], [0.0, 1.0], [0.0, 1.0, 2.0, 3.0, 4.0], [-0.5, 0.3, 2.7],
                                   list(np.linspace(-1.0, 2.0, 12)), list(np.arange(20.0))]))
    labels = rng.choice(levels, size=m)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    w = rng.normal(size=width) * draw(st.sampled_from([0.0, 0.3, 3.0]))
    v = rng.normal(size=width)
    tile_bytes = draw(st.sampled_from([1, 200, 1 << 40]))
    groups = QueryGroups.from_offsets(labels, offsets)
    if draw(st.booleans()):  # weighted rows and groups, zeros among them (pairs dropped)
        groups = groups.with_weights(rng.choice([0.0, 0.5, 1.0, 1.7, 3.0], size=m),
                                     rng.choice([0.0, 0.3, 1.0, 2.0], size=len(sizes)))
    return X, groups, w, v, tile_bytes


def _passes(X, groups, w, v, tile_bytes, monkeypatch, group_form: bool, plan: bool = True):
    tiles, _ = make_tiles(X, groups, tile_bytes)
    scores = np.empty(X.shape[0])
    results, _, _ = fused_pass(X, tiles, w, SquaredHingeKernel(), None, (1,), scores)
    states = [r.state if plan else r.state[:2] for r in results]  # the group form keeps a sweep plan
    with monkeypatch.context() as m:
        if not group_form:
            m.setattr(tiling, "runs_group_form", lambda *a: False)
        u = np.empty(X.shape[0])
        results, (xtc,), _ = fused_pass(X, tiles, v, SquaredHingeHessianKernel(), states, (1,), u)
    return u, xtc, results


def _oracle(X, groups, w, v) -> np.ndarray:
    """``Xᵀc`` with ``c`` from every pair: a support pair ``(i above j)`` at ``p = Xw``
    (``p_i < p_j + 1``) adds ``2(u_i - u_j)`` to ``c_i`` and its negative to ``c_j`` (lee-lin2014 eq. (17)),
    times the pair's weight ``b_q·a_i·a_j`` when weighted."""
    Xd = X.astype(np.float64)
    p, u = Xd @ w, Xd @ v
    c = np.zeros(X.shape[0])
    a = groups.row_weights if groups.weighted else np.ones(X.shape[0])
    b = groups.group_weights if groups.weighted else np.ones(groups.n_groups)
    for g in range(groups.n_groups):
        rows = range(groups.offsets[g], groups.offsets[g + 1])
        for i in rows:
            for j in rows:
                if groups.labels[i] > groups.labels[j] and p[i] < p[j] + MARGIN:
                    c[i] += 2.0 * b[g] * a[i] * a[j] * (u[i] - u[j])
                    c[j] -= 2.0 * b[g] * a[i] * a[j] * (u[i] - u[j])
    return Xd.T @ c


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(problem=problems())
def test_group_pass_equals_the_tile_path_bitwise_and_the_oracle(problem, monkeypatch):
    X, groups, w, v, tile_bytes = problem
    assert runs_group_form(SquaredHingeHessianKernel(), X, [None], (1,), True)
    u, xtc, results = _passes(X, groups, w, v, tile_bytes, monkeypatch, group_form=True)
    u_ref, xtc_ref, results_ref = _passes(X, groups, w, v, tile_bytes, monkeypatch, group_form=False)
    _, xtc_swept, _ = _passes(X, groups, w, v, tile_bytes, monkeypatch, group_form=True, plan=False)
    np.testing.assert_array_equal(u, u_ref)
    for sums in (xtc, xtc_swept):  # the partner sums from the value pass's plan, and swept again
        np.testing.assert_array_equal(sums[0], xtc_ref[0])
        np.testing.assert_array_equal(sums[1], xtc_ref[1])
    assert [r.stats.tolist() for r in results] == [r.stats.tolist() for r in results_ref] == [[]] * len(results)
    oracle = _oracle(X, groups, w, v)
    np.testing.assert_allclose(dd_round(xtc), oracle, rtol=1e-9, atol=1e-9 * (1 + np.abs(oracle).max()))


def test_the_group_pass_runs_only_where_its_bits_are_the_tile_paths():
    X = np.ones((4, 3))
    kernel = SquaredHingeHessianKernel()
    assert runs_group_form(kernel, X, [None], (1,), True)
    assert not runs_group_form(kernel, sp.csr_matrix(X), [None], (1,), True)  # CSR: the tile path
    assert not runs_group_form(SquaredHingeHessianKernel("direct"), X, [None], (1,), True)  # other sums' order
    assert not runs_group_form(kernel, X, [None], (1, 2), True)  # a second product
    assert not runs_group_form(kernel, X, None, (1,), True)  # no kept state
    assert not runs_group_form(kernel, X, [None], (1,), False)  # scores given, not computed
    assert not runs_group_form(SquaredHingeKernel(), X, [None], (1,), True)  # the value pass takes no state
    assert not runs_group_form(SquaredHingeDiagonalKernel(), X, None, (1, 2), True)  # a second power
    assert not runs_group_form(SquaredHingeKernel("rbtree"), X, None, (1,), True)
    assert not runs_group_form(HingeKernel(), X, None, (1,), True)  # no group form
    assert runs_group_form(SquaredHingeDiagonalKernel(), X, None, (1,), False)
    assert runs_group_form(SquaredHingeKernel(), X, None, (), True)


def _value_pass(X, groups, w, tile_bytes, kernel, powers, fresh, monkeypatch, group_form: bool):
    tiles, _ = make_tiles(X, groups, tile_bytes)
    scores = np.full(X.shape[0], np.nan)
    if not fresh:
        scores[:] = X.astype(np.float64) @ w  # a pass at the point of the last one: scores given
    with monkeypatch.context() as m:
        if not group_form:
            m.setattr(tiling, "runs_group_form", lambda *a: False)
        else:
            assert runs_group_form(kernel, X, None, powers, fresh)
        results, partials, moments = fused_pass(X, tiles, w, kernel, None, powers, scores, fresh)
    return scores, results, partials, moments


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(problem=problems(), diagonal=st.booleans(), powers=st.sampled_from([(1,), ()]), fresh=st.booleans())
def test_value_group_pass_equals_the_tile_path_bitwise(problem, diagonal, powers, fresh, monkeypatch):
    """Scores, statistics (hi and lo), kept states (scores and sort order), ``Xᵀc`` and the
    diagonal's moments: every bit of the squared hinge's value pass, with and without its diagonal."""
    X, groups, w, _, tile_bytes = problem
    kernel = SquaredHingeDiagonalKernel() if diagonal else SquaredHingeKernel()
    fast = _value_pass(X, groups, w, tile_bytes, kernel, powers, fresh, monkeypatch, group_form=True)
    slow = _value_pass(X, groups, w, tile_bytes, kernel, powers, fresh, monkeypatch, group_form=False)
    np.testing.assert_array_equal(fast[0], slow[0])
    assert len(fast[1]) == len(slow[1])
    for a, b in zip(fast[1], slow[1]):
        np.testing.assert_array_equal(a.stats, b.stats)
        np.testing.assert_array_equal(a.stats_dd()[1], b.stats_dd()[1])
        np.testing.assert_array_equal(a.state[0], b.state[0])
        np.testing.assert_array_equal(a.state[1], b.state[1])
        assert a.state[1].dtype == b.state[1].dtype and a.coef is None and a.moment_coef is None
    for a, b in zip(fast[2], slow[2]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
    assert (fast[3] is None) == (slow[3] is None) == (not (diagonal and powers))
    for a, b in zip(fast[3] or (), slow[3] or ()):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tron_with_group_passes_is_the_tile_paths_fit_bitwise(dtype, monkeypatch):
    from sparkrank.datasets import make_ranking_data

    data, _ = make_ranking_data(1200, 13, rows_per_group=30, n_levels=5, seed=3)
    dense = RankingData.from_arrays(data.X.toarray(), data.groups.labels, np.repeat(data.qids, data.groups.group_sizes),
                                    dtype=dtype, layout="dense")
    assert isinstance(dense.X, np.ndarray) and dense.X.dtype == dtype

    def fit():
        with LocalEngine(dense, threads=2) as engine:
            return train(engine, solver="tron", C=0.7, max_iter=8)

    fast = fit()
    monkeypatch.setattr(tiling, "runs_group_form", lambda *a: False)
    slow = fit()
    np.testing.assert_array_equal(fast.weights, slow.weights)
    assert fast.summary["objective"] == slow.summary["objective"]


def test_the_sweep_plan_takes_the_smallest_type_that_holds_it():
    """A plan holds positions in a group and ``l⁺+l⁻`` (under twice the group's rows)."""
    from sparkrank.engines.group_passes import _plan_dtype

    assert _plan_dtype(0) == _plan_dtype(127) == np.uint8
    assert _plan_dtype(128) == _plan_dtype(32767) == np.uint16
    assert _plan_dtype(32768) == _plan_dtype(2**30 - 1) == np.int32
    assert _plan_dtype(2**30) == np.int64


def test_groups_longer_than_the_plans_scratch_sweep_within_the_same_pass(monkeypatch):
    """A group with more rows than ``partner_sums_from_bounds``'s scratch sweeps with the tree
    while its tile's shorter groups use the plan: the tile path's bits either way."""
    from sparkrank.kernels import counting

    monkeypatch.setattr(counting, "PARTNER_SUM_MAX_ROWS", 16)
    rng = np.random.default_rng(5)
    sizes = [5, 40, 16, 17, 3, 60]
    X = rng.normal(size=(sum(sizes), 9)).astype(np.float32)
    labels = rng.integers(0, 4, size=X.shape[0]).astype(float)
    groups = QueryGroups.from_offsets(labels, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    w, v = rng.normal(size=9), rng.normal(size=9)
    _, fast, _ = _passes(X, groups, w, v, 1 << 40, monkeypatch, group_form=True)
    _, slow, _ = _passes(X, groups, w, v, 1 << 40, monkeypatch, group_form=False)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
