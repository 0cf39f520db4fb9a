"""A model wider than data of a fixed width (issue 38 item 5): a 10-weight model on rows of 6
features in a Parquet list column or 6 CSV columns is one error line with both counts in
``predict`` and ``evaluate``, on both engines (it exited 0 with a pairwise accuracy of 0.52);
SVMlight rows, whose omitted features are zeros, are scored at the model's width silently."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkrank.cli import main
from sparkrank.data.svmlight import write_svmlight
from sparkrank.datasets import make_ranking_data


@pytest.fixture(scope="module")
def narrow(tmp_path_factory):
    """A model of 10 features, and 120 rows of 6 features as a Parquet ``features`` list column,
    as CSV columns and as SVMlight text."""
    root = tmp_path_factory.mktemp("width")
    wide, _ = make_ranking_data(200, 10, rows_per_group=20, seed=7)
    qid = np.repeat(wide.qids, np.diff(wide.groups.offsets))
    write_svmlight(root / "wide.txt", wide.X, wide.labels, qid)
    assert main(["train", "--engine", "local", "--input", str(root / "wide.txt"), "--model", str(root / "m.json"),
                 "-q"]) == 0
    data, _ = make_ranking_data(120, 6, rows_per_group=20, seed=8)
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
    qid = np.repeat(data.qids, np.diff(data.groups.offsets))
    pq.write_table(pa.table({"label": data.labels, "qid": qid, "features": [list(map(float, row)) for row in X]}),
                   root / "narrow.parquet")
    header = "label,qid," + ",".join(f"f{j}" for j in range(6))
    lines = [",".join([repr(float(y)), str(int(q)), *map(repr, map(float, row))]) for y, q, row in zip(data.labels, qid, X)]
    (root / "narrow.csv").write_text(header + "\n" + "\n".join(lines) + "\n")
    write_svmlight(root / "narrow.txt", data.X, data.labels, qid)
    return root


def _command(command, engine, root, data, tmp_path):
    out = ["--output", str(tmp_path / f"scores-{engine}")] if command == "predict" else []
    return [command, "--engine", engine, "--model", str(root / "m.json"), "--input", str(root / data), *out, "-q"]


@pytest.mark.parametrize("engine", ["local", "spark"])
@pytest.mark.parametrize("command", ["predict", "evaluate"])
@pytest.mark.parametrize("data", ["narrow.parquet", "narrow.csv"])
def test_a_model_wider_than_fixed_width_rows_is_one_line_with_both_counts(spark, narrow, tmp_path, capsys, engine,
                                                                         command, data):
    capsys.readouterr()
    assert main(_command(command, engine, narrow, data, tmp_path)) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"sparkrank {command}: error: ") and \
        "has 6 feature columns but the model" in err[0] and "has 10 weights: its rows are of a fixed width" in err[0], err


@pytest.mark.parametrize("engine", ["local", "spark"])
@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_sparse_rows_narrower_than_the_model_are_scored_silently(spark, narrow, tmp_path, capsys, engine, command):
    capsys.readouterr()
    assert main(_command(command, engine, narrow, "narrow.txt", tmp_path)) == 0, capsys.readouterr().err
    assert "error" not in capsys.readouterr().err
