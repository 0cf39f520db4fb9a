"""The Spark engine gives the local engine's numbers, in both kernel placements."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import MQ2008, require
from sparkrank.data.block import DataError, RankingData
from sparkrank.io.files import read_ranking_data, write_parquet
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.evaluation import evaluate_ranking
from sparkrank.app.evaluate import evaluate_model
from sparkrank.engines.registry import make_engine
from sparkrank.engines.spark.engine import SparkEngine
from sparkrank.io.sources import open_source
from sparkrank.numerics.exact_sum import dd_add
from sparkrank.training import train


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    data, _ = make_ranking_data(2500, 12, rows_per_group=30, n_levels=4, density=0.5, seed=11)
    path = tmp_path_factory.mktemp("syn") / "train.parquet"
    write_parquet(path, data)
    return data, str(path)


#: solver -> its options in the synthetic checks (fewer cutting planes keep the suite quick)
SYNTHETIC_TOL = {"tron": 1e-3, "bmrm": 1e-2}


@pytest.fixture(scope="module")
def synthetic_local(synthetic):
    """The local engine's model of each solver on :func:`synthetic` (trained once)."""
    data, _ = synthetic
    return {solver: train(data, solver=solver, C=0.05, tol=tol) for solver, tol in SYNTHETIC_TOL.items()}


def test_spark_driver_placement_equals_local(spark, synthetic, synthetic_local):
    # one block build serves both solvers (executor placement: the tiles test below, bit for bit);
    # BMRM's first 12 of its 36 cutting planes (a driver-placement pass is a Spark job that
    # brings the scores to the driver: ~0.1 s each)
    data, path = synthetic
    with SparkEngine(spark.read.parquet(path), placement="driver", num_partitions=3) as engine:
        assert engine.summary.n_pairs == data.groups.n_pairs
        assert engine.summary.n_groups == data.groups.n_groups
        for solver, tol in SYNTHETIC_TOL.items():
            options = {"max_iter": 12} if solver == "bmrm" else {}
            model = train(engine, solver=solver, C=0.05, tol=tol, **options)
            local = train(data, solver=solver, C=0.05, tol=tol, **options) if options else synthetic_local[solver]
            assert model.summary["iterations"] == local.summary["iterations"], solver
            assert rel(model.weights, local.weights) <= 1e-8, solver


def test_executor_tiles_give_the_local_model_bit_for_bit(spark, synthetic, synthetic_local, monkeypatch):
    """Executor placement, its blocks cut into many tiles (4 kB here, 8 MB by default) for the
    fused pass (``engines/tiles.py``): the local engine's models, bit for bit, and the same counts
    (the default tiles: the MQ2008 checks below)."""
    from sparkrank.engines import tiles

    data, path = synthetic
    monkeypatch.setattr(tiles, "TILE_BYTES", 4000)
    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=3) as engine:
        assert engine.tile_bytes == 4000
        assert engine.summary.n_pairs == data.groups.n_pairs
        assert engine.summary.n_groups == data.groups.n_groups
        for solver, tol in SYNTHETIC_TOL.items():
            model = train(engine, solver=solver, C=0.05, tol=tol)
            local = synthetic_local[solver]
            assert model.summary["iterations"] == local.summary["iterations"], solver
            np.testing.assert_array_equal(model.weights, local.weights)


def test_executor_blocks_never_split_a_group(spark, synthetic):
    data, path = synthetic
    from sparkrank.engines.spark.store import open_block

    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=4) as engine:
        seen = []
        for ref in engine.refs:
            if ref.n_rows:
                seen.extend(open_block(ref.path, ref.width).qids.tolist())
        assert len(seen) == len(set(seen)) == data.groups.n_groups  # every qid in exactly one block


def test_single_global_ranking_runs_in_driver_placement(spark, tmp_path):
    data, _ = make_ranking_data(1500, 6, rows_per_group=None, n_levels=None, seed=4)  # real labels, k ≈ m
    path = tmp_path / "global.parquet"
    write_parquet(path, data)
    local = train(data, solver="tron", C=1e-4)
    with SparkEngine(spark.read.parquet(str(path)), num_partitions=3) as engine:
        assert engine.placement == "driver"
        model = train(engine, solver="tron", C=1e-4)
    assert rel(model.weights, local.weights) <= 1e-8


