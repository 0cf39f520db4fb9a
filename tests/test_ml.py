"""The pyspark.ml API: LinearRanker / LinearRankerModel / RankingEvaluator, persistence,
Pipeline, group-preserving CrossValidator folds, exact standardization, warm start and
checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparkrank import train
from sparkrank.conventions import c_from_lambda
from sparkrank.data.block import DataError, RankingData
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.scaled import ScaledEngine
from sparkrank.evaluation import evaluate_ranking
from sparkrank.standardization import Standardization

#: very different column scales, so standardization changes the fit
COLUMN_SCALES = np.array([1.0, 20.0, 0.05, 300.0, 3.0])


@pytest.fixture(scope="module")
def local_data() -> RankingData:
    data, _ = make_ranking_data(240, 5, rows_per_group=20, density=0.7, seed=3)
    X = sp.csr_matrix(data.X.multiply(COLUMN_SCALES[None, :]))
    qid = np.repeat(data.qids, data.groups.group_sizes)
    return RankingData.from_arrays(X, data.labels, qid)


def _rows(data: RankingData):
    qid = np.repeat(data.qids, data.groups.group_sizes)
    X = data.X.toarray()
    return [(float(y), int(q), [float(v) for v in x], i) for i, (y, q, x) in enumerate(zip(data.labels, qid, X))]


@pytest.fixture(scope="module")
def df(spark, local_data):
    """Features as a Spark ML vector column (sparse and dense rows mixed)."""
    from pyspark.ml.linalg import Vectors

    rows = []
    for y, q, x, i in _rows(local_data):
        nz = [j for j, v in enumerate(x) if v != 0.0]
        vec = Vectors.sparse(len(x), nz, [x[j] for j in nz]) if i % 2 else Vectors.dense(x)
        rows.append((y, q, vec, i))
    return spark.createDataFrame(rows, ["label", "qid", "features", "row"]).cache()


@pytest.fixture(scope="module")
def fitted(df):
    """One converged Spark fit shared by the tests that only need some fitted model."""
    from sparkrank.ml import LinearRanker

    return LinearRanker(solver="tron", C=0.1, numPartitions=2).fit(df)


def _scores(scored, col="prediction") -> np.ndarray:
    rows = scored.select("row", col).collect()
    out = np.empty(len(rows))
    for r in rows:
        out[r.row] = r[col]
    return out


def _local_scores(model, data: RankingData) -> np.ndarray:
    return data.to_input_order(model.predict(data))


# -- fit, transform, persistence --------------------------------------------------------------
def test_fit_save_load_transform_gives_identical_scores(spark, df, local_data, fitted, tmp_path):
    from sparkrank.ml import LinearRankerModel

    model = fitted
    local = train(local_data, solver="tron", C=0.1)
    np.testing.assert_allclose(model.weights, local.weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.coefficients.toArray(), local.weights, rtol=1e-9, atol=1e-12)
    assert model.numFeatures == 5
    summary = model.summary
    assert summary.totalIterations == len(summary.objectiveHistory) > 0
    assert summary.numPairs == local_data.groups.n_pairs and summary.converged
    text = repr(summary)
    assert "\n" not in text and text.startswith("LinearRankerSummary(totalIterations=")
    assert f"numPairs={summary.numPairs}" in text and len(text) < 300

    scored = model.transform(df)
    assert scored.columns == df.columns + ["prediction"]  # every input column kept
    scores = _scores(scored)
    np.testing.assert_allclose(scores, _local_scores(model.rankingModel, local_data), rtol=1e-12)

    path = str(tmp_path / "ranker-model")
    model.write().overwrite().save(path)
    loaded = LinearRankerModel.load(path)
    assert loaded.uid == model.uid
    assert loaded.getPredictionCol() == "prediction" and loaded.getGroupCol() == "qid"
    np.testing.assert_array_equal(loaded.weights, model.weights)
    np.testing.assert_array_equal(_scores(loaded.transform(df)), scores)
    assert loaded.summary.objectiveHistory == summary.objectiveHistory


def test_estimator_and_evaluator_params_round_trip(spark, tmp_path):
    from sparkrank.ml import LinearRanker, RankingEvaluator

    est = LinearRanker(qidCol="query", solver="bmrm", regParam=1e-3, tol=1e-4, maxIter=50, counting="direct",
                       kernelPlacement="driver", aggregationDepth=3, numPartitions=3, standardization="minmax",
                       initialWeights=[0.5, -1.0], checkpointDir=str(tmp_path / "ck"), checkpointInterval=4,
                       resumeFromCheckpoint=True, solverOptions={"qp": "cvxopt"}, predictionCol="score")
    est.save(str(tmp_path / "est"))
    back = LinearRanker.load(str(tmp_path / "est"))
    assert back.uid == est.uid
    for p in est.params:
        assert back.isDefined(p.name) == est.isDefined(p.name), p.name
        if est.isDefined(p.name):
            assert back.getOrDefault(p.name) == est.getOrDefault(p.name), p.name
    assert back.getGroupCol() == "query" and not back.isSet("C")

    ev = RankingEvaluator(metricName="pairwiseAccuracy", groupCol="query", ndcgDiscount="yahoo", zeroIdcg="skip")
    ev.save(str(tmp_path / "ev"))
    ev2 = RankingEvaluator.load(str(tmp_path / "ev"))
    assert ev2.getMetricName() == "pairwiseAccuracy" and ev2.getGroupCol() == "query"
    assert ev2.getOrDefault("ndcgDiscount") == "yahoo" and ev2.getOrDefault("zeroIdcg") == "skip"


def test_reg_param_is_bmrm_lambda(spark, df, local_data):
    from sparkrank.ml import LinearRanker

    lam = 1e-3
    model = LinearRanker(solver="bmrm", regParam=lam, maxIter=2).fit(df)
    assert model.rankingModel.C == pytest.approx(c_from_lambda(lam, local_data.groups.n_pairs), rel=1e-15)
    assert model.rankingModel.lam == pytest.approx(lam, rel=1e-12)


def test_pipeline_with_vector_assembler_fit_save_load(spark, local_data, tmp_path):
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.feature import VectorAssembler

    from sparkrank.ml import LinearRanker

    names = [f"f{j}" for j in range(5)]
    rows = [(y, q, i, *x) for y, q, x, i in _rows(local_data)]
    frame = spark.createDataFrame(rows, ["label", "qid", "row"] + names)
    pipeline = Pipeline(stages=[VectorAssembler(inputCols=names, outputCol="features"),
                                LinearRanker(C=0.1, standardization="standard")])
    fitted = pipeline.fit(frame)
    scores = _scores(fitted.transform(frame))
    ranker = fitted.stages[-1]
    np.testing.assert_allclose(scores, _local_scores(ranker.rankingModel, local_data), rtol=1e-12)

    fitted.write().overwrite().save(str(tmp_path / "pipeline-model"))
    loaded = PipelineModel.load(str(tmp_path / "pipeline-model"))
    np.testing.assert_array_equal(_scores(loaded.transform(frame)), scores)
    pipeline.write().overwrite().save(str(tmp_path / "pipeline"))
    assert Pipeline.load(str(tmp_path / "pipeline")).getStages()[-1].getStandardization() == "standard"


# -- model selection ----------------------------------------------------------------------------
def test_group_folds_never_split_a_group(spark, df):
    from pyspark.sql import functions as F

    from sparkrank.ml import group_train_validation_split, with_group_folds

    folded = with_group_folds(df, "qid", numFolds=3, seed=7)
    per_group = folded.groupBy("qid").agg(F.countDistinct("fold").alias("n")).collect()
    assert max(r.n for r in per_group) == 1
    folds = {r.fold for r in folded.select("fold").distinct().collect()}
    assert folds <= {0, 1, 2} and len(folds) > 1
    train_df, valid_df = group_train_validation_split(df, "qid", trainRatio=0.7, seed=1)
    tq = {r.qid for r in train_df.select("qid").distinct().collect()}
    vq = {r.qid for r in valid_df.select("qid").distinct().collect()}
    assert tq and vq and not (tq & vq)
    assert train_df.count() + valid_df.count() == df.count()


def test_cross_validator_with_group_folds_picks_c_like_a_direct_fit(spark, df):
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkrank.ml import LinearRanker, RankingEvaluator, with_group_folds

    # a few iterations suffice: the CV's and the direct fit are the same deterministic computation
    ranker = LinearRanker(solver="tron", numPartitions=2, maxIter=3)
    grid = ParamGridBuilder().addGrid(ranker.C, [1e-4, 1.0]).build()
    cv = CrossValidator(estimator=ranker, estimatorParamMaps=grid, numFolds=2, foldCol="fold",
                        evaluator=RankingEvaluator(metricName="ndcg@10"), parallelism=1)
    cv_model = cv.fit(with_group_folds(df, "qid", numFolds=2, seed=0))
    assert len(cv_model.avgMetrics) == 2 and all(0 < m <= 1 for m in cv_model.avgMetrics)
    best_c = grid[int(np.argmax(cv_model.avgMetrics))][ranker.C]
    best = cv_model.bestModel
    assert best.rankingModel.C == best_c
    direct = LinearRanker(solver="tron", C=best_c, maxIter=3).fit(df)
    np.testing.assert_allclose(best.weights, direct.weights, rtol=1e-9, atol=1e-12)


def test_cross_validator_over_a_pipeline_builds_the_blocks_once_per_fold(spark, local_data):
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkrank.ml import LinearRanker, RankingEvaluator, release_blocks, with_group_folds
    from sparkrank.ml.block_cache import BLOCKS

    names = [f"f{j}" for j in range(5)]
    frame = spark.createDataFrame([(y, q, i, *x) for y, q, x, i in _rows(local_data)], ["label", "qid", "row"] + names)
    folded = with_group_folds(frame, "qid", numFolds=2, seed=0).cache()

    def cross_validate(reuse: bool):
        release_blocks()
        ranker = LinearRanker(numPartitions=2, maxIter=2, reuseBlocks=reuse)
        pipe = Pipeline(stages=[VectorAssembler(inputCols=names, outputCol="features"), ranker])
        grid = ParamGridBuilder().addGrid(ranker.C, [1e-3, 1.0]).build()
        cv = CrossValidator(estimator=pipe, estimatorParamMaps=grid, numFolds=2, foldCol="fold",
                            evaluator=RankingEvaluator(metricName="ndcg@10"), parallelism=1)
        before = BLOCKS.builds
        model = cv.fit(folded)
        return model, BLOCKS.builds - before

    shared, shared_builds = cross_validate(True)
    fresh, fresh_builds = cross_validate(False)
    # 2 folds x 2 C + the refit on all rows: 5 builds without reuse, 2 folds + 1 refit with it
    assert fresh_builds == 5
    assert shared_builds == 3
    assert shared.avgMetrics == fresh.avgMetrics
    np.testing.assert_array_equal(shared.bestModel.stages[-1].weights, fresh.bestModel.stages[-1].weights)
    # a different input (another fold's rows) is never served from the cache
    release_blocks()
    before = BLOCKS.builds
    a = LinearRanker(maxIter=3).fit(VectorAssembler(inputCols=names, outputCol="features").transform(
        folded.filter("fold = 0")))
    b = LinearRanker(maxIter=3).fit(VectorAssembler(inputCols=names, outputCol="features").transform(
        folded.filter("fold = 1")))
    assert BLOCKS.builds - before == 2
    assert not np.array_equal(a.weights, b.weights)
    release_blocks()


def test_fit_multiple_over_a_c_grid_builds_the_blocks_once(spark, df, local_data, monkeypatch):
    from sparkrank.ml import LinearRanker

    from sparkrank.ml import release_blocks

    release_blocks()
    built = []
    original = LinearRanker._engine
    monkeypatch.setattr(LinearRanker, "_engine", lambda self, *a: built.append(1) or original(self, *a))
    ranker = LinearRanker(maxIter=2, warmStart=False)  # each C from zero (warm starts: test_ml_warm_path.py)
    cs = [0.01, 1.0]
    models = dict(ranker.fitMultiple(df, [{ranker.C: c} for c in cs]))
    assert len(built) == 1
    for i, c in enumerate(cs):
        local = train(local_data, C=c, max_iter=2)
        np.testing.assert_allclose(models[i].weights, local.weights, rtol=1e-9, atol=1e-12)
        assert models[i].rankingModel.C == c
    # a grid over a data param (here the partitioning) cannot share blocks
    list(ranker.fitMultiple(df, [{ranker.numPartitions: 1, ranker.C: 1.0}, {ranker.numPartitions: 2}]))
    assert len(built) == 3


def test_ranking_evaluator_matches_local_metrics(spark, df, local_data, fitted):
    from pyspark.sql import functions as F

    from sparkrank.ml import RankingEvaluator

    model = fitted
    scored = model.transform(df).cache()
    local = evaluate_ranking(local_data.groups, model.rankingModel.predict(local_data), ks=(5,))
    # the same metrics kernel as evaluate/tune: every metric, in either spelling
    for name, key in (("ndcg@5", "ndcg@5"), ("meanNDCG", "mean_ndcg"), ("pairwiseAccuracy", "pairwise_accuracy"),
                      ("auc", "auc"), ("positivesAtTop", "positives_at_top"), ("precision@5", "precision@5")):
        assert RankingEvaluator(metricName=name).evaluate(scored) == pytest.approx(local[key], rel=1e-12), name
    with pytest.raises(DataError, match="predictionCol 'prediction'.*nan"):
        RankingEvaluator().evaluate(scored.withColumn("prediction", F.lit(float("nan"))))
    assert RankingEvaluator(metricName="ndcg", k=5).evaluate(scored) == pytest.approx(local["ndcg@5"], rel=1e-12)
    # one global ranking: every row compared with every other
    one = RankingData.from_arrays(local_data.X, local_data.labels)
    glob = evaluate_ranking(one.groups, model.rankingModel.predict(one))
    ev = RankingEvaluator(metricName="pairwiseAccuracy", groupCol="")
    assert ev.evaluate(scored.withColumn("qid", F.lit(1))) == pytest.approx(glob["pairwise_accuracy"], rel=1e-12)
    assert ev.isLargerBetter()


# -- standardization ----------------------------------------------------------------------------
def test_feature_statistics_local_and_spark(spark, df, local_data):
    from sparkrank.engines.spark.engine import SparkEngine

    X = local_data.X.toarray()
    local = LocalEngine(local_data).feature_statistics()
    with SparkEngine(df, num_partitions=3) as engine:
        dist = engine.feature_statistics()
    for stats in (local, dist):
        assert stats.count == X.shape[0]
        np.testing.assert_allclose(stats.mean, X.mean(0), rtol=1e-12)
        np.testing.assert_allclose(stats.variance(), X.var(0, ddof=1), rtol=1e-10)
        np.testing.assert_array_equal(stats.min, X.min(0))
        np.testing.assert_array_equal(stats.max, X.max(0))


@pytest.mark.parametrize("kind", ["minmax", "standard"])
@pytest.mark.parametrize("solver", ["tron", "bmrm"])
def test_scaled_training_equals_training_on_scaled_features(local_data, kind, solver):
    model = train(local_data, solver=solver, C=0.1, tol=1e-6, standardization=kind)
    st = model.standardization
    assert st is not None and st.kind == kind
    Z = st.transform(local_data.X.toarray())
    scaled = RankingData.from_arrays(Z, local_data.labels, np.repeat(local_data.qids, local_data.groups.group_sizes))
    explicit = train(scaled, solver=solver, C=0.1, tol=1e-6)
    np.testing.assert_allclose(model.weights, explicit.weights, rtol=1e-9, atol=1e-12)
    # the model applies the standardization itself: same scores as the explicit model on Z
    np.testing.assert_allclose(model.predict(local_data), explicit.predict(scaled), rtol=1e-9, atol=1e-9)
    # raw-space coefficients rank identically (differ by the constant intercept)
    np.testing.assert_allclose(local_data.X @ model.raw_weights + model.intercept, model.predict(local_data),
                               rtol=1e-12, atol=1e-12)


def test_scaled_engine_is_the_reparametrisation(local_data, rng):
    from sparkrank.kernels.losses import SquaredHingeKernel

    scale = rng.uniform(0.1, 10.0, size=local_data.n_features)
    inner = LocalEngine(local_data)
    Z = RankingData(sp.csr_matrix(local_data.X.multiply(scale[None, :])), local_data.groups, local_data.qids,
                    local_data.row_order)
    v = rng.normal(size=local_data.n_features)
    kernel = SquaredHingeKernel("selection")
    a = ScaledEngine(inner, scale).run(v, kernel)
    b = LocalEngine(Z).run(v, kernel)
    np.testing.assert_allclose(a.stats, b.stats, rtol=1e-12)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="finite and positive"):
        ScaledEngine(inner, np.zeros(local_data.n_features))


def test_spark_standardization_matches_local_and_survives_save(spark, df, local_data, tmp_path):
    from sparkrank.ml import LinearRanker, LinearRankerModel

    model = LinearRanker(C=0.1, standardization="standard", kernelPlacement="driver").fit(df)
    local = train(local_data, C=0.1, standardization="standard")
    np.testing.assert_allclose(model.rankingModel.standardization.scale, local.standardization.scale, rtol=1e-12)
    np.testing.assert_allclose(model.weights, local.weights, rtol=1e-9, atol=1e-12)
    scores = _scores(model.transform(df))
    np.testing.assert_allclose(scores, _local_scores(local, local_data), rtol=1e-9, atol=1e-9)
    model.save(str(tmp_path / "std"))
    loaded = LinearRankerModel.load(str(tmp_path / "std"))
    assert loaded.rankingModel.standardization.kind == "standard"
    np.testing.assert_array_equal(_scores(loaded.transform(df)), scores)
    assert model.intercept != 0.0


def test_model_files_without_standardization_still_load(tmp_path, local_data):
    import json

    from sparkrank.model import RankingModel

    model = train(local_data, C=0.1)
    path = tmp_path / "m.json"
    model.save(path)
    d = json.loads(path.read_text())
    del d["standardization"]  # a file written before the field existed
    path.write_text(json.dumps(d))
    old = RankingModel.load(path)
    assert old.standardization is None
    np.testing.assert_array_equal(old.predict(local_data), model.predict(local_data))
    st = Standardization.from_dict({"kind": "minmax", "shift": [0.0], "scale": [2.0]})
    assert st.raw_weights(np.array([3.0]))[0] == 6.0


# -- warm start and checkpoints ---------------------------------------------------------------------
def test_warm_start_from_initial_weights(spark, df, fitted):
    from sparkrank.ml import LinearRanker

    # TRON's stopping rule is relative to the gradient at 0, so a start at the optimum stops at once
    warm = LinearRanker(C=0.1, initialWeights=fitted.weights.tolist()).fit(df)
    assert warm.summary.totalIterations == 0
    np.testing.assert_array_equal(warm.weights, fitted.weights)
    with pytest.raises(ValueError, match="initialWeights must be finite"):
        LinearRanker(initialWeights=[0.0, float("nan")])


def test_checkpoints_are_written_and_resume_works(spark, df, local_data, tmp_path):
    from sparkrank.ml import LinearRanker, latest_checkpoint

    directory = str(tmp_path / "checkpoints")
    first = LinearRanker(C=0.1, maxIter=3, checkpointDir=directory, checkpointInterval=1).fit(df)
    assert first.summary.totalIterations == 3 and not first.summary.converged
    kept = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert kept == ["iter-00000002", "iter-00000003"]  # the two newest are kept
    found = latest_checkpoint(spark, directory)
    assert found["iteration"] == 3 and found["solver"] == "tron" and found["standardization"] == "none"
    np.testing.assert_array_equal(found["weights"], first.weights)

    resumed = LinearRanker(C=0.1, checkpointDir=directory, resumeFromCheckpoint=True).fit(df)
    assert resumed.summary.converged
    assert resumed.summary.objectiveHistory[-1] < first.summary.objectiveHistory[-1]
    # resuming is a warm start from the checkpoint: the same run as locally from those weights
    local = train(local_data, C=0.1, w0=found["weights"])
    np.testing.assert_allclose(resumed.weights, local.weights, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="written with solver='tron'"):
        LinearRanker(solver="bmrm", checkpointDir=directory, resumeFromCheckpoint=True).fit(df)
    assert latest_checkpoint(spark, str(tmp_path / "none")) is None


# -- bad input ------------------------------------------------------------------------------------
def test_bad_params_give_clear_errors(spark, df):
    from sparkrank.ml import LinearRanker, RankingEvaluator, with_group_folds

    with pytest.raises(ValueError, match="solver must be one of tron, bmrm"):
        LinearRanker(solver="sgd")
    with pytest.raises(ValueError, match="C must be a finite positive number"):
        LinearRanker(C=0)
    with pytest.raises(ValueError, match="standardization must be one of none, minmax, standard"):
        LinearRanker(standardization="zscore")
    with pytest.raises(ValueError, match="kernelPlacement must be one of"):
        LinearRanker(kernelPlacement="gpu")
    with pytest.raises(ValueError, match="counting must be one of"):
        LinearRanker(counting="fast")
    with pytest.raises(ValueError, match="alias of groupCol"):
        LinearRanker(groupCol="a", qidCol="b")
    with pytest.raises(ValueError, match="not both"):
        LinearRanker(C=1.0, regParam=0.1).fit(df)
    with pytest.raises(DataError, match="no group column 'query'"):
        LinearRanker(groupCol="query").fit(df)
    with pytest.raises(DataError, match="no feature column"):
        LinearRanker(featuresCol="x").fit(df)
    with pytest.raises(ValueError, match="resumeFromCheckpoint needs checkpointDir"):
        LinearRanker(resumeFromCheckpoint=True).fit(df)
    with pytest.raises(ValueError, match="'toppush' cannot start from given weights"):
        LinearRanker(solver="toppush", initialWeights=[0.0, 1.0]).fit(df)
    with pytest.raises(ValueError, match="metricName must be"):
        RankingEvaluator(metricName="ndcg@0")
    with pytest.raises(DataError, match="no predictionCol column 'prediction'"):
        RankingEvaluator().evaluate(df)
    with pytest.raises(ValueError, match="numFolds must be at least 2"):
        with_group_folds(df, "qid", numFolds=1)
    with pytest.raises(ValueError, match="need a group column"):
        with_group_folds(df, "", numFolds=2)
