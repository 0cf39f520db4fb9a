"""Time of one L1 loss+subgradient and one L2 Hessian-vector product vs m, per counting method.

    python bench/kernel_scaling.py [--max-rows 1000000] [--pairs-budget 10]

One global ranking, 10 sparse features, for real-valued labels (k ≈ m) and for k = 5 grades
(airola2011 Figure 1, lee-lin2014 Figure 4).  The all-pairs method and PRSVM+ (``O(k·m)``:
quadratic when k ≈ m) run until one call exceeds --pairs-budget seconds.  Prints the growth
exponent of each method between 1e4 and the largest m, and the tree / all-pairs and tree /
PRSVM+ speed ratios at m = 32,768.  Writes bench/results/kernel_scaling.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import best_time, growth_exponent, table, write_result  # noqa: E402

from sparkrank.datasets import make_ranking_data  # noqa: E402
from sparkrank.engines.local import LocalEngine  # noqa: E402
from sparkrank.choices import COUNTING_METHODS  # noqa: E402
from sparkrank.objectives.ranksvm import HingeRisk, SquaredHingeObjective  # noqa: E402


def sizes(max_rows: int) -> list[int]:
    out = [1000, 4096, 10_000, 32_768, 100_000, 300_000, 1_000_000, 3_000_000]
    return [m for m in out if m <= max_rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-rows", type=int, default=1_000_000)
    ap.add_argument("--pairs-budget", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rows = []
    for labels in ("real", "k=5"):
        stopped: set[str] = set()
        for m in sizes(args.max_rows):
            data, w_true = make_ranking_data(m, 10, rows_per_group=None, n_levels=None if labels == "real" else 5,
                                             density=0.5, seed=1)
            engine = LocalEngine(data)
            w = w_true * 0.3
            v = np.random.default_rng(2).normal(size=10)
            for method in COUNTING_METHODS:
                if method in stopped or (method == "direct" and labels == "real" and m > 32_768):
                    continue
                l1 = HingeRisk.from_c(engine, 1.0, counting=method)
                l2 = SquaredHingeObjective(engine, 1.0, counting=method)

                def one_l1():
                    l1._cache.clear()
                    l1.risk(w), l1.risk_subgradient(w)

                l2.value(w)
                t1 = best_time(one_l1, args.repeat)
                t2 = best_time(lambda: l2.hessian_vector(w, v), args.repeat)
                rows.append({"labels": labels, "m": m, "method": method, "l1_loss_subgradient_s": t1, "l2_hv_s": t2})
                print(table(rows[-1:], list(rows[-1])).splitlines()[-1], flush=True)
                if max(t1, t2) > args.pairs_budget:
                    stopped.add(method)
    summary = {}
    for labels in ("real", "k=5"):
        for method in COUNTING_METHODS:
            pts = [(r["m"], r["l1_loss_subgradient_s"], r["l2_hv_s"]) for r in rows
                   if r["labels"] == labels and r["method"] == method and r["m"] >= 10_000]
            if len(pts) >= 2:
                ms, t1, t2 = zip(*pts)
                summary[f"{labels} {method}"] = {"growth_l1": growth_exponent(ms, t1), "growth_hv": growth_exponent(ms, t2),
                                                 "m_range": [min(ms), max(ms)]}
        at = {r["method"]: r for r in rows if r["labels"] == labels and r["m"] == 32_768}
        for slow in ("pairs", "prsvm+"):
            if slow in at and "selection" in at:
                summary[f"{labels} speedup selection/{slow} at m=32768"] = {
                    "l1": at[slow]["l1_loss_subgradient_s"] / at["selection"]["l1_loss_subgradient_s"],
                    "hv": at[slow]["l2_hv_s"] / at["selection"]["l2_hv_s"]}
    print()
    print(table(rows, list(rows[0])))
    print()
    for k, v in summary.items():
        print(f"{k}: " + ", ".join(f"{a}={b:.3g}" if isinstance(b, float) else f"{a}={b}" for a, b in v.items()))
    print(f"\nwrote {write_result('kernel_scaling', {'rows': rows, 'summary': summary})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
