"""Row and group weights against their definition: the data with integer weights repeated.

Every kernel pass (value, gradient ``Xᵀc``, Hessian product, diagonal, TopPush's steps) on
weighted data must equal the pass on the data with row ``i`` repeated ``a_i`` times and group
``q`` repeated ``b_q`` times under new ids; every counting method; random data with ties,
real-valued labels, many groups, tiny and one-level groups, zero weights.  Fits then end in
the same model, and weights of one change no bit of an unweighted fit.
"""

from __future__ import annotations

import numpy as np
import pytest

from sparkrank.data.block import DataError, RankingData
from sparkrank.engines.local import LocalEngine
from sparkrank.kernels.losses import (
    HingeKernel,
    SquaredHingeDiagonalKernel,
    SquaredHingeHessianKernel,
    SquaredHingeKernel,
    SupportPairDiagonalKernel,
)
from sparkrank.kernels.pair_weights import PairWeightKernel
from sparkrank.kernels.ranknet import RankNetKernel
from sparkrank.kernels.toppush import TopPushCountKernel, TopPushPrimalKernel, TopPushStepKernel
from sparkrank.objectives.base import pair_weight

METHODS = ("selection", "direct", "rbtree", "pairs")
#: TopPush's positives: labels above it
THRESHOLD = 0.5


