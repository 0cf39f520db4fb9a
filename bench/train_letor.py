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
(L2-loss RankSVM by TRON) when its binary is given; the ratios are sparkrank / LIBLINEAR.
Also times ``read_svmlight`` alone on 1 and 2 threads, into CSR and into the dense rows
``sparkrank train`` reads LETOR text into (``layout="auto"``).  Writes
bench/results/train_letor_process.json and .md (the table).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, table, write_result  # noqa: E402

from sparkrank.data.block import RankingData  # noqa: E402
from sparkrank.io.files import read_ranking_data  # noqa: E402
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
    with tempfile.TemporaryDirectory() as tmp:
        cmds = {
            "sparkrank float64": [sys.executable, "-m", "sparkrank", "train", "--engine", "local", "--solver", "tron",
                                  "-C", "1", "--input", str(svm), "--model", f"{tmp}/MODEL", "-q"],
        }
        cmds["sparkrank float32"] = cmds["sparkrank float64"] + ["--dtype", "float32"]
        if args.liblinear:
            # -s 8: L2-regularized L2-loss RankSVM by TRON (lee-lin2014), the AA-tree counting
            cmds[LIBLINEAR] = [args.liblinear, "-s", "8", "-c", "1", "-q", str(svm), f"{tmp}/MODEL"]
        runs = {name: [] for name in cmds}
        for i in range(args.repeat):
            # round robin: a slow spell of the machine hits every program alike, not just one;
            # a fresh model path per run: no program is asked to replace an existing file
            for name, cmd in cmds.items():
                runs[name].append(run_measured([a.replace("MODEL", f"model-{len(name)}-{i}") for a in cmd]))
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in MEASURES} for name, rs in runs.items()}
    parse = parse_seconds(svm, args.repeat)
    print(f"\n{svm.name}: {svm.stat().st_size / 1e6:.0f} MB, median of {args.repeat} (MB = MiB of peak RSS)")
    print(process_table(medians))
    if LIBLINEAR not in medians:
        print("(no --liblinear binary given: ratios skipped)")
    print("\nread_svmlight alone (in process, median of %d):" % args.repeat)
    print(table(parse, list(parse[0])))
    out = write_result("train_letor_process", {"file": svm.name, "bytes": svm.stat().st_size, "repeat": args.repeat,
                                               "runs": runs, "median": medians, "parse": parse})
    md = out.with_suffix(".md")
    md.write_text(f"{svm.name} ({svm.stat().st_size / 1e6:.0f} MB), median of {args.repeat}\n\n"
                  + process_table(medians, markdown=True) + "\n")
    print(f"\nwrote {out} and {md}")
    return 0


LIBLINEAR = "LIBLINEAR-ranksvm -s 8 -c 1"
MEASURES = {"wall_s": ("wall", "{:.1f} s"), "cpu_s": ("CPU", "{:.1f} s"), "peak_mb": ("peak memory", "{:,.0f} MB")}


def process_table(medians: dict, markdown: bool = False) -> str:
    """Issue 12's layout: a row per measure, a column per program, and sparkrank / LIBLINEAR ratios."""
    names = list(medians)
    base = medians.get(LIBLINEAR)
    ours = [n for n in names if n != LIBLINEAR]
    header = [""] + names + ([f"ratio {n.split()[-1]}" for n in ours] if base else [])
    rows = []
    for key, (label, fmt) in MEASURES.items():
        row = [label] + [fmt.format(medians[n][key]) for n in names]
        if base:
            row += [f"{medians[n][key] / base[key]:.2f}" for n in ours]
        rows.append(row)
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in [header] + rows)


def parse_seconds(path, repeat: int) -> list[dict]:
    """Wall and CPU seconds of ``read_svmlight`` on 1 and 2 threads, into CSR and into dense rows
    (``layout="auto"``, what ``sparkrank train`` uses), after a warm-up that compiles."""
    import statistics
    import time

    from sparkrank.data.svmlight import read_svmlight

    read_svmlight(path, threads=1)
    rows = []
    for layout in ("sparse", "auto"):
        for threads in (1, 2):
            wall, cpu = [], []
            for _ in range(repeat):
                t, c = time.perf_counter(), time.process_time()
                f = read_svmlight(path, threads=threads, layout=layout)
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                kind = "dense rows" if isinstance(f.X, np.ndarray) else "CSR"
                del f
            rows.append({"layout": f"{layout} ({kind})", "threads": threads, "wall_s": statistics.median(wall),
                         "cpu_s": statistics.median(cpu)})
    return rows


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
