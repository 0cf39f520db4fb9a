"""BMRM (L1-loss RankSVM) on cadata against SVMrank, and on MQ2008 with and without pruning.

    python bench/bmrm.py [--svmrank PATH/svm_rank_learn] [--repeat 3] [--skip-mq2008]

cadata: one global ranking of all 20,640 rows (212 M pairs), features min-max scaled to
[0, 1] and rounded to float32 (SVMrank stores features as ``float``, so both programs read
identical numbers), written to a temporary SVMlight file with ``qid:1``.  sparkrank trains
``-C 1`` (LIBLINEAR's C); SVMrank ``-c 1`` with its default loss ``-l 1`` (swapped pairs),
1-slack dual ``-w 3`` and ``-e 0.001``.  SVMrank minimises ``½‖w‖² + (c/n_queries) Σ_P hinge``
(``c_light = c_rank / n``, its own help text), the same as LIBLINEAR's C = c / n_queries = 1
here, and scales ``-e`` by ``N / n_queries``, so its stop is the same absolute gap 1e-3 on
``J = λ‖w‖² + (1/N) Σ_P hinge`` that sparkrank's ``--tol`` bounds (λ = 1/(2CN)).  Both
objectives are reported as ``J`` evaluated by sparkrank at each program's weights (SVMrank's
model file prints 8 significant digits).

Rows: sparkrank's solver time in-process (median of ``--repeat``, numba compiled beforehand)
with the default bundle pruning and with every plane kept; ``sparkrank train`` and SVMrank as
whole processes (wall and CPU).  Ratios are SVMrank's time over each row's.  Without
``--svmrank`` the SVMrank row is the issue's 232 s figure (not measured here).

MQ2008 Fold1 train, C = 1, with and without ``--standardization standard``: iterations,
solver time, objective, largest bundle, pruned vs every plane kept.

Writes bench/results/bmrm.json.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, table, write_result  # noqa: E402
from _process import run_measured  # noqa: E402

from sparkrank.io.files import read_ranking_data  # noqa: E402
from sparkrank.engines.local import LocalEngine  # noqa: E402
from sparkrank.objectives.ranksvm import HingeRisk  # noqa: E402
from sparkrank.solvers.bmrm import bmrm  # noqa: E402
from sparkrank.solvers.bundle import DEFAULT_INACTIVE_LIMIT  # noqa: E402
from sparkrank.standardization import standardized_engine  # noqa: E402

ISSUE_SVMRANK_SECONDS = 232.0  # issue 12 item 3: SVMrank on scaled cadata, C = 1 (not measured here)
LIMITS = ((f"pruned after {DEFAULT_INACTIVE_LIMIT}", DEFAULT_INACTIVE_LIMIT), ("all planes kept", None))


def scaled_cadata(directory: Path) -> Path:
    """cadata min-max scaled, rounded to float32, one query: the file both programs train on."""
    data = read_ranking_data(SHARED_DATA / "cadata" / "cadata")
    X = data.X.toarray()
    lo, hi = X.min(axis=0), X.max(axis=0)
    X = ((X - lo) / np.where(hi > lo, hi - lo, 1.0)).astype(np.float32).astype(np.float64)
    path = directory / "cadata-scaled.svm"
    with open(path, "w") as f:
        for label, row in zip(data.labels, X):
            features = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0)
            f.write(f"{float(label)!r} qid:1 {features}\n")
    return path


class _LargestBundle:
    def __init__(self):
        self.largest = 0

    def __call__(self, record):
        self.largest = max(self.largest, len(record.state["bundle"]["offsets"]))


def run_bmrm(engine, C: float, tol: float, inactive_limit, repeat: int) -> dict:
    """Median solver time of ``repeat`` fits (all identical), with the fit's facts."""
    runs = []
    for _ in range(repeat):
        objective = HingeRisk.from_c(engine, C)
        bundle = _LargestBundle()
        t = time.perf_counter()
        result = bmrm(objective, tol=tol, inactive_limit=inactive_limit, callback=bundle)
        runs.append((time.perf_counter() - t, result, bundle.largest, objective))
    seconds = statistics.median(r[0] for r in runs)
    _, result, largest, objective = runs[0]
    return {"iterations": result.iterations, "seconds": seconds, "objective": result.objective,
            "gap": result.measure_value, "largest_bundle": largest, "w": result.w, "objective_fn": objective}


