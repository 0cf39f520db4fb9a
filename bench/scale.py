"""End-to-end TRON training on the Spark engine as m grows (1M, 3M, 10M rows × 136 float32).

    python bench/scale.py [--sizes 1000000 3000000 10000000] [--master local[2]] [--build direct|shuffle]
                          [--dtype float32|float64] [--partitions P] [--compare-local]
                          [--hashed] [--engine spark|local] [--workers N] [--liblinear PATH/train]
                          [--aggregation-depth D] [--out NAME]

``--hashed``: hashed sparse features instead, 2²⁴ feature ids, 40 non-zeros a row, query groups
of ~50 rows (``--features``, ``--nnz-per-row``, ``--rows-per-group`` set them one by one);
results go to bench/results/scale_hashed.json (``_local`` for ``--engine local``).  ``--engine
local`` runs the same measurements on the in-process engine (build = reading the Parquet rows;
no read-once bound).  ``--workers N``: on a standalone cluster of N workers started for the run on
127.0.0.1 (``bench/_cluster.py``: real master and worker daemons; ``_clusterN`` in the file name),
its executors' JVMs and Python workers counted in the memory.  ``--liblinear PATH``: also train
the same set, written once as SVMlight text, with LIBLINEAR-ranksvm's ``train -s 8`` (the same C;
with ``--max-iter``, stopped after as many TRON iterations; ``bench/_liblinear.py``), and print
sparkrank's time and memory over LIBLINEAR's (``_vs_liblinear`` in the file name).
``--aggregation-depth D``: every pass's sums through ``treeAggregate`` at depth D instead of the
engine's choice (the column-sliced merge for wide sums); ``--out NAME``: the result file's name.

For each size: write (once, chunked) a synthetic Parquet set, build the Spark blocks
(executor placement, groups of ~120 rows; ``--build direct``, the default and what
``sparkrank train`` does with a plain local Parquet input, reads them straight from the
row groups, ``--build shuffle`` has the JVM shuffle the rows by qid first), train L2-loss RankSVM by TRON to tol 1e-3 (or
``--max-iter``), and record block-build time, iterations, time per iteration, the fit's CPU seconds (the whole process tree), time per
engine pass (the median of all, and of TRON's Hessian and value passes apart, each also over the
time to read the block arrays once, and every pass in order in the JSON; then, after the fit, the
median of 8 Hessian passes at its weights: the cost once the JVM's JIT and the first passes are behind), total time and the peak memory of the whole process tree during the build and the fit
(``bench/_tree_memory.py``: driver Python, JVM, Python workers, sampled every 0.2 s from /proc),
each process's and summed: resident set (which counts a memory-mapped block once per process
mapping it), proportional set (shared pages split among the processes: the tree's real
footprint) and anonymous memory.  Partitions: the engine's default (the memory model's, as
``sparkrank train`` gets) unless ``--partitions``.  ``--compare-local`` also trains the same file
with ``sparkrank train --engine local`` in a child process, samples its peak the same way and
prints the ratio that matters: the Spark tree's peak over the in-process engine's.  Prints the
tables and the growth exponent of the per-pass time over m (1.0 = linear); writes
bench/results/scale.json (scale_shuffle.json).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _cluster import add_cluster_options, cluster_from_options  # noqa: E402
from _common import growth_exponent, spark_setting, table, tree_cpu_seconds, write_result  # noqa: E402
from _liblinear import run_liblinear, svmlight_copy  # noqa: E402
from _synthetic import synthetic_parquet  # noqa: E402
from _tree_memory import TreeMemorySampler  # noqa: E402
from tree_peak import COLUMNS as PROCESS_COLUMNS  # noqa: E402


class PassCounter:
    """Counts engine passes and times each by wrapping ``run``, by kernel: TRON's value passes
    (sort, count, three column sums) and its Hessian passes (count at the kept order, one) cost
    different amounts, so each kind has its own median too."""

    def __init__(self, engine):
        self.engine, self.seconds, self.kinds = engine, [], []
        inner = engine.run

        def run(vector, kernel, **k):
            t = time.perf_counter()
            try:
                return inner(vector, kernel, **k)
            finally:
                self.seconds.append(time.perf_counter() - t)
                self.kinds.append(type(kernel).__name__)

        engine.run = run
        self._inner = inner

    def stop(self) -> None:
        """Count no more passes."""
        self.engine.run = self._inner

    @property
    def passes(self) -> int:
        return len(self.seconds)

    def median_of(self, kind: str) -> float | None:
        """Median seconds of the passes of kernel class ``kind`` (``None``: no such pass)."""
        times = [s for s, k in zip(self.seconds, self.kinds) if k == kind]
        return float(np.median(times)) if times else None


def read_once_seconds(engine, threads: int, repeat: int = 3) -> float:
    """Best time to read every array of every block once (numpy sums, ``threads`` at a time)."""
    from concurrent.futures import ThreadPoolExecutor

    arrays = [[np.load(f, mmap_mode="r") for f in sorted(glob.glob(os.path.join(ref.path, "*.npy")))]
              for ref in engine.refs if ref.n_rows]

    def read(block_arrays):
        return sum(float(np.sum(a)) for a in block_arrays)  # np.sum releases the GIL: threads overlap

    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeat + 1):  # the first maps the pages into this process
            t = time.perf_counter()
            list(pool.map(read, arrays))
            best = min(best, time.perf_counter() - t)
    return best


def steady_hessian_seconds(engine, w: np.ndarray, passes: int = 8) -> float:
    """Median seconds of ``passes`` Hessian-vector passes at the fitted ``w`` (kept state from one
    value pass; random directions), after the fit: a pass's cost once the JVM's JIT compiler and
    the executors' first touches of the blocks are behind it, which a 5-iteration fit's 7 Hessian
    passes do not show."""
    from sparkrank.kernels.losses import SquaredHingeHessianKernel, SquaredHingeKernel
    from sparkrank.numerics.vectors import fit_length

    rng = np.random.default_rng(0)
    w = fit_length(np.asarray(w, dtype=np.float64), engine.summary.n_features)
    state = engine.run(w, SquaredHingeKernel(), keep_state=True).state
    seconds = []
    try:
        for _ in range(passes):
            v = rng.normal(size=w.shape[0])
            t = time.perf_counter()
            engine.run(v, SquaredHingeHessianKernel(), state=state)
            seconds.append(time.perf_counter() - t)
    finally:
        engine.release(state)
    return float(np.median(seconds))


def local_peak(path: Path, args) -> dict:
    """``sparkrank train --engine local`` on ``path`` (the same dtype, C and iterations) in a child
    process: its wall time and the peaks of its process tree (``bench/_tree_memory.py``)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "sparkrank", "train", "--input", str(path), "--engine", "local",
               "--model", os.path.join(tmp, "model.json"), "--dtype", args.dtype, "-C", str(args.C)]
        cmd += ["--max-iter", str(args.max_iter)] if args.max_iter else []
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with TreeMemorySampler(proc.pid) as mem:
            _, err = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-2000:]}")
    return {"local_s": time.perf_counter() - t0, "local_peak_rss_gb": mem.peak_rss / 1e9,
            "local_peak_pss_gb": mem.peak_pss / 1e9, "local_peak_anon_gb": mem.peak_anon / 1e9}


