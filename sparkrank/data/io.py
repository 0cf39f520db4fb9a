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

from ..datasets import resolve_input
from .arrow import FeatureSpec, label_array, table_to_csr
from .block import DROP_HINT, INVALID_ROWS, DataError, RankingData

log = logging.getLogger("sparkrank")

PARQUET_SUFFIXES = (".parquet", ".pq")


def is_parquet(path: str | Path) -> bool:
    p = Path(path)
    return p.suffix in PARQUET_SUFFIXES or (p.is_dir() and any(p.glob("*.parquet")))


def read_ranking_data(
    path: str | Path,
    *,
    n_features: int | None = None,
    dtype: type = np.float64,
    label_col: str = "label",
    qid_col: str | None = "qid",
    features_col: str = "features",
    drop_invalid_rows: bool = False,
) -> RankingData:
    """Load SVMlight/LETOR text (optionally .gz) or Parquet into a :class:`RankingData`.

    ``sample:train`` / ``sample:test`` name the bundled sample files.  With
    ``drop_invalid_rows`` Parquet rows with a null/non-finite label or a null group id
    are dropped (and counted in the log) instead of being an error.
    """
    path = resolve_input(str(path))
    if not Path(path).exists():
        raise FileNotFoundError(f"input {path} does not exist")
    if is_parquet(path):
        return read_parquet(path, n_features=n_features, dtype=dtype, label_col=label_col,
                            qid_col=qid_col, features_col=features_col, drop_invalid_rows=drop_invalid_rows)
    from .svmlight import load_svmlight

    return load_svmlight(path, n_features=n_features, dtype=dtype)


def read_parquet(
    path: str | Path,
    *,
    n_features: int | None = None,
    dtype: type = np.float64,
    label_col: str = "label",
    qid_col: str | None = "qid",
    features_col: str = "features",
    drop_invalid_rows: bool = False,
) -> RankingData:
    """Read a Parquet file or directory (see module docstring for the layouts).

    ``drop_invalid_rows``: drop (and log the count of) :data:`~sparkrank.data.block.INVALID_ROWS`
    instead of raising :class:`DataError`.
    """
    import pyarrow.parquet as pq

    table = pq.read_table(str(path))
    names = table.column_names
    where = f"{path}: "
    if label_col not in names:
        raise DataError(f"{where}no label column {label_col!r} (columns: {', '.join(names)})")
    if drop_invalid_rows:
        table = _drop_invalid_rows(table, label_col, qid_col if qid_col in names else None, where)
    labels = label_array(table.column(label_col), label_col, where, DROP_HINT)
    qid = None
    if qid_col and qid_col in names:
        col = table.column(qid_col)
        if col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise DataError(f"{where}column {qid_col!r} is null in {col.null_count} rows, first in row {row}{DROP_HINT}")
        qid = col.to_numpy(zero_copy_only=False)
    meta = table.schema.metadata or {}
    stored_n = int(meta[b"sparkrank.n_features"]) if b"sparkrank.n_features" in meta else None
    spec = FeatureSpec.detect(names, features_col)
    X = table_to_csr(table, spec, n_features or stored_n, dtype, where)
    return RankingData.from_arrays(X, labels, qid, dtype=dtype, n_features=n_features)


def write_parquet(path: str | Path, data: RankingData, *, input_order: bool = True) -> None:
    """Write ``data`` in the ``indices``/``values`` layout (rows in input order by default)."""
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
    pq.write_table(table, str(path))


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
