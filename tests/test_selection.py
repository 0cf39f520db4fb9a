"""Model selection over C: warm starts, group-wise folds, best-C choice, CLI tune (local and Spark)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sparkrank.cli import main
from sparkrank.data.block import DataError, RankingData
from sparkrank.data.folds import group_folds
from sparkrank.evaluation.names import metric_ks
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.evaluation import evaluate_ranking
from sparkrank.model import RankingModel
from sparkrank.selection import (
    DEFAULT_C_GRID,
    SparkSource,
    c_grid_from_range,
    check_c_grid,
    load_tune_result,
    local_split,
    take_groups,
    tune,
)
from sparkrank.solvers.registry import SOLVERS

GRID = [2.0**e for e in range(-7, 2)]


def train_valid(n_rows: int, n_features: int, seed: int, **kw) -> tuple[RankingData, RankingData]:
    """One draw (one true utility), its groups split 70/30 into training and validation."""
    data, _ = make_ranking_data(n_rows, n_features, seed=seed, **kw)
    cut = int(0.7 * data.groups.n_groups)
    return take_groups(data, np.arange(cut)), take_groups(data, np.arange(cut, data.groups.n_groups))


@pytest.fixture(scope="module")
def split():
    return train_valid(1300, 8, seed=3, rows_per_group=25, density=0.6)


def test_default_grid_and_grid_checks():
    assert DEFAULT_C_GRID[0] == 2.0**-15 and DEFAULT_C_GRID[-1] == 2.0**10 and len(DEFAULT_C_GRID) == 26
    assert check_c_grid([4, 0.5, 1, 0.5]) == [0.5, 1.0, 4.0]
    assert c_grid_from_range(-2, 1) == [0.25, 0.5, 1.0, 2.0]
    with pytest.raises(ValueError, match="positive"):
        check_c_grid([1.0, -2.0])
    with pytest.raises(ValueError, match="empty"):
        c_grid_from_range(3, 1)
    assert metric_ks("ndcg@7") == (7,)
    with pytest.raises(ValueError, match="unknown metric"):
        metric_ks("ndcg@0")


def test_warm_start_gives_the_cold_start_models_in_fewer_iterations(split):
    data, valid = split
    common = dict(valid=valid, C_grid=GRID, tol=1e-6, keep_models=True)
    warm = tune(data, **common)
    cold = tune(data, cold_start=True, **common)
    assert warm.total_iterations < cold.total_iterations
    for C in GRID:
        (w_model,), (c_model,) = warm.models[C], cold.models[C]
        scale = np.linalg.norm(c_model.weights)
        np.testing.assert_allclose(w_model.weights, c_model.weights, atol=1e-4 * scale)
        assert w_model.summary["objective"] == pytest.approx(c_model.summary["objective"], rel=1e-8)
    for rw, rc in zip(warm.rows, cold.rows):
        assert rw.metric == pytest.approx(rc.metric, abs=1e-3)
    assert cold.rows[0].iterations == warm.rows[0].iterations  # the first C starts from zero either way


def test_kept_rows_are_the_previous_solution(split):
    data, valid = split
    # at the default tolerance, TRON's rule relative to ‖∇f(0)‖ (which grows with C) is met by
    # the previous C's solution from some C on: those rows are marked and keep the model
    result = tune(data, valid=valid, C_grid=[2.0**e for e in range(-2, 8)], keep_models=True)
    kept = [i for i, r in enumerate(result.rows) if r.kept]
    assert kept and 0 not in kept
    for i in kept:
        assert result.rows[i].iterations == 0
        np.testing.assert_array_equal(result.models[result.rows[i].C][0].weights,
                                      result.models[result.rows[i - 1].C][0].weights)
    assert "(kept)" in result.table() and result.to_dict()["rows"][kept[0]]["kept"] is True
    cold = tune(data, valid=valid, C_grid=[2.0**e for e in range(-2, 8)], cold_start=True)
    assert not any(r.kept for r in cold.rows)


def test_best_c_is_the_best_validation_metric_and_its_model(split):
    data, valid = split
    result = tune(data, valid=valid, C_grid=GRID, metric="mean_ndcg", keep_models=True)
    metrics = [r.metric for r in result.rows]
    assert [r.C for r in result.rows] == GRID
    assert result.best_C == GRID[int(np.argmax(metrics))]
    assert result.best_row.metric == max(metrics)
    # the row's metric is the metric of that model on the validation rows, and it is the returned model
    model = result.models[result.best_C][0]
    assert result.model is model
    assert result.model.C == result.best_C
    direct = evaluate_ranking(valid.groups, model.predict(valid))["mean_ndcg"]
    assert result.best_row.metric == pytest.approx(direct, abs=1e-12)
    for row in result.rows:
        assert row.iterations == row.fold_iterations[0] and row.fold_metrics == [row.metric]


def test_ties_pick_the_smallest_c(split):
    data, valid = split
    # all-zero validation features: every model scores every row 0, AUC is 0.5 for every C
    flat = RankingData.from_arrays(np.zeros((valid.n_rows, valid.n_features)), valid.labels,
                                   np.repeat(valid.qids, valid.groups.group_sizes))
    result = tune(data, valid=flat, C_grid=[0.5, 0.125, 2.0], metric="auc")
    assert [r.metric for r in result.rows] == [0.5, 0.5, 0.5]
    assert result.best_C == 0.125


def test_group_folds_keep_groups_whole_and_cover_each_group_once():
    rng = np.random.default_rng(0)
    # groups scattered over the input (not contiguous), string ids
    qid = rng.choice([f"q{i}" for i in range(23)], size=400)
    X = rng.random((400, 5))
    y = rng.integers(0, 3, size=400).astype(float)
    data = RankingData.from_arrays(X, y, qid)
    k = 4
    folds = local_split(data, k, seed=7)
    held = [set(va.qids) for _, va in folds]
    assert set().union(*held) == set(data.qids)
    assert sum(len(h) for h in held) == data.groups.n_groups  # disjoint
    # fold i holds exactly the groups whose id hashes to i (sparkrank.data.folds, as on Spark)
    fold_of = dict(zip(data.qids, group_folds(data.qids, k, 7)))
    assert held == [{q for q, f in fold_of.items() if f == i} for i in range(k)]
    for tr, va in folds:
        assert set(tr.qids) | set(va.qids) == set(data.qids) and not set(tr.qids) & set(va.qids)
        for part in (tr, va):
            # every group has all its input rows (the same feature rows as in the input), and the
            # part's own input order is a valid permutation of its rows
            assert sorted(part.row_order.tolist()) == list(range(part.n_rows))
            for g, q in enumerate(part.qids):
                rows = slice(part.groups.offsets[g], part.groups.offsets[g + 1])
                np.testing.assert_array_equal(part.X[rows].toarray(), X[qid == q])  # input order within a group
                np.testing.assert_array_equal(part.groups.labels[rows], y[qid == q])


def test_take_groups_reorders_whole_groups(split):
    data, _ = split
    part = take_groups(data, np.array([2, 0]))
    o = data.groups.offsets
    np.testing.assert_array_equal(part.labels, np.concatenate([data.labels[o[2]:o[3]], data.labels[o[0]:o[1]]]))
    assert list(part.qids) == [data.qids[2], data.qids[0]]
    assert part.groups.n_pairs == data.groups.pairs_per_group[[0, 2]].sum()


def test_kfold_refits_on_all_training_data(split):
    data, _ = split
    result = tune(data, folds=3, C_grid=GRID[:4], metric="NDCG@5", seed=1)
    assert result.mode == "kfold" and result.folds == 3 and result.metric == "ndcg@5"
    assert all(len(r.fold_metrics) == 3 and len(r.fold_iterations) == 3 for r in result.rows)
    for r in result.rows:
        assert r.metric == pytest.approx(np.mean(r.fold_metrics))
        assert r.iterations == sum(r.fold_iterations)
    assert result.model.summary["n_rows"] == data.n_rows and result.model.C == result.best_C
    assert sum(h["n_groups"] for h in result.held_out) == data.groups.n_groups
    assert sum(h["n_rows"] for h in result.held_out) == data.n_rows
    d = json.loads(json.dumps(result.to_dict()))
    assert d["best_C"] == result.best_C and d["best_metric"] == result.best_row.metric
    assert d["best_model"]["C"] == result.best_C and len(d["rows"]) == 4


@pytest.mark.parametrize("solver", ["bmrm", "ncg", "toppush"])
def test_other_registered_solvers_tune(solver):
    if solver not in SOLVERS:
        pytest.skip(f"solver {solver} not registered")
    data, valid = train_valid(600, 5, seed=5, rows_per_group=20, n_levels=2, density=0.7)
    # TopPush's solver always starts from the dual origin, so it is compared on cold starts
    cold = solver == "toppush"
    result = tune(data, valid=valid, solver=solver, C_grid=[2.0**-6, 2.0**-3], max_iter=60, cold_start=cold)
    assert result.solver == solver and result.model.solver == solver
    assert result.rows[0].iterations > 0 and all(0.5 < r.metric <= 1.0 for r in result.rows)
    assert result.best_C == max(result.rows, key=lambda r: r.metric).C


def test_clear_errors(split):
    data, valid = split
    with pytest.raises(ValueError, match="exactly one"):
        tune(data, valid=valid, folds=3)
    with pytest.raises(ValueError, match="exactly one"):
        tune(data)
    with pytest.raises(DataError, match="at least 100 query groups"):
        tune(data, folds=100)
    one_ranking, _ = make_ranking_data(60, 3, rows_per_group=None, seed=0)
    with pytest.raises(DataError, match="global ranking"):
        tune(one_ranking, folds=2)
    with pytest.raises(TypeError, match="cannot be split"):
        tune(LocalEngine(data), folds=2)
    with pytest.raises(ValueError, match="unknown solver"):
        tune(data, valid=valid, solver="nope")


def test_cli_tune_local_end_to_end(tmp_path, capsys):
    out = tmp_path / "tune.json"
    rc = main(["tune", "--input", "sample:train", "--valid", "sample:test", "--C-range", "-6", "-3",
               "--metric", "ndcg@10", "--engine", "local", "--model", str(tmp_path / "best.json"),
               "--output-json", str(out), "-q"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "best C" in text and "ndcg@10" in text and "<- best" in text
    d = load_tune_result(out)
    assert [r["C"] for r in d["rows"]] == c_grid_from_range(-6, -3)
    best = max(d["rows"], key=lambda r: r["metric"])
    assert d["best_C"] == best["C"]
    model = RankingModel.load(tmp_path / "best.json")
    assert model.C == d["best_C"]
    assert f"{d['best_C']:.6g}" in text


def test_cli_tune_kfold_local(tmp_path, capsys):
    rc = main(["tune", "--input", "sample:train", "--folds", "2", "--C-grid", "0.01", "0.1",
               "--engine", "local", "--output-json", str(tmp_path / "t.json"), "-q"])
    assert rc == 0
    d = json.loads((tmp_path / "t.json").read_text())
    assert d["mode"] == "kfold" and d["folds"] == 2 and all(len(r["fold_metrics"]) == 2 for r in d["rows"])
    assert "±" in capsys.readouterr().out


def test_cli_tune_bad_range_is_a_clear_error(capsys):
    rc = main(["tune", "--input", "sample:train", "--valid", "sample:test", "--C-range", "3", "1",
               "--engine", "local", "-q"])
    assert rc == 2
    assert "C range is empty" in capsys.readouterr().err


def _view_group_ids(engine) -> list:
    """The group id of every row of a Spark engine's blocks."""
    from sparkrank.engines.spark import tasks

    return [q for _, _, ids, _ in engine._refs_rdd.mapPartitions(tasks.labels_task()).collect() for q in ids]


