"""Train TRON and BMRM on MQ2008 Fold1 and cadata; print iterations, time, objective, test metrics.

    python bench/train_letor.py [--C 1 128]
    python bench/train_letor.py --whole-process [--rows 300000] [--liblinear PATH/train] [--repeat 3]
                                [--ranker-computed [MEMORY]] [--only PART ...]

cadata (one global ranking, 3,842 distinct real labels) is min-max scaled and split 80/20
with a fixed seed.  Writes bench/results/train_letor.json.

``--whole-process`` measures what a user waits for and pays, each program a separate process
on one LETOR-style set (``_synthetic.synthetic_svmlight``: by default 300k rows x 136 dense
features, ~2,500 queries, 5 grades, ~500 MB of text; ``--rows 1000000`` is issue 40's set):

* ``CLI text``: ``sparkrank train --engine local --solver tron -C 1`` on the SVMlight text
  (and ``--dtype float32``);
* ``CLI Parquet (convert)``: the same on those rows as sparkrank's own Parquet
  (``sparkrank convert``: ``indices``/``values`` lists); with ``--spark-parquet`` also on a
  Parquet directory written by Spark with an ML vector column (made once, by a Spark job);
* ``API defaults``: ``sparkrank.load_svmlight(path)`` + ``sparkrank.train(data)``, and
  ``API, CLI settings``: the same with the CLI's layout (``"auto"``) and threads;
* ``LinearRanker (plain scan)``: ``LinearRanker(groupCol="qid", solver="tron", C=1.0).fit`` on
  ``spark.read.parquet`` of the converted file in a ``local[2]`` session (read from the files'
  row groups, as the CLI reads them); with ``--ranker-computed`` also ``LinearRanker (computed
  column)``, the same after a ``withColumn`` (read from the DataFrame itself); and
  ``SparkSession + read.parquet``, that session and DataFrame without a fit (their own cost);
* LIBLINEAR-ranksvm's ``train -s 8 -c 1`` (L2-loss RankSVM by TRON) when ``--liblinear``
  gives its binary.

Per program: wall and CPU time, the fit (the solver's seconds as the run reports them), the
API's load (LinearRanker's: the rest of its ``fit`` call) and the Spark session's start, the
process's peak RSS and its whole process tree's (JVM and Python workers too; sampled every
0.1 s); the minimum of ``--repeat`` runs (round robin); wall and tree peak over the text row's
(and LIBLINEAR's), fit and tree peak over the Parquet row's; and whether each CLI and
LinearRanker run's model is the text row's bit for bit.  Also times ``read_svmlight``
alone on 1 and 2 threads, into CSR and dense rows (``--skip-parse`` skips it).  Writes
bench/results/``--output``.json and .md (the table).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, table, write_result  # noqa: E402

from sparkrank.data.block import RankingData  # noqa: E402
from sparkrank.io.files import read_ranking_data  # noqa: E402
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


def whole_process(args) -> int:
    import tempfile

    import _synthetic
    from _process import run_measured

    if args.data_dir:
        _synthetic.DATA_DIR = Path(args.data_dir)
    svm = _synthetic.synthetic_svmlight(args.rows, args.features)
    converted = converted_parquet(svm)
    with tempfile.TemporaryDirectory() as tmp:
        cmds = {"CLI text": _train(svm, tmp), "CLI text float32": _train(svm, tmp) + ["--dtype", "float32"],
                "CLI Parquet (convert)": _train(converted, tmp)}
        if args.spark_parquet:
            cmds["CLI Parquet (Spark vectors)"] = _train(spark_vector_parquet(converted), tmp)
        cmds["API defaults"] = [sys.executable, "-c", API_SCRIPT, str(svm), "defaults"]
        cmds["API, CLI settings"] = [sys.executable, "-c", API_SCRIPT, str(svm), "cli"]
        for name, mode, memory in ((SESSION, "session", ""), (RANKER, "scan", ""),
                                   (RANKER_COMPUTED, "computed", args.ranker_computed)):
            if mode != "computed" or args.ranker_computed is not None:
                cmds[name] = [sys.executable, "-c", RANKER_SCRIPT, str(converted), f"{tmp}/MODEL", mode, memory]
        if args.liblinear:
            # -s 8: L2-regularized L2-loss RankSVM by TRON (lee-lin2014), the AA-tree counting
            cmds[LIBLINEAR] = [args.liblinear, "-s", "8", "-c", "1", "-q", str(svm), f"{tmp}/MODEL"]
        if args.only:  # the two rows the ratios are over stay
            cmds = {name: cmd for name, cmd in cmds.items()
                    if name in ("CLI text", PARQUET) or any(part in name for part in args.only)}
        runs = {name: [] for name in cmds}
        for i in range(args.repeat):
            # round robin: a slow spell of the machine hits every program alike, not just one;
            # a fresh model path per run: no program is asked to replace an existing file
            for k, (name, cmd) in enumerate(cmds.items()):
                try:
                    run = run_measured([a.replace("MODEL", f"model-{k}-{i}") for a in cmd])
                except RuntimeError as exc:  # one program failing (out of memory) leaves the others' rows
                    print(f"{name}: {exc}", file=sys.stderr, flush=True)
                    runs[name].append({"failed": _cause(str(exc))})
                    continue
                runs[name].append({**run, **_fit_seconds(run.pop("output"))})
        same = _same_models(tmp, list(cmds), args.repeat)
    best = {name: _minima(rs) for name, rs in runs.items()}
    title = (f"{svm.name}: {args.rows:,} rows x {args.features} features ({svm.stat().st_size / 1e6:.0f} MB of text, "
             f"{converted.stat().st_size / 1e6:.0f} MB as Parquet); min of {args.repeat} runs; MB = MiB")
    print(f"\n{title}\n{process_table(best, same)}")
    out = write_result(args.output, {"file": svm.name, "rows": args.rows, "features": args.features,
                                     "repeat": args.repeat, "runs": runs, "min": best, "same_model_as_text": same})
    md = out.with_suffix(".md")
    md.write_text(f"{title}\n\n{process_table(best, same, markdown=True)}\n")
    if not args.skip_parse:
        parse = parse_seconds(svm, args.repeat)
        print("\nread_svmlight alone (in process, median of %d):" % args.repeat)
        print(table(parse, list(parse[0])))
        write_result(args.output, {**json.loads(out.read_text()), "parse": parse})
    print(f"\nwrote {out} and {md}")
    return 0


def _minima(runs: list[dict]) -> dict:
    """Each measure's minimum over the runs that finished (a text one, such as the engine chosen:
    the first run's), or the first failure's cause when none finished."""
    done = [r for r in runs if "failed" not in r]
    if not done:
        return runs[0]
    return {k: min(r[k] for r in done) if isinstance(v, (int, float)) else v for k, v in done[0].items()}


def _cause(message: str) -> str:
    """The line of a failed run's output that says why (a Python or Java exception), else its last."""
    import re

    lines = [line.strip() for line in message.splitlines() if line.strip()]
    causes = [line for line in lines if re.match(r"^([\w.]+(Error|Exception)\b|Caused by:)", line)]
    return (causes or lines or ["failed"])[0][:300]


