"""Command line: ``sparkrank train | predict | evaluate | convert | tune | report``.

``tune`` picks C over a grid (validation set or group-wise k-fold, warm starts, see
:mod:`sparkrank.selection`); ``report`` draws PNGs (convergence, metric vs C, scores by
label level, see :mod:`sparkrank.report`).

Every command reads SVMlight/LETOR text (``.gz`` too) or Parquet; ``sample:train`` and
``sample:test`` name the small synthetic data set bundled with the package.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

from . import __version__
from .conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from .data.block import DataError, check_max_features, feature_limit
from .kernels.counting import COUNTING_METHODS, DEFAULT_COUNTING
from .spark.errors import ClusterError
from .training import SOLVERS

ENGINES = ("spark", "local")
DEFAULT_ENGINE = "spark"

EPILOG = """\
examples:
  sparkrank train --input sample:train --model model.json            # embedded Spark, local[*]
  sparkrank train --input sample:train --model model.json --engine local
  sparkrank train --input data.parquet --model m.json --master spark://host:7077
  sparkrank evaluate --model model.json --input sample:test
  sparkrank predict --model model.json --input sample:test --output scores.txt
  sparkrank convert --input train.txt --output train.parquet
  sparkrank tune --input sample:train --valid sample:test --C-range -10 5 --model best.json --engine local
  sparkrank tune --input data.parquet --folds 5 --metric ndcg@10 --output-json tune.json --report plots/
  sparkrank report --model best.json --tune tune.json --input sample:test --output-dir plots/

