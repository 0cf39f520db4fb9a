"""Fold views (issue 38 item 1): ``CrossValidator``'s fold frames of a frame made by
``with_group_folds`` are read from one collection of that frame, with the same models, metrics
and best model, bit for bit, as when every fold frame is collected itself."""

from __future__ import annotations

import numpy as np
import pytest

from sparkrank.datasets import make_ranking_data

GRID = [0.01, 0.1, 1.0]


@pytest.fixture(scope="module")
def frame(spark):
    data, _ = make_ranking_data(400, 6, rows_per_group=20, density=0.7, seed=11)
    qid = np.repeat(data.qids, data.groups.group_sizes)
    rows = [(float(y), int(q), [float(v) for v in x]) for y, q, x in zip(data.labels, qid, data.X.toarray())]
    return spark.createDataFrame(rows, ["label", "qid", "features"])


def _bits(w) -> list[int]:
    return np.asarray(w, dtype=np.float64).view(np.int64).tolist()


def _cross_validate(folded, parallelism: int = 1):
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkrank.ml import LinearRanker, RankingEvaluator, release_blocks

    release_blocks()
    ranker = LinearRanker(solver="tron", standardization="standard")
    cv = CrossValidator(estimator=ranker, estimatorParamMaps=ParamGridBuilder().addGrid(ranker.C, GRID).build(),
                        evaluator=RankingEvaluator(metricName="ndcg@10"), numFolds=3, foldCol="fold",
                        parallelism=parallelism)
    model = cv.fit(folded)
    release_blocks()
    return model


@pytest.mark.parametrize("parallelism", [2])
def test_cross_validation_collects_the_folded_frame_once_with_the_same_results(spark, frame, monkeypatch,
                                                                               parallelism):
    from pyspark.sql import functions as F
    from pyspark.sql.classic.dataframe import DataFrame

    from sparkrank.ml import with_group_folds

    collected = []
    collect = DataFrame._collect_as_arrow
    monkeypatch.setattr(DataFrame, "_collect_as_arrow", lambda self, *a, **k: collected.append(1) or
                        collect(self, *a, **k))
    folded = with_group_folds(frame, "qid", numFolds=3, seed=2)
    viewed = _cross_validate(folded, parallelism)
    assert len(collected) == 1  # the folded frame, once: every fold's rows, its validation rows, the refit
    collected.clear()
    # the same rows under a plan that is not the remembered frame's: each fold frame collected itself
    itself = _cross_validate(folded.withColumn("fold", F.col("fold") + F.lit(0)), parallelism)
    assert len(collected) == 2 * 3 + 1
    assert viewed.avgMetrics == itself.avgMetrics
    assert _bits(viewed.bestModel.weights) == _bits(itself.bestModel.weights)


def test_a_fold_value_out_of_range_is_collected_itself_and_fails_as_cross_validator_says(spark, frame):
    """Folds of 3 with ``CrossValidator(numFolds=2)``: no view (its range check is another plan),
    so the fold frames are Spark's and fold value 2 fails with CrossValidator's message."""
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkrank.ml import LinearRanker, RankingEvaluator, release_blocks, with_group_folds

    ranker = LinearRanker(solver="tron")
    cv = CrossValidator(estimator=ranker, estimatorParamMaps=ParamGridBuilder().addGrid(ranker.C, GRID).build(),
                        evaluator=RankingEvaluator(metricName="ndcg@10"), numFolds=2, foldCol="fold")
    with pytest.raises(Exception, match=r"Fold number must be in range \[0, 2\)"):
        cv.fit(with_group_folds(frame, "qid", numFolds=3, seed=2))
    release_blocks()
