"""Per-query metrics of a scored DataFrame, computed where the groups live."""

from __future__ import annotations

import numpy as np

from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG, PREDICTION_COL
from ..evaluation.metrics import DEFAULT_KS, per_group_metrics
from .worker import worker_task


def per_query_metrics(scored, *, label_col: str = "label", qid_col: str = "qid", score_col: str = PREDICTION_COL,
                      ks=DEFAULT_KS, discount: str = DEFAULT_NDCG_DISCOUNT, zero_idcg: str = DEFAULT_ZERO_IDCG):
    """One row per query: :func:`~sparkrank.evaluation.per_group_metrics`' columns (rows, pairs,
    pairwise accuracy, AUC, NDCG@k, mean NDCG, positives, positives at the top, precision@k).

    ``scored`` needs the label, qid and score columns (e.g. from
    :func:`sparkrank.spark.predict.predict_dataframe`); rows are hash-partitioned by qid
    so every query is evaluated whole.
    """
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    from ..data.block import RankingData

    from ..data.groups import QueryGroups

    ks = tuple(ks)
    # the columns and their types are per_group_metrics' own (what the local engine writes)
    sample = per_group_metrics(QueryGroups.single(np.zeros(1)), np.zeros(1), ks=ks, discount=discount,
                               zero_idcg=zero_idcg)
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
        per = per_group_metrics(data.groups, scores[data.row_order], ks=ks, discount=discount, zero_idcg=zero_idcg)
        cols = [pa.array(data.qids)] + [pa.array(per[n]) for n in names]
        yield pa.RecordBatch.from_arrays(cols, names=[qid_col] + names)

    return scored.select(label_col, qid_col, score_col).repartition(qid_col).mapInArrow(worker_task(task), schema)
