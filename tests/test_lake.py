"""Data-lake inputs and outputs through Hadoop URIs (issue 9): file: and a Hadoop-only scheme.

``lake:`` (tests/java/LakeFileSystem.java, registered by the shared session in conftest) is
the local disk served only by Hadoop's FileSystem: Python's ``open()`` and pyarrow cannot
open it, so a command that works on ``lake:`` URIs went through Hadoop.
"""

from __future__ import annotations

import builtins
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import require_lake_scheme
from sparkrank.cli import main
from sparkrank.data.block import DataError
from sparkrank.io.files import read_ranking_data, write_parquet
from sparkrank.datasets import make_ranking_data
from sparkrank.io.uri import sample_path
from sparkrank.model import RankingModel


@pytest.fixture(scope="module")
def sample_parquet(tmp_path_factory):
    d = tmp_path_factory.mktemp("pq")
    data = read_ranking_data("sample:train")
    write_parquet(d / "train.parquet", data)
    return d / "train.parquet"


def _weights(path) -> np.ndarray:
    return RankingModel.load(str(path)).weights


def test_cli_reads_and_writes_hadoop_uris_without_python_open(spark, tmp_path, sample_parquet, monkeypatch):
    require_lake_scheme(spark)
    reference = tmp_path / "ref.json"
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(reference), "-q"]) == 0
    lake_dir = tmp_path / "lake"
    lake_dir.mkdir()
    (lake_dir / "pq").mkdir()
    (lake_dir / "pq" / "part-0.parquet").write_bytes(sample_parquet.read_bytes())
    opened = []
    real_open = builtins.open

    def recording_open(file, *args, **kwargs):
        if str(lake_dir) in str(file):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    model_uri = f"lake://{lake_dir}/models/m.json"
    assert main(["train", "--input", f"lake://{lake_dir}/pq", "--model", model_uri, "--partitions", "2", "-q"]) == 0
    scores_uri = f"lake://{lake_dir}/scores"
    assert main(["predict", "--model", model_uri, "--input", f"lake://{lake_dir}/pq", "--output", scores_uri,
                 "--rank", "-q"]) == 0
    assert main(["evaluate", "--model", model_uri, "--input", f"lake://{lake_dir}/pq", "--per-query",
                 f"lake://{lake_dir}/per_query.csv", "--output-json", f"lake://{lake_dir}/metrics.json", "-q"]) == 0
    monkeypatch.setattr(builtins, "open", real_open)
    assert opened == []  # neither the input, the model nor the scores went through Python's open()
    np.testing.assert_allclose(_weights(model_uri), _weights(reference), rtol=1e-9, atol=1e-12)
    scores = spark.read.parquet(scores_uri)
    assert {"qid", "prediction", "rank"} <= set(scores.columns) and scores.count() == 3041
    assert (lake_dir / "models" / "m.json").exists()  # the lake: scheme is the local disk underneath
    per_query = (lake_dir / "per_query.csv").read_text().splitlines()
    assert per_query[0].startswith('"qid","rows"') and len(per_query) == 1 + 79
    assert 0.8 < json.loads((lake_dir / "metrics.json").read_text())["pairwise_accuracy"] <= 1.0


@pytest.mark.parametrize("form", ["parquet-dir", "parquet-file", "svmlight"])
def test_cli_train_on_file_uris(spark, tmp_path, sample_parquet, form):
    reference = tmp_path / "ref.json"
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(reference), "-q"]) == 0
    uri = {"parquet-dir": f"file://{sample_parquet.parent}",
           "parquet-file": f"file://{sample_parquet}",
           "svmlight": f"file://{sample_path('train')}"}[form]
    model_uri = f"file://{tmp_path}/out/m.json"
    assert main(["train", "--input", uri, "--model", model_uri, "--partitions", "2", "-q"]) == 0
    model = RankingModel.load(model_uri)
    assert model.summary["engine"] == "spark"  # --engine auto: a URI is a data lake
    np.testing.assert_allclose(model.weights, _weights(reference), rtol=1e-9, atol=1e-12)


