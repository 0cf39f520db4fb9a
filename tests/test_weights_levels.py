"""Row and group weights with PRSVM+ counting and the adjacent pair rule (lee-lin2014 §3.1, §5).

Against the two oracles of weights: the data with integer weights repeated (rows ``a_i`` times,
groups ``b_q`` times under new ids; a row of weight 0 is absent there, so adjacency is among the
levels of the rows of positive weight), and brute force over the explicit weighted pairs.  Random
data with ties, real-valued labels, tiny and one-level groups, zero weights; the Spark engine
gives the local engine's models bit for bit, as unweighted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_counting import ranking_problem
from test_weights import assert_close, both_passes, weighted_problem
from sparkrank.choices import COUNTING_METHODS
from sparkrank.data.block import DataError, RankingData
from sparkrank.data.groups import QueryGroups
from sparkrank.engines.local import LocalEngine
from sparkrank.kernels.counting import count_support_pairs
from sparkrank.kernels.losses import (
    HingeKernel,
    SquaredHingeDiagonalKernel,
    SquaredHingeHessianKernel,
    SquaredHingeKernel,
    SupportPairDiagonalKernel,
)
from sparkrank.kernels.pair_count import PairCountKernel
from sparkrank.objectives.pair_rules import training_pairs
from sparkrank.training import train

CASES = [("prsvm+", "all"), *((method, "adjacent") for method in COUNTING_METHODS)]


def weighted_brute_force(labels, offsets, scores, values, weights, margin, inclusive, adjacent):
    """Every pair enumerated, partner ``j`` counted by ``a_j`` (its value by ``a_j·v_j``); adjacent:
    ``y_j`` is the next label above ``y_k`` among the group's rows of positive weight."""
    m = len(labels)
    out = [np.zeros(m) for _ in range(4)]
    for a, b in zip(offsets[:-1], offsets[1:]):
        present = np.unique(labels[a:b][weights[a:b] > 0])
        for k in range(a, b):
            for j in range(a, b):
                if labels[j] <= labels[k]:
                    continue
                if adjacent:
                    above = present[present > labels[k]]
                    if not above.size or labels[j] != above[0]:
                        continue
                if scores[j] < scores[k] + margin or (inclusive and scores[j] == scores[k] + margin):
                    out[0][k] += weights[j]
                    out[2][k] += weights[j] * values[j]
                    out[1][j] += weights[k]
                    out[3][j] += weights[k] * values[k]
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=ranking_problem(), margin=st.sampled_from([0.0, 1.0]), inclusive=st.booleans(),
       rule=st.sampled_from(["all", "adjacent"]), integer=st.booleans(), seed=st.integers(0, 2**16))
def test_weighted_level_counts_equal_brute_force(problem, margin, inclusive, rule, integer, seed):
    labels, offsets, scores, values = problem
    rng = np.random.default_rng(seed)
    weights = rng.integers(0, 4, len(labels)).astype(float) if integer else rng.random(len(labels)) * 3
    weights[rng.random(len(labels)) < 0.2] = 0.0
    groups = QueryGroups.from_offsets(labels, offsets)
    want = weighted_brute_force(labels, offsets, scores, values, weights, margin, inclusive, rule == "adjacent")
    methods = COUNTING_METHODS if rule == "adjacent" else ("prsvm+", "pairs")
    for method in methods:
        got = count_support_pairs(groups, scores, values, margin=margin, inclusive=inclusive, method=method,
                                  pair_rule=rule, weights=weights)
        # rows of weight 0 add nothing to others; their own counts are never read unweighted (their
        # terms are multiplied by 0), and under the adjacent rule may pair across an absent level
        live = weights > 0 if rule == "adjacent" else np.ones(len(labels), dtype=bool)
        for name, g, w in zip(("n_above", "n_below", "s_above", "s_below"),
                              (got.n_above, got.n_below, got.s_above, got.s_below), want):
            if integer and name.startswith("n"):  # integer weight sums are exact
                np.testing.assert_array_equal(g[live], w[live], err_msg=f"{method} {name}")
            else:
                np.testing.assert_allclose(g[live], w[live], rtol=1e-12, atol=1e-12, err_msg=f"{method} {name}")


