"""Ranking data as Spark DataFrames: the column names to train on, and SVMlight text on the executors.

Which reader reads which input is :mod:`sparkrank.io.sources`; this module keeps the
Spark-specific SVMlight reader.

SVMlight is parsed on the executors by the same numba scanner as the local reader
(``spark.read.text`` -> ``mapInArrow`` over line batches), so a large LETOR file never
passes through the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.block import DataError


@dataclass(frozen=True)
class Columns:
    """Column names of a ranking DataFrame."""

    label: str = "label"
    qid: str | None = "qid"
    features: str = "features"


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
