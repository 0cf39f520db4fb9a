"""What each subcommand does: its arguments as settings, one call of :mod:`sparkrank.app`, and the
lines it prints.

Every path is a local path, ``sample:NAME`` (the bundled sample) or a Hadoop URI (``file:``,
``hdfs:``, ``s3a:``, ``abfss:``, ``gs:`` …).
"""

from __future__ import annotations

import sys

import numpy as np

from .. import app
from ..engines.backend import EngineSettings, ScoreOutput
from .parser import solver_options


def _inputs(args, uris=None) -> app.InputSettings:
    sql = getattr(args, "where_sql", None)
    return app.InputSettings(tuple(uris or args.input), format=args.format, where=sql or args.where,
                             where_sql=bool(sql),
                             label_col=args.label_col, qid_col=args.qid_col, features_col=args.features_col,
                             feature_cols=tuple(args.feature_cols or ()),
                             weight_col=getattr(args, "weight_col", None) or None,
                             group_weight_col=getattr(args, "group_weight_col", None) or None)


def _run(args) -> app.RunSettings:
    """The engine asked for and its settings (options a subcommand lacks keep their defaults)."""
    settings = EngineSettings(
        dtype=args.dtype, drop_invalid_rows=args.drop_invalid_rows, threads=getattr(args, "threads", None),
        master=getattr(args, "master", None), driver_memory=getattr(args, "driver_memory", None),
        spark_conf=tuple(getattr(args, "conf", None) or ()), packages=getattr(args, "packages", None),
        partitions=getattr(args, "partitions", None), placement=getattr(args, "placement", "auto"),
        aggregation_depth=getattr(args, "aggregation_depth", None), verbose=args.verbose)
    return app.RunSettings(getattr(args, "engine", "local"), settings)


def _print_convergence(args, model) -> None:
    from ..model import convergence_report

    line, warn = convergence_report(model)
    print(f"sparkrank {args.command}: {'warning: ' if warn else ''}{line}", file=sys.stderr)


def _objective_text(value: float) -> str:
    if np.isnan(value):  # RankNCG's fast gradient never needs the O(pairs) exact value
        return "not computed (ncg --gradient fast; add --monitor to compute it)"
    return f"{value:.6g}"


def _wrote(paths) -> None:
    print(f"wrote {', '.join(str(p) for p in paths)}")


def train(args) -> int:
    settings = app.FitSettings(solver=args.solver, C=args.C, lam=args.lam, tol=args.tol, counting=args.counting,
                               max_iter=args.max_iter, solver_options=solver_options(args),  # checked before any job
                               standardization=args.standardization, n_features=args.n_features)
    inputs = _inputs(args)
    backend = app.open_backend(inputs, _run(args))
    done = app.train_model(backend, inputs, settings, model_path=args.model, init_model=args.init_model,
                           checkpoints=app.CheckpointSettings(args.checkpoint_dir, args.checkpoint_interval,
                                                              args.resume),
                           report_dir=args.report)
    s = done.model.summary
    pairs = f"{s['n_pairs']} pairs" + (f", trained on the {s['training_pairs']} {done.model.pairs} ones"
                                       if "training_pairs" in s else "")
    print(f"trained {args.solver} on the {done.engine} engine: {s['iterations']} iterations, "
          f"objective {_objective_text(s['objective'])}, {s['seconds']:.2f}s, {pairs}; "
          f"model written to {args.model}")
    _print_convergence(args, done.model)
    if args.report:
        _wrote(done.report)
    return 0


def predict(args) -> int:
    model = app.load_model(args.model)
    inputs = _inputs(args)
    backend = app.open_backend(inputs, _run(args))
    out = ScoreOutput(args.output, args.prediction_col, args.keep_cols, args.rank, tuple(args.partition_by), args.mode)
    print(app.predict(backend, inputs, model, out))
    return 0


def evaluate(args) -> int:
    model = app.load_model(args.model)
    inputs = _inputs(args)
    backend = app.open_backend(inputs, _run(args))
    result = app.evaluate(backend, inputs, model, app.EvaluateSettings(
        tuple(args.k), args.ndcg_discount, args.zero_idcg, args.output_json, args.per_query, args.mode))
    _print_convergence(args, model)
    print(app.strict_json(result))
    return 0


def convert(args) -> int:
    inputs = _inputs(args)
    backend = app.open_backend(inputs, _run(args))
    print(app.convert(backend, inputs, app.ConvertSettings(args.output, args.n_features, args.partition_by,
                                                           args.mode)))
    return 0


def tune(args) -> int:
    from ..selection import c_grid_from_range

    settings = app.TuneSettings(
        C_grid=c_grid_from_range(*args.C_range) if args.C_range else args.C_grid, valid=args.valid,
        folds=args.folds, solver=args.solver, metric=args.metric, tol=args.tol, counting=args.counting,
        max_iter=args.max_iter, solver_options=solver_options(args),  # checked before any Spark job
        cold_start=args.cold_start, seed=args.seed, discount=args.ndcg_discount, zero_idcg=args.zero_idcg,
        checkpoint_dir=args.checkpoint_dir, checkpoint_interval=args.checkpoint_interval, resume=args.resume,
        model=args.model, output_json=args.output_json, report=args.report)
    inputs = _inputs(args)
    backend = app.open_backend(inputs, _run(args), extra_uris=(args.valid,) if args.valid else ())
    done = app.tune(backend, inputs, settings)
    result = done.result
    print(result.table())
    best = result.best_row
    how = f"{result.folds}-fold" if result.mode == "kfold" else "validation"
    print(f"best C = {result.best_C:.6g} (log2 C = {np.log2(result.best_C):g}): {how} {result.metric} "
          f"{best.metric:.5f}; {result.total_iterations} solver iterations, {result.seconds:.1f}s in all")
    if args.output_json:
        print(f"wrote the tune result to {args.output_json}")
    if args.model and result.model is not None:
        print(f"wrote the best model to {args.model}")
    if args.report:
        _wrote(done.report)
    return 0


def report(args) -> int:
    inputs = _inputs(args) if args.input else None
    # the rows of the score distribution are read in this process (--engine local, the default here)
    backend = app.open_backend(inputs, _run(args)) if inputs is not None and args.model else None
    done = app.report(app.ReportSettings(args.output_dir, tuple(args.model), args.tune, args.raw_scores),
                      inputs, backend)
    for _, model in done.models:
        _print_convergence(args, model)
    if done.models and not done.with_history:
        print("the models have no iteration history; no convergence plot", file=sys.stderr)
    _wrote(done.paths)
    return 0


COMMANDS = {"train": train, "predict": predict, "evaluate": evaluate, "convert": convert, "tune": tune,
            "report": report}
