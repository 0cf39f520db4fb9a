"""Resume from checkpoints is bit for bit: every exactly-resumable solver, and ``tune`` per C.

A run is "killed" by raising from its callback once iteration ``k``'s checkpoint is written;
the resumed run must end with the undisturbed run's weights (bitwise) and iteration count.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from sparkrank.checkpoints import CheckpointMismatchError, begin
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.training import train


class Killed(Exception):
    """Stands for the driver being killed right after a checkpoint."""


@pytest.fixture(scope="module")
def data():
    d, _ = make_ranking_data(600, 6, rows_per_group=20, n_levels=3, density=0.7, seed=11)
    return d


SETTINGS = {"tron": {"C": 0.5, "tol": 1e-8}, "bmrm": {"C": 0.5, "tol": 1e-6}, "ncg": {"C": 0.5, "tol": 1e-8},
            "toppush": {"C": 0.5, "tol": 1e-3}}


def _fit(engine, solver, directory, resume, kill_after=None):
    settings = {"solver": solver, **SETTINGS[solver]}
    start = begin(directory, interval=1, resume=resume, engine=engine, settings=settings)

    def callback(record):
        start.callback(record)
        if kill_after is not None and record.accepted and record.iteration == kill_after:
            raise Killed

    return train(engine, solver=solver, C=settings["C"], tol=settings["tol"], w0=start.w0,
                 callback=callback, resume=start.solver_state)


@pytest.mark.parametrize("solver", ["tron", "bmrm", "ncg"])
def test_resumed_fit_equals_undisturbed_bitwise(data, solver, tmp_path):
    engine = LocalEngine(data)
    undisturbed = train(engine, solver=solver, **SETTINGS[solver])
    assert undisturbed.summary["iterations"] > 3, "too few iterations to interrupt"
    directory = str(tmp_path / "ck")
    with pytest.raises(Killed):
        _fit(engine, solver, directory, resume=False, kill_after=2)
    sidecars = [] if solver == "tron" else ["iter-00000001.npz", "iter-00000002.npz"]  # TRON's state is 3 numbers
    assert sorted(os.listdir(directory)) == sorted(["iter-00000001", "iter-00000002", *sidecars])
    resumed = _fit(engine, solver, directory, resume=True)
    assert resumed.summary["history"][0]["iter"] == 3, "the resumed fit did not start after the checkpoint"
    np.testing.assert_array_equal(resumed.weights, undisturbed.weights)
    assert resumed.summary["iterations"] == undisturbed.summary["iterations"]
    np.testing.assert_equal(resumed.summary["objective"], undisturbed.summary["objective"])  # NaN for fast NCG


def test_resume_rejects_other_settings(data, tmp_path):
    engine = LocalEngine(data)
    directory = str(tmp_path / "ck")
    with pytest.raises(Killed):
        _fit(engine, "bmrm", directory, resume=False, kill_after=1)
    with pytest.raises(CheckpointMismatchError, match="solver='bmrm'.*solver='ncg'"):
        _fit(engine, "ncg", directory, resume=True)


# -- tune: finished Cs are reused, the interrupted one resumes --------------------------------------
GRID = [2.0**e for e in range(-4, 2)]


def _rows(result):
    """The table rows without wall time (the one thing a resumed search cannot reproduce)."""
    return [{k: v for k, v in vars(r).items() if k != "seconds"} for r in result.rows]


def _kill_fit(monkeypatch, fit_number: int, after_iteration: int):
    """Make the ``fit_number``-th fit of the next search raise after ``after_iteration``'s checkpoint."""
    from sparkrank.selection import driver

    fits = []

    def killing_train(*args, callback=None, **kwargs):
        fits.append(1)
        if len(fits) == fit_number:
            def kill(record):
                if callback is not None:  # the checkpoint writer (none for TopPush)
                    callback(record)
                if record.accepted and record.iteration == after_iteration:
                    raise Killed
            return train(*args, callback=kill, **kwargs)
        return train(*args, callback=callback, **kwargs)

    monkeypatch.setattr(driver, "train", killing_train)


def _count_fits(monkeypatch) -> list:
    from sparkrank.selection import driver

    fits: list = []

    def counting_train(*args, **kwargs):
        fits.append(kwargs["C"])
        return train(*args, **kwargs)

    monkeypatch.setattr(driver, "train", counting_train)
    return fits


