"""Model files (issue 11 item 1, issue 13 item 5): raw-feature weights in format 2, format 1
still loads, and bad model content is a clean error naming the file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparkrank.io.files import read_ranking_data
from sparkrank.data.svmlight import write_svmlight
from sparkrank.data.block import RankingData
from sparkrank.model import FORMAT_VERSION, RankingModel, convergence_report
from sparkrank.choices import STANDARDIZATIONS
from sparkrank.solvers.registry import SOLVERS
from sparkrank.training import train

DATA = Path(__file__).parent / "data"
SAMPLE = Path(__file__).resolve().parents[1] / "sparkrank" / "sample"


@pytest.fixture(scope="module")
def sample():
    train_data = read_ranking_data(SAMPLE / "train.svmlight")
    return train_data, read_ranking_data(SAMPLE / "test.svmlight", n_features=train_data.n_features)


@pytest.mark.parametrize("kind", STANDARDIZATIONS)
@pytest.mark.parametrize("solver", list(SOLVERS))
def test_json_weights_apply_to_raw_features_as_predict_does(sample, tmp_path, solver, kind):
    train_data, test_data = sample
    model = train(train_data, solver=solver, standardization=kind, max_iter=3)
    path = tmp_path / "m.json"
    model.save(path)
    record = json.loads(path.read_text())
    assert record["format_version"] == FORMAT_VERSION == 2
    by_hand = test_data.X.toarray() @ np.array(record["weights"]) + record["intercept"]
    np.testing.assert_allclose(by_hand, model.predict(test_data), rtol=1e-12, atol=1e-12)
    if kind == "none":
        assert record["intercept"] == 0.0 and "standardized_weights" not in record
    else:
        np.testing.assert_array_equal(record["standardized_weights"], model.weights)
    again = RankingModel.load(path)
    np.testing.assert_array_equal(again.weights, model.weights)
    np.testing.assert_array_equal(again.predict(test_data), model.predict(test_data))


@pytest.mark.parametrize("kind", STANDARDIZATIONS)
def test_version_1_files_load_and_predict_the_same(sample, kind):
    _, test_data = sample
    path = DATA / f"model_v1_tron_{kind}.json"
    assert "format_version\": 1" in path.read_text()
    model = RankingModel.load(path)
    # the stored scores were computed when a score was one sum in column order; since then it is
    # summed in eight lanes (numerics/simd.py), which moves a score by an ulp or so, not more
    np.testing.assert_allclose(model.predict(test_data), np.load(DATA / f"model_v1_tron_{kind}.test_scores.npy"),
                               rtol=1e-13, atol=1e-15)


def test_format_2_without_standardized_weights_recovers_them(sample, tmp_path):
    train_data, test_data = sample
    model = train(train_data, solver="tron", standardization="standard", max_iter=3)
    record = model.to_dict()
    del record["standardized_weights"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(record))
    np.testing.assert_allclose(RankingModel.load(path).predict(test_data), model.predict(test_data), rtol=1e-12)


def test_a_standardized_models_intercept_must_be_the_one_it_scores_with(sample, tmp_path):
    train_data, _ = sample
    record = train(train_data, solver="tron", standardization="standard", max_iter=3).to_dict()
    path = _write(tmp_path, {**record, "intercept": record["intercept"] + 1.0}, "edited.json")
    with pytest.raises(ValueError, match=f"{path}: 'intercept' is .* but its weights and standardization give"):
        RankingModel.load(path)


def _write(tmp_path, record, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("record,message", [
    ([0.1, 0.2], "holds a JSON list, not an object"),
    ({"weights": None, "solver": "tron", "C": 1.0}, "has 'weights': null"),
    ({"solver": "tron", "C": 1.0}, "has no 'weights'"),
    ({"weights": [[0.1, 0.2], [0.3, 0.4]], "solver": "tron", "C": 1.0}, "must be one number per feature"),
    ({"weights": ["a", 0.2], "solver": "tron", "C": 1.0}, "must be a list of numbers"),
    ({"weights": [0.1, float("inf")], "solver": "tron", "C": 1.0}, "non-finite"),
    ({"weights": [0.1, 0.2], "solver": "tron", "C": 1.0, "format_version": 7}, "format_version 7"),
    ({"weights": [0.1, 0.2], "solver": "tron", "C": 1.0, "format_version": 2,
      "standardization": {"kind": "standard", "shift": [0.0], "scale": [1.0]}}, "standardization has 1 features"),
    # score = weights·x + intercept: an intercept predict would not add is refused, not ignored
    ({"weights": [0.1, 0.2], "solver": "tron", "C": 1.0, "intercept": 5.0},
     "'intercept' is 5.0 but a model without standardization has intercept 0"),
    ({"weights": [0.1, 0.2], "solver": "tron", "C": 1.0, "intercept": "x"}, "'intercept' must be a finite number"),
    ({"weights": [0.1, 0.2], "solver": "tron", "C": 1.0, "intercept": None}, "'intercept' must be a finite number"),
])
def test_bad_model_content_is_an_error_naming_the_file(tmp_path, record, message):
    path = _write(tmp_path, record)
    with pytest.raises(ValueError, match=message) as info:
        RankingModel.load(path)
    assert str(path) in str(info.value)


def test_two_dimensional_npy_weights_are_an_error(tmp_path):
    np.save(tmp_path / "bad.json.weights.npy", np.zeros((3, 2)))
    path = _write(tmp_path, {"weights": [0.0] * 3, "solver": "tron", "C": 1.0, "format_version": 2,
                             "weights_npy": "bad.json.weights.npy"})
    with pytest.raises(ValueError, match=r"one number per feature .*shape \(3, 2\)") as info:
        RankingModel.load(path)
    assert str(path) in str(info.value)


def test_data_wider_than_the_model_is_an_error_naming_the_model(sample, tmp_path):
    _, test_data = sample
    path = _write(tmp_path, {"weights": [0.1, 0.2], "solver": "tron", "C": 1.0}, "narrow.json")
    with pytest.raises(ValueError, match=f"the model {path} has only 2 weights"):
        RankingModel.load(path).predict(test_data)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "sparkrank", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("command", ["predict", "evaluate"])
@pytest.mark.parametrize("record", [[1, 2], {"weights": None, "solver": "tron", "C": 1.0},
                                    {"weights": [0.1, 0.2], "solver": "tron", "C": 1.0}])
def test_cli_bad_models_exit_2_naming_the_file(sample, tmp_path, command, record):
    train_data, _ = sample
    data = tmp_path / "d.svm"
    write_svmlight(data, train_data.X, train_data.labels,
                   np.repeat(np.arange(train_data.groups.n_groups), train_data.groups.group_sizes))
    path = _write(tmp_path, record)
    extra = ["--output", str(tmp_path / "s.txt")] if command == "predict" else []
    r = _cli(command, "--model", str(path), "--input", str(data), "--engine", "local", "-q", *extra, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert str(path) in r.stderr and "Traceback" not in r.stderr


def test_spark_predict_with_too_few_weights_names_the_model(spark, sample, tmp_path):
    from sparkrank.io.files import write_parquet
    from sparkrank.engines.spark.scoring import predict_dataframe

    train_data, _ = sample
    write_parquet(tmp_path / "d.parquet", train_data)
    path = _write(tmp_path, {"weights": [0.1, 0.2], "solver": "tron", "C": 1.0}, "narrow.json")
    with pytest.raises(Exception, match=f"the model {path} has only 2 weights"):
        predict_dataframe(spark.read.parquet(str(tmp_path / "d.parquet")), RankingModel.load(path)).collect()


def test_convergence_line_warns_when_the_cap_stopped_the_fit(sample):
    train_data, _ = sample
    capped = train(train_data, solver="tron", max_iter=1)
    line, warn = convergence_report(capped)
    assert warn and line.startswith("NOT converged: tron after 1 iterations: reached max_iter=1")
    assert "gradient ratio" in line and "--max-iter" in line
    line, warn = convergence_report(train(train_data, solver="toppush"))
    assert not warn and line.startswith("converged: toppush") and "relative gap" in line
    line, warn = convergence_report(RankingModel.load(DATA / "model_v1_tron_none.json"))
    assert not warn and line.startswith("converged: tron after 5 iterations")


def test_convergence_line_warns_when_the_optimum_is_all_zero():
    """A positive at the centre of its query's negatives: no w lifts it above the top negative,
    so TopPush's certified optimum is w = 0, which ranks nothing; the line says so and warns."""
    X = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=float)
    data = RankingData.from_arrays(X, np.array([1.0, 0, 0, 0, 0]), np.zeros(5, dtype=int))
    model = train(data, solver="toppush")
    assert model.summary["converged"] and not np.any(model.weights)
    line, warn = convergence_report(model)
    assert warn and line.startswith("converged to w = 0: toppush") and "every row gets the same score" in line
