"""Local Parquet read batch by batch straight into the final arrays (the local engine's reader).

Why: the whole-table path (``dataset.to_table()`` then
:func:`~sparkrank.data.table.ranking_data_from_table`) holds the decoded table while it
combines chunks, flattens list columns, casts them and builds a CSR matrix (int64 indices,
then scipy's int32 copy).  On 1M LETOR rows × 136 features that peaked at 6-7 GB for a
block of 1.1 GB, where the SVMlight text reader needs 1.3 GB.  And pyarrow's dataset scanner
decodes a whole row group before it cuts batches (a row group of 1M such rows is 4 GB
decoded), so the files are read with ``pyarrow.parquet.ParquetFile.iter_batches``, without
pre-buffering whole column chunks: one batch of about :data:`BATCH_BYTES` at a time.

How (the text reader's memory model, :mod:`sparkrank.data.svmlight`):

* sizes from the files' footers: rows (a bound once ``--where`` or ``--drop-invalid-rows``
  drop some), the non-zeros of a list layout (its values' leaf count), the widest index
  (the indices' statistics, when no width is given or stored);
* every output array is allocated once -- labels, group ids, and the feature block: dense
  rows for a dense list column or named columns, and for indices+values lists, a
  ``struct<indices, values>`` or Spark ML vectors whenever dense rows take no more memory than
  CSR would (the text reader's rule, ``width * itemsize * rows <= nnz * (itemsize + 4)``),
  else CSR -- the same numbers either way (ARCHITECTURE.md, feature layouts);
* each batch is cast to the dataset's types, given its Hive partition columns, filtered by
  ``--where``, stripped of invalid rows (``drop_invalid_rows``) and copied into its stretch
  (the sparse layouts by the numba kernel of :mod:`.row_fill`); the arrays are shrunk in
  place at the end.  No pandas, no Python object per row (but a string group id's).

Errors: anything wrong in the data -- or anything this reader does not handle (no rows, a
column a file lacks the type of, ...) -- raises :class:`CannotStream`, and the caller reads
the input through the whole-table path, which words the error as it always has (file, row,
counts).  Bad data costs that path's memory; good data never does.
"""

from __future__ import annotations

import logging
import numpy as np
import pyarrow as pa

from ..defaults import LAYOUT
from .arrow import FeatureSpec, group_id_array, label_array
from .block import DROP_HINT, INVALID_ROWS, RankingData, max_features_limit
from .row_fill import BAD_ROW, MAX_COLUMN, NNZ, fill_sparse_rows, narrow_rows
from .sparse_lists import CannotStream, ListRows, StructRows, VectorRows, no_lists
from .table import combine_group_columns, invalid_row_mask

log = logging.getLogger("sparkrank")

#: Decoded bytes per record batch (its rows from the footers' sizes): the reader's working
#: memory on top of the output arrays is a few batches (pyarrow's decode buffers).  On 1M
#: LETOR rows (1.1 GB of dense rows) the process peaked 100 MB above its final size with 16 MB
#: batches, 25 MB above with 4 MB, in the same time.
BATCH_BYTES = 4 << 20
#: Bytes read from a file at a time (pyarrow's buffered stream, instead of whole column chunks).
READ_BUFFER_BYTES = 1 << 20