def test_tune_and_linear_ranker_read_uris(spark, tmp_path, sample_parquet):
    require_lake_scheme(spark)
    from sparkrank.io.sources import open_source
    from sparkrank.ml import LinearRanker
    from sparkrank.selection import load_tune_result

    out = f"lake://{tmp_path}/tune.json"
    assert main(["tune", "--input", f"lake://{sample_parquet}", "--valid", f"file://{sample_path('test')}",
                 "--C-grid", "0.5", "1", "--output-json", out, "--model", f"lake://{tmp_path}/best.json",
                 "--partitions", "2", "-q"]) == 0
    assert load_tune_result(out)["best_C"] in (0.5, 1.0)
    assert RankingModel.load(f"lake://{tmp_path}/best.json").n_features == 25
    reference = tmp_path / "ref.json"
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(reference), "-q"]) == 0
    for uri in (f"lake://{sample_parquet}", f"file://{sample_parquet.parent}", f"file://{sample_path('train')}"):
        df, cols = open_source(uri, spark=spark).dataframe(spark)
        fitted = LinearRanker(C=1.0, numPartitions=2, featuresCol=cols.features).fit(df)
        np.testing.assert_allclose(fitted.weights, _weights(reference), rtol=1e-9, atol=1e-12)


def _lake(tmp_path):
    """A Hive-partitioned Parquet lake of 3 days (whole query groups per day) and the rows
    of the last two days as one file."""
    data, _ = make_ranking_data(900, 6, rows_per_group=30, density=0.7, seed=7)
    qid = np.repeat(data.qids, data.groups.group_sizes)
    X = data.X.toarray()
    days = np.array(["2026-11-01", "2026-11-02", "2026-11-03"])[qid % 3]
    root = tmp_path / "lake"
    for day in np.unique(days):
        rows = days == day
        (root / f"day={day}").mkdir(parents=True)
        pq.write_table(pa.table({"label": data.labels[rows], "qid": qid[rows],
                                 "features": [list(r) for r in X[rows]]}), root / f"day={day}" / "part-0.parquet")
    two = days >= "2026-11-02"
    pq.write_table(pa.table({"label": data.labels[two], "qid": qid[two], "features": [list(r) for r in X[two]]}),
                   tmp_path / "two_days.parquet")
    return root, tmp_path / "two_days.parquet"


