"""The command line's parser: ``sparkrank train | predict | evaluate | convert | tune | report``.

Every choice comes from its registry (solvers and their options, engines, formats, metrics),
every default from :mod:`sparkrank.defaults`; what a command does is :mod:`.commands`.
"""

from __future__ import annotations

import argparse

from .. import __version__, defaults
from ..choices import (COUNTING_METHODS, DTYPES, NDCG_DISCOUNTS, PLACEMENTS, STANDARDIZATIONS, ZERO_IDCG_RULES,
                       check_positive_float, check_positive_int)
from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG, PREDICTION_COL
from ..engines.registry import ENGINES
from ..io.formats.registry import DELTA_AVAILABLE, format_choices
from ..io.outputs import WRITE_MODES
from ..io.spark.passthrough import spark_setting
from ..solvers.registry import SOLVERS

EPILOG = """\
examples:
  sparkrank train --input sample:train --model model.json            # --engine auto: local here
  sparkrank train --input sample:train --model model.json --engine spark
  sparkrank train --input data.parquet --model m.json --master spark://host:7077
  sparkrank train --input file:///lake/ltr/ --where "day >= '2026-11-01'" --qid-col user_id,session_id \\
                  --feature-cols f1 f2 f3 --model file:///lake/models/m.json
  sparkrank evaluate --model model.json --input sample:test
  sparkrank predict --model model.json --input sample:test --output scores.txt
  sparkrank predict --model m.json --input s3a://bucket/ltr/ --output s3a://bucket/scores/ --partition-by day --rank
  sparkrank convert --input train.txt --output train.parquet
  sparkrank tune --input sample:train --valid sample:test --C-range -10 5 --model best.json
  sparkrank tune --input data.parquet --folds 5 --metric ndcg@10 --output-json tune.json --report plots/
  sparkrank report --model best.json --tune tune.json --input sample:test --output-dir plots/

Regularisation: -C is LIBLINEAR's C in ½‖w‖² + C·Σ_pairs loss; --lambda is the BMRM
λ in λ‖w‖² + (1/N)·Σ_pairs loss; they are the same model when C = 1/(2λN).

Engines (--engine auto, the default): Spark when --master is given, under spark-submit,
when an input is a URI with a scheme (a data lake), with --where-sql (Spark SQL), or when
the input would not fit in memory; otherwise in-process.  The first log line says which
and why.  Spark logs warnings only (no start-up chatter) unless -v.
"""

INPUT_HELP = """\
Paths: local paths, sample:train / sample:test, or Hadoop URIs (file:, hdfs:, s3a:, abfss:,
gs: …; URIs are only opened through Hadoop's FileSystem).  Files, directories (Hive
partitions such as day=2026-11-01/ become columns), glob patterns, or several of them.
Formats: parquet, svmlight (LETOR text), csv/tsv (header row; the features are
--feature-cols, else every column but the label and the group id), delta%s.
Text may be .gz/.bz2 compressed: train.csv.gz is CSV.
Group id: --qid-col names the column(s) of the query/group id (default qid).  For
Parquet/CSV that column must exist; --qid-col '' ranks all rows as one global ranking.
SVMlight files with qid: tokens are grouped by them, files without are one ranking.  A
named column that does not exist is an error that lists the columns.
""" % ("" if DELTA_AVAILABLE else " (needs the delta-spark package:\nnot installed here)")


def _positive(kind: type):
    """An argparse ``type=`` for ``int`` or ``float`` options that must be positive (and finite):
    a bad value is a usage error (exit 2) before any work, worded by the same check as the
    Python API's (:func:`sparkrank.choices.check_positive_int` / ``check_positive_float``)."""
    check = check_positive_int if kind is int else check_positive_float

    def parse(text: str):
        value = kind(text)  # not a number: argparse's own "invalid int value: 'x'"
        try:
            return check(value, "")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).strip()) from None

    parse.__name__ = kind.__name__
    return parse


