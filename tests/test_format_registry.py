"""The format registry: a toy format (JSON lines) added with one definition plus one registry
entry, which ``--format``, auto-detection by name, both engines' readers and ``convert``'s writer
pick up; train, predict, evaluate, tune --folds 3 and convert run on it through the command line."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from sparkrank.cli import main
from sparkrank.io.formats.arrow import ArrowFormat, arrow_dataset
from sparkrank.io.formats.registry import FORMATS, format_choices, register, unregister
from sparkrank.io.outputs import write_via_local_file
from sparkrank.model import RankingModel


# -- the one new definition: a row per line, {"label": 2.0, "qid": 7, "features": [0.5, ...]} -------
@dataclass(frozen=True)
class JsonLinesFormat(ArrowFormat):
    """JSON lines: read by ``pyarrow.dataset`` and Spark's JSON source, written row by row."""

    def read_spark(self, spark, uris):
        return spark.read.json(list(uris))

    def local_dataset(self, paths):
        import pyarrow.dataset as ds

        return arrow_dataset(paths, ds.JsonFileFormat())

    def write_local(self, path, data):
        order = np.argsort(data.row_order)  # rows back in input order
        X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
        qid = None if data.qids is None else np.repeat(data.qids, data.groups.group_sizes)

        def write(local):
            with open(local, "w") as f:
                for i in order:
                    row = {"label": float(data.labels[i]), **({} if qid is None else {"qid": qid[i].item()}),
                           "features": [float(v) for v in X[i]]}
                    f.write(json.dumps(row) + "\n")

        write_via_local_file(path, write)


# -- the one registry entry --------------------------------------------------------------------------
TOY = JsonLinesFormat("jsonl", (".jsonl",), output_suffixes=(".jsonl",))


@pytest.fixture
def toy_format():
    register(TOY)
    yield TOY
    unregister(TOY.name)


def _run(argv, capsys):
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr()


def test_the_toy_format_is_read_written_and_trained_on_like_svmlight(toy_format, tmp_path, capsys):
    assert "jsonl" in format_choices()
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    _run(["convert", "--input", "sample:train", "--output", str(train), "-q"], capsys)  # written by the format
    _run(["convert", "--input", "sample:test", "--output", str(test), "-q"], capsys)
    assert json.loads(train.read_text().splitlines()[0]).keys() == {"label", "qid", "features"}
    models = {}
    for name, given in (("svmlight", "sample:train"), ("jsonl", str(train))):
        path = tmp_path / f"{name}.json"
        _run(["train", "--engine", "local", "--input", given, "--model", str(path), "-q"], capsys)
        models[name] = RankingModel.load(str(path))
    np.testing.assert_array_equal(models["jsonl"].weights, models["svmlight"].weights)  # the same doubles read back

    _run(["predict", "--model", str(tmp_path / "jsonl.json"), "--input", str(test), "--format", "jsonl",
          "--output", str(tmp_path / "scores.txt"), "-q"], capsys)
    _run(["predict", "--model", str(tmp_path / "jsonl.json"), "--input", "sample:test",
          "--output", str(tmp_path / "scores-svmlight.txt"), "-q"], capsys)
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "scores.txt"), np.loadtxt(tmp_path / "scores-svmlight.txt"))

    metrics = [json.loads(_run(["evaluate", "--model", str(tmp_path / "jsonl.json"), "--input", given, "-q"],
                               capsys).out) for given in (str(test), "sample:test")]
    assert metrics[0] == metrics[1]

    tuned = []
    for given in (str(train), "sample:train"):
        out = tmp_path / f"tune-{len(tuned)}.json"
        _run(["tune", "--input", given, "--folds", "3", "--C-range", "-3", "0", "--output-json", str(out), "-q"],
             capsys)
        tuned.append(json.loads(out.read_text()))
    def timeless(rows):
        return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]

    assert timeless(tuned[0]["rows"]) == timeless(tuned[1]["rows"]) and tuned[0]["best_C"] == tuned[1]["best_C"]

    back = tmp_path / "back.txt"  # and out again, as SVMlight text: the same rows
    _run(["convert", "--input", str(train), "--output", str(back), "-q"], capsys)
    _run(["convert", "--input", "sample:train", "--output", str(tmp_path / "direct.txt"), "-q"], capsys)
    assert back.read_text() == (tmp_path / "direct.txt").read_text()


def test_spark_reads_the_toy_format_into_the_same_model(toy_format, spark, tmp_path, capsys):
    train = tmp_path / "train.jsonl"
    _run(["convert", "--input", "sample:train", "--output", str(train), "-q"], capsys)
    weights = {}
    for engine in ("local", "spark"):
        path = tmp_path / f"{engine}.json"
        _run(["train", "--engine", engine, "--input", str(train), "--model", str(path), "-q"], capsys)
        weights[engine] = RankingModel.load(str(path)).weights
    np.testing.assert_array_equal(weights["spark"], weights["local"])


def test_the_toy_format_is_gone_after_unregistering():
    assert "jsonl" not in FORMATS and "jsonl" not in format_choices()