def test_partitioned_lake_with_where_equals_the_same_rows_as_one_file(spark, tmp_path):
    root, two_days = _lake(tmp_path)
    where = "day >= '2026-11-02'"
    one_file = tmp_path / "one.json"
    assert main(["train", "--engine", "local", "--input", str(two_days), "--model", str(one_file), "-q"]) == 0
    on_spark = tmp_path / "spark.json"
    assert main(["train", "--input", f"file://{root}", "--where", where, "--model", str(on_spark),
                 "--partitions", "2", "-q"]) == 0
    local = tmp_path / "local.json"
    assert main(["train", "--engine", "local", "--input", str(root), "--where", where, "--model", str(local),
                 "-q"]) == 0
    a, b, c = (RankingModel.load(str(p)) for p in (one_file, on_spark, local))
    assert a.summary["n_rows"] == b.summary["n_rows"] == c.summary["n_rows"] < 900
    np.testing.assert_allclose(b.weights, a.weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(c.weights, a.weights)


def test_multi_column_group_id_on_both_engines(spark, tmp_path):
    data, _ = make_ranking_data(300, 4, rows_per_group=20, seed=3)
    qid = np.repeat(data.qids, data.groups.group_sizes)
    X = data.X.toarray()
    path = tmp_path / "two_keys.parquet"
    pq.write_table(pa.table({"label": data.labels, "user": qid // 2, "session": (qid % 2).astype(str),
                             **{f"f{j}": X[:, j] for j in range(4)}}), path)
    args = ["--input", str(path), "--qid-col", "user,session", "--feature-cols", "f0", "f1", "f2", "f3", "-q"]
    assert main(["train", "--engine", "local", *args, "--model", str(tmp_path / "l.json")]) == 0
    assert main(["train", "--engine", "spark", "--partitions", "2", *args, "--model", str(tmp_path / "s.json")]) == 0
    reference = tmp_path / "r.json"
    write_parquet(tmp_path / "plain.parquet", data)
    assert main(["train", "--engine", "local", "--input", str(tmp_path / "plain.parquet"), "--model",
                 str(reference), "-q"]) == 0
    local, on_spark = RankingModel.load(str(tmp_path / "l.json")), RankingModel.load(str(tmp_path / "s.json"))
    assert local.summary["n_groups"] == on_spark.summary["n_groups"] == data.groups.n_groups
    assert local.summary["feature_cols"] == ["f0", "f1", "f2", "f3"]
    np.testing.assert_allclose(local.weights, _weights(reference), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(on_spark.weights, local.weights, rtol=1e-9, atol=1e-12)
    # the model remembers its feature columns: evaluate needs no --feature-cols
    assert main(["evaluate", "--engine", "local", "--model", str(tmp_path / "l.json"), "--input", str(path),
                 "--qid-col", "user,session", "-q"]) == 0


def test_several_inputs_and_globs_and_missing_uris(spark, tmp_path, capsys):
    require_lake_scheme(spark)
    root, two_days = _lake(tmp_path)
    one_file = tmp_path / "one.json"
    assert main(["train", "--engine", "local", "--input", str(two_days), "--model", str(one_file), "-q"]) == 0
    several = tmp_path / "several.json"
    assert main(["train", "--engine", "local", "--input", str(root / "day=2026-11-02"), str(root / "day=2026-11-03"),
                 "--model", str(several), "-q"]) == 0
    globbed = tmp_path / "glob.json"
    assert main(["train", "--input", f"lake://{root}/day=2026-11-0[23]", "--model", str(globbed),
                 "--partitions", "2", "-q"]) == 0
    np.testing.assert_array_equal(_weights(several), _weights(one_file))
    np.testing.assert_allclose(_weights(globbed), _weights(one_file), rtol=1e-9, atol=1e-12)
    capsys.readouterr()
    assert main(["train", "--input", f"lake://{root}/nothing", "--model", str(tmp_path / "x.json")]) == 2
    assert f"input lake://{root}/nothing does not exist" in capsys.readouterr().err
    empty = root / "day=2026-11-09"
    empty.mkdir()
    assert main(["train", "--input", f"lake://{empty}", "--model", str(tmp_path / "x.json")]) == 2
    assert f"input lake://{empty} is an empty directory" in capsys.readouterr().err


def test_multi_column_group_in_pyspark_ml(spark, tmp_path):
    from sparkrank.ml import LinearRanker, RankingEvaluator

    data, _ = make_ranking_data(200, 4, rows_per_group=20, seed=5)
    qid = np.repeat(data.qids, data.groups.group_sizes)
    X = data.X.toarray()
    rows = [(float(y), int(q // 2), str(q % 2), [float(v) for v in x]) for y, q, x in zip(data.labels, qid, X)]
    df = spark.createDataFrame(rows, "label double, user long, session string, features array<double>")
    by_two = LinearRanker(groupCol="user,session", numPartitions=2).fit(df)
    one = spark.createDataFrame([(y, int(q), f) for (y, _, _, f), q in zip(rows, qid)],
                                "label double, qid long, features array<double>")
    by_one = LinearRanker(numPartitions=2).fit(one)
    np.testing.assert_allclose(by_two.weights, by_one.weights, rtol=1e-9, atol=1e-12)
    a = RankingEvaluator(groupCol="user,session", metricName="ndcg@5").evaluate(by_two.transform(df))
    b = RankingEvaluator(metricName="ndcg@5").evaluate(by_one.transform(one))
    assert a == pytest.approx(b, abs=1e-12)


def test_csv_text_columns_of_numbers_are_checked_in_one_aggregation(spark, tmp_path):
    """CSV columns that Spark's schema inference leaves strings (``inf``, ``nan`` in pandas'
    spelling) but the in-process reader takes for numbers: one aggregation checks all of them
    (it was two jobs per column: 272 for a LETOR file written by pandas), and they are read as
    doubles, the label too; a column of real text is still named."""
    from sparkrank.io.sources import ColumnSpec, open_source
    from sparkrank.io.spark.frames import prepare_frame

    names = ["f1", "f2", "f3", "f4"]
    lines = ["row,label,qid," + ",".join(names)] + \
        [f"{i},{'inf' if i == 0 else i % 3},{1 + i // 4}," + ",".join("inf" if i == j + 1 else str(0.5 * i + j)
                                                                    for j in range(len(names))) for i in range(12)]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(lines) + "\n")
    read = spark.read.csv(str(path), header=True, inferSchema=True)  # as the CSV source reads it
    assert all(f.dataType.simpleString() == "string" for f in read.schema.fields if f.name not in ("row", "qid"))
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("text-columns", "prepare_frame")
    try:
        df = prepare_frame(read, ColumnSpec(feature_cols=tuple(names)), None, text_types=True)
        jobs = tracker.getJobIdsForGroup("text-columns")
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert len(jobs) <= 2  # one aggregation (adaptive execution runs its shuffle stage as a job); was 2 per column
    rows = df.orderBy("row").toPandas()
    assert rows["label"].iloc[0] == float("inf") and rows["label"].iloc[1] == 1.0
    assert rows["__sparkrank_features"].iloc[1][0] == float("inf")
    assert rows["__sparkrank_features"].iloc[2][0] == 1.0

    path.write_text("label,qid,f1,f2\n1,1,inf,a\n0,1,0.5,b\n")
    with pytest.raises(DataError, match=r"feature column 'f2' is not numeric \(string\)"):
        open_source(str(path), columns=ColumnSpec(feature_cols=("f1", "f2"))).dataframe(spark)


def test_csv_with_named_columns_on_both_engines(spark, tmp_path, capsys):
    data, _ = make_ranking_data(240, 3, rows_per_group=20, seed=11)
    qid = np.repeat(data.qids, data.groups.group_sizes)
    X = data.X.toarray()
    path = tmp_path / "rows.csv"
    lines = ["label,qid,f1,f2,f3"] + [",".join([repr(float(y)), str(q), *(repr(float(v)) for v in x)])
             for y, q, x in zip(data.labels, qid, X)]
    path.write_text("\n".join(lines) + "\n")
    write_parquet(tmp_path / "same.parquet", data)
    reference = tmp_path / "ref.json"
    assert main(["train", "--engine", "local", "--input", str(tmp_path / "same.parquet"), "--model", str(reference),
                 "-q"]) == 0
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}.json"
        assert main(["train", "--engine", engine, "--input", str(path), "--feature-cols", "f1", "f2", "f3",
                     "--model", str(out), "-q"]) == 0
        np.testing.assert_allclose(_weights(out), _weights(reference), rtol=1e-9, atol=1e-12)
    # without --feature-cols: every column but the label and the qid, remembered by the model
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}-default.json"
        assert main(["train", "--engine", engine, "--input", str(path), "--model", str(out), "-q"]) == 0
        np.testing.assert_array_equal(_weights(out), _weights(tmp_path / f"{engine}.json"))
        assert json.loads(out.read_text())["summary"]["feature_cols"] == ["f1", "f2", "f3"]
    # a column that is not a number is named, before any Spark job fails on its cast
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("label,qid,doc,f1\n1,1,a,0.5\n0,1,b,0.2\n")
    for engine in ("local", "spark"):
        capsys.readouterr()
        assert main(["train", "--engine", engine, "--input", str(mixed), "--model", str(tmp_path / "x.json")]) == 2
        assert f"sparkrank train: error: {mixed}: feature column 'doc' is not numeric (string)" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_convert_to_csv_and_back_trains_the_same_model(spark, tmp_path, suffix):
    """convert writes CSV/TSV (header label,qid,f1..fN; dense rows at full precision) that trains,
    on both engines and without --feature-cols, to the model of the SVMlight it came from."""
    text = tmp_path / f"rows.{suffix}"
    assert main(["convert", "--engine", "local", "--input", "sample:train", "--output", str(text), "-q"]) == 0
    assert text.read_text().splitlines()[0].replace('"', "").split("\t" if suffix == "tsv" else ",")[:4] == \
        ["label", "qid", "f1", "f2"]
    reference = tmp_path / "ref.json"
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(reference), "-q"]) == 0
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}.json"
        assert main(["train", "--engine", engine, "--input", str(text), "--model", str(out), "-q"]) == 0
        np.testing.assert_array_equal(_weights(out), _weights(reference), err_msg=engine)
    assert main(["convert", "--engine", "spark", "--input", "sample:train", "--output", str(tmp_path / "x.csv")]) == 2
    # --n-features: a file as wide as another (a test set's CSV beside its training set's)
    wide = tmp_path / f"wide.{suffix}"
    assert main(["convert", "--engine", "local", "--input", "sample:train", "--output", str(wide),
                 "--n-features", "30", "-q"]) == 0
    assert wide.read_text().splitlines()[1].count("\t" if suffix == "tsv" else ",") == 1 + 30
    assert main(["convert", "--engine", "local", "--input", "sample:train", "--output", str(tmp_path / "n.csv"),
                 "--n-features", "3", "-q"]) == 2


