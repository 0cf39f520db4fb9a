"""What group-wise k-fold costs on Spark before the first fit: fold views against engines per part.

    python bench/tune_folds.py [--rows 1000000] [--folds 3] [--master local[2]] [--tune]

On a synthetic Parquet set (``bench/_synthetic``: m rows × 136 float32 features, ~120 rows per
query, 5 grades) it builds the engines of a k-fold search both ways and times them:

* **views** (what ``sparkrank tune --folds k`` does): the engine over all rows (which also
  serves the refit), the fold-size check, then each fold's training and held-out parts as fold
  views, cut from its blocks on the executors (``sparkrank/engines/spark_folds.py``);
* **per-part engines** (what it did before): 2k + 1 engines, each reading, decoding and
  shuffling the source filtered by the fold rule (``spark_group_fold``), and the refit's.

It checks that each view holds the rows of its filtered twin (the same rows, groups and pairs),
prints the table and the ratio per-part / views, and with ``--tune`` also times a whole
``tune`` (TRON, two values of C) on the views.  Writes ``bench/results/tune_folds.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import table, tree_cpu_seconds, write_result  # noqa: E402
from _synthetic import synthetic_parquet  # noqa: E402


def timed(fn):
    t, cpu = time.perf_counter(), tree_cpu_seconds()
    out = fn()
    return out, time.perf_counter() - t, tree_cpu_seconds() - cpu


def sizes(engine) -> tuple[int, int, int]:
    s = engine.summary
    return s.n_rows, s.n_groups, s.n_pairs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--tune", action="store_true", help="also time a whole tune (TRON, C in {0.001, 0.01}) on the views")
    args = ap.parse_args(argv)

    import numpy as np

    from sparkrank.engines.spark.engine import SparkEngine
    from sparkrank.engines.spark.folds import check_spark_folds, fold_views, spark_group_fold
    from sparkrank.selection import SparkSource, tune
    from sparkrank.io.spark.session import get_session

    spark = get_session(args.master, conf={"spark.driver.memory": args.driver_memory})
    spark.sparkContext.setLogLevel("ERROR")
    path = synthetic_parquet(args.rows, args.features)
    df = spark.read.parquet(str(path))
    k, seed = args.folds, 0
    options = dict(num_partitions=args.partitions, placement="executor", dtype=np.float32)

    def engine(frame):
        return SparkEngine(frame, label_col="label", qid_col="qid", features_col="features", **options)

    # warm-up: the Python workers import sparkrank and load the numba kernels once
    engine(df.limit(1000)).close()

    def with_views():
        whole = engine(df)
        check_spark_folds(whole, k, seed)
        parts = [fold_views(whole, k, i, seed) for i in range(k)]
        return whole, parts

    (whole, views), t_views, cpu_views = timed(with_views)

    def per_part():
        fold = spark_group_fold("qid", k, seed)
        parts = [(engine(df.filter(fold != i)), engine(df.filter(fold == i))) for i in range(k)]
        return engine(df), parts

    (refit, filtered), t_filtered, cpu_filtered = timed(per_part)
    try:
        for (tv, vv), (tf, vf) in zip(views, filtered):
            assert sizes(tv) == sizes(tf) and sizes(vv) == sizes(vf), "a view differs from its filtered twin"
    finally:
        for pair in filtered:
            for e in pair:
                e.close()
        refit.close()
        for pair in views:
            for e in pair:
                e.close()
        whole.close()

    row = {"rows": args.rows, "folds": k, "partitions": args.partitions,
           "views_s": t_views, "views_cpu_s": cpu_views, "source_reads_views": 1,
           "per_part_s": t_filtered, "per_part_cpu_s": cpu_filtered, "source_reads_per_part": 2 * k + 1,
           "ratio_per_part_over_views": t_filtered / t_views}
    if args.tune:
        src = SparkSource(df, engine_options=options)
        result, t_tune, _ = timed(lambda: tune(src, folds=k, C_grid=[0.001, 0.01], tol=1e-3, seed=seed))
        row.update({"tune_s": t_tune, "tune_best_C": result.best_C})
    print(table([row], list(row)))
    print(f"\nbuilding the parts of {k}-fold: {t_filtered / t_views:.2f}x faster as fold views "
          f"(1 source read instead of {2 * k + 1})")
    print(f"wrote {write_result('tune_folds', {'master': args.master, 'rows': [row]})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
