"""Bad inputs name the URI; column typos are errors on both engines; outputs are safe (issues 9, 13, 14)."""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkrank.cli import main
from sparkrank.data.block import DataError
from sparkrank.io.files import read_ranking_data, write_parquet
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.registry import choose_engine
from sparkrank.io.fs import LOCAL, HadoopFileSystem
from sparkrank.io.outputs import safe_cell, write_csv
from sparkrank.io.sources import open_source
from sparkrank.model import RankingModel


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("small")
    data, _ = make_ranking_data(200, 5, rows_per_group=20, seed=1)
    write_parquet(d / "data.parquet", data)
    return d / "data.parquet"


def _run(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(list(argv))
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_bad_inputs_name_the_uri(spark, tmp_path, capsys, small, engine):
    base = ["train", "--engine", engine, "--model", str(tmp_path / "m.json"), "-q"]
    missing = tmp_path / "nothing_here"
    rc, err = _run(capsys, *base, "--input", str(missing))
    assert rc == 2 and f"input {missing} does not exist" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_SUCCESS").write_text("")
    rc, err = _run(capsys, *base, "--input", str(empty))
    assert rc == 2 and f"input {empty} is an empty directory" in err
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.parquet").write_bytes(small.read_bytes())
    (mixed / "b.txt").write_text("1 qid:1 1:0.5\n")
    rc, err = _run(capsys, *base, "--input", str(mixed))
    assert rc == 2 and f"input {mixed} mixes formats" in err and "parquet" in err and "svmlight" in err
    rc, err = _run(capsys, *base, "--input", str(small), "--where", "nosuch > 1")
    assert rc == 2 and str(small) in err and "nosuch" in err and "label" in err
    rc, err = _run(capsys, *base, "--input", str(small), "--qid-col", "query_id")
    assert rc == 2 and "no group column 'query_id'" in err and "columns are label, indices, values, qid" in err
    rc, err = _run(capsys, *base, "--input", str(small), "--label-col", "y")
    assert rc == 2 and "no label column 'y'" in err
    rc, err = _run(capsys, *base, "--input", str(small), "--feature-cols", "f9")
    assert rc == 2 and "no feature column 'f9'" in err
    assert not (tmp_path / "m.json").exists()


def test_unknown_format(tmp_path, capsys, small):
    with pytest.raises(SystemExit) as exc:  # argparse: exit 2 with the choices
        main(["train", "--input", str(small), "--format", "orc", "--model", str(tmp_path / "m.json")])
    assert exc.value.code == 2 and "invalid choice: 'orc'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown format 'orc'"):
        open_source(str(small), format="orc")


def test_no_group_column_must_be_asked_for(tmp_path, small):
    no_qid = tmp_path / "no_qid.parquet"
    pq.write_table(pq.read_table(small).drop(["qid"]), no_qid)
    with pytest.raises(DataError, match="no group column 'qid'.*--qid-col ''"):
        read_ranking_data(no_qid)
    assert read_ranking_data(no_qid, qid_col="").groups.n_groups == 1


def test_missing_group_column_in_pyspark_ml(spark, small):
    from sparkrank.ml import LinearRanker, RankingEvaluator

    df = spark.read.parquet(str(small))
    with pytest.raises(DataError, match="no group column 'query_id'"):
        LinearRanker(groupCol="query_id").fit(df)
    with pytest.raises(DataError, match="no label column 'y'"):
        LinearRanker(labelCol="y").fit(df)
    scored = df.withColumn("prediction", df.label * 1.0)
    with pytest.raises(DataError, match="no groupCol column 'query_id'"):
        RankingEvaluator(groupCol="query_id").evaluate(scored)


def test_impossible_model_path_fails_before_training(tmp_path, capsys, small):
    impossible = small / "m.json"  # its "directory" is a file
    rc, err = _run(capsys, "train", "--engine", "local", "--input", str(small), "--model", str(impossible))
    assert rc == 2 and f"cannot write {impossible}" in err and "Traceback" not in err
    assert "trained" not in capsys.readouterr().out
    rc, err = _run(capsys, "train", "--engine", "local", "--input", str(small), "--model", str(small.parent))
    assert rc == 2 and "is a directory" in err


