"""Command line: ``sparkrank train | predict | evaluate | convert | tune | report``.

``tune`` picks C over a grid (validation set or group-wise k-fold, warm starts, see
:mod:`sparkrank.selection`); ``report`` draws PNGs (convergence, metric vs C, scores by
label level, see :mod:`sparkrank.report`).

This module parses arguments and prints; where data comes from is
:func:`sparkrank.io.sources.open_source`, which engine runs is
:mod:`sparkrank.engines.registry`, and where results go is :mod:`sparkrank.io.outputs`.
Every path is a local path, ``sample:NAME`` (the bundled sample) or a Hadoop URI
(``file:``, ``hdfs:``, ``s3a:``, ``abfss:``, ``gs:`` …).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import logging
import sys

import numpy as np

from . import __version__
from .choices import (COUNTING_METHODS, DEFAULT_COUNTING, DTYPES, NDCG_DISCOUNTS, PLACEMENTS, STANDARDIZATIONS,
                      ZERO_IDCG_RULES, check_positive_float, check_positive_int)
from .conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG, PREDICTION_COL
from .data.block import DataError, check_max_features, feature_limit
from .engines.registry import ENGINES
from .io.formats import DELTA_AVAILABLE, FORMAT_CHOICES
from .io.outputs import WRITE_MODES
from .kernels.startup import defer_numba_blas_probe
from .solvers.registry import SOLVERS

log = logging.getLogger("sparkrank")

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
    g.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
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
    g.add_argument("--dtype", choices=DTYPES, default="float64",
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
    g.add_argument("--max-features", type=POSITIVE_INT, metavar="N",
                   help="largest feature dimension accepted: a wider input is an error naming its line/row "
                        "(default 2^22 = 4194304; solvers keep dense weight vectors of that length)")
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


def _solver_options(args) -> dict:
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
    g.add_argument("--placement", choices=PLACEMENTS, default="auto",
                   help="where the pair counting runs: executor (grouped data, default) or driver")
    g.add_argument("--aggregation-depth", type=POSITIVE_INT, metavar="D",
                   help="Spark: treeAggregate depth of a pass's sums (default: 1, one stage per pass, unless "
                        "partitions x features exceed ~700k; then 2)")
    g.add_argument("--driver-memory", help="Spark driver memory for the embedded session, e.g. 8g")
    g.add_argument("--threads", type=POSITIVE_INT, metavar="N",
                   help="local engine: threads for parsing SVMlight text, the products and the pair counting "
                        "(default: every core); "
                        "the model is the same bit for bit for any N")


def _subparser(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    return sub.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def build_parser() -> argparse.ArgumentParser:
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

    p = _subparser(sub, "train", help="train a model", epilog=EPILOG,
                   description="Train a linear ranker and write the model (JSON).")
    _add_input(p, "training data")
    p.add_argument("--model", required=True, metavar="OUT",
                   help="where to write the model JSON (checked writable before training; written atomically)")
    p.add_argument("--solver", choices=tuple(SOLVERS), default="tron", help=_solver_help())
    reg = p.add_mutually_exclusive_group()
    reg.add_argument("-C", "--C", dest="C", type=POSITIVE_FLOAT, help=f"LIBLINEAR-style C (default {_c_defaults()})")
    reg.add_argument("--lambda", dest="lam", type=POSITIVE_FLOAT,
                     help="BMRM-style λ (alternative to -C; solvers "
                          f"{', '.join(s.name for s in SOLVERS.values() if s.takes_lambda)})")
    p.add_argument("--tol", type=POSITIVE_FLOAT, default=None, help=_tol_help())
    p.add_argument("--counting", choices=COUNTING_METHODS, default=DEFAULT_COUNTING,
                   help="pair-counting structure (default selection tree; 'pairs' is the O(m²) baseline)")
    p.add_argument("--max-iter", type=POSITIVE_INT, default=None, help="cap on outer iterations")
    p.add_argument("--init-model", metavar="MODEL",
                   help="warm start from this model's weights (one per feature of the data: a model of another "
                        "width is an error)")
    p.add_argument("--n-features", type=POSITIVE_INT, default=None, help="feature count (default: largest index seen)")
    _add_checkpoint_options(p, "the solver's state during the fit",
                            "from the newest checkpoint in --checkpoint-dir (same data and settings; TRON, BMRM "
                            "and NCG continue bit for bit, TopPush from its weights)")
    p.add_argument("--standardization", choices=STANDARDIZATIONS, default="none",
                   help="scale features before training (stored in the model, applied at predict); an exact "
                        "reparametrisation for any solver (default none)")
    _add_solver_options(p)
    _add_engine(p)
    _add_common(p)

    p = _subparser(sub, "predict", help="score rows with a model",
                   description="Score every input row; labels are not needed (nor read).  Local engine: a text "
                               "file, one score per line in input "
                               "order.  Spark: a Parquet directory with the group id, the kept columns, the "
                               "prediction column and (--rank) the rank inside the group.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "rows to score")
    p.add_argument("--output", required=True, metavar="URI", help="where to write the scores")
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

    p = _subparser(sub, "evaluate", help="ranking metrics of a model on data",
                   description="Print one JSON object: pairwise accuracy, AUC, NDCG@k, mean NDCG, objective.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "labelled rows")
    p.add_argument("--k", type=POSITIVE_INT, nargs="+", default=[1, 3, 5, 10], help="NDCG cut-offs (default 1 3 5 10)")
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
    _add_tune_and_report(sub)
    return parser


def _setup_logging(args) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr)
    # py4j's INFO/DEBUG chatter (every gateway message) would drown the per-iteration lines
    logging.getLogger("py4j").setLevel(logging.WARNING)


def _row_filter(args) -> tuple[str | None, bool]:
    """``(filter, is Spark SQL)`` of ``--where`` / ``--where-sql``; a ``--where`` outside its
    grammar is refused here, before an engine starts (the same line on both engines)."""
    sql = getattr(args, "where_sql", None)
    if sql:
        return sql, True
    if args.where:
        from .io.where import parse_filter

        parse_filter(args.where)
    return args.where, False


class _Inputs:
    """For one command: the engine (``--engine auto`` decided and logged first), the Spark
    session when that engine is Spark, and the sources of ``--input``/``--valid``."""

    def __init__(self, args, *, model=None, extra_uris: tuple[str, ...] = ()):
        from .engines.registry import choose_engine

        self.args = args
        self.where, self.where_sql = _row_filter(args)
        self.kind, reason = choose_engine(getattr(args, "engine", "local"), [*args.input, *extra_uris],
                                          master=getattr(args, "master", None), where=self.where,
                                          where_sql=self.where_sql, format=args.format)
        if self.where_sql and self.kind != "spark":
            from .io.sources import refuse_where_sql_locally

            raise ValueError(refuse_where_sql_locally(self.where))
        log.info("engine: %s (%s)", self.kind, reason)
        self.spark = _spark(args) if self.kind == "spark" else None
        self.columns = _columns(args, model)

    def source(self, uris=None, columns=None):
        """The source of ``uris`` (default ``--input``) with these column roles (default the command
        line's; a validation input passes its training input's, CSV feature columns included)."""
        from .io.sources import open_source

        return open_source(uris or self.args.input, format=self.args.format, columns=columns or self.columns,
                           where=self.where, where_sql=self.where_sql, spark=self.spark)

    def engine(self, source, n_features: int | None = None):
        from .engines.registry import make_engine

        a = self.args
        options = dict(n_features=n_features, dtype=np.dtype(a.dtype).type, drop_invalid_rows=a.drop_invalid_rows)
        threads = getattr(a, "threads", None)
        if self.kind == "spark":
            if threads is not None:
                raise ValueError("--threads is an option of the local engine; Spark uses its executors' cores")
            options.update(spark=self.spark, placement=a.placement, num_partitions=a.partitions,
                           aggregation_depth=a.aggregation_depth)
        else:
            options.update(threads=threads)
        return make_engine(source, self.kind, **options)

    def ranking_data(self, source, model=None):
        """Rows in this process; with a model, padded to its width (wider data is an error)."""
        data = source.ranking_data(dtype=np.dtype(self.args.dtype).type,
                                   drop_invalid_rows=self.args.drop_invalid_rows)
        if model is None:
            return data
        model.check_width(data.n_features, source.name)
        return data.with_features(model.n_features)


def _columns(args, model=None):
    """The column roles of the command line; a model's remembered feature columns by default."""
    from .io.sources import ColumnSpec

    remembered = (model.summary.get("feature_cols") or None) if model is not None else None
    # "f1,f2" as --qid-col takes several columns, or "f1 f2"
    given = [name for item in args.feature_cols for name in ColumnSpec.parse_group(item)] if args.feature_cols else None
    if given and remembered and list(given) != list(remembered):
        raise ValueError(f"the model was trained on --feature-cols {' '.join(remembered)}; "
                         f"--feature-cols {' '.join(given)} differs")
    return ColumnSpec(args.label_col, ColumnSpec.parse_group(args.qid_col), args.features_col,
                      tuple(given or remembered or ()))


