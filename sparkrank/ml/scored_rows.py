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


@dataclass(frozen=True)
class CollectedInput:
    """A scored frame's input rows in this process: the label, group-id and feature columns."""

    table: object  # pyarrow.Table
    label: str
    qid_col: str | None
    spec: object  # FeatureSpec of the model's features column
    name: str


class InputRows:
    """One slot: the collected rows of the last input DataFrame (per object and key)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slot: tuple | None = None  # (dataset, key, CollectedInput)
        self.collects = 0

    def rows(self, dataset, key: tuple, collect) -> CollectedInput | None:
        """The rows kept for ``dataset`` (the same object) and ``key``, else ``collect()``'s
        (kept unless ``None``: the rows do not fit the driver)."""
        with self._lock:
            if self._slot is not None and self._slot[0] is dataset and self._slot[1] == key:
                return self._slot[2]
            rows = collect()  # a new input replaces the kept one; rows left on Spark do not
            if rows is not None:
                self.collects += 1
                self._slot = (dataset, key, rows)
            return rows

    def release(self) -> None:
        with self._lock:
            self._slot = None


#: The process-wide slot used by :class:`~sparkrank.ml.RankingEvaluator`.
INPUTS = InputRows()


def scored_data(by: ScoredBy, label: str, group: tuple[str, ...], requested: str, score_name: str):
    """The rows of ``by.dataset`` scored in this process, as the :class:`RankingData` the
    evaluator's engine runs on (one feature: the score, ``score_name`` in messages), or ``None``
    when the ``requested`` engine (``auto``: by the rows' size) is not the in-process one.
    ``label`` and ``group`` are the evaluator's columns."""
    import pyarrow as pa

    from ..data.arrow import FeatureSpec
    from ..engines.spark.scoring import score_batch
    from .local_fit import decode_collected

    rows = INPUTS.rows(by.dataset, (label, tuple(group), by.features_col, requested),
                       lambda: _collect_input(by, label, group, requested))
    if rows is None:
        return None
    scores = _scores(rows, by.model, score_batch)
    offsets = pa.array(np.arange(len(scores) + 1, dtype=np.int32))
    score_col = "__sparkrank_scores"
    table = pa.table({rows.label: rows.table.column(rows.label),
                      **({rows.qid_col: rows.table.column(rows.qid_col)} if rows.qid_col else {}),
                      score_col: pa.ListArray.from_arrays(offsets, pa.array(scores, type=pa.float64()))})
    return decode_collected(table, rows.label, rows.qid_col, FeatureSpec(score_col, names=(score_name,)), None,
                            rows.name)


def _collect_input(by: ScoredBy, label: str, group: tuple[str, ...], requested: str) -> CollectedInput | None:
    """The input's label, group-id and feature columns collected once, when the ``requested``
    engine decides (as ``LinearRanker`` does) that they fit the driver; else ``None``."""
    from ..engines.registry import runs_in_process
    from ..io.sources import ColumnSpec, FrameSource
    from ..io.spark.columns import feature_spec
    from .local_fit import choose_fit_engine, collect_table

    inputs = FrameSource(by.dataset, ColumnSpec(label, group, by.features_col))
    kind, _ = choose_fit_engine(requested, inputs)
    if not runs_in_process(kind):
        return None
    df, cols = inputs.dataframe()
    spec = feature_spec(df, by.features_col)
    qid_col = cols.qid if cols.qid in df.columns else None
    names = list(dict.fromkeys([cols.label, *([qid_col] if qid_col else []), *spec.columns]))
    return CollectedInput(collect_table(df, names), cols.label, qid_col, spec, inputs.name)


def _scores(rows: CollectedInput, model, score_batch) -> np.ndarray:
    """The model's scores of the collected rows, a bad row named as a collected row is."""
    from ..data.arrow import RowError
    from ..data.block import DataError

    try:
        return score_batch(rows.table, rows.spec, np.asarray(model.raw_weights, dtype=np.float64),
                           float(model.intercept), model.source, rows.name)
    except RowError as exc:
        raise DataError(f"{rows.name}: row {exc.row + 1}: {exc.detail}") from None