@pytest.mark.parametrize("command", ["train", "predict"])
def test_output_path_ending_in_a_slash_fails_before_any_work(tmp_path, capsys, small, command):
    """A file target named like a directory (``newmodel/``) used to pass the probe and fail
    only when the finished model or scores were written ('Not a directory')."""
    model = tmp_path / "m.json"
    assert main(["train", "--engine", "local", "--input", str(small), "--model", str(model), "-q"]) == 0
    target = f"{tmp_path / 'new'}/"
    option = {"train": ["--model", target], "predict": ["--model", str(model), "--output", target]}[command]
    rc, err = _run(capsys, command, "--engine", "local", "--input", str(small), *option)
    assert rc == 2 and f"sparkrank {command}: error: output {target} ends in '/'" in err, err
    assert not (tmp_path / "new").exists()


def _lock(directory) -> bool:
    """Make ``directory`` unwritable: mode 0500, or for root (whom modes do not stop) the
    immutable attribute.  False when neither works here."""
    os.chmod(directory, 0o500)
    if not os.access(directory, os.W_OK):
        return True
    import shutil
    import subprocess

    chattr = shutil.which("chattr")
    if chattr and subprocess.run([chattr, "+i", str(directory)], capture_output=True).returncode == 0:
        try:
            (directory / "probe").touch()
        except OSError:
            return True
        (directory / "probe").unlink()
    return False


def _unlock(directory) -> None:
    import shutil
    import subprocess

    if shutil.which("chattr"):
        subprocess.run([shutil.which("chattr"), "-i", str(directory)], capture_output=True)
    os.chmod(directory, 0o700)


def test_read_only_model_path_fails_before_training(tmp_path, capsys, small):
    locked = tmp_path / "locked"
    locked.mkdir()
    try:
        if not _lock(locked):
            pytest.skip("cannot make a directory read-only here (root, no chattr +i)")
        rc, err = _run(capsys, "train", "--engine", "local", "--input", str(small), "--model",
                       str(locked / "m.json"))
    finally:
        _unlock(locked)
    assert rc == 2 and f"cannot write {locked / 'm.json'}" in err and "Traceback" not in err


