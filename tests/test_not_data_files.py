"""Files that are not data in an input directory (issue 38 item 5): ``README``, ``README.md``,
``_SUCCESS``, ``*.crc``, ``.DS_Store`` and any name starting with ``_`` or ``.`` are skipped by
name on both engines (:func:`sparkrank.io.uri.skipped_name`), as Spark and Hadoop skip the
hidden ones; a stray README counted as SVMlight (or failed Parquet's magic bytes) before."""

from __future__ import annotations

import numpy as np
import pytest

from sparkrank.cli import main
from sparkrank.data.svmlight import write_svmlight
from sparkrank.datasets import make_ranking_data
from sparkrank.io import uri as U
from sparkrank.io.files import write_parquet
from sparkrank.model import RankingModel

NOT_DATA = ("README", "README.md", "readme.txt", "_SUCCESS", "part-0.parquet.crc", ".part-9.parquet.crc",
            ".DS_Store", "_committed_123", ".hidden")


@pytest.mark.parametrize("name", NOT_DATA)
def test_the_one_rule_skips_what_is_not_data(name):
    assert U.skipped_name(name)


@pytest.mark.parametrize("name", ["part-0.parquet", "train.txt", "day=1", "readmes.parquet", "data.csv"])
def test_the_one_rule_keeps_data(name):
    assert not U.skipped_name(name)


def _litter(directory):
    """Every kind of file that is not data, with text that no reader takes for rows."""
    for name in NOT_DATA:
        (directory / name).write_text("# not data: see the project's documentation\n")


def _split(data, parts):
    """``data``'s groups cut into ``parts`` RankingData parts (files of one input)."""
    from sparkrank.data.folds import take_groups

    n = data.groups.n_groups
    return [take_groups(data, np.arange(n)[i::parts]) for i in range(parts)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The same rows as a clean Parquet directory with Hive partitions, the same with files that
    are not data at the top and inside a partition, and SVMlight text likewise."""
    root = tmp_path_factory.mktemp("not-data")
    data, _ = make_ranking_data(300, 6, rows_per_group=15, seed=5)
    out = {}
    for kind in ("clean", "littered"):
        for day, part in enumerate(_split(data, 2), start=1):
            (root / kind / f"day={day}").mkdir(parents=True)
            write_parquet(root / kind / f"day={day}" / "part-0.parquet", part)
        out[f"parquet-{kind}"] = root / kind
        text = root / f"text-{kind}"
        text.mkdir()
        qid = np.repeat(data.qids, np.diff(data.groups.offsets))
        write_svmlight(text / "part-0.txt", data.X, data.labels, qid)
        out[f"svmlight-{kind}"] = text
    for littered in (root / "littered", root / "littered" / "day=2", root / "text-littered"):
        _litter(littered)
    return out


@pytest.mark.parametrize("engine", ["local", "spark"])
@pytest.mark.parametrize("fmt", ["parquet", "svmlight"])
def test_a_littered_directory_trains_the_clean_directorys_model(spark, inputs, tmp_path, capsys, engine, fmt):
    """The model of a directory with a README, checksums, markers and hidden files in it is the
    model of the same directory without them, bit for bit, on both engines; Hive partitions stay
    columns (``--where day = 2`` keeps one partition)."""
    weights = {}
    for kind in ("clean", "littered"):
        for where in ((), ("--where", "day = 2")) if fmt == "parquet" else ((),):
            model = tmp_path / f"{kind}{len(where)}.json"
            rc = main(["train", "--engine", engine, "--input", str(inputs[f"{fmt}-{kind}"]), "--solver", "tron",
                       "--model", str(model), "-q", *where])
            assert rc == 0, capsys.readouterr().err
            weights[kind, len(where)] = RankingModel.load(model).weights
    for key in weights:
        if key[0] == "littered":
            np.testing.assert_array_equal(weights[key], weights["clean", key[1]])
    if fmt == "parquet":  # the filter kept one partition: a different model
        assert not np.array_equal(weights["clean", 0], weights["clean", 2])