@pytest.mark.parametrize("placement", ["executor", "driver"])
def test_spark_fold_views_hold_the_groups_of_the_hash_rule(spark, placement):
    """A fold view's blocks, derived on the executors from the blocks of all rows, hold exactly
    the groups the Spark column rule (and the local one) puts in its folds, as wide as all rows."""
    from sparkrank.engines.spark.folds import fold_views
    from sparkrank.selection.folds import OpenedEngine

    rng = np.random.default_rng(1)
    rows = [(float(rng.integers(0, 3)), int(q), [float(v) for v in rng.random(3)])
            for q in rng.integers(0, 30, size=300)]
    df = spark.createDataFrame(rows, ["label", "qid", "features"])
    src = SparkSource(df, engine_options={"num_partitions": 3, "placement": placement})
    k = 3
    fold_of = {}
    for r in df.select("qid", src.fold_column(k, seed=5).alias("fold")).collect():
        assert fold_of.setdefault(r.qid, r.fold) == r.fold, "a group was split across folds"
    ids = sorted(fold_of)
    assert dict(zip(ids, group_folds(ids, k, seed=5).tolist())) == fold_of  # one rule on both engines
    with OpenedEngine(src) as whole:
        held_rows = 0
        for i in range(k):
            tr, va = fold_views(whole, k, i, seed=5)
            try:
                held, kept = _view_group_ids(va), _view_group_ids(tr)
                assert set(held) == {q for q, f in fold_of.items() if f == i}
                assert set(kept) == {q for q, f in fold_of.items() if f != i}
                assert len(held) + len(kept) == len(rows)
                assert tr.summary.n_groups + va.summary.n_groups == whole.summary.n_groups
                assert tr.summary.n_features == va.summary.n_features == whole.summary.n_features
                held_rows += va.summary.n_rows
            finally:
                va.close()
                tr.close()
        assert held_rows == len(rows)
    no_qid = SparkSource(df.drop("qid"), qid_col=None)
    with pytest.raises(DataError, match="query-id column"):
        tune(no_qid, folds=2, C_grid=[1.0])