def weighted_problem(seed: int, n_groups: int = 9, n_features: int = 5, negatives_once: bool = False,
                     dense: bool = False, groups_once: bool = False):
    """Random grouped rows (ties in labels and features, real-valued labels, groups of 1 to 14
    rows, some of one label level) with integer row weights 0..3 and group weights 0..2."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 15, n_groups)
    m = int(sizes.sum())
    qid = np.repeat(np.arange(n_groups) * 7 + 3, sizes)
    levels = np.array([-1.5, 0.0, 0.25, 1.0, 2.75])
    y = levels[rng.integers(0, 5, m)]
    y[qid == qid[0]] = 1.0  # a one-level group
    X = rng.integers(-3, 4, (m, n_features)).astype(np.float64) * 0.5  # tied scores
    X[rng.random((m, n_features)) < 0.3] = 0.0
    a = rng.integers(0, 4, m).astype(np.float64)
    if negatives_once:  # TopPush with a top fraction counts each present negative once
        a[y <= THRESHOLD] = np.minimum(a[y <= THRESHOLD], 1.0)
    b_of_group = rng.integers(0, 3, n_groups).astype(np.float64)
    b_of_group[-1] = 2.0
    if groups_once:  # one global ranking with a top fraction: a repeated group adds negatives
        b_of_group = np.minimum(b_of_group, 1.0)
    b = np.repeat(b_of_group, sizes)
    order = rng.permutation(m)  # rows of a group need not be contiguous
    X, y, qid, a, b = X[order], y[order], qid[order], a[order], b[order]
    layout = "dense" if dense else "sparse"
    weighted = RankingData.from_arrays(X, y, qid, row_weights=a, group_weights=b, layout=layout)
    return weighted, duplicated(X, y, qid, a, b, layout)


def duplicated(X, y, qid, a, b, layout="sparse") -> RankingData:
    """Row ``i`` repeated ``a_i`` times, each group repeated ``b_q`` times under new ids."""
    rows, new_qid = [], []
    for q in np.unique(qid):
        members = np.flatnonzero(qid == q)
        for copy in range(int(b[members[0]])):
            for i in members:
                rows += [i] * int(a[i])
                new_qid += [f"{q}-{copy}"] * int(a[i])
    rows = np.array(rows, dtype=np.int64)
    return RankingData.from_arrays(X[rows], y[rows], np.array(new_qid), layout=layout)


def assert_close(got, want, what, rtol=1e-11):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    assert np.allclose(got, want, rtol=0, atol=rtol * scale), f"{what}: {got} != {want}"


def both_passes(weighted, dup, kernel, w, state_kernel=None):
    """``(weighted pass, duplicated pass)`` of ``kernel`` at ``w`` (with the state of a
    ``state_kernel`` pass at ``w`` for a Hessian kernel, then ``kernel`` at ``v = w[::-1]``)."""
    out = []
    for data in (weighted, dup):
        engine = LocalEngine(data, threads=1)
        if state_kernel is None:
            out.append(engine.run(w, kernel))
        else:
            state = engine.run(w, state_kernel, keep_state=True).state
            out.append(engine.run(w[::-1].copy(), kernel, state=state))
    return out


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairwise_kernels_equal_the_repeated_data(method, seed):
    weighted, dup = weighted_problem(seed)
    w = np.random.default_rng(seed + 10).normal(size=weighted.n_features) * 0.7
    for kernel in (HingeKernel(method), SquaredHingeKernel(method), SquaredHingeDiagonalKernel(method),
                   SupportPairDiagonalKernel(method)):
        got, want = both_passes(weighted, dup, kernel, w)
        assert_close(got.stats, want.stats, f"{type(kernel).__name__} statistics")
        assert_close(got.gradient, want.gradient, f"{type(kernel).__name__} Xᵀc")
    got, want = both_passes(weighted, dup, SquaredHingeHessianKernel(method), w, SquaredHingeKernel(method))
    assert_close(got.gradient, want.gradient, "Hessian product")


@pytest.mark.parametrize("seed", [0, 3])
def test_ranknet_kernels_equal_the_repeated_data(seed):
    weighted, dup = weighted_problem(seed)
    w = np.random.default_rng(seed).normal(size=weighted.n_features)
    for kernel in (RankNetKernel("direct"), RankNetKernel("fast", direct_small_groups=False),
                   RankNetKernel("fast", direct_small_groups=True), RankNetKernel(None, value=True)):
        got, want = both_passes(weighted, dup, kernel, w)
        assert_close(got.stats, want.stats, f"{kernel} loss")
        if kernel.gradient == "fast" and kernel.direct_small_groups:
            # the repeated groups are larger, so some switch to the series: equal to ε
            assert_close(got.gradient, want.gradient, f"{kernel} Xᵀc", rtol=1e-4)
        elif kernel.gradient is not None:
            assert_close(got.gradient, want.gradient, f"{kernel} Xᵀc")


@pytest.mark.parametrize("seed", [0, 1])
def test_pair_weight_is_the_repeated_pair_count(seed):
    weighted, dup = weighted_problem(seed)
    assert pair_weight(LocalEngine(weighted)) == dup.groups.n_pairs
    kernel = PairWeightKernel()
    assert kernel.named(LocalEngine(dup).run(np.zeros(5), kernel).stats)["pair_weight"] == dup.groups.n_pairs


@pytest.mark.parametrize("scope", ["group", "global"])
@pytest.mark.parametrize("top_fraction", [0.0, 0.4])
def test_toppush_kernels_equal_the_repeated_data(scope, top_fraction):
    weighted, dup = weighted_problem(5, negatives_once=top_fraction > 0,
                                     groups_once=top_fraction > 0 and scope == "global")
    w = np.random.default_rng(2).normal(size=weighted.n_features)
    counts = TopPushCountKernel(THRESHOLD, scope, top_fraction)
    got, want = both_passes(weighted, dup, counts, w)
    g, d = counts.named(got.stats), counts.named(want.stats)
    assert g["positive_weight"] == d["n_positives"] == d["positive_weight"]
    if scope == "group":
        assert g["n_units"] - g["n_units_skipped"] <= d["n_units"] - d["n_units_skipped"]
    got, want = both_passes(weighted, dup, TopPushPrimalKernel(THRESHOLD, scope, top_fraction), w)
    assert_close(got.stats, want.stats, "TopPush primal statistics")
    assert_close(got.gradient, want.gradient, "TopPush primal Xᵀc")


def _fit(data, solver, **kw):
    from sparkrank.training import train

    return train(data, solver=solver, **kw).weights


@pytest.mark.parametrize("solver,options", [
    ("tron", {"C": 0.3, "tol": 1e-8}),
    ("bmrm", {"lam": 0.01, "tol": 1e-7, "max_iter": 3000}),
    ("ncg", {"C": 0.5, "tol": 1e-7, "solver_options": {"gradient": "direct"}}),
    ("toppush", {"C": 0.5, "tol": 1e-10, "max_iter": 20000, "solver_options": {"top_fraction": 0.0}}),
])
def test_fits_equal_the_repeated_data(solver, options):
    weighted, dup = weighted_problem(7, n_groups=12, negatives_once=True)
    got, want = _fit(weighted, solver, **options), _fit(dup, solver, **options)
    tol = 1e-6 if solver in ("tron", "ncg") else 1e-3
    assert np.allclose(got, want, rtol=0, atol=tol * max(1.0, np.abs(want).max())), (got, want)


@pytest.mark.parametrize("solver", ["tron", "bmrm", "ncg", "toppush"])
def test_weights_of_one_change_no_bit(solver):
    rng = np.random.default_rng(3)
    X, y, q = rng.normal(size=(80, 4)).round(1), rng.integers(0, 3, 80).astype(float), rng.integers(0, 6, 80)
    plain = RankingData.from_arrays(X, y, q)
    ones = RankingData.from_arrays(X, y, q, row_weights=np.ones(80), group_weights=np.ones(80))
    assert ones.groups.weighted
    kw = {"max_iter": 30}
    assert _fit(plain, solver, **kw).tobytes() == _fit(ones, solver, **kw).tobytes()


def test_dense_weighted_rows_equal_the_repeated_data():
    """Dense rows run TRON's passes group by group (``engines/group_passes.py``), weighted too."""
    weighted, dup = weighted_problem(4, dense=True)
    w = np.random.default_rng(4).normal(size=weighted.n_features)
    got, want = both_passes(weighted, dup, SquaredHingeKernel(), w)
    assert_close(got.gradient, want.gradient, "dense rows Xᵀc")
    got, want = both_passes(weighted, dup, SquaredHingeHessianKernel(), w, SquaredHingeKernel())
    assert_close(got.gradient, want.gradient, "dense rows Hessian product")


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_weights_are_one_clear_error(bad):
    X, y = np.ones((4, 2)), np.array([0.0, 1.0, 2.0, 0.0])
    a = np.array([1.0, 2.0, bad, 1.0])
    with pytest.raises(DataError, match=r"row weight of row 2 is .*: weights must be finite and non-negative"):
        RankingData.from_arrays(X, y, [1, 1, 2, 2], row_weights=a)
    with pytest.raises(DataError, match=r"group weight of row 2 is"):
        RankingData.from_arrays(X, y, [1, 1, 2, 2], group_weights=a)


