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
import scipy.sparse as sp

from ..datasets import resolve_input
from .block import DataError, RankingData

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
) -> RankingData:
    """Load SVMlight/LETOR text (optionally .gz) or Parquet into a :class:`RankingData`.

    ``sample:train`` / ``sample:test`` name the bundled sample files.
    """
    path = resolve_input(str(path))
    if not Path(path).exists():
        raise FileNotFoundError(f"input {path} does not exist")
    if is_parquet(path):
        return read_parquet(path, n_features=n_features, dtype=dtype, label_col=label_col,
                            qid_col=qid_col, features_col=features_col)
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
) -> RankingData:
    """Read a Parquet file or directory (see module docstring for the layouts)."""
    import pyarrow.parquet as pq

    table = pq.read_table(str(path))
    names = table.column_names
    if label_col not in names:
        raise DataError(f"{path}: no label column {label_col!r} (columns: {', '.join(names)})")
    labels = _column_numpy(table, label_col, path)
    qid = None
    if qid_col and qid_col in names:
        col = table.column(qid_col)
        if col.null_count:
            raise DataError(f"{path}: column {qid_col!r} has {col.null_count} null values")
        qid = col.to_numpy(zero_copy_only=False)
    meta = table.schema.metadata or {}
    stored_n = int(meta[b"sparkrank.n_features"]) if b"sparkrank.n_features" in meta else None
    if "indices" in names and "values" in names:
        X = _lists_to_csr(table.column("indices"), table.column("values"), stored_n, dtype, path)
    elif features_col in names:
        X = _features_to_csr(table.column(features_col), dtype, path, features_col)
    else:
        raise DataError(f"{path}: no feature columns: expected 'indices'+'values' or {features_col!r}")
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


def _column_numpy(table, name: str, path) -> np.ndarray:
    col = table.column(name)
    if col.null_count:
        raise DataError(f"{path}: column {name!r} has {col.null_count} null values")
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)


def _flat(chunked):
    import pyarrow as pa

    arr = chunked.combine_chunks() if isinstance(chunked, pa.ChunkedArray) else chunked
    return arr


def _lists_to_csr(indices_col, values_col, n_features, dtype, path) -> sp.csr_matrix:
    ind = _flat(indices_col)
    val = _flat(values_col)
    if ind.null_count or val.null_count:
        raise DataError(f"{path}: null feature lists in 'indices'/'values'")
    offsets = ind.offsets.to_numpy()
    if not np.array_equal(offsets - offsets[0], val.offsets.to_numpy() - val.offsets.to_numpy()[0]):
        row = int(np.flatnonzero(np.diff(offsets) != np.diff(val.offsets.to_numpy()))[0])
        raise DataError(f"{path}: row {row} has different lengths of 'indices' and 'values'")
    indptr = (offsets - offsets[0]).astype(np.int64)
    indices = ind.flatten().to_numpy().astype(np.int64)
    values = val.flatten().to_numpy().astype(dtype)
    if indices.size and indices.min() < 0:
        k = int(np.flatnonzero(indices < 0)[0])
        raise DataError(f"{path}: row {int(np.searchsorted(indptr, k, side='right') - 1)} has a negative feature index")
    width = int(indices.max()) + 1 if indices.size else 0
    n = max(width, n_features or 0)
    return sp.csr_matrix((values, indices, indptr), shape=(len(indptr) - 1, n))


def _features_to_csr(col, dtype, path, name) -> sp.csr_matrix:
    import pyarrow as pa

    arr = _flat(col)
    if arr.null_count:
        raise DataError(f"{path}: column {name!r} has {arr.null_count} null rows")
    if pa.types.is_struct(arr.type):  # Spark ML VectorUDT: type 0 = sparse, 1 = dense
        kinds = arr.field("type").to_numpy(zero_copy_only=False)
        size = arr.field("size").to_numpy(zero_copy_only=False)
        idx = arr.field("indices")
        vals = arr.field("values")
        rows_i, rows_v = idx.to_pylist(), vals.to_pylist()
        widths = [int(s) if k == 0 else len(v) for k, s, v in zip(kinds, size, rows_v)]
        n = max(widths, default=0)
        indptr = [0]
        all_i: list[int] = []
        all_v: list[float] = []
        for k, i, v in zip(kinds, rows_i, rows_v):
            ii = list(range(len(v))) if k == 1 else i
            all_i.extend(ii)
            all_v.extend(v)
            indptr.append(len(all_i))
        return sp.csr_matrix((np.asarray(all_v, dtype=dtype), np.asarray(all_i, dtype=np.int64),
                              np.asarray(indptr, dtype=np.int64)), shape=(len(indptr) - 1, n))
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type):
        lengths = arr.value_lengths().to_numpy(zero_copy_only=False)
        if lengths.size and np.any(lengths != lengths[0]):
            row = int(np.flatnonzero(lengths != lengths[0])[0])
            raise DataError(f"{path}: dense column {name!r} has {lengths[0]} values in row 0 but {lengths[row]} in row {row}")
        dense = arr.flatten().to_numpy(zero_copy_only=False).astype(dtype).reshape(len(arr), -1 if len(arr) else 0)
        return sp.csr_matrix(dense)
    raise DataError(f"{path}: column {name!r} has unsupported type {arr.type}")
