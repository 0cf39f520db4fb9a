"""Where a LinearRanker fit runs (issue 38 item 1): ``engine="auto"`` trains rows that fit the
driver in-process, collected once through Arrow, and the model is the distributed fit's bit for
bit; ``engine="spark"`` and Spark-only params keep the distributed path."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sparkrank.datasets import make_ranking_data


@pytest.fixture(scope="module")
def frame(spark):
    from pyspark.ml.linalg import Vectors

    data, _ = make_ranking_data(200, 6, rows_per_group=10, density=0.6, seed=11)
    qid = np.repeat(data.qids, data.groups.group_sizes)
    X = data.X.toarray()
    rows = []
    for i, (y, q, x) in enumerate(zip(data.labels, qid, X)):
        nz = [j for j, v in enumerate(x) if v != 0.0]
        vec = Vectors.sparse(len(x), nz, [float(x[j]) for j in nz]) if i % 2 else Vectors.dense([float(v) for v in x])
        rows.append((float(y), int(q), vec))
    return spark.createDataFrame(rows, ["label", "qid", "features"]).cache()


def _bits(model) -> list[int]:
    return np.asarray(model.weights, dtype=np.float64).view(np.int64).tolist()


@pytest.mark.parametrize("solver", ["tron", "bmrm"])
def test_auto_trains_small_data_in_process_with_the_distributed_model(frame, caplog, solver):
    from sparkrank.ml import LinearRanker, release_blocks

    with caplog.at_level(logging.INFO, logger="sparkrank.ml"):
        auto = LinearRanker(solver=solver, C=0.5, reuseBlocks=False).fit(frame)
    assert "the local engine" in caplog.text
    distributed = LinearRanker(solver=solver, C=0.5, engine="spark", reuseBlocks=False).fit(frame)
    local = LinearRanker(solver=solver, C=0.5, engine="local", reuseBlocks=False).fit(frame)
    release_blocks()
    assert _bits(auto) == _bits(distributed) == _bits(local)
    assert auto.numFeatures == distributed.numFeatures == 6


def test_spark_only_params_keep_the_distributed_engine(frame, caplog):
    from sparkrank.ml import LinearRanker

    with caplog.at_level(logging.INFO, logger="sparkrank.ml"):
        LinearRanker(C=0.5, numPartitions=2, reuseBlocks=False).fit(frame)
    assert "the spark engine (numPartitions is set)" in caplog.text


def test_auto_trains_distributed_when_the_rows_cannot_pass_the_drivers_jvm(frame):
    from sparkrank.engines.registry import choose_frame_engine
    from sparkrank.ml.local_fit import _driver_refusal

    assert choose_frame_engine("auto", lambda: 1e3, (), lambda nbytes: "no room") == ("spark", "no room")
    assert choose_frame_engine("auto", lambda: 1e3, (), lambda nbytes: None)[0] == "local"
    assert _driver_refusal(frame, 1e3) is None
    assert "spark.driver.maxResultSize" in _driver_refusal(frame, 64e9)  # 64 GB through the default 1g


def test_engine_param_is_checked(frame):
    from sparkrank.ml import LinearRanker

    with pytest.raises((ValueError, TypeError), match="engine"):
        LinearRanker(engine="gpu")


# -- a DataFrame that is a plain scan of Parquet files (issue 40 item 3) ---------------------
@pytest.fixture(scope="module")
def parquet_dir(spark, frame, tmp_path_factory):
    from pyspark.ml.functions import vector_to_array

    path = str(tmp_path_factory.mktemp("scan") / "rows.parquet")
    frame.select("label", "qid", vector_to_array("features").alias("features")).coalesce(2).write.parquet(path)
    return path


def test_only_a_plain_scan_or_a_column_selection_counts_as_files(spark, parquet_dir):
    from pyspark.sql import functions as F

    from sparkrank.ml.file_scan import parquet_scan_files

    scan = spark.read.parquet(parquet_dir)
    files = parquet_scan_files(scan)
    assert files and all(f.endswith(".parquet") for f in files)
    assert parquet_scan_files(scan.select("label", "qid", "features")) == files
    assert parquet_scan_files(scan.withColumn("label", F.col("label") * 2.0)) is None
    assert parquet_scan_files(scan.filter("label > 0")) is None
    assert parquet_scan_files(scan.union(scan)) is None


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_plain_scan_is_read_from_its_files_with_the_same_model(spark, parquet_dir, caplog, engine):
    from sparkrank.ml import LinearRanker, release_blocks

    scan = spark.read.parquet(parquet_dir)
    with caplog.at_level(logging.INFO, logger="sparkrank.ml"):
        direct = LinearRanker(C=0.5, engine=engine, reuseBlocks=False).fit(scan)
    assert "plain scan of" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sparkrank.ml"):
        # a filter keeping every row: the DataFrame is read as it is
        shuffled = LinearRanker(C=0.5, engine=engine, reuseBlocks=False).fit(scan.filter("label > -1"))
    assert "plain scan of" not in caplog.text
    release_blocks()
    # Spark reads the files in its own order (largest first), so the queries may come in another
    # order than the files': the same model up to the order of floating-point sums
    np.testing.assert_allclose(direct.weights, shuffled.weights, rtol=1e-9, atol=1e-12)


def test_a_plain_scan_gives_the_command_lines_model_bit_for_bit(spark, parquet_dir, tmp_path, caplog):
    from sparkrank.cli import main
    from sparkrank.ml import LinearRanker
    from sparkrank.model import RankingModel

    path = tmp_path / "cli.json"
    assert main(["train", "--engine", "local", "--input", parquet_dir, "--C", "0.5", "--model", str(path), "-q"]) == 0
    with caplog.at_level(logging.INFO, logger="sparkrank.ml"):
        scan = LinearRanker(C=0.5, reuseBlocks=False).fit(spark.read.parquet(parquet_dir))
    assert "plain scan of" in caplog.text and "the local engine" in caplog.text
    cli = RankingModel.load(str(path))
    assert _bits(scan) == np.asarray(cli.weights, dtype=np.float64).view(np.int64).tolist()


def _transformed(spark, parquet_dir):
    """Frames over the same rows that the source layer cannot read from the files."""
    from pyspark.sql import functions as F

    scan = spark.read.parquet(parquet_dir)
    per_query = scan.select("qid").distinct().withColumn("one", F.lit(1.0))
    return {
        "withColumn": scan.withColumn("label", F.col("label") * F.lit(1.0)),
        "join": scan.join(per_query, "qid").withColumn("label", F.col("label") * F.col("one")).drop("one"),
        "filter": scan.filter(F.abs(F.col("label")) * 2.0 >= F.lit(0.0)),
    }


@pytest.mark.parametrize("how", ["withColumn", "join", "filter"])
def test_a_transformed_frame_is_read_from_the_dataframe_and_trains_the_same_model(spark, parquet_dir, caplog,
                                                                                  how):
    from sparkrank.ml import LinearRanker
    from sparkrank.ml.file_scan import parquet_scan_files

    frame = _transformed(spark, parquet_dir)[how]
    assert parquet_scan_files(frame) is None
    with caplog.at_level(logging.INFO, logger="sparkrank.ml"):
        model = LinearRanker(C=0.5, reuseBlocks=False).fit(frame)
    assert "plain scan of" not in caplog.text and "the local engine" in caplog.text
    # the rows as the DataFrame holds them, trained distributed: the same model bit for bit
    distributed = LinearRanker(C=0.5, engine="spark", reuseBlocks=False).fit(frame)
    assert _bits(model) == _bits(distributed)
    # the queries may come in another order than the files' (a join, Spark's file order): the
    # model read from the files is the same up to the order of floating-point sums
    direct = LinearRanker(C=0.5, reuseBlocks=False).fit(spark.read.parquet(parquet_dir))
    np.testing.assert_allclose(model.weights, direct.weights, rtol=1e-9, atol=1e-12)


# -- RankingEvaluator chooses its engine as LinearRanker does --------------------------------
def test_the_evaluator_gives_the_same_metric_on_both_engines(spark, frame, caplog):
    from sparkrank.ml import LinearRanker, RankingEvaluator

    scored = LinearRanker(C=0.5, reuseBlocks=False).fit(frame).transform(frame)
    for metric in ("ndcg@10", "pairwise_accuracy", "mean_ndcg"):
        values = {engine: RankingEvaluator(metricName=metric, engine=engine).evaluate(scored)
                  for engine in ("auto", "local", "spark")}
        assert len({float(v).hex() for v in values.values()}) == 1, (metric, values)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_the_evaluator_names_a_bad_prediction_on_both_engines(spark, frame, engine):
    from pyspark.sql import functions as F

    from sparkrank.data.block import DataError
    from sparkrank.ml import RankingEvaluator

    scored = frame.withColumn("prediction", F.when(F.col("qid") == F.lit(3), F.lit(float("nan"))).otherwise(1.0))
    with pytest.raises(DataError, match=r"RankingEvaluator \(feature column 0 is predictionCol 'prediction'\)"):
        RankingEvaluator(engine=engine).evaluate(scored)


def test_weight_columns_reach_the_in_process_fit(spark, frame):
    from pyspark.sql import functions as F

    from sparkrank.ml import LinearRanker

    weighted = frame.withColumn("w", (F.col("qid") % 3 + 1).cast("double"))
    local = LinearRanker(C=0.5, weightCol="w", engine="local", reuseBlocks=False).fit(weighted)
    distributed = LinearRanker(C=0.5, weightCol="w", engine="spark", reuseBlocks=False).fit(weighted)
    plain = LinearRanker(C=0.5, engine="local", reuseBlocks=False).fit(weighted)
    assert _bits(local) == _bits(distributed)
    assert _bits(local) != _bits(plain)


def test_the_evaluator_scores_a_models_input_once_with_the_same_metric(spark, frame):
    from sparkrank.ml import LinearRanker, RankingEvaluator, release_blocks
    from sparkrank.ml.scored_rows import INPUTS, scored_by

    model = LinearRanker(C=0.5, reuseBlocks=False).fit(frame)
    assert scored_by(model.transform(frame)) is not None
    assert scored_by(model.transform(frame).select("*")) is None  # another frame: scored on Spark
    release_blocks()
    before = INPUTS.collects
    for metric in ("ndcg@10", "pairwise_accuracy", "mean_ndcg"):
        in_driver = RankingEvaluator(metricName=metric).evaluate(model.transform(frame))
        collected = RankingEvaluator(metricName=metric, engine="local").evaluate(model.transform(frame).select("*"))
        distributed = RankingEvaluator(metricName=metric, engine="spark").evaluate(model.transform(frame))
        assert float(in_driver).hex() == float(collected).hex() == float(distributed).hex(), metric
    assert INPUTS.collects - before == 1  # the input's rows were collected once for all models
    release_blocks()