def _train(path: Path, tmp: str) -> list[str]:
    """``sparkrank train`` on the local engine, as the issue's table runs it."""
    return [sys.executable, "-m", "sparkrank", "train", "--engine", "local", "--solver", "tron", "-C", "1",
            "--input", str(path), "--model", f"{tmp}/MODEL", "-q"]


#: The Python API as a user calls it: ``defaults`` (``load_svmlight`` reads CSR on one thread and
#: ``train`` makes its own engine) or ``cli`` (what ``sparkrank train`` does: dense rows when they
#: are smaller, parsing and passes on every core).  Prints its load and fit seconds as JSON.
API_SCRIPT = r"""
import json, sys, time
import sparkrank
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.threads import default_threads
path, mode = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if mode == "defaults":
    data = sparkrank.load_svmlight(path)
    t1 = time.perf_counter()
    sparkrank.train(data, solver="tron", C=1.0)
else:
    data = sparkrank.load_svmlight(path, layout="auto", threads=default_threads())
    t1 = time.perf_counter()
    sparkrank.train(LocalEngine(data, threads=default_threads()), solver="tron", C=1.0)
print(json.dumps({"load_s": t1 - t0, "fit_s": time.perf_counter() - t1}))
"""

SESSION = "SparkSession + read.parquet"
RANKER = "LinearRanker (plain scan)"
RANKER_COMPUTED = "LinearRanker (computed column)"
#: ``LinearRanker.fit`` as docs/pyspark-ml.md has a user call it: a ``local[2]`` session (UI off;
#: argv[4], when given, its ``spark.driver.memory``), ``spark.read.parquet`` of the converted file
#: (``scan``: as it is, read from its row groups; ``computed``: after a ``withColumn``, which no
#: file holds, so the DataFrame's own rows are read; ``session``: no fit, what the session and the
#: DataFrame cost by themselves), the CLI row's settings (TRON, C = 1).  Saves the model (argv[2]); prints as JSON the
#: session's start, the solver's seconds (``fit_s``, as the CLI reports its fit), ``spark.read.parquet``
#: and the ``fit`` call (``call_s``: what the CLI's whole process does after its start) and the rest of it (``load_s``:
#: reading the rows, the checks), and the engine the fit chose.
RANKER_SCRIPT = r"""
import json, logging, sys, time
t0 = time.perf_counter()
from pyspark.sql import SparkSession, functions as F
from sparkrank.ml import LinearRanker
path, model_path, mode, driver_memory = sys.argv[1:5]
notes = []
class Notes(logging.Handler):
    def emit(self, record):
        notes.append(record.getMessage())
logging.getLogger("sparkrank.ml").addHandler(Notes())
logging.getLogger("sparkrank.ml").setLevel(logging.INFO)
builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
           .config("spark.ui.showConsoleProgress", "false"))
spark = (builder.config("spark.driver.memory", driver_memory) if driver_memory else builder).getOrCreate()
t1 = time.perf_counter()
df = spark.read.parquet(path)
if mode == "session":
    df.schema
    print(json.dumps({"session_s": t1 - t0, "call_s": time.perf_counter() - t1}))
    spark.stop()
    sys.exit(0)
if mode == "computed":
    df = df.withColumn("label", F.col("label") * 1.0)
model = LinearRanker(groupCol="qid", solver="tron", C=1.0).fit(df)
t2 = time.perf_counter()
model.rankingModel.save(model_path)
engine = [n.split("LinearRanker: ", 1)[-1] for n in notes if "engine (" in n]
spark.stop()
print(json.dumps({"session_s": t1 - t0, "fit_s": model.summary.seconds, "load_s": t2 - t1 - model.summary.seconds,
                  "call_s": t2 - t1,
                  "engine": engine[-1] if engine else None}))
"""


