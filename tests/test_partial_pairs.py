"""Training on adjacent-level pairs (lee-lin2014 §5): objectives against the explicit filtered
pairs, both engines the same model bit for bit, the model file's record, the CLI's option."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkrank.cli import main
from sparkrank.data.block import RankingData
from sparkrank.io.files import write_parquet
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.spark import SparkEngine
from sparkrank.model import RankingModel
from sparkrank.objectives.ranksvm import HingeRisk, SquaredHingeObjective
from sparkrank.training import resolve_c, train


def random_data(seed, m=80, n=6, levels=4, groups=7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    X[rng.random((m, n)) < 0.3] = 0.0
    y = rng.integers(0, levels, m).astype(float) if levels else rng.normal(size=m).round(1)
    return RankingData.from_arrays(X, y, rng.integers(0, groups, m))


def adjacent_differences(data):
    """``x_upper - x_lower`` of every adjacent-level pair, enumerated from the definition."""
    X, y, offsets = data.X.toarray(), data.labels, data.groups.offsets
    rows = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        levels = np.unique(y[a:b])
        for lo in range(a, b):
            for up in range(a, b):
                below = levels[levels < y[up]]
                if below.size and y[lo] == below[-1]:
                    rows.append(X[up] - X[lo])
    return np.array(rows).reshape(-1, X.shape[1])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), levels=st.sampled_from([0, 2, 5]),
       method=st.sampled_from(["selection", "prsvm+", "pairs", "rbtree"]), scale=st.sampled_from([0.0, 0.3, 3.0]))
def test_objectives_equal_the_explicit_adjacent_pairs(seed, levels, method, scale):
    data = random_data(seed, levels=levels)
    D = adjacent_differences(data)
    rng = np.random.default_rng(seed + 1)
    w, v = rng.normal(size=data.n_features) * scale, rng.normal(size=data.n_features)
    z = 1.0 - D @ w
    active = z > 0
    C = 0.7
    l2 = SquaredHingeObjective(LocalEngine(data), C, counting=method, pairs="adjacent")
    assert l2.n_pairs == D.shape[0]
    assert l2.value(w) == pytest.approx(0.5 * w @ w + C * np.sum(z[active] ** 2), rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(l2.gradient(w), w - 2 * C * D[active].T @ z[active], rtol=1e-9, atol=1e-9)
    H = np.eye(len(w)) + 2 * C * D[active].T @ D[active]
    np.testing.assert_allclose(l2.hessian_vector(w, v), H @ v, rtol=1e-9, atol=1e-9)
    lam = 0.01
    l1 = HingeRisk(LocalEngine(data), lam, counting=method, pairs="adjacent")
    N = D.shape[0]
    assert l1.value(w) == pytest.approx(lam * w @ w + np.sum(z[active]) / N, rel=1e-10)
    np.testing.assert_allclose(l1.risk_subgradient(w), -D[active].sum(axis=0) / N, rtol=1e-9, atol=1e-12)


def test_lambda_divides_by_the_adjacent_pairs():
    data = random_data(1, m=200)
    engine = LocalEngine(data)
    n_adjacent = SquaredHingeObjective(engine, 1.0, pairs="adjacent").n_pairs
    assert 0 < n_adjacent < data.groups.n_pairs
    lam = 1e-3
    assert resolve_c(engine, None, lam, "bmrm", {"pairs": "adjacent"}) == pytest.approx(1 / (2 * lam * n_adjacent))
    assert resolve_c(engine, None, lam, "bmrm") == pytest.approx(1 / (2 * lam * data.groups.n_pairs))


def test_only_the_ranksvm_solvers_take_the_rule():
    data = random_data(2)
    for solver in ("ncg", "toppush"):
        with pytest.raises(ValueError, match=f"solver '{solver}' has no option 'pairs'"):
            train(data, solver=solver, solver_options={"pairs": "adjacent"})
    with pytest.raises(ValueError, match="option pairs='near': must be one of all, adjacent"):
        train(data, solver="tron", solver_options={"pairs": "near"})


def test_model_file_records_the_rule_and_old_files_read_as_all(tmp_path):
    data = random_data(3, m=150)
    model = train(data, solver="tron", C=0.1, solver_options={"pairs": "adjacent"})
    assert model.pairs == "adjacent" and model.summary["training_pairs"] < data.groups.n_pairs
    model.save(tmp_path / "m.json")
    loaded = RankingModel.load(tmp_path / "m.json")
    assert loaded.pairs == "adjacent" and loaded.options == model.options
    np.testing.assert_array_equal(loaded.weights, model.weights)
    record = json.loads((tmp_path / "m.json").read_text())
    del record["options"]["pairs"]  # a model written before the option
    (tmp_path / "old.json").write_text(json.dumps(record))
    assert RankingModel.load(tmp_path / "old.json").pairs == "all"
    assert train(data, solver="tron", C=0.1).pairs == "all"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    data, _ = make_ranking_data(1500, 8, rows_per_group=25, n_levels=5, density=0.6, seed=4)
    path = tmp_path_factory.mktemp("pp") / "train.parquet"
    write_parquet(path, data)
    return data, str(path)


@pytest.mark.parametrize("placement", ["executor", "driver"])
def test_spark_gives_the_local_model_bit_for_bit(spark, graded, placement):
    data, path = graded
    cases = [("tron", "selection", {"tol": 1e-3}), ("tron", "prsvm+", {"tol": 1e-3}),
             ("bmrm", "selection", {"max_iter": 8})]
    with SparkEngine(spark.read.parquet(path), placement=placement, num_partitions=3) as engine:
        for solver, counting, extra in cases:
            options = {"pairs": "adjacent"}
            model = train(engine, solver=solver, C=0.05, counting=counting, solver_options=options, **extra)
            local = train(data, solver=solver, C=0.05, counting=counting, solver_options=options, **extra)
            assert model.summary["training_pairs"] == local.summary["training_pairs"]
            assert model.summary["iterations"] == local.summary["iterations"], (solver, counting)
            np.testing.assert_array_equal(model.weights, local.weights)


def test_cli_option_help_and_refusal(tmp_path, capsys):
    for command in ("train", "tune"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--pairs {all,adjacent}" in text and "tron, bmrm: train on all preference pairs" in text
    out = tmp_path / "m.json"
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(out), "--pairs",
                 "adjacent", "--max-iter", "3"]) == 0
    model = RankingModel.load(out)
    assert model.pairs == "adjacent"
    assert (f"{model.summary['n_pairs']} pairs, trained on the {model.summary['training_pairs']} adjacent ones"
            in capsys.readouterr().out)
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(tmp_path / "n.json"),
                 "--solver", "ncg", "--pairs", "adjacent"]) == 2
    assert "--pairs is an option of --solver tron or bmrm, not ncg" in capsys.readouterr().err


def test_pyspark_ml_takes_the_rule_as_a_solver_option(spark, graded):
    from sparkrank.ml import LinearRanker

    data, path = graded
    options = {"pairs": "adjacent"}
    fitted = LinearRanker(solver="tron", C=0.05, tol=1e-3, numPartitions=2, solverOptions=options).fit(
        spark.read.parquet(path))
    assert fitted.rankingModel.pairs == "adjacent"
    local = train(data, solver="tron", C=0.05, tol=1e-3, solver_options=options)
    np.testing.assert_array_equal(fitted.weights, local.weights)
