"""Scores on the executors: a DataFrame scored by a model (the user's other columns, ids, kept
beside the score), and per-query metrics of scored rows computed where the groups live."""

from __future__ import annotations

import functools

import numpy as np

from ...conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG, PREDICTION_COL
from ...data.arrow import table_to_csr
from ...data.block import DataError, RankingData, check_fixed_width, check_model_width
from ...data.groups import QueryGroups
from ...evaluation.metrics import DEFAULT_KS, per_group_metrics
from ...numerics.linalg import csr_dot
from ...io.spark.columns import feature_spec
from ...io.spark.worker import worker_task


def predict_dataframe(df, model, *, features_col: str = "features", score_col: str = PREDICTION_COL,
                      keep_features: bool = False, data_name: str = "the data", fixed_width: bool = False):
    """``df`` without its feature columns (all of ``df`` with ``keep_features``), plus
    ``score_col = w·x`` (``w'·((x − shift)·scale)`` for a standardized model), a lazy DataFrame.
    ``data_name``: how a message names ``df`` (rows wider than the model are an error, and so
    are narrower rows when ``fixed_width``: :func:`~sparkrank.data.block.check_fixed_width`)."""
    from pyspark.sql.types import DoubleType, StructField, StructType

    spec = feature_spec(df, features_col)
    feature_cols = spec.columns
    keep = list(df.columns) if keep_features else [c for c in df.columns if c not in feature_cols]
    if score_col in keep:
        raise ValueError(f"predict: the data already has a column {score_col!r}; choose another score column")
    schema = StructType([f for f in df.schema.fields if f.name in keep] + [StructField(score_col, DoubleType())])
    # raw-space weights and constant of a standardized model (sparkrank.standardization)
    weights = np.asarray(model.raw_weights, dtype=np.float64)
    intercept = float(model.intercept)
    source = model.source

    def score(batches):
        import pyarrow as pa

        for batch in batches:
            s = score_batch(batch, spec, weights, intercept, source, data_name, fixed_width)
            cols = [batch.column(batch.schema.get_field_index(c)) for c in keep]
            yield pa.RecordBatch.from_arrays(cols + [pa.array(s)], names=keep + [score_col])

    return df.mapInArrow(worker_task(score), schema)


def score_batch(batch, spec, weights: np.ndarray, intercept: float, source, data_name: str,
                fixed_width: bool = False) -> np.ndarray:
    """``w·x + b`` of every row of an Arrow batch or table: the executors' scoring, and the
    driver's when it scores collected rows (:mod:`sparkrank.ml.scored_rows`), the same numbers
    bit for bit.  Rows wider than ``weights`` are a ``DataError`` naming ``source``/``data_name``,
    and so are narrower rows when ``fixed_width`` (:func:`~sparkrank.data.block.check_fixed_width`)."""
    X = table_to_csr(batch, spec, None, np.float64, "predict: ")
    check_model_width(X.shape[1], weights.shape[0], source, data_name)  # a DataError the driver recovers
    if fixed_width and batch.num_rows:
        check_fixed_width(X.shape[1], weights.shape[0], source, data_name)
    s = csr_dot(X, weights[: X.shape[1]])
    if intercept:
        s += intercept
    return s


def per_query_metrics(scored, *, label_col: str = "label", qid_col: str = "qid", score_col: str = PREDICTION_COL,
                      ks=DEFAULT_KS, discount: str = DEFAULT_NDCG_DISCOUNT, zero_idcg: str = DEFAULT_ZERO_IDCG):
    """One row per query: :func:`~sparkrank.evaluation.per_group_metrics`' columns (rows, pairs,
    pairwise accuracy, AUC, NDCG@k, mean NDCG, positives, positives at the top, precision@k).

    ``scored`` needs the label, qid and score columns (e.g. from
    :func:`predict_dataframe`); rows are hash-partitioned by qid
    so every query is evaluated whole.
    """
    metrics = functools.partial(per_group_metrics, ks=tuple(ks), discount=discount, zero_idcg=zero_idcg)
    return per_group_frame(scored, metrics, label_col=label_col, qid_col=qid_col, score_col=score_col)


def per_group_frame(scored, metrics, *, label_col: str, qid_col: str, score_col: str):
    """One row per query of ``scored``: ``metrics(groups, scores)``'s columns (a dict of arrays,
    one entry per group), computed on the executors where the query's rows are (hash-partitioned
    by qid, so every query is whole)."""
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    # the columns and their types are the metrics' own (what the local engine writes)
    sample = metrics(QueryGroups.single(np.zeros(1)), np.zeros(1))
    names = list(sample)
    qid_field = next(f for f in scored.schema.fields if f.name == qid_col)
    schema = StructType([StructField(qid_col, qid_field.dataType)] + [
        StructField(n, LongType() if np.issubdtype(sample[n].dtype, np.integer) else DoubleType()) for n in names])

    def task(batches):
        import pyarrow as pa

        batches = list(batches)
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        if table.num_rows == 0:
            return
        labels = table.column(label_col).to_numpy(zero_copy_only=False).astype(np.float64)
        qid = table.column(qid_col).to_numpy(zero_copy_only=False)
        scores = table.column(score_col).to_numpy(zero_copy_only=False).astype(np.float64)
        data = RankingData.from_arrays(np.zeros((len(labels), 0)), labels, qid)
        # scores follow the input order; the groups follow the stored (grouped) order
        per = metrics(data.groups, scores[data.row_order])
        cols = [pa.array(data.qids)] + [pa.array(per[n]) for n in names]
        yield pa.RecordBatch.from_arrays(cols, names=[qid_col] + names)

    return scored.select(label_col, qid_col, score_col).repartition(qid_col).mapInArrow(worker_task(task), schema)


def shaped_scores(df, cols, model, *, data_name: str, group: list[str], feature_cols: tuple[str, ...],
                  prediction_col: str, keep_cols=None, rank: bool = False, partition_by=(), fixed_width: bool = False):
    """The scored DataFrame ``predict`` writes: the group id (``group``'s columns that the frame has,
    and the group column trained on), the kept columns (``keep_cols``, else every column but the
    features, named ``feature_cols`` included), the prediction and (``rank``) the rank inside the
    group (1 = highest score); ``fixed_width``: narrower rows than the model are an error
    (:func:`predict_dataframe`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    pred = prediction_col
    scored = predict_dataframe(df, model, features_col=cols.features, score_col=pred, data_name=data_name,
                               fixed_width=fixed_width)
    group = [g for g in group if g in scored.columns]
    if cols.qid and cols.qid not in group:
        group.append(cols.qid)
    if keep_cols:
        missing = [c for c in keep_cols if c not in scored.columns]
        if missing:
            raise DataError(f"{data_name}: --keep-cols {', '.join(missing)}: no such column; columns are "
                            f"{', '.join(c for c in scored.columns if c != pred)}")
        keep = [c for c in [*group, *keep_cols, *partition_by] if c != pred]
        scored = scored.select(*dict.fromkeys(keep), pred)
    elif feature_cols:  # "every column except the features": named ones too
        scored = scored.drop(*[c for c in feature_cols if c not in (*group, *partition_by)])
    if rank:
        order = F.col(pred).desc()
        window = Window.partitionBy(*[F.col(f"`{g}`") for g in group]).orderBy(order) if group \
            else Window.orderBy(order)
        scored = scored.withColumn("rank", F.row_number().over(window))
    return scored