@pytest.mark.parametrize("where", ["local", "hadoop"])
def test_interrupted_model_write_leaves_the_old_model(spark, tmp_path, monkeypatch, where):
    data, _ = make_ranking_data(50, 3, rows_per_group=10, seed=2)
    target = tmp_path / "m.json"
    old = RankingModel(np.ones(3), "tron", 1.0, 0.5, 1e-3)
    old.save(str(target))
    before = target.read_bytes()
    cls = type(LOCAL) if where == "local" else HadoopFileSystem
    uri = str(target) if where == "local" else f"file://{target}"
    real_write = cls._write_new

    def half_then_crash(self, path, payload):
        real_write(self, path, payload[: len(payload) // 2])
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(cls, "_write_new", half_then_crash)
    with pytest.raises(KeyboardInterrupt):
        RankingModel(np.zeros(3), "tron", 2.0, 0.25, 1e-3).save(uri)
    monkeypatch.undo()
    assert target.read_bytes() == before  # the complete old model, never a half-written one
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # the temporary file was removed
    assert RankingModel.load(uri).C == 1.0


def test_concurrent_readers_never_see_a_partial_model(tmp_path):
    import threading

    path = str(tmp_path / "m.json")
    models = [RankingModel(np.full(n, float(n)), "tron", float(n), 0.5, 1e-3) for n in (3, 3000, 30)]
    models[0].save(path)
    stop = threading.Event()
    seen, errors = set(), []

    def read():
        while not stop.is_set():
            try:
                m = RankingModel.load(path)
            except ValueError as exc:  # a torn or empty file would fail to parse
                errors.append(exc)
                return
            assert np.all(m.weights == m.C) and m.n_features == int(m.C)
            seen.add(m.n_features)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    for i in range(60):
        models[i % 3].save(path)
    stop.set()
    for t in readers:
        t.join()
    assert errors == [] and seen <= {3, 3000, 30} and seen


def test_weights_npy_only_beside_the_model(tmp_path):
    model = RankingModel(np.arange(3.0), "tron", 1.0, 0.5, 1e-3)
    path = tmp_path / "m.json"
    model.save(str(path))
    d = json.loads(path.read_text())
    np.save(tmp_path / "w.npy", np.ones(3))
    d["weights_npy"] = "w.npy"
    path.write_text(json.dumps(d))
    np.testing.assert_array_equal(RankingModel.load(str(path)).weights, np.ones(3))
    for bad in ("../w.npy", str(tmp_path / "w.npy"), "sub/w.npy", "..", "file:///etc/passwd"):
        d["weights_npy"] = bad
        path.write_text(json.dumps(d))
        with pytest.raises(ValueError, match="weights_npy must be a file name beside the model"):
            RankingModel.load(str(path))


@pytest.mark.parametrize("form", ["path", "file-uri"])
def test_spark_outputs_refuse_a_non_empty_directory(spark, tmp_path, capsys, small, form):
    model = tmp_path / "m.json"
    assert main(["train", "--engine", "local", "--input", str(small), "--model", str(model), "-q"]) == 0
    out = tmp_path / "scores"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    target = str(out) if form == "path" else f"file://{out}"  # a URI is checked through Hadoop
    args = ["predict", "--engine", "spark", "--model", str(model), "--input", str(small), "--output", target, "-q"]
    rc, err = _run(capsys, *args)
    assert rc == 2 and "exists and is not empty" in err and "--overwrite" in err
    assert (out / "keep.txt").read_text() == "precious"
    assert main([*args, "--overwrite"]) == 0
    scores = spark.read.parquet(str(out))
    assert scores.columns == ["label", "qid", "prediction"] and scores.count() == 200
    per = tmp_path / "per_query"
    per_target = str(per) if form == "path" else f"file://{per}"
    assert main(["evaluate", "--engine", "spark", "--model", str(model), "--input", str(small), "--per-query",
                 per_target, "-q"]) == 0
    rc, err = _run(capsys, "evaluate", "--engine", "spark", "--model", str(model), "--input", str(small),
                   "--per-query", per_target, "-q")
    assert rc == 2 and "exists and is not empty" in err
    assert main(["evaluate", "--engine", "spark", "--model", str(model), "--input", str(small), "--per-query",
                 per_target, "--mode", "overwrite", "-q"]) == 0


def test_spark_scores_leave_out_named_feature_columns(spark, tmp_path):
    """predict on Spark keeps "every column except the features": named feature columns
    (--feature-cols, or a CSV's default columns) are features too; --keep-cols may ask for one."""
    rows = 40
    table = pa.table({"label": [float(i % 3) for i in range(rows)], "qid": [i // 10 for i in range(rows)],
                      "doc": [f"d{i}" for i in range(rows)], "f1": [0.1 * i for i in range(rows)],
                      "f2": [float(i % 7) for i in range(rows)]})
    pq.write_table(table, tmp_path / "named.parquet")
    csv_path = tmp_path / "named.csv"
    csv_path.write_text("label,qid,f1,f2\n" + "".join(f"{i % 3},{i // 10},{0.1 * i},{i % 7}\n" for i in range(rows)))
    model = tmp_path / "m.json"
    named = ["--feature-cols", "f1", "f2"]
    assert main(["train", "--engine", "local", "--input", str(tmp_path / "named.parquet"), *named, "--model",
                 str(model), "-q"]) == 0
    cases = [(tmp_path / "named.parquet", named, ["qid", "label", "doc", "prediction"]),
             (csv_path, [], ["qid", "label", "prediction"]),
             (tmp_path / "named.parquet", [*named, "--keep-cols", "doc", "f2"], ["qid", "doc", "f2", "prediction"])]
    for k, (data, extra, columns) in enumerate(cases):
        out = tmp_path / f"scores{k}"
        assert main(["predict", "--engine", "spark", "--model", str(model), "--input", str(data), *extra,
                     "--output", str(out), "-q"]) == 0
        scores = spark.read.parquet(str(out))
        assert sorted(scores.columns) == sorted(columns) and scores.count() == rows, (data, extra)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_predict_scores_rows_without_labels(spark, tmp_path, small, engine):
    """predict reads no labels: a file without a label column, or with a null label or group id,
    is scored row for row as the labelled file is (--drop-invalid-rows then drops nothing: the
    local engine's one score per line stays aligned with the input rows)."""
    model = tmp_path / "m.json"
    assert main(["train", "--engine", "local", "--input", str(small), "--model", str(model), "-q"]) == 0
    table = pq.read_table(small)
    labels = table.column("label").to_pylist()
    labels[9] = None
    qids = table.column("qid").to_pylist()
    qids[31] = None
    inputs = {"labelled": table, "unlabelled": table.drop(["label"]),
              "null-label": table.set_column(table.schema.get_field_index("label"), "label",
                                             pa.array(labels, pa.float64())),
              "null-qid": table.set_column(table.schema.get_field_index("qid"), "qid",
                                           pa.array(qids, table.schema.field("qid").type))}
    scores = {}
    for name, t in inputs.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(t, path)
        out = tmp_path / f"{name}-scores"
        assert main(["predict", "--engine", engine, "--model", str(model), "--input", str(path), "--output", str(out),
                     "--drop-invalid-rows", "-q"]) == 0, name
        if engine == "local":
            scores[name] = np.loadtxt(out)
        else:
            scored = spark.read.parquet(str(out)).toPandas()
            assert "label" not in scored.columns if name == "unlabelled" else "label" in scored.columns
            scores[name] = np.sort(scored["prediction"].to_numpy())
    assert scores["labelled"].shape == (table.num_rows,)
    for name in ("unlabelled", "null-label", "null-qid"):
        np.testing.assert_array_equal(scores[name], scores["labelled"])


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_data_wider_than_the_model_is_one_message_on_both_engines(spark, tmp_path, capsys, small, command):
    """Spark named neither the input nor the data's width the same way as in-process (predict);
    evaluate said 'feature index 5 on line 2 exceeds n_features=2' in-process and 'data has
    feature index 4 but n_features=2' on Spark."""
    model = tmp_path / "narrow.json"
    model.write_text(json.dumps({"weights": [0.1, 0.2], "solver": "tron", "C": 1.0}))
    messages = {}
    for engine in ("local", "spark"):
        out = ["--output", str(tmp_path / f"scores-{engine}")] if command == "predict" else []
        rc, err = _run(capsys, command, "--engine", engine, "--model", str(model), "--input", str(small), *out, "-q")
        assert rc == 2, err
        messages[engine] = [ln for ln in err.splitlines() if ln.startswith(f"sparkrank {command}: error: ")]
    assert messages["local"] == messages["spark"] == [
        f"sparkrank {command}: error: {small} has 5 feature columns but the model {model} has only 2 weights "
        "(it never saw the features beyond)"]


def test_evaluate_on_data_narrower_than_the_model_counts_every_weight(spark, tmp_path, capsys, small):
    """Rows read at their own width and a model of more weights: the metrics and the training
    objective (½‖w‖² over all its weights) are those of the rows read at the model's width."""
    from sparkrank.io.files import read_ranking_data
    from sparkrank.engines.local import LocalEngine
    from sparkrank.app.evaluate import evaluate_model
    from sparkrank.model import RankingModel

    weights = [0.1, -0.2, 0.3, 0.05, -0.1, 0.7, -0.4]  # the data has 5 columns
    path = tmp_path / "wide.json"
    path.write_text(json.dumps({"weights": weights, "solver": "tron", "C": 1.0}))
    expected = evaluate_model(RankingModel.load(str(path)), LocalEngine(read_ranking_data(small, n_features=7)))
    for engine in ("local", "spark"):
        capsys.readouterr()
        assert main(["evaluate", "--engine", engine, "--model", str(path), "--input", str(small), "-q"]) == 0
        got = json.loads(capsys.readouterr().out)
        for key in ("objective", "pairwise_accuracy", "mean_ndcg"):
            assert got[key] == expected[key], (engine, key)


def _per_query_csv_on_both_engines(data, tmp_path) -> dict[str, str]:
    """Train on ``data`` in-process, then each engine's ``evaluate --per-query x.csv`` text."""
    model = tmp_path / "m.json"
    assert main(["train", "--engine", "local", "--input", str(data), "--model", str(model), "-q"]) == 0
    texts = {}
    for engine in ("local", "spark"):
        out = tmp_path / f"per-query-{engine}.csv"
        assert main(["evaluate", "--engine", engine, "--model", str(model), "--input", str(data), "--per-query",
                     str(out), "-q"]) == 0
        texts[engine] = out.read_text()
    return texts


def test_per_query_csv_is_the_same_file_on_both_engines(spark, tmp_path, small):
    """evaluate --per-query x.csv writes the same columns and text on both engines: Spark's
    had only the first ten columns (no positives, positives at top, precision@k), and the local
    engine wrote its counts as floats (28.0)."""
    texts = _per_query_csv_on_both_engines(small, tmp_path)
    assert texts["local"] == texts["spark"]
    header, first = texts["local"].splitlines()[:2]
    assert header.split(",")[-6:] == ['"positives"', '"positives_at_top"', '"precision@1"', '"precision@3"',
                                      '"precision@5"', '"precision@10"']
    assert "." not in first.split(",")[1] and "." not in first.split(",")[2]  # rows, pairs: integers


def test_per_query_csv_rows_come_in_one_order_on_both_engines(spark, tmp_path, small):
    """Text query ids whose input order is not their sorted order: the same rows in the same
    order (by query id) on both engines (in-process they came in input order)."""
    table = pq.read_table(small)
    qid = table.column("qid").to_numpy()
    names = np.array([f"q{(7 * q) % 23:02d}-{q}" for q in range(qid.max() + 1)])
    text = tmp_path / "text-ids.parquet"
    pq.write_table(table.set_column(table.column_names.index("qid"), "qid", pa.array(names[qid])), text)
    assert list(names[np.unique(qid)]) != sorted(names[np.unique(qid)])  # the input is not in id order
    texts = _per_query_csv_on_both_engines(text, tmp_path)
    assert texts["local"] == texts["spark"]
    ids = [line.split(",")[0].strip('"') for line in texts["local"].splitlines()[1:]]
    assert ids == sorted(ids) and len(ids) == np.unique(qid).size


def test_per_query_csv_is_quoted_and_formula_safe(tmp_path, small):
    table = pq.read_table(small)
    qids = np.array(["=cmd|' /C calc'!A0", "a,b", "-3", "+x", "@y", "plain"])[table.column("qid").to_numpy() % 6]
    risky = tmp_path / "risky.parquet"
    pq.write_table(table.set_column(table.column_names.index("qid"), "qid", pa.array(qids)), risky)
    model = tmp_path / "m.json"
    assert main(["train", "--engine", "local", "--input", str(risky), "--model", str(model), "-q"]) == 0
    out = tmp_path / "per.csv"
    assert main(["evaluate", "--engine", "local", "--model", str(model), "--input", str(risky), "--per-query",
                 str(out), "-q"]) == 0
    with open(out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0][0] == "qid"
    first = sorted(r[0] for r in rows[1:])
    assert first == sorted(["'=cmd|' /C calc'!A0", "a,b", "-3", "'+x", "'@y", "plain"])
    assert '"a,b"' in out.read_text()
    assert safe_cell(-1.5) == -1.5 and safe_cell("-2") == "-2" and safe_cell("-2+A1") == "'-2+A1"


def test_engine_auto_rule(tmp_path, small, monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SPARK_ENV_LOADED", raising=False)
    kind, why = choose_engine("auto", ["sample:train"])
    assert kind == "local" and "fits in memory" in why
    assert choose_engine("auto", [str(small)], master="local[2]")[0] == "spark"
    assert choose_engine("auto", ["s3a://bucket/ltr/"])[0] == "spark"
    assert choose_engine("auto", [str(small)], where="upper(day) = 'X'")[0] == "spark"
    assert choose_engine("auto", [str(small)], where="day >= '2026-11-01' and qid in (1, 2)")[0] == "local"
    monkeypatch.setattr("sparkrank.engines.registry._available_memory", lambda: 1000.0)
    assert choose_engine("auto", [str(small)])[0] == "spark"
    assert choose_engine("local", ["s3a://bucket/x"]) == ("local", "--engine local")


def test_file_uris_without_a_session_use_the_local_disk(tmp_path):
    from sparkrank.io.fs import FileUriFileSystem

    fs = FileUriFileSystem()
    uri = f"file://{tmp_path}/d/m.json"
    fs.mkdirs(f"file://{tmp_path}/d")
    fs.write_text(uri, "{}")
    assert fs.read_text(uri) == "{}" and (tmp_path / "d" / "m.json").read_text() == "{}"
    assert [e.path for e in fs.list_files(f"file://{tmp_path}/d")] == [uri]
    assert fs.glob(f"file://{tmp_path}/d/*.json") == [uri]
    with pytest.raises(OSError, match="with a host"):
        fs.exists("file://otherhost/x")


def test_relative_paths_are_this_process_s_on_spark_after_a_change_of_directory(spark, tmp_path, monkeypatch):
    """The JVM resolves a relative path against the directory it started in; after this process
    changed directory (a notebook's ``os.chdir``, a test's ``chdir``) Spark read and wrote
    elsewhere: ``[PATH_NOT_FOUND]`` for an input this process had just found.  Relative paths
    now reach Spark absolute (``io.uri.for_spark``), for inputs and for outputs."""
    from sparkrank.io.outputs import write_dataframe

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("".join(f"{i % 3} qid:{1 + i // 10} 1:{0.1 * i:.1f} 2:{i % 7}\n"
                                             for i in range(40)))
    for engine in ("local", "spark"):
        assert main(["train", "--engine", engine, "--input", "in.txt", "--model", f"m-{engine}.json", "-q"]) == 0
        assert main(["predict", "--engine", engine, "--model", f"m-{engine}.json", "--input", "in.txt",
                     "--output", f"scores-{engine}", "-q"]) == 0
        assert (tmp_path / f"scores-{engine}").exists()
    write_dataframe(spark.range(3), "written")
    assert pq.read_table(tmp_path / "written").num_rows == 3


# (character class, text cells that a spreadsheet would run as a formula)
FORMULA_CELLS = {
    "equals, plus, minus, at": ["=1+1", "+A1", "-2+A1", "@SUM(A1)", "-inf", "-1_0"],
    "tab and carriage return": ["\tx", "\r=x", "\t"],
    "leading whitespace, then a formula start": [" =1", "  +A1", "\n@x", "\u00a0-A1", "\u3000=1", " \tx", " \r"],
    "full-width and small forms": ["\uff1d1", "\uff0bA1", "\uff0dA1", "\uff20x", "\ufe66x", "\ufe62x", "\ufe63x",
                                   "\ufe6bx", " \uff1d1"],
}
PLAIN_CELLS = ["plain", "a=b", "q-1", "", " ", "\n", "-3", "+1.5", "1e3", "-0.25E-2", "\uff50lain", "x@y"]


@pytest.mark.parametrize("kind", list(FORMULA_CELLS))
def test_text_cells_a_spreadsheet_runs_as_formulas_get_a_quote(tmp_path, kind):
    """OWASP's CSV-injection rule for each class of formula start: the cell is prefixed with '
    and written quoted; a number (and text that is a plain decimal number) stays as it is."""
    for text in FORMULA_CELLS[kind]:
        assert safe_cell(text) == "'" + text, (kind, text)
    for text in PLAIN_CELLS:
        assert safe_cell(text) == text, text
    assert [safe_cell(v) for v in (-1.5, -3, 0, 2.5e-300)] == [-1.5, -3, 0, 2.5e-300]
    path = tmp_path / "cells.csv"
    write_csv(str(path), ["qid", "ndcg"], [[text, -0.5] for text in FORMULA_CELLS[kind]])
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, quoting=csv.QUOTE_NONNUMERIC))
    assert rows[1:] == [["'" + text, -0.5] for text in FORMULA_CELLS[kind]]
