"""Retrain the MQ2008 reference models and compare ``weights``/``intercept`` bit for bit.

Before a refactor, write the references from the current checkout; after it, compare:

    python bench/bitwise_refs.py --write REF_DIR [SOLVER ...]   # default: all four solvers
    python bench/bitwise_refs.py REF_DIR [SOLVER ...]

Options (before REF_DIR): ``--engine local|spark|both`` (default local), ``--train FILE`` (default
``../shared/data/MQ2008/Fold1/train.txt`` beside the checkout).

Each reference ``mq2008-<solver>-{local,std}.json`` is
``sparkrank train --input TRAIN --model X --solver S --engine local -q``
(``-std`` adds ``--standardization standard``); on Spark the files are
``mq2008-<solver>-{spark,spark-std}.json`` (``--engine spark``). The comparison trains the same
models through the same CLI and prints one line per model (``identical`` or the largest
difference), exit status 1 on any difference.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from sparkrank.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / ".." / "shared" / "data" / "MQ2008" / "Fold1" / "train.txt"
SOLVERS = ("tron", "bmrm", "ncg", "toppush")
#: variant -> (engine, standardized)
VARIANTS = {"local": ("local", False), "std": ("local", True),
            "spark": ("spark", False), "spark-std": ("spark", True)}


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def trained(out: Path, solver: str, variant: str, train: Path = TRAIN) -> bool:
    """Train the reference model of ``solver`` (``variant`` of :data:`VARIANTS`) into ``out``."""
    engine, standardized = VARIANTS[variant]
    argv = ["train", "--input", str(train), "--model", str(out), "--solver", solver, "--engine", engine, "-q"]
    if standardized:
        argv += ["--standardization", "standard"]
    if main(argv) != 0:
        print(f"{solver:8s} {variant:9s} FAILED to train")
        return False
    return True


def check(ref_dir: Path, solver: str, variant: str, train: Path = TRAIN) -> bool:
    ref = json.loads((ref_dir / f"mq2008-{solver}-{variant}.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "m.json"
        if not trained(out, solver, variant, train):
            return False
        new = json.loads(out.read_text())
    ok = _same(ref["weights"], new["weights"]) and _same(ref["intercept"], new["intercept"])
    diff = float(np.max(np.abs(np.subtract(ref["weights"], new["weights"])))) if not ok else 0.0
    print(f"{solver:8s} {variant:9s} {'identical' if ok else f'DIFFERS (max |dw| {diff:.3g})'}", flush=True)
    return ok


def _option(args: list[str], name: str, default: str) -> str:
    if name in args:
        at = args.index(name)
        value = args[at + 1]
        del args[at:at + 2]
        return value
    return default


if __name__ == "__main__":
    args = sys.argv[1:]
    write = "--write" in args
    if write:
        args.remove("--write")
    engine = _option(args, "--engine", "local")
    train = Path(_option(args, "--train", str(TRAIN)))
    if not args or engine not in ("local", "spark", "both"):
        sys.exit(__doc__)
    ref_dir = Path(args.pop(0))
    solvers = args or SOLVERS
    variants = [v for v, (e, _) in VARIANTS.items() if engine in (e, "both")]
    if write:
        ref_dir.mkdir(parents=True, exist_ok=True)
        results = [trained(ref_dir / f"mq2008-{s}-{v}.json", s, v, train) for s in solvers for v in variants]
    else:
        results = [check(ref_dir, s, v, train) for s in solvers for v in variants]
    sys.exit(0 if all(results) else 1)
