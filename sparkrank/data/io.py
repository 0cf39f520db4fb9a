"""Read and write ranking data by path: SVMlight/LETOR text or Parquet.

Parquet layout written here (and read fastest, see SPARK-NOTES): ``label`` double,
optional ``qid`` (long or string), ``indices`` list<int32> (0-based feature columns) and
``values`` list<double|float>; the feature count is stored in the schema metadata key
``sparkrank.n_features``.  Also read: a ``features`` column holding a dense
list<double|float> or a Spark ML vector struct (``type, size, indices, values``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa

from .arrow import FeatureSpec, label_array, table_to_csr
from .block import DROP_HINT, INVALID_ROWS, DataError, RankingData

log = logging.getLogger("sparkrank")


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


def ranking_data_from_table(
    table: pa.Table,
    columns,
    *,
    where: str = "",
    n_features: int | None = None,
    stored_n_features: int | None = None,
    dtype: type = np.float64,
    drop_invalid_rows: bool = False,
) -> RankingData:
    """A :class:`RankingData` from an Arrow table whose columns were checked against
    ``columns`` (a :class:`~sparkrank.io.sources.ColumnSpec`).

    ``drop_invalid_rows``: drop (and log the count of) :data:`~sparkrank.data.block.INVALID_ROWS`
    instead of raising :class:`DataError`.
    """
    from ..io.sources import combine_group_columns

    label_col = columns.label
    group = combine_group_columns(table, columns.group) if columns.group else None
    if group is not None:
        table = table.append_column("__sparkrank_group", group)
    group_col = None if group is None else "__sparkrank_group"
    if drop_invalid_rows:
        table = _drop_invalid_rows(table, label_col, group_col, where)
    labels = label_array(table.column(label_col), label_col, where, DROP_HINT)
    qid = None
    if group_col is not None:
        col = table.column(group_col)
        if col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise DataError(f"{where}group id {columns.group_name!r} is null in {col.null_count} rows, "
                            f"first in row {row}{DROP_HINT}")
        qid = col.to_numpy(zero_copy_only=False)
    if columns.feature_cols:
        X = _named_columns_to_csr(table, columns.feature_cols, dtype, where)
    else:
        spec = FeatureSpec.detect(table.column_names, columns.features)
        X = table_to_csr(table, spec, n_features or stored_n_features, dtype, where)
    return RankingData.from_arrays(X, labels, qid, dtype=dtype, n_features=n_features)


def _named_columns_to_csr(table: pa.Table, names, dtype, where: str):
    """Dense features from named numeric columns (nulls and non-finite values are errors)."""
    import scipy.sparse as sp

    dense = np.empty((table.num_rows, len(names)), dtype=dtype)
    for j, name in enumerate(names):
        col = table.column(name)
        if col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise DataError(f"{where}feature column {name!r} is null in row {row}")
        try:
            dense[:, j] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{where}feature column {name!r} is not numeric ({col.type})") from None
    bad = np.argwhere(~np.isfinite(dense))
    if bad.size:
        r, c = int(bad[0, 0]), int(bad[0, 1])
        raise DataError(f"{where}feature column {names[c]!r} of row {r} is {float(dense[r, c])!r}")
    return sp.csr_matrix(dense)


def write_parquet(path: str | Path, data: RankingData, *, input_order: bool = True) -> None:
    """Write ``data`` in the ``indices``/``values`` layout (rows in input order by default) to a
    local path or any Hadoop URI, atomically (:meth:`sparkrank.io.fs.FileSystem.write_bytes`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    X, labels = data.X, data.labels
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
    pq.write_table(table, sink)
    filesystem(str(path)).write_bytes(str(path), sink.getvalue().to_pybytes())  # atomic, any URI


def _drop_invalid_rows(table, label_col: str, qid_col: str | None, where: str):
    """``table`` without :data:`INVALID_ROWS`; logs how many were dropped."""
    label = table.column(label_col)
    bad = label.is_null().to_numpy(zero_copy_only=False)
    values = np.asarray(label.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
    bad |= ~np.isfinite(values)
    if qid_col is not None:
        bad |= table.column(qid_col).is_null().to_numpy(zero_copy_only=False)
    n_bad = int(bad.sum())
    if n_bad:
        log.warning("%sdropped %d of %d %s", where, n_bad, table.num_rows, INVALID_ROWS)
        table = table.filter(pa.array(~bad))
    return table
