"""Train TRON and BMRM on MQ2008 Fold1 and cadata; print iterations, time, objective, test metrics.

    python bench/train_letor.py [--C 1 128]

cadata (one global ranking, 3,842 distinct real labels) is min-max scaled and split 80/20
with a fixed seed.  Writes bench/results/train_letor.json.
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 128.0])
    ap.add_argument("--skip-cadata", action="store_true")
    args = ap.parse_args(argv)
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