def test_feature_layouts_give_the_same_model(spark, synthetic, synthetic_local):
    """ML vectors (sparse and dense rows mixed) and a dense array column: the local engine's
    model, bit for bit."""
    data, path = synthetic
    from pyspark.ml.linalg import SparseVector, DenseVector

    inv = np.argsort(data.row_order)
    X = data.X[inv].toarray()
    y = data.labels[inv]
    q = np.repeat(data.qids, data.groups.group_sizes)[inv]
    rows = [(float(y[i]), int(q[i]),
             SparseVector(X.shape[1], np.flatnonzero(X[i]).tolist(), X[i][X[i] != 0].tolist()) if i % 2
             else DenseVector(X[i].tolist()), X[i].tolist()) for i in range(len(y))]
    df = spark.createDataFrame(rows, ["label", "qid", "features", "dense"])
    reference = synthetic_local["tron"]
    for frame, column in ((df, "features"), (df.drop("features"), "dense")):
        with SparkEngine(frame, features_col=column, num_partitions=2) as engine:
            model = train(engine, solver="tron", C=0.05, tol=SYNTHETIC_TOL["tron"])
        assert model.summary["iterations"] == reference.summary["iterations"], column
        np.testing.assert_array_equal(model.weights, reference.weights, err_msg=column)


def test_null_label_is_an_error_naming_the_column(spark, tmp_path):
    table = pa.table({"label": [1.0, None, 0.0], "qid": [1, 1, 1],
                      "indices": [[0], [0], [1]], "values": [[1.0], [2.0], [3.0]]})
    pq.write_table(table, tmp_path / "bad.parquet")
    with pytest.raises(DataError, match=r"bad.parquet: row 1: column 'label' is null \(in 1 rows\)"):
        SparkEngine(spark.read.parquet(str(tmp_path / "bad.parquet")), num_partitions=1)


def test_invalid_rows_are_dropped_and_counted_on_request(spark, tmp_path, caplog):
    good, _ = make_ranking_data(300, 5, rows_per_group=20, n_levels=3, seed=3)
    write_parquet(tmp_path / "good.parquet", good)
    table = pq.read_table(tmp_path / "good.parquet")
    bad = pa.table({"label": [None, float("nan"), 1.0], "indices": [[0], [1], [2]],
                    "values": [[1.0], [2.0], [3.0]], "qid": [int(good.qids[0]), 7, None]})
    mixed = pa.concat_tables([table.replace_schema_metadata(None), bad.cast(table.schema.remove_metadata())])
    pq.write_table(mixed, tmp_path / "mixed.parquet")
    path = str(tmp_path / "mixed.parquet")
    with pytest.raises(DataError, match="drop-invalid-rows"):
        read_ranking_data(path)
    with caplog.at_level("WARNING"):
        data = read_ranking_data(path, drop_invalid_rows=True)
    assert "dropped 3 of 303 rows" in caplog.text
    assert data.n_rows == 300
    with SparkEngine(spark.read.parquet(path), num_partitions=2, drop_invalid_rows=True) as engine:
        assert engine.dropped_rows == 3
        assert engine.summary.n_rows == 300
        model = train(engine, solver="tron", C=0.1)
    assert rel(model.weights, train(good, solver="tron", C=0.1).weights) <= 1e-8


def test_too_few_features_is_an_error_and_leaves_no_blocks(spark, synthetic):
    import os

    from sparkrank.engines.spark.store import blocks_root

    data, path = synthetic
    # this application's block files: the owner marker its first engine writes is bookkeeping,
    # not a block, and other applications on the host come and go meanwhile
    app = os.path.join(blocks_root(), spark.sparkContext.applicationId)

    def stored():
        return {os.path.join(d, f) for d, _, files in os.walk(app) for f in files
                if os.path.join(d, f) != os.path.join(app, "owner")}

    before = stored()
    with pytest.raises(DataError, match=f"feature index {data.n_features - 1} but n_features=3"):
        SparkEngine(spark.read.parquet(path), num_partitions=2, n_features=3)
    assert stored() <= before


def test_nan_feature_is_an_error_naming_row_and_column(spark, tmp_path):
    table = pa.table({"label": [1.0, 2.0], "qid": [1, 1],
                      "indices": [[0, 3], [1]], "values": [[1.0, float("nan")], [2.0]]})
    pq.write_table(table, tmp_path / "nan.parquet")
    with pytest.raises(DataError, match=r"nan.parquet: row 0: feature column 3 is nan"):
        SparkEngine(spark.read.parquet(str(tmp_path / "nan.parquet")), num_partitions=1)


