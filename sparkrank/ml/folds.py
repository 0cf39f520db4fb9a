"""Group-preserving model selection splits.

The pitfall: Spark's ``CrossValidator`` (without ``foldCol``) and ``TrainValidationSplit``
assign *rows* to folds at random, which cuts query groups in two.  A ranking loss only
compares rows of the same group, so a cut group loses the pairs between its halves, the
validation metrics are computed on partial queries (NDCG of a query missing its best
documents), and training and validation share queries — optimistic, noisy model choice.
Here every row of a group goes to the same fold, decided by the seeded hash of the group id
of :mod:`sparkrank.data.folds` (the rule ``sparkrank tune`` uses on both engines):
deterministic, no shuffle, no join, and it works for long and string ids alike.
"""

from __future__ import annotations

from ..data.block import DataError
from ..data.folds import HASH_BITS
from ..engines.spark.folds import spark_group_fold, spark_group_hash


def _check_group(df, groupCol: str) -> None:
    if not groupCol:
        raise ValueError("group-preserving splits need a group column (one global ranking cannot be split "
                         "without cutting it)")
    if groupCol not in df.columns:
        raise DataError(f"no group column {groupCol!r}; columns are {', '.join(df.columns)}")


def with_group_folds(df, groupCol: str = "qid", numFolds: int = 3, seed: int = 0, foldCol: str = "fold"):
    """``df`` plus an integer ``foldCol`` in ``[0, numFolds)`` that is equal for all rows of a group.

    Use with ``CrossValidator(foldCol=foldCol, numFolds=numFolds)``: unlike its default random
    row split, no query group is ever cut between training and validation.

    Parameters
    ----------
    df : DataFrame
    groupCol : str
        Query/group id column.
    numFolds : int
        At least 2.
    seed : int
        Different seeds give different (independent) assignments.
    foldCol : str
        Name of the added column (must not exist yet).

    Returns
    -------
    DataFrame
    """
    _check_group(df, groupCol)
    if int(numFolds) < 2:
        raise ValueError(f"numFolds must be at least 2; got {numFolds}")
    if foldCol in df.columns:
        raise ValueError(f"the data already has a column {foldCol!r}; choose another foldCol")
    folded = df.withColumn(foldCol, spark_group_fold(groupCol, int(numFolds), seed).cast("int"))
    # CrossValidator's fold frames of it are then read from one collection (fold_views)
    from .fold_views import VIEWS

    VIEWS.register(folded, foldCol, int(numFolds))
    return folded


def group_train_validation_split(df, groupCol: str = "qid", trainRatio: float = 0.75, seed: int = 0):
    """Split ``df`` into ``(train, validation)`` DataFrames without cutting any group.

    About ``trainRatio`` of the *groups* (not rows) go to ``train``; the choice is a seeded
    hash of the group id, so it is reproducible and needs no shuffle.  Fit on ``train``,
    evaluate with :class:`~sparkrank.ml.RankingEvaluator` on ``validation``.

    Parameters
    ----------
    df : DataFrame
    groupCol : str
    trainRatio : float
        Strictly between 0 and 1.
    seed : int

    Returns
    -------
    (DataFrame, DataFrame)
    """
    from pyspark.sql import functions as F

    _check_group(df, groupCol)
    if not 0.0 < float(trainRatio) < 1.0:
        raise ValueError(f"trainRatio must be strictly between 0 and 1; got {trainRatio}")
    in_train = spark_group_hash(groupCol, seed) < F.lit(int(float(trainRatio) * 2**HASH_BITS))
    return df.filter(in_train), df.filter(~in_train)