def test_spark_kfold_reads_the_source_once_and_an_empty_fold_is_an_error_first(spark, monkeypatch):
    """tune --folds on Spark builds one engine from the source (the parts are its fold views, the
    refit runs on it) and refuses a fold without groups before any fit, in the local words."""
    from sparkrank.engines.spark.engine import SparkEngine

    rng = np.random.default_rng(2)
    rows = [(float(rng.integers(0, 3)), int(q), [float(v) for v in rng.random(3)])
            for q in rng.integers(0, 12, size=150)]
    df = spark.createDataFrame(rows, ["label", "qid", "features"])
    arranged = []
    arrange = SparkEngine._arrange
    monkeypatch.setattr(SparkEngine, "_arrange", lambda self, frame: arranged.append(1) or arrange(self, frame))
    result = tune(SparkSource(df, engine_options={"num_partitions": 2}), folds=3, C_grid=[0.1, 1.0], seed=0)
    assert len(arranged) == 1 and result.model is not None
    local = tune(RankingData.from_arrays(np.array([r[2] for r in rows]), np.array([r[0] for r in rows]),
                                         np.array([r[1] for r in rows])), folds=3, C_grid=[0.1, 1.0], seed=0)
    np.testing.assert_array_equal(result.model.weights, local.model.weights)
    for a, b in zip(local.rows, result.rows):
        assert a.fold_metrics == b.fold_metrics
    # two groups cannot fill three folds: the local engine's message, before any engine pass
    two = df.filter(df.qid.isin(int(rows[0][1]), int(rows[1][1])))
    messages = []
    for source in (SparkSource(two), _local_rows(two)):
        with pytest.raises(DataError) as err:
            tune(source, folds=3, C_grid=[1.0])
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "3-fold" in messages[0]