def test_evaluate_on_spark_equals_local(spark, synthetic):
    data, path = synthetic
    model = train(data, solver="tron", C=0.05)
    expected = evaluate_ranking(data.groups, model.predict(data))
    local = evaluate_model(model, LocalEngine(data))
    with SparkEngine(spark.read.parquet(path), num_partitions=3) as engine:
        got = evaluate_model(model, engine)
    for key in ("pairwise_accuracy", "auc", "mean_ndcg", "ndcg@10", "n_pairs", "n_groups"):
        assert got[key] == pytest.approx(expected[key], rel=1e-12), key
        assert local[key] == pytest.approx(expected[key], rel=1e-12), key
    assert got["objective"] == pytest.approx(local["objective"], rel=1e-10)


def test_predict_keeps_id_columns_and_per_query_metrics(spark, synthetic, tmp_path):
    data, path = synthetic
    from sparkrank.evaluation import per_group_metrics
    from sparkrank.engines.spark.scoring import per_query_metrics
    from sparkrank.engines.spark.scoring import predict_dataframe

    model = train(data, solver="tron", C=0.05)
    df = spark.read.parquet(path)
    from pyspark.sql import functions as F

    df = df.withColumn("doc_id", F.concat(F.lit("d"), F.monotonically_increasing_id().cast("string")))
    scored = predict_dataframe(df, model).toPandas()
    assert list(scored.columns) == ["label", "qid", "doc_id", "prediction"]
    local_scores = data.to_input_order(model.predict(data))
    np.testing.assert_allclose(scored["prediction"].to_numpy(), local_scores, rtol=1e-12)
    per = per_query_metrics(predict_dataframe(df, model)).toPandas().sort_values("qid")
    expected = per_group_metrics(data.groups, model.predict(data))
    order = np.argsort(data.qids)
    np.testing.assert_allclose(per["ndcg@10"].to_numpy(), expected["ndcg@10"][order], rtol=1e-12)
    np.testing.assert_array_equal(per["pairs"].to_numpy(), expected["pairs"][order])


#: solver -> max_iter of the MQ2008 checks
MQ2008_SOLVERS = {"tron": None, "bmrm": 40}


def test_wide_sparse_blocks_ship_their_non_zero_columns_with_the_same_bits(spark, tmp_path):
    """One SVMlight row with feature 66,000: each block's column sums travel as their non-zero
    columns (SparseSums; dense ones cost 16 bytes per feature per product and, at feature
    4,000,000, ran the local driver's JVM out of heap), and the model is the local engine's."""
    from sparkrank.engines.spark import step_sums, tasks

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(2, 70000)), rng.normal(size=(2, 70000))
    a[:, rng.random(70000) < 0.9] = 0.0
    sparse = tasks.padded_sums((a[0], a[1]), 70000)
    assert isinstance(sparse, tasks.SparseSums) and sparse.columns.shape[0] < 70000 // 4
    for x, y in ((sparse, (b[0], b[1])), ((b[0], b[1]), sparse), (sparse, sparse)):
        got = tasks.dense_sums(tasks.add_dd(x, y))
        want = dd_add(tasks.dense_sums(x), tasks.dense_sums(y))
        assert all(np.array_equal(g.view(np.int64), w.view(np.int64)) for g, w in zip(got, want))
    lines = [f"{i % 3} qid:{i // 20} 1:{rng.random():.4f} 2:{rng.random():.4f}" for i in range(200)]
    lines[31] += f" {tasks.SPARSE_SUMS_MIN_FEATURES + 464}:1.0"
    path = tmp_path / "wide.svm"
    path.write_text("\n".join(lines) + "\n")
    local = train(read_ranking_data(str(path)), C=1.0, max_iter=2)
    with make_engine(open_source(str(path), spark=spark), "spark", spark=spark, num_partitions=2) as engine:
        distributed = train(engine, C=1.0, max_iter=2)
    assert distributed.weights.shape == local.weights.shape == (tasks.SPARSE_SUMS_MIN_FEATURES + 464,)
    np.testing.assert_array_equal(distributed.weights, local.weights)


def test_feature_statistics_equal_the_local_engines_bits(spark, synthetic, tmp_path):
    """The standardization's statistics from three blocks equal the local engine's bit for bit
    (a feature far from 0 included): both add exact sums, so the partitioning changes no bit
    (with Chan's merge of per-block means it changed the last ones, and TRON on MQ2008 turned
    that into weights 1% apart)."""
    data, _ = synthetic
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.array(data.X)
    X[:, 3] += 1e7
    shifted = RankingData.from_arrays(X, data.labels, np.repeat(data.qids, np.diff(data.groups.offsets)))
    write_parquet(tmp_path / "shifted.parquet", shifted)
    local = LocalEngine(shifted).feature_statistics()
    with SparkEngine(spark.read.parquet(str(tmp_path / "shifted.parquet")), num_partitions=3) as engine:
        distributed = engine.feature_statistics()
    assert distributed.count == local.count
    for name in ("mean", "m2", "min", "max"):
        assert np.array_equal(getattr(distributed, name).view(np.int64), getattr(local, name).view(np.int64)), name