def _fit_seconds(output: str) -> dict:
    """The seconds a run says it spent: the API script's JSON line, the CLI's ``trained ...: N
    iterations, objective X, S s`` line (its fit, the solver's time)."""
    import re

    for line in output.splitlines()[::-1]:
        if line.startswith("{"):
            return json.loads(line)
        found = re.search(r"objective [^,]+, ([0-9.]+)s,", line)
        if found:
            return {"fit_s": float(found.group(1))}
    return {}


def _same_models(tmp: str, names: list[str], repeat: int) -> dict:
    """Per CLI or LinearRanker row, whether its models' weights are those of ``CLI text``'s bit for bit."""
    from sparkrank.model import RankingModel

    def weights(k: int, i: int) -> bytes | None:
        path = Path(tmp) / f"model-{k}-{i}"
        return RankingModel.load(str(path)).weights.tobytes() if path.exists() else None

    text = weights(names.index("CLI text"), 0)
    return {name: all(weights(k, i) == text for i in range(repeat))
            for k, name in enumerate(names) if name.startswith(("CLI", "LinearRanker")) and weights(k, 0) is not None}


def converted_parquet(svm: Path) -> Path:
    """``sparkrank convert --engine local`` of the SVMlight file (its own Parquet layout), cached."""
    path = svm.with_suffix(".convert.parquet")
    if not path.exists():
        subprocess.run([sys.executable, "-m", "sparkrank", "convert", "--engine", "local", "--input", str(svm),
                        "--output", str(path)], check=True)
    return path


#: Writes the rows of sparkrank's Parquet (argv[1]) as Spark ML dense vectors (argv[2]), by Spark: a
#: ``features`` vector column as Spark writes it, the same numbers and row order (one partition).
SPARK_VECTORS_SCRIPT = r"""
import sys
from pyspark.sql import SparkSession, functions as F
from pyspark.ml.functions import array_to_vector
spark = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "6g")
         .config("spark.ui.enabled", "false").getOrCreate())
rows = spark.read.parquet(sys.argv[1]).coalesce(1)
n = int(sys.argv[3])
dense = F.expr(f"transform(sequence(0, {n - 1}), i -> coalesce(element_at(map_from_arrays(indices, values), i), 0D))")
rows.select("label", "qid", array_to_vector(dense).alias("features")).write.mode("overwrite").parquet(sys.argv[2])
spark.stop()
"""


def spark_vector_parquet(converted: Path) -> Path:
    """The rows of ``converted`` as a Parquet directory written by Spark with a vector column, cached."""
    import pyarrow.parquet as pq

    path = converted.with_suffix(".spark-vectors.parquet")
    if not path.exists():
        n = pq.read_schema(converted).metadata[b"sparkrank.n_features"].decode()
        subprocess.run([sys.executable, "-c", SPARK_VECTORS_SCRIPT, str(converted), str(path), n], check=True)
    return path