def _local_rows(df) -> RankingData:
    rows = df.collect()
    return RankingData.from_arrays(np.array([r.features for r in rows]), np.array([r.label for r in rows]),
                                   np.array([r.qid for r in rows]))


def test_cli_tune_on_spark_matches_local(spark, tmp_path, capsys):
    grid = ["--C-grid", "0.03125", "0.125"]
    common = ["--input", "sample:train", "--valid", "sample:test", *grid, "-q"]
    assert main(["tune", *common, "--engine", "local", "--output-json", str(tmp_path / "local.json")]) == 0
    assert main(["tune", *common, "--engine", "spark", "--partitions", "2",
                 "--output-json", str(tmp_path / "spark.json")]) == 0
    local = load_tune_result(tmp_path / "local.json")
    on_spark = load_tune_result(tmp_path / "spark.json")
    assert on_spark["best_C"] == local["best_C"]
    for a, b in zip(local["rows"], on_spark["rows"]):
        assert a["iterations"] == b["iterations"]
        assert b["metric"] == pytest.approx(a["metric"], abs=1e-9)
        assert b["objective"] == pytest.approx(a["objective"], rel=1e-9)
    assert not math.isnan(on_spark["best_metric"])


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_cli_tune_refuses_validation_data_wider_than_the_training_data(spark, tmp_path, capsys, engine):
    """As evaluate refuses it for the model: before any C is trained, on both engines alike."""
    narrow, wide = tmp_path / "narrow.txt", tmp_path / "wide.txt"
    narrow.write_text("".join(f"{i % 3} qid:{i // 4} 1:{i} 2:{i % 5}\n" for i in range(16)))
    wide.write_text("".join(f"{i % 3} qid:{i // 4} 1:{i} 4:{i % 5}\n" for i in range(16)))
    capsys.readouterr()
    assert main(["tune", "--engine", engine, "--input", str(narrow), "--valid", str(wide), "--C-grid", "1",
                 "-q"]) == 2
    out, err = capsys.readouterr()
    assert err.strip() == (f"sparkrank tune: error: --valid {wide} has 4 feature columns but --input {narrow} has "
                           "only 2: a model trained on it has no weights for the features beyond")
    assert "best C" not in out


