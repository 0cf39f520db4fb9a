"""Read and write ranking data by path: SVMlight/LETOR text or Parquet.

Parquet layout written here (and read fastest, see SPARK-NOTES): ``label`` double,
optional ``qid`` (long or string), ``indices`` list<int32> (0-based feature columns) and
``values`` list<double|float>; the feature count is stored in the schema metadata key
``sparkrank.n_features``.  Also read: a ``features`` column holding a dense
list<double|float> or a Spark ML vector struct (``type, size, indices, values``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .block import RankingData


def read_ranking_data(
    path: str | Path,
    *,
    n_features: int | None = None,
    dtype: type = np.float64,
    label_col: str = "label",
    qid_col: str | None = "qid",
    features_col: str = "features",
    feature_cols: list[str] | None = None,
    drop_invalid_rows: bool = False,
    format: str = "auto",
    where: str | None = None,
) -> RankingData:
    """Load SVMlight/LETOR text (``.gz``/``.bz2``), Parquet or CSV into a :class:`RankingData`.

    A thin call of :func:`sparkrank.io.sources.open_source` (``sample:train`` / ``sample:test``
    name the bundled sample; directories, Hive partitions and ``where`` filters work as
    there).  ``qid_col`` may name several columns (``"user_id,session_id"``); ``None`` or
    ``""`` ranks all rows as one group.  With ``drop_invalid_rows`` rows with a
    null/non-finite label or a null group id are dropped (and counted in the log) instead
    of being an error.
    """
    from ..io.sources import ColumnSpec, open_source

    columns = ColumnSpec(label_col, ColumnSpec.parse_group(qid_col), features_col, tuple(feature_cols or ()))
    source = open_source(str(path), format=format, columns=columns, where=where)
    return source.ranking_data(n_features=n_features, dtype=dtype, drop_invalid_rows=drop_invalid_rows)


def read_parquet(path: str | Path, **options) -> RankingData:
    """:func:`read_ranking_data` of a Parquet file or directory (see the module docstring)."""
    return read_ranking_data(path, format="parquet", **options)


def write_parquet(path: str | Path, data: RankingData, *, input_order: bool = True,
                  row_group_size: int | None = None) -> None:
    """Write ``data`` in the ``indices``/``values`` layout (rows in input order by default) to a
    local path or any Hadoop URI, atomically (:meth:`sparkrank.io.fs.FileSystem.write_bytes`).
    ``row_group_size``: rows per Parquet row group (pyarrow's default: one group up to 1M rows);
    the Spark engine reads a file with at least one row group per partition straight into its
    blocks (``spark/parquet_blocks.py``)."""
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
    from ..io.fs import filesystem

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=row_group_size)
    filesystem(str(path)).write_bytes(str(path), sink.getvalue().to_pybytes())  # atomic, any URI
