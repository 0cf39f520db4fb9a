"""Report PNGs (size, content), `sparkrank report`, `train --report`, and per-iteration progress lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparkrank import report
from sparkrank.cli import main
from sparkrank.datasets import make_ranking_data
from sparkrank.selection import take_groups, tune
from sparkrank.training import train

WIDTH, HEIGHT = int(report.FIGSIZE[0] * report.DPI), int(report.FIGSIZE[1] * report.DPI)
ROOT = Path(__file__).resolve().parents[1]


def read_png(path: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    assert path.exists() and path.stat().st_size > 0, f"{path} missing or empty"
    return mpimg.imread(str(path))


def assert_picture(path: Path) -> None:
    """The promised pixel size, and not a blank canvas."""
    img = read_png(path)
    assert img.shape[:2] == (HEIGHT, WIDTH)
    rgb = img[..., :3]
    # more than a few colours and a fair share of non-white pixels: something was drawn
    assert np.mean(np.any(rgb < 0.9, axis=-1)) > 0.01
    # distinct colours at two decimals, each as one integer key (np.unique over rows, axis=0,
    # sorts the image lexicographically: 1.6 s a picture)
    q = np.rint(rgb * 100).astype(np.int64)
    assert len(np.unique((q[..., 0] * 101 + q[..., 1]) * 101 + q[..., 2])) > 10


@pytest.fixture(scope="module")
def small():
    data, _ = make_ranking_data(900, 6, rows_per_group=20, density=0.7, seed=11)
    cut = 30  # groups: the first 30 train, the rest validate (one draw, one true utility)
    n = data.groups.n_groups
    return take_groups(data, np.arange(cut)), take_groups(data, np.arange(cut, n))


def test_convergence_of_several_models(small, tmp_path):
    data, _ = small
    tron_model = train(data, C=0.5)
    bmrm_model = train(data, solver="bmrm", C=0.5, max_iter=40)
    path = report.plot_convergence([("tron", tron_model), ("bmrm", bmrm_model)], tmp_path / "c.png")
    assert_picture(path)


def test_convergence_of_every_registered_solver(tmp_path):
    from sparkrank.solvers.registry import SOLVERS

    data, _ = make_ranking_data(300, 4, rows_per_group=20, n_levels=2, seed=3)
    models = [(name, train(data, solver=name, C=0.25, max_iter=15)) for name in SOLVERS]
    assert_picture(report.plot_convergence(models, tmp_path / "all.png"))


def test_convergence_needs_a_history(tmp_path):
    with pytest.raises(ValueError, match="no iteration history"):
        report.plot_convergence([("empty", [])], tmp_path / "c.png")


@pytest.mark.parametrize("folds", [None, 2])
def test_metric_vs_c(small, tmp_path, folds):
    data, valid = small
    result = tune(data, valid=None if folds else valid, folds=folds, C_grid=[2.0**e for e in range(-6, 0)])
    assert_picture(report.plot_metric_vs_c(result, tmp_path / "a.png"))
    assert_picture(report.plot_metric_vs_c(result.to_dict(), tmp_path / "b.png"))


@pytest.mark.parametrize("centered", [True, False])
def test_score_distribution(small, tmp_path, centered):
    data, valid = small
    model = train(data, C=0.5)
    assert_picture(report.plot_score_distribution(model, valid, tmp_path / "s.png", centered=centered))


def test_real_valued_labels_are_binned(tmp_path):
    data, _ = make_ranking_data(500, 4, rows_per_group=50, n_levels=None, seed=2)
    level, names = report._levels(data.labels)
    assert len(names) == report.MAX_LEVELS and level.min() == 0 and level.max() == report.MAX_LEVELS - 1
    assert np.all(np.bincount(level) > 0)
    model = train(data, C=0.1, max_iter=5)
    assert_picture(report.plot_score_distribution(model, data, tmp_path / "s.png"))


def test_cli_report_and_train_report(tmp_path, capsys):
    m1, m2, tj = tmp_path / "m1.json", tmp_path / "m2.json", tmp_path / "tune.json"
    assert main(["train", "--input", "sample:train", "--model", str(m1), "--engine", "local", "-C", "0.1",
                 "--report", str(tmp_path / "train_report"), "-q"]) == 0
    assert_picture(tmp_path / "train_report" / "convergence.png")
    assert_picture(tmp_path / "train_report" / "scores_by_label.png")
    assert main(["train", "--input", "sample:train", "--model", str(m2), "--engine", "local", "-C", "1",
                 "--max-iter", "3", "-q"]) == 0
    assert main(["tune", "--input", "sample:train", "--valid", "sample:test", "--C-range", "-5", "-4",
                 "--engine", "local", "--output-json", str(tj), "--report", str(tmp_path / "tune_report"),
                 "-q"]) == 0
    for name in ("metric_vs_C.png", "scores_by_label.png"):
        assert_picture(tmp_path / "tune_report" / name)
    out = tmp_path / "report"
    assert main(["report", "--model", str(m1), str(m2), "--tune", str(tj), "--input", "sample:test",
                 "--output-dir", str(out), "-q"]) == 0
    for name in ("convergence.png", "metric_vs_C.png", "scores_by_label.png"):
        assert_picture(out / name)
    assert "scores_by_label.png" in capsys.readouterr().out


def test_cli_report_errors(tmp_path, capsys):
    assert main(["report", "--output-dir", str(tmp_path), "-q"]) == 2
    assert "nothing to draw" in capsys.readouterr().err
    (tmp_path / "x.json").write_text('{"kind": "model"}')
    assert main(["report", "--tune", str(tmp_path / "x.json"), "--output-dir", str(tmp_path), "-q"]) == 2
    assert "not a sparkrank tune result" in capsys.readouterr().err


def _run_train(tmp_path, *extra) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "sparkrank", "train", "--input", "sample:train", "--engine",
                           "local", "--model", str(tmp_path / "m.json"), *extra],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_train_shows_one_progress_line_per_iteration_by_default_and_quiet_silences_them(tmp_path):
    loud = _run_train(tmp_path)
    assert loud.returncode == 0, loud.stderr
    lines = [ln for ln in loud.stderr.splitlines() if " iter " in ln]
    model_iterations = int(loud.stdout.split(" iterations")[0].rsplit(" ", 1)[-1])
    assert len(lines) >= model_iterations > 0
    assert all(" f " in ln and "|g|" in ln and ln.rstrip().endswith("s") for ln in lines)
    quiet = _run_train(tmp_path, "-q")
    assert quiet.returncode == 0 and " iter " not in quiet.stderr
    assert "trained tron" in quiet.stdout


def test_training_report_skips_convergence_of_a_one_iteration_model(small, tmp_path):
    data, valid = small
    model = train(data, C=0.5, max_iter=1)
    paths = report.write_training_report(model, tmp_path, data=valid)
    assert [p.name for p in paths] == ["scores_by_label.png"] and not (tmp_path / "convergence.png").exists()
    model = train(data, C=0.5)
    assert [p.name for p in report.write_training_report(model, tmp_path)] == ["convergence.png"]
