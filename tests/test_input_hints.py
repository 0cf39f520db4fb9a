"""Hints that say what works (issue 38 item 5): a directory of mixed formats, with or without
``--format``, on both engines (``--format parquet`` alone failed on the other files with
``Parquet magic bytes not found``); once the hint is followed the command runs."""

from __future__ import annotations

import pytest

from sparkrank.cli import main
from sparkrank.io.files import write_parquet
from sparkrank.datasets import make_ranking_data


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_mixed_directory_names_the_glob_that_reads_one_format(spark, tmp_path, capsys, engine):
    data, _ = make_ranking_data(200, 5, rows_per_group=20, seed=1)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_parquet(mixed / "a.parquet", data)
    (mixed / "b.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    base = ["train", "--engine", engine, "--model", str(tmp_path / "m.json"), "-q"]
    for extra, what in (((), "mixes formats"), (("--format", "parquet"), "has files of other formats than --format "
                                                                         "parquet")):
        capsys.readouterr()
        assert main([*base, "--input", str(mixed), *extra]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"sparkrank train: error: input {mixed} {what} (") and \
            err[0].endswith("both engines read a directory whole, --format too: keep the files of one format in it "
                            "(move the others out)"), err
    (mixed / "b.txt").unlink()  # what the hint says
    capsys.readouterr()
    assert main([*base, "--input", str(mixed), "--format", "parquet"]) == 0, capsys.readouterr().err