@pytest.mark.parametrize("solver,mode", [("tron", "folds"), ("bmrm", "valid"), ("ncg", "folds"), ("toppush", "valid")])
def test_interrupted_tune_resumes_to_the_same_table_and_model(data, solver, mode, tmp_path, monkeypatch, caplog):
    from sparkrank.selection import tune

    valid, _ = make_ranking_data(300, 6, rows_per_group=20, n_levels=3, density=0.7, seed=12)
    held = {"folds": 2} if mode == "folds" else {"valid": valid}
    opts = dict(held, C_grid=GRID, solver=solver, tol=SETTINGS[solver]["tol"], seed=3)
    undisturbed = tune(data, **opts)
    directory = str(tmp_path / "tune-ck")
    # fold 2's (or the validation path's) fourth C is killed after its second iteration
    _kill_fit(monkeypatch, len(GRID) + 4 if mode == "folds" else 4, 2)
    with pytest.raises(Killed):
        tune(data, **opts, checkpoint_dir=directory)
    monkeypatch.undo()
    fits = _count_fits(monkeypatch)
    with caplog.at_level(logging.INFO, logger="sparkrank"):
        resumed = tune(data, **opts, checkpoint_dir=directory, resume=True)
    # only the interrupted C and the ones after it are trained again (plus the k-fold refit); TopPush's
    # tune also searches the top fraction (issue 35): one C path per value, the first one interrupted
    assert len(fits) == (len(undisturbed.rows) - 3 + 1 if mode == "folds" else len(undisturbed.rows) - 3)
    if solver != "toppush":  # TopPush cannot start from given weights: it redoes the interrupted C
        assert "resuming from" in caplog.text and "/C-003/iter-00000002" in caplog.text
    np.testing.assert_equal(_rows(resumed), _rows(undisturbed))  # NaN objectives (fast NCG) compare equal
    assert resumed.best_C == undisturbed.best_C
    np.testing.assert_array_equal(resumed.model.weights, undisturbed.model.weights)
    assert resumed.model.summary["iterations"] == undisturbed.model.summary["iterations"]


def test_tune_resume_rejects_other_settings(data, tmp_path):
    from sparkrank.selection import tune

    directory = str(tmp_path / "tune-ck")
    tune(data, folds=2, C_grid=GRID[:2], solver="tron", checkpoint_dir=directory)
    with pytest.raises(CheckpointMismatchError, match="seed"):
        tune(data, folds=2, C_grid=GRID[:2], solver="tron", seed=1, checkpoint_dir=directory, resume=True)
    other, _ = make_ranking_data(600, 6, rows_per_group=20, n_levels=3, density=0.7, seed=99)
    with pytest.raises(CheckpointMismatchError, match="train_data"):
        tune(other, folds=2, C_grid=GRID[:2], solver="tron", checkpoint_dir=directory, resume=True)
    # a search without --resume replaces what the directory held; resuming it reuses only its own records
    fresh = tune(data, folds=2, C_grid=GRID[:2], solver="tron", seed=1, checkpoint_dir=directory)
    again = tune(data, folds=2, C_grid=GRID[:2], solver="tron", seed=1, checkpoint_dir=directory, resume=True)
    np.testing.assert_equal(_rows(again), _rows(fresh))


# -- the command line, in a process of its own ----------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparkrank", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def parquet(data, tmp_path_factory):
    from sparkrank.io.files import write_parquet

    path = tmp_path_factory.mktemp("resume") / "train.parquet"
    write_parquet(path, data)
    return str(path)


@pytest.mark.parametrize("solver", ["bmrm", "ncg"])
def test_cli_train_resume_is_bitwise(parquet, solver, tmp_path):
    common = ["train", "--engine", "local", "--input", parquet, "--solver", solver, "-C", "0.5",
              "--tol", str(SETTINGS[solver]["tol"]), "-q"]
    ck = str(tmp_path / "ck")
    assert _cli(*common, "--model", str(tmp_path / "full.json")).returncode == 0
    # "killed" after iteration 2: the checkpoints are all that is left of the first run
    cut = _cli(*common, "--model", str(tmp_path / "cut.json"), "--checkpoint-dir", ck, "--max-iter", "2")
    assert cut.returncode == 0, cut.stderr
    resumed = _cli(*common, "--model", str(tmp_path / "resumed.json"), "--checkpoint-dir", ck, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    full = json.loads((tmp_path / "full.json").read_text())
    again = json.loads((tmp_path / "resumed.json").read_text())
    assert again["weights"] == full["weights"]
    assert again["summary"]["iterations"] == full["summary"]["iterations"] > 2
    assert again["summary"]["history"][0]["iter"] == 3


def test_cli_tune_resume_gives_the_same_table_and_model(parquet, tmp_path):
    ck = tmp_path / "ck"
    common = ["tune", "--engine", "local", "--input", parquet, "--folds", "2", "--C-range", "-4", "1",
              "--tol", "1e-8", "-q", "--checkpoint-dir", str(ck)]
    first = _cli(*common, "--output-json", str(tmp_path / "full.json"), "--model", str(tmp_path / "full-model.json"))
    assert first.returncode == 0, first.stderr
    # "killed" while fold 2 trained its fourth C: its records from there on and the refit are lost
    for name in ("C-003.json", "C-004.json", "C-005.json"):
        (ck / "path-1" / name).unlink()
    shutil.rmtree(ck / "refit")
    resumed = _cli(*common, "--resume", "--output-json", str(tmp_path / "resumed.json"),
                   "--model", str(tmp_path / "resumed-model.json"))
    assert resumed.returncode == 0, resumed.stderr
    full, again = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("full", "resumed"))
    for rows in (full["rows"], again["rows"]):
        for row in rows:
            row.pop("seconds")
    assert again["rows"] == full["rows"] and again["best_C"] == full["best_C"]
    full_model, model = (json.loads((tmp_path / f"{n}-model.json").read_text()) for n in ("full", "resumed"))
    assert model["weights"] == full_model["weights"]

    other_seed = _cli(*common, "--resume", "--seed", "1")
    assert other_seed.returncode == 2 and "Traceback" not in other_seed.stderr
    assert "was written with seed=0, but this fit has seed=1" in other_seed.stderr


