"""Lost executor state, block cleanup and resume, on the embedded Spark session and the local engine.

The standalone-cluster versions (killed executor JVMs, workers and drivers) are in
``test_cluster.py``; here the loss is simulated by deleting the kept kernel states between
iterations, which is what an executor loss leaves behind once the block is rebuilt.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from sparkrank.cli import main
from sparkrank.io.files import write_parquet
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.spark import kernel_state, store
from sparkrank.engines.spark import engine as spark_engine
from sparkrank.engines.spark.engine import ExecutorLossError, SparkEngine
from sparkrank.training import train


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    data, _ = make_ranking_data(1500, 8, rows_per_group=25, n_levels=3, density=0.6, seed=5)
    path = tmp_path_factory.mktemp("recovery") / "train.parquet"
    write_parquet(path, data)
    return data, str(path)


def _store_dir(engine: SparkEngine) -> str:
    return os.path.join(store.blocks_root(engine.local_dir), engine.owner.app_id, engine.store_id)


def _drop_states_after(engine: SparkEngine, iteration: int, dropped: list):
    """A solver callback deleting every kept kernel state once ``iteration`` is done."""

    def callback(record):
        if record.accepted and record.iteration == iteration:
            files = glob.glob(os.path.join(_store_dir(engine), "part-*", "state-*.bin"))
            for f in files:
                os.remove(f)
            dropped.append(len(files))

    return callback


@pytest.mark.parametrize("solver", ["tron", "toppush"])
def test_lost_kernel_states_are_recomputed_bitwise(spark, synthetic, solver, caplog, monkeypatch):
    from sparkrank.engines import tiles

    _, path = synthetic
    monkeypatch.setattr(tiles, "TILE_BYTES", 3000)  # several tiles per block: a state per tile
    options = {"max_iter": 20} if solver == "toppush" else {}  # passes, backtracking included
    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=3) as engine:
        undisturbed = train(engine, solver=solver, C=0.1, **options)
        dropped: list[int] = []
        disturbed = train(engine, solver=solver, C=0.1, callback=_drop_states_after(engine, 2, dropped), **options)
    assert dropped and dropped[0] > 0, "no kept state was found to delete"
    assert "recomputing it from its recipe" in caplog.text
    np.testing.assert_array_equal(disturbed.weights, undisturbed.weights)
    assert disturbed.summary["iterations"] == undisturbed.summary["iterations"]


def test_recovery_is_bounded(spark, synthetic, monkeypatch):
    _, path = synthetic
    monkeypatch.setattr(spark_engine, "MAX_RECOVERIES", 0)
    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=2) as engine:
        with pytest.raises(ExecutorLossError, match="failed 1 times because executors kept losing"):
            train(engine, solver="tron", C=0.1, callback=_drop_states_after(engine, 1, []))


def test_blocks_are_removed_on_close(spark, synthetic):
    _, path = synthetic
    engine = SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=2)
    store = _store_dir(engine)
    assert all(os.path.isabs(r.path) and r.path.startswith(store) for r in engine.refs)
    assert glob.glob(os.path.join(store, "part-*", "*.npy"))
    engine.close()
    assert not os.path.exists(store)


def test_stale_applications_are_swept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    here = socket.gethostname()
    root = store.blocks_root(str(tmp_path))
    old = store.STALE_AFTER_SECONDS + 60
    started = store._process_start(os.getpid())
    assert started  # Linux: the start time tells a live driver from a recycled PID
    for app, owner, age in (("app-dead", f"{here} {dead_pid}", 0), ("app-live", f"{here} {os.getpid()}", 0),
                            # a live driver here is never swept, however long its blocks sat idle
                            ("app-live-idle", f"{here} {os.getpid()} {started}", old),
                            ("app-recycled-pid", f"{here} {os.getpid()} {int(started) - 1}", 0),
                            ("app-old-elsewhere", "otherhost 1", old),
                            ("app-new-elsewhere", "otherhost 1", 0)):
        d = os.path.join(root, app, "store", "part-00000")
        os.makedirs(d)
        np.save(os.path.join(d, "data.npy"), np.zeros(10))
        with open(os.path.join(root, app, "owner"), "w") as f:
            f.write(owner + "\n")
        if age:
            t = os.stat(os.path.join(root, app)).st_mtime - age
            os.utime(os.path.join(root, app), (t, t))
    removed = store.sweep_stale_applications("app-current", str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == ["app-dead", "app-old-elsewhere", "app-recycled-pid"]
    assert sorted(os.listdir(root)) == ["app-live", "app-live-idle", "app-new-elsewhere"]
    # an executor using the blocks of a driver elsewhere keeps their directory fresh
    part = os.path.join(root, "app-new-elsewhere", "store", "part-00000")
    t = os.stat(os.path.dirname(os.path.dirname(part))).st_mtime - old
    os.utime(os.path.join(root, "app-new-elsewhere"), (t, t))
    store._TOUCHED.clear()
    store._heartbeat(part)
    assert not store.is_stale(os.path.join(root, "app-new-elsewhere"))


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_cli_resume_is_bitwise_equal_to_an_undisturbed_run(spark, synthetic, tmp_path, engine, capsys):
    _, path = synthetic
    common = ["train", "--engine", engine, "--input", path, "-C", "0.1", "--tol", "1e-6"]
    if engine == "spark":
        common += ["--partitions", "3"]
    ck = str(tmp_path / "ck")
    assert main([*common, "--model", str(tmp_path / "full.json")]) == 0
    # "killed" after iteration 2: the checkpoints are all that is left of the first run
    assert main([*common, "--model", str(tmp_path / "cut.json"), "--checkpoint-dir", ck, "--max-iter", "2"]) == 0
    assert sorted(os.listdir(ck)) == ["iter-00000001", "iter-00000002"]
    assert main([*common, "--model", str(tmp_path / "resumed.json"), "--checkpoint-dir", ck, "--resume"]) == 0
    full = json.loads((tmp_path / "full.json").read_text())
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    assert resumed["weights"] == full["weights"]
    assert resumed["summary"]["iterations"] == full["summary"]["iterations"] > 2

    capsys.readouterr()
    assert main([*common, "-C", "0.2", "--model", str(tmp_path / "x.json"), "--checkpoint-dir", ck, "--resume"]) == 2
    assert "was written with C=0.1, but this fit has C=0.2" in capsys.readouterr().err
    other = tmp_path / "other.parquet"
    data, _ = make_ranking_data(900, 8, rows_per_group=25, n_levels=3, density=0.6, seed=6)
    write_parquet(other, data)
    other_args = [a if a != path else str(other) for a in common]
    assert main([*other_args, "--model", str(tmp_path / "x.json"), "--checkpoint-dir", ck, "--resume"]) == 2
    assert "was written with data=" in capsys.readouterr().err
    assert main([*common, "--model", str(tmp_path / "x.json"), "--resume"]) == 2
    assert "--resume needs --checkpoint-dir" in capsys.readouterr().err


def test_column_moments_rebuild_missing_blocks(spark, synthetic, monkeypatch, caplog):
    from sparkrank.kernels.losses import SquaredHingeKernel

    _, path = synthetic
    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=2) as engine:
        w = np.linspace(-1, 1, engine.summary.n_features)
        undisturbed = engine.column_moments(w, SquaredHingeKernel())
        inner, failures = SparkEngine._column_moments, [1]

        def lose_blocks_once(self, *args):  # what a task on a host without the block file raises
            if failures:
                failures.pop()
                raise RuntimeError("PythonException: sparkrank.engines.spark.store.BlockMissingError: block is not on host")
            return inner(self, *args)

        monkeypatch.setattr(SparkEngine, "_column_moments", lose_blocks_once)
        store = engine.store_id
        disturbed = engine.column_moments(w, SquaredHingeKernel())
        assert engine.store_id != store  # the store was rebuilt
    assert "rebuilding the block store" in caplog.text
    for part in ("stats", "first", "second"):
        np.testing.assert_array_equal(getattr(disturbed, part), getattr(undisturbed, part))


def test_kept_states_read_back_as_mapped_arrays(tmp_path):
    """A state file gives back what was kept, arrays included (any dtype, empty, non-contiguous),
    as aligned views of the file that a task may still write to without touching the file."""
    p = np.random.default_rng(0).normal(size=1001)
    state = [(p, np.arange(1001, dtype=np.int32)), None, (np.zeros(0), p[::3], 7, "x")]
    kernel_state.write_state(str(tmp_path), 5, state)
    back = kernel_state.read_state(str(tmp_path), 5)
    assert back[1] is None and back[2][2:] == (7, "x")
    for a, b in [(back[0][0], p), (back[0][1], state[0][1]), (back[2][0], state[2][0]), (back[2][1], p[::3])]:
        assert a.dtype == b.dtype and a.flags.aligned
        np.testing.assert_array_equal(a, b)
    back[0][0][:] = 0.0  # private to this process
    np.testing.assert_array_equal(kernel_state.read_state(str(tmp_path), 5)[0][0], p)
    assert kernel_state.read_state(str(tmp_path), 6) is None
    kernel_state.drop_states(str(tmp_path), (5,))
    assert kernel_state.read_state(str(tmp_path), 5) is None


def test_a_fold_view_rebuilds_the_blocks_of_all_rows_when_they_are_gone(spark, synthetic, caplog):
    """A fold view derives its blocks from the blocks of all rows on the executors; when those are
    gone from a host (a lost worker's disk), the view rebuilds them first, then its own, and
    trains the model of the same rows in memory bit for bit."""
    import shutil

    from sparkrank.engines.spark.folds import fold_views
    from sparkrank.selection.folds import local_split

    data, path = synthetic
    expected = train(local_split(data, 2, seed=1)[0][0], solver="tron", C=1.0)
    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=2) as whole:
        store = whole.store_id
        shutil.rmtree(_store_dir(whole))  # before any task has mapped them
        tr, va = fold_views(whole, 2, 0, seed=1)
        try:
            assert whole.store_id != store  # the blocks of all rows were rebuilt
            model = train(tr, solver="tron", C=1.0)
        finally:
            va.close()
            tr.close()
    assert "rebuilding them, then the fold's" in caplog.text
    np.testing.assert_array_equal(model.weights, expected.weights)
