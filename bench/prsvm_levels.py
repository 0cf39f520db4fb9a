"""PRSVM+ against Tree-TRON as the number of relevance levels grows (lee-lin2014 Figures 5-6).

    python bench/prsvm_levels.py [--rows 20000]

TRON (L2-loss RankSVM, C = 2^-10) trained twice on each set, with ``--counting selection``
(Tree-TRON, the default) and ``--counting prsvm+`` (lee-lin2014 §3.1: every level against the
rows above it, ``O(levels x rows)`` per pass instead of ``O(rows log levels)``):

* MQ2008 Fold1 train (3 grades per query: Figure 5's few levels) and cadata (one ranking of
  3,842 real-valued labels, min-max scaled: Figure 6's many levels), when the shared data is
  there;
* one synthetic global ranking of ``--rows`` rows with 2, 5, 50, 500 levels and real labels.

Both counting methods take the same Newton and CG steps (the counts are equal, the sums equal
to rounding), so the time ratio prsvm+/selection is the cost of a pass.  Prints a table with
the levels, iterations, seconds, the relative objective difference and the ratio; writes
bench/results/prsvm_levels.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import table, write_result  # noqa: E402
from _ranking_sets import CADATA, MQ2008, cadata_parts, mq2008  # noqa: E402

from sparkrank.datasets import make_ranking_data  # noqa: E402
from sparkrank.training import train  # noqa: E402


def data_sets(rows: int):
    """``(name, data, C)`` of every set the bench trains on."""
    if MQ2008.exists():
        yield "MQ2008 Fold1 train", mq2008("train"), 2.0 ** -10
    if CADATA.exists():
        yield "cadata 60% (one ranking)", cadata_parts()[0], 2.0 ** -10
    for levels in (2, 5, 50, 500, None):
        data, _ = make_ranking_data(rows, 10, rows_per_group=None, n_levels=levels, density=0.5, seed=1)
        yield f"synthetic {rows} rows, {'real' if levels is None else levels} levels", data, 2.0 ** -10


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=20_000)
    args = ap.parse_args(argv)
    train(make_ranking_data(500, 10, rows_per_group=None, n_levels=None, seed=0)[0], counting="prsvm+")  # compile
    rows = []
    for name, data, C in data_sets(args.rows):
        fits = {m: train(data, solver="tron", C=C, counting=m) for m in ("selection", "prsvm+")}
        tree, levels = fits["selection"].summary, fits["prsvm+"].summary
        rows.append({
            "data": name, "rows": data.n_rows, "levels/query (max)": int(data.groups.n_levels.max()),
            "C": C, "iterations": f"{tree['iterations']}/{levels['iterations']}",
            "tree_tron_s": tree["seconds"], "prsvm+_s": levels["seconds"],
            "objective_rel_diff": abs(tree["objective"] - levels["objective"]) / abs(tree["objective"]),
            "ratio prsvm+/tree": levels["seconds"] / tree["seconds"],
        })
        print(table(rows[-1:], list(rows[-1])).splitlines()[-1], flush=True)
    print()
    print(table(rows, list(rows[0])))
    print(f"\nwrote {write_result('prsvm_levels', {'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