Regularisation: -C is LIBLINEAR's C in ½‖w‖² + C·Σ_pairs loss; --lambda is the BMRM
λ in λ‖w‖² + (1/N)·Σ_pairs loss; they are the same model when C = 1/(2λN).
"""


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")


def _add_input(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--input", required=True, metavar="PATH", help=help_text)
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="feature storage precision (default float64)")
    p.add_argument("--label-col", default="label", help="Parquet label column (default label)")
    p.add_argument("--qid-col", default="qid", help="Parquet group-id column (default qid; missing = one ranking)")
    p.add_argument("--features-col", default="features",
                   help="Parquet features column: Spark ML vector or array (default features)")
    p.add_argument("--feature-cols", nargs="+", metavar="COL", help="numeric Parquet columns to use as features")
    p.add_argument("--max-features", type=int, metavar="N",
                   help="largest feature dimension accepted: a wider input is an error naming its line/row "
                        "(default 2^22 = 4194304; solvers keep dense weight vectors of that length)")
    p.add_argument("--drop-invalid-rows", action="store_true",
                   help="drop (and count in the log) rows with a null or non-finite label or a null "
                        "group id instead of stopping with an error")


def _add_solver_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("solver-specific options")
    g.add_argument("--gradient", choices=("fast", "direct"), default=None,
                   help="ncg: gradient by the ε-exact fast erfc sums (default) or the exact O(m²)-per-query sum")
    g.add_argument("--epsilon", type=float, default=None,
                   help="ncg: accuracy ε of the fast erfc sums, relative to Σ|q| (default 1e-6)")
    g.add_argument("--monitor", action="store_true",
                   help="ncg: compute the exact log-likelihood every iteration (an O(pairs) pass)")
    g.add_argument("--threshold", type=float, default=None,
                   help="toppush: labels above this are positives (default 0)")
    g.add_argument("--scope", choices=("group", "global"), default=None,
                   help="toppush: push each query's positives above its own top negative (group, default) "
                        "or above the top negative of one global ranking")
    g.add_argument("--no-precondition", dest="precondition", action="store_const", const=False, default=None,
                   help="tron, ncg: plain CG and the Euclidean stopping rule instead of the diagonal "
                        "preconditioner and its units-free rule (default on; see README, Conditioning)")


def _solver_options(args) -> dict:
    """The solver-specific options given on the command line, checked against ``--solver``."""
    owners = {"gradient": "ncg", "epsilon": "ncg", "monitor": "ncg", "threshold": "toppush", "scope": "toppush"}
    options = {}
    for name, solver in owners.items():
        value = getattr(args, name)
        if value is None or value is False:
            continue
        if args.solver != solver:
            raise ValueError(f"--{name} is an option of --solver {solver}, not {args.solver}")
        options[name] = value
    if args.precondition is False:
        if args.solver not in ("tron", "ncg"):
            raise ValueError(f"--no-precondition is an option of --solver tron or ncg, not {args.solver}")
        options["precondition"] = False
    return options


def _add_engine(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine")
    g.add_argument("--engine", choices=ENGINES, default=DEFAULT_ENGINE,
                   help="spark: Spark (embedded local[*] unless --master or spark-submit); local: in-process")
    g.add_argument("--master", help="Spark master URL, e.g. local[4] or spark://host:7077")
    g.add_argument("--partitions", type=int, help="Spark blocks to build (default: default parallelism)")
    g.add_argument("--placement", choices=("auto", "executor", "driver"), default="auto",
                   help="where the pair counting runs: executor (grouped data, default) or driver")
    g.add_argument("--aggregation-depth", type=int, default=2, help="treeAggregate depth (default 2)")
    g.add_argument("--driver-memory", help="Spark driver memory for the embedded session, e.g. 8g")


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

    p = sub.add_parser("train", help="train a model",
                       description="Train a linear ranker and write the model (JSON).")
    _add_input(p, "training data: SVMlight/LETOR file (.gz ok), Parquet file/dir, or sample:train")
    p.add_argument("--model", required=True, metavar="OUT", help="where to write the model JSON")
    p.add_argument("--solver", choices=tuple(SOLVERS), default="tron",
                   help="tron: L2-loss RankSVM, trust-region Newton (default); bmrm: L1-loss RankSVM, cutting "
                        "planes; ncg: log-sigmoid pairwise likelihood (RankNCG), nonlinear CG; toppush: "
                        "accuracy at the top (TopPush), accelerated projected gradient")
    reg = p.add_mutually_exclusive_group()
    reg.add_argument("-C", "--C", dest="C", type=float, help="LIBLINEAR-style C (default 1)")
    reg.add_argument("--lambda", dest="lam", type=float, help="BMRM-style λ (alternative to -C)")
    p.add_argument("--tol", type=float, default=None,
                   help="tron, ncg: relative gradient norm (default 1e-4); bmrm: absolute gap (default 1e-3); "
                        "toppush: certified relative duality gap (default 1e-3)")
    p.add_argument("--counting", choices=COUNTING_METHODS, default=DEFAULT_COUNTING,
                   help="pair-counting structure (default selection tree; 'pairs' is the O(m²) baseline)")
    p.add_argument("--max-iter", type=int, default=None, help="cap on outer iterations")
    p.add_argument("--init-model", metavar="MODEL", help="warm start from this model's weights")
    p.add_argument("--n-features", type=int, default=None, help="feature count (default: largest index seen)")
    p.add_argument("--checkpoint-dir", metavar="URI",
                   help="write the solver's state here during the fit (local path or Hadoop URI)")
    p.add_argument("--checkpoint-interval", type=int, default=1, metavar="K",
                   help="checkpoint every K iterations (default 1)")
    p.add_argument("--resume", action="store_true",
                   help="continue from the newest checkpoint in --checkpoint-dir (same data and settings; "
                        "TRON continues bit for bit)")
    p.add_argument("--standardization", choices=("none", "minmax", "standard"), default="none",
                   help="scale features before training (stored in the model, applied at predict); an exact "
                        "reparametrisation for any solver (default none)")
    _add_solver_options(p)
    _add_engine(p)
    _add_common(p)

    p = sub.add_parser("predict", help="score rows with a model",
                       description="Write one score per input row, in input order.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "rows to score (SVMlight/Parquet)")
    p.add_argument("--output", required=True, metavar="SCORES",
                   help="local engine: text file, one score per line in input order; "
                        "spark engine: Parquet directory with a score column beside the input's other columns")
    _add_engine(p)
    _add_common(p)

    p = sub.add_parser("evaluate", help="ranking metrics of a model on data",
                       description="Print one JSON object: pairwise accuracy, AUC, NDCG@k, mean NDCG, objective.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "labelled rows (SVMlight/Parquet)")
    p.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10], help="NDCG cut-offs (default 1 3 5 10)")
    p.add_argument("--ndcg-discount", choices=("letor", "yahoo"), default=DEFAULT_NDCG_DISCOUNT,
                   help="letor: 1/log2(max(2,i)) (default); yahoo: 1/log2(i+1)")
    p.add_argument("--zero-idcg", choices=("zero", "one", "skip"), default=DEFAULT_ZERO_IDCG,
                   help="NDCG of queries whose labels are all 0 (default zero, as LETOR's script)")
    p.add_argument("--per-query", metavar="PATH",
                   help="also write per-query metrics: a CSV file (local engine) or a Parquet directory (spark)")
    p.add_argument("--output-json", metavar="FILE", help="also write the overall metrics to this JSON file")
    _add_engine(p)
    _add_common(p)

    p = sub.add_parser("convert", help="convert between SVMlight and Parquet",
                       description="SVMlight/LETOR -> Parquet (indices/values lists), or Parquet -> SVMlight.")
    _add_input(p, "source file (SVMlight or Parquet)")
    p.add_argument("--output", required=True, help="target: *.parquet for Parquet, anything else for SVMlight")
    _add_engine(p)
    _add_common(p)
    _add_tune_and_report(sub)
    return parser


def _setup_logging(args) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr)
    if not args.verbose:  # py4j's INFO chatter (connections opened/closed) would drown the per-iteration lines
        logging.getLogger("py4j").setLevel(logging.WARNING)


def _load(args, n_features: int | None = None):
    from .data.io import read_ranking_data

    return read_ranking_data(args.input, n_features=n_features, dtype=np.dtype(args.dtype).type,
                             label_col=args.label_col, qid_col=args.qid_col, features_col=args.features_col,
                             drop_invalid_rows=args.drop_invalid_rows)


def _spark(args):
    from .spark.session import get_session

    conf = {"spark.driver.memory": args.driver_memory} if args.driver_memory else None
    spark = get_session(args.master, conf=conf)
    if not args.verbose:
        from .spark.errors import quiet_task_failure_logs

        quiet_task_failure_logs(spark)
    return spark


def _spark_frame(args):
    from .spark.io import Columns, read_dataframe

    return read_dataframe(_spark(args), args.input,
                          columns=Columns(args.label_col, args.qid_col, args.features_col),
                          feature_cols=args.feature_cols)


def _make_engine(args, n_features: int | None = None):
    """The engine over ``args.input``: in-process, or Spark blocks."""
    if args.engine == "local":
        from .engines.local import LocalEngine

        if args.feature_cols:
            raise ValueError("--feature-cols needs --engine spark")
        return LocalEngine(_load(args, n_features))
    from .spark.engine import SparkEngine

    df, cols = _spark_frame(args)
    return SparkEngine(df, label_col=cols.label, qid_col=cols.qid, features_col=cols.features,
                       placement=args.placement, num_partitions=args.partitions,
                       dtype=np.dtype(args.dtype).type, aggregation_depth=args.aggregation_depth,
                       n_features=n_features, drop_invalid_rows=args.drop_invalid_rows)


def _cmd_train(args) -> int:
    from .model import RankingModel
    from .training import train

    w0 = None
    init = RankingModel.load(args.init_model) if args.init_model else None
    n_features = args.n_features
    if init is not None:
        n_features = max(n_features or 0, init.n_features) or None
    check_max_features(n_features or 0, None, "--n-features / --init-model")
    with _make_engine(args, n_features) as engine:
        if init is not None:
            w0 = np.zeros(engine.summary.n_features)
            k = min(init.n_features, w0.shape[0])
            w0[:k] = init.weights[:k]
        start = _checkpoints(args, engine, w0)
        model = train(engine, solver=args.solver, C=args.C, lam=args.lam, tol=args.tol,
                      counting=args.counting, max_iter=args.max_iter, w0=start.w0,
                      solver_options=_solver_options(args), standardization=args.standardization,
                      callback=start.callback, resume=start.solver_state)
    model.summary["engine"] = args.engine
    model.save(args.model)
    s = model.summary
    print(f"trained {args.solver} on the {args.engine} engine: {s['iterations']} iterations, "
          f"objective {_objective_text(s['objective'])}, {s['seconds']:.2f}s, {s['n_pairs']} pairs; "
          f"model written to {args.model}")
    _print_convergence(args, model)
    if args.report:
        _train_report(args, model)
    return 0


def _checkpoints(args, engine, w0):
    """``--checkpoint-dir/--resume``: the start point, solver state and checkpoint writer."""
    from .checkpoints import begin
    from .training import resolve_c

    settings = {"solver": args.solver, "C": resolve_c(engine, args.C, args.lam), "tol": args.tol,
                "counting": args.counting, "options": _solver_options(args),
                "standardization": args.standardization}
    return begin(args.checkpoint_dir, interval=args.checkpoint_interval, resume=args.resume,
                 engine=engine, settings=settings, w0=w0)


def _objective_text(value: float) -> str:
    if np.isnan(value):  # RankNCG's fast gradient never needs the O(pairs) exact value
        return "not computed (ncg --gradient fast; add --monitor to compute it)"
    return f"{value:.6g}"


def _load_for_model(args, model):
    data = _load(args)
    if data.n_features > model.n_features:
        raise DataError(f"{args.input} has {data.n_features} feature columns but the model {model.source} has {model.n_features}")
    return data.with_features(model.n_features)


def _cmd_predict(args) -> int:
    from .model import RankingModel

    model = RankingModel.load(args.model)
    if args.engine == "spark":
        from .spark.predict import predict_dataframe

        df, cols = _spark_frame(args)
        predict_dataframe(df, model, features_col=cols.features).write.mode("overwrite").parquet(args.output)
        print(f"wrote scores to the Parquet directory {args.output}")
        return 0
    data = _load_for_model(args, model)
    scores = data.to_input_order(model.predict(data))
    np.savetxt(args.output, scores, fmt="%.17g")
    print(f"wrote {scores.shape[0]} scores to {args.output}")
    return 0


def _cmd_evaluate(args) -> int:
    from .evaluation import per_group_metrics
    from .evaluation.evaluate import evaluate_model
    from .model import RankingModel

    model = RankingModel.load(args.model)
    opts = dict(ks=tuple(args.k), discount=args.ndcg_discount, zero_idcg=args.zero_idcg)
    try:
        engine = _make_engine(args, model.n_features)
    except DataError as exc:  # e.g. data wider than the model: say which model
        raise DataError(f"{exc} (evaluating the model {model.source}, which has {model.n_features} weights)") from exc
    with engine:
        result = evaluate_model(model, engine, **opts)
    _print_convergence(args, model)
    print(json.dumps(result, indent=1))
    if args.output_json:
        Path(args.output_json).write_text(json.dumps(result, indent=1))
    if args.per_query and args.engine == "spark":
        from .spark.evaluate import per_query_metrics
        from .spark.predict import predict_dataframe

        df, cols = _spark_frame(args)
        if cols.qid is None:
            raise ValueError("--per-query needs a query-id column")
        scored = predict_dataframe(df, model, features_col=cols.features)
        per_query_metrics(scored, label_col=cols.label, qid_col=cols.qid, **opts) \
            .write.mode("overwrite").parquet(args.per_query)
    elif args.per_query:
        data = _load_for_model(args, model)
        _write_per_query(args.per_query, data.qids, per_group_metrics(data.groups, model.predict(data), **opts))
    return 0


def _print_convergence(args, model) -> None:
    from .model import convergence_report

    line, warn = convergence_report(model)
    print(f"sparkrank {args.command}: {'warning: ' if warn else ''}{line}", file=sys.stderr)


def _write_per_query(path: str, qids, per: dict) -> None:
    names = list(per)
    n = len(next(iter(per.values()))) if per else 0
    ids = qids if qids is not None else np.zeros(n, dtype=np.int64)
    with open(path, "w") as f:
        f.write(",".join(["qid", *names]) + "\n")
        for i in range(n):
            f.write(",".join([str(ids[i]), *(repr(float(per[k][i])) for k in names)]) + "\n")


def _cmd_convert(args) -> int:
    out = Path(args.output)
    to_parquet = out.suffix in (".parquet", ".pq")
    if args.engine == "spark" and to_parquet:
        df, cols = _spark_frame(args)
        df.write.mode("overwrite").parquet(str(out))  # label, qid, indices, values
        print(f"wrote {args.input} as the Parquet directory {out} (columns {', '.join(df.columns)})")
        return 0
    from .data.io import write_parquet
    from .data.svmlight import write_svmlight

    data = _load(args)
    if to_parquet:
        write_parquet(out, data)
    else:
        inverse = np.argsort(data.row_order)
        qid = None if data.qids is None else np.repeat(data.qids, data.groups.group_sizes)[inverse]
        write_svmlight(out, data.X[inverse], data.labels[inverse], qid)
    print(f"wrote {data.n_rows} rows ({data.n_features} features, {data.groups.n_groups} groups) to {out}")
    return 0


# ----------------------------------------------------------------------------- tune, report


def _add_tune_and_report(sub) -> None:
    """The ``tune`` and ``report`` subcommands, and ``--report DIR`` on ``train``."""
    from .selection import DEFAULT_METRIC, METRICS_HELP

    sub.choices["train"].add_argument(
        "--report", metavar="DIR", help="also write PNGs to DIR: convergence, and (local engine) scores by label")

    p = sub.add_parser("tune", help="pick C by validation or group-wise k-fold",
                       description="Train one model per C (ascending, each warm-started from the previous "
                                   "C's solution), score it on held-out queries, print a table and the best C.")
    _add_input(p, "training data: SVMlight/LETOR file (.gz ok), Parquet file/dir, or sample:train")
    held = p.add_mutually_exclusive_group(required=True)
    held.add_argument("--valid", metavar="PATH", help="validation data (same format and columns as --input)")
    held.add_argument("--folds", type=int, metavar="K",
                      help="group-wise K-fold cross-validation on --input (whole query groups per fold)")
    grid = p.add_mutually_exclusive_group()
    grid.add_argument("--C-grid", dest="C_grid", type=float, nargs="+", metavar="C",
                      help="C values to try (default: 2^-15 .. 2^10, lee-lin2014 §4.4)")
    grid.add_argument("--C-range", dest="C_range", type=int, nargs=2, metavar=("LOW", "HIGH"),
                      help="try C = 2^LOW, 2^(LOW+1), ..., 2^HIGH")
    p.add_argument("--solver", choices=tuple(SOLVERS), default="tron", help="solver (default tron)")
    p.add_argument("--metric", default=DEFAULT_METRIC, help=f"validation metric: {METRICS_HELP} "
                                                            f"(default {DEFAULT_METRIC})")
    p.add_argument("--tol", type=float, default=None,
                   help="solver tolerance (default: the solver's); with warm starts TRON's relative rule lets "
                        "large C keep the previous C's solution (rows marked 'kept'): 1e-5 avoids that")
    p.add_argument("--max-iter", type=int, default=None, help="cap on solver iterations per C")
    p.add_argument("--counting", choices=COUNTING_METHODS, default=DEFAULT_COUNTING,
                   help="pair-counting structure (default selection tree)")
    p.add_argument("--cold-start", action="store_true", help="train every C from w = 0 (for comparison)")
    p.add_argument("--seed", type=int, default=0, help="fold assignment seed (default 0)")
    p.add_argument("--ndcg-discount", choices=("letor", "yahoo"), default=DEFAULT_NDCG_DISCOUNT,
                   help="NDCG discount (default letor)")
    p.add_argument("--zero-idcg", choices=("zero", "one", "skip"), default=DEFAULT_ZERO_IDCG,
                   help="NDCG of queries whose labels are all 0 (default zero)")
    p.add_argument("--model", metavar="OUT", help="write the best model (refit on all of --input after k-fold)")
    p.add_argument("--output-json", metavar="FILE", help="write the per-C table and the best C as JSON")
    p.add_argument("--report", metavar="DIR", help="write PNGs to DIR: metric vs C, the best model's "
                                                   "convergence and (local engine) scores by label")
    _add_solver_options(p)
    _add_engine(p)
    _add_common(p)

    p = sub.add_parser("report", help="draw PNGs of models, a tune result and scores",
                       description="Write PNGs: convergence of one or more models (from their history), "
                                   "metric vs C (from a tune JSON), and the score distribution by label "
                                   "level (a model on --input).")
    p.add_argument("--model", nargs="+", default=[], metavar="MODEL",
                   help="model JSON files: convergence overlaid; the first also scores --input")
    p.add_argument("--tune", metavar="JSON", help="tune result (sparkrank tune --output-json)")
    _add_input(p, "labelled rows for the score distribution of the first --model (read in this process)")
    p._option_string_actions["--input"].required = False  # a tune JSON alone needs no data
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
    from .selection import SparkSource, tune

    opts = dict(C_grid=_c_grid(args), folds=args.folds, solver=args.solver, metric=args.metric, tol=args.tol,
                counting=args.counting, max_iter=args.max_iter, cold_start=args.cold_start, seed=args.seed,
                discount=args.ndcg_discount, zero_idcg=args.zero_idcg, solver_options=_solver_options(args))
    valid_data = None
    if args.engine == "local":
        if args.feature_cols:
            raise ValueError("--feature-cols needs --engine spark")
        train_data = _load(args)
        if args.valid:
            valid_data = _load(_with_input(args, args.valid))
        result = tune(train_data, valid=valid_data, **opts)
    else:
        engine_options = dict(placement=args.placement, num_partitions=args.partitions,
                              drop_invalid_rows=args.drop_invalid_rows,
                              dtype=np.dtype(args.dtype).type, aggregation_depth=args.aggregation_depth)

        def source(a):
            df, cols = _spark_frame(a)
            return SparkSource(df, cols.label, cols.qid, cols.features, engine_options)

        result = tune(source(args), valid=source(_with_input(args, args.valid)) if args.valid else None, **opts)
    if result.model is not None:
        result.model.summary["engine"] = args.engine
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
        paths = write_tune_report(result, args.report, data=valid_data or (train_data if args.engine == "local"
                                                                              else None))
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def _with_input(args, path: str):
    """A copy of ``args`` reading ``path`` instead of ``--input``."""
    return argparse.Namespace(**{**vars(args), "input": path})


def _train_report(args, model) -> None:
    from .report import write_training_report

    data = _load_for_model(args, model) if args.engine == "local" else None
    paths = write_training_report(model, args.report, data=data)
    print(f"wrote {', '.join(str(p) for p in paths)}")


def _cmd_report(args) -> int:
    from . import report
    from .model import RankingModel
    from .selection import load_tune_result

    if not (args.model or args.tune):
        raise ValueError("nothing to draw: give --model and/or --tune")
    if args.input and not args.model:
        raise ValueError("--input is for the score distribution and needs --model")
    out = Path(args.output_dir)
    models = [(Path(m).stem, RankingModel.load(m)) for m in args.model]
    for _, model in models:
        _print_convergence(args, model)
    paths = []
    with_history = [(name, m) for name, m in models if m.summary.get("history")]
    if with_history:
        paths.append(report.plot_convergence(with_history, out / "convergence.png"))
    elif models:
        print("the models have no iteration history; no convergence plot", file=sys.stderr)
    if args.tune:
        paths.append(report.plot_metric_vs_c(load_tune_result(args.tune), out / "metric_vs_C.png"))
    if args.input:
        if args.feature_cols:
            raise ValueError("--feature-cols is not supported by report (it reads the data in this process)")
        data = _load_for_model(args, models[0][1])
        paths.append(report.plot_score_distribution(models[0][1], data, out / "scores_by_label.png",
                                                    centered=not args.raw_scores))
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


COMMANDS = {"train": _cmd_train, "predict": _cmd_predict, "evaluate": _cmd_evaluate, "convert": _cmd_convert,
            "tune": _cmd_tune, "report": _cmd_report}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sparkrank`` console script."""
    args = build_parser().parse_args(argv)
    _setup_logging(args)
    try:
        with feature_limit(getattr(args, "max_features", None)):
            return COMMANDS[args.command](args)
    except (DataError, FileNotFoundError, ValueError, ClusterError) as exc:
        print(f"sparkrank {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a Spark job failed: a DataError raised in a task becomes the same message
        from .spark.errors import data_error_in

        data_error = data_error_in(exc)
        if data_error is None:
            raise
        print(f"sparkrank {args.command}: error: {data_error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
