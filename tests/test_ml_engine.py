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
    assert _bits(direct) == _bits(shuffled)
