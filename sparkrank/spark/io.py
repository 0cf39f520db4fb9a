"""Ranking data as Spark DataFrames: Parquet (any of the feature layouts) or SVMlight text.

SVMlight is parsed on the executors by the same numba scanner as the local reader
(``spark.read.text`` -> ``mapInArrow`` over line batches), so a large LETOR file never
passes through the driver.
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


def read_svmlight_dataframe(spark, path: str, qid_type: str | None = None):
    """Parse SVMlight/LETOR text on the executors into ``label, qid, indices, values``.

    ``indices`` (0-based) and ``values`` are list columns (sparkrank's Parquet layout).  The qid
    column is ``long`` when the sampled lines have integer qids, else ``string``; files
    without qids get no qid column.
    """
    import pyarrow as pa

    from ..data.svmlight import SVMLightFormatError, parse_svmlight_bytes

    text = spark.read.text(path)
    if qid_type is None:
        sample = "\n".join(r.value for r in text.limit(1000).collect()).encode()
        parsed = parse_svmlight_bytes(sample, name=path)
        qid_type = None if parsed.qid is None else ("long" if parsed.qid.dtype.kind in "iu" else "string")
    fields = [pa.field("label", pa.float64())]
    if qid_type:
        fields.append(pa.field("qid", pa.int64() if qid_type == "long" else pa.string()))
    fields += [pa.field("indices", pa.list_(pa.int32())), pa.field("values", pa.list_(pa.float64()))]
    schema = pa.schema(fields)
    ddl = "label double" + (f", qid {qid_type}" if qid_type else "") + ", indices array<int>, values array<double>"

    def parse(batches):
        from pyspark import TaskContext

        pid = TaskContext.get().partitionId()
        for b, batch in enumerate(batches):
            lines = batch.column(0).to_pylist()
            raw = "\n".join(lines).encode()
            try:
                f = parse_svmlight_bytes(raw, name=f"{path} [partition {pid}, batch {b}]")
            except SVMLightFormatError as exc:
                line = lines[exc.line - 1] if 0 < exc.line <= len(lines) else ""
                raise DataError(f"{exc}; the line reads: {line[:200]!r}") from None
            if (f.qid is None) != (qid_type is None):
                raise DataError(f"{path} [partition {pid}]: some lines have qid:, others not")
            X = f.X
            offsets = pa.array(X.indptr.astype(np.int32))
            cols = [pa.array(f.labels)]
            if qid_type == "long":
                if f.qid.dtype.kind not in "iu":
                    raise DataError(f"{path} [partition {pid}]: non-integer qid {f.qid[0]!r} after integer qids")
                cols.append(pa.array(f.qid.astype(np.int64)))
            elif qid_type:
                cols.append(pa.array(f.qid.astype(str)))
            cols += [pa.ListArray.from_arrays(offsets, pa.array(X.indices.astype(np.int32))),
                     pa.ListArray.from_arrays(offsets, pa.array(X.data.astype(np.float64)))]
            yield pa.RecordBatch.from_arrays(cols, schema=schema)

    return text.mapInArrow(parse, ddl)