def _spark(args):
    from .spark.session import get_session

    conf = {"spark.driver.memory": args.driver_memory} if getattr(args, "driver_memory", None) else None
    spark = get_session(getattr(args, "master", None), conf=conf, log_level="INFO" if args.verbose else "WARN")
    if not args.verbose:
        from .spark.errors import quiet_query_context_logs, quiet_task_failure_logs

        quiet_task_failure_logs(spark)
        quiet_query_context_logs()
    return spark


def _load_model(path: str):
    from .model import RankingModel

    return RankingModel.load(path)


def _cmd_train(args) -> int:
    from .io.outputs import check_output_file
    from .objectives.base import require_pairs
    from .training import train

    solver_options = _solver_options(args)  # bad options fail before any Spark job
    inputs = _Inputs(args)
    check_output_file(args.model, inputs.spark)  # a bad --model path fails now, not after training
    if args.report:
        _check_report_dir(args.report, inputs.spark)
    init = _load_model(args.init_model) if args.init_model else None
    check_max_features(args.n_features or 0, None, "--n-features")
    source = inputs.source()
    with inputs.engine(source, args.n_features) as engine:
        require_pairs(engine, source.name + (f" (--where {args.where!r})" if args.where else ""))
        w0 = None if init is None else _init_weights(args, init, engine.summary.n_features)
        start = _checkpoints(args, engine, w0)
        model = train(engine, solver=args.solver, C=args.C, lam=args.lam, tol=args.tol,
                      counting=args.counting, max_iter=args.max_iter, w0=start.w0,
                      solver_options=solver_options, standardization=args.standardization,
                      callback=start.callback, resume=start.solver_state)
    _remember_source(model, inputs, source)
    model.save(args.model)
    s = model.summary
    print(f"trained {args.solver} on the {inputs.kind} engine: {s['iterations']} iterations, "
          f"objective {_objective_text(s['objective'])}, {s['seconds']:.2f}s, {s['n_pairs']} pairs; "
          f"model written to {args.model}")
    _print_convergence(args, model)
    if args.report:
        _train_report(args, model, inputs)
    return 0