@pytest.fixture(scope="module")
def mq2008(tmp_path_factory):
    """MQ2008 Fold1 train, its Parquet copy and the local engine's model of each solver (trained once)."""
    data = read_ranking_data(require(MQ2008 / "train.txt"))
    path = tmp_path_factory.mktemp("mq") / "mq.parquet"
    write_parquet(path, data)
    local = {solver: train(data, solver=solver, C=1.0, max_iter=max_iter) for solver, max_iter in MQ2008_SOLVERS.items()}
    return data, str(path), local


@pytest.fixture(scope="module", params=[("executor", 2), ("executor", 3), ("driver", 2)],
                ids=["executor-2", "executor-3", "driver-2"])
def mq2008_engine(request, spark, mq2008):
    """A Spark engine over MQ2008 per layout (placement, partitions): its blocks are built
    once, in setup, for the tests of both solvers (each phase stays well under 30 s)."""
    placement, partitions = request.param
    with SparkEngine(spark.read.parquet(mq2008[1]), num_partitions=partitions, placement=placement) as engine:
        yield engine


@pytest.mark.slow
@pytest.mark.parametrize("solver", list(MQ2008_SOLVERS))
def test_mq2008_spark_equals_local(mq2008, mq2008_engine, solver):
    # MQ2008's L2 problem is badly conditioned (near-collinear LETOR features): TRON amplifies
    # a one-ulp difference ~100x per Newton step, so this only holds because every engine
    # rounds its sums once from double-doubles (numerics/exact_sum.py).
    local = mq2008[2][solver]
    model = train(mq2008_engine, solver=solver, C=1.0, max_iter=MQ2008_SOLVERS[solver])
    assert model.summary["iterations"] == local.summary["iterations"]
    assert rel(model.weights, local.weights) <= 1e-8
    assert model.summary["objective"] == pytest.approx(local.summary["objective"], rel=1e-12)


def test_long_spark_jobs_log_progress_lines(spark, caplog):
    import logging
    import time as _time

    from sparkrank.engines.spark.progress import job_progress

    def slow(rows):
        _time.sleep(1.5)
        yield sum(1 for _ in rows)

    with caplog.at_level(logging.INFO, logger="sparkrank.spark"):
        with job_progress(spark.sparkContext, "building blocks", every=0.2):
            assert spark.sparkContext.parallelize(range(4), 2).mapPartitions(slow).collect() == [2, 2]
        with job_progress(spark.sparkContext, "quick", every=30.0):
            spark.sparkContext.parallelize(range(4), 2).count()
    lines = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("building blocks: ") and "tasks done" in m for m in lines), lines
    assert not any(m.startswith("quick") for m in lines)  # work shorter than `every` says nothing


def test_tasks_run_on_python_workers_with_a_frozen_heap_over_unix_sockets(spark, synthetic):
    """Two per-task costs PySpark adds to every pass are gone: the full ``gc.collect()`` its
    daemon runs after each task of a reused worker (sparkrank's tasks first freeze the heap,
    ``spark/worker.py``) and the 40 ms delayed ACK of the worker's loopback TCP socket
    (``get_session`` sets ``spark.python.unix.domain.socket.enabled``)."""
    import gc

    from sparkrank.engines.spark import step_sums, tasks
    from sparkrank.io.spark.worker import worker_task

    def frozen(rows):
        for _ in rows:
            pass
        yield gc.get_freeze_count()

    counts = spark.sparkContext.parallelize(range(4), 2).mapPartitions(worker_task(frozen)).collect()
    assert len(counts) == 2 and min(counts) > 1000  # the worker's imported modules, at least
    assert spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled") == "true"
    # every task factory of a pass hands Spark the freezing wrapper
    for task in (tasks.scores_task(None), step_sums.driver_products_task((), (), {}, 1, None), tasks.labels_task(),
                 tasks.executor_pass_task(None, None, 1, None, None, ()), tasks.column_totals_task(),
                 tasks.centred_squares_task(None, 1),
                 tasks.column_moments_task(None, None, 1)):
        assert task.__wrapped__.__name__ == "task"


