"""Range placement (one global ranking counted by score ranges on the executors) against driver
placement, the local engine and the all-pairs oracle: graded and real-valued labels, tied
scores, ranges smaller than a run of ties."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from sparkrank.data.block import RankingData
from sparkrank.data.groups import QueryGroups
from sparkrank.io.files import write_parquet
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.spark import SparkEngine
from sparkrank.kernels.counting import count_support_pairs
from sparkrank.kernels.losses import (
    HingeKernel,
    SquaredHingeDiagonalKernel,
    SquaredHingeHessianKernel,
    SupportPairDiagonalKernel,
)
from sparkrank.kernels.range_counts import RangePlacementError
from sparkrank.kernels.ranknet import RankNetKernel
from sparkrank.training import train


def _global_ranking(graded: bool, m: int = 400, seed: int = 5) -> RankingData:
    """Small integer features (many tied scores, and scores exactly a margin apart) and graded
    (4 levels) or real-valued labels, as one ranking."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(m, 5)).astype(np.float64)
    utility = X @ np.array([1.0, -0.5, 0.25, 0.0, 2.0]) + rng.normal(scale=0.5, size=m)
    labels = np.digitize(utility, [-1.0, 0.5, 2.0]).astype(np.float64) if graded else np.round(utility, 2)
    return RankingData.from_arrays(X, labels, None, layout="dense")


@pytest.fixture(scope="module", params=["graded", "real"])
def engines(request, spark, tmp_path_factory):
    data = _global_ranking(request.param == "graded")
    path = tmp_path_factory.mktemp("range") / "global.parquet"
    write_parquet(path, data)
    df = spark.read.parquet(str(path))
    driver = SparkEngine(df, placement="driver", num_partitions=3)
    ranged = SparkEngine(df, placement="range", num_partitions=3, n_ranges=9)  # ~90 events a range
    yield data, driver, ranged
    driver.close()
    ranged.close()


#: weights: zero (every score tied), integer (ties a margin apart), and spread scores
VECTORS = [np.zeros(5), np.array([1.0, 0.0, 0.0, 0.0, 1.0]), np.array([0.31, -0.2, 0.07, 0.5, 0.9])]


def test_summary_is_driver_placements(engines):
    _, driver, ranged = engines
    assert ranged.summary == driver.summary
    assert not hasattr(ranged, "groups")  # no m-length labels on the driver


@pytest.mark.parametrize("w", VECTORS, ids=["zero", "integer", "spread"])
def test_hinge_pass_is_driver_placements_bit_for_bit(engines, w):
    _, driver, ranged = engines
    for kernel in (HingeKernel(), SupportPairDiagonalKernel()):
        a, b = ranged.run(w, kernel), driver.run(w, kernel)
        np.testing.assert_array_equal(a.stats, b.stats)
        np.testing.assert_array_equal(a.gradient, b.gradient)


@pytest.mark.parametrize("w", VECTORS, ids=["zero", "integer", "spread"])
def test_squared_hinge_and_hessian_match_driver_placement(engines, w):
    """Counts are exact; the partner sums α and γ are added in another order (last bits)."""
    _, driver, ranged = engines
    v = np.linspace(-1.0, 1.0, 5)
    kernel = SquaredHingeDiagonalKernel()
    a, b = ranged.run(w, kernel, keep_state=True), driver.run(w, kernel, keep_state=True)
    assert a.stats[1] == b.stats[1]  # support pairs
    np.testing.assert_allclose(a.stats, b.stats, rtol=1e-13)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-12, atol=1e-12 * np.abs(b.gradient).max())
    for ma, mb in zip(a.moments, b.moments):
        np.testing.assert_array_equal(ma, mb)  # the diagonal's moments: counts only
    for _ in range(2):  # two products at one kept state
        ha = ranged.run(v, SquaredHingeHessianKernel(), state=a.state)
        hb = driver.run(v, SquaredHingeHessianKernel(), state=b.state)
        np.testing.assert_allclose(ha.gradient, hb.gradient, rtol=1e-12, atol=1e-12 * np.abs(hb.gradient).max())
    ranged.release(a.state)
    driver.release(b.state)


