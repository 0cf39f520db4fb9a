"""SVMlight's ``cost:`` tokens as row (or group) weights: ``--weight-col cost`` on both engines.

The scanner reads ``<label> qid:<q> cost:<c> <index>:<value> ...`` (1 on a line without a cost),
a bad cost is one error naming the file and line, word for word the same on both engines, and a
file with integer costs trains the model of the file with each line repeated that often; the
Spark engine's model is the local one bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from test_bad_inputs import ENGINES, _error_line, _errors_on_both_engines, _text, _train
from test_weights import duplicated
from sparkrank.data.svmlight import SVMLightFormatError, parse_svmlight_bytes
from sparkrank.data.weights import WeightColumns
from sparkrank.io.sources import ColumnSpec, open_source
from sparkrank.training import train


def cost_lines(seed: int = 0, m: int = 400, every: int = 5, costs=(0, 1, 2, 3), per_query: bool = False
               ) -> tuple[list[str], dict]:
    """Graded rows in queries of 16 with costs drawn from ``costs`` (every ``every``-th line
    without one: 1; ``per_query``: one cost per query, on every line)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, m).astype(float)
    X = rng.normal(size=(m, 5)).round(3)
    qid = np.arange(m) // 16 + 1
    c = rng.choice(costs, qid.max() + 1).astype(float)[qid] if per_query else rng.choice(costs, m).astype(float)
    bare = np.zeros(m, dtype=bool) if per_query else np.arange(m) % every == 0  # lines without a cost: 1
    c[bare] = 1.0
    lines = [f"{y[i]:g} qid:{qid[i]}{'' if bare[i] else f' cost:{c[i]:g}'} "
             + " ".join(f"{j + 1}:{X[i, j]:g}" for j in range(5)) for i in range(m)]
    return lines, {"X": X, "y": y, "qid": qid, "cost": c}


