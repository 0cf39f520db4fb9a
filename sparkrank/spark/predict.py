"""Score a DataFrame with a model, keeping the user's other columns (ids) beside the score."""

from __future__ import annotations

import numpy as np

from ..conventions import PREDICTION_COL
from ..data.arrow import table_to_csr
from ..numerics.linalg import csr_dot
from ..model import check_model_width
from .io import feature_spec
from .worker import worker_task


def predict_dataframe(df, model, *, features_col: str = "features", score_col: str = PREDICTION_COL,
                      keep_features: bool = False, data_name: str = "the data"):
    """``df`` without its feature columns (all of ``df`` with ``keep_features``), plus
    ``score_col = w·x`` (``w'·((x − shift)·scale)`` for a standardized model), a lazy DataFrame.
    ``data_name``: how a message names ``df`` (rows wider than the model are an error)."""
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
            X = table_to_csr(batch, spec, None, np.float64, "predict: ")
            check_model_width(X.shape[1], weights.shape[0], source, data_name)  # a DataError the driver recovers
            s = csr_dot(X, weights[: X.shape[1]])
            if intercept:
                s += intercept
            cols = [batch.column(batch.schema.get_field_index(c)) for c in keep]
            yield pa.RecordBatch.from_arrays(cols + [pa.array(s)], names=keep + [score_col])

    return df.mapInArrow(worker_task(score), schema)
