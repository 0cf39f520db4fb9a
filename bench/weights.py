"""The cost of row and group weights: one engine pass per kernel, weighted against unweighted.

    python bench/weights.py [--rows 200000] [--features 50] [--threads 1] [--repeat 3]

Same rows and labels (``make_ranking_data``), once without weights and once with random row
weights in [0, 3) and group weights in [0, 2) (a tenth of each zero); each pass of the local
engine (``X·v``, the kernel, ``Xᵀc``) is timed at the same point, best of ``--repeat`` rounds in
which the two take turns (so a drifting machine slows both alike); the passes
cover every counting method's own code (the selection tree, PRSVM+'s per-level sweeps, the
adjacent pair rule).  Prints a table
and the ratio that matters, weighted / unweighted (target at most 1.1), and writes
``bench/results/weights.json``.  CSR rows (``--layout sparse``, the default) take the same tile
path either way; with ``--layout dense`` both run TRON's compiled group forms
(``engines/group_passes.py``), weighted or not.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from _common import best_times, table, write_result
from sparkrank.data.block import RankingData
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.kernels.losses import HingeKernel, SquaredHingeHessianKernel, SquaredHingeKernel
from sparkrank.kernels.ranknet import RankNetKernel
from sparkrank.kernels.toppush import TopPushPrimalKernel


def weighted_copy(data: RankingData, seed: int) -> RankingData:
    """``data`` with random row and group weights (some zero)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 3, data.n_rows) * (rng.random(data.n_rows) > 0.1)
    b = rng.uniform(0, 2, data.groups.n_groups) * (rng.random(data.groups.n_groups) > 0.1)
    return RankingData(data.X, data.groups.with_weights(a, b), data.qids, data.input_order)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layout", choices=("sparse", "dense"), default="sparse")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per pass, the best kept (more on a busy machine)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall seconds, or this process's CPU seconds (steadier on a machine shared with other jobs)")
    args = ap.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    data, _ = make_ranking_data(args.rows, args.features, rows_per_group=120, n_levels=5, density=0.5, seed=1)
    if args.layout == "dense":
        data = RankingData(np.ascontiguousarray(data.X.toarray()), data.groups, data.qids, data.input_order)
    engines = {"unweighted": LocalEngine(data, threads=args.threads),
               "weighted": LocalEngine(weighted_copy(data, 2), threads=args.threads)}
    w = np.random.default_rng(3).normal(size=data.n_features) * 0.1
    v = np.random.default_rng(4).normal(size=data.n_features)
    kernels = {"L2 value+gradient (TRON)": SquaredHingeKernel(), "L1 hinge (BMRM)": HingeKernel(),
               "L2 value+gradient, prsvm+": SquaredHingeKernel("prsvm+"), "L1 hinge, prsvm+": HingeKernel("prsvm+"),
               "L2 value+gradient, adjacent pairs": SquaredHingeKernel(pair_rule="adjacent"),
               "L1 hinge, adjacent pairs": HingeKernel(pair_rule="adjacent"),
               "RankNCG fast gradient": RankNetKernel("fast"), "TopPush primal": TopPushPrimalKernel()}
    rows = []
    for name, kernel in kernels.items():
        seconds = best_times({k: lambda e=e: e.run(w, kernel) for k, e in engines.items()}, args.repeat, clock)
        rows.append({"pass": name, **seconds, "ratio": seconds["weighted"] / seconds["unweighted"]})
    # TRON's Hessian product at a kept point (the pass it runs most), per counting and pair rule
    for label, counting, rule in (("", "selection", "all"), (", prsvm+", "prsvm+", "all"),
                                  (", adjacent pairs", "selection", "adjacent")):
        product = SquaredHingeHessianKernel(counting, rule)
        states = {k: e.run(w, SquaredHingeKernel(counting, rule), keep_state=True).state for k, e in engines.items()}
        hessian = best_times({k: lambda e=e, state=states[k]: e.run(v, product, state=state)
                              for k, e in engines.items()}, args.repeat, clock)
        rows.append({"pass": f"L2 Hessian product (TRON){label}", **hessian,
                     "ratio": hessian["weighted"] / hessian["unweighted"]})
    print(f"{args.rows} rows x {args.features} features ({args.layout}), groups of 120, 5 levels, "
          f"{args.threads} thread(s); {args.clock} seconds per pass, best of {args.repeat}")
    print(table(rows, ["pass", "unweighted", "weighted", "ratio"]))
    worst = max(r["ratio"] for r in rows)
    print(f"weighted / unweighted pass: at most {worst:.2f}x (target <= 1.1x)")
    path = write_result(f"weights-{args.layout}", {"rows": args.rows, "features": args.features,
                                                   "threads": args.threads, "layout": args.layout,
                                                   "passes": rows, "worst_ratio": worst})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
