"""sparkrank for pyspark.ml: Estimator, Model, Evaluator and group-preserving model selection.

::

    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder
    from sparkrank.ml import LinearRanker, RankingEvaluator, with_group_folds

    ranker = LinearRanker(groupCol="qid", solver="tron", standardization="standard")
    grid = ParamGridBuilder().addGrid(ranker.C, [0.01, 0.1, 1.0]).build()
    cv = CrossValidator(estimator=ranker, estimatorParamMaps=grid, numFolds=3, foldCol="fold",
                        evaluator=RankingEvaluator(metricName="ndcg@10", groupCol="qid"))
    best = cv.fit(with_group_folds(df, "qid", numFolds=3)).bestModel
    scored = best.transform(test_df)
"""

from .block_cache import release_blocks
from .checkpoint import latest_checkpoint
from .estimator import LinearRanker
from .evaluator import RankingEvaluator
from .folds import group_train_validation_split, with_group_folds
from .model import LinearRankerModel, LinearRankerSummary
from .pipeline import RankingPipeline

__all__ = [
    "LinearRanker",
    "LinearRankerModel",
    "LinearRankerSummary",
    "RankingEvaluator",
    "RankingPipeline",
    "group_train_validation_split",
    "latest_checkpoint",
    "release_blocks",
    "with_group_folds",
]
