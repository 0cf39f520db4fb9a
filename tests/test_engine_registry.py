"""The engine registry: a toy third engine added with one definition (a plain-numpy reference
engine and its backend) plus one registry entry, which train, predict, evaluate, tune --folds 3
and convert run on through the command line, with the local engine's results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparkrank.cli import main
from sparkrank.data.digest import digest_of
from sparkrank.engines.backend import InProcessBackend
from sparkrank.engines.base import (ColumnMoments, DataSummary, Engine, FeatureStatistics, PassResult,
                                    StateHandle)
from sparkrank.engines.registry import ENGINES, EngineEntry, register_engine, unregister_engine
from sparkrank.model import RankingModel


# -- the one new definition: the whole data as one block, X·v and Xᵀc by numpy in float64 ---------
class NumpyEngine(Engine):
    """A reference engine: dense float64 rows, one block, plain (not double-double) sums."""

    def __init__(self, data):
        self.data = data
        self.X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X, dtype=np.float64)
        g = data.groups
        self._summary = DataSummary(n_rows=data.n_rows, n_features=data.n_features, n_groups=g.n_groups,
                                    n_pairs=g.n_pairs, n_groups_without_pairs=g.n_groups_without_pairs)

    @property
    def summary(self):
        return self._summary

    def _kernel(self, vector, kernel, state):
        result = kernel(self.data.groups, self.X @ np.asarray(vector, dtype=np.float64), state)
        hi, lo = result.stats_dd()
        return result, hi + lo

    def run(self, vector, kernel, *, state=None, keep_state=False):
        if state is not None and state.released:
            raise RuntimeError("kernel state was already released")
        r, stats = self._kernel(vector, kernel, None if state is None else state.payload)
        moments = None if r.moment_coef is None else [self.X.T @ r.moment_coef, (self.X ** 2).T @ r.moment_coef]
        return PassResult(stats, None if r.coef is None else self.X.T @ r.coef,
                          StateHandle(r.state) if keep_state else None, moments)

    def release(self, state):
        state.payload, state.released = None, True

    def column_moments(self, vector, kernel):
        r, stats = self._kernel(vector, kernel, None)
        return ColumnMoments(stats, self.X.T @ r.coef, (self.X ** 2).T @ r.coef)

    def feature_statistics(self):
        return FeatureStatistics.of_rows(self.data.X)

    def data_digest(self):
        return digest_of(self.data)  # every group id, label, feature value and index (as the local engine)


class NumpyBackend(InProcessBackend):
    """Rows read into this process, passes by :class:`NumpyEngine`."""

    name = "numpy"

    @classmethod
    def engine_over(cls, data):
        return NumpyEngine(data)


# -- the one registry entry --------------------------------------------------------------------------
TOY = EngineEntry("numpy", "plain numpy in this process (a reference engine, toy)", NumpyBackend)


@pytest.fixture
def toy_engine():
    register_engine(TOY)
    yield TOY
    unregister_engine(TOY.name)


def _run(argv, capsys):
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr()


def test_the_toy_engine_runs_every_command_like_the_local_engine(toy_engine, tmp_path, capsys):
    assert "numpy" in ENGINES
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "numpy: plain numpy in this process" in " ".join(capsys.readouterr().out.split())  # --engine's help
    models = {}
    for engine in ("local", "numpy"):
        path = tmp_path / f"{engine}.json"
        printed = _run(["train", "--engine", engine, "--input", "sample:train", "--model", str(path), "-q"], capsys)
        assert f"on the {engine} engine" in printed.out
        models[engine] = RankingModel.load(str(path))
        assert models[engine].summary["engine"] == engine
    # the same model up to the sums' rounding (the toy adds in plain float64)
    np.testing.assert_allclose(models["numpy"].weights, models["local"].weights, rtol=1e-6, atol=1e-9)

    scores = {}
    for engine in ("local", "numpy"):
        out = tmp_path / f"scores-{engine}.txt"
        _run(["predict", "--engine", engine, "--model", str(tmp_path / "local.json"), "--input", "sample:test",
              "--output", str(out), "-q"], capsys)
        scores[engine] = np.loadtxt(out)
    np.testing.assert_array_equal(scores["numpy"], scores["local"])  # scoring is the model's, not the engine's

    metrics = {}
    for engine in ("local", "numpy"):
        printed = _run(["evaluate", "--engine", engine, "--model", str(tmp_path / "local.json"), "--input",
                        "sample:test", "--per-query", str(tmp_path / f"pq-{engine}.csv"), "-q"], capsys)
        metrics[engine] = json.loads(printed.out)
    for name in ("pairwise_accuracy", "auc", "ndcg@10", "mean_ndcg", "objective"):
        assert metrics["numpy"][name] == pytest.approx(metrics["local"][name], rel=1e-9), name
    assert (tmp_path / "pq-numpy.csv").read_text() == (tmp_path / "pq-local.csv").read_text()

    tuned = {}
    for engine in ("local", "numpy"):
        out = tmp_path / f"tune-{engine}.json"
        _run(["tune", "--engine", engine, "--input", "sample:train", "--folds", "3", "--C-range", "-3", "0",
              "--output-json", str(out), "-q"], capsys)
        tuned[engine] = json.loads(out.read_text())
    assert tuned["numpy"]["best_C"] == tuned["local"]["best_C"]
    for a, b in zip(tuned["numpy"]["rows"], tuned["local"]["rows"]):
        assert a["metric"] == pytest.approx(b["metric"], rel=1e-6)

    for engine in ("local", "numpy"):
        _run(["convert", "--engine", engine, "--input", "sample:test", "--output", str(tmp_path / f"{engine}.csv"),
              "-q"], capsys)
    assert (tmp_path / "numpy.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()


def test_the_toy_engine_is_gone_after_unregistering(capsys):
    assert "numpy" not in ENGINES
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--engine", "numpy", "--input", "sample:train", "--model", "m.json"])
    assert exit_.value.code == 2 and "invalid choice: 'numpy'" in capsys.readouterr().err