POSITIVE_INT, POSITIVE_FLOAT = _positive(int), _positive(float)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true",
                   help="debug logging, and Spark's log level INFO (default: Spark warnings only, from the "
                        "JVM's first line)")
    p.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")


def _add_input(p: argparse.ArgumentParser, help_text: str) -> None:
    g = p.add_argument_group("input", INPUT_HELP)
    g.add_argument("--input", required=True, nargs="+", metavar="URI", help=help_text)
    g.add_argument("--format", choices=format_choices(), default="auto",
                   help="input format (default auto: by file names, else Parquet's PAR1 magic, else SVMlight)")
    filters = g.add_mutually_exclusive_group()
    filters.add_argument("--where", metavar="FILTER",
                         help="row filter applied before anything is built, e.g. \"day >= '2026-11-01'\", the same "
                              "on both engines: comparisons (= != <> < <= > >=), [NOT] IN (...), [NOT] BETWEEN, "
                              "IS [NOT] NULL, AND/OR/NOT, parentheses, columns and 'text', number, TRUE/FALSE "
                              "literals; no functions (see --where-sql)")
    filters.add_argument("--where-sql", metavar="SQL",
                         help="row filter in full Spark SQL (functions, LIKE, CASE ...), Spark engine only: Spark "
                              "runs the text as SQL on the executors, so give only filters you would run yourself")
    g.add_argument("--dtype", choices=DTYPES, default=defaults.DTYPE_NAME,
                   help="feature storage precision (default float64)")
    g.add_argument("--label-col", default="label", help="label column (default label)")
    g.add_argument("--qid-col", default="qid", metavar="COL[,COL...]",
                   help="group-id column(s), comma-separated for a multi-column id (default qid; "
                        "'' = one global ranking)")
    g.add_argument("--features-col", default="features",
                   help="features column: Spark ML vector or array (default features; else indices+values lists)")
    g.add_argument("--feature-cols", nargs="+", metavar="COL",
                   help="numeric columns to use as features, separated by spaces or commas as --qid-col "
                        "(remembered in the model: predict and evaluate need no repetition)")
    g.add_argument("--weight-col", metavar="COL",
                   help="row weights a >= 0: every pair (i, j) weighs a_i*a_j, as if row i were repeated a_i "
                        "times (Parquet/CSV; 0 drops the row's pairs)")
    g.add_argument("--group-weight-col", metavar="COL",
                   help="group weights b >= 0, the same on every row of a group: every pair of group q weighs "
                        "b_q, as if the group were repeated b_q times")
    g.add_argument("--max-features", type=POSITIVE_INT, metavar="N",
                   help="largest feature dimension accepted: a wider input is an error naming its line/row "
                        "(default 2^24 = 16777216, hashed feature ids; solvers keep dense weight vectors of that length)")
    g.add_argument("--drop-invalid-rows", action="store_true",
                   help="drop (and count in the log) rows with a null or non-finite label or a null "
                        "group id instead of stopping with an error")


def _add_output_mode(p: argparse.ArgumentParser, what: str) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--mode", choices=WRITE_MODES, default="error",
                   help=f"{what}: error (default) refuses an existing non-empty directory; overwrite replaces it")
    g.add_argument("--overwrite", dest="mode", action="store_const", const="overwrite",
                   help="shorthand for --mode overwrite")


def _registry_options() -> dict[str, tuple]:
    """Every solver option of the registry by name: ``(option, names of the solvers that take it)``."""
    found: dict[str, tuple] = {}
    for spec in SOLVERS.values():
        for option in spec.options:
            first, owners = found.get(option.name, (option, ()))
            found[option.name] = (first, (*owners, spec.name))
    return found


def _option_flag(option) -> str:
    """``--name``, or ``--no-name`` for a boolean that is on by default."""
    flag = option.name.replace("_", "-")
    return f"--no-{flag}" if option.type is bool and option.default is True else f"--{flag}"


def _default_text(option) -> str:
    if option.default is None or option.type is bool:  # a flag's help says what it switches
        return ""
    return f" (default {option.default:g})" if option.type is float else f" (default {option.default})"


