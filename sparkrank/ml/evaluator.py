"""RankingEvaluator: per-query ranking metrics of a scored DataFrame as a pyspark.ml Evaluator."""

from __future__ import annotations

import re
from typing import Any

from pyspark import keyword_only
from pyspark.ml.evaluation import Evaluator
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasLabelCol, HasPredictionCol
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from ..choices import NDCG_DISCOUNTS, ZERO_IDCG_RULES
from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from ..data.block import DataError
from .params import _choice

_METRIC = re.compile(r"^(ndcg(@[1-9][0-9]*)?|meanNDCG|pairwiseAccuracy|auc)$")
_GROUP = "__sparkrank_group"


def _metric_name(value):
    value = TypeConverters.toString(value)
    if not _METRIC.match(value):
        raise ValueError(f"metricName must be ndcg, ndcg@K (K >= 1), meanNDCG, pairwiseAccuracy or auc; got {value!r}")
    return value


def _positive_int(value):
    value = TypeConverters.toInt(value)
    if value < 1:
        raise ValueError(f"k must be a positive integer; got {value!r}")
    return value


class RankingEvaluator(Evaluator, HasLabelCol, HasPredictionCol, DefaultParamsReadable, DefaultParamsWritable):
    """Ranking quality of scored rows, evaluated per group (query) and averaged.

    Metrics (conventions from :mod:`sparkrank.conventions`, values from
    :func:`sparkrank.spark.evaluate.per_query_metrics`):

    * ``ndcg@K`` / ``ndcg`` (with ``k``): mean over groups of NDCG@K, gain ``2**y − 1``,
      discount ``ndcgDiscount``; groups with zero ideal DCG follow ``zeroIdcg``;
    * ``meanNDCG``: mean over groups of the average of NDCG@1..size;
    * ``pairwiseAccuracy``: correctly ordered preference pairs / all pairs (pooled over
      groups, as :func:`sparkrank.evaluation.evaluate_ranking`; tied scores count as wrong);
    * ``auc``: the same with tied pairs counted ½ (WMW).

    All are larger-is-better.  Rows of a group must carry the same ``groupCol`` value (several
    columns comma-separated form one id, as in ``LinearRanker``); ``groupCol=""`` evaluates all
    rows as one ranking.
    """

    metricName: Param[str] = Param(Params._dummy(), "metricName",
                                   "ndcg, ndcg@K, meanNDCG, pairwiseAccuracy or auc", typeConverter=_metric_name)
    k: Param[int] = Param(Params._dummy(), "k", "NDCG cut-off for metricName='ndcg'", typeConverter=_positive_int)
    groupCol: Param[str] = Param(Params._dummy(), "groupCol", "query/group id column ('' = one global ranking)",
                                 typeConverter=lambda v: "" if v is None else TypeConverters.toString(v))
    ndcgDiscount: Param[str] = Param(Params._dummy(), "ndcgDiscount", "letor (1/log2(max(2,i))) or yahoo (1/log2(i+1))",
                                     typeConverter=_choice("ndcgDiscount", NDCG_DISCOUNTS))
    zeroIdcg: Param[str] = Param(Params._dummy(), "zeroIdcg",
                                 "NDCG of a group with zero ideal DCG: zero, one, or skip (left out of the mean)",
                                 typeConverter=_choice("zeroIdcg", ZERO_IDCG_RULES))

    @keyword_only
    def __init__(
        self,
        *,
        metricName: str = "ndcg@10",
        k: int = 10,
        groupCol: str = "qid",
        labelCol: str = "label",
        predictionCol: str = "prediction",
        ndcgDiscount: str = DEFAULT_NDCG_DISCOUNT,
        zeroIdcg: str = DEFAULT_ZERO_IDCG,
    ):
        super().__init__()
        self._setDefault(metricName="ndcg@10", k=10, groupCol="qid", labelCol="label", predictionCol="prediction",
                         ndcgDiscount=DEFAULT_NDCG_DISCOUNT, zeroIdcg=DEFAULT_ZERO_IDCG)
        self.setParams(**self._input_kwargs)

    def setParams(self, **kwargs: Any) -> "RankingEvaluator":
        """Set any of the constructor's params."""
        unknown = [name for name in kwargs if not self.hasParam(name)]
        if unknown:
            raise ValueError(f"RankingEvaluator has no param {unknown[0]!r}")
        return self._set(**{name: v for name, v in kwargs.items() if v is not None})

    def setMetricName(self, value: str) -> "RankingEvaluator":
        return self._set(metricName=value)

    def getMetricName(self) -> str:
        return self.getOrDefault(self.metricName)

    def setGroupCol(self, value: str) -> "RankingEvaluator":
        return self._set(groupCol=value)

    def getGroupCol(self) -> str:
        return self.getOrDefault(self.groupCol)

    def setK(self, value: int) -> "RankingEvaluator":
        return self._set(k=value)

    def isLargerBetter(self) -> bool:
        return True

    def _cutoff(self) -> int | None:
        name = self.getMetricName()
        if name.startswith("ndcg@"):
            return int(name.split("@", 1)[1])
        return self.getOrDefault(self.k) if name == "ndcg" else None

    def _evaluate(self, dataset) -> float:
        from pyspark.sql import functions as F

        from ..spark.evaluate import per_query_metrics

        from ..io.sources import ColumnSpec, group_expression

        label, score = self.getLabelCol(), self.getPredictionCol()
        group = ColumnSpec.parse_group(self.getGroupCol())
        for what, col in (("labelCol", label), ("predictionCol", score)) + tuple(("groupCol", g) for g in group):
            if col not in dataset.columns:
                raise DataError(f"RankingEvaluator: no {what} column {col!r}; columns are {', '.join(dataset.columns)}")
        group_expr = group_expression(group) if group else F.lit(0)
        scored = dataset.select(F.col(label).cast("double").alias(label), group_expr.alias(_GROUP),
                                F.col(score).cast("double").alias(score))
        k = self._cutoff()
        per = per_query_metrics(scored, label_col=label, qid_col=_GROUP, score_col=score, ks=(k or 1,),
                                discount=self.getOrDefault(self.ndcgDiscount),
                                zero_idcg=self.getOrDefault(self.zeroIdcg))
        name = self.getMetricName()
        if name in ("pairwiseAccuracy", "auc"):
            column = "pairwise_accuracy" if name == "pairwiseAccuracy" else "auc"
            # pooled over all pairs: Σ_q metric_q·pairs_q / Σ_q pairs_q (groups without pairs are NaN)
            with_pairs = F.col("pairs") > 0
            row = per.agg(F.sum(F.when(with_pairs, F.col(column) * F.col("pairs"))).alias("num"),
                          F.sum(F.when(with_pairs, F.col("pairs"))).alias("den")).first()
            return float(row.num / row.den) if row.den else float("nan")
        column = f"ndcg@{k}" if k else "mean_ndcg"
        # NaN marks groups left out (skip rule, empty); avg() would propagate NaN, so null them
        row = per.agg(F.avg(F.when(~F.isnan(F.col(column)), F.col(column))).alias("v")).first()
        return float("nan") if row.v is None else float(row.v)
