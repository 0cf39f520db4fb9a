"""Resume from checkpoints is bit for bit: every exactly-resumable solver, and ``tune`` per C.

A run is "killed" by raising from its callback once iteration ``k``'s checkpoint is written;
the resumed run must end with the undisturbed run's weights (bitwise) and iteration count.
"""

from __future__ import annotations

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


SETTINGS = {"tron": {"C": 0.5, "tol": 1e-8}, "bmrm": {"C": 0.5, "tol": 1e-6}, "ncg": {"C": 0.5, "tol": 1e-8}}


def _fit(engine, solver, directory, resume, kill_after=None):
    settings = {"solver": solver, **SETTINGS[solver]}
    start = begin(directory, interval=1, resume=resume, engine=engine, settings=settings)

    def callback(it, w, record):
        start.callback(it, w, record)
        if kill_after is not None and it == kill_after:
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
    resumed = _fit(engine, solver, directory, resume=True)
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
