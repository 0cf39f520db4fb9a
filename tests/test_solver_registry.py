"""The solver registry: option checking, and a toy fifth solver added with one definition plus
one registry entry that the CLI, train(), tune, LinearRanker and the report all pick up."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from sparkrank.cli import main
from sparkrank.datasets import make_ranking_data
from sparkrank.objectives.ranksvm import SquaredHingeObjective
from sparkrank.solvers.registry import SOLVERS, Option, SolverSpec, register, solver_spec, unregister
from sparkrank.solvers.result import IterationRecord, SolverResult
from sparkrank.training import train


# -- the one new definition: plain gradient descent with a fixed step ----------------------------
def gradient_descent(objective, w0=None, *, tol, max_iter, callback=None, step=0.5):
    """Minimise ``objective`` by ``w ← w − (step/L)∇f(w)``, ``L`` the trace of the Hessian-diagonal
    estimate at 0 (a bound on the largest eigenvalue when the estimate is exact: H is PSD)."""
    t0 = time.perf_counter()
    w = np.zeros(objective.n_features) if w0 is None else np.array(w0, dtype=np.float64)
    lipschitz = float(np.sum(objective.hessian_diagonal(np.zeros_like(w))))
    g = objective.gradient(w)
    g0 = float(np.linalg.norm(objective.gradient(np.zeros_like(w))))
    history, it, ratio = [], 0, float(np.linalg.norm(g)) / g0
    while ratio > tol and it < max_iter:
        it += 1
        w = w - (step / lipschitz) * g
        g = objective.gradient(w)
        ratio = float(np.linalg.norm(g)) / g0
        record = IterationRecord(it, objective.value(w), ratio, "grad_ratio", True, time.perf_counter() - t0,
                                 objective.progress(w), w=w)
        if callback is not None:
            callback(record)
        history.append(record.as_dict())
    return SolverResult(w, objective.value(w), it, ratio <= tol, history, time.perf_counter() - t0,
                        "gradient norm below tolerance" if ratio <= tol else f"reached max_iter={max_iter}",
                        "gradient ratio", ratio)


# -- the one registry entry ------------------------------------------------------------------------
TOY = SolverSpec("gd", "L2 squared hinge (lee-lin2014)", "L2-loss RankSVM, plain gradient descent (toy)",
                 SquaredHingeObjective, gradient_descent, 300, 1e-2, "relative gradient norm",
                 options=(Option("step", float, 0.5, "step as a fraction of 1/L", low=0.0, high=2.0,
                                 target="optimiser"),),
                 takes_lambda=True, counts_pairs=True, resumes=False)


@pytest.fixture
def toy_solver():
    register(TOY)
    yield TOY
    unregister(TOY.name)


@pytest.fixture(scope="module")
def data():
    return make_ranking_data(200, 5, rows_per_group=20, density=1.0, seed=11)[0]


def test_unknown_or_bad_options_are_value_errors_naming_the_option(data):
    with pytest.raises(ValueError, match=r"solver 'tron' has no option 'qp'; its options: precondition"):
        train(data, solver="tron", solver_options={"qp": 1})
    with pytest.raises(ValueError, match=r"gradient='exact': must be one of fast, direct"):
        train(data, solver="ncg", solver_options={"gradient": "exact"})
    with pytest.raises(ValueError, match=r"epsilon=2\.0: must be a finite number in \[1e-13, 1\)"):
        train(data, solver="ncg", solver_options={"epsilon": 2.0})
    with pytest.raises(ValueError, match=r"precondition='no': must be true or false"):
        train(data, solver="tron", solver_options={"precondition": "no"})
    with pytest.raises(ValueError, match="solver 'bmrm' has no option 'scope'; its options: inactive_limit"):
        train(data, solver="bmrm", solver_options={"scope": "group"})
    with pytest.raises(ValueError, match="unknown solver 'sgd'; choose one of tron, bmrm, ncg, toppush"):
        solver_spec("sgd")


def test_bad_option_fails_before_the_engine_runs(data):
    class Untouchable:
        summary = None

        def __getattr__(self, name):
            raise AssertionError(f"the engine was used ({name}) before the options were checked")

    with pytest.raises(ValueError, match="has no option 'qp'"):
        train(Untouchable(), solver="tron", solver_options={"qp": 1})


def test_cli_options_are_generated_from_the_registry(toy_solver, capsys, tmp_path):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--help"])  # `sparkrank train --help`
    assert stop.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert "gd: L2-loss RankSVM, plain gradient descent (toy)" in help_text
    assert "gd: step as a fraction of 1/L (default 0.5)" in help_text
    assert "{tron,bmrm,ncg,toppush,gd}" in help_text
    assert "tron, ncg: diagonally preconditioned CG" in help_text
    out = tmp_path / "gd.json"
    common = ["train", "--input", "sample:train", "--model", str(out), "--max-iter", "5", "--engine", "local", "-q"]
    assert main([*common, "--solver", "gd", "--step", "0.7"]) == 0
    assert json.loads(out.read_text())["options"] == {"step": 0.7}
    capsys.readouterr()
    assert main([*common, "--solver", "tron", "--step", "0.7"]) == 2
    assert "error: --step is an option of --solver gd, not tron" in capsys.readouterr().err


def test_toy_solver_trains_through_train_and_reaches_tron_optimum(toy_solver, data):
    model = train(data, solver="gd", C=0.05, tol=1e-6, max_iter=5000, solver_options={"step": 1.0})
    assert model.summary["converged"] and model.options == {"step": 1.0}
    reference = train(data, solver="tron", C=0.05, tol=1e-8)
    np.testing.assert_allclose(model.weights, reference.weights, rtol=1e-4, atol=1e-6)
    history = model.summary["history"]
    assert [r["iter"] for r in history] == list(range(1, model.summary["iterations"] + 1))
    assert all(r["measure_name"] == "grad_ratio" and "support_pairs" in r for r in history)
    # λ works because the entry says so
    lam_model = train(data, solver="gd", lam=1e-3, max_iter=50)
    assert lam_model.lam == pytest.approx(1e-3)
    with pytest.raises(ValueError, match=r"step=3\.0: must be a finite number in \(0, 2\)"):
        train(data, solver="gd", solver_options={"step": 3.0})


def test_toy_solver_in_tune_and_report(toy_solver, data, tmp_path):
    from sparkrank.report import write_training_report
    from sparkrank.selection import tune

    result = tune(data, folds=2, C_grid=[0.01, 0.1], solver="gd", max_iter=100)
    assert result.model is not None and result.model.solver == "gd"
    assert len(result.rows) == 2
    paths = write_training_report(result.model, str(tmp_path))
    assert [p.name for p in paths] == ["convergence.png"] and paths[0].stat().st_size > 0


def test_toy_solver_in_linear_ranker(toy_solver, spark, data):
    from sparkrank.ml import LinearRanker

    rows = [(float(y), int(q), [float(v) for v in x])
            for y, q, x in zip(data.labels, np.repeat(data.qids, data.groups.group_sizes), data.X.toarray())]
    df = spark.createDataFrame(rows, ["label", "qid", "features"])
    with pytest.raises(ValueError, match="has no option 'qp'"):
        LinearRanker(solver="gd", solverOptions={"qp": 1}).fit(df)
    fitted = LinearRanker(solver="gd", C=0.1, maxIter=12, numPartitions=2).fit(df)  # every step a Spark pass
    local = train(data, solver="gd", C=0.1, max_iter=12)
    np.testing.assert_array_equal(fitted.weights, local.weights)
    summary = fitted.summary
    assert summary.totalIterations == 12 and len(summary.objectiveHistory) == 12
    assert all(math.isfinite(f) for f in summary.objectiveHistory)


def test_every_solver_records_the_same_shape(data):
    for name in SOLVERS:
        model = train(data, solver=name, C=0.5, max_iter=4)
        for r in model.summary["history"]:
            record = IterationRecord.from_dict(r)
            assert record.measure_name in ("grad_ratio", "gap", "relative_gap")
            assert not math.isnan(record.measure) and record.seconds >= 0
            if name != "ncg":  # RankNCG's fast gradient does not compute the objective
                assert math.isfinite(record.objective)


def test_summary_objective_history_reads_records(data):
    from sparkrank.ml.model import LinearRankerSummary

    toppush = train(data, solver="toppush", C=0.5, max_iter=20)
    summary = LinearRankerSummary.from_model(toppush)
    assert len(summary.objectiveHistory) == len(toppush.summary["history"]) > 0  # records carry the objective
    assert summary.objectiveHistory == [r["primal_at_search_point"] for r in toppush.summary["history"]]
    tron = train(data, solver="tron", C=0.5)
    accepted = {"iter": 1, "objective": 5.0, "grad_ratio": 0.1, "measure_name": "grad_ratio", "accepted": True,
                "seconds": 0.1}
    rejected = {**accepted, "objective": 5.0, "accepted": False, "seconds": 0.2}
    better = {**accepted, "iter": 2, "objective": 4.0, "seconds": 0.3}
    tron.summary["history"] = [accepted, rejected, better]
    assert LinearRankerSummary.from_model(tron).objectiveHistory == [5.0, 4.0]  # a rejected step is no iteration


def test_an_option_for_both_reaches_the_objective_and_the_optimiser(data):
    """TRON's ``precondition`` goes to the optimiser (preconditioned CG) and to the objective
    (whose value passes then bring the diagonal's moments along, or not)."""
    from sparkrank.engines.local import LocalEngine
    from sparkrank.kernels.losses import SquaredHingeDiagonalKernel, SquaredHingeKernel
    from sparkrank.training import make_objective

    spec = solver_spec("tron")
    for precondition in (True, False):
        objective_options, optimiser_options = spec.split_options({"precondition": precondition})
        assert objective_options == optimiser_options == {"precondition": precondition}
    with LocalEngine(data) as engine:
        kinds = {p: type(make_objective(engine, "tron", 1.0, precondition=p)._value_kernel()) for p in (True, False)}
    assert kinds == {True: SquaredHingeDiagonalKernel, False: SquaredHingeKernel}
    assert solver_spec("ncg").split_options({"precondition": False}) == ({}, {"precondition": False})