def _int_and_double_labels(tmp_path, fmt: str) -> list:
    """Two files of one ranking problem whose ``label`` is int64 in one and double in the other."""
    rows = {"a": ([1, 0, 2, 0], [1, 1, 2, 2]), "b": ([1.5, 0.0, 1.0, 0.0], [3, 3, 4, 4])}
    features = [[0.5, 1.0], [0.1, 2.0], [0.3, 0.1], [0.9, 0.4]]
    paths = []
    for name, (labels, qid) in rows.items():
        path = tmp_path / f"{name}.{fmt}"
        if fmt == "parquet":
            pq.write_table(pa.table({"label": labels, "qid": qid, "features": features}), path)
        else:
            path.write_text("label,qid,f1,f2\n" + "".join(f"{y},{q},{x[0]},{x[1]}\n"
                                                          for y, q, x in zip(labels, qid, features)))
        paths.append(path)
    return paths


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_files_with_int_and_double_columns_are_read_as_doubles_on_both_engines(spark, tmp_path, fmt):
    """The local engine merges the files' types as Spark does (it failed with pyarrow's
    'Unable to merge', or read a directory's CSV files with the first file's types)."""
    paths = _int_and_double_labels(tmp_path, fmt)
    together = tmp_path / "together"
    together.mkdir()
    for p in paths:
        (together / p.name).write_bytes(p.read_bytes())
    runs = {"local-files": ("local", [str(p) for p in paths]), "local-dir": ("local", [str(together)]),
            "spark-files": ("spark", [str(p) for p in paths])}
    for name, (engine, inputs) in runs.items():
        assert main(["train", "--engine", engine, "--input", *inputs, "--model", str(tmp_path / f"{name}.json"),
                     "-q"]) == 0, name
    models = [RankingModel.load(str(tmp_path / f"{name}.json")) for name in runs]
    assert {m.summary["n_rows"] for m in models} == {8}
    for name, model in zip(runs, models):
        np.testing.assert_array_equal(model.weights, models[0].weights, err_msg=name)


