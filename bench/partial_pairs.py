"""All pairs against adjacent-level pairs, each with C selected on validation (lee-lin2014 Table 10).

    python bench/partial_pairs.py [--C-range -18 4]

TRON (L2-loss RankSVM) on MQ2008 Fold1 (train / vali / test; 3 grades) and on cadata as one
ranking (3,842 real-valued labels; min-max scaled, cut 60/20/20 at random, seed 0): for each
pair rule (``--pairs all`` and ``--pairs adjacent``: only the pairs whose upper row is on the
next label level above the lower row's, lee-lin2014 §5), ``tune`` selects ``C`` from 2^LOW ..
2^HIGH by validation pairwise accuracy; the model is trained again at that ``C`` from w = 0
(the training time the table shows) and scored on the test set by pairwise accuracy over
**all** pairs.  Prints the table (selected C, training pairs, time, iterations, test pairwise
accuracy) and the accuracy and time of adjacent pairs relative to all pairs; writes
bench/results/partial_pairs.json.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import table, write_result  # noqa: E402
from _ranking_sets import CADATA, MQ2008, cadata_parts, mq2008  # noqa: E402

from sparkrank.evaluation.kernel import pairwise_accuracy  # noqa: E402
from sparkrank.selection import tune  # noqa: E402
from sparkrank.training import train  # noqa: E402


def data_sets():
    """``(name, train, validation, test)`` of the sets that are there."""
    if MQ2008.exists():
        yield "MQ2008 Fold1", mq2008("train"), mq2008("vali"), mq2008("test")
    if CADATA.exists():
        yield "cadata (one ranking)", *cadata_parts()


def compare(name, train_data, valid, test, grid) -> list[dict]:
    rows = []
    for rule in ("all", "adjacent"):
        options = {"pairs": rule}
        search = tune(train_data, valid=valid, C_grid=grid, solver="tron", solver_options=options, refit=False)
        model = train(train_data, solver="tron", C=search.best_C, solver_options=options)
        rows.append({
            "data": name, "pairs": rule, "C": f"2^{round(math.log2(search.best_C))}",
            "training_pairs": model.summary.get("training_pairs", model.summary["n_pairs"]),
            "train_s": model.summary["seconds"], "iterations": model.summary["iterations"],
            "valid_pairwise_accuracy": search.best_row.metric,
            "test_pairwise_accuracy": pairwise_accuracy(test.groups, model.predict(test)),
        })
        print(table(rows[-1:], list(rows[-1])).splitlines()[-1], flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--C-range", dest="C_range", type=int, nargs=2, default=(-18, 4), metavar=("LOW", "HIGH"))
    args = ap.parse_args(argv)
    grid = [2.0 ** e for e in range(args.C_range[0], args.C_range[1] + 1)]
    rows, summary = [], {}
    for name, train_data, valid, test in data_sets():
        both = compare(name, train_data, valid, test, grid)
        rows += both
        every, adjacent = both
        summary[name] = {
            "test_accuracy_adjacent_minus_all": adjacent["test_pairwise_accuracy"] - every["test_pairwise_accuracy"],
            "train_time_adjacent/all": adjacent["train_s"] / every["train_s"],
            "pairs_adjacent/all": adjacent["training_pairs"] / every["training_pairs"],
        }
    print()
    print(table(rows, list(rows[0])))
    print()
    for name, facts in summary.items():
        print(f"{name}: " + ", ".join(f"{k}={v:.4g}" for k, v in facts.items()))
    print(f"\nwrote {write_result('partial_pairs', {'C_grid': grid, 'rows': rows, 'summary': summary})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
