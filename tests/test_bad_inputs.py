"""Bad inputs are clean errors, the same on both engines (issue 13 item 5).

Every case goes through the CLI (``sparkrank train``) on the local and the Spark engine:
exit code 2, one ``sparkrank train: error: ...`` line naming the file and the line of the
file (SVMlight) or the row of the file (Parquet), no traceback, and the same message on
both engines.  Inputs
the engines used to disagree on (lone-CR line ends, gzip without a ``.gz`` name) train on
both.  Two cases run as subprocesses to prove nothing else reaches stderr.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import require_lake_scheme
from sparkrank.cli import main

ENGINES = ("local", "spark")
N_LINES = 30000


def _lines(n: int = N_LINES) -> list[str]:
    rng = np.random.default_rng(7)
    return [f"{int(rng.integers(0, 3))} qid:{i // 20 + 1} 1:{rng.random():.4f} 3:{rng.random():.4f} 7:{rng.random():.4f}"
            for i in range(n)]


def _text(path: Path, lines: list[str], sep: str = "\n") -> Path:
    path.write_bytes((sep.join(lines) + sep).encode())
    return path


def _with_line(path: Path, number: int, line: str) -> Path:
    lines = _lines()
    lines[number - 1] = line
    return _text(path, lines)


# (case id, builder(tmp) -> path, text every message must contain) for SVMlight: the
# message must be the same on both engines, word for word.
SVMLIGHT_CASES = [
    ("bad-value-line-25000", lambda d: _with_line(d / "v.txt", 25000, "1 qid:1250 1:abc"),
     "malformed value 'abc' of feature 1 on line 25000"),
    ("nan-label", lambda d: _with_line(d / "nl.txt", 20001, "nan qid:1001 1:1"), "label on line 20001 is nan"),
    ("inf-feature", lambda d: _with_line(d / "if.txt", 29999, "1 qid:1500 2:inf"), "feature 2 on line 29999 is inf"),
    ("zero-index", lambda d: _with_line(d / "z.txt", 12345, "1 qid:618 0:1"), "feature index 0 on line 12345"),
    ("negative-index", lambda d: _with_line(d / "n.txt", 777, "1 qid:39 -3:1"),
     "malformed feature index in '-3:1' on line 777"),
    ("non-increasing", lambda d: _with_line(d / "o.txt", 18000, "1 qid:900 4:1 2:1"),
     "feature indices on line 18000 are not strictly increasing: 2 after 4"),
    ("qid-abc-after-integers", lambda d: _with_line(d / "q.txt", 26000, "1 qid:abc 1:1"),
     "qid 'abc' on line 26000 is not an integer, but the first qid (line 1) is"),
    ("missing-qid", lambda d: _with_line(d / "mq.txt", 21000, "1 1:1"),
     "line 21000 has no qid but line 1 has one"),
    ("index-2e8", lambda d: _with_line(d / "big.txt", 24000, "1 qid:1200 200000000:1"),
     "feature index 200000000 on line 24000 needs 200000000 feature columns, more than --max-features=16777216"),
    ("truncated-gz", lambda d: _truncated_gz(d / "t.txt.gz"), "truncated or corrupt gzip data"),
    ("truncated-gzip-named-txt", lambda d: _truncated_gz(d / "t.txt"), "truncated or corrupt gzip data"),
]


def _truncated_gz(path: Path) -> Path:
    data = gzip.compress(("\n".join(_lines()) + "\n").encode())
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.fixture
def small_splits(spark):
    """Spark reads text in 64 kB splits, so a 1 MB file is ~15 parallel pieces and a bad
    line's number must be counted across them."""
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "65536")
    yield
    spark.conf.set("spark.sql.files.maxPartitionBytes", old)


def _train(path: Path | str, engine: str, tmp_path: Path, capsys, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["train", "--engine", engine, "--input", str(path), "--model", str(tmp_path / f"m-{engine}.json"),
               "--max-iter", "3", "-q", *extra])
    return rc, capsys.readouterr().err