def test_files_with_a_string_and_a_number_column_are_an_error_naming_both(tmp_path, capsys):
    a, _ = _int_and_double_labels(tmp_path, "csv")
    text = tmp_path / "text.csv"
    text.write_text("label,qid,f1,f2\nhigh,5,0.5,1.0\nlow,5,0.1,2.0\n")
    assert main(["train", "--engine", "local", "--input", str(a), str(text), "--model", str(tmp_path / "x.json")]) == 2
    assert (f"sparkrank train: error: {text}: column 'label' is string, but int64 in {a}; "
            "the files of one input must agree") in capsys.readouterr().err


@pytest.mark.parametrize("name", ["rows.csv.gz", "rows.tsv.bz2"])
def test_compressed_csv_is_csv_on_both_engines(spark, tmp_path, name):
    """``train.csv.gz`` is CSV by the name under its compression suffix, and its header (read
    through the compression) gives the default feature columns; it was read as SVMlight, and
    with --format csv had no feature column."""
    import bz2
    import gzip

    plain, compressed = name.rsplit(".", 1)
    text = tmp_path / plain
    assert main(["convert", "--engine", "local", "--input", "sample:train", "--output", str(text), "-q"]) == 0
    (tmp_path / name).write_bytes({"gz": gzip, "bz2": bz2}[compressed].compress(text.read_bytes()))
    reference = tmp_path / "ref.json"
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(reference), "-q"]) == 0
    runs = {"local": ["--engine", "local"], "spark": ["--engine", "spark"],
            "format": ["--engine", "local", "--format", plain.rsplit(".", 1)[1]]}
    for run, options in runs.items():
        out = tmp_path / f"{run}.json"
        assert main(["train", *options, "--input", str(tmp_path / name), "--model", str(out), "-q"]) == 0, run
        np.testing.assert_array_equal(_weights(out), _weights(reference), err_msg=run)
        assert json.loads(out.read_text())["summary"]["feature_cols"][:2] == ["f1", "f2"]