@pytest.mark.parametrize("solver", ["bmrm", "ncg"])
def test_resume_on_spark_is_bitwise_equal_to_local(spark, data, parquet, solver, tmp_path):
    from sparkrank.engines.spark.engine import SparkEngine

    local = train(LocalEngine(data), solver=solver, **SETTINGS[solver])
    directory = f"file://{tmp_path}/ck"  # through Hadoop's FileSystem
    with SparkEngine(spark.read.parquet(parquet), placement="executor", num_partitions=3) as engine:
        with pytest.raises(Killed):
            _fit(engine, solver, directory, resume=False, kill_after=2)
        resumed = _fit(engine, solver, directory, resume=True)
    np.testing.assert_array_equal(resumed.weights, local.weights)
    assert resumed.summary["iterations"] == local.summary["iterations"]


# -- a resume that cannot lie: changed data, settings or format are refused, naming what changed ----------
def _with(data, labels=None, X=None):
    """``data`` with other labels or feature rows (same queries, same row order)."""
    from sparkrank.data.block import RankingData
    from sparkrank.data.groups import QueryGroups

    g = data.groups
    return RankingData(data.X if X is None else X, QueryGroups.from_offsets(g.labels if labels is None else labels,
                                                                            g.offsets), data.qids, data.input_order)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_resume_on_changed_data_or_settings_is_refused(request, data, parquet, tmp_path, engine, capsys):
    """BMRM checkpointed at iteration 10, then --resume on the same rows with the labels rotated
    inside each query (the same label counts, pairs and feature ranges: what the fingerprint
    missed before), with one feature value one ulp higher, or with another tolerance."""
    from sparkrank.cli import main
    from sparkrank.io.files import write_parquet

    if engine == "spark":
        request.getfixturevalue("spark")
    common = ["train", "--engine", engine, "--solver", "bmrm", "-C", "0.5", "--tol", "1e-6", "-q",
              *(["--partitions", "3"] if engine == "spark" else [])]
    ck = str(tmp_path / "ck")
    assert main([*common, "--input", parquet, "--model", str(tmp_path / "cut.json"), "--checkpoint-dir", ck,
                 "--max-iter", "10"]) == 0
    assert "iter-00000010" in os.listdir(ck)
    g = data.groups
    rotated = np.concatenate([np.roll(g.labels[a:b], 1) for a, b in zip(g.offsets[:-1], g.offsets[1:])])
    assert not np.array_equal(rotated, g.labels)
    X = data.X.copy()
    k = int(np.argsort(X.data)[X.data.size // 2])  # a middle value: no feature's min or max
    X.data[k] = np.nextafter(X.data[k], np.inf)
    cases = {"labels": (_with(data, labels=rotated), "(labels differ)"),
             "values": (_with(data, X=X), "(feature values or indices differ)")}
    for name, (changed, what) in cases.items():
        path = str(tmp_path / f"{name}.parquet")
        write_parquet(path, changed)
        capsys.readouterr()
        model = tmp_path / f"{name}.json"
        assert main([*common, "--input", path, "--model", str(model), "--checkpoint-dir", ck, "--resume"]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert f"checkpoint {ck}/iter-00000010 was written with data=" in err
        assert f": the data changed since the checkpoint {what}; resume with the same data" in err
        assert not model.exists()
    assert main([*common, "--tol", "1e-5", "--input", parquet, "--model", str(tmp_path / "x.json"),
                 "--checkpoint-dir", ck, "--resume"]) == 2
    assert "was written with tol=1e-06, but this fit has tol=1e-05" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_resume_on_other_row_weights_is_refused(request, tmp_path, engine, capsys):
    """The same rows with one row weight in three changed: a resume would have gone on with the
    old weights' cutting planes and written their model with exit 0."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkrank.cli import main

    if engine == "spark":
        request.getfixturevalue("spark")
    rng = np.random.default_rng(2)
    m = 300
    qid = np.sort(rng.integers(0, 15, m))
    table = pa.table({"label": rng.integers(0, 3, m) * 1.0, "qid": qid, "features": list(rng.normal(size=(m, 4)))})
    paths = {}
    for name, weights in (("ones", np.ones(m)), ("thirds", np.where(np.arange(m) % 3, 1.0, 3.0))):
        paths[name] = str(tmp_path / f"{name}.parquet")
        pq.write_table(table.append_column("w", pa.array(weights)), paths[name])
    common = ["train", "--engine", engine, "--solver", "bmrm", "-C", "0.5", "--weight-col", "w", "-q",
              "--checkpoint-dir", str(tmp_path / "ck"), *(["--partitions", "2"] if engine == "spark" else [])]
    assert main([*common, "--input", paths["ones"], "--model", str(tmp_path / "cut.json"), "--max-iter", "5"]) == 0
    capsys.readouterr()
    model = tmp_path / "resumed.json"
    assert main([*common, "--input", paths["thirds"], "--model", str(model), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "the data changed since the checkpoint (row or group weights differ)" in err
    assert not model.exists()
    assert main([*common, "--input", paths["ones"], "--model", str(model), "--resume", "--max-iter", "8"]) == 0


def test_resume_refuses_another_model_format(data, parquet, tmp_path, capsys):
    from sparkrank.cli import main

    common = ["train", "--engine", "local", "--input", parquet, "--solver", "bmrm", "-C", "0.5", "-q",
              "--checkpoint-dir", str(tmp_path / "ck")]
    assert main([*common, "--model", str(tmp_path / "cut.json"), "--max-iter", "2"]) == 0
    newest = tmp_path / "ck" / "iter-00000002"
    record = json.loads(newest.read_text())
    assert record["model_format"] == 2 and record["start"] is None
    del record["model_format"]  # what a checkpoint of an earlier sparkrank holds
    newest.write_text(json.dumps(record))
    capsys.readouterr()
    assert main([*common, "--model", str(tmp_path / "x.json"), "--resume"]) == 2
    assert "was written with model_format=None, but this fit has model_format=2" in capsys.readouterr().err


def test_resume_with_nothing_to_resume_says_so(parquet, tmp_path, caplog):
    from sparkrank.cli import main

    with caplog.at_level(logging.WARNING, logger="sparkrank"):
        assert main(["train", "--engine", "local", "--input", parquet, "--model", str(tmp_path / "m.json"), "-q",
                     "--checkpoint-dir", f"file:{tmp_path}/nothing", "--resume"]) == 0
    assert f"--resume: no checkpoint in file:{tmp_path}/nothing (no such directory); starting afresh" in caplog.text


@pytest.mark.parametrize("spelling", ["file:{}", "file://{}"])
def test_file_uri_checkpoint_dirs_are_the_local_directory(data, parquet, tmp_path, spelling, monkeypatch):
    """``file:/abs/dir`` (one slash, a valid Hadoop URI) and ``file:///abs/dir`` both mean /abs/dir,
    written there and resumed from there, never a ``file:`` directory under the working directory."""
    from sparkrank.cli import main

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    directory = tmp_path / "ck"
    common = ["train", "--engine", "local", "--input", parquet, "--solver", "bmrm", "-C", "0.5", "--tol", "1e-6",
              "-q"]
    ck = ["--checkpoint-dir", spelling.format(directory)]
    assert main([*common, "--model", str(tmp_path / "full.json")]) == 0
    assert main([*common, *ck, "--model", str(tmp_path / "cut.json"), "--max-iter", "2"]) == 0
    assert sorted(n for n in os.listdir(directory) if n.startswith("iter-")) == \
        ["iter-00000001", "iter-00000001.npz", "iter-00000002", "iter-00000002.npz"]
    assert main([*common, *ck, "--model", str(tmp_path / "resumed.json"), "--resume"]) == 0
    assert os.listdir(work) == []
    full, resumed = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("full", "resumed"))
    assert resumed["weights"] == full["weights"]
    assert resumed["summary"]["history"][0]["iter"] == 3
