"""Train TRON and BMRM on MQ2008 Fold1 and cadata; print iterations, time, objective, test metrics.

    python bench/train_letor.py [--C 1 128]
    python bench/train_letor.py --whole-process [--rows 300000] [--liblinear PATH/train] [--repeat 3]

cadata (one global ranking, 3,842 distinct real labels) is min-max scaled and split 80/20
with a fixed seed.  Writes bench/results/train_letor.json.

``--whole-process`` measures what a user waits for and pays: ``sparkrank train --engine
local --solver tron -C 1`` (float64 and ``--dtype float32``) as a separate process on a
LETOR-style SVMlight file (``_synthetic.synthetic_svmlight``: 300k rows x 136 dense
features, ~2,500 queries, 5 grades, ~420 MB), wall time, CPU time and peak resident memory
(median of ``--repeat`` runs), and the same for LIBLINEAR-ranksvm's ``train -s 8 -c 1``
when its binary is given; the ratios are sparkrank / LIBLINEAR.  Writes
bench/results/train_letor_process.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, table, write_result  # noqa: E402

from sparkrank.data.block import RankingData  # noqa: E402
from sparkrank.data.io import read_ranking_data  # noqa: E402
from sparkrank.evaluation import evaluate_ranking  # noqa: E402
from sparkrank.training import train  # noqa: E402


def cadata_split(seed: int = 0):
    data = read_ranking_data(SHARED_DATA / "cadata" / "cadata")
    X = data.X.toarray()
    X = (X - X.min(axis=0)) / np.maximum(X.max(axis=0) - X.min(axis=0), 1e-12)
    y = data.labels / 1e5
    idx = np.random.default_rng(seed).permutation(len(y))
    cut = int(0.8 * len(y))
    tr, te = idx[:cut], idx[cut:]
    return RankingData.from_arrays(X[tr], y[tr]), RankingData.from_arrays(X[te], y[te])


def whole_process(args) -> int:
    import statistics
    import tempfile

    from _process import run_measured
    from _synthetic import synthetic_svmlight

    svm = synthetic_svmlight(args.rows, args.features)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        cmds = {
            "sparkrank float64": [sys.executable, "-m", "sparkrank", "train", "--engine", "local", "--solver", "tron",
                                  "-C", "1", "--input", str(svm), "--model", f"{tmp}/MODEL", "-q"],
        }
        cmds["sparkrank float32"] = cmds["sparkrank float64"] + ["--dtype", "float32"]
        if args.liblinear:
            cmds["LIBLINEAR-ranksvm -s 8"] = [args.liblinear, "-s", "8", "-c", "1", "-q", str(svm), f"{tmp}/MODEL"]
        for name, cmd in cmds.items():
            # a fresh model path per run: no program is asked to replace an existing file
            runs[name] = [run_measured([a.replace("MODEL", f"model-{len(name)}-{i}") for a in cmd])
                          for i in range(args.repeat)]
    rows = []
    for name, rs in runs.items():
        rows.append({"program": name, **{k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "peak_mb")}})
    base = next((r for r in rows if r["program"].startswith("LIBLINEAR")), None)
    for r in rows:
        for k in ("wall_s", "cpu_s", "peak_mb"):
            r[f"{k} ratio"] = r[k] / base[k] if base else None
    print(f"\n{svm.name}: {svm.stat().st_size / 1e6:.0f} MB, median of {args.repeat}")
    print(table(rows, list(rows[0])))
    if base is None:
        print("(no --liblinear binary given: ratios skipped)")
    print(f"\nwrote {write_result('train_letor_process', {'file': svm.name, 'rows': rows})}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 128.0])
    ap.add_argument("--skip-cadata", action="store_true")
    ap.add_argument("--whole-process", action="store_true", help="whole-process wall/CPU/peak memory vs LIBLINEAR")
    ap.add_argument("--rows", type=int, default=300_000, help="--whole-process: rows of the synthetic file")
    ap.add_argument("--features", type=int, default=136, help="--whole-process: dense features")
    ap.add_argument("--liblinear", metavar="PATH", help="--whole-process: LIBLINEAR-ranksvm's train binary")
    ap.add_argument("--repeat", type=int, default=3, help="--whole-process: runs per program (median)")
    args = ap.parse_args(argv)
    if args.whole_process:
        return whole_process(args)
    fold = SHARED_DATA / "MQ2008" / "Fold1"
    sets = {"MQ2008": (read_ranking_data(fold / "train.txt"), read_ranking_data(fold / "test.txt", n_features=46))}
    if not args.skip_cadata:
        sets["cadata"] = cadata_split()
    rows = []
    for name, (tr, te) in sets.items():
        for solver in ("tron", "bmrm"):
            for C in args.C:
                if solver == "bmrm" and name == "cadata" and C > 1:
                    continue  # λ = 1/(2CN) ~ 1e-11: BMRM's O(1/(λε)) iterations are out of reach
                model = train(tr, solver=solver, C=C * (1.0 if name == "MQ2008" else 1e-6), max_iter=2000)
                m = evaluate_ranking(te.groups, model.predict(te))
                rows.append({"data": name, "solver": solver, "C": model.C, "iterations": model.summary["iterations"],
                             "seconds": model.summary["seconds"], "objective": model.summary["objective"],
                             "converged": model.summary["converged"], "test_pairwise_accuracy": m["pairwise_accuracy"],
                             "test_mean_ndcg": m["mean_ndcg"], "test_ndcg@10": m["ndcg@10"]})
                print(table(rows[-1:], list(rows[-1])).splitlines()[-1], flush=True)
    cols = list(rows[0])
    print()
    print(table(rows, cols))
    print(f"\nwrote {write_result('train_letor', {'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