def svmrank_weights(model_path: Path, n_features: int) -> np.ndarray:
    """The weight vector of a linear SVMrank (SVM-light format) model: its last line."""
    last = model_path.read_text().strip().splitlines()[-1]
    w = np.zeros(n_features)
    for index, value in re.findall(r"(\d+):(\S+)", last.split("#")[0]):
        w[int(index) - 1] = float(value)
    return w


def cadata(args, directory: Path) -> list[dict]:
    path = scaled_cadata(directory)
    engine = LocalEngine(read_ranking_data(path))
    HingeRisk.from_c(engine, args.C).value(np.zeros(engine.summary.n_features))  # compile numba first
    rows = []
    for name, limit in LIMITS:
        r = run_bmrm(engine, args.C, args.tol, limit, args.repeat)
        rows.append({"program": f"sparkrank bmrm, {name} (in-process)", "iterations": r["iterations"],
                     "seconds": r["seconds"], "cpu_s": None, "objective J": r["objective"],
                     "largest bundle": r["largest_bundle"]})
    objective = r["objective_fn"]
    cli = [sys.executable, "-m", "sparkrank", "train", "--engine", "local", "--solver", "bmrm", "-C", str(args.C),
           "--tol", str(args.tol), "--input", str(path), "-q"]
    procs = [run_measured(cli + ["--model", str(directory / f"model-{i}.json")]) for i in range(args.repeat)]
    rows.append({"program": "sparkrank train (whole process)", "iterations": rows[0]["iterations"],
                 "seconds": statistics.median(p["wall_s"] for p in procs),
                 "cpu_s": statistics.median(p["cpu_s"] for p in procs), "objective J": rows[0]["objective J"]})
    if args.svmrank:
        model = directory / "svmrank.model"
        proc = run_measured([args.svmrank, "-c", str(args.C * engine.summary.n_groups), "-e", str(args.tol),
                             str(path), str(model)])
        iterations = re.search(r"Number of iterations: (\d+)", proc["output"])
        w = svmrank_weights(model, engine.summary.n_features)
        rows.append({"program": "SVMrank svm_rank_learn (whole process)",
                     "iterations": int(iterations.group(1)) if iterations else None,
                     "seconds": proc["wall_s"], "cpu_s": proc["cpu_s"], "objective J": objective.value(w)})
    else:
        rows.append({"program": "SVMrank (issue 12 figure, not measured)", "iterations": None,
                     "seconds": ISSUE_SVMRANK_SECONDS, "cpu_s": None, "objective J": None})
    reference = rows[-1]
    for r in rows:
        r["SVMrank time / this"] = reference["seconds"] / r["seconds"]
        r["J - J(SVMrank)"] = (None if reference["objective J"] is None or r["objective J"] is None
                               else r["objective J"] - reference["objective J"])
    return rows


def mq2008(args) -> list[dict]:
    data = read_ranking_data(SHARED_DATA / "MQ2008" / "Fold1" / "train.txt")
    rows = []
    for standardization in ("none", "standard"):
        engine, _ = standardized_engine(LocalEngine(data), standardization)
        for name, limit in LIMITS:
            r = run_bmrm(engine, 1.0, args.tol, limit, 1)
            rows.append({"standardization": standardization, "bundle": name, "iterations": r["iterations"],
                         "seconds": r["seconds"], "objective J": r["objective"], "gap": r["gap"],
                         "largest bundle": r["largest_bundle"]})
            print(table(rows[-1:], list(rows[-1])).splitlines()[-1], flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--svmrank", metavar="PATH", help="SVMrank's svm_rank_learn binary (else the issue's 232 s)")
    ap.add_argument("--C", type=float, default=1.0, help="LIBLINEAR C (SVMrank gets -c C x n_queries)")
    ap.add_argument("--tol", type=float, default=1e-3, help="BMRM gap = SVMrank -e")
    ap.add_argument("--repeat", type=int, default=3, help="sparkrank runs per row (median)")
    ap.add_argument("--skip-mq2008", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rows = cadata(args, Path(tmp))
    print("\ncadata (scaled to [0,1], one ranking, 212,416,110 pairs), C = 1, gap 1e-3:")
    print(table(rows, ["program", "iterations", "seconds", "cpu_s", "objective J", "J - J(SVMrank)",
                       "largest bundle", "SVMrank time / this"]))
    result = {"cadata": rows}
    if not args.skip_mq2008:
        print("\nMQ2008 Fold1 train, C = 1, gap 1e-3 (solver seconds, in-process):")
        result["mq2008"] = mq2008(args)
        print(table(result["mq2008"], list(result["mq2008"][0])))
    print(f"\nwrote {write_result('bmrm', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
