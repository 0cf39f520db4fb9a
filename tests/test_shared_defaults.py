"""One set of defaults (issue 40 item 2): the Python API (``load_svmlight``, ``open_source``,
``train``) and the command line choose the same layout, threads and dtype, and so give the same
model bit for bit (the choices are asserted here, never the time)."""

from __future__ import annotations

import json

import numpy as np

import sparkrank
from sparkrank import defaults
from sparkrank.cli import main
from sparkrank.cli.parser import build_parser
from sparkrank.engines.local_backend import LocalBackend
from sparkrank.engines.registry import engine_for
from sparkrank.io.sources import open_source

from test_svmlight_threads import write


def letor_file(tmp_path):
    """LETOR-like text: every feature on every line, so ``layout="auto"`` chooses dense rows."""
    rng = np.random.default_rng(5)
    lines = [f"{int(rng.integers(0, 3))} qid:{i // 9} " + " ".join(f"{j}:{rng.random():.4f}" for j in range(1, 16))
             for i in range(180)]
    return write(tmp_path, lines, "letor.txt")


def test_the_api_and_the_cli_choose_the_same_layout_threads_and_dtype(tmp_path):
    path = letor_file(tmp_path)
    api = sparkrank.load_svmlight(path)
    cli_rows = open_source([str(path)]).ranking_data()  # what the local engine reads (no threads given)
    assert isinstance(api.X, np.ndarray) and isinstance(cli_rows.X, np.ndarray)  # dense rows, both
    assert api.X.dtype == cli_rows.X.dtype == defaults.DTYPE
    args = build_parser().parse_args(["train", "--input", str(path), "--model", "m.json"])
    assert args.threads is defaults.THREADS and args.dtype == defaults.DTYPE_NAME
    cores = defaults.available_cores()
    assert engine_for(api).threads == cores  # train() on RankingData
    assert LocalBackend.build(open_source([str(path)])).threads == cores  # the CLI's engine


def test_the_api_defaults_give_the_cli_model_bit_for_bit(tmp_path):
    path = letor_file(tmp_path)
    model = tmp_path / "m.json"
    assert main(["train", "--input", str(path), "--model", str(model), "--engine", "local", "-q"]) == 0
    api = sparkrank.train(sparkrank.load_svmlight(path))
    assert json.loads(model.read_text())["weights"] == [float(w) for w in api.raw_weights]