def test_the_scanner_reads_costs_before_or_after_the_qid():
    text = b"1 qid:1 cost:2.5 1:0.5\n0 qid:1 2:1\n# comment\n2 cost:0.5 qid:2 1:1\n1 qid:2 cost:1234567890123456789012 1:3\n"
    f = parse_svmlight_bytes(text)
    np.testing.assert_array_equal(f.cost, [2.5, 1.0, 0.5, 1234567890123456789012.0])
    np.testing.assert_array_equal(f.qid, [1, 1, 2, 2])
    assert parse_svmlight_bytes(b"1 qid:1 1:0.5\n").cost is None
    # pieces scanned on threads and moved together keep each row's cost
    many = b"".join(b"%d qid:%d cost:%d 1:1\n" % (i % 3, i // 9, i % 5) for i in range(3000))
    from sparkrank.data import svmlight

    chunk, svmlight.CHUNK_BYTES = svmlight.CHUNK_BYTES, 4096
    try:
        threaded = parse_svmlight_bytes(many, threads=2)
    finally:
        svmlight.CHUNK_BYTES = chunk
    np.testing.assert_array_equal(threaded.cost, np.arange(3000) % 5)


@pytest.mark.parametrize("line,text", [
    ("1 qid:1 cost:-1 1:0.5", "'cost:-1' on line 3: a cost is a row weight and weights must be finite and non-negative"),
    ("1 qid:1 cost:nan 1:0.5", "'cost:nan' on line 3: a cost is a row weight"),
    ("1 qid:1 cost:inf 1:0.5", "'cost:inf' on line 3: a cost is a row weight"),
    ("1 qid:1 cost:1x 1:0.5", "'cost:1x' on line 3: a cost is a row weight"),
    ("1 qid:1 cost: 1:0.5", "'cost:' on line 3: a cost is a row weight"),
    ("1 qid:1 cost:-1234567890123456789012 1:0.5", "'cost:-1234567890123456789012' on line 3: a cost is a row weight"),
    ("1 qid:1 1:0.5 cost:2", "'cost:2' on line 3: a cost must come once, after the label (and qid) and before the "
                             "features"),
    ("1 qid:1 cost:1 cost:2 1:0.5", "'cost:2' on line 3: a cost must come once"),
])
def test_a_bad_cost_names_the_file_and_line(line, text):
    raw = f"0 qid:1 cost:1 1:1\n2 qid:1 1:2\n{line}\n".encode()
    with pytest.raises(SVMLightFormatError, match="^f.txt: " + text.replace("(", r"\(").replace(")", r"\)")):
        parse_svmlight_bytes(raw, name="f.txt")


def test_a_bad_cost_is_the_same_error_line_on_both_engines(spark, tmp_path, capsys):
    lines, _ = cost_lines(1, m=30000, every=3)
    lines[24999] = lines[24999].split(" ", 2)[0] + " qid:9999 cost:-0.5 1:1"  # in a later split on Spark
    path = _text(tmp_path / "bad.txt", lines)
    errors = _errors_on_both_engines(path, tmp_path, capsys, "--weight-col", "cost")
    assert errors["local"] == errors["spark"] == (f"{path}: 'cost:-0.5' on line 25000: a cost is a row weight and "
                                                  "weights must be finite and non-negative")


def test_other_weight_columns_are_one_error_on_both_engines(spark, tmp_path, capsys):
    path = _text(tmp_path / "t.txt", cost_lines(2, m=64)[0])
    errors = _errors_on_both_engines(path, tmp_path, capsys, "--weight-col", "w")
    assert errors["local"] == errors["spark"] == (
        f"{path}: svmlight input has no weight columns but its cost: tokens (--weight-col cost, "
        "--group-weight-col cost), not 'w'")


def test_a_cost_that_differs_within_a_query_is_one_line_on_both_engines(spark, tmp_path, capsys):
    """``--group-weight-col cost`` needs one cost per query: two files whose queries land in
    several Spark blocks, two of them with differing costs, give the local engine's line."""
    lines, _ = cost_lines(5, m=640, per_query=True)
    for k in (100, 500):  # in queries 7 and 32 (of 16 lines each)
        label, qid, _cost, rest = lines[k].split(" ", 3)
        lines[k] = f"{label} {qid} cost:7.5 {rest}"
    data = tmp_path / "two"
    data.mkdir()
    _text(data / "a.txt", lines[:320])
    _text(data / "b.txt", lines[320:])
    errors = _errors_on_both_engines(data, tmp_path, capsys, "--group-weight-col", "cost", "--partitions", "3")
    assert errors["local"] == errors["spark"]
    assert errors["local"].startswith(f"{data}: cost differs within query 7: ")
    assert errors["local"].endswith("7.5 (and 1 more query); a group weight must be the same on all rows of its query")


def test_integer_costs_train_the_model_of_the_repeated_lines(tmp_path):
    lines, a = cost_lines(3)
    weighted = open_source(str(_text(tmp_path / "w.txt", lines)),
                           columns=ColumnSpec(weights=WeightColumns("cost"))).ranking_data()
    np.testing.assert_array_equal(weighted.groups.row_weights[np.argsort(weighted.row_order)], a["cost"])
    dup = duplicated(a["X"], a["y"], a["qid"], a["cost"], np.ones(len(lines)))
    for solver, options in (("tron", {"C": 0.2, "tol": 1e-8}), ("bmrm", {"lam": 0.01, "tol": 1e-7, "max_iter": 3000})):
        got, want = train(weighted, solver=solver, **options).weights, train(dup, solver=solver, **options).weights
        tol = 1e-6 if solver == "tron" else 1e-3
        assert np.allclose(got, want, rtol=0, atol=tol * np.abs(want).max()), solver


def test_lines_without_costs_weigh_one(tmp_path):
    lines = cost_lines(4, m=120)[0]
    plain = [" ".join(t for t in ln.split() if not t.startswith("cost:")) for ln in lines]
    path = str(_text(tmp_path / "plain.txt", plain))
    ones = open_source(path, columns=ColumnSpec(weights=WeightColumns("cost"))).ranking_data()
    assert ones.groups.weighted and np.all(ones.groups.row_weights == 1.0)
    unweighted = open_source(path).ranking_data()
    assert train(ones, C=0.3).weights.tobytes() == train(unweighted, C=0.3).weights.tobytes()


def _model(path: Path, engine: str, tmp_path: Path, capsys, *extra: str) -> list[float]:
    rc, err = _train(path, engine, tmp_path, capsys, *extra)
    assert rc == 0, err
    return json.loads((tmp_path / f"m-{engine}.json").read_text())["weights"]


@pytest.mark.parametrize("column", ["--weight-col", "--group-weight-col"])
def test_spark_gives_the_local_model_bit_for_bit(spark, tmp_path, capsys, column):
    lines, _ = cost_lines(5, m=480, costs=(0.5, 1, 2.5), per_query=column == "--group-weight-col")
    path = _text(tmp_path / "train.txt", lines)
    models = {e: _model(path, e, tmp_path, capsys, column, "cost", "--max-iter", "20") for e in ENGINES}
    assert models["local"] == models["spark"]
    plain = _model(path, "local", tmp_path, capsys, "--max-iter", "20")
    assert plain != models["local"]  # the costs were used


def test_the_cost_column_is_listed_when_asked_for(spark, tmp_path, capsys):
    path = _text(tmp_path / "t.txt", cost_lines(6, m=64)[0])
    errors = _errors_on_both_engines(path, tmp_path, capsys, "--weight-col", "cost", "--feature-cols", "f1")
    assert errors["local"] == errors["spark"] == (f"{path}: no feature column 'f1'; columns are label, qid, cost, "
                                                  "indices, values")