def read_parquet_rows(dataset, columns, *, flt=None, filter_columns=(), n_features: int | None = None,
                      stored_n_features: int | None = None, dtype: type = np.float64,
                      drop_invalid_rows: bool = False, where: str = "") -> RankingData:
    """The rows of a local Parquet ``dataset`` as :func:`~sparkrank.data.table.ranking_data_from_table`
    gives them for ``dataset.to_table(filter=flt)``: the same arrays, read batch by batch.

    Parameters
    ----------
    dataset : pyarrow.dataset.Dataset
        Parquet files (a union of file datasets as :mod:`sparkrank.io.formats` builds it).
    columns : ColumnSpec
        Column roles, checked against the dataset's schema by the caller.
    flt : pyarrow.dataset.Expression, optional
        The ``--where`` filter, over ``filter_columns``.
    n_features, stored_n_features, dtype, drop_invalid_rows, where :
        As for :func:`~sparkrank.data.table.ranking_data_from_table`.

    Raises
    ------
    CannotStream
        For any problem: the caller reads the input as one table instead (which raises the
        input's error in its usual words).
    """
    try:
        return _read(dataset, columns, flt, tuple(filter_columns), n_features, stored_n_features, dtype,
                     drop_invalid_rows, where)
    except (CannotStream, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - whatever it is, the whole-table path says it in its words
        raise CannotStream(f"{type(exc).__name__}: {exc}") from None


def _read(dataset, columns, flt, filter_columns, n_features, stored_n_features, dtype, drop_invalid_rows,
          where) -> RankingData:
    schema = dataset.schema
    label_col = columns.label if columns.labels else None
    group = columns.group if columns.group and columns.labels else ()
    if columns.feature_cols:
        feature_names = list(columns.feature_cols)
        spec = None
    else:
        spec = FeatureSpec.detect(schema.names, columns.features)
        feature_names = spec.columns
    needed = list(dict.fromkeys([*([label_col] if label_col else []), *group, *feature_names, *filter_columns]))
    files = [_Footer(fragment, feature_names) for fragment in _fragments(dataset, flt)]
    m_upper = sum(f.rows for f in files)
    if not m_upper:
        raise CannotStream("no rows")
    features = _feature_sink(spec, columns.feature_cols, schema, files, m_upper, n_features or stored_n_features,
                             np.dtype(dtype))
    labels = np.zeros(m_upper) if label_col is None else np.empty(m_upper, np.float64)
    ids = _GroupIds(pa.string() if len(group) > 1 else schema.field(group[0]).type, m_upper) if group else None
    m = seen = dropped = 0
    for batch in _batches(files, schema, needed, flt, _batch_rows(files)):
        seen += batch.num_rows
        gid = combine_group_columns(batch, group) if group else None
        if drop_invalid_rows:
            bad = invalid_row_mask(batch.num_rows, batch.column(label_col) if label_col else None, gid)
            if bad.any():
                keep = pa.array(~bad)
                batch, gid = batch.filter(keep), None if gid is None else gid.filter(keep)
                dropped += int(bad.sum())
        n = batch.num_rows
        if not n:
            continue
        if m + n > m_upper:
            raise CannotStream("more rows than the footers said")
        if label_col:
            labels[m:m + n] = label_array(batch.column(label_col), label_col, where, DROP_HINT)
        if ids is not None:
            ids.add(group_id_array(gid, columns.group_name, where, DROP_HINT), m)
        features.add(batch, m)
        m += n
    pa.default_memory_pool().release_unused()  # the batches' buffers, which the pool would keep
    if not m:
        raise CannotStream("no rows")
    X = features.finish(m)
    if m < m_upper:
        labels.resize(m, refcheck=False)
    data = RankingData.from_arrays(X, labels, None if ids is None else ids.finish(m), dtype=dtype,
                                   n_features=n_features, layout=LAYOUT)
    if dropped:  # as ranking_data_from_table logs it (here only once the rows are known to be good)
        log.warning("%sdropped %d of %d %s", where, dropped, seen, INVALID_ROWS)
    return data


def _fragments(dataset, flt) -> list:
    """The dataset's file fragments in the order ``to_table`` reads them (Hive partitions that
    ``flt`` excludes left out)."""
    import pyarrow.dataset as ds

    children = dataset.children if isinstance(dataset, ds.UnionDataset) else [dataset]
    return [fragment for child in children for fragment in child.get_fragments(filter=flt)]


class _Footer:
    """One file's fragment and what its footer says: rows, decoded bytes of the feature
    columns, and per feature leaf column (``"values"``, ``"features.values"``) the values
    stored and the largest (``None`` when a row group has no statistics)."""

    def __init__(self, fragment, feature_names):
        self.fragment = fragment
        meta = fragment.metadata
        self.rows = int(meta.num_rows)
        self.bytes = 0
        self.leaves: dict[str, list] = {}
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                parts = chunk.path_in_schema.split(".")
                if parts[0] not in feature_names:
                    continue
                # decoded, not as stored (dictionary-encoded indices take a few bits each on disk)
                self.bytes += chunk.num_values * _VALUE_BYTES.get(chunk.physical_type, 0) or chunk.total_uncompressed_size
                stats = chunk.statistics
                high = stats.max if stats is not None and stats.has_min_max else None
                for key in (parts[0], ".".join(parts[:2])):
                    count, top = self.leaves.get(key, (0, -np.inf))
                    self.leaves[key] = [count + chunk.num_values, None if top is None or high is None else max(top, high)]


#: Bytes of one decoded value of a Parquet physical type (others: their stored size).
_VALUE_BYTES = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12}


