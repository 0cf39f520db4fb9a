"""Weight columns on the command line and in the local readers (Parquet, CSV), and their errors."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from sparkrank.cli import main
from sparkrank.data.block import DataError, RankingData
from sparkrank.data.weights import WeightColumns
from sparkrank.io.sources import ColumnSpec, open_source


def weighted_rows(seed: int = 0, m: int = 120):
    rng = np.random.default_rng(seed)
    qid = rng.integers(0, 10, m)  # rows of a query not contiguous
    y = rng.integers(0, 3, m).astype(np.float64)
    X = rng.normal(size=(m, 3)).round(2)
    a = rng.integers(0, 3, m).astype(np.float64)
    b = (rng.integers(1, 4, 10) * 0.5)[qid]
    table = pa.table({"label": y, "qid": qid, "f1": X[:, 0], "f2": X[:, 1], "f3": X[:, 2], "w": a, "gw": b})
    return table, RankingData.from_arrays(X, y, qid, row_weights=a, group_weights=b, layout="dense")


COLUMNS = ColumnSpec(feature_cols=("f1", "f2", "f3"), weights=WeightColumns("w", "gw"))


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_local_readers_attach_the_weights_of_each_row(tmp_path, fmt):
    table, want = weighted_rows()
    path = tmp_path / f"train.{fmt}"
    pq.write_table(table, path) if fmt == "parquet" else pacsv.write_csv(table, path)
    got = open_source(str(path), columns=COLUMNS).ranking_data()
    np.testing.assert_array_equal(got.groups.row_weights, want.groups.row_weights)
    np.testing.assert_array_equal(got.groups.group_weights, want.groups.group_weights)
    np.testing.assert_array_equal(got.labels, want.labels)


def test_a_where_filter_keeps_each_rows_weight(tmp_path):
    table, _ = weighted_rows(1)
    path = tmp_path / "train.parquet"
    pq.write_table(table, path)
    got = open_source(str(path), columns=COLUMNS, where="f1 > 0").ranking_data()
    kept = table.filter(pa.compute.greater(table.column("f1"), 0))
    want = RankingData.from_arrays(np.zeros((kept.num_rows, 1)), kept.column("label").to_numpy(),
                                   kept.column("qid").to_numpy(), row_weights=kept.column("w").to_numpy())
    np.testing.assert_array_equal(got.groups.row_weights, want.groups.row_weights)


def test_a_negative_weight_names_the_file_and_row(tmp_path):
    table, _ = weighted_rows(2)
    w = table.column("w").to_numpy().copy()
    w[5] = -1.0
    path = tmp_path / "bad.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("w"), "w", pa.array(w)), path)
    with pytest.raises(DataError, match=r"bad\.parquet: row 5: w is -1\.0: weights must be finite and non-negative"):
        open_source(str(path), columns=COLUMNS).ranking_data()


def test_train_records_the_weight_columns_and_evaluate_uses_them(tmp_path, capsys):
    table, data = weighted_rows(3)
    path = tmp_path / "train.parquet"
    pq.write_table(table, path)
    model = tmp_path / "m.json"
    cols = ["--feature-cols", "f1,f2,f3"]
    assert main(["train", "--engine", "local", "--input", str(path), "--model", str(model), "-q", *cols,
                 "--weight-col", "w", "--group-weight-col", "gw"]) == 0
    summary = json.loads(model.read_text())["summary"]
    assert (summary["weight_col"], summary["group_weight_col"]) == ("w", "gw")
    assert main(["predict", "--engine", "local", "--model", str(model), "--input", str(path),
                 "--output", str(tmp_path / "p.parquet"), "-q"]) == 0  # no weights needed
    assert main(["evaluate", "--engine", "local", "--model", str(model), "--input", str(path), "-q",
                 "--weight-col", "w", "--group-weight-col", "gw", "--output-json", str(tmp_path / "e.json")]) == 0
    metrics = json.loads((tmp_path / "e.json").read_text())
    from sparkrank.evaluation.kernel import evaluate_ranking
    from sparkrank.model import RankingModel

    scores = RankingModel.load(model).predict(data.X)
    want = evaluate_ranking(data.groups, scores)
    assert metrics["pairwise_accuracy"] == pytest.approx(want["pairwise_accuracy"], rel=1e-12)
    assert metrics["mean_ndcg"] == pytest.approx(want["mean_ndcg"], rel=1e-12)


def test_svmlight_input_has_no_weight_columns(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    with pytest.raises(DataError, match="svmlight input has no weight columns"):
        open_source(str(path), columns=ColumnSpec(weights=WeightColumns("w"))).ranking_data()
