"""Every counting method equals the brute-force pair enumeration, on adversarial data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkrank.data.groups import QueryGroups
from sparkrank.choices import COUNTING_METHODS
from sparkrank.kernels import trees
from sparkrank.kernels.counting import (count_support_pairs, partner_sum_scratch, partner_sums_from_bounds,
                                        sort_within_groups, sweep_group)
from sparkrank.kernels.tree_kinds import SELECTION

FAST_METHODS = [m for m in COUNTING_METHODS if m != "pairs"]


def brute_force(labels, offsets, scores, values, margin, inclusive):
    """Direct definition, written independently of the library's oracle."""
    m = len(labels)
    n_above = np.zeros(m, np.int64)
    n_below = np.zeros(m, np.int64)
    s_above = np.zeros(m)
    s_below = np.zeros(m)
    for g in range(len(offsets) - 1):
        for k in range(offsets[g], offsets[g + 1]):
            for j in range(offsets[g], offsets[g + 1]):
                if labels[j] > labels[k]:
                    hit = scores[j] <= scores[k] + margin if inclusive else scores[j] < scores[k] + margin
                    if hit:
                        n_above[k] += 1
                        s_above[k] += values[j]
                if labels[j] < labels[k]:
                    hit = scores[k] <= scores[j] + margin if inclusive else scores[k] < scores[j] + margin
                    if hit:
                        n_below[k] += 1
                        s_below[k] += values[j]
    return n_above, n_below, s_above, s_below


@st.composite
def ranking_problem(draw):
    sizes = draw(st.lists(st.integers(1, 25), min_size=1, max_size=12))
    m = sum(sizes)
    kind = draw(st.sampled_from(["grades", "binary", "real", "one-level", "mixed"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if kind == "grades":
        labels = rng.integers(0, 5, m).astype(float)
    elif kind == "binary":
        labels = rng.integers(0, 2, m).astype(float)
    elif kind == "real":
        labels = rng.normal(size=m)  # k ≈ m
    elif kind == "one-level":
        labels = np.full(m, 3.0)
    else:
        labels = np.where(rng.random(m) < 0.5, rng.integers(0, 3, m), rng.normal(size=m) * 10)
    score_kind = draw(st.sampled_from(["continuous", "ties", "half-steps", "constant"]))
    if score_kind == "continuous":
        scores = rng.normal(size=m) * 2
    elif score_kind == "ties":
        scores = rng.integers(-2, 3, m).astype(float)  # differences of exactly 0 and 1: margin boundaries
    elif score_kind == "half-steps":
        scores = rng.integers(-6, 7, m) * 0.5
    else:
        scores = np.zeros(m)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    values = rng.normal(size=m)
    return labels, offsets, scores, values


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=ranking_problem(), margin=st.sampled_from([0.0, 1.0, 0.5]), inclusive=st.booleans())
def test_all_methods_equal_brute_force(problem, margin, inclusive):
    labels, offsets, scores, values = problem
    groups = QueryGroups.from_offsets(labels, offsets)
    expected = brute_force(labels, offsets, scores, values, margin, inclusive)
    for method in COUNTING_METHODS:
        got = count_support_pairs(groups, scores, values, margin=margin, inclusive=inclusive, method=method)
        np.testing.assert_array_equal(got.n_above, expected[0], err_msg=method)
        np.testing.assert_array_equal(got.n_below, expected[1], err_msg=method)
        np.testing.assert_allclose(got.s_above, expected[2], rtol=1e-12, atol=1e-12, err_msg=method)
        np.testing.assert_allclose(got.s_below, expected[3], rtol=1e-12, atol=1e-12, err_msg=method)


@pytest.mark.parametrize("method", FAST_METHODS)
def test_large_single_ranking_matches_oracle(method):
    # big enough (>= 50k rows) to take the two-thread path of the sweeps
    rng = np.random.default_rng(7)
    m = 60_000
    labels = np.round(rng.normal(size=m), 2)  # many levels and many ties
    scores = np.round(rng.normal(size=m) * 3, 1)
    values = rng.normal(size=m)
    groups = QueryGroups.single(labels)
    got = count_support_pairs(groups, scores, values, method=method)
    # oracle in O(m log m) by a different route: sort-based counting with searchsorted per level
    ref = count_support_pairs(groups, scores, values, method="selection" if method != "selection" else "direct")
    np.testing.assert_array_equal(got.n_above, ref.n_above)
    np.testing.assert_array_equal(got.n_below, ref.n_below)
    np.testing.assert_allclose(got.s_above, ref.s_above, rtol=1e-9, atol=1e-7)
    # totals: every support pair is counted once from each side
    assert got.n_above.sum() == got.n_below.sum()


def test_many_tiny_groups():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 4, 3000)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    m = offsets[-1]
    labels = rng.integers(0, 3, m).astype(float)
    scores = rng.integers(-1, 2, m).astype(float)
    values = rng.normal(size=m)
    groups = QueryGroups.from_offsets(labels, offsets)
    ref = count_support_pairs(groups, scores, values, method="pairs")
    for method in FAST_METHODS:
        got = count_support_pairs(groups, scores, values, method=method)
        np.testing.assert_array_equal(got.n_above, ref.n_above)
        np.testing.assert_array_equal(got.n_below, ref.n_below)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 300), min_size=1, max_size=8), seed=st.integers(0, 2**31 - 1),
       ties=st.booleans(), nan=st.booleans())
