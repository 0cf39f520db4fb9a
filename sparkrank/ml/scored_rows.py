"""Metrics of ``LinearRankerModel.transform(frame)`` without a Spark job per model.

``CrossValidator`` evaluates every model of a fold on the same validation DataFrame,
``evaluator.evaluate(model.transform(validation))`` (``pyspark.ml.tuning._parallelFitTasks``):
one scoring job per model, each sending the fold's rows through a Python worker.  A frame made
by :meth:`LinearRankerModel.transform <sparkrank.ml.LinearRankerModel>` remembers the model and
its input (:func:`remember`); when :class:`~sparkrank.ml.RankingEvaluator` runs in-process on
such a frame, the input's label, group and feature columns are collected once per input
DataFrame (:data:`INPUTS`, one slot, kept while the same DataFrame object comes back; freed by
:func:`sparkrank.ml.release_blocks`) and scored here by the executors' own scoring function
(:func:`~sparkrank.engines.spark.scoring.score_batch`), so the scores -- and the metric -- are
the Spark path's bit for bit.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

#: The attribute of a scored DataFrame that names its model and input.
_ATTR = "_sparkrank_scored_by"


@dataclass(frozen=True)
class ScoredBy:
    """How a DataFrame was scored: ``model`` (a :class:`~sparkrank.model.RankingModel`) on the
    ``features_col`` of ``dataset``, into ``prediction_col``."""

    model: object
    dataset: object
    features_col: str
    prediction_col: str


def remember(scored, model, dataset, features_col: str, prediction_col: str):
    """``scored`` (a DataFrame ``model`` made from ``dataset``), marked as such."""
    try:
        setattr(scored, _ATTR, ScoredBy(model, dataset, features_col, prediction_col))
    except AttributeError:  # a DataFrame class that takes no attributes (Spark Connect): scored on Spark
        pass
    return scored


def scored_by(df) -> ScoredBy | None:
    """How ``df`` was scored, when it is a frame :func:`remember` marked."""
    return getattr(df, _ATTR, None)


class InputRows:
    """One slot: the Arrow rows of the last input DataFrame collected (per object and columns)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._dataset = None
        self._table = None
        self.collects = 0

    def table(self, dataset, df, names: list[str]):
        """The columns ``names`` of ``df`` (prepared from ``dataset``), collected once while
        ``dataset`` is the same object."""
        from .local_fit import collect_table

        with self._lock:
            if self._dataset is dataset and self._key == tuple(names):
                return self._table
            self._dataset, self._key, self._table = None, None, None
            table = collect_table(df, names)
            self.collects += 1
            self._dataset, self._key, self._table = dataset, tuple(names), table
            return table

    def release(self) -> None:
        with self._lock:
            self._dataset, self._key, self._table = None, None, None


#: The process-wide slot used by :class:`~sparkrank.ml.RankingEvaluator`.
INPUTS = InputRows()


def scored_data(by: ScoredBy, source, score_name: str):
    """The rows of ``by.dataset`` scored in this process, as the :class:`RankingData` the
    evaluator's engine runs on (one feature: the score, column ``score_name`` in messages);
    ``source`` is a :class:`~sparkrank.io.sources.FrameSource` of ``by.dataset`` whose columns
    are the evaluator's label and group and the model's features."""
    import pyarrow as pa

    from ..data.arrow import FeatureSpec
    from ..engines.spark.scoring import score_batch
    from ..io.spark.columns import feature_spec
    from .local_fit import decode_collected

    df, cols = source.dataframe()
    spec = feature_spec(df, by.features_col)
    qid_col = cols.qid if cols.qid in df.columns else None
    names = list(dict.fromkeys([cols.label, *([qid_col] if qid_col else []), *spec.columns]))
    table = INPUTS.table(by.dataset, df, names)
    scores = _scores(table, spec, by.model, source.name, score_batch)
    offsets = pa.array(np.arange(len(scores) + 1, dtype=np.int32))
    score_col = "__sparkrank_scores"
    rows = pa.table({cols.label: table.column(cols.label),
                     **({qid_col: table.column(qid_col)} if qid_col else {}),
                     score_col: pa.ListArray.from_arrays(offsets, pa.array(scores, type=pa.float64()))})
    return decode_collected(rows, cols.label, qid_col, FeatureSpec(score_col, names=(score_name,)), None,
                            source.name)


def _scores(table, spec, model, name: str, score_batch) -> np.ndarray:
    """The model's scores of ``table``'s rows, a bad row named as a collected row is."""
    from ..data.arrow import RowError
    from ..data.block import DataError

    try:
        return score_batch(table, spec, np.asarray(model.raw_weights, dtype=np.float64), float(model.intercept),
                           model.source, name)
    except RowError as exc:
        raise DataError(f"{name}: row {exc.row + 1}: {exc.detail}") from None