def _stages_run(sc, group: str, timeout: float = 60.0) -> list:
    """The stages that ran tasks for the jobs of ``group``, parents first.  Spark's status tracker
    is fed by its listener bus, after the jobs return: wait until it has seen every job of the
    group end (the bus keeps the order of events, so their tasks' ends are in by then)."""
    import time

    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout
    while True:
        jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
        if (jobs and all(j is not None and j.status == "SUCCEEDED" for j in jobs)) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    ran = [tracker.getStageInfo(s) for j in jobs if j is not None for s in j.stageIds]
    ran = [s for s in ran if s is not None and s.numCompletedTasks]  # not the cached block build's (skipped) stage
    return sorted(ran, key=lambda s: s.stageId)  # a job's stage ids come in no set order; parents first


def test_a_pass_is_one_stage_unless_the_partial_sums_would_crowd_the_driver(spark, synthetic, synthetic_local,
                                                                           monkeypatch):
    """``auto_aggregation_depth``: 1 (one Spark stage per pass) for small vectors; 2 (PySpark's
    tree, a second stage with a shuffle once a pass has more than nine tasks) for wide ones or
    when asked; the model is the same bit for bit either way.  On a local master a pass over 12
    blocks runs ``LOCAL_TASKS_PER_CORE`` tasks per core (each over several blocks)."""
    from sparkrank.engines.spark import engine as spark_engine
    from sparkrank.engines.spark.engine import DRIVER_PARTIALS_ENTRIES, auto_aggregation_depth
    from sparkrank.kernels.losses import SquaredHingeKernel

    assert auto_aggregation_depth(12, 12) == 1 and auto_aggregation_depth(1000, 136) == 1
    assert auto_aggregation_depth(100, DRIVER_PARTIALS_ENTRIES // 600 + 1) == 2
    _, path = synthetic
    with pytest.raises(ValueError, match="treeAggregate depth must be at least 1, got 0"):
        SparkEngine(spark.read.parquet(path), aggregation_depth=0)
    sc = spark.sparkContext
    models = {}
    cores = sc.defaultParallelism
    for depth in (None, 2):
        # depth 2: enough tasks per core that the pass has 12 tasks, and so two stages
        monkeypatch.setattr(spark_engine, "LOCAL_TASKS_PER_CORE", 2 if depth is None else 12)
        with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=12,
                         aggregation_depth=depth) as engine:
            group = f"depth-{depth}"
            sc.setJobGroup(group, "one pass")
            try:
                engine.run(np.full(engine.summary.n_features, 0.01), SquaredHingeKernel())
            finally:
                sc.setJobGroup(None, None)
            ran = _stages_run(sc, group)
            assert len(ran) == (1 if depth is None else 2), (depth, ran)
            assert ran[0].numTasks == (2 * cores if depth is None else 12), ran
            models[depth] = train(engine, solver="tron", C=0.05, tol=SYNTHETIC_TOL["tron"])
    np.testing.assert_array_equal(models[None].weights, models[2].weights)
    np.testing.assert_array_equal(models[None].weights, synthetic_local["tron"].weights)


def test_small_vectors_travel_inside_the_tasks_and_large_ones_as_broadcasts(spark):
    """A pass's weight vector up to ``INLINE_ARRAY_BYTES`` goes inside each task (no broadcast
    to create and destroy); a larger array is broadcast and destroyed after the pass."""
    from types import SimpleNamespace

    from pyspark import Broadcast

    from sparkrank.engines.spark.engine import INLINE_ARRAY_BYTES, SparkEngine
    from sparkrank.engines.spark.tasks import InlineValue

    small = np.arange(INLINE_ARRAY_BYTES // 8, dtype=np.float64)
    large = np.arange(INLINE_ARRAY_BYTES // 8 + 1, dtype=np.float64)
    holder = SimpleNamespace(sc=spark.sparkContext)
    with SparkEngine._broadcast(holder, small, None, large) as (a, none, b):
        assert isinstance(a, InlineValue) and a.value is small and none is None
        assert isinstance(b, Broadcast) and np.array_equal(b.value, large)
        seen = spark.sparkContext.parallelize(range(2), 2).map(lambda i: (a.value[-1], b.value[-1])).collect()
        assert seen == [(small[-1], large[-1])] * 2
    with pytest.raises(Exception):  # destroyed with the pass
        spark.sparkContext.parallelize(range(1), 1).map(lambda i: b.value[0]).collect()
