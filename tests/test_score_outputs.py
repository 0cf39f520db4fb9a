"""``predict --output``: the format follows the name on both engines (issue 36).

``*.csv`` is CSV (one file in-process; Spark's directory of part files on Spark), ``*.parquet`` /
``*.pq`` Parquet (a file in-process, a directory on Spark), anything else the engine's own (one
score per line in-process, a Parquet directory on Spark).  Spark's CSV lines are those of
``write_csv``: text quoted, formula starts escaped, a header atop every part file.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sparkrank.cli import main
from sparkrank.io import outputs
from sparkrank.io.outputs import safe_cell, write_csv_dataframe

from test_outputs import FORMULA_CELLS, PLAIN_CELLS

NOTES = [text for cells in FORMULA_CELLS.values() for text in cells] + PLAIN_CELLS + ['a "b", c', "two\nlines"]


def _csv_input(path: Path) -> None:
    """Rows with a text column of every formula start and quoting case, in 4 groups."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)  # a bare CR quoted too
        writer.writerow(["label", "qid", "f1", "f2", "note"])
        for k, note in enumerate(NOTES):
            writer.writerow([k % 3, f"=q{k % 4}", 0.1 * (k % 7), 0.05 * (k % 5), note])


def _records(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _text(path: Path) -> str:
    with open(path, newline="") as f:  # a CR inside a quoted cell stays a CR
        return f.read()


def _part_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("part-*"))


@pytest.fixture(scope="module")
def scored_input(tmp_path_factory):
    d = tmp_path_factory.mktemp("scores")
    _csv_input(d / "in.csv")
    assert main(["train", "--engine", "local", "--input", str(d / "in.csv"), "--feature-cols", "f1", "f2",
                 "--model", str(d / "m.json"), "-q"]) == 0
    return d


def _predict(d: Path, engine: str, output: str, *extra: str) -> int:
    return main(["predict", "--engine", engine, "--model", str(d / "m.json"), "--input", str(d / "in.csv"),
                 "--feature-cols", "f1", "f2", "--output", output, "-q", *extra])


def test_the_output_name_picks_the_format_on_both_engines(spark, scored_input, tmp_path):
    d = scored_input
    assert _predict(d, "local", str(tmp_path / "s.txt")) == 0
    scores = [float(v) for v in (tmp_path / "s.txt").read_text().split()]
    assert len(scores) == len(NOTES)
    # in-process: one CSV file with a header, one Parquet file, the same scores in input order
    assert _predict(d, "local", str(tmp_path / "s.csv")) == 0
    assert _records((tmp_path / "s.csv").read_text()) == [["prediction"], *[[repr(v)] for v in scores]]
    assert _predict(d, "local", str(tmp_path / "s.pq"), "--prediction-col", "score") == 0
    assert pq.read_table(tmp_path / "s.pq").to_pydict() == {"score": scores}
    # Spark: a directory of CSV part files, a directory of Parquet for .parquet and for no extension
    assert _predict(d, "spark", f"file://{tmp_path}/spark.csv", "--keep-cols", "note") == 0
    parts = _part_files(tmp_path / "spark.csv")
    assert parts and all(p.suffix == ".csv" for p in parts)
    rows = []
    for part in parts:
        header, *records = _records(_text(part))
        assert header == ["qid", "note", "prediction"]
        rows += records
    assert len(rows) == len(NOTES)
    row_of = {safe_cell(note): k for k, note in enumerate(NOTES)}  # each note as write_csv writes it
    assert len(row_of) == len(NOTES)
    for qid, note, score in rows:
        k = row_of[note]
        assert qid == f"'=q{k % 4}", (note, qid)
        assert float(score) == pytest.approx(scores[k], rel=1e-12, abs=1e-12)
    for name in ("spark.parquet", "spark"):
        assert _predict(d, "spark", str(tmp_path / name)) == 0
        assert spark.read.parquet(str(tmp_path / name)).count() == len(NOTES)


def test_spark_csv_lines_are_write_csv_s_in_every_part_file(spark, tmp_path):
    """The same bytes as the in-process writer, part by part; an empty partition writes no file
    of only a header; what Spark reads back with its own header option is the rows."""
    rows = [(i, NOTES[i % len(NOTES)], None if i % 5 == 0 else 0.5 * i) for i in range(40)]
    df = spark.createDataFrame(rows, "id int, note string, score double").repartition(6, "id")
    write_csv_dataframe(df, str(tmp_path / "out.csv"))
    parts = _part_files(tmp_path / "out.csv")
    written = []
    for part in parts:
        text = _text(part)
        assert text.startswith('"id","note","score"\n')
        records = _records(text)[1:]
        assert records, f"{part.name}: a header and no rows"
        written += records
        local = tmp_path / "local.csv"
        outputs.write_csv(str(local), ["id", "note", "score"], [(int(r[0]), *r[1:]) for r in
                                                                 _raw_rows(rows, records)])
        assert _text(local) == text
    assert sorted(int(r[0]) for r in written) == list(range(40))
    back = spark.read.csv(str(tmp_path / "out.csv"), header=True, multiLine=True, escape='"')
    assert back.count() == 40


def _raw_rows(rows, records):
    """The input rows of ``records`` (by id), in their order."""
    by_id = {r[0]: r for r in rows}
    return [by_id[int(rec[0])] for rec in records]


def test_spark_csv_output_is_refused_with_partitions_and_leaves_nothing_on_failure(spark, scored_input, tmp_path,
                                                                                    monkeypatch, capsys):
    d = scored_input
    assert _predict(d, "spark", str(tmp_path / "p.csv"), "--partition-by", "qid") == 2
    assert "--partition-by writes Hive partitions of Parquet" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()

    def fail(*args):
        raise OSError("No space left on device")

    monkeypatch.setattr(outputs, "_rename_parts", fail)
    assert _predict(d, "spark", str(tmp_path / "f.csv")) != 0
    assert not (tmp_path / "f.csv").exists()
