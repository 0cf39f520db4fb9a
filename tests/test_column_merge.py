"""The column-sliced merge (``engines/spark/column_merge.py``): a pass's wide column sums added up
slice by slice on the executors must give ``treeAggregate``'s numbers, bit for bit, for every
layout of a pass's output, with sparse and dense sums, missing ones, lost kernel states and
tasks that had no block."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pytest

from sparkrank.engines.spark import column_merge, tasks
from sparkrank.engines.spark.column_merge import merged_result, slice_bounds, slice_count
from sparkrank.engines.spark.kernel_state import MissingStates
from sparkrank.numerics.exact_sum import dd_round
from sparkrank.numerics.sparse_sums import SparseSums


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _sums(rng, n: int, kind: str):
    """Double-double column sums over ``n`` columns as a block's pass gives them: sparse over a few
    columns, or dense with most columns zero and most ``lo`` zero (hashed ids), or ``None``."""
    if kind == "none":
        return None
    cols = np.sort(rng.choice(n, n // 5 if kind == "sparse" else n // 2, replace=False))
    hi = rng.choice([1.0, -3.5, 1e300, 2.0 ** -60, 0.1], cols.shape[0]) * rng.normal(size=cols.shape[0])
    lo = np.where(rng.random(cols.shape[0]) < 0.3, hi * 1e-17, 0.0)
    if kind == "sparse":
        return SparseSums(cols, hi, lo, n)
    dense_hi, dense_lo = np.zeros(n), np.zeros(n)
    dense_hi[cols], dense_lo[cols] = hi, lo
    return dense_hi, dense_lo


def _pass_output(rng, n: int, kinds: tuple[str, str]):
    stats = (rng.normal(size=3), rng.normal(size=3) * 1e-17)
    grad_kind, moment_kind = kinds
    moments = None if moment_kind == "none" else [_sums(rng, n, moment_kind), _sums(rng, n, "dense")]
    return stats, _sums(rng, n, grad_kind), np.array([rng.integers(1, 99), 3]), moments


def _shuffled(task_outputs: list[list], layout, n: int, n_slices: int, rounded: bool, n_chunks: int = 7):
    """The merge as Spark runs it, in process: each task's records (a rest and ``n_chunks`` chunks of
    columns) split, sent to ``key % n_slices`` (in any order, as a shuffle may), merged there, collected."""
    bounds = slice_bounds(n, n_chunks)
    split = column_merge._split_task(layout, bounds)
    records = [r for outputs in task_outputs for r in split(iter(outputs))]
    rng = np.random.default_rng(len(records))
    parts = []
    for p in range(n_slices):
        mine = [records[i] for i in rng.permutation(len(records)) if records[i][0] % n_slices == p]
        parts += list(column_merge._merge_task(layout, n_chunks, rounded)(iter(mine)))
    return merged_result(parts, layout, bounds, rounded)


def _tree(task_outputs: list[list], layout):
    return reduce(layout.combine, [o for outputs in task_outputs for o in outputs], None)


@pytest.mark.parametrize("n_slices", [1, 2, 5])
@pytest.mark.parametrize("kinds", [("sparse", "none"), ("dense", "sparse"), ("sparse", "dense"), ("none", "none")])
def test_a_pass_merged_by_slices_is_the_tree_sum_rounded(kinds, n_slices):
    rng = np.random.default_rng(hash((kinds, n_slices)) % 2**32)
    n = 3001
    task_outputs = [[_pass_output(rng, n, kinds) for _ in range(k)] for k in (2, 1, 0, 3)]
    got = _shuffled(task_outputs, tasks.PASS_SUMS, n, n_slices, rounded=True, n_chunks=2 * n_slices + 1)
    want = _tree(task_outputs, tasks.PASS_SUMS)
    assert np.array_equal(_bits(dd_round(got[0])), _bits(dd_round(want[0])))  # the rests' combined stats
    assert np.array_equal(got[2], want[2])
    if kinds[0] == "none":
        assert got[1] is None and want[1] is None
    else:
        assert np.array_equal(_bits(got[1]), _bits(tasks.rounded_sums(want[1])))
    if want[3] is None:
        assert got[3] is None
    else:
        assert len(got[3]) == 2
        for g, w in zip(got[3], want[3]):
            assert np.array_equal(_bits(tasks.rounded_sums(g)), _bits(tasks.rounded_sums(w)))


@pytest.mark.parametrize("layout", ["moments", "columns"])
def test_unrounded_merges_are_the_tree_sums_double_doubles(layout):
    rng = np.random.default_rng(7)
    n = 70_001
    if layout == "moments":
        make = lambda: ((rng.normal(size=2), np.zeros(2)), _sums(rng, n, "sparse"), _sums(rng, n, "dense"),  # noqa: E731
                        np.array([5, 1]))
        sums_of, layout = (lambda o: [o[1], o[2]]), tasks.MOMENT_SUMS
    else:
        make, sums_of, layout = (lambda: _sums(rng, n, "sparse")), (lambda o: [o]), tasks.COLUMN_SUMS
    task_outputs = [[make() for _ in range(k)] for k in (3, 2)]
    got, want = _shuffled(task_outputs, layout, n, 3, rounded=False), _tree(task_outputs, layout)
    for g, w in zip(sums_of(got), sums_of(want)):
        assert isinstance(g, tuple)  # dense double-doubles
        assert np.array_equal(_bits(tasks.rounded_sums(g)), _bits(tasks.rounded_sums(w)))
        dense = tasks.dense_sums(w)
        assert np.array_equal(g[0] != 0, dense[0] != 0)


def test_lost_states_in_one_task_make_the_merge_a_missing_states():
    rng = np.random.default_rng(3)
    n = 500
    task_outputs = [[_pass_output(rng, n, ("sparse", "none"))], [MissingStates(frozenset([4]))],
                    [MissingStates(frozenset([1])), _pass_output(rng, n, ("dense", "none"))]]
    got = _shuffled(task_outputs, tasks.PASS_SUMS, n, 2, rounded=True)
    assert got == MissingStates(frozenset([1, 4]))


def test_no_output_merges_to_none():
    assert _shuffled([[], []], tasks.PASS_SUMS, 100, 2, rounded=True) is None


def test_slices_cover_the_columns_and_stay_wide():
    assert slice_count(1 << 24, 2) == 2
    assert slice_count(300_000, 64) == 3  # at most one a chunk of 131,072 columns
    assert slice_count(10, 8) == 1
    # more slices, a multiple of the cores, where a slice's sums would crowd a Python worker
    assert slice_count(1 << 24, 2, 512 << 20) == 12 and slice_count(1 << 24, 2, 8 << 30) == 2
    assert slice_count(1 << 24, 3, 512 << 20) == 12
    for n, k in ((5, 1), (3001, 5), (1 << 24, 7)):
        b = slice_bounds(n, k)
        assert b[0] == 0 and b[-1] == n and np.all(np.diff(b) >= 1) and b.shape[0] == k + 1


def test_dense_pieces_travel_packed_and_come_back_with_their_bits():
    import pickle

    rng = np.random.default_rng(11)
    hi, lo = _sums(rng, 200_000, "dense")
    piece = column_merge._piece((hi, lo), 1000, 150_000)
    wired = column_merge._wire(piece)
    size = len(pickle.dumps(wired, protocol=pickle.HIGHEST_PROTOCOL))
    assert size < 0.8 * 16 * 149_000  # zeros of hi and lo left out
    back = column_merge.unwired(pickle.loads(pickle.dumps(wired)))
    assert all(np.array_equal(_bits(a), _bits(b)) for a, b in zip(back, piece))
    sparse = SparseSums(np.array([3, 999, 1000, 1500, 149_999, 150_000]), np.arange(6.0) + 1, np.zeros(6), 200_000)
    part = column_merge._piece(sparse, 1000, 150_000)
    assert part.n_features == 149_000 and part.columns.tolist() == [0, 500, 148_999]
    assert part.hi.tolist() == [3.0, 4.0, 5.0]


def test_a_spark_pass_over_wide_sums_takes_the_merge_and_gives_the_tree_sum(spark):
    from sparkrank.engines.spark.building import merge_slices

    rng = np.random.default_rng(5)
    n = 1 << 17
    outputs = [_pass_output(rng, n, ("sparse", "dense")) for _ in range(6)]
    rdd = spark.sparkContext.parallelize(outputs, 3)
    got = column_merge.column_merged(rdd, tasks.PASS_SUMS, n, 2, rounded=True)
    want = rdd.treeAggregate(None, tasks.add_pair, tasks.add_pair, depth=1)
    assert np.array_equal(_bits(got[1]), _bits(tasks.rounded_sums(want[1])))
    for g, w in zip(got[3], want[3]):
        assert np.array_equal(_bits(g), _bits(tasks.rounded_sums(w)))
    # wide sums whose tasks' partials would bring the driver more than twice the merge's rounded sums
    # take the merge; narrow ones, an asked depth, or sparse partials of a few blocks: treeAggregate
    dense = 48 << 20
    assert merge_slices(3, 1 << 20, 2, None, tree_bytes=3 * dense) == 2
    assert merge_slices(3, 1 << 20, 2, None, tree_bytes=dense) == 0
    assert merge_slices(3, 136, 2, None, tree_bytes=3 * 48 * 136) == 0
    assert merge_slices(3, 1 << 20, 2, 2, tree_bytes=3 * dense) == 0
