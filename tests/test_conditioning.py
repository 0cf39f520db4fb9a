"""Preconditioned TRON and NCG (issue 11): the diagonal pass, its units, and defaults that reach
the optimum on features whose units range over seven orders of magnitude."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import MQ2008, require
from sparkrank.io.files import read_ranking_data, write_parquet
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.scaled import ScaledEngine
from sparkrank.app.evaluate import evaluate_model
from sparkrank.kernels.losses import SupportPairDiagonalKernel
from sparkrank.objectives.base import hessian_diagonal_estimate
from sparkrank.objectives.ranksvm import SquaredHingeObjective
from sparkrank.training import train, training_objective_value


def rescaled(data, seed: int = 0):
    """``data`` with column k multiplied by a random factor in [1e-3, 1e4] (log-uniform)."""
    factors = 10.0 ** np.random.default_rng(seed).uniform(-3.0, 4.0, data.n_features)
    X = (data.X @ sp.diags(factors)).tocsr()
    X.sort_indices()  # as every reader gives them
    return dataclasses.replace(data, X=X)


@pytest.fixture(scope="module")
def small():
    data, _ = make_ranking_data(400, 7, rows_per_group=20, n_levels=3, density=0.7, seed=3)
    return data


def test_column_moments_are_the_weighted_column_sums(small):
    engine = LocalEngine(small)
    w = np.random.default_rng(0).normal(size=small.n_features)
    m = engine.column_moments(w, SupportPairDiagonalKernel())
    a = SupportPairDiagonalKernel()(small.groups, small.X @ w, None).coef
    X = small.X.toarray()
    np.testing.assert_allclose(m.first, X.T @ a, rtol=1e-13)
    np.testing.assert_allclose(m.second, (X**2).T @ a, rtol=1e-13)
    assert m.stats[0] == a.sum()


def test_scaled_engine_moments_equal_the_scaled_rows(small):
    d = np.linspace(0.5, 3.0, small.n_features)
    w = np.random.default_rng(1).normal(size=small.n_features)
    via_wrapper = ScaledEngine(LocalEngine(small), d).column_moments(w, SupportPairDiagonalKernel())
    direct = LocalEngine(dataclasses.replace(small, X=(small.X @ sp.diags(d)).tocsr())).column_moments(
        w, SupportPairDiagonalKernel())
    np.testing.assert_allclose(via_wrapper.first, direct.first, rtol=1e-12)
    np.testing.assert_allclose(via_wrapper.second, direct.second, rtol=1e-12)


def test_hessian_diagonal_estimate_follows_the_units_and_ignores_offsets(small):
    def estimate(data):
        return hessian_diagonal_estimate(LocalEngine(data), np.zeros(data.n_features), SupportPairDiagonalKernel(), 1.0)

    base = estimate(small)
    s = np.logspace(-3, 4, small.n_features)
    scaled = estimate(dataclasses.replace(small, X=(small.X @ sp.diags(s)).tocsr()))
    np.testing.assert_allclose(scaled - 1.0, s**2 * (base - 1.0), rtol=1e-8)
    # a constant added to a feature changes no pair difference, so not the estimate either
    shifted = estimate(dataclasses.replace(small, X=sp.csr_matrix(small.X.toarray() + 5.0)))
    np.testing.assert_allclose(shifted, base, rtol=1e-8)
    # and it is within a factor 2 of the exact diagonal Σ_pairs 2(x_u − x_l)² on average
    from conftest import explicit_pairs

    up, lo = explicit_pairs(small.groups.labels, small.groups.offsets)
    X = small.X.toarray()
    exact = 1.0 + 2.0 * ((X[up] - X[lo]) ** 2).sum(axis=0)
    assert np.all(base / exact < 2.0) and np.all(base / exact > 0.5)


@pytest.mark.parametrize("solver", ["tron", "ncg"])
def test_preconditioned_and_plain_reach_the_same_optimum(small, solver):
    # unit-scale features: on rescaled ones plain CG's Euclidean rule would stop (even at
    # 1e-10) before the small-unit weights converge, which is the defect preconditioning fixes
    data = small
    engine = LocalEngine(data)
    exact = {"gradient": "direct"} if solver == "ncg" else {}  # the fast erfc gradient is ε-exact only
    pre = train(data, solver=solver, tol=1e-10, max_iter=5000, solver_options=exact)
    plain = train(data, solver=solver, tol=1e-10, max_iter=20000, solver_options={**exact, "precondition": False})
    assert "precondition" not in pre.options and plain.options["precondition"] is False
    f_pre, f_plain = training_objective_value(pre, engine), training_objective_value(plain, engine)
    assert f_pre == pytest.approx(f_plain, rel=1e-9)
    np.testing.assert_allclose(pre.weights, plain.weights, rtol=1e-4, atol=1e-6 * np.abs(pre.weights).max())


def _default_vs_tight(train_data, test_data, solver, train_on=None):
    """Default and tight-tolerance models, their test pairwise accuracy and training objective."""
    train_on = train_data if train_on is None else train_on
    engine, test_engine = LocalEngine(train_data), LocalEngine(test_data)
    tight = train(train_data, solver=solver, tol=1e-8, max_iter=5000)
    default = train(train_on, solver=solver)
    acc = [evaluate_model(m, test_engine)["pairwise_accuracy"] for m in (default, tight)]
    obj = [training_objective_value(m, engine) for m in (default, tight)]
    return default, acc, obj


@pytest.mark.parametrize("solver", ["tron", "ncg"])
def test_default_tolerance_reaches_the_optimum_on_rescaled_mq2008(solver):
    train_data = rescaled(read_ranking_data(require(MQ2008 / "train.txt")))
    test_data = rescaled(read_ranking_data(MQ2008 / "test.txt", n_features=train_data.n_features))
    default, (acc, acc_tight), (obj, obj_tight) = _default_vs_tight(train_data, test_data, solver)
    assert default.summary["converged"]
    assert abs(acc - acc_tight) <= 0.002
    assert (obj - obj_tight) / obj_tight <= 1e-4


@pytest.fixture(scope="module")
def rescaled_parquet(tmp_path_factory):
    data, _ = make_ranking_data(3000, 10, rows_per_group=30, n_levels=4, density=0.6, seed=21)
    data = rescaled(data, seed=2)
    path = tmp_path_factory.mktemp("cond") / "train.parquet"
    write_parquet(path, data)
    return data, str(path)


@pytest.mark.parametrize("placement", ["executor", "driver"])
def test_spark_column_moments_equal_local_bitwise(spark, rescaled_parquet, placement):
    from sparkrank.engines.spark.engine import SparkEngine

    data, path = rescaled_parquet
    w = np.random.default_rng(5).normal(size=data.n_features) * 1e-3
    local = LocalEngine(data).column_moments(w, SupportPairDiagonalKernel())
    with SparkEngine(spark.read.parquet(path), placement=placement, num_partitions=3) as engine:
        remote = engine.column_moments(w, SupportPairDiagonalKernel())
    np.testing.assert_array_equal(remote.first, local.first)
    np.testing.assert_array_equal(remote.second, local.second)
    np.testing.assert_array_equal(remote.stats, local.stats)


@pytest.mark.parametrize("solver", ["tron", "ncg"])
def test_spark_default_reaches_the_optimum_on_rescaled_features_and_equals_local(spark, rescaled_parquet, solver):
    from sparkrank.engines.spark.engine import SparkEngine

    data, path = rescaled_parquet
    test_data = rescaled(make_ranking_data(1500, 10, rows_per_group=30, n_levels=4, density=0.6, seed=22)[0], seed=2)
    with SparkEngine(spark.read.parquet(path), num_partitions=3) as engine:
        default, (acc, acc_tight), (obj, obj_tight) = _default_vs_tight(data, test_data, solver, train_on=engine)
    local = train(data, solver=solver)
    assert default.summary["converged"]
    assert default.summary["iterations"] == local.summary["iterations"]
    np.testing.assert_array_equal(default.weights, local.weights)
    assert abs(acc - acc_tight) <= 0.002
    assert (obj - obj_tight) / obj_tight <= 1e-4


def test_tron_preconditioning_costs_no_diagonal_pass_of_its_own(small):
    """With ``precondition`` (TRON's default) every value pass brings the diagonal's moments along
    (SquaredHingeDiagonalKernel), so a cold-started fit runs no moments pass at all, and its model
    is the one a pass per diagonal gives (w = 0, then each accepted step), bit for bit."""
    calls = {"moments": 0}

    class Counting(LocalEngine):
        def column_moments(self, vector, kernel):
            calls["moments"] += 1
            return super().column_moments(vector, kernel)

    from sparkrank.solvers.tron import tron

    engine = Counting(small)
    res = tron(SquaredHingeObjective(engine, 1.0), tol=1e-6)
    assert res.converged and res.iterations >= 3
    assert calls["moments"] == 0
    passes = engine.passes
    engine = Counting(small)
    # an objective told no diagonal is coming: each diagonal TRON asks for then takes a pass
    ref = tron(SquaredHingeObjective(engine, 1.0, precondition=False), tol=1e-6)
    assert calls["moments"] == 1 + ref.iterations
    assert engine.passes == passes + 1 + ref.iterations
    assert ref.iterations == res.iterations
    assert ref.w.tobytes() == res.w.tobytes()