LIBLINEAR = "LIBLINEAR-ranksvm -s 8 -c 1"
PARQUET = "CLI Parquet (convert)"
#: Columns of the table: key, header, format.
MEASURES = [("wall_s", "wall", "{:.1f} s"), ("cpu_s", "CPU", "{:.1f} s"), ("session_s", "session", "{:.1f} s"),
            ("load_s", "load", "{:.2f} s"), ("fit_s", "fit", "{:.2f} s"), ("call_s", "fit call", "{:.1f} s"), ("peak_mb", "peak RSS", "{:,.0f} MB"),
            ("tree_peak_mb", "tree peak", "{:,.0f} MB")]


def process_table(best: dict, same: dict, markdown: bool = False) -> str:
    """A row per program: its measures, wall and the tree's peak memory over the text row's (and
    over LIBLINEAR's when it ran); over the Parquet row's (the file every LinearRanker row reads)
    its fit, its ``LinearRanker.fit`` call (else its wall) against that row's whole process, and
    its tree peak; and whether its model is the text row's bit for bit."""
    base, lib, parquet = best["CLI text"], best.get(LIBLINEAR), best[PARQUET]
    header = ["", *(h for _, h, _ in MEASURES), "wall / text", "tree / text"]
    header += ["tree / LIBLINEAR"] if lib else []
    header += ["fit / Parquet", "call / Parquet wall", "tree / Parquet", "model = text's"]

    def ratio(m: dict, key: str, of: dict) -> str:
        return f"{m[key] / of[key]:.2f}" if key in m and key in of else "-"

    rows = []
    for name, m in best.items():
        if "failed" in m:
            rows.append([name, f"failed: {m['failed']}", *[""] * (len(header) - 2)])
            continue
        row = [name, *(fmt.format(m[k]) if k in m else "-" for k, _, fmt in MEASURES),
               ratio(m, "wall_s", base), ratio(m, "tree_peak_mb", base)]
        row += [ratio(m, "tree_peak_mb", lib)] if lib else []
        row += [ratio(m, "fit_s", parquet), ratio({"wall_s": m.get("call_s", m["wall_s"])}, "wall_s", parquet),
                ratio(m, "tree_peak_mb", parquet)]
        row += [{True: "yes", False: "NO"}.get(same.get(name), "-")]
        rows.append(row)
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in [header] + rows)


def parse_seconds(path, repeat: int) -> list[dict]:
    """Wall and CPU seconds of ``read_svmlight`` on 1 and 2 threads, into CSR and into dense rows
    (``layout="auto"``, what ``sparkrank train`` uses), after a warm-up that compiles."""
    import statistics
    import time

    from sparkrank.data.svmlight import read_svmlight

    read_svmlight(path, threads=1)
    rows = []
    for layout in ("sparse", "auto"):
        for threads in (1, 2):
            wall, cpu = [], []
            for _ in range(repeat):
                t, c = time.perf_counter(), time.process_time()
                f = read_svmlight(path, threads=threads, layout=layout)
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                kind = "dense rows" if isinstance(f.X, np.ndarray) else "CSR"
                del f
            rows.append({"layout": f"{layout} ({kind})", "threads": threads, "wall_s": statistics.median(wall),
                         "cpu_s": statistics.median(cpu)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 128.0])
    ap.add_argument("--skip-cadata", action="store_true")
    ap.add_argument("--whole-process", action="store_true", help="whole-process wall/CPU/peak memory vs LIBLINEAR")
    ap.add_argument("--rows", type=int, default=300_000, help="--whole-process: rows of the synthetic file")
    ap.add_argument("--features", type=int, default=136, help="--whole-process: dense features")
    ap.add_argument("--liblinear", metavar="PATH", help="--whole-process: LIBLINEAR-ranksvm's train binary")
    ap.add_argument("--repeat", type=int, default=3, help="--whole-process: runs per program (the table: min)")
    ap.add_argument("--data-dir", metavar="DIR", help="--whole-process: where the synthetic files are made and "
                    "kept (default bench/results/data; 1M rows take ~3.5 GB)")
    ap.add_argument("--spark-parquet", action="store_true",
                    help="--whole-process: also a Parquet of Spark ML vectors written by Spark (minutes, once)")
    ap.add_argument("--ranker-computed", metavar="MEMORY", nargs="?", const="", default=None,
                    help="--whole-process: also LinearRanker on the Parquet after a withColumn (read from the "
                    "DataFrame, not its files), its session with spark.driver.memory MEMORY when given")
    ap.add_argument("--only", nargs="+", metavar="PART", help="--whole-process: only the programs whose "
                    "names hold one of these (and the CLI text and Parquet rows)")
    ap.add_argument("--skip-parse", action="store_true", help="--whole-process: skip the read_svmlight timings")
    ap.add_argument("--output", default="train_letor_process", help="--whole-process: result file name")
    args = ap.parse_args(argv)
    if args.whole_process:
        return whole_process(args)
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