def test_kfold_on_spark_trains_each_fold_and_refits(spark, split):
    data, _ = split
    qid = np.repeat(data.qids, data.groups.group_sizes)
    X = data.X.toarray()
    df = spark.createDataFrame([(float(y), int(q), [float(v) for v in x]) for y, q, x in zip(data.labels, qid, X)],
                               ["label", "qid", "features"])
    result = tune(SparkSource(df, engine_options={"num_partitions": 2}), folds=2, C_grid=[0.05, 0.2], seed=3)
    assert result.mode == "kfold" and all(len(r.fold_iterations) == 2 for r in result.rows)
    assert result.model.summary["n_rows"] == data.n_rows
    assert result.model.summary["n_pairs"] == data.groups.n_pairs
    # the hash folds held out every group exactly once
    for key, total in (("n_rows", data.n_rows), ("n_groups", data.groups.n_groups), ("n_pairs", data.groups.n_pairs)):
        assert sum(h[key] for h in result.held_out) == total
    assert result.best_C == max(result.rows, key=lambda r: r.metric).C
    # one fold rule (sparkrank.data.folds): the local engine holds out the same groups per fold
    local = tune(data, folds=2, C_grid=[0.05, 0.2], seed=3)
    assert local.held_out == result.held_out
    for a, b in zip(local.rows, result.rows):
        np.testing.assert_allclose(a.fold_metrics, b.fold_metrics, rtol=1e-9)
