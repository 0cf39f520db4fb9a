"""The memory model (sparkrank/data/memory.py) against measured blocks, its partition rule, and
the one-line refusals of the Spark and local engines when the settings leave too little."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from sparkrank.data import memory
from sparkrank.data.arrow import FeatureSpec
from sparkrank.io.files import write_parquet
from sparkrank.data.memory import DataShape, MemoryBudgetError, WorkerBudget
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.spark import SparkEngine
from sparkrank.engines.spark import sizing
from sparkrank.engines.spark.block_writer import BlockWriter
from sparkrank.training import train

MiB = 1 << 20


def _files_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_block_bytes_match_a_written_block(tmp_path, layout):
    """The model's bytes of a block (exact arithmetic on its arrays) against a block written by the
    builder: its arrays' bytes exactly, its files within 1% (the .npy headers), and the shape
    read from the Parquet footers is the data's."""
    rng = np.random.default_rng(3)
    rows, width = 6000, 40
    qid = np.repeat(np.arange(rows // 60), 60)
    labels = rng.integers(0, 4, rows).astype(np.float64)
    if layout == "dense":
        X = rng.random((rows, width), dtype=np.float32)
        features = {"features": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), width).cast(
            pa.list_(pa.float32()))}
        spec, nnz = FeatureSpec("features"), None
    else:
        per_row = 7
        idx = np.array([np.sort(rng.choice(width, per_row, replace=False)) for _ in range(rows)], dtype=np.int32)
        offsets = pa.array(np.arange(0, rows * per_row + 1, per_row, dtype=np.int32))
        features = {"indices": pa.ListArray.from_arrays(offsets, pa.array(idx.ravel())),
                    "values": pa.ListArray.from_arrays(offsets, pa.array(rng.random(rows * per_row)))}
        spec, nnz = FeatureSpec(None, "indices", "values"), rows * per_row
    table = pa.table({"label": labels, "qid": qid, **features})
    writer = BlockWriter(str(tmp_path / "block"), "label", "qid", spec, np.float64, 1 << 22)
    for start in range(0, rows, 2500):  # in batches, as Spark hands them
        writer.add(table.slice(start, 2500))
    ref = writer.finish()
    shape = DataShape(rows, width if layout == "dense" else int(idx.max()) + 1, nnz, rows // 60, 8)
    assert ref["nbytes"] == shape.block_bytes()
    assert shape.block_bytes() <= _files_bytes(ref["path"]) <= 1.01 * shape.block_bytes() + 12 * 128
    import pyarrow.parquet as pq

    pq.write_table(table, tmp_path / "t.parquet", row_group_size=1000)
    found = memory.parquet_shape([str(tmp_path / "t.parquet")], spec, 8)
    assert (found.rows, found.nnz) == (rows, nnz)
    if layout == "dense":
        assert found.features == width


def test_worker_budget_comes_from_the_settings():
    conf = {"spark.driver.memory": "1g"}
    b = memory.worker_budget(conf.get, local=True, cores=2)
    assert (b.bytes, b.setting) == (512 * MiB, "spark.driver.memory")
    assert b.source == "spark.driver.memory=1g over 2 cores"
    b = memory.worker_budget({"spark.executor.memory": "8g"}.get, local=False, cores=4)
    assert (b.bytes, b.setting) == (2048 * MiB, "spark.executor.memory")
    b = memory.worker_budget({"spark.driver.memory": "1g", "spark.python.worker.memory": "3g"}.get, local=True, cores=2)
    assert (b.bytes, b.setting) == (3072 * MiB, "spark.python.worker.memory")
    # a hard limit, split among the executor's spark.executor.cores workers (local mode: 1, each gets all)
    b = memory.worker_budget({"spark.executor.pyspark.memory": "2g", "spark.executor.cores": "4"}.get,
                             local=False, cores=4)
    assert (b.bytes, b.setting) == (512 * MiB, "spark.executor.pyspark.memory")
    assert memory.parse_size("1.5g") == 1536 * MiB and memory.parse_size("1024", "b") == 1024


def test_partition_count_keeps_each_block_within_the_budget():
    budget = WorkerBudget(512 * MiB, "spark.driver.memory=1g over 2 cores", "spark.driver.memory")
    shape = DataShape(2_000_000, 136, itemsize=8)
    parts = memory.partition_count(shape, budget, 2, minimum=2, input_bytes=memory.build_input_bytes(136))
    assert parts == 10  # 2M x 136 float64 on local[2] with the default 1g driver
    block = memory.worker_block_bytes(shape.part(parts))
    assert memory.WORKER_BASE_BYTES + block <= budget.bytes
    assert memory.WORKER_BASE_BYTES + memory.worker_block_bytes(shape.part(parts - 2)) > budget.bytes
    # at least the minimum, a multiple of the workers; twice the room for blocks: 5 blocks, so 6
    assert memory.partition_count(DataShape(1000, 10), budget, 4, minimum=3) == 4
    assert memory.partition_count(shape, WorkerBudget(2 * 512 * MiB - memory.WORKER_BASE_BYTES, "", ""), 2,
                                  minimum=2) == 6
    assert memory.partition_count(shape, budget, 3, minimum=2) % 3 == 0


def test_driver_partials_follow_pysparks_tree():
    assert memory.driver_partials(2, 1) == 2 and memory.driver_partials(4, 2) == 4 and memory.driver_partials(9, 2) == 3
    assert memory.driver_partials(100, 2) == 10 and memory.driver_partials(1000, 3) == 10
    total, per_task = memory.pass_result_bytes(136, [10_000] * 4, tasks=4, depth=1)
    assert total == 4 * per_task == 4 * 48 * 136
    # sparse sums of hashed features: a block's non-zero columns, while each task has one block
    total, _ = memory.pass_result_bytes(1 << 24, [1000, 1000], tasks=4, depth=1)
    assert total == 2 * 3 * 24 * 1000
    total, _ = memory.pass_result_bytes(1 << 24, [1000] * 8, tasks=4, depth=1)
    assert total == 4 * 48 * (1 << 24)


def test_a_refusal_is_one_line_naming_the_setting():
    with pytest.raises(MemoryBudgetError) as raised:
        memory.check_driver_results(900 * MiB, "a pass over 16,777,216 features", "512m", None, None)
    assert str(raised.value).count("\n") == 0
    assert "more than spark.driver.maxResultSize=512m; raise spark.driver.maxResultSize to at least 991m" \
        in str(raised.value)
    with pytest.raises(MemoryBudgetError, match=r"raise spark.driver.memory \(--driver-memory\) to at least"):
        memory.check_driver_results(400 * MiB, "a pass", "0", 1024 * MiB, "1g")
    memory.check_driver_results(100 * MiB, "a pass", "1g", 1024 * MiB, "1g")  # fits
    budget = WorkerBudget(512 * MiB, "spark.driver.memory=1g over 2 cores", "spark.driver.memory")
    with pytest.raises(MemoryBudgetError, match="raise spark.driver.memory to at least 2"):
        memory.check_worker(1 << 24, memory.PARTIAL_FEATURE_BYTES << 24, budget)


def test_the_local_engine_refuses_before_reading(tmp_path):
    from sparkrank.engines.registry import make_engine
    from sparkrank.io.sources import open_source

    data, _ = make_ranking_data(3000, 20, rows_per_group=30, n_levels=3, seed=2)
    path = tmp_path / "train.parquet"
    write_parquet(path, data)
    source = open_source(str(path))
    with pytest.raises(MemoryBudgetError) as raised:
        memory.check_local(DataShape(3000, 20), 2, source.name, available=(1000, "a test's limit"))
    assert str(raised.value).startswith(f"{source.name}: the in-process engine needs at least")
    assert "a test's limit" in str(raised.value) and "--dtype float32" in str(raised.value)
    make_engine(source, "local").close()  # it fits this machine


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    data, _ = make_ranking_data(2500, 12, rows_per_group=30, n_levels=4, density=0.5, seed=11)
    path = tmp_path_factory.mktemp("mem") / "train.parquet"
    write_parquet(path, data)
    return data, str(path)


def _patch_session(monkeypatch, spark, **changes):
    """The session's memory settings as read from its configuration, with ``changes``."""
    real = sizing.SessionMemory.of(spark.sparkContext, True)
    changed = sizing.SessionMemory(**{**real.__dict__, **changes})
    monkeypatch.setattr(sizing.SessionMemory, "of", classmethod(lambda cls, sc, local: changed))


def test_default_partitions_follow_the_budget_and_keep_the_model(spark, synthetic, monkeypatch):
    """A budget that leaves room for ~1/5 of the data a worker: more blocks than cores, a multiple
    of them, and the local engine's model bit for bit."""
    data, path = synthetic
    shape = sizing.input_shape(spark.read.parquet(path), FeatureSpec(None, "indices", "values"), 8, [path], None)
    assert shape.rows == data.n_rows
    room = memory.worker_block_bytes(shape) // 5
    budget = WorkerBudget(memory.worker_fixed_bytes(memory.PARTIAL_FEATURE_BYTES * shape.features) + room, "test", "t")
    monkeypatch.setattr(memory, "READ_BATCH_ROWS", 1)  # no build input to pay in this budget
    monkeypatch.setattr(memory, "ARROW_BATCH_ROWS", 1)
    _patch_session(monkeypatch, spark, budget=budget)
    with SparkEngine(spark.read.parquet(path), placement="executor", parquet_files=[path]) as engine:
        cores = spark.sparkContext.defaultParallelism
        assert engine.num_partitions >= 5 and engine.num_partitions % cores == 0
        model = train(engine, solver="tron", C=0.05, tol=1e-3)
    np.testing.assert_array_equal(model.weights, train(data, solver="tron", C=0.05, tol=1e-3).weights)


@pytest.mark.parametrize("placement", ["executor", "driver"])
def test_a_pass_that_cannot_reach_the_driver_is_refused(spark, synthetic, monkeypatch, placement):
    """spark.driver.maxResultSize too small for a pass's sums (or the scores of driver placement):
    one line naming it, after the blocks are built and before any pass; the blocks are deleted."""
    _, path = synthetic
    _patch_session(monkeypatch, spark, max_result_size="1k")
    removed, close = [], SparkEngine.close
    monkeypatch.setattr(SparkEngine, "close", lambda self: (removed.append(True), close(self)))
    with pytest.raises(MemoryBudgetError) as raised:
        SparkEngine(spark.read.parquet(path), placement=placement, num_partitions=2)
    assert "more than spark.driver.maxResultSize=1k; raise spark.driver.maxResultSize to at least" in str(raised.value)
    assert "\n" not in str(raised.value) and removed


def test_a_worker_budget_too_small_for_the_sums_is_refused(spark, synthetic, monkeypatch):
    _, path = synthetic
    budget = WorkerBudget(64 * MiB, "spark.python.worker.memory=64m", "spark.python.worker.memory")
    _patch_session(monkeypatch, spark, budget=budget)
    with pytest.raises(MemoryBudgetError, match=r"its budget of 64 MiB \(spark.python.worker.memory=64m\); "
                                                r"raise spark.python.worker.memory to at least"):
        SparkEngine(spark.read.parquet(path), placement="executor")
