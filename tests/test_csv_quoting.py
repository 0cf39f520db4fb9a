"""CSV is read as RFC 4180 on both engines (io/formats.DelimitedFormat): quoted numbers, the
delimiter, CR, LF and CR LF inside quotes, doubled quotes, empty quoted fields.  The in-process
reader (pyarrow) read them; Spark (``spark.read.csv`` without multiLine/escape) made a string
column of a feature and failed.  A row is a record, so a bad row's message says its line too."""

from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkrank.cli import main

ENGINES = ("local", "spark")

# the quoted fields of the "note" and "id" columns, cycled over the rows: (CSV text, value)
NOTES = [('"plain"', "plain"), ('"embedded, comma"', "embedded, comma"), ('"line1\nline2"', "line1\nline2"),
         ('"crlf\r\ninside"', "crlf\r\ninside"), ('"cr\rinside"', "cr\rinside"), ('"say ""hi"""', 'say "hi"'),
         ('""', None), ("", None), ('"back\\slash"', "back\\slash"), ('"\n"', "\n")]
IDS = [('"x"",y"', 'x",y'), ("plain", "plain"), ('"a\r\nb"', "a\r\nb"), ('"=1+2"', "=1+2"), ('",,"', ",,")]


def _quoting_file(path, terminator: str, n_rows: int = 60) -> list[dict]:
    """Rows with every quoting case, records ended by ``terminator``; returns what they hold."""
    rng = np.random.default_rng(11)
    lines, rows = ["label,qid,f1,f2,note,id"], []
    for k in range(n_rows):
        label, f1, f2 = int(rng.integers(0, 3)), round(float(rng.normal()), 6), round(float(rng.normal()), 6)
        note_text, note = NOTES[k % len(NOTES)]
        id_text, ident = IDS[k % len(IDS)]
        qid = f"q{k // 6}"
        qid_text = f'"{qid}"' if k % 2 else qid  # quoted numbers and ids alike
        f1_text = f'"{f1}"' if k % 3 == 0 else str(f1)
        id_k = f'{id_text[:-1]}:{k}"' if id_text.startswith('"') else f"{id_text}:{k}"  # ids unique
        lines.append(f"{label},{qid_text},{f1_text},{f2},{note_text},{id_k}")
        rows.append({"label": label, "qid": qid, "f1": f1, "f2": f2, "note": note, "id": f"{ident}:{k}"})
    path.write_bytes((terminator.join(lines) + terminator).encode())
    return rows


def test_python_csv_reads_the_file_as_written(tmp_path):
    """The oracle: Python's csv module reads back what the file was written to hold."""
    rows = _quoting_file(tmp_path / "q.csv", "\r\n")
    with open(tmp_path / "q.csv", newline="") as f:
        read = list(csv.DictReader(f))
    assert [r["id"] for r in read] == [r["id"] for r in rows]
    assert [r["note"] or None for r in read] == [r["note"] for r in rows]


@pytest.mark.parametrize("terminator", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_every_quoting_case_trains_and_predicts_the_same_on_both_engines(spark, tmp_path, terminator):
    path = tmp_path / "quoting.csv"
    rows = _quoting_file(path, terminator)
    common = ["--input", str(path), "--feature-cols", "f1", "f2", "-q"]
    models = {}
    for engine in ENGINES:
        out = tmp_path / f"{engine}.json"
        assert main(["train", "--engine", engine, *common, "--model", str(out)]) == 0, engine
        models[engine] = json.loads(out.read_text())
    assert models["local"]["summary"]["n_rows"] == models["spark"]["summary"]["n_rows"] == len(rows)
    np.testing.assert_allclose(models["spark"]["weights"], models["local"]["weights"], rtol=1e-9, atol=1e-12)
    # the model of the values the file holds (Python's csv module, the oracle above)
    oracle = tmp_path / "oracle.parquet"
    pq.write_table(pa.table({"label": [float(r["label"]) for r in rows], "qid": [r["qid"] for r in rows],
                             "f1": [r["f1"] for r in rows], "f2": [r["f2"] for r in rows]}), oracle)
    reference = tmp_path / "oracle.json"
    assert main(["train", "--engine", "local", "--input", str(oracle), "--feature-cols", "f1", "f2", "-q",
                 "--model", str(reference)]) == 0
    np.testing.assert_array_equal(models["local"]["weights"], json.loads(reference.read_text())["weights"])

    model = tmp_path / "local.json"
    scores_local = tmp_path / "scores.txt"
    assert main(["predict", "--engine", "local", "--model", str(model), *common, "--output", str(scores_local)]) == 0
    on_spark = tmp_path / "scored"
    assert main(["predict", "--engine", "spark", "--model", str(model), *common, "--output", str(on_spark),
                 "--keep-cols", "id", "note"]) == 0
    local = [float(s) for s in scores_local.read_text().split()]
    kept = pq.read_table(on_spark).to_pylist()
    by_id = {r["id"]: r for r in kept}
    assert sorted(by_id) == sorted(r["id"] for r in rows)  # every id kept, byte for byte (CR LF included)
    for row, score in zip(rows, local):
        out = by_id[row["id"]]
        assert (out["qid"], out["note"]) == (row["qid"], row["note"]), row
        assert out["prediction"] == pytest.approx(score, rel=1e-12, abs=1e-12)


def test_a_bad_row_after_multi_line_records_names_its_record_and_line_on_both_engines(spark, tmp_path, capsys):
    """Rows are records, counted from 0 after the header; the message gives the line the
    record starts on too, which quoted line breaks push down."""
    lines = ["label,qid,f1,note"]
    for k in range(12):
        note = '"two\nlines"' if k < 4 else '"x ""y"", z"'
        lines.append(f"{k % 3},{k // 4},{'nan' if k == 7 else 0.1 * k},{note}")
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    messages = {}
    for engine in ENGINES:
        capsys.readouterr()
        rc = main(["train", "--engine", engine, "--input", str(path), "--feature-cols", "f1",
                   "--model", str(tmp_path / "m.json"), "--partitions" if engine == "spark" else "-q",
                   *(["2"] if engine == "spark" else [])])
        err = capsys.readouterr().err
        assert rc == 2, err
        messages[engine] = [ln for ln in err.splitlines() if "error:" in ln]
    # record 7 starts on line 2 (header) + 4 records of 2 lines + 3 of 1 = line 13
    assert messages["local"] == [f"sparkrank train: error: {path}: row 7 (line 13): feature column 'f1' is nan"]
    assert messages["spark"] == messages["local"]


def test_header_names_read_a_quoted_header_and_cr_line_ends(tmp_path):
    from sparkrank.io.fs import LOCAL
    from sparkrank.io.formats.delimited import header_names

    path = tmp_path / "h.csv"
    path.write_bytes(b'label,"q,id","f ""1"""\r1,2,3\r')
    assert header_names(LOCAL, str(path), ",") == ["label", "q,id", 'f "1"']
