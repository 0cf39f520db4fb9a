"""LinearRanker.fitMultiple along the C path (issue 38 item 1): the maps of a C grid are trained
in ascending C on one engine, each from the previous solution as ``sparkrank tune`` does;
``CrossValidator(parallelism=...)`` gives the same models for any parallelism."""

from __future__ import annotations

import numpy as np
import pytest

from sparkrank import train
from sparkrank.data.block import RankingData
from sparkrank.datasets import make_ranking_data

GRID = [1.0, 0.01, 0.1, 0.001]  # not sorted: the path sorts it


@pytest.fixture(scope="module")
def local_data() -> RankingData:
    data, _ = make_ranking_data(300, 5, rows_per_group=15, density=0.8, seed=5)
    return data


@pytest.fixture(scope="module")
def df(spark, local_data):
    qid = np.repeat(local_data.qids, local_data.groups.group_sizes)
    X = local_data.X.toarray()
    rows = [(float(y), int(q), [float(v) for v in x]) for y, q, x in zip(local_data.labels, qid, X)]
    return spark.createDataFrame(rows, ["label", "qid", "features"]).cache()


def _bits(w) -> list[int]:
    return np.asarray(w, dtype=np.float64).view(np.int64).tolist()


def test_path_order_sorts_each_path_by_c_and_keeps_other_params_apart():
    from sparkrank.ml import LinearRanker
    from sparkrank.ml.warm_path import path_order

    r = LinearRanker()
    maps = [{r.C: 1.0}, {r.C: 0.1}, {r.C: 1.0, r.solver: "bmrm"}, {r.C: 0.01}, {r.C: 0.1, r.solver: "bmrm"},
            {r.regParam: 0.1, r.solver: "bmrm"}, {r.regParam: 1.0, r.solver: "bmrm"}]
    # C ascending, then regParam descending (C = 1/(2λN)) on the same path
    assert path_order(r, maps) == [[3, 1, 0], [4, 2, 6, 5]]


def test_fit_multiple_warm_starts_along_the_c_path_as_tune_does(spark, df, local_data):
    from sparkrank.ml import LinearRanker, release_blocks
    from sparkrank.ml.block_cache import BLOCKS

    release_blocks()
    ranker = LinearRanker(solver="tron")
    before = BLOCKS.builds
    fits = list(ranker.fitMultiple(df, [{ranker.C: c} for c in GRID]))
    assert BLOCKS.builds - before == 1
    assert [i for i, _ in fits] == [3, 1, 2, 0]  # ascending C
    models = dict(fits)
    w = None
    for i in (3, 1, 2, 0):  # the tune driver's path: each C from the previous C's solution
        expected = train(local_data, C=GRID[i], w0=w)
        np.testing.assert_allclose(models[i].weights, expected.weights, rtol=1e-9, atol=1e-12)
        assert models[i].rankingModel.C == GRID[i]
        w = expected.weights
    cold = dict(ranker.copy({ranker.warmStart: False}).fitMultiple(df, [{ranker.C: c} for c in GRID]))
    for i, c in enumerate(GRID):  # without warm starts: each map's own fit, bit for bit
        assert _bits(cold[i].weights) == _bits(LinearRanker(solver="tron", C=c).fit(df).weights)
    warm_iterations = sum(m.summary.totalIterations for m in models.values())
    cold_iterations = sum(m.summary.totalIterations for m in cold.values())
    assert warm_iterations < cold_iterations
    release_blocks()


def test_a_solver_without_warm_starts_trains_every_c_from_zero(spark, df):
    from sparkrank.ml import LinearRanker, release_blocks

    ranker = LinearRanker(solver="toppush", maxIter=20)
    models = dict(ranker.fitMultiple(df, [{ranker.C: c} for c in (1.0, 0.1)]))
    for i, c in enumerate((1.0, 0.1)):
        assert _bits(models[i].weights) == _bits(LinearRanker(solver="toppush", maxIter=20, C=c).fit(df).weights)
    release_blocks()


