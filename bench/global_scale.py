"""One global ranking on the Spark engine: driver placement against range placement as m grows.

    python bench/global_scale.py [--sizes 1000000 3000000] [--labels graded real] [--features 50]
                                 [--hashed] [--master local[2] | --workers N] [--passes 3] [--max-iter 3]
                                 [--ranges R] [--in-process]

For each size and label kind (``graded``: 5 levels; ``real``: real-valued utilities, nearly all
distinct): write (once) a Parquet set of dense float32 rows without query ids, build the Spark
blocks in each placement (the same blocks: rows in file order), and measure, per placement,
the median of ``--passes`` passes of each of TRON's kinds (value pass with the preconditioner's
weights, kept for the Hessian; Hessian-vector pass at it) and of BMRM's (the L1 hinge), in driver
placement also the serial part of TRON's (``*_serial_s``: the pass less its products job), then an
end-to-end TRON fit of ``--max-iter`` iterations, and the peak resident memory of the driver's
Python process (the one that holds the gathered scores in driver placement) above what it held
before the build.  Prints the tables, each placement's growth exponent of the per-pass time in
m, the range/driver ratio per size (the ratio that matters: at most 1 is the goal), and a short
extrapolation to 10^8-10^9 rows from the measured per-row costs (which term dominates); writes
bench/results/global_scale_<labels>.json.  ``--workers N`` runs on a standalone cluster of N
workers started for the run on 127.0.0.1 (``bench/_cluster.py``; ``_clusterN`` in the file name),
and ``tree_peak_rss_gb`` then includes its executors.  ``--hashed``: hashed sparse rows instead
(2²⁴ feature ids, 40 non-zeros a row, 5 grades: ``bench/scale.py --hashed``'s set read without its
query ids, so one ranking; graded labels only; ``global_scale_hashed`` in the file name).
``--in-process``: also the in-process engine (``LocalEngine``, all cores) on the same rows, read by
``read_ranking_data`` as one ranking: its passes, its fit, and its weights against driver placement's.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _cluster import add_cluster_options, cluster_from_options  # noqa: E402
from _common import RESULTS, growth_exponent, table, write_result  # noqa: E402
from _tree_memory import TreeMemorySampler  # noqa: E402
from sparkrank.data.memory import DRIVER_ROW_BYTES  # noqa: E402

DATA_DIR = RESULTS / "data"


def global_parquet(n_rows: int, n_features: int, labels: str, chunk: int = 250_000, seed: int = 0) -> Path:
    """A Parquet file of one global ranking: ``label`` and float32 ``features`` (no query ids);
    labels 5 grades at quantiles (``graded``) or the noisy utility itself (``real``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = DATA_DIR / f"global_{n_rows}x{n_features}_{labels}_s{seed}.parquet"
    if path.exists():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=n_features)
    edges, writer, tmp = None, None, path.with_suffix(".tmp")
    for start in range(0, n_rows, chunk):
        n = min(chunk, n_rows - start)
        X = rng.random((n, n_features), dtype=np.float32)
        signal = X @ w_true
        utility = signal + 0.5 * signal.std() * rng.normal(size=n)
        if edges is None:
            edges = np.quantile(utility, np.linspace(0, 1, 6)[1:-1])
        y = np.searchsorted(edges, utility).astype(np.float64) if labels == "graded" else utility.astype(np.float64)
        table_ = pa.table({"label": pa.array(y), "features": pa.FixedSizeListArray.from_arrays(
            pa.array(X.ravel()), n_features).cast(pa.list_(pa.float32()))})
        if writer is None:
            writer = pq.ParquetWriter(str(tmp), table_.schema)
        writer.write_table(table_)
    writer.close()
    tmp.rename(path)
    return path