def _leaf(files: list[_Footer], key: str) -> tuple[int, float | None]:
    """``(values stored, largest value or None)`` of leaf column ``key`` over all files."""
    count, top = 0, -np.inf
    for f in files:
        if key not in f.leaves:
            raise CannotStream(f"no leaf column {key} in {f.fragment.path}")
        c, t = f.leaves[key]
        count, top = count + c, None if top is None or t is None else max(top, t)
    return int(count), top


def _batch_rows(files: list[_Footer]) -> int:
    """Rows per batch: about :data:`BATCH_BYTES` of decoded feature columns."""
    per_row = sum(f.bytes for f in files) / max(1, sum(f.rows for f in files))
    return int(min(1 << 16, max(1 << 6, BATCH_BYTES // max(per_row, 1.0))))


def _batches(files: list[_Footer], schema, needed: list[str], flt, batch_rows: int):
    """Record batches of the columns ``needed``, typed as ``schema`` says (a file's own types
    cast, a partition column a constant), filtered by ``flt``, in file order."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    for f in files:
        fragment = f.fragment
        keys = ds.get_partition_keys(fragment.partition_expression)
        with fragment.filesystem.open_input_file(fragment.path) as source:
            pf = pq.ParquetFile(source, pre_buffer=False, buffer_size=READ_BUFFER_BYTES)
            physical = set(pf.schema_arrow.names)
            read = [c for c in needed if c in physical]
            if not read:
                raise CannotStream(f"{fragment.path} has none of the columns")
            for batch in pf.iter_batches(batch_size=batch_rows, columns=read, use_threads=True):
                arrays = [_typed(batch, name, schema.field(name).type, physical, keys) for name in needed]
                batch = pa.RecordBatch.from_arrays(arrays, names=needed)
                yield batch if flt is None else _filtered(batch, flt)


def _typed(batch, name: str, typ, physical: set, keys: dict):
    """Column ``name`` of ``batch`` as the dataset types it: cast when the file's type differs,
    the fragment's partition value (or nulls: a null partition, a column the file lacks)."""
    if name in physical:
        column = batch.column(name)
        return column if column.type.equals(typ) else column.cast(typ)
    value = keys.get(name)
    if value is None:
        return pa.nulls(batch.num_rows, typ)
    return pa.array([value], typ).take(pa.array(np.zeros(batch.num_rows, np.int32)))


def _filtered(batch, flt):
    """The rows of ``batch`` that ``flt`` keeps, in order, as one batch."""
    import pyarrow.dataset as ds

    table = ds.dataset(pa.Table.from_batches([batch])).to_table(filter=flt).combine_chunks()
    kept = table.to_batches()
    return kept[0] if kept else batch.slice(0, 0)


class _GroupIds:
    """Group ids: a preallocated array for number columns, else the batches' arrays (strings)."""

    def __init__(self, typ, m_upper: int):
        numeric = pa.types.is_integer(typ) or pa.types.is_floating(typ)
        self.out = np.empty(m_upper, typ.to_pandas_dtype()) if numeric else None
        self.parts: list[np.ndarray] = []

    def add(self, ids: np.ndarray, row0: int) -> None:
        if self.out is None:
            self.parts.append(ids)
            return
        if ids.dtype != self.out.dtype:
            raise CannotStream(f"group ids of {ids.dtype}, not {self.out.dtype}")
        self.out[row0:row0 + ids.shape[0]] = ids

    def finish(self, m: int) -> np.ndarray:
        if self.out is None:
            return np.concatenate(self.parts)
        if m < self.out.shape[0]:
            self.out.resize(m, refcheck=False)
        return self.out


def _feature_sink(spec, feature_cols, schema, files, m_upper: int, limit: int | None, dtype: np.dtype):
    """The sink of the feature layout (the whole-table path's :func:`~sparkrank.data.arrow.table_to_csr`
    and named columns)."""
    if feature_cols:
        return _NamedColumns(list(feature_cols), schema, m_upper, dtype)
    if spec.features_col is None:
        return _SparseRows(ListRows(spec.indices_col, spec.values_col), files, m_upper, limit, dtype)
    typ = schema.field(spec.features_col).type
    if pa.types.is_struct(typ):
        fields = {typ.field(i).name for i in range(typ.num_fields)}
        rows = VectorRows(spec.features_col) if "type" in fields else StructRows(spec.features_col)
        return _SparseRows(rows, files, m_upper, limit, dtype)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return _DenseLists(spec.features_col, m_upper, limit, dtype)
    raise CannotStream(f"feature column of type {typ}")


def _finite(block: np.ndarray) -> None:
    """:class:`CannotStream` unless every value of ``block`` is finite (a float64 sum of them is
    finite exactly when they are, unless finite values overflow it: then look closer)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(block, dtype=np.float64)) or np.isfinite(block).all():
            return
    raise CannotStream("a feature value that is not finite")


def _allocate_dense(m: int, width: int, filled: int, dtype) -> np.ndarray:
    """Rows of ``width`` of which the first ``filled`` columns are written (the rest zeroed: the
    pages of untouched zeros stay unallocated, as calloc gives them)."""
    if width > max_features_limit():
        raise CannotStream(f"{width} feature columns, beyond the limit")
    return np.empty((m, width), dtype) if filled >= width else np.zeros((m, width), dtype)


def _shrunk(out: np.ndarray, m: int) -> np.ndarray:
    if m < out.shape[0]:
        out.resize((m, out.shape[1]), refcheck=False)
    return out


class _DenseLists:
    """A list<number> column of one length per row into dense rows, padded to ``limit``."""

    def __init__(self, name: str, m_upper: int, limit: int | None, dtype):
        self.name, self.m_upper, self.limit, self.dtype = name, m_upper, limit, dtype
        self.width = -1
        self.out: np.ndarray | None = None

    def add(self, batch, row0: int) -> None:
        col = batch.column(self.name)
        n = len(col)
        if col.null_count:
            raise CannotStream("a null feature array")
        if pa.types.is_fixed_size_list(col.type):
            lengths = np.full(n, col.type.list_size)
        else:
            lengths = np.diff(col.offsets.to_numpy())
        if self.out is None:
            self.width = int(lengths[0])
            if self.width <= 0:
                raise CannotStream("empty feature arrays")
            total = max(self.width, self.limit or 0)
            self.out = _allocate_dense(self.m_upper, total, self.width, self.dtype)
        if np.any(lengths != self.width):
            raise CannotStream("feature arrays of different lengths")
        flat = col.flatten()
        if flat.null_count or not (pa.types.is_floating(flat.type) or pa.types.is_integer(flat.type)):
            raise CannotStream(f"feature array elements of {flat.type} or null")
        block = self.out[row0:row0 + n, :self.width]
        with np.errstate(over="ignore", invalid="ignore"):
            block[...] = flat.to_numpy(zero_copy_only=False).reshape(n, self.width)
        _finite(block)

    def finish(self, m: int) -> np.ndarray:
        return _shrunk(self.out, m)


class _NamedColumns:
    """Named number columns into dense rows, each through float64 as the whole-table path casts
    them (``data/table._named_columns_to_dense``)."""

    def __init__(self, names: list[str], schema, m_upper: int, dtype):
        for name in names:
            t = schema.field(name).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
                    or pa.types.is_boolean(t)):
                raise CannotStream(f"feature column {name!r} of type {t}")
        self.names = names
        self.out = np.empty((m_upper, len(names)), dtype)

    def add(self, batch, row0: int) -> None:
        n = batch.num_rows
        block = self.out[row0:row0 + n]
        for j, name in enumerate(self.names):
            col = batch.column(name)
            if col.null_count:
                raise CannotStream(f"a null in feature column {name!r}")
            with np.errstate(over="ignore"):
                block[:, j] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
        _finite(block)

    def finish(self, m: int) -> np.ndarray:
        return _shrunk(self.out, m)


class _SparseRows:
    """Sparse feature rows (:class:`~.sparse_lists.ListRows` and its kinds) into dense rows or CSR (see the module
    docstring for which); the kernel checks every row as the whole-table path does."""

    def __init__(self, rows, files: list[_Footer], m_upper: int, limit: int | None, dtype):
        self.rows, self.m_upper, self.limit, self.dtype = rows, m_upper, limit, dtype
        self.nnz_upper, top = _leaf(files, rows.leaves[1])
        self.width = -1  # the vectors' width, from the first row
        self.dense: np.ndarray | None = None
        self.csr: tuple | None = None
        self.result = np.array([-1, -1, 0], np.int64)
        if not rows.vectors:  # the width of dense rows: the one given or stored, else the footers' largest index
            _, top = _leaf(files, rows.leaves[0])
            width = limit or (None if top is None or not np.isfinite(top) else int(top) + 1)
            self._allocate(width)

    def _allocate(self, width: int | None) -> None:
        itemsize = self.dtype.itemsize
        if width is not None and self.m_upper * width * itemsize <= self.nnz_upper * (itemsize + 4):
            self.dense = _allocate_dense(self.m_upper, width, 0, self.dtype)
            return
        indptr = np.empty(self.m_upper + 1, np.int64)
        indptr[0] = 0
        self.csr = (indptr, np.empty(self.nnz_upper, np.int32), np.empty(self.nnz_upper, self.dtype))

    def _columns_allowed(self) -> int:
        if self.dense is not None:
            return self.dense.shape[1]
        cap = max_features_limit()
        if self.rows.vectors:
            return max(self.width, self.limit or 0)
        return min(self.limit, cap) if self.limit else cap

    def add(self, batch, row0: int) -> None:
        lists = self.rows.lists(batch)
        n = lists.v_off.shape[0] - 1
        if self.rows.vectors and self.width < 0:
            self.width = int(lists.v_off[1] - lists.v_off[0]) if lists.kinds[0] == 1 else int(lists.sizes[0])
            if self.width <= 0 or max(self.width, self.limit or 0) > max_features_limit():
                raise CannotStream(f"feature vectors of size {self.width}")
            self._allocate(max(self.width, self.limit or 0))
        if self.csr is not None and self.result[NNZ] + int(lists.v_off[n] - lists.v_off[0]) > self.nnz_upper:
            raise CannotStream("more feature values than the footers said")
        dense = self.dense is not None
        out_dense = self.dense if dense else np.empty((0, 0), self.dtype)
        indptr, indices, values = self.csr if not dense else no_lists(self.dtype)
        fill_sparse_rows(lists.kinds, lists.sizes, lists.i_off, lists.indices, lists.v_off, lists.values, self.width,
                         self._columns_allowed(), dense, out_dense, indptr, indices, values, row0, self.result)
        if self.result[BAD_ROW] >= 0:
            raise CannotStream(f"bad feature row {int(self.result[BAD_ROW])} of a batch")

    def finish(self, m: int):
        width = self._finished_width()
        if self.dense is not None:
            out = self.dense
            if width < out.shape[1]:  # a narrower block than the footers' largest index (rows filtered out)
                narrow_rows(out.reshape(-1), m, out.shape[1], width)
                out.resize((m, width), refcheck=False)
                return out
            return _shrunk(out, m)
        import scipy.sparse as sp

        indptr, indices, values = self.csr
        nnz = int(self.result[NNZ])
        indices.resize(nnz, refcheck=False)
        values.resize(nnz, refcheck=False)
        indptr = indptr[:m + 1]
        if nnz < 2**31 - 1:
            indptr = indptr.astype(np.int32)
        X = sp.csr_matrix((values, indices, indptr), shape=(m, width), copy=False)
        X.has_canonical_format = True  # strictly increasing indices per row, checked by the kernel
        return X

    def _finished_width(self) -> int:
        """The block's width as the whole-table path gives it: vectors' ``max(width, limit)``,
        lists' ``max(largest index + 1, limit)``."""
        if self.rows.vectors:
            return max(self.width, self.limit or 0)
        width = max(int(self.result[MAX_COLUMN]) + 1, self.limit or 0)
        if width <= 0 or width > max_features_limit():
            raise CannotStream(f"{width} feature columns")
        return width

