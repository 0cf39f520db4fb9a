"""PRSVM+ counting and the adjacent pair rule against brute force over the filtered pairs.

Counts equal the oracle's exactly; value sums are running sums in score order (the trees add
them in their nodes' order), so they agree to rounding (≤ 1e-12 relative); the L1 hinge's
results use only counts, so they are the selection tree's bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_counting import ranking_problem  # random groups: ties, real labels, one-level and tiny groups
from sparkrank.choices import COUNTING_METHODS
from sparkrank.data.groups import QueryGroups
from sparkrank.kernels.counting import count_support_pairs
from sparkrank.kernels.losses import HingeKernel, SquaredHingeHessianKernel, SquaredHingeKernel
from sparkrank.kernels.pair_count import PairCountKernel, pairs_per_group


def brute_force(labels, offsets, scores, values, margin, inclusive, adjacent):
    """The definition over explicit pairs, filtered by the rule: a pair (j above k) is kept when
    y_j > y_k and, for the adjacent rule, y_j is the smallest label of the group above y_k."""
    m = len(labels)
    n_above, n_below = np.zeros(m, np.int64), np.zeros(m, np.int64)
    s_above, s_below = np.zeros(m), np.zeros(m)
    for a, b in zip(offsets[:-1], offsets[1:]):
        levels = np.unique(labels[a:b])
        for k in range(a, b):
            for j in range(a, b):
                if labels[j] <= labels[k]:
                    continue
                if adjacent and labels[j] != levels[np.searchsorted(levels, labels[k]) + 1]:
                    continue
                if scores[j] < scores[k] + margin or (inclusive and scores[j] == scores[k] + margin):
                    n_above[k] += 1
                    s_above[k] += values[j]
                    n_below[j] += 1
                    s_below[j] += values[k]
    return n_above, n_below, s_above, s_below


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=ranking_problem(), margin=st.sampled_from([0.0, 1.0]), inclusive=st.booleans(),
       rule=st.sampled_from(["all", "adjacent"]))
def test_every_method_and_rule_equals_brute_force(problem, margin, inclusive, rule):
    labels, offsets, scores, values = problem
    groups = QueryGroups.from_offsets(labels, offsets)
    expected = brute_force(labels, offsets, scores, values, margin, inclusive, rule == "adjacent")
    for method in COUNTING_METHODS:
        got = count_support_pairs(groups, scores, values, margin=margin, inclusive=inclusive, method=method,
                                  pair_rule=rule)
        np.testing.assert_array_equal(got.n_above, expected[0], err_msg=method)
        np.testing.assert_array_equal(got.n_below, expected[1], err_msg=method)
        np.testing.assert_allclose(got.s_above, expected[2], rtol=1e-12, atol=1e-12, err_msg=method)
        np.testing.assert_allclose(got.s_below, expected[3], rtol=1e-12, atol=1e-12, err_msg=method)
    # N of the rule: what the support count is when every pair is a support pair
    everything = count_support_pairs(groups, np.zeros_like(scores), margin=1.0, pair_rule=rule)
    assert pairs_per_group(groups, rule).sum() == everything.n_above.sum()
    result = PairCountKernel(rule)(groups, scores, None)
    assert PairCountKernel(rule).named(result.stats)["pairs"] == everything.n_above.sum()


def _problem(seed, m=400, n_levels=None, group_rows=40):
    rng = np.random.default_rng(seed)
    labels = rng.normal(size=m).round(1) if n_levels is None else rng.integers(0, n_levels, m).astype(float)
    offsets = np.arange(0, m + 1, group_rows)
    return QueryGroups.from_offsets(labels, offsets), rng.integers(-3, 4, m) * 0.5, rng.normal(size=m)


@pytest.mark.parametrize("n_levels", [2, 5, None])
@pytest.mark.parametrize("rule", ["all", "adjacent"])
def test_loss_kernels_match_the_oracle_and_the_trees(n_levels, rule):
    """L1 hinge (counts only): the selection tree's results bit for bit; L2 value, gradient and
    Hessian product: the all-pairs oracle's and the selection tree's to ≤ 1e-12 relative."""
    groups, p, u = _problem(3, n_levels=n_levels)
    hinge = {m: HingeKernel(m, rule)(groups, p, None) for m in ("prsvm+", "selection", "pairs")}
    for m in ("selection", "pairs"):
        np.testing.assert_array_equal(hinge["prsvm+"].coef, hinge[m].coef)
        np.testing.assert_array_equal(hinge["prsvm+"].stats, hinge[m].stats)
    for m in ("selection", "pairs"):
        ref, got = SquaredHingeKernel(m, rule)(groups, p, None), SquaredHingeKernel("prsvm+", rule)(groups, p, None)
        np.testing.assert_allclose(got.coef, ref.coef, rtol=1e-12, atol=1e-12 * np.abs(ref.coef).max())
        np.testing.assert_allclose(got.stats, ref.stats, rtol=1e-12)
        h_ref = SquaredHingeHessianKernel(m, rule)(groups, u, ref.state)
        h_got = SquaredHingeHessianKernel("prsvm+", rule)(groups, u, got.state)
        np.testing.assert_allclose(h_got.coef, h_ref.coef, rtol=1e-12, atol=1e-12 * np.abs(h_ref.coef).max())


@pytest.mark.parametrize("rule", ["all", "adjacent"])
def test_two_thread_path_matches_the_oracle(rule):
    """60,000 rows (the sweeps' two-thread path) in 600 groups of many levels and tied scores."""
    rng = np.random.default_rng(11)
    m = 60_000
    groups = QueryGroups.from_offsets(np.round(rng.normal(size=m), 1), np.arange(0, m + 1, 100))
    scores, values = np.round(rng.normal(size=m) * 3, 1), rng.normal(size=m)
    ref = count_support_pairs(groups, scores, values, method="pairs", pair_rule=rule)
    for method in ("prsvm+", "selection"):
        got = count_support_pairs(groups, scores, values, method=method, pair_rule=rule)
        np.testing.assert_array_equal(got.n_above, ref.n_above)
        np.testing.assert_array_equal(got.n_below, ref.n_below)
        np.testing.assert_allclose(got.s_above, ref.s_above, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.s_below, ref.s_below, rtol=1e-12, atol=1e-12)


def test_adjacent_rule_keeps_only_next_level_pairs():
    # one group, labels 0 < 1 < 3 (2 absent): the adjacent pairs are (1, 0) and (3, 1), not (3, 0)
    groups = QueryGroups.single(np.array([0.0, 1.0, 3.0]))
    counts = count_support_pairs(groups, np.zeros(3), pair_rule="adjacent")
    np.testing.assert_array_equal(counts.n_above, [1, 1, 0])
    np.testing.assert_array_equal(counts.n_below, [0, 1, 1])
    assert pairs_per_group(groups, "adjacent").tolist() == [2]
    assert pairs_per_group(groups, "all").tolist() == [3]


def test_unknown_pair_rule_is_a_clear_error():
    groups = QueryGroups.single(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="unknown pair rule 'near'; choose one of all, adjacent"):
        count_support_pairs(groups, np.zeros(2), pair_rule="near")


def test_group_forms_are_the_all_pairs_selection_trees_only():
    assert SquaredHingeKernel("selection").group_form == "squared_hinge"
    assert SquaredHingeKernel("selection", "adjacent").group_form is None
    assert SquaredHingeKernel("prsvm+").group_form is None
    assert SquaredHingeHessianKernel("selection", "adjacent").group_form is None