@pytest.mark.parametrize("estimator", ["ranker", "pipeline"])
def test_cross_validator_gives_the_same_models_for_any_parallelism(spark, df, estimator):
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.functions import array_to_vector
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkrank.ml import LinearRanker, RankingEvaluator, release_blocks, with_group_folds
    from sparkrank.ml.block_cache import BLOCKS

    if estimator == "pipeline":  # the docs example: named columns assembled inside the pipeline
        frame = df.selectExpr("label", "qid", *[f"features[{j}] AS f{j}" for j in range(5)])
    else:
        frame = df.withColumn("features", array_to_vector("features"))
    folded = with_group_folds(frame, "qid", numFolds=2, seed=1).cache()

    def cross_validate(parallelism: int):
        release_blocks()
        ranker = LinearRanker(solver="tron", standardization="standard")
        stages = [VectorAssembler(inputCols=[f"f{j}" for j in range(5)], outputCol="features"), ranker]
        est = Pipeline(stages=stages) if estimator == "pipeline" else ranker
        grid = ParamGridBuilder().addGrid(ranker.C, GRID).build()
        cv = CrossValidator(estimator=est, estimatorParamMaps=grid, numFolds=2, foldCol="fold",
                            evaluator=RankingEvaluator(metricName="ndcg@10"), parallelism=parallelism)
        before = BLOCKS.builds
        model = cv.fit(folded)
        best = model.bestModel.stages[-1] if estimator == "pipeline" else model.bestModel
        return model.avgMetrics, best.weights, BLOCKS.builds - before

    serial, parallel = cross_validate(1), cross_validate(3)
    assert serial[0] == parallel[0]
    assert _bits(serial[1]) == _bits(parallel[1])
    assert serial[2] == parallel[2] == 3  # one engine per fold and one for the refit
    release_blocks()


def test_cross_validator_over_a_ranking_pipeline_trains_the_c_path_as_the_ranker_does(spark, df, tmp_path):
    """``RankingPipeline([VectorAssembler, LinearRanker])``: the assembler fitted once per fold and
    the ranker's C path with warm starts, so ``CrossValidator`` gives the metrics and the best
    model of the ranker alone on the assembled frame, bit for bit, from one engine per fold (and
    one for the refit); a grid over an earlier stage's param takes ``Pipeline``'s own path, and
    the pipeline saves and loads as itself."""
    from pyspark.ml import PipelineModel
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkrank.ml import LinearRanker, RankingEvaluator, RankingPipeline, release_blocks, with_group_folds
    from sparkrank.ml.block_cache import BLOCKS

    names = [f"f{j}" for j in range(5)]
    frame = df.selectExpr("label", "qid", *[f"features[{j}] AS f{j}" for j in range(5)])
    folded = with_group_folds(frame, "qid", numFolds=2, seed=1).cache()

    def cross_validate(pipeline: bool, grid_over_assembler: bool = False, warm: bool = True):
        release_blocks()
        ranker = LinearRanker(solver="tron", standardization="standard", warmStart=warm)
        assembler = VectorAssembler(inputCols=names, outputCol="features")
        grid = ParamGridBuilder().addGrid(ranker.C, GRID)
        if grid_over_assembler:
            grid = grid.addGrid(assembler.handleInvalid, ["error"])
        est = RankingPipeline(stages=[assembler, ranker]) if pipeline else ranker
        data = folded if pipeline else assembler.transform(folded)
        cv = CrossValidator(estimator=est, estimatorParamMaps=grid.build(), numFolds=2, foldCol="fold",
                            evaluator=RankingEvaluator(metricName="ndcg@10"), parallelism=2)
        before = BLOCKS.builds
        model = cv.fit(data)
        best = model.bestModel.stages[-1] if pipeline else model.bestModel
        return model, best, BLOCKS.builds - before

    alone, _, _ = cross_validate(False)
    piped, best, builds = cross_validate(True)
    assert isinstance(piped.bestModel, PipelineModel)
    assert piped.avgMetrics == alone.avgMetrics
    assert _bits(best.weights) == _bits(alone.bestModel.weights)
    assert builds == 3  # one engine per fold and one for the refit
    # a grid over the assembler's param: Pipeline.fitMultiple, each map's own cold fit
    cold, _, _ = cross_validate(False, warm=False)
    fallback, fallback_best, _ = cross_validate(True, grid_over_assembler=True)
    assert fallback.avgMetrics == cold.avgMetrics
    assert _bits(fallback_best.weights) == _bits(cold.bestModel.weights)
    pipe = RankingPipeline(stages=[VectorAssembler(inputCols=names, outputCol="features"), LinearRanker()])
    pipe.write().overwrite().save(str(tmp_path / "pipe"))
    loaded = RankingPipeline.load(str(tmp_path / "pipe"))
    assert isinstance(loaded, RankingPipeline) and loaded.uid == pipe.uid
    assert [type(s).__name__ for s in loaded.getStages()] == ["VectorAssembler", "LinearRanker"]
    release_blocks()