def _init_weights(args, init, n_features: int) -> np.ndarray:
    """``--init-model``'s weights as the start point on data of ``n_features`` columns.

    The data's width is decided first (its largest feature, or ``--n-features``) and the
    model must match it: padding would blame the data for features the model has, and cutting
    or widening would silently train another model than the one asked for.
    """
    if init.n_features != n_features:
        hint = (f"; --n-features {init.n_features} reads the data as wide as the model"
                if init.n_features > n_features and args.n_features is None else "")
        raise DataError(f"--init-model {args.init_model} has {init.n_features} weights but the data has "
                        f"{n_features} features{hint}")
    return init.weights.copy()


def _remember_source(model, inputs: "_Inputs", source) -> None:
    """What a later predict/evaluate must not have to repeat (the feature columns, named or, for
    CSV, taken from the header)."""
    model.summary["engine"] = inputs.kind
    if source.columns.feature_cols:
        model.summary["feature_cols"] = list(source.columns.feature_cols)


def _check_report_dir(directory: str, spark) -> None:
    from .io.fs import filesystem

    try:
        filesystem(directory, spark).probe_writable(directory)
    except OSError as exc:
        raise OSError(f"cannot write the report to {directory}: {exc}") from None


def _add_checkpoint_options(p, what: str, resume_help: str) -> None:
    """``--checkpoint-dir/--checkpoint-interval/--resume`` (train and tune)."""
    p.add_argument("--checkpoint-dir", metavar="URI", help=f"write {what} here (local path or Hadoop URI)")
    p.add_argument("--checkpoint-interval", type=POSITIVE_INT, default=1, metavar="K",
                   help="checkpoint every K solver iterations (default 1)")
    p.add_argument("--resume", action="store_true", help=f"continue {resume_help}")