def test_sort_within_groups_is_the_stable_sort(sizes, seed, ties, nan):
    """Each group's rows by ascending score, tied rows in row order: numpy's stable argsort of
    the group, whatever the group's size (runs ranked directly, then merged), with NaN as +inf."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    scores = rng.integers(-3, 3, size=offsets[-1]).astype(np.float64) if ties else rng.normal(size=offsets[-1])
    scores[rng.random(offsets[-1]) < 0.1] = -0.0  # equal to +0.0
    if nan:
        scores[rng.random(offsets[-1]) < 0.1] = np.nan
        scores[rng.random(offsets[-1]) < 0.05] = np.inf
    order = sort_within_groups(scores, offsets)
    keys = np.where(np.isnan(scores), np.inf, scores)
    for a, b in zip(offsets[:-1], offsets[1:]):
        np.testing.assert_array_equal(order[a:b], np.argsort(keys[a:b], kind="stable") + a)


def test_sort_within_groups_on_a_long_group():
    rng = np.random.default_rng(0)
    offsets = np.array([0, 3, 3, 8000, 8005])  # an empty group and one of many runs
    scores = np.round(rng.normal(size=8005), 2)
    order = sort_within_groups(scores, offsets)
    assert order.dtype == np.int32
    for a, b in zip(offsets[:-1], offsets[1:]):
        np.testing.assert_array_equal(order[a:b], np.argsort(scores[a:b], kind="stable") + a)


def test_query_groups_pairs_and_ranks():
    labels = np.array([0, 2, 2, 1, 5.5, 5.5, 1, 0.0])
    groups = QueryGroups.from_offsets(labels, np.array([0, 4, 4, 8]))
    assert list(groups.n_levels) == [3, 0, 3]
    assert list(groups.label_rank) == [0, 2, 2, 1, 2, 2, 1, 0]
    assert list(groups.pairs_per_group) == [5, 0, 5]
    assert groups.n_pairs == 10 and groups.n_groups_without_pairs == 1


def test_unknown_method_is_a_clear_error():
    groups = QueryGroups.single(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="unknown counting method 'avl'"):
        count_support_pairs(groups, np.zeros(2), method="avl")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 70), n_levels=st.integers(2, 16), seed=st.integers(0, 2**31 - 1), spread=st.sampled_from([0.0, 0.3, 3.0]))
def test_partner_sums_from_bounds_are_the_sweeps_bits(n, n_levels, seed, spread):
    """From the bounds both sweeps record, the running node gives each position the sums the
    selection tree gives it, bit for bit: tied scores, repeated values, signed zeros, one to 16
    levels (8 and 16 lanes)."""
    rng = np.random.default_rng(seed)
    scores = np.sort(np.round(rng.normal(size=n) * spread, 1))
    rank = rng.integers(0, n_levels, size=n).astype(np.int64)
    values = rng.choice([0.0, -0.0, 1e-300, 1.0, -2.5, 1e16, 3.3], size=n) * rng.choice([1.0, 0.1], size=n)
    tree = trees.selection_new(n_levels, n, True)
    sums, counts, bounds = {}, np.zeros(n, dtype=np.int64), {}
    for descending in (False, True):
        sums[descending], bounds[descending] = np.zeros(n), np.zeros(n, dtype=np.int64)
        sweep_group(SELECTION, scores, rank, scores[:0], values, 0, n, n_levels, 1.0, False, descending, True, tree,
                    counts, sums[descending], bounds[descending])
    above, below = np.full(n, np.nan), np.full(n, np.nan)
    partner_sums_from_bounds(rank, values, 0, n, n_levels, bounds[False], bounds[True], partner_sum_scratch(n),
                             above, below)
    np.testing.assert_array_equal(above.view(np.int64), sums[False].view(np.int64))
    np.testing.assert_array_equal(below.view(np.int64), sums[True].view(np.int64))