def test_hessian_passes_reuse_the_value_passes_kept_event_order(engines):
    """A squared hinge value pass keeps each range's event order beside the blocks; its Hessian
    passes read it (the same events), and sorting again when a file is gone gives the same bits;
    a released state's orders are deleted by the next pass."""
    _, _, ranged = engines
    w, v = VECTORS[2], np.linspace(-1.0, 1.0, 5)
    a = ranged.run(w, SquaredHingeDiagonalKernel(), keep_state=True)
    orders = _OrderFiles(ranged)
    kept = orders.files(a.state)
    assert kept, "the value pass kept no event order"
    read = ranged.run(v, SquaredHingeHessianKernel(), state=a.state)
    biggest = max(kept, key=os.path.getsize)
    np.save(biggest, np.load(biggest)[::-1].copy())  # a wrong order of the same events: read, it shows
    misled = ranged.run(v, SquaredHingeHessianKernel(), state=a.state)
    assert not np.array_equal(misled.gradient, read.gradient)
    for path in kept:
        os.remove(path)
    sorted_again = ranged.run(v, SquaredHingeHessianKernel(), state=a.state)
    np.testing.assert_array_equal(read.gradient, sorted_again.gradient)
    np.testing.assert_array_equal(read.stats, sorted_again.stats)
    b = ranged.run(w, SquaredHingeDiagonalKernel(), keep_state=True)
    released = orders.files(b.state)
    assert released
    ranged.release(b.state)
    ranged.run(w, HingeKernel())  # the next pass's range tasks delete the released orders
    assert not any(os.path.exists(path) for path in released)
    ranged.release(a.state)


class _OrderFiles:
    """The kept event-order files of a range engine's states on this host (beside its blocks)."""

    def __init__(self, engine):
        self.engine = engine
        self.directory = os.path.dirname(engine.refs[0].path)

    def files(self, state) -> list[str]:
        scores_id = self.engine._range._kept[state.payload].scores_id
        return glob.glob(os.path.join(self.directory, f"range-order-{scores_id}-*.npy"))


def test_column_moments_match_driver_placement(engines):
    _, driver, ranged = engines
    a = ranged.column_moments(VECTORS[1], SupportPairDiagonalKernel())
    b = driver.column_moments(VECTORS[1], SupportPairDiagonalKernel())
    for name in ("stats", "first", "second"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_counts_against_the_all_pairs_oracle(engines):
    """The L1 coefficients c - d of every row, through Xᵀc with X = the identity's columns:
    the gradient's weights as counted by the oracle."""
    data, _, ranged = engines
    X = np.asarray(data.X)
    for w in (VECTORS[1], np.array([0.5, -0.25, 1.0, 0.0, 2.0])):  # scores exact in any order of sums
        scores = X @ w
        oracle = count_support_pairs(QueryGroups.single(data.labels), scores, method="pairs")
        coef = (oracle.n_above - oracle.n_below).astype(np.float64)
        got = ranged.run(w, HingeKernel())
        np.testing.assert_array_equal(got.gradient, X.T @ coef)  # integers: exact
        assert got.stats[1] == oracle.n_above.sum()


def test_models_equal_driver_placement_and_the_local_engine(engines):
    data, driver, ranged = engines
    bmrm = dict(solver="bmrm", C=0.1, tol=1e-2, max_iter=8)
    a, b, c = train(ranged, **bmrm), train(driver, **bmrm), train(LocalEngine(data), **bmrm)
    np.testing.assert_array_equal(a.weights, b.weights)  # L1: counts only, bit for bit
    np.testing.assert_array_equal(a.weights, c.weights)
    tron = dict(solver="tron", C=0.1, tol=1e-4)
    a, b = train(ranged, **tron), train(driver, **tron)
    assert a.summary["iterations"] == b.summary["iterations"]
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-9)


def test_other_losses_and_grouped_data_are_refused(engines, spark, tmp_path):
    _, _, ranged = engines
    with pytest.raises(RangePlacementError, match="RankNetKernel.*placement 'driver'"):
        ranged.run(np.zeros(5), RankNetKernel())
    df = spark.createDataFrame([(1.0, 1, [0.0]), (0.0, 1, [1.0])], ["label", "qid", "features"])
    with pytest.raises(ValueError, match="range placement needs one global ranking"):
        SparkEngine(df, placement="range")


def test_placements_that_cannot_run_on_the_columns_are_refused_in_one_sentence():
    from sparkrank.engines.spark.placements import checked_placement

    assert checked_placement("auto", "qid") == "executor"
    assert checked_placement("auto", None) == "driver"
    assert checked_placement("range", None) == "range"  # with or without weights (test_range_weights.py)
    with pytest.raises(ValueError, match="range placement needs one global ranking"):
        checked_placement("range", "qid")
    with pytest.raises(ValueError, match="executor placement needs query ids"):
        checked_placement("executor", None)