def test_group_weight_must_be_constant_in_its_group():
    with pytest.raises(DataError, match=r"^group weight differs within query 5: 1.0 and 2.0; a group weight must "
                                        r"be the same on all rows of its query$"):
        RankingData.from_arrays(np.ones((4, 1)), [0, 1, 2, 0], [5, 6, 6, 5], group_weights=[1, 3, 3, 2])


def test_a_differing_group_weight_is_told_alike_in_any_row_order():
    """The smallest query id whose rows differ, its two smallest weights and how many queries
    differ: what every engine can tell, however its rows were shuffled into blocks."""
    from sparkrank.data.weights import GroupWeightError

    qid = np.array([9, 9, 9, 4, 4, 7, 7, 7])
    b = np.array([3.0, 1.0, 2.0, 5.0, 5.0, 0.5, 0.5, 0.25])
    messages = set()
    for seed in range(6):
        order = np.random.default_rng(seed).permutation(qid.size)
        with pytest.raises(GroupWeightError) as err:
            RankingData.from_arrays(np.ones((8, 1)), np.zeros(8), qid[order], group_weights=b[order])
        messages.add(str(err.value.named("w", "in.parquet")))
    assert messages == {"in.parquet: w differs within query 7: 0.25 and 0.5 (and 1 more query); a group weight "
                        "must be the same on all rows of its query"}
    # the blocks of one input, each holding whole queries: merged into the same message
    blocks = [GroupWeightError(9, [1.0, 2.0], 1), GroupWeightError(7, [0.25, 0.5], 1)]
    merged = GroupWeightError.merged([e.payload() for e in blocks], "w", "in.parquet")
    assert str(merged) == messages.pop()
    with pytest.raises(GroupWeightError, match="^group weight differs within the global ranking: 1.0 and 2.0;"):
        RankingData.from_arrays(np.ones((3, 1)), [0, 1, 2], group_weights=[1, 2, 1])


def test_all_zero_weights_leave_no_pairs():
    data = RankingData.from_arrays(np.eye(3), [0.0, 1.0, 2.0], row_weights=[0.0, 1.0, 0.0])
    from sparkrank.objectives.base import require_pairs

    with pytest.raises(DataError, match="no preference pairs of positive weight"):
        require_pairs(LocalEngine(data))


@pytest.mark.parametrize("method", METHODS)
def test_weighted_pairwise_metrics_equal_the_repeated_data(method):
    from sparkrank.evaluation.kernel import evaluate_ranking

    weighted, dup = weighted_problem(8, n_groups=14)
    w = np.random.default_rng(8).normal(size=weighted.n_features)
    got = evaluate_ranking(weighted.groups, weighted.X @ w, method=method)
    want = evaluate_ranking(dup.groups, dup.X @ w, method=method)
    for name in ("pairwise_accuracy", "auc"):
        assert got[name] == pytest.approx(want[name], rel=1e-12), name


def test_group_weighted_mean_ndcg_equals_the_repeated_groups():
    from sparkrank.evaluation.kernel import evaluate_ranking

    rng = np.random.default_rng(9)
    X, y, q = rng.normal(size=(90, 3)).round(1), rng.integers(0, 4, 90).astype(float), np.sort(rng.integers(0, 12, 90))
    b = rng.integers(0, 4, 12).astype(float)[q]
    w = rng.normal(size=3)
    weighted = RankingData.from_arrays(X, y, q, group_weights=b)
    dup = duplicated(X, y, q, np.ones(90), b)
    got = evaluate_ranking(weighted.groups, weighted.X @ w)
    want = evaluate_ranking(dup.groups, dup.X @ w)
    for name in ("mean_ndcg", "ndcg@1", "ndcg@5", "precision@3", "positives_at_top", "pairwise_accuracy"):
        assert got[name] == pytest.approx(want[name], rel=1e-12), name
