"""``--where`` is one grammar on both engines (io/filter_grammar.py, io/where.py): the same
filter keeps the same rows in-process (a pyarrow expression) and on Spark (a Column of
F.col/F.lit, never SQL text), and what is outside the grammar is refused on both with one line
naming the filter and the position.  Full Spark SQL is --where-sql, Spark only."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from sparkrank.cli import main
from sparkrank.data.block import DataError
from sparkrank.engines.registry import choose_engine
from sparkrank.io.sources import open_source
from sparkrank.io.where import UnsupportedFilter, parse_filter, read_arrow, to_arrow_filter, to_spark_filter

NAN = math.nan
# id, qid, day (string), x (double: NaN and null), s (string, null), flag (bool, null), `Odd name`
ROWS = {
    "id": [0, 1, 2, 3, 4, 5, 6, 7],
    "qid": [1, 1, 2, 2, 3, 3, 4, 4],
    "day": ["2026-11-01", "2026-11-01", "2026-11-02", "2026-11-02", "2026-11-03", "2026-11-03", "x", "it's"],
    "x": [0.5, -1.0, NAN, None, 2.0, 1e300, -0.0, NAN],
    "s": ["a", "b", None, "a,b", "", "A", "b", None],
    "flag": [True, False, None, True, False, True, None, False],
    "Odd name": [10, 20, 30, 40, 50, 60, 70, 80],
}

# (filter, the ids it keeps): SQL's three-valued logic (null drops the row, NOT and NOT IN
# included) and Spark's NaN order (NaN = NaN, NaN above every number)
CASES = [
    ("qid = 2", [2, 3]),
    ("qid == 2", [2, 3]),
    ("qid != 2", [0, 1, 4, 5, 6, 7]),
    ("qid <> 2", [0, 1, 4, 5, 6, 7]),
    ("qid < 2 OR qid >= 4", [0, 1, 6, 7]),
    ("qid <= 1", [0, 1]),
    ("QID > 3", [6, 7]),
    ("3 < qid", [6, 7]),
    ("qid IN (1, 3)", [0, 1, 4, 5]),
    ("qid NOT IN (1, 3)", [2, 3, 6, 7]),
    ("qid BETWEEN 2 AND 3", [2, 3, 4, 5]),
    ("qid NOT BETWEEN 2 AND 3", [0, 1, 6, 7]),
    ("qid = '2'", [2, 3]),
    ("qid IN ('1', ' 4 ')", [0, 1, 6, 7]),
    ("day >= '2026-11-02'", [2, 3, 4, 5, 6, 7]),
    ("day = 'it''s'", [7]),
    ("x > 1", [2, 4, 5, 7]),
    ("NOT x > 1", [0, 1, 6]),
    ("x = 'nan'", [2, 7]),
    ("x <> 0.5", [1, 2, 4, 5, 6, 7]),
    ("x < 'Infinity'", [0, 1, 4, 5, 6]),
    ("x >= 'nan'", [2, 7]),
    ("x <= -0.0", [1, 6]),
    ("x = 0", [6]),
    ("x IN (0.5, 'NaN')", [0, 2, 7]),
    ("x NOT IN (0.5)", [1, 2, 4, 5, 6, 7]),
    ("x IS NULL", [3]),
    ("x IS NOT NULL AND s IS NULL", [2, 7]),
    ("s = ''", [4]),
    ("s NOT IN ('a', 'b')", [3, 4, 5]),
    ("NOT (s = 'a' OR s = 'b')", [3, 4, 5]),
    ("s < 'a'", [4, 5]),
    ("s = 'a,b'", [3]),
    ("flag = TRUE", [0, 3, 5]),
    ("flag <> true AND qid >= 2", [4, 7]),
    ("`Odd name` >= 50 AND (`odd NAME` < 70 OR qid = 4)", [4, 5, 6, 7]),
    ("x > 1 AND NOT (s IS NULL) OR id = 0", [0, 4, 5]),
    ("(qid = 1 OR qid = 2) AND NOT (x IS NULL OR x < 0)", [0, 2]),
    ("1 = 1", [0, 1, 2, 3, 4, 5, 6, 7]),
    ("qid IN (1, 2.5)", [0, 1]),
]

# outside the grammar: (filter, what the message names, 1-based character)
REFUSED = [
    ("reflect('java.lang.System', 'setProperty', 'sparkrank.where', 'ran') IS NULL", "a function call reflect(...)", 1),
    ("qid = 1 AND upper(day) = 'X'", "a function call upper(...)", 13),
    ("qid IN (SELECT qid FROM other)", "a subquery (SELECT ...)", 9),
    ("qid = 1; DROP TABLE t", "';' (a second statement)", 8),
    ("qid = 1 OR 1 = 1 --", "'-' (arithmetic or a bit operation)", 18),
    ("qid + 1 = 2", "'+' (arithmetic or a bit operation)", 5),
    ("day LIKE '2026%'", "the operator LIKE", 5),
    ('day = "x"', "a double-quoted string", 7),
    ("day = 'x", "a string without its closing quote", 7),
    ("(qid = 1", "the filter ends early (expected ')')", 9),
    ("NOT flag", "the filter ends early (expected a comparison", 9),
    ("qid = NULL", "'NULL' (expected a column or a literal)", 7),
    ("CASE WHEN qid = 1 THEN 1 END = 1", "a CASE expression (CASE ...)", 1),
]


@pytest.fixture(scope="module")
def table_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("where") / "rows.parquet"
    pq.write_table(pa.table(ROWS), path)
    return path


def _local_ids(path, text):
    """The ids the local engine's scan keeps (io/where.read_arrow), checked against the
    expression run on the rows in memory (no statistics)."""
    dataset = ds.dataset(str(path))
    kept = sorted(read_arrow(dataset, text)[0].column("id").to_pylist())
    in_memory = dataset.to_table()
    assert kept == sorted(in_memory.filter(to_arrow_filter(text, in_memory.schema)).column("id").to_pylist()), text
    return kept


def _spark_ids(df, condition):
    return sorted(r["id"] for r in df.filter(condition).select("id").collect())


def test_the_same_filter_keeps_the_same_rows_on_both_engines(spark, table_path):
    """Each filter of the table keeps the listed rows in-process and on Spark; and Spark SQL
    reading the same text (what --where was on Spark before) keeps them too, so the grammar
    means what Spark SQL means where both read a filter."""
    df = spark.read.parquet(str(table_path))
    in_memory = spark.createDataFrame(df.collect(), df.schema)  # Spark SQL's own semantics: no Parquet pushdown
    for text, ids in CASES:
        assert _local_ids(table_path, text) == ids, text
        assert _spark_ids(df, to_spark_filter(text, df)) == ids, text
        if "''" not in text:  # Spark SQL reads 'it''s' as two adjacent strings, "its"
            assert _spark_ids(in_memory, text) == ids, text


def test_nan_rows_are_kept_where_spark_sql_keeps_them_despite_parquet_statistics(spark, tmp_path):
    """Parquet's row-group statistics leave NaN out: a group of 0.5 and NaN has max 0.5, and
    Spark skipped it for a pushed-down ``x > 1`` although NaN > 1 is true in Spark SQL.  The
    translation spells the NaN terms out, so both engines keep those rows."""
    path = tmp_path / "groups.parquet"
    pq.write_table(pa.table({"id": [0, 1, 2, 3, 4, 5], "x": [0.5, NAN, 5.0, 5.0, None, NAN]}), path,
                   row_group_size=2)
    df = spark.read.parquet(str(path))
    cases = [("x > 1", [1, 2, 3, 5]), ("NOT x < 1", [1, 2, 3, 5]), ("x >= 'nan'", [1, 5]), ("x <> 5", [0, 1, 5]),
             ("x IN ('nan', 7)", [1, 5]), ("x NOT IN (5)", [0, 1, 5]), ("NOT x <= 0.5", [1, 2, 3, 5]),
             ("x BETWEEN 1 AND 'nan'", [1, 2, 3, 5]), ("x = 'NaN' OR x IS NULL", [1, 4, 5]), ("NOT x = 'nan'", [0, 2, 3])]
    for text, ids in cases:
        assert _local_ids(path, text) == ids, text
        assert _spark_ids(df, to_spark_filter(text, df)) == ids, text


@pytest.mark.parametrize("text, what, position", REFUSED)
def test_outside_the_grammar_is_refused_with_its_position(text, what, position):
    with pytest.raises(UnsupportedFilter) as exc:
        parse_filter(text)
    message = str(exc.value)
    assert message.startswith(f"--where {text!r}: {what}"), message
    assert f" at character {position}; " in message and "\n" not in message, message
    assert message.endswith("(--where-sql passes Spark SQL to the Spark engine)")


def test_refused_filters_are_one_line_on_both_engines_and_nothing_runs(spark, table_path, tmp_path, capsys):
    """The CLI refuses before an engine starts; the API refuses on Spark before any SQL is
    parsed: reflect(...) sets no JVM property (on Spark SQL it did, on the executors)."""
    for text, what, position in REFUSED[:4]:
        lines = {}
        for engine in ("local", "spark"):
            capsys.readouterr()
            rc = main(["train", "--engine", engine, "--input", str(table_path), "--where", text, "--qid-col", "qid",
                       "--feature-cols", "x", "--label-col", "flag", "--model", str(tmp_path / "m.json")])
            err = capsys.readouterr().err
            assert rc == 2 and "Traceback" not in err, err
            lines[engine] = [ln for ln in err.splitlines() if ln.startswith("sparkrank train: error: ")]
            assert len(lines[engine]) == 1 and f"at character {position};" in lines[engine][0], err
        assert lines["local"] == lines["spark"]
    source = open_source(str(table_path), where=REFUSED[0][0], spark=spark)
    with pytest.raises(UnsupportedFilter, match="a function call reflect"):
        source.dataframe(spark)
    assert spark._jvm.java.lang.System.getProperty("sparkrank.where") is None
    assert not (tmp_path / "m.json").exists()


def test_literals_that_do_not_compare_with_their_column_are_one_message_on_both_engines(spark, table_path):
    """Cast once, in the translation both engines share."""
    df = spark.read.parquet(str(table_path))
    dataset = ds.dataset(str(table_path))
    cases = [("qid = '2.5'", "column 'qid' is int64 and '2.5' is not an integer"),
             ("x > 'abc'", "column 'x' is double and 'abc' is not a number"),
             ("flag = 1", "column 'flag' is bool and 1 is not (TRUE and FALSE compare with boolean columns"),
             ("qid = TRUE", "column 'qid' is int64 and TRUE is not"),
             ("nosuch > 1", "--where names a column 'nosuch' that does not exist; columns are id, qid, day")]
    for text, expected in cases:
        messages = []
        for translate in (lambda: to_arrow_filter(text, dataset.schema, "in: "), lambda: to_spark_filter(text, df, "in: ")):
            with pytest.raises(DataError) as exc:
                translate()
            messages.append(str(exc.value))
        assert messages[0] == messages[1] and expected in messages[0], messages
    # a number against a string column: in-process, the advice (Spark casts the column's values:
    # tests/test_lake.py)
    with pytest.raises(UnsupportedFilter, match="compares the string column 'day' with the number 5"):
        to_arrow_filter("day > 5", dataset.schema)


def test_where_sql_is_spark_sql_on_spark_only(spark, table_path, tmp_path, capsys):
    """--where-sql: Spark SQL as it is (a function call included), on the Spark engine; the
    local engine refuses it in one line; --engine auto picks Spark for it."""
    args = ["--input", str(table_path), "--qid-col", "qid", "--feature-cols", "Odd name", "--label-col", "id", "-q"]
    out = tmp_path / "sql.json"
    assert main(["train", "--engine", "spark", *args, "--where-sql", "upper(s) IN ('A', 'B')", "--model", str(out)]) == 0
    plain = tmp_path / "plain.json"
    assert main(["train", "--engine", "spark", *args, "--where", "s IN ('a', 'A', 'b')", "--model", str(plain)]) == 0
    assert json.loads(out.read_text())["weights"] == json.loads(plain.read_text())["weights"]
    capsys.readouterr()
    assert main(["train", "--engine", "local", *args, "--where-sql", "upper(s) = 'A'",
                 "--model", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert ("sparkrank train: error: --where-sql \"upper(s) = 'A'\" is Spark SQL, which only the Spark engine "
            "evaluates (--engine spark); --where takes the filter grammar both engines share") in err, err
    assert choose_engine("auto", [str(table_path)], where="qid = 1", where_sql=True) == ("spark",
                                                                                         "--where-sql is Spark SQL")
    assert choose_engine("auto", [str(table_path)], where="qid = 1")[0] == "local"
    with pytest.raises(SystemExit):  # one or the other
        main(["train", *args, "--where", "qid = 1", "--where-sql", "qid = 1", "--model", str(tmp_path / "y.json")])
    capsys.readouterr()
    assert main(["train", "--engine", "spark", *args, "--where-sql", "qid = 'x'", "--model",
                 str(tmp_path / "z.json")]) == 2
    assert f"{table_path}: --where-sql \"qid = 'x'\": [CAST_INVALID_INPUT]" in capsys.readouterr().err


def test_a_where_trains_the_same_model_on_both_engines(spark, tmp_path):
    """Nulls, NaN and NOT IN in a real fit: the same rows reach both engines' blocks."""
    rng = np.random.default_rng(5)
    n = 240
    qid = np.repeat(np.arange(24), 10)
    tag = np.array(["a", "b", None, "c"], dtype=object)[rng.integers(0, 4, n)]
    score = rng.normal(size=n)
    score[rng.integers(0, n, 20)] = np.nan
    path = tmp_path / "fit.parquet"
    pq.write_table(pa.table({"label": rng.integers(0, 3, n).astype(float), "qid": qid, "tag": list(tag),
                             "score": score, "f1": rng.normal(size=n), "f2": rng.normal(size=n)}), path)
    where = "tag NOT IN ('b') AND NOT (score < 0) AND qid BETWEEN '2' AND 20"
    models = {}
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}.json"
        assert main(["train", "--engine", engine, "--input", str(path), "--feature-cols", "f1", "f2", "--where", where,
                     "--model", str(out), "-q"]) == 0
        models[engine] = json.loads(out.read_text())
    keep = np.array([t not in ("b", None) for t in tag]) & ~(score < 0) & (qid >= 2) & (qid <= 20)
    assert models["local"]["summary"]["n_rows"] == models["spark"]["summary"]["n_rows"] == int(keep.sum())
    np.testing.assert_allclose(models["spark"]["weights"], models["local"]["weights"], rtol=1e-9, atol=1e-12)
