"""The batch-by-batch Parquet reader (``sparkrank/data/parquet_rows.py``) against the whole-table path.

The oracle is the path it replaces: ``dataset.to_table()`` then ``ranking_data_from_table``.
For every feature layout (a dense list column of each list type, Spark ML vectors with dense and
sparse rows mixed, indices+values lists, a struct of them, named number columns), both dtypes,
several row groups and files, Hive partitions and ``--where``, the arrays must be the same bit
for bit (dense rows where the old path gave CSR are compared as numbers).  Bad rows must give
the same error message word for word, and a model trained on either must be the same.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkrank.data import parquet_rows
from sparkrank.data.block import DataError
from sparkrank.data.table import ranking_data_from_table
from sparkrank.io.formats.parquet import ParquetFormat
from sparkrank.io.formats.registry import get_format
from sparkrank.io.sources import ColumnSpec, open_source
from sparkrank.io.where import filter_columns, to_arrow_filter

VECTOR = pa.struct([("type", pa.int8()), ("size", pa.int32()), ("indices", pa.list_(pa.int32())),
                    ("values", pa.list_(pa.float64()))])


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    """Batches of 64 rows (the least), so every table here is read in several."""
    monkeypatch.setattr(parquet_rows, "BATCH_BYTES", 1)


def _rows(m=300, width=7, density=0.7, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, width)), 3)
    X[rng.random(X.shape) > density] = 0.0
    y = rng.integers(0, 4, m).astype(np.float64)
    qid = np.repeat(np.arange(m), rng.integers(1, 12, m))[:m]
    return X, y, qid


def _list_column(X, kind, value_type):
    flat = pa.array(X.reshape(-1), value_type)
    if kind == "fixed":
        return pa.FixedSizeListArray.from_arrays(flat, X.shape[1])
    offsets = np.arange(0, X.size + 1, X.shape[1])
    if kind == "large":
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), flat)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat)


def _sparse_lists(X, index_type=pa.int32(), value_type=pa.float64()):
    C = sp.csr_matrix(X)
    offsets = pa.array(C.indptr.astype(np.int32))
    return (pa.ListArray.from_arrays(offsets, pa.array(C.indices, index_type)),
            pa.ListArray.from_arrays(offsets, pa.array(C.data, value_type)))


def _vectors(X, dense_every=3):
    """Spark ML vectors: every ``dense_every``-th row dense (type 1, no indices), the rest sparse."""
    rows = []
    for i, x in enumerate(X):
        if i % dense_every == 0:
            rows.append({"type": 1, "size": None, "indices": None, "values": [float(v) for v in x]})
        else:
            nz = np.flatnonzero(x)
            rows.append({"type": 0, "size": X.shape[1], "indices": nz.tolist(), "values": x[nz].tolist()})
    return pa.array(rows, VECTOR)


def _features(layout, X):
    """The feature columns of ``layout``."""
    if layout.startswith("dense-"):
        _, kind, bits = layout.split("-")
        return {"features": _list_column(X, kind, pa.float32() if bits == "32" else pa.float64())}
    if layout == "vectors":
        return {"features": _vectors(X)}
    if layout.startswith("lists-"):
        index_type = pa.int64() if "i64" in layout else pa.int32()
        value_type = pa.float32() if "v32" in layout else pa.float64()
        indices, values = _sparse_lists(X, index_type, value_type)
        return {"indices": indices, "values": values}
    if layout == "struct":
        indices, values = _sparse_lists(X)
        return {"features": pa.StructArray.from_arrays([indices, values], names=["indices", "values"])}
    if layout == "named":
        types = [pa.float64(), pa.float32(), pa.int64(), pa.bool_()]
        columns = {}
        for j in range(X.shape[1]):
            t = types[j % len(types)]
            v = X[:, j] != 0 if t == pa.bool_() else (np.round(X[:, j] * 10) if t == pa.int64() else X[:, j])
            columns[f"f{j}"] = pa.array(v.astype(t.to_pandas_dtype()), t)
        return columns
    raise ValueError(layout)


def _write(tmp_path, layout, X, y, qid, *, files=2, row_group_size=70, metadata=None):
    """``files`` Parquet files of the rows (cut at row counts, not at queries) in a directory."""
    root = tmp_path / layout
    root.mkdir()
    cuts = np.linspace(0, len(y), files + 1).astype(int)
    for k in range(files):
        part = slice(cuts[k], cuts[k + 1])
        table = pa.table({"label": y[part], "qid": qid[part],
                          **{name: col.slice(cuts[k], cuts[k + 1] - cuts[k]) for name, col in
                             _features(layout, X).items()}})
        if metadata:
            table = table.replace_schema_metadata(metadata)
        pq.write_table(table, root / f"part-{k}.parquet", row_group_size=row_group_size)
    return root


def _columns(layout, width):
    return ColumnSpec(feature_cols=tuple(f"f{j}" for j in range(width))) if layout == "named" else ColumnSpec()


def _both(path, columns=ColumnSpec(), where=None, **read):
    """``(whole-table path's RankingData, batch reader's)`` of the Parquet input ``path``."""
    source = open_source(str(path), columns=columns, where=where)
    dataset = get_format("parquet").local_dataset([str(path)])
    flt = to_arrow_filter(where, dataset.schema) if where else None
    meta = dataset.schema.metadata or {}
    stored = int(meta[b"sparkrank.n_features"]) if b"sparkrank.n_features" in meta else None
    options = dict(n_features=None, stored_n_features=stored, dtype=np.float64, drop_invalid_rows=False) | read
    old = ranking_data_from_table(dataset.to_table(filter=flt), source.columns, **options)
    names = filter_columns(where, dataset.schema.names) if where else ()
    new = parquet_rows.read_parquet_rows(dataset, source.columns, flt=flt, filter_columns=names, **options)
    return old, new


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _dense(X):
    """Dense rows of ``X`` with the stored values as they are (``toarray`` adds them to zeros,
    which turns a stored -0.0 into 0.0)."""
    if not sp.issparse(X):
        return X
    out = np.zeros(X.shape, X.dtype)
    out[np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), X.indices] = X.data
    return out


def _assert_same(old, new):
    assert new.X.shape == old.X.shape and new.X.dtype == old.X.dtype
    assert np.array_equal(_bits(_dense(new.X)), _bits(_dense(old.X)))
    if sp.issparse(old.X) and sp.issparse(new.X):  # the same CSR, stored values and all
        assert np.array_equal(new.X.indptr, old.X.indptr) and np.array_equal(new.X.indices, old.X.indices)
        assert np.array_equal(_bits(new.X.data), _bits(old.X.data))
    assert np.array_equal(_bits(new.labels), _bits(old.labels))
    assert np.array_equal(new.groups.offsets, old.groups.offsets)
    assert (new.qids is None) == (old.qids is None) and (new.qids is None or np.array_equal(new.qids, old.qids))
    assert new.qids is None or new.qids.dtype == old.qids.dtype
    assert np.array_equal(new.row_order, old.row_order)


LAYOUTS = ["dense-list-32", "dense-list-64", "dense-large-32", "dense-fixed-64", "vectors", "lists-i32-v64",
           "lists-i64-v32", "struct", "named"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_reads_the_same_arrays(tmp_path, layout, dtype):
    X, y, qid = _rows(width=9)
    path = _write(tmp_path, layout, X, y, qid, files=3, row_group_size=50)
    old, new = _both(path, _columns(layout, 9), dtype=dtype)
    _assert_same(old, new)


@pytest.mark.parametrize("layout", ["lists-i32-v64", "vectors", "struct"])
def test_sparse_rows_stay_csr_and_dense_rows_go_dense(tmp_path, layout):
    X, y, qid = _rows(width=40, density=0.1, seed=1)  # 4 of 40 columns: CSR is smaller
    old, new = _both(_write(tmp_path, layout, X, y, qid))
    assert sp.issparse(new.X) and new.X.indptr.dtype == np.int32
    _assert_same(old, new)
    X, y, qid = _rows(width=40, density=1.0, seed=1)  # every column: dense rows, as the text reader reads them
    (tmp_path / "full").mkdir()
    old, new = _both(_write(tmp_path / "full", layout, X, y, qid))
    assert isinstance(new.X, np.ndarray) and new.X.flags.c_contiguous
    _assert_same(old, new)


@pytest.mark.parametrize("layout", ["lists-i32-v64", "dense-list-64", "vectors"])
def test_width_given_or_stored_pads_the_block(tmp_path, layout):
    X, y, qid = _rows(width=6)
    path = _write(tmp_path, layout, X, y, qid, metadata={"sparkrank.n_features": "10"})
    old, new = _both(path)
    assert new.X.shape[1] == 10
    _assert_same(old, new)
    old, new = _both(path, n_features=12)
    assert new.X.shape[1] == 12
    _assert_same(old, new)


def test_a_filter_that_drops_the_widest_rows_narrows_the_block(tmp_path):
    # the footers' largest index (statistics) is 7; the rows left by --where reach column 4 only
    X, y, qid = _rows(width=8, density=1.0)
    X[qid >= 5, 5:] = 0.0
    path = _write(tmp_path, "lists-i32-v64", X, y, qid, files=1)
    old, new = _both(path, where="qid >= 5")
    assert new.X.shape == old.X.shape and new.X.shape[1] == 5
    _assert_same(old, new)


def test_hive_partitions_and_where_read_the_same_rows(tmp_path):
    X, y, qid = _rows(width=5)
    days = np.array(["2026-11-01", "2026-11-02", "2026-11-03"])[qid % 3]
    root = tmp_path / "lake"
    for day in np.unique(days):
        rows = days == day
        (root / f"day={day}").mkdir(parents=True)
        pq.write_table(pa.table({"label": y[rows], "qid": qid[rows], **_features("dense-list-64", X[rows])}),
                       root / f"day={day}" / "part-0.parquet", row_group_size=40)
    for where in (None, "day >= '2026-11-02'", "day = '2026-11-03' OR label > 1", "NOT label BETWEEN 1 AND 2"):
        old, new = _both(root, where=where)
        _assert_same(old, new)
        _assert_same(old, open_source(str(root), where=where).ranking_data())  # through the source
    old, new = _both(root, ColumnSpec(group=("day",)))  # a partition column as the group id
    _assert_same(old, new)


def test_several_group_columns_and_string_ids(tmp_path):
    X, y, qid = _rows(width=4)
    path = tmp_path / "keys.parquet"
    pq.write_table(pa.table({"label": y, "user": qid // 2, "session": (qid % 2).astype(str), "sid": qid.astype(str),
                             **_features("dense-list-64", X)}), path, row_group_size=45)
    for group in (("user", "session"), ("sid",)):
        old, new = _both(path, ColumnSpec(group=group))
        _assert_same(old, new)


def test_scoring_reads_no_labels(tmp_path):
    X, y, qid = _rows(width=4)
    path = _write(tmp_path, "lists-i32-v64", X, y, qid)
    old, new = _both(path, ColumnSpec(labels=False))
    _assert_same(old, new)


def test_dropped_invalid_rows_are_the_same_and_logged_once(tmp_path, monkeypatch, caplog):
    X, y, qid = _rows(width=4)
    labels = pa.array([None if i % 37 == 0 else (float("nan") if i % 53 == 0 else v) for i, v in enumerate(y)])
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"label": labels, "qid": pa.array([None if i % 41 == 0 else q for i, q in enumerate(qid)]),
                             **_features("vectors", X)}), path, row_group_size=60)
    old, new = _both(path, drop_invalid_rows=True)
    _assert_same(old, new)
    logged = []
    for batches in (True, False):
        if not batches:
            monkeypatch.setattr(ParquetFormat, "read_batch_by_batch", lambda *args: None)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparkrank"):
            open_source(str(path)).ranking_data(drop_invalid_rows=True)
        logged.append([r.getMessage() for r in caplog.records])
    n_bad = sum(i % 37 == 0 or i % 53 == 0 or i % 41 == 0 for i in range(300))
    assert logged[0] == logged[1] == [
        f"{path}: dropped {n_bad} of 300 rows with a null or non-finite label or a null group id"]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), width=st.integers(1, 30), density=st.floats(0.0, 1.0),
       layout=st.sampled_from(["lists-i32-v64", "vectors", "struct", "dense-list-32"]),
       dtype=st.sampled_from([np.float32, np.float64]), files=st.integers(1, 3), row_group_size=st.integers(1, 90))
def test_random_tables_read_the_same(tmp_path_factory, seed, width, density, layout, dtype, files, row_group_size):
    X, y, qid = _rows(m=200, width=width, density=density, seed=seed)
    X[0, -1] = 1.5  # the width is known from the data (no stored n_features)
    path = _write(tmp_path_factory.mktemp("r"), layout, X, y, qid, files=files, row_group_size=row_group_size)
    old, new = _both(path, dtype=dtype)
    _assert_same(old, new)


@pytest.mark.parametrize("solver", ["tron", "bmrm"])
def test_a_model_trained_on_either_is_the_same(tmp_path, solver):
    from sparkrank.training import train

    X, y, qid = _rows(m=400, width=12, density=0.9, seed=5)
    old, new = _both(_write(tmp_path, "lists-i32-v64", X, y, qid))
    assert sp.issparse(old.X) and isinstance(new.X, np.ndarray)  # CSR then, dense rows now
    a, b = train(old, solver=solver, C=1.0), train(new, solver=solver, C=1.0)
    assert np.array_equal(_bits(a.weights), _bits(b.weights))
    assert a.summary["iterations"] == b.summary["iterations"]


# ------------------------------------------------------------------------------- bad rows


def _bad_tables():
    """``name -> (table, columns)``: one bad row or value each, in the second file's later rows."""
    X, y, qid = _rows(m=200, width=5, density=1.0)
    dense = _features("dense-list-64", X)["features"]
    indices, values = _sparse_lists(X)

    def with_value(col, row, value):
        return pa.array([value if i == row else v for i, v in enumerate(col.to_pylist())], col.type)

    base = {"label": pa.array(y), "qid": pa.array(qid), "features": dense}
    lists = {"label": pa.array(y), "qid": pa.array(qid), "indices": indices, "values": values}
    row = 150
    shuffled = indices.to_pylist()
    shuffled[row] = shuffled[row][::-1]
    short = values.to_pylist()
    short[row] = short[row][:-1]
    vectors = _vectors(X).to_pylist()
    vectors[row + 1] = {"type": 0, "size": 9, "indices": [0], "values": [1.0]}
    return {
        "null label": ({**base, "label": with_value(base["label"], row, None)}, ColumnSpec()),
        "nan label": ({**base, "label": with_value(base["label"], row, float("nan"))}, ColumnSpec()),
        "null qid": ({**base, "qid": with_value(base["qid"], row, None)}, ColumnSpec()),
        "null feature array": ({**base, "features": with_value(dense, row, None)}, ColumnSpec()),
        "nan feature": ({**base, "features": with_value(dense, row, [1.0, float("nan"), 0, 0, 0])}, ColumnSpec()),
        "short array": ({**base, "features": with_value(dense, row, [1.0, 2.0])}, ColumnSpec()),
        "beyond float32": ({**base, "features": with_value(dense, row, [1e39, 0, 0, 0, 0])}, ColumnSpec()),
        "decreasing indices": ({**lists, "indices": pa.array(shuffled, indices.type)}, ColumnSpec()),
        "fewer values": ({**lists, "values": pa.array(short, values.type)}, ColumnSpec()),
        "negative index": ({**lists, "indices": with_value(indices, row, [-1, 0, 1, 2, 3])}, ColumnSpec()),
        "vector size": ({**base, "features": pa.array(vectors, VECTOR)}, ColumnSpec()),
        "named null": ({"label": pa.array(y), "qid": pa.array(qid), "f0": pa.array(X[:, 0]),
                        "f1": with_value(pa.array(X[:, 1]), row, None)}, ColumnSpec(feature_cols=("f0", "f1"))),
        "named inf": ({"label": pa.array(y), "qid": pa.array(qid), "f0": pa.array(X[:, 0]),
                       "f1": with_value(pa.array(X[:, 1]), row, float("inf"))}, ColumnSpec(feature_cols=("f0", "f1"))),
    }


