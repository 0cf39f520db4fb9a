"""Solvers never hang and never report garbage (issue 13 item 3): overflowing and underflowing
features, non-finite starts, a zero gradient, and a cap that counts every trial step."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from sparkrank.data.block import DataError
from sparkrank.data.svmlight import write_svmlight
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.objectives.base import Objective
from sparkrank.solvers.ncg import ncg
from sparkrank.solvers.tron import tron
from sparkrank.solvers.registry import SOLVERS
from sparkrank.training import SQUARE_OVERFLOW_MAGNITUDE, train


@pytest.fixture(scope="module")
def data():
    return make_ranking_data(300, 5, rows_per_group=15, n_levels=3, density=0.8, seed=1)[0]


def scaled(data, factor):
    return dataclasses.replace(data, X=(data.X * factor).tocsr())


@pytest.mark.parametrize("factor", [1e150, 1e300, 1e-300])
@pytest.mark.parametrize("solver", list(SOLVERS))
def test_extreme_feature_scales_end_with_a_clear_error_or_a_converged_model(data, factor, solver):
    engine = LocalEngine(scaled(data, factor))
    try:
        model = train(engine, solver=solver)
    except DataError as exc:
        assert re.search(r"features (overflow|underflow)", str(exc)), str(exc)
        if factor >= SQUARE_OVERFLOW_MAGNITUDE:  # squares beyond float64: standardizing cannot help
            assert "neither the solvers nor --standardization can use it; rescale or clip it" in str(exc)
        else:
            assert "use --standardization" in str(exc)
    else:
        assert model.summary["converged"], model.summary["message"]
        assert np.all(np.isfinite(model.weights))
        assert math.isfinite(model.summary["stopping_value"])
        assert model.summary["iterations"] <= 50
    assert engine.passes <= 400  # bounded work, whatever the outcome



def test_overflow_error_names_the_feature(data):
    X = data.X.tolil()
    X[:, 2] = X[:, 2] * 1e300
    with pytest.raises(DataError, match=r"features overflow: feature 3 \(weight index 2\) has \|x\| up to 9\.\d+e\+299"):
        train(dataclasses.replace(data, X=X.tocsr()), solver="tron")


def test_standardization_trains_large_features_and_names_those_it_cannot(data):
    """Up to where a feature's square fits in float64 --standardization removes its scale; beyond,
    the error says that it cannot (a standard deviation that overflows, squares in every pass),
    never a silent scale of 1 or the advice to standardize what already was."""
    plain = train(data, solver="tron", standardization="standard")
    large = train(scaled(data, 1e120), solver="tron", standardization="standard")
    assert large.summary["converged"]
    np.testing.assert_allclose(large.weights, plain.weights, rtol=1e-6, atol=1e-9)  # weights on standardized columns
    with pytest.raises(DataError, match=r"cannot standardize \(standard\) feature \d+ \(weight index \d+\): "
                                        r"\|x\| up to \S+e\+(199|200) makes its standard deviation overflow float64; "
                                        r"rescale or clip it"):
        train(scaled(data, 1e200), solver="tron", standardization="standard")
    with pytest.raises(DataError, match=r"whose square leaves float64's range, so neither the solvers nor "
                                        r"--standardization can use it"):
        train(scaled(data, 1e200), solver="tron", standardization="minmax")


@pytest.mark.parametrize("solver", ["tron", "ncg", "bmrm"])
def test_non_finite_initial_weights_are_rejected(data, solver):
    w0 = np.zeros(data.n_features)
    w0[1] = np.nan
    with pytest.raises(ValueError, match="initial weights are not finite: weight 1 is nan"):
        train(data, solver=solver, w0=w0)


class _NaNBeyondStart(Objective):
    """A quadratic whose value is NaN away from w = 0: every TRON step is rejected."""

    n_features = 3

    def value(self, w):
        return 0.5 * float(w @ w) if not np.any(w) else math.nan

    def gradient(self, w):
        return w - 1.0

    def hessian_vector(self, w, v):
        return v

    def hessian_diagonal(self, w):
        return np.ones(3)


@pytest.mark.parametrize("precondition", [True, False])
def test_tron_counts_rejected_steps_toward_the_cap(precondition):
    res = tron(_NaNBeyondStart(), max_iter=25, precondition=precondition)
    assert not res.converged
    assert res.iterations == 0
    assert len(res.history) == 25 and all(not r["accepted"] for r in res.history)
    assert res.message == "reached max_iter=25 trial steps (0 accepted)"


class _ZeroGradient(Objective):
    n_features = 4

    def value(self, w):
        return 0.5 * float(w @ w)

    def gradient(self, w):
        return w.copy()

    def hessian_vector(self, w, v):
        return v

    def hessian_diagonal(self, w):
        return np.ones(4)


@pytest.mark.parametrize("solve", [tron, ncg])
def test_zero_gradient_at_the_start_is_said_and_not_converged(solve):
    res = solve(_ZeroGradient())
    assert not res.converged and res.iterations == 0
    assert "exactly zero" in res.message


def test_all_zero_features_are_a_clear_error(data):
    import scipy.sparse as sp

    zero = dataclasses.replace(data, X=sp.csr_matrix(data.X.shape))
    with pytest.raises(DataError, match="every feature is zero"):
        train(zero, solver="tron")


def test_ncg_on_an_unbounded_objective_ends_at_the_cap_with_bounded_work():
    class Linear(_ZeroGradient):  # f(w) = −Σw: every line search runs out of evaluations
        calls = 0

        def gradient(self, w):
            Linear.calls += 1
            return -np.ones(4)

    res = ncg(Linear(), max_iter=6, max_line_search=3)
    assert not res.converged and res.message == "reached max_iter=6"
    assert Linear.calls <= 1 + 6 * 3


def test_apg_counts_backtracking_passes_toward_the_cap(data):
    engine = LocalEngine(data)
    model = train(engine, solver="toppush", max_iter=3)
    # the objective's count pass, at most 3 projected steps (backtracking included), the final primal pass
    assert engine.passes <= 1 + 3 + 1
    assert not model.summary["converged"]


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "sparkrank", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_overflowing_features_exit_2_without_traceback(data, tmp_path):
    path = tmp_path / "big.svm"
    write_svmlight(path, (data.X * 1e300).tocsr(), data.labels, np.repeat(np.arange(data.groups.n_groups),
                                                                          data.groups.group_sizes))
    r = _cli("train", "--input", str(path), "--model", str(tmp_path / "m.json"), "--engine", "local", "-q",
             cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "features overflow" in r.stderr and "Traceback" not in r.stderr


def test_cli_nan_init_model_and_nan_predict_model_exit_2(data, tmp_path):
    train_file = tmp_path / "t.svm"
    write_svmlight(train_file, data.X, data.labels, np.repeat(np.arange(data.groups.n_groups), data.groups.group_sizes))
    model = tmp_path / "nan.json"
    model.write_text(json.dumps({"weights": [0.1, float("nan"), 0, 0, 0], "solver": "tron", "C": 1.0}))
    for args in (["train", "--model", str(tmp_path / "out.json"), "--init-model", str(model)],
                 ["predict", "--model", str(model), "--output", str(tmp_path / "s.txt")],
                 ["evaluate", "--model", str(model)]):
        r = _cli(*args, "--input", str(train_file), "--engine", "local", "-q", cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert str(model) in r.stderr and "non-finite" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("factor", [1e150, 1e300])
def test_extreme_scales_give_the_same_outcome_on_spark(spark, data, tmp_path, factor):
    from sparkrank.io.files import write_parquet
    from sparkrank.engines.spark.engine import SparkEngine

    big = scaled(data, factor)
    write_parquet(tmp_path / "big.parquet", big)

    def outcome(engine):
        try:
            model = train(engine, solver="tron")
        except DataError as exc:
            return str(exc)
        return model.summary["iterations"], model.weights

    local = outcome(LocalEngine(big))
    with SparkEngine(spark.read.parquet(str(tmp_path / "big.parquet")), num_partitions=2) as engine:
        remote = outcome(engine)
    if isinstance(local, str):
        assert remote == local and "features overflow" in local
    else:
        assert remote[0] == local[0]
        np.testing.assert_array_equal(remote[1], local[1])
