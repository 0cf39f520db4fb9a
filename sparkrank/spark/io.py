"""Ranking data as Spark DataFrames: Parquet (any of the feature layouts) or SVMlight text.

SVMlight is parsed on the executors by the same numba scanner as the local reader
(:mod:`sparkrank.spark.svmlight`), so a large LETOR file never passes through the driver
and errors name the line in the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.block import DataError
from ..datasets import resolve_input


@dataclass(frozen=True)
class Columns:
    """Column names of a ranking DataFrame."""

    label: str = "label"
    qid: str | None = "qid"
    features: str = "features"


def read_dataframe(
    spark,
    path: str,
    *,
    columns: Columns = Columns(),
    feature_cols: list[str] | None = None,
    fmt: str = "auto",
):
    """Load ``path`` as a DataFrame with label, optional qid and features columns.

    Parameters
    ----------
    spark : SparkSession
    path : str
        Parquet file/directory, SVMlight/LETOR text (``sample:train`` for the bundled sample).
    columns : Columns
        Names of the label, qid and features columns in the Parquet data.
    feature_cols : list of str, optional
        Numeric columns to use as dense features (assembled into ``columns.features``).
    fmt : {"auto", "parquet", "svmlight"}

    Returns
    -------
    (DataFrame, Columns)
        The frame and the column names to train on (qid is None if absent).
    """
    from pyspark.sql import functions as F

    path = resolve_input(path)
    if fmt == "auto":
        from ..data.io import is_parquet

        fmt = "parquet" if is_parquet(path) or not _looks_like_text(path) else "svmlight"
    if fmt == "svmlight":
        df = read_svmlight_dataframe(spark, path)
        return df, Columns("label", "qid" if "qid" in df.columns else None, "features")
    if fmt != "parquet":
        raise ValueError(f"unknown format {fmt!r}; use auto, parquet or svmlight")
    df = spark.read.parquet(path)
    names = df.columns
    if columns.label not in names:
        raise DataError(f"{path}: no label column {columns.label!r}; columns are {', '.join(names)}")
    if feature_cols:
        missing = [c for c in feature_cols if c not in names]
        if missing:
            raise DataError(f"{path}: feature columns not found: {', '.join(missing)}")
        df = df.withColumn(columns.features, F.array(*[F.col(c).cast("double") for c in feature_cols]))
    qid = columns.qid if columns.qid and columns.qid in names else None
    return df, Columns(columns.label, qid, columns.features)


def _looks_like_text(path: str) -> bool:
    import os

    if os.path.isdir(path):
        return False
    with open(path, "rb") as f:
        head = f.read(4)
    return head != b"PAR1"


def read_svmlight_dataframe(spark, path, qid_type: str | None = None):
    """SVMlight/LETOR text parsed on the executors: see :mod:`sparkrank.spark.svmlight`.

    ``qid_type`` is accepted for compatibility and ignored: the first qid of the input
    decides (:class:`~sparkrank.data.svmlight.QidLayout`), on both engines.
    """
    from .svmlight import read_svmlight_dataframe as read

    return read(spark, path)
