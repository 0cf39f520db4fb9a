"""Weighted rows and groups on the Spark engine: the local engine's models, bit for bit, and
one error naming the bad weight."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkrank.data.block import DataError, RankingData
from sparkrank.engines.spark import SparkEngine
from sparkrank.training import train

SOLVERS = {"tron": {"C": 0.05, "tol": 1e-3}, "bmrm": {"C": 0.05, "max_iter": 12},
           "ncg": {"C": 0.05, "max_iter": 15}, "toppush": {"C": 0.5, "max_iter": 40}}


def weighted_table(seed: int = 0, m: int = 600, n: int = 6):
    rng = np.random.default_rng(seed)
    qid = np.sort(rng.integers(0, 40, m))
    y = rng.integers(0, 4, m).astype(np.float64) * 0.5
    X = rng.normal(size=(m, n)).round(2)
    a = rng.integers(0, 4, m) * 0.5
    b = rng.integers(0, 3, 40)[qid] * 1.5
    table = pa.table({"label": y, "qid": qid, "features": list(X), "wt": a, "gwt": b})
    return table, RankingData.from_arrays(X, y, qid, row_weights=a, group_weights=b, layout="dense")


@pytest.fixture(scope="module")
def weighted(tmp_path_factory):
    table, data = weighted_table()
    path = tmp_path_factory.mktemp("weights") / "train.parquet"
    pq.write_table(table, path, row_group_size=100)
    return str(path), data


@pytest.mark.parametrize("placement,partitions", [("executor", 3), ("driver", 2)])
def test_weighted_spark_models_are_the_local_ones_bit_for_bit(spark, weighted, placement, partitions):
    path, data = weighted
    with SparkEngine(spark.read.parquet(path), placement=placement, num_partitions=partitions,
                     weight_col="wt", group_weight_col="gwt") as engine:
        assert engine.summary.weighted and engine.summary.n_pairs == data.groups.n_pairs
        for solver, options in SOLVERS.items():
            model, local = train(engine, solver=solver, **options), train(data, solver=solver, **options)
            assert model.summary["iterations"] == local.summary["iterations"], solver
            np.testing.assert_array_equal(model.weights, local.weights, err_msg=solver)


def test_weighted_parquet_blocks_read_without_a_shuffle(spark, weighted):
    path, data = weighted
    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=3, parquet_files=[path],
                     weight_col="wt", group_weight_col="gwt") as engine:
        model, local = train(engine, solver="tron", C=0.05), train(data, solver="tron", C=0.05)
        np.testing.assert_array_equal(model.weights, local.weights)


@pytest.mark.parametrize("bad", [-2.0, float("nan")])
def test_a_bad_weight_is_one_error_naming_it(spark, tmp_path, bad):
    table, _ = weighted_table(1, m=50)
    wt = table.column("wt").to_numpy().copy()
    wt[7] = bad
    path = tmp_path / "bad.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("wt"), "wt", pa.array(wt)), path)
    with pytest.raises(DataError, match=r"wt is .*: weights must be finite and non-negative"):
        SparkEngine(spark.read.parquet(str(path)), num_partitions=2, weight_col="wt")


def test_a_missing_weight_column_is_named(spark, weighted):
    path, _ = weighted
    with pytest.raises(DataError, match="no weight column 'w'"):
        SparkEngine(spark.read.parquet(path), weight_col="w")


def test_linear_ranker_weight_columns_give_the_local_model(spark, weighted):
    from sparkrank.ml import LinearRanker, release_blocks

    path, data = weighted
    ranker = LinearRanker(featuresCol="features", groupCol="qid", weightCol="wt", groupWeightCol="gwt",
                          solver="tron", C=0.05, reuseBlocks=False)
    model = ranker.fit(spark.read.parquet(path))
    release_blocks()
    np.testing.assert_array_equal(model.rankingModel.weights, train(data, solver="tron", C=0.05).weights)


def test_a_group_weight_differing_within_queries_is_the_local_engines_line(spark, tmp_path, capsys):
    """Two queries whose group weight differs, in different row groups and Spark blocks: the
    CLI's line on both engines (Parquet row groups on Spark), and the shuffled blocks' error."""
    from test_bad_inputs import _errors_on_both_engines

    table, _ = weighted_table(2, m=400)
    gwt, qid = table.column("gwt").to_numpy().copy(), table.column("qid").to_numpy()
    for q in (qid[50], qid[350]):
        gwt[np.flatnonzero(qid == q)[-1]] += 0.25
    path = tmp_path / "gw.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("gwt"), "gwt", pa.array(gwt)), path,
                   row_group_size=100)
    first = min(qid[50], qid[350])
    errors = _errors_on_both_engines(path, tmp_path, capsys, "--group-weight-col", "gwt", "--partitions", "3")
    assert errors["local"] == errors["spark"]
    assert errors["local"].startswith(f"{path}: gwt differs within query {first}: ")
    assert errors["local"].endswith(" (and 1 more query); a group weight must be the same on all rows of its query")
    with pytest.raises(DataError) as shuffled:  # blocks of rows shuffled by qid (no row groups)
        SparkEngine(spark.read.parquet(str(path)), num_partitions=3, group_weight_col="gwt", input_name=str(path))
    assert str(shuffled.value) == errors["local"]