def _checkpoints(args, engine, w0):
    """``--checkpoint-dir/--resume``: the start point, solver state and checkpoint writer."""
    from .checkpoints import begin
    from .training import resolve_c

    settings = {"solver": args.solver, "C": resolve_c(engine, args.C, args.lam, args.solver), "tol": args.tol,
                "counting": args.counting, "options": _solver_options(args),
                "standardization": args.standardization}
    return begin(args.checkpoint_dir, interval=args.checkpoint_interval, resume=args.resume,
                 engine=engine, settings=settings, w0=w0)


def _objective_text(value: float) -> str:
    if np.isnan(value):  # RankNCG's fast gradient never needs the O(pairs) exact value
        return "not computed (ncg --gradient fast; add --monitor to compute it)"
    return f"{value:.6g}"


def _cmd_predict(args) -> int:
    from .io.fs import filesystem
    from .io.outputs import check_output_dir, check_output_file

    model = _load_model(args.model)
    inputs = _Inputs(args, model=model)
    # scoring reads no labels: unlabelled rows are what a model is for
    columns = dataclasses.replace(inputs.columns, labels=False)
    if inputs.kind == "spark":
        check_output_dir(args.output, args.mode, inputs.spark)
        scored = _spark_scores(args, inputs, model, inputs.source(columns=columns))
        from .io.outputs import write_dataframe

        write_dataframe(scored, args.output, mode=args.mode, partition_by=args.partition_by)
        print(f"wrote scores ({', '.join(scored.columns)}) to the Parquet directory {args.output}")
        return 0
    spark_only = [f"--{n.replace('_', '-')}" for n in ("keep_cols", "rank", "partition_by") if getattr(args, n)]
    if spark_only:
        raise ValueError(f"{', '.join(spark_only)} shape the Parquet output of the Spark engine; "
                         "the local engine writes one score per line")
    check_output_file(args.output)
    source = inputs.source(columns=columns)
    data = inputs.ranking_data(source, model)
    scores = data.to_input_order(model.predict(data))
    filesystem(args.output).write_text(args.output, "".join(f"{v:.17g}\n" for v in scores))
    print(f"wrote {scores.shape[0]} scores to {args.output}")
    return 0


