"""Retrain the MQ2008 reference models and compare ``weights``/``intercept`` bit for bit.

Before a refactor, write the references from the current checkout; after it, compare:

    python bench/bitwise_refs.py [--engine spark] --write REF_DIR [SOLVER ...]   # default: all four
    python bench/bitwise_refs.py [--engine spark] REF_DIR [SOLVER ...]

Each reference ``mq2008-<solver>-{local,std}.json`` is
``sparkrank train --input ../shared/data/MQ2008/Fold1/train.txt --model X --solver S --engine local -q``
(``-std`` adds ``--standardization standard``); with ``--engine spark`` the references are
``spark-mq2008-<solver>-{local,std}.json``, trained with ``--engine spark --master local[2]``.
The comparison trains the same models through the same CLI and prints one line per model
(``identical`` or the largest difference), exit status 1 on any difference.
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


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


ENGINE_ARGS = {"local": ["--engine", "local"], "spark": ["--engine", "spark", "--master", "local[2]"]}
ENGINE = "local"


def ref_name(solver: str, variant: str) -> str:
    """File name of the reference model of ``solver``/``variant`` on the chosen engine."""
    prefix = "" if ENGINE == "local" else f"{ENGINE}-"
    return f"{prefix}mq2008-{solver}-{variant}.json"


def trained(out: Path, solver: str, variant: str) -> bool:
    """Train the reference model of ``solver`` (``variant`` local or std) into ``out``."""
    argv = ["train", "--input", str(TRAIN), "--model", str(out), "--solver", solver, *ENGINE_ARGS[ENGINE], "-q"]
    if variant == "std":
        argv += ["--standardization", "standard"]
    if main(argv) != 0:
        print(f"{solver:8s} {variant:5s} FAILED to train")
        return False
    return True


def check(ref_dir: Path, solver: str, variant: str) -> bool:
    ref = json.loads((ref_dir / ref_name(solver, variant)).read_text())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "m.json"
        if not trained(out, solver, variant):
            return False
        new = json.loads(out.read_text())
    ok = _same(ref["weights"], new["weights"]) and _same(ref["intercept"], new["intercept"])
    diff = float(np.max(np.abs(np.subtract(ref["weights"], new["weights"])))) if not ok else 0.0
    print(f"{ENGINE:5s} {solver:8s} {variant:5s} {'identical' if ok else f'DIFFERS (max |dw| {diff:.3g})'}", flush=True)
    return ok


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--engine"] and len(args) > 1 and args[1] in ENGINE_ARGS:
        ENGINE = args[1]
        del args[:2]
    write = bool(args) and args[0] == "--write"
    if write:
        args.pop(0)
    if not args:
        sys.exit(__doc__)
    ref_dir = Path(args.pop(0))
    solvers = args or SOLVERS
    if write:
        ref_dir.mkdir(parents=True, exist_ok=True)
        results = [trained(ref_dir / ref_name(s, v), s, v) for s in solvers for v in ("local", "std")]
    else:
        results = [check(ref_dir, s, v) for s in solvers for v in ("local", "std")]
    sys.exit(0 if all(results) else 1)
