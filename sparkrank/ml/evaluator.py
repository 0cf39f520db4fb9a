"""RankingEvaluator: pooled ranking metrics of a scored DataFrame as a pyspark.ml Evaluator."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from pyspark import keyword_only
from pyspark.ml.evaluation import Evaluator
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasLabelCol, HasPredictionCol
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from .. import defaults
from ..choices import ML_ENGINES, NDCG_DISCOUNTS, ZERO_IDCG_RULES, check_choice
from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from ..data.block import DataError
from ..evaluation.names import METRICS_HELP, canonical_metric, metric_cutoff

#: ``metricName="ndcg"`` takes its cut-off from the ``k`` param.
_NDCG_WITH_K = "ndcg"
_SCORE = "__sparkrank_score"
log = logging.getLogger("sparkrank.ml")


def _metric_name(value):
    value = TypeConverters.toString(value)
    if value.strip().lower() != _NDCG_WITH_K:
        try:
            canonical_metric(value)
        except ValueError:
            raise ValueError(f"metricName must be ndcg (with k) or one of {METRICS_HELP}, in either spelling "
                             f"(pairwiseAccuracy or pairwise_accuracy); got {value!r}") from None
    return value


def _one_of(what: str, choices: tuple[str, ...]):
    return lambda value: check_choice(TypeConverters.toString(value), choices, what)


def _positive_int(value):
    value = TypeConverters.toInt(value)
    if value < 1:
        raise ValueError(f"k must be a positive integer; got {value!r}")
    return value


class RankingEvaluator(Evaluator, HasLabelCol, HasPredictionCol, DefaultParamsReadable, DefaultParamsWritable):
    """Ranking quality of scored rows, evaluated per group (query) and pooled.

    The metrics are those of ``sparkrank evaluate`` and ``tune``, computed the same way: the
    metrics kernel (:class:`sparkrank.evaluation.kernel.MetricsKernel`) on an engine whose one
    feature is the prediction (conventions from :mod:`sparkrank.conventions`): in-process on
    the scored rows collected once when they fit the driver, else on Spark (``engine``, chosen
    as ``LinearRanker`` chooses; the same value bit for bit).
    ``metricName`` takes either spelling of :mod:`sparkrank.evaluation.names`:

    * ``ndcg@K`` / ``ndcg`` (with ``k``): mean over groups of NDCG@K, gain ``2**y − 1``,
      discount ``ndcgDiscount``; groups with zero ideal DCG follow ``zeroIdcg``;
    * ``meanNDCG`` / ``mean_ndcg``: mean over groups of the average of NDCG@1..size;
    * ``pairwiseAccuracy`` / ``pairwise_accuracy``: correctly ordered preference pairs / all
      pairs (pooled over groups; tied scores count as wrong);
    * ``auc``: the same with tied pairs counted ½ (WMW);
    * ``positivesAtTop`` / ``positives_at_top`` and ``precision@K``: bipartite by ``label > 0``.

    All are larger-is-better.  Rows of a group must carry the same ``groupCol`` value (several
    columns comma-separated form one id, as in ``LinearRanker``); ``groupCol=""`` evaluates all
    rows as one ranking.
    """

    metricName: Param[str] = Param(Params._dummy(), "metricName", f"ndcg (with k) or {METRICS_HELP}",
                                   typeConverter=_metric_name)
    k: Param[int] = Param(Params._dummy(), "k", "NDCG cut-off for metricName='ndcg'", typeConverter=_positive_int)
    groupCol: Param[str] = Param(Params._dummy(), "groupCol", "query/group id column ('' = one global ranking)",
                                 typeConverter=lambda v: "" if v is None else TypeConverters.toString(v))
    ndcgDiscount: Param[str] = Param(Params._dummy(), "ndcgDiscount", "letor (1/log2(max(2,i))) or yahoo (1/log2(i+1))",
                                     typeConverter=_one_of("ndcgDiscount", NDCG_DISCOUNTS))
    zeroIdcg: Param[str] = Param(Params._dummy(), "zeroIdcg",
                                 "NDCG of a group with zero ideal DCG: zero, one, or skip (left out of the mean)",
                                 typeConverter=_one_of("zeroIdcg", ZERO_IDCG_RULES))
    engine: Param[str] = Param(Params._dummy(), "engine",
                               "where the metrics run: auto (in the driver when the scored rows fit it, as "
                               "LinearRanker's engine=auto), local (collected once through Arrow), spark",
                               typeConverter=_one_of("engine", ML_ENGINES))

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
        engine: str = defaults.ML_ENGINE,
    ):
        super().__init__()
        self._setDefault(metricName="ndcg@10", k=10, groupCol="qid", labelCol="label", predictionCol="prediction",
                         ndcgDiscount=DEFAULT_NDCG_DISCOUNT, zeroIdcg=DEFAULT_ZERO_IDCG, engine=defaults.ML_ENGINE)
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

    def _metric(self) -> tuple[str, int]:
        """The canonical metric name and the cut-off the kernel must compute."""
        name = self.getMetricName()
        if name.strip().lower() == _NDCG_WITH_K:
            k = self.getOrDefault(self.k)
            return f"ndcg@{k}", k
        name = canonical_metric(name)
        return name, metric_cutoff(name) or 1

    def _evaluate(self, dataset) -> float:
        from ..evaluation.kernel import MetricsKernel
        from ..io.sources import ColumnSpec
        from ..io.spark.executors import prepare_executors

        label, score = self.getLabelCol(), self.getPredictionCol()
        group = ColumnSpec.parse_group(self.getGroupCol())
        for what, col in (("labelCol", label), ("predictionCol", score)) + tuple(("groupCol", g) for g in group):
            if col not in dataset.columns:
                raise DataError(f"RankingEvaluator: no {what} column {col!r}; columns are {', '.join(dataset.columns)}")
        name, k = self._metric()
        prepare_executors(dataset.sparkSession)
        kernel = MetricsKernel((k,), self.getOrDefault(self.ndcgDiscount), self.getOrDefault(self.zeroIdcg))
        try:
            engine = self._engine_over(dataset, label, group, score)
        except DataError as exc:  # e.g. a NaN prediction: the engine's feature column 0
            raise DataError(f"RankingEvaluator (feature column 0 is predictionCol {score!r}): {exc}") from exc
        with engine:
            return float(kernel.finish(engine.run(np.ones(1), kernel).stats)[name])

    def _engine_over(self, dataset, label: str, group: tuple[str, ...], score: str):
        """The engine the metrics run on, chosen as ``LinearRanker`` chooses (``engine``): scored
        rows that fit the driver are collected once through Arrow (one Spark job) instead of
        being shuffled into Spark blocks -- and a frame ``LinearRankerModel.transform`` made is
        scored here from its input, collected once per input (:mod:`sparkrank.ml.scored_rows`);
        every way gives the same metrics bit for bit."""
        from pyspark.sql import functions as F

        from ..engines.registry import engine_for, make_engine, runs_in_process
        from ..io.sources import ColumnSpec, FrameSource
        from .local_fit import choose_fit_engine, collect_rows
        from .scored_rows import scored_by, scored_data

        requested = self.getOrDefault(self.engine)
        by = scored_by(dataset)
        if by is not None and by.prediction_col == score:
            data = scored_data(by, label, group, requested, _SCORE)
            if data is not None:
                return engine_for(data)
        # the prediction as the only feature and weight 1: the engine's scores are the predictions
        # (1.0·p is exact), and the pooled metrics come from the same kernel as everywhere else
        scored = dataset.withColumn(_SCORE, F.col(score).cast("double"))
        source = FrameSource(scored, ColumnSpec(label, group, feature_cols=(_SCORE,)))
        kind, reason = choose_fit_engine(requested, source)
        log.debug("RankingEvaluator: the %s engine (%s)", kind, reason)
        if runs_in_process(kind):
            return engine_for(collect_rows(source, 1))
        return make_engine(source, kind, spark=dataset.sparkSession, n_features=1)