BAD = _bad_tables()


def _message(path, columns, **read):
    with pytest.raises(DataError) as info:
        open_source(str(path), columns=columns).ranking_data(**read)
    return str(info.value)


@pytest.mark.parametrize("case, dtype", [(case, dtype) for case in sorted(BAD) for dtype in (np.float64, np.float32)
                                         if case != "beyond float32" or dtype == np.float32])  # float64 holds 1e39
def test_bad_rows_give_the_whole_table_paths_message(tmp_path, monkeypatch, case, dtype):
    columns_of, columns = BAD[case]
    table = pa.table(columns_of)
    root = tmp_path / "in"
    root.mkdir()
    pq.write_table(table.slice(0, 100), root / "part-0.parquet", row_group_size=30)
    pq.write_table(table.slice(100), root / "part-1.parquet", row_group_size=30)
    with pytest.raises(parquet_rows.CannotStream):  # the batch reader sees it ...
        dataset = get_format("parquet").local_dataset([str(root)])
        parquet_rows.read_parquet_rows(dataset, columns, dtype=dtype)
    got = _message(root, columns, dtype=dtype)  # ... and the whole-table path words it
    monkeypatch.setattr(ParquetFormat, "read_batch_by_batch", lambda *args: None)
    assert got == _message(root, columns, dtype=dtype)
    assert f"part-1.parquet: row {50 if case != 'vector size' else 51}:" in got


