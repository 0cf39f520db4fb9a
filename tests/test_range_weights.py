"""Row and group weights in range placement (one global ranking counted by score ranges).

The range decomposition with weights against the weighted all-pairs oracle (in one process, every
split of ranges, graded and real-valued labels, tied scores, zero weights), and the Spark engine's
range placement against its driver placement: the same passes to rounding, bit for bit when the
weights' sums are exact (multiples of 1/2), and the same models.
"""

from __future__ import annotations

import numpy as np
import pytest

from test_range_counts import _buckets, _data
from sparkrank.conventions import MARGIN
from sparkrank.data.block import RankingData
from sparkrank.data.groups import QueryGroups
from sparkrank.engines.spark import SparkEngine
from sparkrank.io.files import write_parquet
from sparkrank.kernels.counting import count_support_pairs
from sparkrank.kernels.losses import HingeKernel, SquaredHingeDiagonalKernel, SquaredHingeHessianKernel
from sparkrank.kernels.range_counts import CountPlan, count_by_ranges
from sparkrank.objectives.base import pair_weight
from sparkrank.training import train


@pytest.mark.parametrize("graded", [True, False])
@pytest.mark.parametrize("inclusive,margin", [(False, MARGIN), (True, 0.0)])
@pytest.mark.parametrize("n_ranges", [1, 2, 7, 60])
def test_weighted_range_counts_match_the_oracle(graded, inclusive, margin, n_ranges):
    for seed in range(4):
        labels, scores, values = _data(seed, 57, graded, spread=[0.3, 2.0][seed % 2])
        rng = np.random.default_rng(seed)
        weights = rng.integers(0, 7, labels.size) * 0.5  # sums exact: equal to the oracle's bits
        weights[rng.random(labels.size) < 0.2] = 0.0
        plan = CountPlan(margin, inclusive, "scores", False)
        got = count_by_ranges(scores, labels, values, plan, _buckets(labels, graded), n_ranges, weights=weights)
        want = count_support_pairs(QueryGroups.single(labels), scores, values, margin=margin, inclusive=inclusive,
                                   method="pairs", weights=weights)
        np.testing.assert_array_equal(got.n_above, want.n_above)
        np.testing.assert_array_equal(got.n_below, want.n_below)
        np.testing.assert_allclose(got.s_above, want.s_above, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.s_below, want.s_below, rtol=1e-12, atol=1e-12)


def _weighted_ranking(graded: bool, dyadic: bool, m: int = 400, seed: int = 6) -> RankingData:
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(m, 5)).astype(np.float64)
    utility = X @ np.array([1.0, -0.5, 0.25, 0.0, 2.0]) + rng.normal(scale=0.5, size=m)
    labels = np.digitize(utility, [-1.0, 0.5, 2.0]).astype(np.float64) if graded else np.round(utility, 2)
    a = rng.integers(0, 5, m) * 0.5 if dyadic else rng.uniform(0, 2, m)
    a[rng.random(m) < 0.1] = 0.0
    return RankingData.from_arrays(X, labels, None, layout="dense", row_weights=a, group_weights=np.full(m, 1.5))


@pytest.fixture(scope="module", params=[("graded", True), ("real", True), ("real", False)],
                ids=["graded-dyadic", "real-dyadic", "real-uniform"])
def weighted_engines(request, spark, tmp_path_factory):
    import pyarrow.parquet as pq

    graded, dyadic = request.param[0] == "graded", request.param[1]
    data = _weighted_ranking(graded, dyadic)
    path = tmp_path_factory.mktemp("rangew") / "global.parquet"
    write_parquet(path, data)
    table = pq.read_table(path)
    order = np.argsort(data.row_order)  # the rows as written (input order)
    table = table.append_column("wt", [data.groups.row_weights[order]])
    table = table.append_column("gwt", [np.full(data.n_rows, 1.5)])
    pq.write_table(table, path)
    df = spark.read.parquet(str(path))
    driver = SparkEngine(df, placement="driver", num_partitions=3, weight_col="wt", group_weight_col="gwt")
    ranged = SparkEngine(df, placement="range", num_partitions=3, n_ranges=9, weight_col="wt",
                         group_weight_col="gwt")
    yield data, dyadic, driver, ranged
    driver.close()
    ranged.close()


VECTORS = [np.zeros(5), np.array([1.0, 0.0, 0.0, 0.0, 1.0]), np.array([0.31, -0.2, 0.07, 0.5, 0.9])]


def test_the_pair_weight_is_driver_placements(weighted_engines):
    _, dyadic, driver, ranged = weighted_engines
    assert ranged.summary == driver.summary and ranged.summary.weighted
    got, want = pair_weight(ranged), pair_weight(driver)
    assert got == want if dyadic else got == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("w", VECTORS, ids=["zero", "integer", "spread"])
def test_passes_are_driver_placements(weighted_engines, w):
    _, dyadic, driver, ranged = weighted_engines
    hinge = (ranged.run(w, HingeKernel()), driver.run(w, HingeKernel()))
    if dyadic:  # weight sums exact: the L1 hinge's statistics and Xᵀc bit for bit
        np.testing.assert_array_equal(hinge[0].stats, hinge[1].stats)
        np.testing.assert_array_equal(hinge[0].gradient, hinge[1].gradient)
    kernel = SquaredHingeDiagonalKernel()
    got, want = ranged.run(w, kernel, keep_state=True), driver.run(w, kernel, keep_state=True)
    for a, b in ((hinge[0].stats, hinge[1].stats), (hinge[0].gradient, hinge[1].gradient),
                 (got.stats, want.stats), (got.gradient, want.gradient), (got.moments[0], want.moments[0])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)
    v = np.array([0.5, -1.0, 0.25, 2.0, -0.75])
    hv = ranged.run(v, SquaredHingeHessianKernel(), state=got.state)
    np.testing.assert_allclose(hv.gradient, driver.run(v, SquaredHingeHessianKernel(), state=want.state).gradient,
                               rtol=1e-12, atol=1e-9)
    ranged.release(got.state)
    driver.release(want.state)


def test_models_are_driver_placements(weighted_engines):
    data, dyadic, driver, ranged = weighted_engines
    bmrm = {"solver": "bmrm", "C": 0.05, "max_iter": 10}
    got, want = train(ranged, **bmrm), train(driver, **bmrm)
    if dyadic:
        np.testing.assert_array_equal(got.weights, want.weights)
    tron = {"solver": "tron", "C": 0.05, "tol": 1e-8}
    got, want, local = train(ranged, **tron), train(driver, **tron), train(data, **tron)
    np.testing.assert_allclose(got.weights, want.weights, rtol=0, atol=1e-7 * np.abs(want.weights).max())
    np.testing.assert_allclose(got.weights, local.weights, rtol=0, atol=1e-7 * np.abs(want.weights).max())
