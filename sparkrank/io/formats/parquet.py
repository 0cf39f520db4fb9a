"""Parquet: read by Spark and by ``pyarrow.dataset``, written in the ``indices``/``values`` layout.

Layout written (and read fastest, see SPARK-NOTES): ``label`` double, optional ``qid`` (long or
string), ``indices`` list<int32> (0-based feature columns) and ``values`` list<double|float>; the
feature count is stored in the schema metadata key ``sparkrank.n_features``.  Also read: a
``features`` column holding a dense list<double|float> or a Spark ML vector struct (``type,
size, indices, values``), or named feature columns.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import uri as U
from ..fs import filesystem
from .arrow import ArrowFormat, arrow_dataset

log = logging.getLogger("sparkrank")

PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class ParquetFormat(ArrowFormat):
    """Parquet files, directories of them, Hive partitions (``day=…/``)."""

    def read_spark(self, spark, uris, base_path=None):
        reader = spark.read if base_path is None else spark.read.option("basePath", base_path)
        return reader.parquet(*uris)

    def local_dataset(self, paths, base_dir=None):
        return arrow_dataset(paths, "parquet", base_dir)

    def read_batch_by_batch(self, dataset, columns, where_filter, where, read):
        """Local Parquet read batch by batch into the final arrays (:mod:`sparkrank.data.parquet_rows`),
        or ``None`` when that reader leaves the input to the whole-table path (bad data: that path
        names the file and row; or a case it does not handle).  The caller reads the table only
        after this returned, when the batch reader's arrays are gone."""
        from ...data.parquet_rows import CannotStream, read_parquet_rows
        from ..where import filter_columns, to_arrow_filter

        flt = None if not where_filter else to_arrow_filter(where_filter, dataset.schema, where)
        try:
            return read_parquet_rows(dataset, columns, flt=flt, where=where, **read,
                                     filter_columns=filter_columns(where_filter, dataset.schema.names) if where_filter
                                     else ())
        except CannotStream as exc:
            log.debug("%sread as one table: %s", where, exc)
            return None

    def data_shape(self, files, columns, itemsize):
        import pyarrow.parquet as pq  # Parquet only: the SVMlight path needs neither Arrow nor scipy

        from ...data import memory
        from ...data.arrow import FeatureSpec

        paths = [path for path, _ in files]
        if columns.feature_cols:  # named numeric columns: dense rows of them
            rows = sum(pq.ParquetFile(path).metadata.num_rows for path in paths)
            return memory.DataShape(rows, len(columns.feature_cols), itemsize=itemsize)
        spec = FeatureSpec.detect(pq.read_schema(paths[0]).names, columns.features)
        return memory.parquet_shape(paths, spec, itemsize)

    def row_group_files(self, source):
        """The local paths of the input's files when Spark would read them as they are (no
        ``--where``, no assembled features or combined group columns), for blocks read straight
        from the files (:mod:`sparkrank.engines.spark.parquet_blocks`); else ``None``."""
        columns = source.columns
        if source.where or columns.feature_cols or len(columns.group) != 1:
            return None
        paths = [U.local_path(entry.path) for entry in source.files]
        return None if not paths or None in paths else paths

    def write_local(self, path, data):
        write_parquet(path, data)

    @property
    def writes_on_spark(self) -> bool:
        return True

    def write_spark(self, df, path, *, mode, partition_by=()):
        from ..outputs import write_dataframe

        write_dataframe(df, path, mode=mode, partition_by=partition_by)


def write_parquet(path: str | Path, data, *, input_order: bool = True,
                  row_group_size: int | None = None) -> None:
    """Write ``data`` in the ``indices``/``values`` layout (rows in input order by default) to a
    local path or any Hadoop URI, atomically (:meth:`sparkrank.io.fs.FileSystem.write_bytes`).
    ``row_group_size``: rows per Parquet row group (pyarrow's default: one group up to 1M rows);
    the Spark engine reads a file with at least one row group per partition straight into its
    blocks (``engines/spark/parquet_blocks.py``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    X, labels = data.X, data.labels
    if isinstance(X, np.ndarray):  # dense rows: the CSR the reader would have made (zeros not stored)
        import scipy.sparse as sp

        X = sp.csr_matrix(X)
    qid = None if data.qids is None else np.repeat(data.qids, data.groups.group_sizes)
    if input_order:
        inverse = np.argsort(data.row_order)
        X, labels = X[inverse], labels[inverse]
        qid = None if qid is None else qid[inverse]
    offsets = pa.array(X.indptr.astype(np.int32))
    columns = {
        "label": pa.array(labels),
        "indices": pa.ListArray.from_arrays(offsets, pa.array(X.indices.astype(np.int32))),
        "values": pa.ListArray.from_arrays(offsets, pa.array(X.data)),
    }
    if qid is not None:
        columns["qid"] = pa.array(qid)
    table = pa.table(columns).replace_schema_metadata({"sparkrank.n_features": str(data.n_features)})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=row_group_size)
    filesystem(str(path)).write_bytes(str(path), sink.getvalue().to_pybytes())  # atomic, any URI