def _anon_bytes() -> int:
    """This process's anonymous resident memory now (``/proc/self/status``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def _median_seconds(fn, passes: int, parallel: list[float] | None = None) -> tuple[float, float]:
    """Median seconds of ``passes`` calls of ``fn``, and the median of the seconds of each call
    that ``parallel`` grew by (the timed products jobs of :func:`_timing_products`; 0 without)."""
    seconds, inside = [], []
    for _ in range(passes):
        mark = len(parallel) if parallel is not None else 0
        t = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - t)
        inside.append(sum(parallel[mark:]) if parallel is not None else 0.0)
    return float(np.median(seconds)), float(np.median(inside))


def _timing_products(engine) -> list[float]:
    """Driver placement: time every job that sums a pass's products (``Xᵀc`` and the moments over
    the blocks, on the executors) into the returned list, so that the rest of a pass, gathering the
    scores and the driver's sort and count, is its serial part.  Wraps the engine's own method: a
    measurement of this bench, not an interface."""
    spent: list[float] = []
    products = engine._driver_products

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return products(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - t)

    engine._driver_products = timed
    return spent


#: ``--hashed``: the feature space and the non-zeros a row.
HASHED_FEATURES, HASHED_NNZ = 1 << 24, 40


def hashed_global_parquet(n_rows: int) -> Path:
    """``bench/scale.py --hashed``'s Parquet set of ``n_rows`` (made once, cached); read without
    its ``qid`` column it is one global ranking."""
    from _synthetic import synthetic_parquet

    return synthetic_parquet(n_rows, HASHED_FEATURES, nnz_per_row=HASHED_NNZ, rows_per_group=50)


def measure(spark, path: Path, placement: str, args, roots: list[int]) -> dict:
    """Build, per-pass medians, an end-to-end fit and the driver's peak for one placement
    (``roots``: more processes whose trees count in the tree's peak: a cluster's workers)."""
    from sparkrank.engines.spark import SparkEngine
    from sparkrank.kernels.losses import HingeKernel, SquaredHingeDiagonalKernel, SquaredHingeHessianKernel
    from sparkrank.training import train

    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.05, size=args.features)  # scores spread over a few margins
    v = rng.normal(size=args.features)
    before = _anon_bytes()
    with TreeMemorySampler(also=roots) as mem:
        t0 = time.perf_counter()
        rows = spark.read.parquet(str(path))
        engine = SparkEngine(rows.drop("qid") if "qid" in rows.columns else rows, placement=placement, dtype=np.float32,
                             n_features=args.features, num_partitions=args.partitions, n_ranges=args.ranges)
        build = time.perf_counter() - t0
        parallel = _timing_products(engine) if placement == "driver" else None
        try:
            engine.run(w, HingeKernel())  # first pass: the workers load the kernels
            value, value_parallel = _median_seconds(lambda: engine.release(engine.run(
                w, SquaredHingeDiagonalKernel(), keep_state=True).state), args.passes, parallel)
            state = engine.run(w, SquaredHingeDiagonalKernel(), keep_state=True).state
            hessian, hessian_parallel = _median_seconds(
                lambda: engine.run(v, SquaredHingeHessianKernel(), state=state), args.passes, parallel)
            engine.release(state)
            hinge, _ = _median_seconds(lambda: engine.run(w, HingeKernel()), args.passes)
            t1 = time.perf_counter()
            model = train(engine, solver="tron", C=1e-3, max_iter=args.max_iter)
            fit = time.perf_counter() - t1
        finally:
            engine.close()
    driver = [p for p in mem.peaks.processes.values() if p.role == "driver"]
    return {"placement": placement, "build_s": build, "value_pass_s": value, "hessian_pass_s": hessian,
            "hinge_pass_s": hinge,  # driver placement: a pass but its products job (range: none serial)
            "value_serial_s": None if parallel is None else value - value_parallel,
            "hessian_serial_s": None if parallel is None else hessian - hessian_parallel, "fit_s": fit, "fit_iterations": model.summary["iterations"],
            "driver_peak_rss_gb": max(p.rss for p in driver) / 1e9,
            "driver_peak_anon_gb": max(p.anon for p in driver) / 1e9,
            "driver_growth_gb": (max(p.anon for p in driver) - before) / 1e9,
            "tree_peak_rss_gb": mem.peaks.peak_rss / 1e9, "weights": model.weights.tolist()}


def measure_in_process(path: Path, args) -> dict:
    """:func:`measure`'s passes and fit on the in-process engine (all cores), the rows read by
    ``read_ranking_data`` as one ranking (``qid_col=None``), float32 like the Spark blocks."""
    from sparkrank.engines.local import LocalEngine
    from sparkrank.io.files import read_ranking_data
    from sparkrank.kernels.losses import HingeKernel, SquaredHingeDiagonalKernel, SquaredHingeHessianKernel
    from sparkrank.training import train

    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.05, size=args.features)
    v = rng.normal(size=args.features)
    t0 = time.perf_counter()
    data = read_ranking_data(path, qid_col=None, dtype=np.float32, n_features=args.features)
    with LocalEngine(data) as engine:
        build = time.perf_counter() - t0
        engine.run(w, HingeKernel())  # first pass: the kernels compile
        value, _ = _median_seconds(lambda: engine.release(engine.run(w, SquaredHingeDiagonalKernel(),
                                                                     keep_state=True).state), args.passes)
        state = engine.run(w, SquaredHingeDiagonalKernel(), keep_state=True).state
        hessian, _ = _median_seconds(lambda: engine.run(v, SquaredHingeHessianKernel(), state=state), args.passes)
        engine.release(state)
        hinge, _ = _median_seconds(lambda: engine.run(w, HingeKernel()), args.passes)
        t1 = time.perf_counter()
        model = train(engine, solver="tron", C=1e-3, max_iter=args.max_iter)
        fit = time.perf_counter() - t1
    return {"placement": "in-process", "build_s": build, "value_pass_s": value, "hessian_pass_s": hessian,
            "hinge_pass_s": hinge, "fit_s": fit, "fit_iterations": model.summary["iterations"],
            "weights": model.weights.tolist()}


#: Passes of each kind in one TRON iteration (one value pass, ~3 Hessian products on these data).
TRON_MIX = {"value_pass_s": 1.0, "hessian_pass_s": 3.0}


def extrapolate(rows: list[dict], executors=(8, 64)) -> list[dict]:
    """Per-row costs fitted at the largest measured size, scaled to 10^8 and 10^9 rows.

    Driver placement: a pass's serial part (``*_serial_s``: everything but the job that sums its
    products over the blocks, i.e. gathering the scores and the driver's sort and count) does not
    shrink with executors; the products job divides by their number against the 2 cores measured
    here.  The serial part also holds the executors' ``X·w`` for the scores, so it is an upper
    bound on the driver's share.  Its driver memory: the measured growth plus the memory model's
    ``DRIVER_ROW_BYTES`` for each row more.  Range placement: every part runs on the executors and
    divides by their number; the driver's part is the sample and the histograms (O(ranges ×
    buckets)), constant in m."""
    out = []
    for labels in sorted({r["labels"] for r in rows}):
        for placement in ("driver", "range"):
            pts = [r for r in rows if r["labels"] == labels and r["placement"] == placement]
            if not pts:
                continue
            big = max(pts, key=lambda r: r["m"])
            per_row = sum(big[k] * n for k, n in TRON_MIX.items()) / big["m"]
            serial_row = 0.0 if placement == "range" else \
                sum(big[k.replace("pass", "serial")] * n for k, n in TRON_MIX.items()) / big["m"]
            for m in (10**8, 10**9):
                for n in executors:
                    serial, parallel = serial_row * m, (per_row - serial_row) * m * 2.0 / n
                    out.append({"labels": labels, "placement": placement, "m": m, "executors": n,
                                "iteration_s": serial + parallel, "serial_s": serial,
                                "driver_gb": big["driver_growth_gb"] + (DRIVER_ROW_BYTES * (m - big["m"]) / 1e9
                                                                         if placement == "driver" else 0.0),
                                "dominant": "driver scores+sort+count (serial)" if serial > parallel
                                else "executor scan and shuffle (parallel)"})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 3_000_000])
    ap.add_argument("--labels", nargs="+", choices=("graded", "real"), default=None, help="default: graded real")
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument("--ranges", type=int, default=None, help="range placement's score ranges (default: the engine's)")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--max-iter", type=int, default=3)
    ap.add_argument("--driver-memory", default="4g")
    add_cluster_options(ap, worker_memory="4g")
    ap.add_argument("--in-process", action="store_true",
                    help="also the in-process engine on the same rows (placement 'in-process')")
    ap.add_argument("--hashed", action="store_true",
                    help="hashed sparse rows: 2^24 feature ids, 40 non-zeros a row, graded labels, one ranking")
    args = ap.parse_args(argv)
    if args.hashed:
        if args.labels and "real" in args.labels:
            ap.error("--hashed has graded labels only (--labels graded)")
        args.labels, args.features = ["graded"], HASHED_FEATURES
    args.labels = args.labels or ["graded", "real"]
    with contextlib.ExitStack() as stack:  # a --workers cluster stops (with its executors) on the way out
        return run(args, stack)


def run(args, stack: contextlib.ExitStack) -> int:
    """Every label kind and size, both placements: measure, print the tables, write the result."""
    from sparkrank.io.spark.session import get_session

    settings, roots = cluster_from_options(args, stack)
    spark = get_session(args.master, conf={"spark.driver.memory": args.driver_memory, **settings})
    spark.sparkContext.setLogLevel("ERROR")
    stack.callback(spark.stop)
    rows = []
    for labels in args.labels:
        for m in args.sizes:
            path = hashed_global_parquet(m) if args.hashed else global_parquet(m, args.features, labels)
            for placement in ("driver", "range") + (("in-process",) if args.in_process else ()):
                r = {"labels": labels, "m": m, **(measure(spark, path, placement, args, roots) if placement != "in-process"
                                                  else measure_in_process(path, args))}
                rows.append(r)
                print(table([r], [k for k in r if k != "weights"]), flush=True)
    columns = ["labels", "m", "placement", "build_s", "value_pass_s", "hessian_pass_s", "hinge_pass_s",
               "value_serial_s", "hessian_serial_s", "fit_s", "fit_iterations", "driver_peak_anon_gb",
               "driver_growth_gb"]
    print("\n" + table(rows, columns))
    ratios, exponents = [], {}
    for labels in args.labels:
        for placement in ("driver", "range"):
            pts = sorted((r["m"], r["value_pass_s"] + 3 * r["hessian_pass_s"]) for r in rows
                         if r["labels"] == labels and r["placement"] == placement)
            if len(pts) > 1:
                exponents[f"{labels}/{placement}"] = growth_exponent(*zip(*pts))
        for m in args.sizes:
            d = next(r for r in rows if r["labels"] == labels and r["m"] == m and r["placement"] == "driver")
            g = next(r for r in rows if r["labels"] == labels and r["m"] == m and r["placement"] == "range")
            wd, wg = np.asarray(d["weights"]), np.asarray(g["weights"])
            local = next((r for r in rows if r["labels"] == labels and r["m"] == m and r["placement"] == "in-process"),
                         None)
            ratios.append({"labels": labels, "m": m,
                           "weights max rel diff": float(np.max(np.abs(wg - wd)) / np.max(np.abs(wd))),
                           "in-process/driver weights max rel diff": None if local is None else
                           float(np.max(np.abs(np.asarray(local["weights"]) - wd)) / np.max(np.abs(wd))),
                           **{f"range/driver {k[:-2]}": g[k] / d[k] for k in
                              ("value_pass_s", "hessian_pass_s", "hinge_pass_s", "fit_s")},
                           "driver growth range/driver": g["driver_growth_gb"] / max(d["driver_growth_gb"], 1e-9)})
    print("\nrange / driver (the ratio that matters: <= 1 is the goal)\n" + table(ratios, list(ratios[0])))
    print("\ngrowth exponent of a TRON iteration's passes (value + 3 Hessian) in m: "
          + ", ".join(f"{k} {v:.2f}" for k, v in exponents.items()))
    projection = extrapolate(rows)
    print("\nextrapolated TRON iteration (value + 3 Hessian passes)\n" + table(projection, list(projection[0])))
    if args.hashed:  # 2^24 weights a row: the comparison above is what is kept
        for r in rows:
            r.pop("weights")
    name = "global_scale_" + ("hashed" if args.hashed else "_".join(args.labels)) \
        + (f"_cluster{args.workers}" if args.workers else "")
    out = write_result(name, {"args": vars(args), "rows": rows, "ratios": ratios,
                                        "growth_exponents": exponents, "extrapolation": projection})
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