def test_a_quoted_number_in_where_compares_with_a_number_column_as_on_spark(spark, tmp_path, capsys):
    """Spark casts a string literal to the number column it is compared with; the local engine
    failed ("Function 'equal' has no kernel matching input types (int32, string)")."""
    hive = tmp_path / "hive"
    for part in (1, 2, 3):
        (hive / f"part={part}").mkdir(parents=True)
        pq.write_table(pa.table({"label": [1.0, 0.0, 2.0, 0.0], "qid": [2 * part, 2 * part, 2 * part + 1, 2 * part + 1],
                                 "features": [[0.5, part], [0.1, 2.0], [0.3, 0.1], [0.9, 0.4 * part]]}),
                       hive / f"part={part}" / "part.parquet")
    text = tmp_path / "rows.csv"
    assert main(["convert", "--engine", "local", "--input", "sample:train", "--output", str(text), "-q"]) == 0
    cases = [(hive, "part = '3'", 4), (hive, "part BETWEEN '2' AND ' 3 '", 8), (hive, "part IN ('1', '3')", 8),
             (text, "qid <= '40'", None)]
    for path, where, n_rows in cases:
        models = []
        for engine in ("local", "spark"):
            out = tmp_path / f"{engine}.json"
            assert main(["train", "--engine", engine, "--input", str(path), "--where", where, "--model", str(out),
                         "-q"]) == 0, (where, engine)
            models.append(RankingModel.load(str(out)))
        assert models[0].summary["n_rows"] == models[1].summary["n_rows"] == (n_rows or models[0].summary["n_rows"])
        np.testing.assert_array_equal(models[0].weights, models[1].weights, err_msg=where)
    # a string that is no number of the column's type: Spark's cast fails; the same message on both engines
    for engine in ("local", "spark"):
        capsys.readouterr()
        assert main(["train", "--engine", engine, "--input", str(hive), "--where", "part = '3.5'",
                     "--model", str(tmp_path / "x.json")]) == 2, engine
        assert (f"sparkrank train: error: {hive}: --where \"part = '3.5'\": column 'part' is int32 and '3.5' is not "
                "an integer") in capsys.readouterr().err, engine


def test_a_number_against_a_string_column_in_where_names_the_input_and_the_filter(spark, tmp_path, capsys):
    """``--where "day > 5"`` on a string column: Spark casts each value of the column to a number
    (rows of numeric text are kept as in-process would keep their quoted twin; text that is no
    number fails), the local engine has no such comparison.  Both now name the input and the
    filter; the local engine says what to write instead (it said pyarrow's "Function 'greater' has
    no kernel matching input types (string, int8)", Spark the cast error without the input)."""
    rows = {"label": [1.0, 0.0, 2.0, 0.0, 1.0, 0.0], "qid": ["a", "a", "b", "b", "c", "c"],
            "features": [[0.5, 0.1], [0.1, 0.2], [0.3, 0.1], [0.9, 0.4], [0.2, 0.7], [0.6, 0.3]]}
    words, digits = tmp_path / "words.parquet", tmp_path / "digits.parquet"
    pq.write_table(pa.table({**rows, "day": ["x", "x", "y", "y", "z", "z"]}), words)
    pq.write_table(pa.table({**rows, "day": ["7", "7", "9", "9", "3", "3"]}), digits)
    errors = {}
    for engine in ("local", "spark"):
        capsys.readouterr()
        assert main(["train", "--engine", engine, "--input", str(words), "--where", "day > 5",
                     "--model", str(tmp_path / "x.json")]) == 2, engine
        errors[engine] = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
    assert errors["local"] == [f"sparkrank train: error: {words}: --where 'day > 5' compares the string column 'day' "
                               "with the number 5: quote the number to compare text ('5'), or run on Spark "
                               "(--engine spark), which casts each value of the column to a number"]
    assert len(errors["spark"]) == 1 and errors["spark"][0].startswith(
        f"sparkrank train: error: {words}: cannot read with --where 'day > 5': [CAST_INVALID_INPUT] The value 'x'")
    # Spark failing on another part of the filter never advises running on Spark; that part (a
    # string that is no number of its column) is cast once for both engines, before any job, so
    # Spark says what the local engine says of it (it said Spark's [CAST_INVALID_INPUT] line)
    capsys.readouterr()
    assert main(["train", "--engine", "spark", "--input", str(words), "--where", "day > 5 AND label = 'x'",
                 "--model", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert (f"{words}: --where \"day > 5 AND label = 'x'\": column 'label' is double and 'x' is not a number"
            in err and "--engine spark" not in err), err
    # numeric text: Spark keeps the rows whose number passes; in-process, the same rows by text
    models = []
    for engine, where in (("spark", "day > 5"), ("local", "day IN ('7', '9')")):
        out = tmp_path / f"{engine}.json"
        assert main(["train", "--engine", engine, "--input", str(digits), "--where", where, "--model", str(out),
                     "-q"]) == 0
        models.append(RankingModel.load(str(out)))
    assert models[0].summary["n_rows"] == models[1].summary["n_rows"] == 4
    np.testing.assert_array_equal(models[0].weights, models[1].weights)