def process_peaks(peaks) -> dict:
    """The tree's summed peaks and each role's largest process (GB), for the summary row."""
    out = {"peak_rss_gb": peaks.peak_rss / 1e9, "peak_pss_gb": peaks.peak_pss / 1e9,
           "peak_anon_gb": peaks.peak_anon / 1e9}
    for role, procs in peaks.by_role().items():
        key = role.replace("python ", "").replace(" ", "_")
        out[f"peak_{key}_gb"] = max(p.rss for p in procs) / 1e9
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 3_000_000, 10_000_000])
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=None,
                    help="default: the engine's (the memory model's, as sparkrank train chooses)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--C", type=float, default=1e-3)
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--driver-memory", default=None, help="spark.driver.memory (default: Spark's, 1g)")
    ap.add_argument("--aggregation-depth", type=int, default=None,
                    help="Spark: treeAggregate at this depth for every pass (default: the engine's choice)")
    ap.add_argument("--out", default=None, help="result file name in bench/results (default: from the options)")
    ap.add_argument("--build", choices=("direct", "shuffle"), default="direct",
                    help="direct: blocks read straight from the Parquet row groups (what `sparkrank train` "
                         "does for a plain local Parquet input); shuffle: rows shuffled by qid in the JVM")
    ap.add_argument("--hashed", action="store_true",
                    help="hashed sparse rows: 2^24 feature ids, 40 non-zeros a row, groups of ~50 rows")
    ap.add_argument("--nnz-per-row", type=int, default=None, help="sparse rows of this many non-zeros")
    ap.add_argument("--rows-per-group", type=int, default=120)
    ap.add_argument("--engine", choices=("spark", "local"), default="spark")
    ap.add_argument("--compare-local", action="store_true",
                    help="also measure sparkrank train --engine local on the same file (peak memory, time)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=spark_setting,
                    help="a Spark setting of the session (repeatable), e.g. spark.driver.maxResultSize=4g")
    ap.add_argument("--liblinear", metavar="PATH",
                    help="also train the same set, as SVMlight text, with LIBLINEAR-ranksvm's train -s 8 at this path "
                         "(the same C and, with --max-iter, the same TRON iterations; bench/_liblinear.py)")
    add_cluster_options(ap, worker_memory="6g")
    args = ap.parse_args(argv)
    if args.hashed:
        args.features, args.nnz_per_row, args.rows_per_group = 1 << 24, args.nnz_per_row or 40, 50

    with contextlib.ExitStack() as stack:  # a --workers cluster stops (with its executors) on the way out
        spark, roots = start_session(args, stack)
        return run(args, spark, roots)


def start_session(args, stack: contextlib.ExitStack):
    """``(session or None for --engine local, extra memory roots)``: on ``--master``, or on a
    standalone cluster of ``--workers`` started for the run (entered into ``stack``)."""
    from sparkrank.io.spark.session import get_session

    if args.engine != "spark":
        return None, []
    conf = {"spark.driver.memory": args.driver_memory} if args.driver_memory else {}
    conf.update(args.conf)
    settings, roots = cluster_from_options(args, stack)
    conf.update(settings)
    spark = get_session(args.master, conf=conf or None)
    spark.sparkContext.setLogLevel("ERROR")
    stack.callback(spark.stop)
    return spark, roots


def run(args, spark, roots: list[int]) -> int:
    """Every size: build, fit, measure; print the tables and write the result file."""
    from sparkrank.engines.registry import make_engine
    from sparkrank.engines.spark.engine import SparkEngine
    from sparkrank.io.sources import open_source
    from sparkrank.training import train

    local = spark is not None and spark.sparkContext.master.startswith("local")
    cores = spark.sparkContext.defaultParallelism if spark is not None else None
    rows, processes = [], []
    for m in args.sizes:
        path = synthetic_parquet(m, args.features, nnz_per_row=args.nnz_per_row, rows_per_group=args.rows_per_group)
        # LIBLINEAR first, while this process holds no engine (at 10M hashed rows the two together
        # exceed 24 GiB: the kernel killed this process, which still held the fit's 16 GB)
        liblinear = run_liblinear(args.liblinear, svmlight_copy(path, args.features), args.C, args.max_iter) \
            if args.liblinear else None
        with TreeMemorySampler(also=roots) as mem:  # the build and the fit, not the measurements after it
            t0, cpu0 = time.perf_counter(), tree_cpu_seconds()
            source = open_source(str(path), spark=spark)
            if spark is None:
                engine = make_engine(source, "local", n_features=args.features, dtype=np.dtype(args.dtype).type)
            else:
                df, cols = source.dataframe(spark)
                engine = SparkEngine(df, label_col=cols.label, qid_col=cols.qid, features_col=cols.features,
                                     placement="executor", num_partitions=args.partitions,
                                     aggregation_depth=args.aggregation_depth,
                                     dtype=np.dtype(args.dtype).type, n_features=args.features,
                                     parquet_files=source.local_parquet_files() if args.build == "direct" else None)
            build, build_cpu = time.perf_counter() - t0, tree_cpu_seconds() - cpu0
            counter = PassCounter(engine)
            fit_cpu0 = tree_cpu_seconds()
            try:
                model = train(engine, solver="tron", C=args.C, max_iter=args.max_iter)
            except BaseException:
                engine.close()
                raise
            train_cpu = tree_cpu_seconds() - fit_cpu0
        try:
            t_train = time.perf_counter()
            read_once = read_once_seconds(engine, cores) if local else None
            counter.stop()  # the fit's passes only
            steady = steady_hessian_seconds(engine, model.weights)
            t0 += time.perf_counter() - t_train  # the bound's measurements are not part of the run
        finally:
            engine.close()
        total = time.perf_counter() - t0
        s = model.summary
        per_pass = float(np.median(counter.seconds))
        hessian = counter.median_of("SquaredHingeHessianKernel")
        value = counter.median_of("SquaredHingeDiagonalKernel") or counter.median_of("SquaredHingeKernel")
        row = {"rows": m, "engine": args.engine, "features": args.features, "nnz_per_row": args.nnz_per_row,
               "aggregation_depth": args.aggregation_depth,
               "build": args.build, "dtype": args.dtype, "partitions": len(getattr(engine, "refs", [None])),
               "build_s": build, "build_cpu_s": build_cpu,
               "iterations": s["iterations"], "passes": counter.passes, "train_s": s["seconds"], "train_cpu_s": train_cpu,
               "s_per_iter": s["seconds"] / max(s["iterations"], 1), "s_per_pass": per_pass,
               "read_once_s": read_once, "pass_over_read": None if read_once is None else per_pass / read_once,
               "s_per_hessian_pass": hessian, "s_per_value_pass": value,
               "hessian_over_read": None if read_once is None or hessian is None else hessian / read_once,
               "value_over_read": None if read_once is None or value is None else value / read_once,
               "s_per_steady_hessian_pass": steady,
               "steady_hessian_over_read": None if read_once is None else steady / read_once,
               "total_s": total, **process_peaks(mem.peaks),
               "objective": s["objective"], "converged": s["converged"],
               # every pass in order, to see the kinds and the first passes' warm-up (JVM JIT)
               "passes_in_order": [[kind, round(t, 4)] for kind, t in zip(counter.kinds, counter.seconds)]}
        if liblinear is not None:
            row.update(liblinear)
            row["total_over_liblinear"] = row["total_s"] / row["liblinear_s"]
            row["s_per_iter_over_liblinear"] = (None if row["liblinear_s_per_iter"] is None
                                                else row["s_per_iter"] / row["liblinear_s_per_iter"])
            row["peak_rss_over_liblinear"] = row["peak_rss_gb"] / row["liblinear_peak_rss_gb"]
        if args.compare_local:
            row.update(local_peak(path, args))
            row["peak_rss_over_local"] = row["peak_rss_gb"] / row["local_peak_rss_gb"]
            row["peak_pss_over_local"] = row["peak_pss_gb"] / row["local_peak_pss_gb"]
        rows.append(row)
        processes.append({"rows": m, **mem.peaks.as_json()})
        print(table(rows[-1:], [k for k in rows[-1] if k != "passes_in_order"]), flush=True)
        print(table(mem.peaks.rows(), PROCESS_COLUMNS), flush=True)
    cols = [k for k in rows[0] if k != "passes_in_order"]
    print()
    print(table(rows, cols))
    if len(rows) > 1:
        ms = [r["rows"] for r in rows]
        e_pass = growth_exponent(ms, [r["s_per_pass"] for r in rows])
        e_iter = growth_exponent(ms, [r["s_per_iter"] for r in rows])
        print(f"\ngrowth exponent over m: per engine pass {e_pass:.2f}, per TRON iteration {e_iter:.2f} (1.0 = linear)")
    else:
        e_pass = e_iter = None
    for r in rows:
        if "total_over_liblinear" in r:
            print(f"{r['rows']:,} rows: sparkrank {r['total_s']:.1f} s end to end, {r['s_per_iter']:.2f} s an iteration, "
                  f"{r['peak_rss_gb']:.2f} GB; LIBLINEAR-ranksvm {r['liblinear_s']:.1f} s "
                  f"({r['liblinear_iterations']} iterations{', stopped' if r['liblinear_stopped'] else ''}), "
                  f"{r['liblinear_s_per_iter'] or float('nan'):.2f} s an iteration, {r['liblinear_peak_rss_gb']:.2f} GB: "
                  f"{r['total_over_liblinear']:.3f}x its time, {r['peak_rss_over_liblinear']:.2f}x its memory")
        if "peak_rss_over_local" in r:
            print(f"{r['rows']:,} rows: Spark's process tree peaked at {r['peak_rss_gb']:.2f} GB resident "
                  f"({r['peak_pss_gb']:.2f} GB proportional), {r['peak_rss_over_local']:.2f}x the in-process "
                  f"engine's {r['local_peak_rss_gb']:.2f} GB")
    name = args.out or ("scale" if args.build == "direct" else "scale_shuffle") + ("_hashed" if args.nnz_per_row else "") \
        + ("_local" if args.engine == "local" else "") + (f"_cluster{args.workers}" if args.workers else "") \
        + ("_vs_liblinear" if args.liblinear else "")
    print(f"wrote {write_result(name, {'master': args.master, 'workers': args.workers, 'load_average_1min': os.getloadavg()[0], 'rows': rows, 'processes': processes, 'exponent_per_pass': e_pass, 'exponent_per_iter': e_iter})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
