"""Per-iteration cost of the Spark engine against the local engine (TRON, L2-loss RankSVM).

    python bench/spark_overhead.py [--sizes 100000 1000000] [--no-sparse] [--master local[2]]

Sets (float32 features, ~120 rows per query, 5 grades): m rows × 136 dense features for
each ``--sizes`` entry, and 1M × 50,000 sparse with 50 non-zeros per row.  For each set and
engine (local; Spark executor placement; Spark driver placement) it times one
function+gradient pass at a fresh w, one Hessian-vector pass, and TRON's wall time per
iteration (and the CPU seconds of this process, the JVM and the Python workers per
iteration) over ``--iterations`` iterations from w = 0 (the engines take identical steps,
since their sums agree bit for bit, so per-iteration times compare like for like).  Prints
the table and the Spark / local ratios; writes bench/results/spark_overhead.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import best_time, table, tree_cpu_seconds, write_result  # noqa: E402
from _synthetic import synthetic_parquet  # noqa: E402

from sparkrank.io.files import read_parquet  # noqa: E402
from sparkrank.engines.local import LocalEngine  # noqa: E402
from sparkrank.objectives.ranksvm import SquaredHingeObjective  # noqa: E402
from sparkrank.solvers.tron import tron  # noqa: E402

C = 1e-3


def measure(engine, n_features: int, iterations: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    v = rng.normal(size=n_features) * 1e-2
    objective = SquaredHingeObjective(engine, C)

    def fresh_pass():
        w = rng.normal(size=n_features) * 1e-2  # a new point: no cached pass to reuse
        objective.value(w)
        objective.gradient(w)

    t_fg = best_time(fresh_pass, repeat)
    w = rng.normal(size=n_features) * 1e-2
    objective.value(w)
    t_hv = best_time(lambda: objective.hessian_vector(w, v), repeat)
    cpu0 = tree_cpu_seconds()
    result = tron(SquaredHingeObjective(engine, C), tol=1e-12, max_iter=iterations)
    cpu = tree_cpu_seconds() - cpu0
    cg = sum(r["cg_iter"] for r in result.history)
    iters = max(result.iterations, 1)
    return {"f+g_s": t_fg, "Hv_s": t_hv, "tron_iters": result.iterations, "cg_steps": cg,
            "s_per_iter": result.seconds / iters, "cpu_s_per_iter": cpu / iters, "objective": result.objective}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--no-sparse", action="store_true", help="skip the 1M x 50,000 sparse set")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=5, help="TRON iterations timed per engine")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from sparkrank.engines.spark.engine import SparkEngine
    from sparkrank.io.spark.session import get_session

    spark = get_session(args.master, conf={"spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("ERROR")
    sets = [(f"{m:.0e} x 136 dense", m, 136, None) for m in args.sizes]
    if not args.no_sparse:
        sets.append(("1e+06 x 50000 sparse(50)", 1_000_000, 50_000, 50))
    rows = []
    for name, m, n, nnz in sets:
        path = synthetic_parquet(m, n, nnz_per_row=nnz)
        data = read_parquet(path, dtype=np.float32, n_features=n)
        local = measure(LocalEngine(data), n, args.iterations, args.repeat)
        rows.append({"set": name, "engine": "local", "build_s": 0.0, **local})
        print(table(rows[-1:], list(rows[-1])), flush=True)
        del data
        for placement in ("executor", "driver"):
            t0 = time.perf_counter()
            engine = SparkEngine(spark.read.parquet(str(path)), placement=placement, num_partitions=args.partitions,
                                 dtype=np.float32, n_features=n)
            build = time.perf_counter() - t0
            try:
                r = measure(engine, n, args.iterations, args.repeat)
            finally:
                engine.close()
            assert r["tron_iters"] == local["tron_iters"] and r["cg_steps"] == local["cg_steps"], (r, local)
            rows.append({"set": name, "engine": f"spark-{placement}", "build_s": build, **r,
                         "ratio_iter": r["s_per_iter"] / local["s_per_iter"],
                         "ratio_fg": r["f+g_s"] / local["f+g_s"], "ratio_hv": r["Hv_s"] / local["Hv_s"],
                         "ratio_cpu": r["cpu_s_per_iter"] / local["cpu_s_per_iter"]})
            print(table(rows[-1:], list(rows[-1])).splitlines()[-1], flush=True)
    cols = ["set", "engine", "build_s", "f+g_s", "Hv_s", "tron_iters", "cg_steps", "s_per_iter",
            "cpu_s_per_iter", "ratio_fg", "ratio_hv", "ratio_iter", "ratio_cpu"]
    print()
    print(table(rows, cols))
    print("\nSpark / local per TRON iteration:")
    for r in rows:
        if "ratio_iter" in r:
            print(f"  {r['set']:>26}  {r['engine']:>15}: {r['ratio_iter']:.2f}x wall, {r['ratio_cpu']:.2f}x CPU")
    print(f"\nwrote {write_result('spark_overhead', {'master': args.master, 'partitions': args.partitions, 'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