def _error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("sparkrank train: error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0][len("sparkrank train: error: "):]


def _errors_on_both_engines(path: Path | str, tmp_path: Path, capsys, *extra: str) -> dict[str, str]:
    """Each engine's one error line for training on ``path`` (exit 2 on both)."""
    messages = {}
    for engine in ENGINES:
        rc, err = _train(path, engine, tmp_path, capsys, *extra)
        assert rc == 2, (engine, err)
        messages[engine] = _error_line(err)
    return messages


@pytest.mark.parametrize("case, build, expected", SVMLIGHT_CASES, ids=[c[0] for c in SVMLIGHT_CASES])
def test_svmlight_errors_name_the_line_of_the_file_on_both_engines(spark, small_splits, tmp_path, capsys,
                                                                   case, build, expected):
    path = build(tmp_path)
    messages = _errors_on_both_engines(path, tmp_path, capsys)
    assert messages["local"] == messages["spark"]
    assert messages["local"].startswith(f"{path}: ")
    assert expected in messages["local"]


@pytest.mark.parametrize("case", ["lone-CR", "gzip-without-gz-name"])
def test_engines_agree_on_line_ends_and_compression(spark, small_splits, tmp_path, capsys, case):
    lines = _lines(3000)
    if case == "lone-CR":
        path = _text(tmp_path / "cr.txt", lines, "\r")
    else:
        path = tmp_path / "zipped.txt"
        path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    plain = _text(tmp_path / "plain.txt", lines)
    weights = {}
    for engine in ENGINES:
        for name, p in (("odd", path), ("plain", plain)):
            rc, err = _train(p, engine, tmp_path, capsys)
            assert rc == 0, (engine, err)
            weights[engine, name] = json.loads((tmp_path / f"m-{engine}.json").read_text())["weights"]
    for engine in ENGINES:
        assert weights[engine, "odd"] == weights[engine, "plain"]
    np.testing.assert_allclose(weights["local", "odd"], weights["spark", "odd"], rtol=1e-9)


# ----------------------------------------------------------------------------- Parquet


N_ROWS = 12  # three queries of four rows: row r has qid 1 + r // 4


def _sparse_parquet(name: str, *, row: int | None = None, indices=None, values=None, labels=None):
    """A small indices/values Parquet file whose row ``row`` gets the given bad parts
    (``labels`` replaces the whole label column)."""
    def build(d: Path) -> Path:
        ind, val = [[0, 2] for _ in range(N_ROWS)], [[1.0, 2.0] for _ in range(N_ROWS)]
        if indices is not None:
            ind[row] = indices
        if values is not None:
            val[row] = values
        table = pa.table({"label": labels if labels is not None else [float(i % 3) for i in range(N_ROWS)],
                          "qid": [1 + i // 4 for i in range(N_ROWS)],
                          "indices": pa.array(ind, pa.list_(pa.int32())),
                          "values": pa.array(val, pa.list_(pa.float64()))})
        pq.write_table(table, d / name)
        return d / name
    return build


def _parquet_dense_lengths(d):
    arrays = [[1.0, 2.0, 3.0]] * 8 + [[1.0, 2.0, 3.0, 4.0]] * 4
    table = pa.table({"label": [float(i % 3) for i in range(N_ROWS)], "qid": [1 + i // 4 for i in range(N_ROWS)],
                      "features": pa.array(arrays, pa.list_(pa.float64()))})
    pq.write_table(table, d / "dense.parquet")
    return d / "dense.parquet"


# (case id, builder, detail every message must contain, row of the file, its qid)
PARQUET_CASES = [
    ("unsorted-indices", _sparse_parquet("unsorted.parquet", row=9, indices=[3, 1]),
     "feature indices are not strictly increasing: 1 after 3", 9, 3),
    ("duplicate-indices", _sparse_parquet("dup.parquet", row=5, indices=[2, 2]),
     "feature indices are not strictly increasing: 2 after 2", 5, 2),
    ("nan-feature", _sparse_parquet("nanfeat.parquet", row=10, values=[1.0, float("nan")]),
     "feature column 2 is nan", 10, 3),
    ("inf-label", _sparse_parquet("inflabel.parquet", labels=[1.0] * 6 + [float("inf")] + [0.0] * 5),
     "column 'label' is inf", 6, 2),
    ("index-2e8", _sparse_parquet("huge.parquet", row=7, indices=[0, 199999999]),
     "feature index 199999999 needs 200000000 feature columns, more than --max-features=16777216", 7, 2),
    ("dense-lengths", _parquet_dense_lengths, "feature arrays differ in length", None, None),
    ("string-label", _sparse_parquet("strlabel.parquet", labels=["1"] * 7 + ["x"] + ["0"] * 4),
     "column 'label' has type string: labels must be numbers", None, None),
]


@pytest.mark.parametrize("case, build, detail, row, qid", PARQUET_CASES, ids=[c[0] for c in PARQUET_CASES])
def test_parquet_errors_name_the_row_on_both_engines(spark, tmp_path, capsys, case, build, detail, row, qid):
    path = build(tmp_path)
    messages = _errors_on_both_engines(path, tmp_path, capsys, "--partitions", "3")
    for engine in ENGINES:
        assert detail in messages[engine], engine
    if row is not None:  # Spark looks the shuffled row up again by its qid: the same file and row
        assert messages["local"].startswith(f"{path}: row {row}: {detail}")
        assert messages["spark"] == messages["local"]


@pytest.mark.parametrize("value, detail", [(None, "is null"), (float("nan"), "is nan"), (float("-inf"), "is -inf")])
def test_named_feature_columns_name_the_column_and_row_on_both_engines(spark, tmp_path, capsys, value, detail):
    """--feature-cols: a bad value names its column by name (Spark assembles the columns into an
    array and keeps their names in its metadata), its file and its row, the same on both engines."""
    f1 = [0.1 * i for i in range(12)]
    f1[7] = value
    path = tmp_path / "named.parquet"
    pq.write_table(pa.table({"label": [float(i % 3) for i in range(12)], "qid": [1 + i // 4 for i in range(12)],
                             "f1": pa.array(f1, pa.float64()), "f2": [1.0] * 12}), path)
    messages = _errors_on_both_engines(path, tmp_path, capsys, "--feature-cols", "f2", "f1", "--partitions", "2")
    assert messages["local"] == messages["spark"] == f"{path}: row 7: feature column 'f1' {detail}"


@pytest.mark.parametrize("token, detail", [("", "row 13 (line 15): feature column 'f1' is null"),
                                           ("NaN", "row 13 (line 15): feature column 'f1' is nan"),
                                           ("nan", "row 13 (line 15): feature column 'f1' is nan"),
                                           ("-inf", "row 13 (line 15): feature column 'f1' is -inf"),
                                           (" Infinity", "row 13 (line 15): feature column 'f1' is inf"),
                                           ("NA", "feature column 'f1' is not numeric (string)")])
def test_csv_errors_name_the_file_and_row_on_both_engines(spark, tmp_path, capsys, token, detail):
    """A CSV scan has no row index on Spark: the engine reads the bad group's rows in-process
    (Source.locate_row), rows counted in the file before --where, as the local engine counts.
    Both read a field as Spark does: only an empty one is null, "NaN" is NaN, "NA" a string; and
    a column with pandas' and numpy's "nan", "inf", "-inf" (which Spark's schema inference leaves
    a string column) is numbers on both, so the row is named, not the column's type."""
    lines = ["label,qid,f1,f2"] + [f"{i % 3},{1 + i // 4},{0.1 * i:.1f},1" for i in range(16)]
    lines[1 + 13] = f"1,4,{token},1"  # row 13 (qid 4)
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(lines) + "\n")
    messages = _errors_on_both_engines(path, tmp_path, capsys, "--where", "qid > 1", "--partitions", "2")
    assert messages["local"] == messages["spark"] == f"{path}: {detail}"


@pytest.mark.parametrize("kind", ["parquet", "hive-where", "csv", "direct-row-groups", "lake-uri"])
def test_bad_rows_in_several_blocks_name_the_local_engines_row_and_counts(spark, tmp_path, capsys, kind):
    """Bad rows in several files, groups and blocks: Spark named the first block's bad row (here
    the group that sorts first, last in the files) with that block's count, plus '(and 2 more
    partitions with errors)'.  Both engines now name the first file with a bad row, checked as
    a whole: its first failing check (labels before features), its first such row, and how many
    rows of that file fail it.  Local files are read again in-process; files only Hadoop reads
    (``lake-uri``: the local engine cannot read them; also files too large to read again in the
    driver) are checked by a Spark job over the scan's file rows, with the same message."""
    import pyarrow.csv as pcsv

    n = 240
    qids = np.repeat(np.arange(12)[::-1], 20)  # groups in descending order: block order is not file order
    labels, f1 = (np.arange(n) % 3).astype(float), np.linspace(0.0, 1.0, n)
    f1[7] = np.nan  # file 1: a feature before the labels, but labels are checked first
    labels[[50, 130]] = np.nan  # file 1, two groups (qid 9 and 5)
    labels[[215, 230]] = np.inf  # file 2 (qid 1 and 0: the first block's)
    table = pa.table({"label": labels, "qid": qids, "f1": f1, "day": ["a"] * 200 + ["b"] * 40})
    files = [table.slice(0, 200), table.slice(200)]
    extra = ("--partitions", "3", "--feature-cols", "f1")
    if kind == "hive-where":
        for part, name in zip(files, ("a", "b")):
            (tmp_path / "lake" / f"day={name}").mkdir(parents=True)
            pq.write_table(part.drop(["day"]), tmp_path / "lake" / f"day={name}" / "part.parquet")
        path, first, extra = tmp_path / "lake", tmp_path / "lake" / "day=a" / "part.parquet", \
            extra + ("--where", "qid >= 0")
    else:
        (tmp_path / "in").mkdir()
        for k, part in enumerate(files):
            if kind == "csv":
                pcsv.write_csv(part, tmp_path / "in" / f"part-{k}.csv")
            else:  # direct-row-groups: blocks read straight from the row groups, in file order
                pq.write_table(part, tmp_path / "in" / f"part-{k}.parquet", row_group_size=40)
        path, first = tmp_path / "in", tmp_path / "in" / f"part-0.{'csv' if kind == 'csv' else 'parquet'}"
        if kind in ("parquet", "lake-uri"):  # one row group per file: too few for the blocks, rows are shuffled
            for k, part in enumerate(files):
                pq.write_table(part, tmp_path / "in" / f"part-{k}.parquet")
    messages = _errors_on_both_engines(path, tmp_path, capsys, *extra)
    if kind == "lake-uri":
        require_lake_scheme(spark)
        rc, err = _train(f"lake://{path}", "spark", tmp_path, capsys, *extra)
        assert rc == 2, err
        assert _error_line(err) == f"lake:{messages['local']}"  # display_name: Hadoop's spelling, lake:/tmp/...
    assert messages["local"] == messages["spark"], messages
    row = "row 50 (line 52)" if kind == "csv" else "row 50"  # a CSV row (a record) also gives its line
    assert messages["local"].startswith(f"{first}: {row}: column 'label' is nan (in 2 rows); pass --drop-invalid-rows")


def test_drop_invalid_rows_skips_dropped_rows_when_naming_a_bad_row(spark, tmp_path, capsys, monkeypatch):
    """--drop-invalid-rows: a row with a nan label is dropped, so the error is the bad feature
    of a later row, on both engines (the error path that names the row must drop it too; the
    local engine named it by its position among the rows kept, row 49).  Spark's error path
    reads a file again in-process only up to ``Source.LOCATE_IN_PROCESS_BYTES``: beyond, it
    leaves the lookup to a Spark job (the message is the same)."""
    from sparkrank.io.sources import ColumnSpec, Source, open_source

    n = 120
    labels, f1 = (np.arange(n) % 3).astype(float), np.linspace(0.0, 1.0, n)
    labels[5] = np.nan
    f1[50] = np.nan
    table = pa.table({"label": labels, "qid": np.repeat(np.arange(6)[::-1], 20), "f1": f1})
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path)
    extra = ("--drop-invalid-rows", "--partitions", "3", "--feature-cols", "f1")
    messages = _errors_on_both_engines(path, tmp_path, capsys, *extra)
    assert messages["local"] == messages["spark"] == f"{path}: row 50: feature column 'f1' is nan", messages
    source = open_source(str(path), columns=ColumnSpec(feature_cols=("f1",)))
    assert source.locate_row(drop_invalid_rows=True) == messages["local"]
    monkeypatch.setattr(Source, "LOCATE_IN_PROCESS_BYTES", path.stat().st_size - 1)
    assert source.locate_row(drop_invalid_rows=True) is None
    rc, err = _train(path, "spark", tmp_path, capsys, *extra)  # the Spark job's lookup
    assert rc == 2 and _error_line(err) == messages["local"]


@pytest.mark.parametrize("kind", ["truncated", "csv-as-parquet"])
def test_a_file_that_is_not_parquet_is_named_on_both_engines(spark, tmp_path, capsys, kind):
    """A damaged Parquet file, or a CSV given --format parquet: one line naming the file on both
    engines (Spark ended in a Py4JJavaError trace of 200 lines, exit 1)."""
    table = pa.table({"label": [float(i % 3) for i in range(40)], "qid": [i // 10 for i in range(40)],
                      "f1": [0.1 * i for i in range(40)]})
    if kind == "truncated":
        whole = tmp_path / "whole.parquet"
        pq.write_table(table, whole)
        path = tmp_path / "cut.parquet"
        path.write_bytes(whole.read_bytes()[:300])
        extra = ()
    else:
        path = tmp_path / "rows.csv"
        path.write_text("label,qid,f1\n" + "".join(f"{i % 3},{i // 10},{0.1 * i}\n" for i in range(40)))
        extra = ("--format", "parquet")
    messages = _errors_on_both_engines(path, tmp_path, capsys, *extra)
    assert messages["local"] == messages["spark"] == \
        f"{path}: not a Parquet file, or a damaged one (its footer cannot be read)"


@pytest.mark.parametrize("extra", [(), ("--feature-cols", "f2")])
def test_a_csv_header_naming_a_column_twice_is_named_on_both_engines(spark, tmp_path, capsys, extra):
    """pyarrow refused such a file in its own words; Spark renamed the second f1 to f13 (its
    position), which collided with a real column or trained on other columns than asked."""
    path = tmp_path / "twice.csv"
    path.write_text("label,qid,f1,f1,f2\n" + "".join(f"{i % 3},{i // 10},{0.1 * i},1,2\n" for i in range(40)))
    messages = _errors_on_both_engines(path, tmp_path, capsys, *extra)
    assert messages["local"] == messages["spark"] == f"{path}: the header row names column 'f1' twice"


@pytest.mark.parametrize("label, detail", [("x", "column 'label' has type string: labels must be numbers"),
                                           ("true", "column 'label' has type bool: labels must be numbers"),
                                           ("nan", "row 13 (line 15): column 'label' is nan (in 1 rows)")])
def test_csv_labels_that_are_not_numbers_are_the_same_error_on_both_engines(spark, tmp_path, capsys, label, detail):
    """A label column of text or booleans: on Spark every block said it, without the file, and
    added '(and 1 more partitions with errors)'; a CSV label 'nan' was text to Spark's inference."""
    lines = ["label,qid,f1"] + [f"{'true' if label == 'true' else i % 3},{1 + i // 4},{0.1 * i:.1f}" for i in range(16)]
    lines[1 + 13] = f"{label},4,1.3"
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(lines) + "\n")
    messages = _errors_on_both_engines(path, tmp_path, capsys, "--partitions", "2")
    assert messages["local"] == messages["spark"], messages
    assert detail in messages["local"]


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_null_group_id_is_named_by_file_and_row_on_both_engines(spark, tmp_path, capsys, kind):
    """Spark said 'a row of qid None: column 'qid' is null' (no file, no row); the local engine
    named the row among all files' rows after --where.  Both now name its file and row."""
    qids = [1 + i // 4 for i in range(16)]
    qids[11] = None
    table = pa.table({"label": [float(i % 3) for i in range(16)], "qid": pa.array(qids, pa.int64()),
                      "f1": [0.1 * i for i in range(16)]})
    path = tmp_path / f"ids.{kind}"
    if kind == "parquet":
        pq.write_table(table, path)
    else:
        path.write_text("label,qid,f1\n" + "".join(f"{y},{'' if q is None else q},{x}\n" for y, q, x in
                                                  zip(table.column("label").to_pylist(), qids,
                                                      table.column("f1").to_pylist())))
    messages = _errors_on_both_engines(path, tmp_path, capsys, "--partitions", "2", "--feature-cols", "f1")
    assert messages["local"] == messages["spark"]
    row = "row 11 (line 13)" if kind == "csv" else "row 11"  # a CSV row (a record) also gives its line
    assert messages["local"].startswith(f"{path}: {row}: group id 'qid' is null (in 1 rows); pass --drop-invalid-rows")


@pytest.mark.parametrize("text, detail", [("", "{path}: the file is empty: no header row"),
                                          ("label,qid,f1\n", "{path}: no preference pairs: the input has no data rows"),
                                          ("label,qid,f1\n,1,0.5\n,1,0.2\n", "{path}: row 0 (line 2): column 'label' is null (in 2 rows)")])
def test_an_empty_csv_says_so_on_both_engines(spark, tmp_path, capsys, text, detail):
    """A 0-byte CSV (pyarrow's 'Empty CSV file' vs Spark's 'no label column'), a header without
    rows and an all-empty label column (pyarrow's null type: 'has type null' vs Spark's string)."""
    path = tmp_path / "empty.csv"
    path.write_text(text)
    messages = _errors_on_both_engines(path, tmp_path, capsys)
    assert messages["local"] == messages["spark"]
    assert messages["local"].startswith(detail.format(path=path))


def test_a_where_that_spark_cannot_cast_is_one_line(spark, tmp_path, capsys):
    """A --where comparing a string column with a number: Spark's ANSI cast fails inside the job;
    the command prints the input, the filter and Spark's own first line (exit 2), no Py4J or JVM
    trace (the local engine's words: tests/test_lake.py)."""
    path = tmp_path / "ids.csv"
    path.write_text("label,qid,f1\n" + "".join(f"{i % 3},q{i // 10},{0.1 * i}\n" for i in range(40)))
    rc, err = _train(path, "spark", tmp_path, capsys, "--where", "qid = 5")
    assert rc == 2, err
    assert _error_line(err).startswith(f"{path}: cannot read with --where 'qid = 5': [CAST_INVALID_INPUT] "
                                       "The value 'q0' of the type \"STRING\" cannot be cast")


def test_parquet_directory_errors_name_the_file_and_its_row_on_both_engines(spark, tmp_path, capsys):
    """Several files, a bad row in the second, and a --where that drops rows before it: both
    engines count the row in its own file, before the filter (Spark's _metadata.row_index)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    for part, qid0 in (("part-0.parquet", 1), ("part-1.parquet", 101)):
        values = [[1.0, float(i)] for i in range(N_ROWS)]
        if part == "part-1.parquet":
            values[9] = [1.0, float("nan")]
        pq.write_table(pa.table({"label": [float(i % 3) for i in range(N_ROWS)],
                                 "qid": [qid0 + i // 4 for i in range(N_ROWS)],
                                 "indices": pa.array([[0, 2]] * N_ROWS, pa.list_(pa.int32())),
                                 "values": pa.array(values, pa.list_(pa.float64()))}), lake / part)
    messages = {}
    for engine in ENGINES:
        rc, err = _train(lake, engine, tmp_path, capsys, "--partitions", "3", "--where", "qid <> 101")
        assert rc == 2, (engine, err)
        messages[engine] = _error_line(err)
    assert messages["local"] == f"{lake / 'part-1.parquet'}: row 9: feature column 2 is nan"
    assert messages["spark"] == messages["local"]


@pytest.mark.parametrize("case, line, detail", [
    ("no-qid", "1 1:1", "line 5 has no qid but line 1 of {first} has one"),
    ("string-qid", "1 qid:abc 1:1", "qid 'abc' on line 5 is not an integer, but the first qid (line 1 of {first}) is"),
])
def test_svmlight_files_follow_the_first_files_qid_rule_on_both_engines(spark, tmp_path, capsys, case, line, detail):
    """Several SVMlight files: the first data line of the first file fixes the qid rule of all."""
    lake = tmp_path / "lake"
    lake.mkdir()
    first = _text(lake / "a.txt", _lines(40))
    second = _lines(40)
    second[4] = line
    bad = _text(lake / "b.txt", second)
    messages = {}
    for engine in ENGINES:
        rc, err = _train(lake, engine, tmp_path, capsys)
        assert rc == 2, (engine, err)
        messages[engine] = _error_line(err)
    assert messages["local"].startswith(f"{bad}: {detail.format(first=first)}"), messages
    assert messages["spark"] == messages["local"]


@pytest.mark.parametrize("compressed", [False, True], ids=["text", "gzip"])
def test_a_file_has_one_name_in_messages_however_it_is_given(spark, tmp_path, capsys, compressed):
    """A bad file given as a path, a ``file:`` URI, its directory or a glob is named by its
    absolute path on both engines (``io.uri.display_name``), a space in it included."""
    lake = tmp_path / "my lake"
    lake.mkdir()
    lines = _lines(40)
    lines[4] = "1 qid:1 1:abc"
    if compressed:
        bad = _truncated_gz(lake / "part 0.txt.gz")
        detail = "truncated or corrupt gzip data"
    else:
        bad = _text(lake / "part 0.txt", lines)
        detail = "malformed value 'abc' of feature 1 on line 5"
    # Hadoop reads a path string unescaped, so "file:///.../my lake" (not my%20lake) names the file
    spellings = [str(bad), f"file://{bad}", f"file://{lake}"]
    if not compressed:  # (the gzip case checks where its error is raised, not the spellings again)
        spellings += [f"file:{bad}", f"{lake}/*.txt*", f"{tmp_path}/my*"]
    for spelling in spellings:
        for engine in ENGINES:
            rc, err = _train(spelling, engine, tmp_path, capsys)
            assert rc == 2, (spelling, engine, err)
            assert _error_line(err) == f"{bad}: {detail}", (spelling, engine)
    for engine in ENGINES if not compressed else ():  # percent-escapes are taken literally, as Hadoop takes them
        rc, err = _train(bad.as_uri(), engine, tmp_path, capsys)
        assert rc == 2 and _error_line(err) == f"input {bad.as_uri()} does not exist", (engine, err)


def test_an_input_has_one_name_in_column_errors_however_it_is_given(spark, tmp_path, capsys, monkeypatch):
    """Errors about the whole input (a column's type) named it as given: ``rows.csv`` from a
    relative path, while its row errors said ``/abs/rows.csv``; now a local path is absolute and
    a ``file:`` URI its path, as :func:`~sparkrank.io.uri.display_name` names files."""
    path = tmp_path / "rows.csv"
    path.write_text("label,qid,doc,f1\n1,1,a,0.5\n0,1,b,0.2\n")
    monkeypatch.chdir(tmp_path)
    for spelling in ("rows.csv", f"file://{path}", str(path)):
        messages = _errors_on_both_engines(spelling, tmp_path, capsys, "--feature-cols", "doc", "f1")
        assert messages["local"] == messages["spark"] == f"{path}: feature column 'doc' is not numeric (string)", \
            (spelling, messages)


def test_inputs_without_rows_are_an_error_on_both_engines(spark, tmp_path, capsys):
    """An empty file, or a --where that keeps no row: no model, no metrics of NaN."""
    empty = _text(tmp_path / "empty.txt", ["# comments only"])
    rows = _text(tmp_path / "rows.txt", _lines(40))
    model = tmp_path / "model.json"
    assert main(["train", "--engine", "local", "--input", str(rows), "--model", str(model), "-q"]) == 0
    for engine in ENGINES:
        rc, err = _train(empty, engine, tmp_path, capsys)
        assert rc == 2 and _error_line(err) == f"{empty}: no preference pairs: the input has no data rows", \
            (engine, err)
        capsys.readouterr()
        rc = main(["evaluate", "--engine", engine, "--model", str(model), "--input", str(rows), "--where", "qid < 0"])
        err = capsys.readouterr().err
        assert rc == 2 and f"sparkrank evaluate: error: {rows}: no data rows to evaluate (--where 'qid < 0')" in err


def test_svmlight_files_with_one_qid_rule_stack_on_both_engines(spark, tmp_path, capsys):
    lake = tmp_path / "lake"
    lake.mkdir()
    lines = _lines(80)
    _text(lake / "a.txt", lines[:40])
    _text(lake / "b.txt", lines[40:])
    _text(lake / "c.txt", ["# only a comment"])
    whole = _text(tmp_path / "whole.txt", lines)
    models = {}
    for engine in ENGINES:
        for name, path in (("lake", lake), ("whole", whole)):
            rc, err = _train(path, engine, tmp_path, capsys)
            assert rc == 0, err
            models[engine, name] = json.loads((tmp_path / f"m-{engine}.json").read_text())["weights"]
    assert models["local", "lake"] == models["local", "whole"] == models["spark", "lake"] == models["spark", "whole"]


def test_ml_vectors_of_different_sizes_are_an_error_on_both_engines(spark, tmp_path, capsys):
    from pyspark.ml.linalg import Vectors, VectorUDT
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    rows = [(float(i % 3), 1 + i // 4, Vectors.dense([1.0, float(i)]) if i < 8 else Vectors.sparse(5, [0], [1.0]))
            for i in range(12)]
    schema = StructType([StructField("label", DoubleType()), StructField("qid", LongType()),
                         StructField("features", VectorUDT())])
    path = tmp_path / "vectors.parquet"
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(str(path))
    for engine in ENGINES:
        rc, err = _train(path, engine, tmp_path, capsys, "--partitions", "3")
        assert rc == 2, (engine, err)
        assert "feature vectors differ in size" in _error_line(err)


def test_dense_arrays_of_different_lengths_in_different_blocks(spark, tmp_path):
    from sparkrank.data.block import DataError
    from sparkrank.engines.spark.engine import SparkEngine

    path = _parquet_dense_lengths(tmp_path)  # qids 1, 2: length 3; qid 3: length 4
    with pytest.raises(DataError, match="feature arrays differ in length"):
        SparkEngine(spark.read.parquet(str(path)), placement="driver", num_partitions=3)


def test_max_features_can_be_raised(tmp_path, capsys):
    lines = ["1 qid:1 1:1 5000:2", "0 qid:1 2:1", "2 qid:1 3:1 4999:1"]
    path = _text(tmp_path / "wide.txt", lines)
    rc, err = _train(path, "local", tmp_path, capsys, "--max-features", "4999")
    assert rc == 2 and "line 1 needs 5000 feature columns, more than --max-features=4999" in _error_line(err)
    rc, err = _train(path, "local", tmp_path, capsys, "--max-features", "5000")
    assert rc == 0, err
    rc, err = _train(path, "local", tmp_path, capsys, "--max-features", "5000", "--n-features", "6000")
    assert rc == 2 and "--n-features needs 6000 feature columns" in _error_line(err)


@pytest.mark.parametrize("engine", ENGINES)
def test_init_model_of_another_width_than_the_data_is_an_error_on_both_engines(spark, tmp_path, capsys, engine):
    path = _text(tmp_path / "seven.txt", _lines(40))  # features 1, 3, 7
    for n in (5, 9):  # neither padded nor cut: the data's width (its largest index) decides
        init = tmp_path / f"init{n}.json"
        init.write_text(json.dumps({"weights": [0.1] * n, "solver": "tron", "C": 1.0}))
        rc, err = _train(path, engine, tmp_path, capsys, "--init-model", str(init))
        assert rc == 2 and _error_line(err).startswith(f"--init-model {init} has {n} weights but the data has 7 "
                                                       "features"), err
    rc, err = _train(path, engine, tmp_path, capsys, "--init-model", str(init), "--n-features", "9")
    assert rc == 0, err  # an explicit --n-features reads the data as wide as the model
    assert len(json.loads((tmp_path / f"m-{engine}.json").read_text())["weights"]) == 9


@pytest.mark.parametrize("with_qid", [True, False], ids=["qid", "no-qid"])
def test_feature_cols_on_svmlight_input_is_the_same_error_on_both_engines(spark, tmp_path, capsys, with_qid):
    lines = _lines(40) if with_qid else [ln.replace(f" qid:{ln.split(' qid:')[1].split()[0]}", "")
                                         for ln in _lines(40)]
    path = _text(tmp_path / "named.txt", lines)
    errors = {}
    for engine in ENGINES:
        rc, err = _train(path, engine, tmp_path, capsys, "--feature-cols", "f1", "f2")
        assert rc == 2, err
        errors[engine] = _error_line(err)
    columns = "label, qid, indices, values" if with_qid else "label, indices, values"
    assert errors["local"] == errors["spark"] == f"{path}: no feature column 'f1', no feature column 'f2'; " \
                                                 f"columns are {columns}"


# ----------------------------------------------------------------------------- subprocess


# ``python -m sparkrank``'s entry point (cli.run), reporting, after sparkrank's own exit hook, the
# Spark session's Python daemons it stopped before the JVM shut down and how many still live
_RUN_AND_REPORT_DAEMONS = """
import atexit
import sys
from sparkrank import cli
from sparkrank.io.spark import shutdown

stopped = []
stop = shutdown.stop_local_python_daemons
shutdown.stop_local_python_daemons = lambda sc: stopped.extend(stop(sc)) or stopped


def report():  # registered first, so it runs after the hook the session registers
    alive = [pid for pid in stopped if shutdown._alive(pid)]
    print("daemons stopped", len(stopped), "alive", len(alive), flush=True)


atexit.register(report)
cli.run(sys.argv[1:])
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_subprocess_stderr_is_one_line_without_traceback(tmp_path, engine):
    """Nothing else reaches stderr: no Python or JVM trace, and on Spark none from the Python
    workers as the JVM shuts down (``spark/shutdown.py``: the command stops their daemons)."""
    path = _with_line(tmp_path / "bad.txt", 25000, "1 qid:1250 1:abc")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-c", _RUN_AND_REPORT_DAEMONS, "train", "--engine", engine,
                           "--input", str(path), "--model", str(tmp_path / "m.json"), "-q"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert "at org.apache.spark" not in proc.stderr  # no JVM stack trace either (PySpark's logs of probes)
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("sparkrank train: error: ")]
    assert ours == [f"sparkrank train: error: {path}: malformed value 'abc' of feature 1 on line 25000"]
    stopped, alive = (int(proc.stdout.split(word)[1].split()[0]) for word in ("stopped", "alive"))
    assert (stopped >= 1 if engine == "spark" else stopped == 0) and alive == 0, proc.stdout


FLOAT32_OVERFLOW = {
    # (file, what the message says about the value); the value is finite as float64
    "svmlight": ("over.txt", "feature 2 on line 3 is 1e39, beyond float32's range"),
    # more than 18 digits: a token the scanner leaves to Python's float()
    "svmlight-long-token": ("long.txt", f"feature 2 on line 3 is {'9' * 40}, beyond float32's range"),
    "parquet": ("over.parquet", "row 2: feature column 1 is 1e+39, beyond float32's range"),
    "csv": ("over.csv", "row 2 (line 4): feature column 'f2' is 1e+39, beyond float32's range"),
}


@pytest.mark.parametrize("case", list(FLOAT32_OVERFLOW))
def test_a_value_beyond_float32_is_named_by_file_and_line_on_both_engines(spark, tmp_path, capsys, case):
    """``--dtype float32`` cannot hold 1e39: both engines say so with the file and line (or row)
    and how to read it, the same words (Spark parses text as float64 and meets the value in a
    shuffled block: its message is the local reader's); the same input trains in float64."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name, expected = FLOAT32_OVERFLOW[case]
    big = "9" * 40 if case == "svmlight-long-token" else "1e39"
    labels, qids = [1, 0, 2, 0, 1, 0], [1, 1, 1, 2, 2, 2]
    values = [[0.5, 0.25], [0.1, 0.2], [0.3, float(big)], [0.9, 0.4], [0.2, 0.7], [0.6, 0.1]]
    path = tmp_path / name
    if case.startswith("svmlight"):
        path.write_text("".join(f"{y} qid:{q} 1:{x[0]} 2:{big if k == 2 else x[1]}\n"
                                for k, (y, q, x) in enumerate(zip(labels, qids, values))))
    elif case == "parquet":
        pq.write_table(pa.table({"label": labels, "qid": qids, "features": values}), path)
    else:
        path.write_text("label,qid,f1,f2\n" + "".join(f"{y},{q},{x[0]},{big if k == 2 else x[1]}\n"
                                                      for k, (y, q, x) in enumerate(zip(labels, qids, values))))
    messages = _errors_on_both_engines(path, tmp_path, capsys, "--dtype", "float32")
    assert messages["local"] == messages["spark"]
    assert messages["local"] == f"{path}: {expected} (--dtype float64 reads it)"
    for engine in ENGINES:
        rc, err = _train(path, engine, tmp_path, capsys)  # float64 holds it
        assert rc == 0, (engine, err)
