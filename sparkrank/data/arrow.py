"""Arrow columns -> CSR without per-row Python loops.

The one converter used by the local Parquet reader and by Spark executors building
blocks (``mapInArrow`` hands them Arrow record batches).  Feature layouts:

* ``indices`` list<int> + ``values`` list<float|double> (0-based columns; fastest);
* a Spark ML vector column, which Arrow carries as its SQL struct
  ``<type: int8, size: int32, indices: list<int32>, values: list<double>>``
  (type 0 = sparse, 1 = dense), dense and sparse rows mixed;
* a dense list<float|double> column (all rows the same length), kept as dense rows
  (an ndarray) under ``layout="auto"``;
* a struct<indices, values> column (what the Spark SVMlight reader produces).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from .block import DataError, beyond_float32, check_max_features, max_features_limit, max_features_message


#: The metadata key of a Spark array column assembled from named columns: their names.
FEATURE_NAMES_KEY = "sparkrank.feature_names"


@dataclass(frozen=True)
class FeatureSpec:
    """Where the features are in a table: a vector/array column, or an indices+values pair."""

    features_col: str | None = "features"
    indices_col: str | None = None
    values_col: str | None = None
    #: The names of an array's elements when it was assembled from named columns
    #: (``--feature-cols``), for messages: ``feature column 'f1' is nan``, not ``feature column 0``.
    names: tuple[str, ...] = ()

    def column_label(self, j: int) -> str:
        """How messages name feature column ``j``: its name, or its 0-based index."""
        return repr(self.names[j]) if j < len(self.names) else str(j)

    @property
    def columns(self) -> list[str]:
        """The table columns that hold the features (one, or indices and values)."""
        return [c for c in (self.features_col, self.indices_col, self.values_col) if c]

    @classmethod
    def detect(cls, names: list[str], features_col: str = "features",
               element_names: Sequence[str] = ()) -> "FeatureSpec":
        if features_col in names:
            return cls(features_col=features_col, names=tuple(element_names))
        if "indices" in names and "values" in names:
            return cls(features_col=None, indices_col="indices", values_col="values")
        raise DataError(
            f"no feature column: expected {features_col!r} (vector or array) or 'indices'+'values' lists; "
            f"columns are {', '.join(names)}"
        )


class RowError(DataError):
    """Bad data in one row of a table: ``"{where}row {row}: {detail}"``.

    Callers that know the row better than its position in the table (a Spark block, whose
    rows were shuffled, knows its qid) re-word it from ``row`` and ``detail``.
    """

    def __init__(self, where: str, row: int, detail: str):
        super().__init__(f"{where}row {row}: {detail}")
        self.row = row
        self.detail = detail


def label_array(col, name: str, where: str, drop_hint: str = "") -> np.ndarray:
    """A numeric, non-null, finite label column as float64 (one check for both engines).  A
    column of no values at all (pyarrow's null type: a CSV column left empty) is not a type
    error: its rows are nulls, and a file of no rows has no labels to check."""
    col = _combine(col)
    typ = col.type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
            or pa.types.is_null(typ)):
        raise DataError(f"{where}column {name!r} has type {typ}: labels must be numbers")
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise RowError(where, row, f"column {name!r} is null (in {col.null_count} rows){drop_hint}")
    y = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise RowError(where, int(bad[0]), f"column {name!r} is {float(y[bad[0]])!r} (in {bad.size} rows){drop_hint}")
    return y


def group_id_array(col, name: str, where: str, drop_hint: str = "") -> np.ndarray:
    """A group-id column without nulls as a numpy array; a null is a :class:`RowError` at its
    first row (one check and one message for both engines)."""
    col = _combine(col)
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise RowError(where, row, f"group id {name!r} is null (in {col.null_count} rows){drop_hint}")
    return col.to_numpy(zero_copy_only=False)


def _combine(col) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _as_dtype(values: pa.Array, dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """Feature values as ``dtype`` (a value beyond float32's range becomes inf, without numpy's
    overflow warning) and, only when the cast changed the type and left a value that is not
    finite, the values as read, for the message (:func:`_value_detail`)."""
    raw = values.to_numpy(zero_copy_only=False)
    with np.errstate(over="ignore", invalid="ignore"):
        cast = raw.astype(dtype, copy=False)
        # a float64 sum of float32 values is finite exactly when every value is
        keep = cast is not raw and not np.isfinite(np.sum(cast, dtype=np.float64))
    return cast, (raw if keep else None)


def value_detail(label, cast, raw=None) -> str:
    """How a message names a feature value ``cast`` that is not finite: as read (``raw``) when
    that was finite (``--dtype float32`` could not hold it), else as it is."""
    if raw is not None and np.isfinite(raw):
        return beyond_float32(f"feature column {label}", repr(float(raw)))
    return f"feature column {label} is {float(cast)!r}"


def _value_detail(label, k: int, cast: np.ndarray, raw: np.ndarray | None) -> str:
    """:func:`value_detail` of value ``k`` of the flat arrays of :func:`_as_dtype`."""
    return value_detail(label, cast[k], None if raw is None else raw[k])


def _row_of(indptr: np.ndarray, k: int) -> int:
    return int(np.searchsorted(indptr, k, side="right") - 1)


def lists_to_csr(indices, values, n_features: int | None, dtype, where: str = "",
                 max_features: int | None = None) -> sp.csr_matrix:
    """CSR from list<int> indices and list<float> values of equal row lengths."""
    ind, val = _combine(indices), _combine(values)
    if ind.null_count or val.null_count:
        row = int(np.flatnonzero(ind.is_null().to_numpy(zero_copy_only=False) | val.is_null().to_numpy(zero_copy_only=False))[0])
        raise RowError(where, row, "the feature list is null")
    ilen = ind.value_lengths().to_numpy(zero_copy_only=False)
    vlen = val.value_lengths().to_numpy(zero_copy_only=False)
    if not np.array_equal(ilen, vlen):
        row = int(np.flatnonzero(ilen != vlen)[0])
        raise RowError(where, row, f"{ilen[row]} feature indices but {vlen[row]} values")
    indptr = np.zeros(len(ilen) + 1, dtype=np.int64)
    np.cumsum(ilen, out=indptr[1:])
    flat_i = ind.flatten().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    flat_v, raw = _as_dtype(val.flatten(), dtype)
    return _build(flat_v, flat_i, indptr, n_features, where, max_features, raw)


def vectors_to_csr(col, n_features: int | None, dtype, where: str = "",
                   max_features: int | None = None) -> sp.csr_matrix:
    """CSR from a Spark ML vector struct column (sparse and dense rows mixed)."""
    arr = _combine(col)
    if arr.null_count:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise RowError(where, row, "the feature vector is null")
    kind = arr.field("type").to_numpy(zero_copy_only=False)
    size = arr.field("size").to_numpy(zero_copy_only=False)
    values = arr.field("values")
    lengths = values.value_lengths().to_numpy(zero_copy_only=False).astype(np.int64)
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    flat_v, raw = _as_dtype(values.flatten(), dtype)
    dense_rows = kind == 1
    # dense rows: column = position inside the row; sparse rows: their stored indices, in order
    flat_i = np.arange(indptr[-1], dtype=np.int64) - np.repeat(indptr[:-1], lengths)
    if not dense_rows.all():
        sparse_slots = np.repeat(~dense_rows, lengths)
        flat_i[sparse_slots] = arr.field("indices").flatten().to_numpy(zero_copy_only=False)
    widths = np.where(dense_rows, lengths, np.nan_to_num(size, nan=0).astype(np.int64))
    _same_width(widths, "feature vectors differ in size", where)
    width = int(widths[0]) if widths.size else 0
    return _build(flat_v, flat_i, indptr, max(width, n_features or 0), where, max_features, raw)


def dense_lists(col, n_features: int | None, dtype, where: str = "",
                max_features: int | None = None, pad: bool = True, spec: FeatureSpec = FeatureSpec()) -> np.ndarray:
    """Checked dense rows ``(m, max(width, n_features))`` (``pad=False``: ``(m, width)``) from
    a dense list<float|double> column (every row the same length); one copy only when the
    type or the width changes.  ``spec`` names the columns in messages."""
    arr = _combine(col)
    if arr.null_count:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise RowError(where, row, "the feature array is null")
    lengths = arr.value_lengths().to_numpy(zero_copy_only=False)
    _same_width(lengths, "feature arrays differ in length", where)
    width = int(lengths[0]) if lengths.size else 0
    check_max_features(max(width, n_features or 0), max_features, f"{where}a feature array of length {width}")
    flat = arr.flatten()
    if flat.null_count:  # a null element (a null in a named column): not a number, say so
        k = int(np.flatnonzero(flat.is_null().to_numpy(zero_copy_only=False))[0])
        raise RowError(where, k // width, f"feature column {spec.column_label(k % width)} is null")
    values, raw = _as_dtype(flat, dtype)
    dense = values.reshape(len(arr), width)
    _check_dense_finite(dense, where, spec, raw)
    if pad and n_features is not None and n_features > width:
        dense = np.pad(dense, ((0, 0), (0, n_features - width)))
    return dense


def _check_dense_finite(dense: np.ndarray, where: str, spec: FeatureSpec = FeatureSpec(),
                        raw: np.ndarray | None = None) -> None:
    """A :class:`RowError` at the first value of ``dense`` that is not finite (``raw``: the values
    as read, flat, when a cast may have made one inf: :func:`_as_dtype`)."""
    if not np.isfinite(dense).all():
        bad = np.argwhere(~np.isfinite(dense))
        r, j = int(bad[0, 0]), int(bad[0, 1])
        raise RowError(where, r, _value_detail(spec.column_label(j), r * dense.shape[1] + j, dense.reshape(-1), raw))


def dense_lists_to_csr(col, n_features: int | None, dtype, where: str = "",
                       max_features: int | None = None, spec: FeatureSpec = FeatureSpec()) -> sp.csr_matrix:
    """CSR from a dense list<float|double> column (every row the same length)."""
    dense = dense_lists(col, n_features, dtype, where, max_features, pad=False, spec=spec)
    return dense_to_csr(dense, max(dense.shape[1], n_features or 0))


def dense_to_csr(dense: np.ndarray, n_features: int) -> sp.csr_matrix:
    """The CSR matrix ``scipy.sparse.csr_matrix(dense)`` gives (zeros dropped, columns in
    order), built directly: scipy goes through COO with two int64 index arrays of every
    entry, ~90% of a Spark block's decoding time for dense LETOR rows.  When no entry is
    zero (the usual dense case) the values are ``dense`` itself, without a copy."""
    m, width = dense.shape
    nonzero = dense != 0
    counts = np.count_nonzero(nonzero, axis=1)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    columns = np.arange(width, dtype=np.int32)
    if indptr[-1] == dense.size:
        data, indices = dense.reshape(-1), np.tile(columns, m)
    else:
        data, indices = dense[nonzero], np.broadcast_to(columns, (m, width))[nonzero]
    return sp.csr_matrix((data, indices, indptr), shape=(m, n_features))


def table_to_csr(table: pa.Table | pa.RecordBatch, spec: FeatureSpec, n_features: int | None, dtype,
                 where: str = "", max_features: int | None = None, layout: str = "sparse"):
    """Features of ``table`` as CSR according to ``spec``; with ``layout="auto"`` a dense
    list column (LETOR-style rows: every row the same length) stays dense rows, an ndarray,
    half the memory of CSR with its column indices (the kernels give both the same numbers).

    Raises :class:`RowError` naming the row (its position in ``table``) for bad values,
    indices that are not strictly increasing, mixed array lengths or vector sizes, and a
    width beyond ``max_features`` (default: the limit in force).
    """
    if spec.features_col is None:
        return lists_to_csr(table.column(spec.indices_col), table.column(spec.values_col), n_features, dtype, where,
                            max_features)
    col = table.column(spec.features_col)
    typ = col.type
    if pa.types.is_struct(typ):
        names = {typ.field(i).name for i in range(typ.num_fields)}
        if "type" not in names:  # a plain struct<indices, values> (sparkrank's SVMlight reader)
            arr = _combine(col)
            return lists_to_csr(arr.field("indices"), arr.field("values"), n_features, dtype, where, max_features)
        return vectors_to_csr(col, n_features, dtype, where, max_features)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        if layout == "sparse":
            return dense_lists_to_csr(col, n_features, dtype, where, max_features, spec)
        return dense_lists(col, n_features, dtype, where, max_features, spec=spec)
    raise DataError(f"{where}feature column {spec.features_col!r} has unsupported type {typ}")


def _same_width(widths: np.ndarray, what: str, where: str) -> None:
    """Dense arrays and ML vectors have one width (docs/data.md: mixed widths are an error)."""
    if widths.size and np.any(widths != widths[0]):
        row = int(np.flatnonzero(widths != widths[0])[0])
        raise RowError(where, row, f"{what}: {int(widths[row])} here but {int(widths[0])} in the rows before")


def _build(flat_v, flat_i, indptr, n_features, where, max_features: int | None = None,
           raw: np.ndarray | None = None) -> sp.csr_matrix:
    if flat_i.size:
        lo = int(flat_i.min())
        if lo < 0:
            k = int(np.flatnonzero(flat_i < 0)[0])
            raise RowError(where, _row_of(indptr, k), f"negative feature index {int(flat_i[k])}")
        # strictly increasing inside each row, as in SVMlight text (a later CSR would sort
        # and sum duplicates in place, which read-only Arrow buffers cannot take)
        step = np.diff(flat_i)
        new_row = np.zeros(step.size, dtype=bool)
        starts = indptr[1:-1]
        new_row[starts[(starts > 0) & (starts <= step.size)] - 1] = True
        bad = np.flatnonzero((step <= 0) & ~new_row)
        if bad.size:
            k = int(bad[0]) + 1
            raise RowError(where, _row_of(indptr, k), "feature indices are not strictly increasing: "
                                                     f"{int(flat_i[k])} after {int(flat_i[k - 1])}")
    bad = np.flatnonzero(~np.isfinite(flat_v))
    if bad.size:
        k = int(bad[0])
        raise RowError(where, _row_of(indptr, k), _value_detail(int(flat_i[k]), k, flat_v, raw))
    width = int(flat_i.max()) + 1 if flat_i.size else 0
    if n_features is not None and width > n_features:
        k = int(np.flatnonzero(flat_i >= n_features)[0])
        raise RowError(where, _row_of(indptr, k), f"feature index {int(flat_i[k])} but n_features={n_features}")
    n = max(width, n_features or 0)
    limit = max_features_limit(max_features)
    if n > limit and width == n:
        k = int(np.argmax(flat_i))
        raise RowError(where, _row_of(indptr, k), max_features_message(f"feature index {int(flat_i[k])}", n, limit))
    check_max_features(n, limit, f"{where}a feature width of {n}")
    return sp.csr_matrix((flat_v, flat_i, indptr), shape=(len(indptr) - 1, n))
