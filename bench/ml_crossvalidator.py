"""The CrossValidator examples of docs/pyspark-ml.md against ``sparkrank tune`` with the same
grid and folds.

    python bench/ml_crossvalidator.py [--data DIR] [--master local[2]] [--engine auto]
                                      [--parallelism 1] [--repeat 2] [--conf KEY=VALUE ...]
                                      [--tune-on-master]

On MQ2008 Fold1's training rows (9,630 rows, 471 queries, 46 features), written once to Parquet
as ``label, qid, f1..f46`` (the docs examples' layout), it times:

* **tune**: ``sparkrank tune --feature-cols f1..f46 --folds 3 --C-grid 2^-6..2^2 --metric
  ndcg@10 --model M`` on that Parquet, the whole process (interpreter start and imports included);
* **CrossValidator, LinearRanker on an array** (the docs' first example): ``LinearRanker(solver=
  "tron", standardization="standard")`` as the estimator on the named columns as one
  ``array<double>`` column (``F.array``, read as dense rows: the layout ``tune --feature-cols``
  reads), the same 9 C, 3 group folds (``with_group_folds``), ``RankingEvaluator(ndcg@10)``, the
  refit of the best C -- ``CrossValidator`` calls ``LinearRanker.fitMultiple`` (warm starts along
  the C path) -- timed as ``cv.fit`` on a ``SparkSession`` of ``--master`` (the session's start-up
  is timed apart);
* **CrossValidator, LinearRanker on the vector**: the same on ``VectorAssembler``'s vector column
  (read as CSR);
* **CrossValidator, docs Pipeline**: the docs' ``Pipeline([VectorAssembler, LinearRanker])``
  example, where ``CrossValidator`` calls the pipeline's ``fit`` per map;
* **CrossValidator, the same as RankingPipeline**: ``sparkrank.ml.RankingPipeline`` with the same
  stages, whose ``fitMultiple`` fits the assembler once per fold and hands the ranker the grid.

``tune`` has no ``--standardization``, so it trains on the raw columns (on MQ2008 TRON needs
more iterations there than on standardized ones: the CrossValidator rows do somewhat less solver
work; their overhead is Spark's: CrossValidator's fold jobs, one job per fold's training and
validation rows).  Prints the table and each row's ratio to tune (issue 38's target: at most 2x)
and writes
``bench/results/ml_crossvalidator_p<parallelism>.json`` (``_standalone_p<parallelism>`` on a
``spark://`` master).

On a standalone master (``--master spark://HOST:PORT``) the session is a plain one whose
executors get this interpreter through ``PYSPARK_PYTHON``, as the README shows (the workers need
nothing on their ``PATH``).  The ratio that counts is still the CrossValidator form against
``tune`` in one process, the fastest way to the same model; ``--tune-on-master`` adds a row for
``sparkrank tune --master`` (the command line on the same cluster: the Spark engine for every
fit, session start-up included; minutes on a 2-core machine).  ``--conf`` settings go to the
session and to ``tune --master`` (e.g. ``spark.driver.host=127.0.0.1``; ``SPARK_LOCAL_IP`` does
that on one host).  numba's cache and the session's Python
workers are warmed first (not timed); the rows then run interleaved ``--repeat`` times and each
reports its best, because the machine is shared: the ratio is steadier than the seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, spark_setting, table, write_result  # noqa: E402

GRID = tuple(2.0 ** k for k in range(-6, 3))  # the docs example's grid
FOLDS = 3
METRIC = "ndcg@10"


def default_data() -> Path:
    """MQ2008 Fold1 in the shared data folder (beside the checkout, or of a worktree's parent)."""
    for base in (SHARED_DATA, Path("/work/shared/data")):
        if (base / "MQ2008" / "Fold1").is_dir():
            return base / "MQ2008" / "Fold1"
    return SHARED_DATA / "MQ2008" / "Fold1"


def write_named_columns(train_txt: str, out: str) -> int:
    """The SVMlight rows as Parquet ``label, qid, f1..fn`` (one double column per feature);
    returns n."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import numpy as np

    from sparkrank import load_svmlight

    data = load_svmlight(train_txt, layout="dense")
    X = np.asarray(data.X.toarray() if hasattr(data.X, "toarray") else data.X, dtype=np.float64)
    qid = np.repeat(np.asarray(data.qids, dtype=np.int64), data.groups.group_sizes)
    cols = {"label": pa.array(np.asarray(data.labels, dtype=np.float64)), "qid": pa.array(qid)}
    cols.update({f"f{j + 1}": pa.array(X[:, j]) for j in range(X.shape[1])})
    pq.write_table(pa.table(cols), out)
    return X.shape[1]


def run_tune(parquet: str, n_features: int, model: str, spark_args: tuple[str, ...] = ()) -> tuple[float, float]:
    """``(wall seconds, best C)`` of ``sparkrank tune`` in a fresh process, as a user runs it
    (``spark_args``: ``--master URL --conf K=V ...`` for the command line on a cluster)."""
    import json

    out = model + ".tune.json"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sparkrank", "tune", "--input", parquet, "--format", "parquet",
                    "--feature-cols", *[f"f{j + 1}" for j in range(n_features)], "--folds", str(FOLDS),
                    "--C-grid", *map(repr, GRID), "--metric", METRIC, "--model", model, "--output-json", out,
                    "-q", *spark_args], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t
    return seconds, float(json.loads(Path(out).read_text())["best_C"])


#: The estimators timed (the module docstring): the ranker on the named columns as one array column
#: (the docs' first example), the ranker on VectorAssembler's vector, and the docs' Pipeline.
VARIANTS = {
    "array": "CrossValidator, LinearRanker on an array",
    "vector": "CrossValidator, LinearRanker on the vector",
    "pipeline": "CrossValidator, docs Pipeline",
    "ranking_pipeline": "CrossValidator, the same as RankingPipeline",
}


def cross_validate(spark, parquet: str, n_features: int, engine: str, variant: str,
                   parallelism: int) -> tuple[float, float]:
    """``(seconds of cv.fit, best C)`` of one of :data:`VARIANTS`."""
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder
    from pyspark.sql import functions as F

    from sparkrank.ml import LinearRanker, RankingEvaluator, RankingPipeline, release_blocks, with_group_folds

    df = spark.read.parquet(parquet)
    names = [f"f{i}" for i in range(1, n_features + 1)]
    assembler = VectorAssembler(inputCols=names, outputCol="features")
    ranker = LinearRanker(groupCol="qid", solver="tron", standardization="standard", engine=engine)
    pipeline = {"pipeline": Pipeline, "ranking_pipeline": RankingPipeline}.get(variant)
    estimator = ranker if pipeline is None else pipeline(stages=[assembler, ranker])
    data = {"pipeline": df, "ranking_pipeline": df, "vector": assembler.transform(df),  # (lazy: only one runs)
            "array": df.select("label", "qid", F.array(*names).alias("features"))}[variant]
    grid = ParamGridBuilder().addGrid(ranker.C, list(GRID)).build()
    cv = CrossValidator(estimator=estimator, estimatorParamMaps=grid, parallelism=parallelism,
                        evaluator=RankingEvaluator(metricName=METRIC, groupCol="qid"),
                        numFolds=FOLDS, foldCol="fold")
    t = time.perf_counter()
    best = cv.fit(with_group_folds(data, "qid", numFolds=FOLDS)).bestModel
    seconds = time.perf_counter() - t
    release_blocks()
    fitted = best if pipeline is None else best.stages[-1]
    return seconds, float(fitted.getOrDefault(fitted.C))


def start_session(master: str, conf: list[tuple[str, str]]):
    """A plain session of ``master`` (UI off, quiet), its executors on this interpreter through
    ``PYSPARK_PYTHON`` as the README shows; ``(session, seconds to start it)``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    t = time.perf_counter()
    builder = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in conf:
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(default_data()), help="a LETOR fold folder with train.txt")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--engine", default="auto", choices=("auto", "local", "spark"))
    ap.add_argument("--parallelism", type=int, default=1, help="CrossValidator(parallelism=...)")
    ap.add_argument("--repeat", type=int, default=2, help="interleaved runs of each row (the best is reported)")
    ap.add_argument("--conf", type=spark_setting, action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting of the session and of tune --master (repeatable)")
    ap.add_argument("--tune-on-master", action="store_true", help="also time sparkrank tune --master MASTER")
    args = ap.parse_args(argv)
    cluster = not args.master.startswith("local")
    cluster_tune = ("--master", args.master, *[a for k, v in args.conf for a in ("--conf", f"{k}={v}")])

    with tempfile.TemporaryDirectory() as tmp:
        parquet = str(Path(tmp) / "train.parquet")
        n_features = write_named_columns(str(Path(args.data) / "train.txt"), parquet)
        run_tune(parquet, n_features, str(Path(tmp) / "warm.json"))  # numba's cache filled once, not timed
        # the command line on the cluster first: the session below holds every core of the cluster
        # (a standalone master gives an application all it has), so a second application would wait
        cluster_tunes = [run_tune(parquet, n_features, str(Path(tmp) / "ctuned.json"), cluster_tune)
                         for _ in range(args.repeat if cluster and args.tune_on_master else 0)]
        spark, session_s = start_session(args.master, args.conf)
        cross_validate(spark, parquet, n_features, args.engine, "array", args.parallelism)  # warm-up, not timed
        # interleaved repeats: the machine is shared, so each row gets its best of the same moments
        tunes, runs = [], {v: [] for v in VARIANTS}
        for _ in range(args.repeat):
            tunes.append(run_tune(parquet, n_features, str(Path(tmp) / "tuned.json")))
            for variant in VARIANTS:
                runs[variant].append(cross_validate(spark, parquet, n_features, args.engine, variant,
                                                    args.parallelism))
        spark.stop()

    tune_s, tune_c = min(tunes)
    rows = [dict(what="sparkrank tune (whole process)", seconds=tune_s, best_C=tune_c, ratio=1.0)]
    if cluster_tunes:
        s, c = min(cluster_tunes)
        rows.append(dict(what="sparkrank tune --master (whole process)", seconds=s, best_C=c, ratio=s / tune_s))
    best = {v: min(r) for v, r in runs.items()}
    for variant, label in VARIANTS.items():
        seconds, best_c = best[variant]
        rows.append(dict(what=f"{label} (cv.fit)", seconds=seconds, best_C=best_c, ratio=seconds / tune_s))
    rows.append(dict(what="SparkSession start-up (not in cv.fit)", seconds=session_s))
    print(table(rows, ["what", "seconds", "best_C", "ratio"]))
    ratio = best["array"][0] / tune_s
    print(f"docs CrossValidator (first example) / tune: {ratio:.2f}x (target <= 2x); through the Pipeline: "
          f"{best['pipeline'][0] / tune_s:.2f}x, RankingPipeline: {best['ranking_pipeline'][0] / tune_s:.2f}x; "
          f"{len(GRID)} C x {FOLDS} folds + refit, {args.master}, "
          f"engine={args.engine}, parallelism={args.parallelism}, best of {args.repeat}")
    payload = dict(master=args.master, engine=args.engine, parallelism=args.parallelism, grid=list(GRID),
                   folds=FOLDS, metric=METRIC, repeat=args.repeat, tune_seconds=tune_s, tune_best_C=tune_c,
                   session_seconds=session_s, ratio=ratio, conf=dict(args.conf),
                   all_seconds={"tune": [s for s, _ in tunes], **{v: [s for s, _ in r] for v, r in runs.items()}})
    if cluster_tunes:
        payload["all_seconds"]["tune_master"] = [s for s, _ in cluster_tunes]
        payload["tune_master_seconds"], payload["tune_master_best_C"] = min(cluster_tunes)
    for variant in VARIANTS:
        payload[f"{variant}_seconds"], payload[f"{variant}_best_C"] = best[variant]
        payload[f"{variant}_ratio"] = best[variant][0] / tune_s
    name = f"ml_crossvalidator_{'standalone_' if cluster else ''}p{args.parallelism}"
    path = write_result(name, payload)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
