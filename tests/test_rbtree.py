"""Tests for the numba order-statistic red-black tree (sparkrank.kernels.rbtree).

The pure-Python references live here: a brute-force list of (key, value) pairs for the
above/below queries, and a walker that checks every red-black / order-statistic invariant
directly on the state arrays.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from sparkrank.kernels.rbtree import (
    rbtree_above,
    rbtree_below,
    rbtree_insert,
    rbtree_new,
    rbtree_reset,
)

# --- pure-Python references ----------------------------------------------------------------


class BruteForce:
    def __init__(self):
        self.items: list[tuple[float, float]] = []

    def insert(self, key, value):
        self.items.append((key, value))

    def above(self, key):
        vals = [v for k, v in self.items if k > key]
        return len(vals), math.fsum(vals)

    def below(self, key):
        vals = [v for k, v in self.items if k < key]
        return len(vals), math.fsum(vals)

    def abs_total(self):
        return math.fsum(abs(v) for _, v in self.items)


def sums_close(got, ref, abs_total):
    # relative 1e-9, measured against the sum of |values| when the sum cancels
    return math.isclose(got, ref, rel_tol=1e-9, abs_tol=1e-9 * abs_total + 1e-300)


def check_invariants(state) -> int:
    """Walk the arrays and assert every invariant; return the height (nodes on the longest path)."""
    keys, left, right, parent, red, cnt, size, vsum, ssum, meta = state
    root, n_nodes = int(meta[0]), int(meta[1])
    # the NIL sentinel is never written
    assert left[0] == 0 and right[0] == 0 and red[0] == 0
    assert size[0] == 0 and cnt[0] == 0 and ssum[0] == 0.0 and vsum[0] == 0.0
    if root == 0:
        assert n_nodes == 0
        return 0
    assert red[root] == 0, "root must be black"
    assert parent[root] == 0
    seen = set()
    height = 0
    black_height = None
    # iterative DFS: (node, lower bound, upper bound, blacks above incl. node, depth)
    stack = [(root, -math.inf, math.inf, 0, 1)]
    while stack:
        x, lo, hi, blacks, depth = stack.pop()
        assert x not in seen, "cycle"
        seen.add(x)
        assert 1 <= x <= n_nodes
        k = keys[x]
        assert lo < k < hi, "BST order violated (keys must also be distinct)"
        assert cnt[x] >= 1
        blacks += 1 - int(red[x])
        height = max(height, depth)
        l, r = int(left[x]), int(right[x])
        if red[x]:
            assert not red[l] and not red[r], "red node with a red child"
        assert size[x] == size[l] + size[r] + cnt[x], "size aggregate"
        expect = ssum[l] + ssum[r] + vsum[x]
        scale = abs(ssum[l]) + abs(ssum[r]) + abs(vsum[x])
        assert abs(ssum[x] - expect) <= 1e-12 * scale + 1e-300, "sub_sum aggregate"
        for child, clo, chi in ((l, lo, k), (r, k, hi)):
            if child == 0:
                # reached a NIL leaf: every root-to-NIL path has the same number of blacks
                if black_height is None:
                    black_height = blacks
                assert blacks == black_height, "unequal black heights"
            else:
                assert parent[child] == x, "parent pointer"
                stack.append((child, clo, chi, blacks, depth + 1))
    assert len(seen) == n_nodes, "unreachable nodes"
    assert height <= 2 * math.log2(n_nodes + 1) + 1e-12
    return height


def distinct_keys(state):
    return int(state[9][1])


# --- hypothesis: random inserts and queries against brute force --------------------------

_SMALL_SET = [-3.5, -1.0, 0.0, 0.25, 1.0, 2.0, 7.0]
_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
_values = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@st.composite
def scenarios(draw):
    kind = draw(st.sampled_from(["small_set", "small_ints", "pool", "continuous"]))
    if kind == "small_set":
        key = st.sampled_from(_SMALL_SET)
    elif kind == "small_ints":
        key = st.integers(-4, 4).map(float)
    elif kind == "pool":
        pool = draw(st.lists(_finite, min_size=1, max_size=12))
        key = st.sampled_from(pool)
    else:
        key = _finite
    insert_op = st.tuples(st.just("insert"), key, _values)
    query_key = st.one_of(key, _finite, st.sampled_from([-math.inf, math.inf, -0.0]))
    query_op = st.tuples(st.sampled_from(["above", "below"]), query_key, st.just(0.0))
    ops = draw(st.lists(st.one_of(insert_op, query_op), min_size=1, max_size=200))
    return ops


def _run_ops(state, ops, ref):
    for op, key, value in ops:
        if op == "insert":
            rbtree_insert(state, 0, key, value)
            ref.insert(key, value)
        else:
            fn, ref_fn = (rbtree_above, ref.above) if op == "above" else (rbtree_below, ref.below)
            n, s = fn(state, 0, key)
            n_ref, s_ref = ref_fn(key)
            assert isinstance(n, int) and isinstance(s, float)
            assert n == n_ref, (op, key)
            assert sums_close(s, s_ref, ref.abs_total()), (op, key, s, s_ref)
    # every key, inserted or not, at the end
    probes = {k for _, k, _ in ops} | {-math.inf, math.inf}
    for key in probes:
        for fn, ref_fn in ((rbtree_above, ref.above), (rbtree_below, ref.below)):
            n, s = fn(state, 0, key)
            n_ref, s_ref = ref_fn(key)
            assert n == n_ref
            assert sums_close(s, s_ref, ref.abs_total())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=scenarios())
def test_random_ops_match_brute_force(ops):
    n_inserts = sum(op == "insert" for op, _, _ in ops)
    state = rbtree_new(max(n_inserts, 1), 1)
    ref = BruteForce()
    _run_ops(state, ops, ref)
    check_invariants(state)
    assert distinct_keys(state) == len({k for k, _ in ref.items})
    assert int(state[6][state[9][0]]) == len(ref.items)  # root size = number of inserts


@settings(max_examples=60, deadline=None)
@given(first=scenarios(), second=scenarios())
def test_reset_then_reuse(first, second):
    cap = max(1, sum(op == "insert" for op, _, _ in first), sum(op == "insert" for op, _, _ in second))
    state = rbtree_new(cap, 1)
    _run_ops(state, first, BruteForce())
    rbtree_reset(state, 5)
    check_invariants(state)
    assert rbtree_above(state, 0, -math.inf) == (0, 0.0)
    assert rbtree_below(state, 0, math.inf) == (0, 0.0)
    ref = BruteForce()
    _run_ops(state, second, ref)
    check_invariants(state)


# --- balance and invariants under adversarial insertion orders ----------------------------


@njit(cache=True)
def _insert_all(state, keys, values):
    for i in range(keys.shape[0]):
        rbtree_insert(state, 0, keys[i], values[i])


@pytest.mark.parametrize("order", ["sorted", "reverse", "random", "random_ties", "sorted_ties"])
def test_invariants_and_height(order):
    rng = np.random.default_rng(7)
    n = 20_000
    if order == "sorted":
        keys = np.arange(n, dtype=np.float64)
    elif order == "reverse":
        keys = np.arange(n, dtype=np.float64)[::-1].copy()
    elif order == "random":
        keys = rng.standard_normal(n)
    elif order == "random_ties":
        keys = rng.integers(-300, 300, size=n).astype(np.float64)
    else:  # sorted with every key three times in a row
        keys = np.repeat(np.arange(n // 3, dtype=np.float64), 3)
    values = rng.standard_normal(keys.shape[0])
    state = rbtree_new(keys.shape[0], 1)
    _insert_all(state, keys, values)
    r = len(np.unique(keys))
    assert distinct_keys(state) == r
    height = check_invariants(state)
    assert height <= 2 * math.log2(r + 1)
    # spot-check queries against numpy
    for q in np.concatenate([rng.choice(keys, 50), rng.uniform(keys.min() - 1, keys.max() + 1, 50)]):
        n_a, s_a = rbtree_above(state, 0, q)
        n_b, s_b = rbtree_below(state, 0, q)
        assert n_a == int(np.count_nonzero(keys > q))
        assert n_b == int(np.count_nonzero(keys < q))
        tot = float(np.abs(values).sum())
        assert sums_close(s_a, math.fsum(values[keys > q]), tot)
        assert sums_close(s_b, math.fsum(values[keys < q]), tot)


def test_duplicates_share_a_node():
    state = rbtree_new(3, 1)
    for key, value in [(2.0, 1.0), (2.0, 2.0), (-1.0, 4.0), (2.0, 8.0), (5.0, 16.0), (-1.0, 32.0)]:
        rbtree_insert(state, 0, key, value)
    assert distinct_keys(state) == 3
    check_invariants(state)
    assert rbtree_above(state, 0, 2.0) == (1, 16.0)
    assert rbtree_below(state, 0, 2.0) == (2, 36.0)
    assert rbtree_above(state, 0, -1.0) == (4, 27.0)
    assert rbtree_below(state, 0, 5.0) == (5, 47.0)
    assert rbtree_below(state, 0, 0.0) == (2, 36.0)
    n, s = rbtree_above(state, 0, 0.0)
    assert isinstance(n, int) and isinstance(s, float)


def test_empty_tree():
    state = rbtree_new(4, 1)
    check_invariants(state)
    assert rbtree_above(state, 0, 0.0) == (0, 0.0)
    assert rbtree_below(state, 0, 0.0) == (0, 0.0)


def test_capacity_overflow_raises():
    state = rbtree_new(2, 1)
    rbtree_insert(state, 0, 1.0, 1.0)
    rbtree_insert(state, 0, 2.0, 1.0)
    rbtree_insert(state, 0, 1.0, 1.0)  # a repeated key needs no new node
    with pytest.raises(ValueError):
        rbtree_insert(state, 0, 3.0, 1.0)


# --- first-class functions: the way the generic sweep calls every tree --------------------


@njit
def _drive(new, reset, insert, above, below, group_keys, group_values, queries):
    # one tree, reset between groups; returns the (count, sum) of every query per group
    n_groups = group_keys.shape[0]
    n_q = queries.shape[0]
    tree = new(group_keys.shape[1], 1)
    n_above = np.zeros((n_groups, n_q), dtype=np.int64)
    n_below = np.zeros((n_groups, n_q), dtype=np.int64)
    s_above = np.zeros((n_groups, n_q), dtype=np.float64)
    s_below = np.zeros((n_groups, n_q), dtype=np.float64)
    for g in range(n_groups):
        reset(tree, 1)
        for i in range(group_keys.shape[1]):
            insert(tree, 0, group_keys[g, i], group_values[g, i])
        for t in range(n_q):
            n_above[g, t], s_above[g, t] = above(tree, 0, queries[t])
            n_below[g, t], s_below[g, t] = below(tree, 0, queries[t])
    return n_above, n_below, s_above, s_below


def test_first_class_functions_in_njit_driver():
    rng = np.random.default_rng(3)
    n_groups, size = 4, 500
    keys = np.round(rng.standard_normal((n_groups, size)) * 4) / 2  # many ties, negatives
    keys[1] = np.sort(keys[1])  # one sorted group
    values = rng.standard_normal((n_groups, size))
    queries = np.concatenate([np.unique(keys), [-np.inf, np.inf, 0.123, 100.0]])
    n_above, n_below, s_above, s_below = _drive(
        rbtree_new, rbtree_reset, rbtree_insert, rbtree_above, rbtree_below, keys, values, queries
    )
    for g in range(n_groups):
        for t, q in enumerate(queries):
            up = keys[g] > q
            lo = keys[g] < q
            assert n_above[g, t] == np.count_nonzero(up)
            assert n_below[g, t] == np.count_nonzero(lo)
            assert np.isclose(s_above[g, t], values[g][up].sum(), rtol=1e-9, atol=1e-9 * size)
            assert np.isclose(s_below[g, t], values[g][lo].sum(), rtol=1e-9, atol=1e-9 * size)
