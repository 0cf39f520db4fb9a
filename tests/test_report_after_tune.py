"""``sparkrank report`` after ``sparkrank tune`` (issue 38 item 5): the best model keeps the C path
it came from, so ``report --model best.json`` draws the validation metric over C next to the
refit's convergence, and the refit's few warm-started iterations get whole-number ticks (a
two-point line had tick labels 1.0, 1.2, ... 2.0 that read as repeated ones), on both engines."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparkrank import report as plots
from sparkrank.cli import main
from sparkrank.model import RankingModel

GRID = ["--C-grid", "0.0625", "0.25", "1", "4"]


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_report_of_a_tuned_model_draws_its_c_path(spark, tmp_path, capsys, engine):
    model, table = tmp_path / "best.json", tmp_path / "tune.json"
    assert main(["tune", "--engine", engine, "--input", "sample:train", "--folds", "3", *GRID, "--model", str(model),
                 "--output-json", str(table), "-q"]) == 0, capsys.readouterr().err
    kept = RankingModel.load(model).summary["tune"]
    written = json.loads(table.read_text())
    assert [r["C"] for r in kept["rows"]] == [0.0625, 0.25, 1.0, 4.0] == written["grid"]
    assert [r["metric"] for r in kept["rows"]] == [r["metric"] for r in written["rows"]]
    assert kept["best_C"] == written["best_C"] and "best_model" not in kept
    out = tmp_path / "plots"
    assert main(["report", "--model", str(model), "--output-dir", str(out)]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["convergence.png", "metric_vs_C.png"]


def test_a_short_run_has_whole_number_iteration_ticks(tmp_path, monkeypatch):
    """The refit of a tune (two iterations here) on an iteration axis of whole numbers only."""
    history = [{"iter": i, "objective": 10.0 / i, "grad_ratio": 10.0 ** -i, "measure_name": "grad_ratio",
                "accepted": True, "seconds": 0.01 * i} for i in (1, 2)]
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    plots.plot_convergence([("refit", history)], tmp_path / "c.png")
    axis = figures[0].axes[2]  # iterations, lower row (the row that shows the x labels)
    figures[0].canvas.draw()
    ticks = [t for t in axis.get_xticks() if axis.get_xlim()[0] <= t <= axis.get_xlim()[1]]
    assert ticks and np.all(np.asarray(ticks) == np.round(ticks)), ticks
    labels = [t.get_text() for t in axis.get_xticklabels() if t.get_text()]
    assert len(labels) == len(set(labels)), labels