def _add_solver_options(p: argparse.ArgumentParser) -> None:
    """One flag per option in the solver registry (:mod:`sparkrank.solvers.registry`)."""
    g = p.add_argument_group("solver-specific options")
    for name, (option, owners) in _registry_options().items():
        text = f"{', '.join(owners)}: {option.help}{_default_text(option)}"
        if option.type is bool:
            g.add_argument(_option_flag(option), dest=name, action="store_const", const=not option.default,
                           default=None, help=text)
        else:
            g.add_argument(_option_flag(option), dest=name, type=option.type, choices=option.choices,
                           default=None, help=text)


def solver_options(args) -> dict:
    """The solver-specific options given on the command line, checked against ``--solver``'s schema."""
    spec = SOLVERS[args.solver]
    options = {}
    for name, (option, owners) in _registry_options().items():
        value = getattr(args, name)
        if value is None:
            continue
        if spec.option(name) is None:
            raise ValueError(f"{_option_flag(option)} is an option of --solver {' or '.join(owners)}, "
                             f"not {args.solver}")
        options[name] = value
    return spec.check_options(options)


def _solver_help() -> str:
    return "; ".join(f"{s.name}: {s.method}" for s in SOLVERS.values()) + " (default tron)"


def _by_solver(value_of) -> str:
    """``"1; toppush 0.0625"``: the common value of a registry field, then the solvers that differ."""
    values = [value_of(s) for s in SOLVERS.values()]
    common = max(set(values), key=values.count)
    return "; ".join([f"{common:g}" if isinstance(common, float) else str(common)]
                     + [f"{s.name} {value_of(s):g}" if isinstance(value_of(s), float) else f"{s.name} {value_of(s)}"
                        for s in SOLVERS.values() if value_of(s) != common])


def _c_defaults() -> str:
    return _by_solver(lambda s: s.default_C)


def _tune_metric_defaults() -> str:
    return _by_solver(lambda s: s.tune_metric)


def _tol_help() -> str:
    return "; ".join(f"{s.name}: {s.tol_meaning} (default {s.default_tol:g})" for s in SOLVERS.values())


