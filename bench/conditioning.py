"""Preconditioned vs plain TRON and NCG: work to reach the optimum on raw and rescaled features.

    python bench/conditioning.py [--max-iter 300] [--max-passes 5000] [--sets mq2008,cadata,sparse]

Data sets (local engine):

* ``mq2008``: LETOR 4.0 MQ2008 Fold1 train (9,630 rows, 46 features, 471 queries), from
  ``../shared/data``;
* ``cadata``: California housing as one global ranking with real-valued labels (the house
  value), a 5,000-row random subset (the exact RankNCG value used to detect the optimum
  costs O(m²) per evaluation on one global ranking);
* ``sparse``: synthetic, 20,000 rows × 2,000 features, 1% non-zeros, groups of ~50, 3 levels.

Each in two versions: ``raw``, and ``scaled`` with every column multiplied by a random factor
10^U(−3, 4) (the units problem of issue 11).  For every solver and variant it reports the
Newton/CG iterations, engine passes (``X·v`` + ``Xᵀc`` passes, diagonal passes included) and
solver seconds until the objective is within 1e-4 (relative) of the optimum ``f*`` (a
preconditioned run to tol 1e-10), or "-" if not within ``--max-iter`` iterations;
and what the default tolerance gives (iterations, relative objective excess).  Objective
checks run in the callback and are not counted in passes or seconds.

The machine is shared, so seconds are noisy; iterations and passes are exact.
Writes bench/results/conditioning.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, table, write_result  # noqa: E402

from sparkrank.data.block import RankingData  # noqa: E402
from sparkrank.io.files import read_ranking_data  # noqa: E402
from sparkrank.datasets import make_ranking_data  # noqa: E402
from sparkrank.engines.local import LocalEngine  # noqa: E402
from sparkrank.training import train, training_objective_value  # noqa: E402

TARGET = 1e-4


class _Reached(Exception):
    pass


class _OverBudget(Exception):
    pass


class BudgetEngine(LocalEngine):
    """A local engine that gives up after ``budget`` passes (plain TRON's CG on rescaled
    features can need thousands per Newton step)."""

    def __init__(self, data, budget: int):
        super().__init__(data)
        self.budget = budget

    def run(self, *args, **kwargs):
        if self.passes >= self.budget:
            raise _OverBudget
        return super().run(*args, **kwargs)


def load_sets(names: list[str]) -> dict:
    sets = {}
    if "mq2008" in names:
        sets["mq2008"] = read_ranking_data(SHARED_DATA / "MQ2008" / "Fold1" / "train.txt")
    if "cadata" in names:
        full = read_ranking_data(SHARED_DATA / "cadata" / "cadata")  # no qid: one global ranking
        keep = np.sort(np.random.default_rng(0).choice(full.n_rows, 5000, replace=False))
        sets["cadata"] = RankingData.from_arrays(full.X[keep].toarray(), full.labels[keep], None)
    if "sparse" in names:
        sets["sparse"] = make_ranking_data(20000, 2000, rows_per_group=50, n_levels=3, density=0.01, seed=7)[0]
    return sets


def rescaled(data, seed: int = 0):
    factors = 10.0 ** np.random.default_rng(seed).uniform(-3.0, 4.0, data.n_features)
    X = (data.X @ sp.diags(factors)).tocsr()
    X.sort_indices()
    return dataclasses.replace(data, X=X)


def run_to_target(data, solver: str, precondition: bool, f_star: float, max_iter: int, budget: int) -> dict:
    """Iterations, passes and seconds until ``f ≤ f*(1 + TARGET)`` (empty if not reached)."""
    engine = BudgetEngine(data, budget)
    value_engine = LocalEngine(data)
    spent = {"callback": 0.0}
    state = {}

    def callback(record):
        if not record.accepted:
            return
        t = time.perf_counter()
        model_passes = engine.passes
        it, f = record.iteration, record.objective
        if not np.isfinite(f):
            f = training_objective_value(dataclasses.replace(_template, weights=record.w.copy()), value_engine)
        spent["callback"] += time.perf_counter() - t
        if f <= f_star * (1 + TARGET):
            state.update(iterations=it, passes=model_passes)
            raise _Reached

    _template = train(data, solver=solver, max_iter=1)  # a model shell for objective values
    t0 = time.perf_counter()
    try:
        train(engine, solver=solver, tol=0.0, max_iter=max_iter, callback=callback,
              solver_options={"precondition": precondition})
    except _Reached:
        state["seconds"] = time.perf_counter() - t0 - spent["callback"]
    except _OverBudget:
        pass
    return state


def default_run(data, solver: str, precondition: bool, f_star: float, budget: int) -> dict:
    try:
        model = train(BudgetEngine(data, budget), solver=solver, solver_options={"precondition": precondition})
    except _OverBudget:
        return {"default_message": f"over {budget} passes"}
    f = training_objective_value(model, LocalEngine(data))
    return {"default_iterations": model.summary["iterations"], "default_excess": (f - f_star) / f_star,
            "default_message": model.summary["message"]}


def optimum(data, solver: str) -> float:
    """``f*``: a preconditioned run to tol 1e-10 (plain runs on rescaled features never get there;
    on unit-scale data both reach the same optimum, tests/test_conditioning.py)."""
    m = train(data, solver=solver, tol=1e-10, max_iter=5000)
    return training_objective_value(m, LocalEngine(data))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-iter", type=int, default=300)
    p.add_argument("--sets", default="mq2008,cadata,sparse")
    p.add_argument("--solvers", default="tron,ncg")
    p.add_argument("--max-passes", type=int, default=5000, help="give up a run after this many engine passes")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    rows = []
    for name, base in load_sets(args.sets.split(",")).items():
        for version, data in (("raw", base), ("scaled", rescaled(base))):
            for solver in args.solvers.split(","):
                f_star = optimum(data, solver)
                for precondition in (True, False):
                    row = {"data": name, "features": version, "solver": solver,
                           "variant": "precond" if precondition else "plain"}
                    row.update(run_to_target(data, solver, precondition, f_star, args.max_iter, args.max_passes))
                    row.update(default_run(data, solver, precondition, f_star, args.max_passes))
                    rows.append(row)
                    print(row, flush=True)
    columns = ["data", "features", "solver", "variant", "iterations", "passes", "seconds",
               "default_iterations", "default_excess"]
    print(f"\nto reach f* (1 + {TARGET:g}) (- = not within {args.max_iter} iterations or {args.max_passes} passes); "
          "default = the default tolerance's run, excess = (f − f*)/f*")
    print(table(rows, columns))
    for name in sorted({r["data"] for r in rows}):
        for version in ("raw", "scaled"):
            for solver in args.solvers.split(","):
                sel = {r["variant"]: r for r in rows if (r["data"], r["features"], r["solver"]) == (name, version, solver)}
                if sel.get("precond", {}).get("passes") and sel.get("plain", {}).get("passes"):
                    print(f"{name} {version} {solver}: plain/precond passes = "
                          f"{sel['plain']['passes'] / sel['precond']['passes']:.2f}")
    name = "conditioning" if args.sets == p.get_default("sets") else "conditioning-" + args.sets.replace(",", "-")
    print(f"wrote {write_result(name, {'target': TARGET, 'max_iter': args.max_iter, 'max_passes': args.max_passes, 'rows': rows})}")


if __name__ == "__main__":
    main()
