"""The README's CrossValidator example against ``sparkrank tune`` with the same grid and folds.

    python bench/ml_crossvalidator.py [--data DIR] [--master local[2]] [--engine auto]

On MQ2008 Fold1's training rows (9,630 rows, 471 queries, 46 features; converted once to
Parquet by ``sparkrank convert``) it times:

* **tune**: ``sparkrank tune --folds 3 --C-grid 0.01 0.1 1 --metric ndcg@10 --model M``
  (TRON, standardized features), the whole process;
* **CrossValidator**: the README's pyspark.ml example -- ``LinearRanker(standardization=
  "standard")``, the same C grid, 3 group folds (``with_group_folds``), ``RankingEvaluator
  (ndcg@10)``, refit of the best C -- on a ``SparkSession`` of ``--master``; the session's
  start-up is timed apart from ``cv.fit``.

Prints the table and the ratio CrossValidator / tune (issue 38's target: at most 2x), writes
``bench/results/ml_crossvalidator.json``.  The machine is shared: the ratio is steadier than the
seconds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, table, write_result  # noqa: E402

GRID = (0.01, 0.1, 1.0)
FOLDS = 3


def sparkrank(*args: str) -> float:
    """Wall seconds of one ``sparkrank`` command (a fresh process, as a user runs it)."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sparkrank", *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def cross_validate(spark, parquet: str, engine: str) -> tuple[float, float]:
    """``(seconds, best C)`` of the README's example on ``parquet``."""
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkrank.ml import LinearRanker, RankingEvaluator, release_blocks, with_group_folds

    t = time.perf_counter()
    df = spark.read.parquet(parquet)
    ranker = LinearRanker(groupCol="qid", solver="tron", standardization="standard", engine=engine)
    grid = ParamGridBuilder().addGrid(ranker.C, list(GRID)).build()
    cv = CrossValidator(estimator=ranker, estimatorParamMaps=grid, numFolds=FOLDS, foldCol="fold",
                        evaluator=RankingEvaluator(metricName="ndcg@10", groupCol="qid"))
    best = cv.fit(with_group_folds(df, "qid", numFolds=FOLDS)).bestModel
    seconds = time.perf_counter() - t
    release_blocks()
    return seconds, float(best.getOrDefault(best.C))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(SHARED_DATA / "MQ2008" / "Fold1"))
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--engine", default="auto", choices=("auto", "local", "spark"))
    args = ap.parse_args(argv)
    train_txt = str(Path(args.data) / "train.txt")

    with tempfile.TemporaryDirectory() as tmp:
        parquet = str(Path(tmp) / "train.parquet")
        sparkrank("convert", "--input", train_txt, "--output", parquet, "-q")
        tune_s = sparkrank("tune", "--input", train_txt, "--folds", str(FOLDS), "--C-grid", *map(str, GRID),
                           "--metric", "ndcg@10", "--standardization", "standard",
                           "--model", str(Path(tmp) / "tuned.json"), "-q")
        import os

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        t = time.perf_counter()
        spark = SparkSession.builder.master(args.master).getOrCreate()
        session_s = time.perf_counter() - t
        cv_s, best_c = cross_validate(spark, parquet, args.engine)
        spark.stop()

    rows = [dict(what="sparkrank tune (whole process)", seconds=tune_s),
            dict(what=f"CrossValidator, engine={args.engine} (cv.fit)", seconds=cv_s),
            dict(what="SparkSession start-up", seconds=session_s)]
    print(table(rows, ["what", "seconds"]))
    ratio = cv_s / tune_s
    print(f"CrossValidator / tune: {ratio:.2f}x (target <= 2x); best C {best_c:g}; "
          f"{len(GRID)} C x {FOLDS} folds + refit, {args.master}")
    path = write_result("ml_crossvalidator", dict(master=args.master, engine=args.engine, grid=list(GRID),
                                                  folds=FOLDS, tune_seconds=tune_s, cv_seconds=cv_s,
                                                  session_seconds=session_s, ratio=ratio, best_C=best_c))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