def _spark_scores(args, inputs: "_Inputs", model, source):
    """The scored DataFrame ``predict`` writes from ``source``: group id, kept columns,
    prediction, rank."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from .spark.predict import predict_dataframe

    df, cols = source.dataframe(inputs.spark)
    pred = args.prediction_col
    scored = predict_dataframe(df, model, features_col=cols.features, score_col=pred, data_name=source.name)
    group = [g for g in inputs.columns.group if g in scored.columns]
    if cols.qid and cols.qid not in group:
        group.append(cols.qid)
    if args.keep_cols:
        missing = [c for c in args.keep_cols if c not in scored.columns]
        if missing:
            raise DataError(f"{source.name}: --keep-cols {', '.join(missing)}: no such column; columns are "
                            f"{', '.join(c for c in scored.columns if c != pred)}")
        keep = [c for c in [*group, *args.keep_cols, *args.partition_by] if c != pred]
        scored = scored.select(*dict.fromkeys(keep), pred)
    elif source.columns.feature_cols:  # "every column except the features": named ones too
        scored = scored.drop(*[c for c in source.columns.feature_cols if c not in (*group, *args.partition_by)])
    if args.rank:
        order = F.col(pred).desc()
        window = Window.partitionBy(*[F.col(f"`{g}`") for g in group]).orderBy(order) if group \
            else Window.orderBy(order)
        scored = scored.withColumn("rank", F.row_number().over(window))
    return scored


def _strict_json(metrics: dict) -> str:
    """``metrics`` as standard JSON: an undefined metric (NaN: no query with a pair, or with a
    positive) is ``null``, which every JSON parser reads (Python's ``NaN`` token is not JSON)."""
    def finite(v):
        return None if isinstance(v, float) and not np.isfinite(v) else v

    return json.dumps({k: finite(v) for k, v in metrics.items()}, indent=1, allow_nan=False)


def _cmd_evaluate(args) -> int:
    from .engines.padded import PaddedEngine
    from .evaluation.evaluate import evaluate_model
    from .io.fs import filesystem
    from .io.outputs import check_output_dir, check_output_file

    model = _load_model(args.model)
    inputs = _Inputs(args, model=model)
    per_query_csv = bool(args.per_query) and args.per_query.lower().endswith(".csv")
    if args.output_json:
        check_output_file(args.output_json, inputs.spark)
    if args.per_query and inputs.kind == "spark" and not per_query_csv:
        check_output_dir(args.per_query, args.mode, inputs.spark)
    elif args.per_query:
        check_output_file(args.per_query, inputs.spark)
    opts = dict(ks=tuple(args.k), discount=args.ndcg_discount, zero_idcg=args.zero_idcg)
    source = inputs.source()
    # the rows at their own width: wider than the model is predict's error, on both engines;
    # narrower, they are evaluated with the model's width (engines/padded.py)
    with inputs.engine(source) as engine:
        model.check_width(engine.summary.n_features, source.name)
        if engine.summary.n_rows == 0:  # every metric would be NaN: most likely a --where that keeps nothing
            raise DataError(f"{source.name}: no data rows to evaluate" + (
                f" ({source.filter_option} {source.where!r})" if source.where else ""))
        result = evaluate_model(model, PaddedEngine(engine, model.n_features), **opts)
    _print_convergence(args, model)
    text = _strict_json(result)
    print(text)
    if args.output_json:
        filesystem(args.output_json, inputs.spark).write_text(args.output_json, text)
    if args.per_query:
        _write_per_query(args, inputs, source, model, opts, per_query_csv)
    return 0


def _print_convergence(args, model) -> None:
    from .model import convergence_report

    line, warn = convergence_report(model)
    print(f"sparkrank {args.command}: {'warning: ' if warn else ''}{line}", file=sys.stderr)


def _write_per_query(args, inputs: "_Inputs", source, model, opts: dict, as_csv: bool) -> None:
    from .io.outputs import write_csv, write_dataframe

    if not inputs.columns.group:
        raise ValueError("--per-query needs a group id (--qid-col)")
    if inputs.kind == "spark":
        from .spark.evaluate import per_query_metrics
        from .spark.predict import predict_dataframe

        df, cols = source.dataframe(inputs.spark)
        if cols.qid is None:
            raise DataError(f"{source.name} has no qid: tokens; --per-query needs a group id")
        scored = predict_dataframe(df, model, features_col=cols.features, score_col=PREDICTION_COL)
        per = per_query_metrics(scored, label_col=cols.label, qid_col=cols.qid, score_col=PREDICTION_COL, **opts)
        if as_csv:  # one row per query, gathered to write one CSV file
            rows = [r for r in per.orderBy(cols.qid).collect()]
            write_csv(args.per_query, per.columns, [list(r) for r in rows], inputs.spark)
        else:
            write_dataframe(per, args.per_query, mode=args.mode)
        return
    from .evaluation import per_group_metrics

    data = inputs.ranking_data(source, model)
    if data.qids is None:
        raise DataError(f"{source.name} has no group ids; --per-query needs them")
    per = per_group_metrics(data.groups, model.predict(data), **opts)
    header = [inputs.columns.group_name or "qid", *per]
    columns = [data.qids.tolist(), *[per[k].tolist() for k in per]]  # counts stay integers, as on Spark
    rows = list(zip(*columns))
    if as_csv:
        write_csv(args.per_query, header, rows)
    else:
        _write_local_parquet(args.per_query, header, columns)


def _write_local_parquet(path: str, names: list[str], columns: list[list]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .io.fs import filesystem

    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(dict(zip(names, columns))), sink)
    filesystem(path).write_bytes(path, sink.getvalue().to_pybytes())


def _cmd_convert(args) -> int:
    from .io import uri as U
    from .io.outputs import check_output_dir, check_output_file
    from .io.sources import DELIMITED

    out = args.output
    suffix = U.basename(out).lower().rsplit(".", 1)[-1]
    to_parquet = suffix in ("parquet", "pq")
    inputs = _Inputs(args)
    if inputs.kind == "spark" and args.n_features is not None:
        raise ValueError("--n-features is written in-process: use --engine local")
    if inputs.kind == "spark" and to_parquet:
        from .io.outputs import write_dataframe
        from .io.sources import FEATURES_FROM_COLUMNS

        check_output_dir(out, args.mode, inputs.spark)
        df, cols = inputs.source().dataframe(inputs.spark)
        if cols.features == FEATURES_FROM_COLUMNS and "features" not in df.columns:
            df = df.withColumnRenamed(FEATURES_FROM_COLUMNS, "features")
        write_dataframe(df, out, mode=args.mode, partition_by=args.partition_by)
        print(f"wrote {', '.join(args.input)} as the Parquet directory {out} (columns {', '.join(df.columns)})")
        return 0
    if inputs.kind == "spark":
        raise ValueError("SVMlight and CSV/TSV text is written in-process: use --engine local (or a .parquet output)")
    check_max_features(args.n_features or 0, None, "--n-features")
    if args.partition_by:
        raise ValueError("--partition-by needs the Spark engine")
    check_output_file(out)
    from .data.io import write_parquet

    source = inputs.source()
    data = inputs.ranking_data(source)
    if args.n_features is not None:
        if args.n_features < data.n_features:
            raise DataError(f"{source.name} has {data.n_features} feature columns, more than "
                            f"--n-features {args.n_features}")
        data = data.with_features(args.n_features)
    if to_parquet:
        write_parquet(out, data)
    elif suffix in DELIMITED:
        _write_text_output(out, lambda tmp: _write_delimited(tmp, data, DELIMITED[suffix]))
    else:
        _write_text_output(out, lambda tmp: _write_svmlight(tmp, data))
    print(f"wrote {data.n_rows} rows ({data.n_features} features, {data.groups.n_groups} groups) to {out}")
    return 0


#: The widest data ``convert`` writes as CSV/TSV, whose rows are dense (use Parquet beyond).
MAX_DELIMITED_FEATURES = 10_000


def _input_order(data) -> tuple[np.ndarray, np.ndarray | None]:
    """The row permutation back to input order, and each row's qid in that order (``None``:
    one ranking without qids)."""
    inverse = np.argsort(data.row_order)
    qid = None if data.qids is None else np.repeat(data.qids, data.groups.group_sizes)[inverse]
    return inverse, qid


def _write_svmlight(path: str, data) -> None:
    """``data`` as SVMlight text in input order, to the local ``path``."""
    from .data.svmlight import write_svmlight

    inverse, qid = _input_order(data)
    write_svmlight(path, data.X[inverse], data.labels[inverse], qid)


def _write_delimited(path: str, data, delimiter: str) -> None:
    """``data`` in input order to the local ``path`` as a header row ``label[,qid],f1..fN`` and
    dense rows (numbers at full precision: read back, they are the same doubles); a CSV input
    without ``--feature-cols`` reads every column but the label and qid as its features."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    if data.n_features > MAX_DELIMITED_FEATURES:
        raise ValueError(f"CSV/TSV rows are dense: {data.n_features} features is more than "
                         f"{MAX_DELIMITED_FEATURES}; write Parquet (.parquet) or SVMlight instead")
    inverse, qid = _input_order(data)
    X = data.X[inverse]
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    columns = {"label": pa.array(data.labels[inverse])}
    if qid is not None:
        columns["qid"] = pa.array(qid)
    for j in range(data.n_features):
        columns[f"f{j + 1}"] = pa.array(X[:, j].astype(np.float64))
    pcsv.write_csv(pa.table(columns), path, write_options=pcsv.WriteOptions(delimiter=delimiter,
                                                                             quoting_style="needed"))


def _write_text_output(out: str, write_local) -> None:
    """Write a file with ``write_local(local_path)`` and move it, atomically, to a path or URI."""
    import os
    import tempfile

    from .io.fs import LOCAL, FileError, filesystem

    fd, tmp = tempfile.mkstemp(suffix=".sparkrank.tmp")
    os.close(fd)
    try:
        try:
            write_local(tmp)
        except OSError as exc:  # the system's temporary directory is full: say which file it was for
            raise FileError(f"cannot write {out} (through {tmp})", exc.strerror or str(exc), exc.errno) from None
        filesystem(out).write_bytes(out, LOCAL.read_bytes(tmp))
    finally:
        os.remove(tmp)


# ----------------------------------------------------------------------------- tune, report


def _add_tune_and_report(sub) -> None:
    """The ``tune`` and ``report`` subcommands, and ``--report DIR`` on ``train``."""
    from .evaluation.names import METRICS_HELP

    sub.choices["train"].add_argument(
        "--report", metavar="DIR", help="also write PNGs to DIR: convergence, and (local engine) scores by label")

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
    p.add_argument("--solver", choices=tuple(SOLVERS), default="tron", help=_solver_help())
    p.add_argument("--metric", default=None, help=f"validation metric: {METRICS_HELP} (default: the solver's, "
                                                  f"{_tune_metric_defaults()})")
    p.add_argument("--tol", type=POSITIVE_FLOAT, default=None,
                   help="solver tolerance (default: the solver's); with warm starts TRON's relative rule lets "
                        "large C keep the previous C's solution (rows marked 'kept'): 1e-5 avoids that")
    p.add_argument("--max-iter", type=POSITIVE_INT, default=None, help="cap on solver iterations per C")
    p.add_argument("--counting", choices=COUNTING_METHODS, default=DEFAULT_COUNTING,
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


def _c_grid(args):
    from .selection import c_grid_from_range

    if args.C_range:
        return c_grid_from_range(*args.C_range)
    return args.C_grid


def _cmd_tune(args) -> int:
    from .io.outputs import check_output_file
    from .selection import SparkSource, tune

    solver_options = _solver_options(args)  # bad options fail before any Spark job
    inputs = _Inputs(args, extra_uris=(args.valid,) if args.valid else ())
    for path in (args.model, args.output_json):
        if path:
            check_output_file(path, inputs.spark)
    if args.report:
        _check_report_dir(args.report, inputs.spark)
    opts = dict(C_grid=_c_grid(args), folds=args.folds, solver=args.solver, metric=args.metric, tol=args.tol,
                counting=args.counting, max_iter=args.max_iter, cold_start=args.cold_start, seed=args.seed,
                discount=args.ndcg_discount, zero_idcg=args.zero_idcg, solver_options=solver_options,
                checkpoint_dir=args.checkpoint_dir, checkpoint_interval=args.checkpoint_interval, resume=args.resume)
    train_source = inputs.source()
    valid_source = inputs.source([args.valid], train_source.columns) if args.valid else None
    if valid_source is not None:
        opts["names"] = (f"--input {train_source.name}", f"--valid {valid_source.name}")
    train_data = valid_data = None
    if inputs.kind == "local":
        train_data = inputs.ranking_data(train_source)
        valid_data = inputs.ranking_data(valid_source) if valid_source else None
        result = tune(train_data, valid=valid_data, **opts)
    else:
        engine_options = dict(placement=args.placement, num_partitions=args.partitions,
                              drop_invalid_rows=args.drop_invalid_rows,
                              dtype=np.dtype(args.dtype).type, aggregation_depth=args.aggregation_depth)

        def spark_source(source):
            df, cols = source.dataframe(inputs.spark)
            return SparkSource(df, cols.label, cols.qid, cols.features, engine_options)

        result = tune(spark_source(train_source), valid=spark_source(valid_source) if valid_source else None,
                      **opts)
    if result.model is not None:
        _remember_source(result.model, inputs, train_source)
    print(result.table())
    best = result.best_row
    how = f"{result.folds}-fold" if result.mode == "kfold" else "validation"
    print(f"best C = {result.best_C:.6g} (log2 C = {np.log2(result.best_C):g}): {how} {result.metric} "
          f"{best.metric:.5f}; {result.total_iterations} solver iterations, {result.seconds:.1f}s in all")
    if args.output_json:
        result.save(args.output_json)
        print(f"wrote the tune result to {args.output_json}")
    if args.model and result.model is not None:
        result.model.save(args.model)
        print(f"wrote the best model to {args.model}")
    if args.report:
        from .report import write_tune_report

        # the score distribution needs the rows in this process: only with the local engine
        paths = write_tune_report(result, args.report, data=valid_data or train_data)
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def _train_report(args, model, inputs: "_Inputs") -> None:
    from .report import write_training_report

    data = inputs.ranking_data(inputs.source(), model) if inputs.kind == "local" else None
    paths = write_training_report(model, args.report, data=data)
    print(f"wrote {', '.join(str(p) for p in paths)}")


def _cmd_report(args) -> int:
    from . import report
    from .io import uri as U
    from .selection import load_tune_result

    if not (args.model or args.tune):
        raise ValueError("nothing to draw: give --model and/or --tune")
    if args.input and not args.model:
        raise ValueError("--input is for the score distribution and needs --model")
    out = args.output_dir
    _check_report_dir(out, None)
    models = [(U.basename(m).rsplit(".", 1)[0], _load_model(m)) for m in args.model]
    for _, model in models:
        _print_convergence(args, model)
    paths = []
    with_history = [(name, m) for name, m in models if m.summary.get("history")]
    if with_history:
        paths.append(report.plot_convergence(with_history, U.join(out, "convergence.png")))
    elif models:
        print("the models have no iteration history; no convergence plot", file=sys.stderr)
    if args.tune:
        paths.append(report.plot_metric_vs_c(load_tune_result(args.tune), U.join(out, "metric_vs_C.png")))
    if args.input:
        inputs = _Inputs(args, model=models[0][1])
        data = inputs.ranking_data(inputs.source(), models[0][1])
        paths.append(report.plot_score_distribution(models[0][1], data, U.join(out, "scores_by_label.png"),
                                                    centered=not args.raw_scores))
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


COMMANDS = {"train": _cmd_train, "predict": _cmd_predict, "evaluate": _cmd_evaluate, "convert": _cmd_convert,
            "tune": _cmd_tune, "report": _cmd_report}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sparkrank`` console script: the command's exit status, every known
    failure reported in one line (:func:`sparkrank.failures.run_command`)."""
    from .failures import run_command

    args = build_parser().parse_args(argv)
    _setup_logging(args)

    def command() -> int:
        with feature_limit(getattr(args, "max_features", None)):
            return COMMANDS[args.command](args)

    return run_command(args.command, command)


def run(argv: list[str] | None = None) -> None:
    """The ``sparkrank`` console script (and the ``jobs/`` scripts): :func:`main` on ``argv``
    (default ``sys.argv[1:]``), then exit with its status."""
    from .failures import exit_process

    # numba's first dispatch would import scipy.linalg only to probe for BLAS (0.25 s, ~13 MB)
    defer_numba_blas_probe()
    # This process owns the interpreter.  What the imports built (numba's ~100k compiler and
    # typing objects, ~770 modules) lives until exit: in the permanent generation the full
    # collections that the run's allocations trigger do not walk it again (whole-process
    # TRON on 300k x 136: median 4.66 -> 4.50 s over 6 alternating runs).
    gc.freeze()
    status = main(argv)
    # The process ends here: freeze what the run made too, so the interpreter's shutdown does
    # not run the cyclic collector over it (0.15 s of every run); memory goes back to the OS
    # at exit anyway.
    gc.freeze()
    exit_process(status)


if __name__ == "__main__":  # pragma: no cover
    run()