def test_files_of_different_widths_are_refused_as_before(tmp_path, monkeypatch):
    X, y, qid = _rows(width=5)
    root = tmp_path / "in"
    root.mkdir()
    pq.write_table(pa.table({"label": y[:100], "qid": qid[:100], **_features("dense-list-64", X[:100])}),
                   root / "part-0.parquet")
    pq.write_table(pa.table({"label": y[100:], "qid": qid[100:], **_features("dense-list-64", X[100:, :4])}),
                   root / "part-1.parquet")
    got = _message(root, ColumnSpec())
    monkeypatch.setattr(ParquetFormat, "read_batch_by_batch", lambda *args: None)
    assert got == _message(root, ColumnSpec())
    assert "feature arrays differ in length: 4 here but 5 in the rows before" in got


# ----------------------------------------------------------------------- memory model


def test_the_reader_holds_batches_not_the_table(tmp_path):
    """Arrow's allocations peak at a few batches, where the whole-table path held the decoded
    table (and its copies) at once: each path in a process of its own, for the pool's peak."""
    rng = np.random.default_rng(0)
    X, y, qid = rng.random((40_000, 50)), rng.integers(0, 3, 40_000).astype(float), np.arange(40_000) // 20
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"label": y, "qid": qid, **_features("lists-i32-v64", X)}), path)
    peaks = []
    for batches in (True, False):
        script = textwrap.dedent(f"""
            import pyarrow as pa
            from sparkrank.data import parquet_rows
            from sparkrank.io import sources
            from sparkrank.io.formats.parquet import ParquetFormat
            parquet_rows.BATCH_BYTES = 1 << 20
            if not {batches}:
                ParquetFormat.read_batch_by_batch = lambda *args: None
            data = sources.open_source({str(path)!r}).ranking_data()
            assert data.X.shape == (40_000, 50), data.X.shape
            print(pa.default_memory_pool().max_memory())
        """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        peaks.append(int(out.stdout.split()[-1]))
    decoded = X.size * (8 + 4)  # the table's values and indices
    assert peaks[0] < decoded / 2 and peaks[1] > decoded and 4 * peaks[0] < peaks[1], peaks