@pytest.mark.parametrize("method,rule", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_level_counting_kernels_equal_the_repeated_data(method, rule, seed):
    weighted, dup = weighted_problem(seed)
    w = np.random.default_rng(seed + 10).normal(size=weighted.n_features) * 0.7
    for kernel in (HingeKernel(method, rule), SquaredHingeKernel(method, rule),
                   SquaredHingeDiagonalKernel(method, rule), SupportPairDiagonalKernel(method, rule)):
        got, want = both_passes(weighted, dup, kernel, w)
        assert_close(got.stats, want.stats, f"{kernel} statistics")
        assert_close(got.gradient, want.gradient, f"{kernel} Xᵀc")
    got, want = both_passes(weighted, dup, SquaredHingeHessianKernel(method, rule), w,
                            SquaredHingeKernel(method, rule))
    assert_close(got.gradient, want.gradient, "Hessian product")


@pytest.mark.parametrize("seed", [0, 3])
def test_prsvm_weight_sums_are_the_trees_to_rounding(seed):
    """PRSVM+ and the selection tree add the same weights in different orders: the L1 hinge (weight
    sums only) and the squared hinge agree to rounding; with integer weights the counts are exact."""
    weighted, _ = weighted_problem(seed)
    p = weighted.X @ np.random.default_rng(seed).normal(size=weighted.n_features)
    a = count_support_pairs(weighted.groups, p, p, method="prsvm+", weights=weighted.groups.row_weights)
    b = count_support_pairs(weighted.groups, p, p, method="selection", weights=weighted.groups.row_weights)
    np.testing.assert_array_equal(a.n_above, b.n_above)
    np.testing.assert_array_equal(a.n_below, b.n_below)
    np.testing.assert_allclose(a.s_above, b.s_above, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_adjacent_pair_weight_is_the_repeated_adjacent_count(seed):
    weighted, dup = weighted_problem(seed)
    kernel = PairCountKernel("adjacent")
    got = kernel.named(LocalEngine(weighted).run(np.zeros(weighted.n_features), kernel).stats)["pairs"]
    assert got == kernel.named(LocalEngine(dup).run(np.zeros(dup.n_features), kernel).stats)["pairs"]
    assert training_pairs(LocalEngine(weighted), "adjacent") == training_pairs(LocalEngine(dup), "adjacent")


def test_adjacency_is_among_rows_of_positive_weight():
    # levels 0 < 1 < 2; the rows of level 1 weigh 0 in the first group, the second group weighs 0
    data = RankingData.from_arrays(np.eye(5), [0.0, 1.0, 2.0, 0.0, 1.0], [1, 1, 1, 2, 2],
                                   row_weights=[1.0, 0.0, 1.0, 1.0, 1.0], group_weights=[1, 1, 1, 0, 0])
    # level 0 and 2 are adjacent once the rows of level 1 are gone: one pair of weight 1
    assert training_pairs(LocalEngine(data), "adjacent") == 1.0
    none = RankingData.from_arrays(np.eye(4), [0.0, 1.0, 0.0, 1.0], [1, 1, 2, 2], row_weights=[0.0, 1.0, 1.0, 1.0],
                                   group_weights=[1, 1, 0, 0])
    with pytest.raises(DataError, match="no preference pairs of positive weight"):
        training_pairs(LocalEngine(none), "adjacent")


@pytest.mark.parametrize("solver,counting,rule,options", [
    ("tron", "prsvm+", "all", {"C": 0.3, "tol": 1e-8}),
    ("tron", "selection", "adjacent", {"C": 0.3, "tol": 1e-8}),
    ("tron", "prsvm+", "adjacent", {"C": 0.3, "tol": 1e-8}),
    ("bmrm", "prsvm+", "adjacent", {"lam": 0.01, "tol": 1e-7, "max_iter": 3000}),
])
def test_fits_equal_the_repeated_data(solver, counting, rule, options):
    weighted, dup = weighted_problem(7, n_groups=12)
    fit = {"solver": solver, "counting": counting, "solver_options": {"pairs": rule}, **options}
    got, want = train(weighted, **fit), train(dup, **fit)
    tol = 1e-6 if solver == "tron" else 1e-3
    assert np.allclose(got.weights, want.weights, rtol=0, atol=tol * max(1.0, np.abs(want.weights).max()))
    if rule == "adjacent":
        assert got.summary["training_pairs"] == want.summary["training_pairs"]


@pytest.fixture(scope="module")
def weighted_graded(tmp_path_factory):
    rng = np.random.default_rng(5)
    m, n = 700, 6
    qid = np.sort(rng.integers(0, 30, m))
    y = rng.integers(0, 5, m).astype(np.float64)
    X = rng.normal(size=(m, n)).round(2)
    a = rng.integers(0, 4, m) * 0.5
    b = rng.integers(0, 3, 30)[qid] * 1.5
    path = tmp_path_factory.mktemp("wl") / "train.parquet"
    pq.write_table(pa.table({"label": y, "qid": qid, "features": list(X), "wt": a, "gwt": b}), path,
                   row_group_size=150)
    return str(path), RankingData.from_arrays(X, y, qid, row_weights=a, group_weights=b, layout="dense")


@pytest.mark.parametrize("placement", ["executor", "driver"])
def test_spark_gives_the_local_weighted_model_bit_for_bit(spark, weighted_graded, placement):
    from sparkrank.engines.spark import SparkEngine

    path, data = weighted_graded
    cases = [("tron", "prsvm+", "all", {"tol": 1e-3}), ("tron", "selection", "adjacent", {"tol": 1e-3}),
             ("tron", "prsvm+", "adjacent", {"tol": 1e-3}), ("bmrm", "prsvm+", "adjacent", {"max_iter": 8})]
    with SparkEngine(spark.read.parquet(path), placement=placement, num_partitions=3, weight_col="wt",
                     group_weight_col="gwt") as engine:
        for solver, counting, rule, extra in cases:
            fit = {"solver": solver, "C": 0.05, "counting": counting, "solver_options": {"pairs": rule}, **extra}
            model, local = train(engine, **fit), train(data, **fit)
            assert model.summary.get("training_pairs") == local.summary.get("training_pairs")
            assert model.summary["iterations"] == local.summary["iterations"], (solver, counting, rule)
            np.testing.assert_array_equal(model.weights, local.weights, err_msg=f"{solver} {counting} {rule}")