def _add_engine(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine")
    g.add_argument("--engine", choices=("auto", *ENGINES), default="auto",
                   help="auto (default): see below; " + "; ".join(f"{e.name}: {e.description}"
                                                                  for e in ENGINES.values()))
    g.add_argument("--master", help="Spark master URL, e.g. local[4] or spark://host:7077 (implies Spark)")
    g.add_argument("--partitions", type=POSITIVE_INT, help="Spark blocks to build (default: default parallelism)")
    g.add_argument("--placement", choices=PLACEMENTS, default=defaults.PLACEMENT,
                   help="where the pair counting runs: executor (grouped data, default), driver (one global "
                        "ranking, default) or range (one global ranking counted by score ranges on the "
                        "executors: RankSVM L1/L2, local master)")
    g.add_argument("--aggregation-depth", type=POSITIVE_INT, metavar="D",
                   help="Spark: treeAggregate depth of a pass's sums (default: 1, one stage per pass, unless "
                        "partitions x features exceed ~700k; then the executors add the sums up by slices of "
                        "columns, and the driver gets each column once)")
    g.add_argument("--driver-memory", help="Spark driver memory for the embedded session, e.g. 8g")
    g.add_argument("--conf", type=spark_setting, action="append", metavar="KEY=VALUE",
                   help="a Spark setting for the embedded session, as spark-submit's --conf (repeatable), e.g. "
                        "spark.executor.memory=4g or spark.hadoop.fs.s3a.endpoint=...")
    g.add_argument("--packages", metavar="COORDS",
                   help="Maven coordinates of jars for the embedded session, comma-separated, as spark-submit's "
                        "--packages: e.g. the s3a connector org.apache.hadoop:hadoop-aws:<Spark's Hadoop version>")
    g.add_argument("--threads", type=POSITIVE_INT, metavar="N",
                   help="local engine: threads for parsing SVMlight text, the products and the pair counting "
                        "(default: every core); "
                        "the model is the same bit for bit for any N")


def _subparser(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    return sub.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    """The ``sparkrank`` parser: one subcommand per use case of :mod:`sparkrank.app`."""
    parser = argparse.ArgumentParser(
        prog="sparkrank",
        description="Exact linear learning-to-rank without materialising pairs: L2- and L1-loss RankSVM "
                    "(TRON, BMRM), RankNCG and TopPush, in-process or on Spark.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sparkrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add in (_add_train, _add_predict, _add_evaluate, _add_convert, _add_tune, _add_report):
        add(sub)
    sub.choices["train"].add_argument(
        "--report", metavar="DIR", help="also write PNGs to DIR: convergence, and (local engine) scores by label")
    return parser


def _add_train(sub) -> None:
    """``train``: one fit, the model written."""
    p = _subparser(sub, "train", help="train a model", epilog=EPILOG,
                   description="Train a linear ranker and write the model (JSON).")
    _add_input(p, "training data")
    p.add_argument("--model", required=True, metavar="OUT",
                   help="where to write the model JSON (checked writable before training; written atomically)")
    p.add_argument("--solver", choices=tuple(SOLVERS), default=defaults.SOLVER, help=_solver_help())
    reg = p.add_mutually_exclusive_group()
    reg.add_argument("-C", "--C", dest="C", type=POSITIVE_FLOAT, help=f"LIBLINEAR-style C (default {_c_defaults()})")
    reg.add_argument("--lambda", dest="lam", type=POSITIVE_FLOAT,
                     help="BMRM-style λ (alternative to -C; solvers "
                          f"{', '.join(s.name for s in SOLVERS.values() if s.takes_lambda)})")
    p.add_argument("--tol", type=POSITIVE_FLOAT, default=None, help=_tol_help())
    p.add_argument("--counting", choices=COUNTING_METHODS, default=defaults.COUNTING,
                   help="pair-counting structure (default selection tree; 'pairs' is the O(m²) baseline)")
    p.add_argument("--max-iter", type=POSITIVE_INT, default=None, help="cap on outer iterations")
    p.add_argument("--init-model", metavar="MODEL",
                   help="warm start from this model's weights (one per feature of the data: a model of another "
                        "width is an error)")
    p.add_argument("--n-features", type=POSITIVE_INT, default=None, help="feature count (default: largest index seen)")
    _add_checkpoint_options(p, "the solver's state during the fit",
                            "from the newest checkpoint in --checkpoint-dir (same data and settings; TRON, BMRM "
                            "and NCG continue bit for bit, TopPush from its weights)")
    p.add_argument("--standardization", choices=STANDARDIZATIONS, default=defaults.STANDARDIZATION,
                   help="scale features before training (stored in the model, applied at predict); an exact "
                        "reparametrisation for any solver (default none)")
    _add_solver_options(p)
    _add_engine(p)
    _add_common(p)


def _add_predict(sub) -> None:
    """``predict``: scores of every input row."""
    p = _subparser(sub, "predict", help="score rows with a model",
                   description="Score every input row; labels are not needed (nor read).  The --output name "
                               "picks the format on both engines: *.csv is CSV, *.parquet / *.pq Parquet, "
                               "anything else the engine's own.  Local engine: one file, the prediction column "
                               "(CSV, Parquet) or one score per line (text), in input order.  Spark: a directory "
                               "(CSV part files with a header each, or Parquet; Parquet for any other name) with "
                               "the group id, the kept columns, the prediction column and (--rank) the rank "
                               "inside the group.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "rows to score")
    p.add_argument("--output", required=True, metavar="URI",
                   help="where to write the scores (*.csv: CSV, *.parquet / *.pq: Parquet; see above)")
    p.add_argument("--prediction-col", default=PREDICTION_COL,
                   help=f"name of the score column (default {PREDICTION_COL})")
    p.add_argument("--keep-cols", nargs="+", metavar="COL",
                   help="Spark: input columns to copy beside the group id and the score (default: every "
                        "column except the features)")
    p.add_argument("--rank", action="store_true",
                   help="Spark: add a column 'rank' (1 = highest score inside the group)")
    p.add_argument("--partition-by", nargs="+", metavar="COL", default=(),
                   help="Spark: write Hive partitions by these output columns (e.g. day)")
    _add_output_mode(p, "--output")
    _add_engine(p)
    _add_common(p)


def _add_evaluate(sub) -> None:
    """``evaluate``: metrics of a model on labelled rows."""
    p = _subparser(sub, "evaluate", help="ranking metrics of a model on data",
                   description="Print one JSON object: pairwise accuracy, AUC, NDCG@k, mean NDCG, objective.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "labelled rows")
    p.add_argument("--k", type=POSITIVE_INT, nargs="+", default=list(defaults.NDCG_CUTOFFS),
                   help=f"NDCG cut-offs (default {' '.join(map(str, defaults.NDCG_CUTOFFS))})")
    p.add_argument("--ndcg-discount", choices=NDCG_DISCOUNTS, default=DEFAULT_NDCG_DISCOUNT,
                   help="letor: 1/log2(max(2,i)) (default); yahoo: 1/log2(i+1)")
    p.add_argument("--zero-idcg", choices=ZERO_IDCG_RULES, default=DEFAULT_ZERO_IDCG,
                   help="NDCG of queries whose labels are all 0 (default zero, as LETOR's script)")
    p.add_argument("--per-query", metavar="URI",
                   help="also write per-query metrics: a CSV file when the name ends in .csv (text quoted, "
                        "formula-like cells prefixed with '), else Parquet (a directory on Spark, a file in-process)")
    p.add_argument("--output-json", metavar="URI", help="also write the overall metrics to this JSON file")
    _add_output_mode(p, "--per-query")
    _add_engine(p)
    _add_common(p)


def _add_convert(sub) -> None:
    """``convert``: data written in the output's format."""
    p = _subparser(sub, "convert", help="convert between SVMlight, CSV and Parquet",
                   description="Any input format -> Parquet (indices/values lists), SVMlight text, or CSV/TSV "
                               "(a header row label,qid,f1..fN and dense rows, which read back without "
                               "--feature-cols); the output's name picks the format.")
    _add_input(p, "source data")
    p.add_argument("--output", required=True,
                   help="target: *.parquet / *.pq for Parquet (a directory on Spark), *.csv / *.tsv for CSV/TSV "
                        "(in-process, up to 10,000 features), anything else for SVMlight (in-process)")
    p.add_argument("--n-features", type=POSITIVE_INT, metavar="N",
                   help="in-process: write N feature columns (default: the largest index seen), e.g. a test "
                        "file's CSV as wide as its training file's")
    p.add_argument("--partition-by", nargs="+", metavar="COL", default=(),
                   help="Spark, Parquet output: write Hive partitions by these columns")
    _add_output_mode(p, "--output")
    _add_engine(p)
    _add_common(p)


def _add_tune(sub) -> None:
    """``tune``: C picked by validation or group-wise k-fold."""
    from ..evaluation.names import METRICS_HELP

    p = _subparser(sub, "tune", help="pick C by validation or group-wise k-fold",
                   description="Train one model per C (ascending, each warm-started from the previous "
                               "C's solution), score it on held-out queries, print a table and the best C.")
    _add_input(p, "training data")
    held = p.add_mutually_exclusive_group(required=True)
    held.add_argument("--valid", metavar="URI", help="validation data (same format and columns as --input)")
    held.add_argument("--folds", type=int, metavar="K",
                      help="group-wise K-fold cross-validation on --input (whole query groups per fold)")
    grid = p.add_mutually_exclusive_group()
    grid.add_argument("--C-grid", dest="C_grid", type=float, nargs="+", metavar="C",
                      help="C values to try (default: 2^-15 .. 2^10, lee-lin2014 §4.4)")
    grid.add_argument("--C-range", dest="C_range", type=int, nargs=2, metavar=("LOW", "HIGH"),
                      help="try C = 2^LOW, 2^(LOW+1), ..., 2^HIGH")
    p.add_argument("--solver", choices=tuple(SOLVERS), default=defaults.SOLVER, help=_solver_help())
    p.add_argument("--metric", default=None, help=f"validation metric: {METRICS_HELP} (default: the solver's, "
                                                  f"{_tune_metric_defaults()})")
    p.add_argument("--tol", type=POSITIVE_FLOAT, default=None,
                   help="solver tolerance (default: the solver's); with warm starts TRON's relative rule lets "
                        "large C keep the previous C's solution (rows marked 'kept'): 1e-5 avoids that")
    p.add_argument("--max-iter", type=POSITIVE_INT, default=None, help="cap on solver iterations per C")
    p.add_argument("--counting", choices=COUNTING_METHODS, default=defaults.COUNTING,
                   help="pair-counting structure (default selection tree)")
    p.add_argument("--cold-start", action="store_true", help="train every C from w = 0 (for comparison)")
    p.add_argument("--seed", type=int, default=0, help="fold assignment seed (default 0)")
    p.add_argument("--ndcg-discount", choices=NDCG_DISCOUNTS, default=DEFAULT_NDCG_DISCOUNT,
                   help="NDCG discount (default letor)")
    p.add_argument("--zero-idcg", choices=ZERO_IDCG_RULES, default=DEFAULT_ZERO_IDCG,
                   help="NDCG of queries whose labels are all 0 (default zero)")
    p.add_argument("--model", metavar="OUT", help="write the best model (refit on all of --input after k-fold)")
    p.add_argument("--output-json", metavar="URI", help="write the per-C table and the best C as JSON")
    p.add_argument("--report", metavar="DIR", help="write PNGs to DIR: metric vs C, the best model's "
                                                   "convergence and (local engine) scores by label")
    _add_checkpoint_options(p, "every finished C (per fold) and the solver's state of the C in progress",
                            "the search recorded in --checkpoint-dir (same grid, settings and data): the same "
                            "table and best model as an undisturbed search")
    _add_solver_options(p)
    _add_engine(p)
    _add_common(p)


def _add_report(sub) -> None:
    """``report``: PNGs of models, a tune result and scores."""
    p = _subparser(sub, "report", help="draw PNGs of models, a tune result and scores",
                   description="Write PNGs: convergence of one or more models (from their history), "
                               "metric vs C (from a tune JSON), and the score distribution by label "
                               "level (a model on --input, read in this process).")
    p.add_argument("--model", nargs="+", default=[], metavar="MODEL",
                   help="model JSON files: convergence overlaid; the first also scores --input")
    p.add_argument("--tune", metavar="JSON", help="tune result (sparkrank tune --output-json)")
    _add_input(p, "labelled rows for the score distribution of the first --model (read in this process)")
    p._option_string_actions["--input"].required = False  # a tune JSON alone needs no data
    p.set_defaults(engine="local")
    p.add_argument("--raw-scores", action="store_true",
                   help="plot raw scores w·x instead of scores minus their query's mean")
    p.add_argument("--output-dir", required=True, metavar="DIR", help="where to write the PNGs")
    _add_common(p)


def _add_checkpoint_options(p, what: str, resume_help: str) -> None:
    """``--checkpoint-dir/--checkpoint-interval/--resume`` (train and tune)."""
    p.add_argument("--checkpoint-dir", metavar="URI", help=f"write {what} here (local path or Hadoop URI)")
    p.add_argument("--checkpoint-interval", type=POSITIVE_INT, default=defaults.CHECKPOINT_INTERVAL, metavar="K",
                   help="checkpoint every K solver iterations (default 1)")
    p.add_argument("--resume", action="store_true", help=f"continue {resume_help}")
