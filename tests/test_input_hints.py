"""Hints that say what works (issue 38 item 5): a directory of mixed formats, on both engines.
Without ``--format`` it is one error line naming each format's ``--format``; with ``--format X``
only X's files are read (``--format parquet`` alone failed on the other files with ``Parquet
magic bytes not found``), the same model as a directory of X's files alone."""

from __future__ import annotations

import numpy as np
import pytest

from sparkrank.cli import main
from sparkrank.data.svmlight import write_svmlight
from sparkrank.datasets import make_ranking_data
from sparkrank.io.files import write_parquet
from sparkrank.model import RankingModel


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A directory holding 200 rows as Parquet and 60 other rows as SVMlight text, and the same
    two sets alone in directories of their own."""
    root = tmp_path_factory.mktemp("mixed")
    table, _ = make_ranking_data(200, 5, rows_per_group=20, seed=1)
    text, _ = make_ranking_data(60, 5, rows_per_group=20, seed=2)
    for name in ("mixed", "parquet", "svmlight"):
        (root / name).mkdir()
    for directory in ("mixed", "parquet"):
        write_parquet(root / directory / "a.parquet", table)
    for directory in ("mixed", "svmlight"):
        write_svmlight(root / directory / "b.txt", text.X, text.labels, np.repeat(text.qids, np.diff(text.groups.offsets)))
    return root


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_mixed_directory_names_the_format_options_that_work(spark, mixed, tmp_path, capsys, engine):
    base = ["train", "--engine", engine, "--solver", "tron", "-q"]
    capsys.readouterr()
    assert main([*base, "--model", str(tmp_path / "m.json"), "--input", str(mixed / "mixed")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"sparkrank train: error: input {mixed / 'mixed'} mixes formats (") \
        and err[0].endswith("); give --format parquet or --format svmlight to read only the files of that format"), err
    for fmt in ("parquet", "svmlight"):  # what the hint says works, and reads that format's rows alone
        alone, only = tmp_path / f"{fmt}-alone.json", tmp_path / f"{fmt}-only.json"
        assert main([*base, "--model", str(only), "--input", str(mixed / "mixed"), "--format", fmt]) == 0, \
            capsys.readouterr().err
        assert main([*base, "--model", str(alone), "--input", str(mixed / fmt)]) == 0, capsys.readouterr().err
        np.testing.assert_array_equal(RankingModel.load(only).weights, RankingModel.load(alone).weights)


def test_a_format_with_no_files_in_the_directory_says_what_is_there(mixed, tmp_path, capsys):
    assert main(["train", "--engine", "local", "--model", str(tmp_path / "m.json"), "--input",
                 str(mixed / "parquet"), "--format", "svmlight", "-q"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"sparkrank train: error: input {mixed / 'parquet'} has no svmlight files (--format svmlight): "
                   f"it holds 1 parquet ({mixed / 'parquet' / 'a.parquet'})"], err
