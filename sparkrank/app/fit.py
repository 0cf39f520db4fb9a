"""The fit use case: the start point, checkpoints and resuming, training, and what the model
remembers of its input, once for the command line, the jobs and ``LinearRanker``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checkpoints import begin
from ..data.block import DataError, check_max_features
from ..engines.backend import Backend
from ..model import RankingModel
from ..objectives.base import require_pairs
from ..solvers.result import IterationCallback
from ..training import resolve_c, train
from .settings import CheckpointSettings, FitSettings


@dataclass(frozen=True)
class StartWeights:
    """Weights a fit starts from, and how messages name them (``--init-model m.json``)."""

    weights: np.ndarray
    name: str


def fit_on(engine, settings: FitSettings, *, start: StartWeights | None = None,
           checkpoints: CheckpointSettings = CheckpointSettings(),
           callback: IterationCallback | None = None) -> RankingModel:
    """Train on an open ``engine``: from ``start`` (as wide as the data) or the newest checkpoint
    (``checkpoints.resume``: same settings and data), writing checkpoints when asked."""
    w0 = None if start is None else start_weights(start, engine.summary.n_features, settings.n_features)
    C = resolve_c(engine, settings.C, settings.lam, settings.solver, dict(settings.solver_options))
    fit_settings = {"solver": settings.solver, "C": C,
                    "tol": settings.tol, "counting": settings.counting, "options": dict(settings.solver_options),
                    "standardization": settings.standardization}
    begun = begin(checkpoints.directory, interval=checkpoints.interval, resume=checkpoints.resume, engine=engine,
                  settings=fit_settings, w0=w0, option=checkpoints.option)
    callbacks = [c for c in (begun.callback, callback) if c is not None]
    return train(engine, solver=settings.solver, C=settings.C, lam=settings.lam, tol=settings.tol,
                 counting=settings.counting, max_iter=settings.max_iter, w0=begun.w0,
                 solver_options=settings.solver_options, standardization=settings.standardization,
                 callback=_compose(callbacks), resume=begun.solver_state if checkpoints.solver_state else None)


def fit(backend: Backend, source, settings: FitSettings, *, start: StartWeights | None = None,
        checkpoints: CheckpointSettings = CheckpointSettings()) -> RankingModel:
    """Train on ``source`` with ``backend``'s engine (read as ``settings.n_features`` wide), which
    must have pairs (else an error naming the input and its ``--where``); the model remembers the
    engine and the feature columns (:func:`remember_source`)."""
    with backend.engine(source, settings.n_features) as engine:
        where = source.where if source.where and not source.where_sql else None
        require_pairs(engine, source.name + (f" (--where {where!r})" if where else ""))
        model = fit_on(engine, settings, start=start, checkpoints=checkpoints)
    remember_source(model, backend, source)
    return model


def start_weights(start: StartWeights, n_features: int, requested_width: int | None) -> np.ndarray:
    """``start``'s weights as the start point on data of ``n_features`` columns.

    The data's width is decided first (its largest feature, or ``--n-features``) and the
    weights must match it: padding would blame the data for features the model has, and cutting
    or widening would silently train another model than the one asked for.
    """
    width = np.shape(start.weights)[0]
    if width != n_features:
        hint = (f"; --n-features {width} reads the data as wide as the model"
                if width > n_features and requested_width is None else "")
        raise DataError(f"{start.name} has {width} weights but the data has {n_features} features{hint}")
    return np.array(start.weights, dtype=np.float64)


def remember_source(model: RankingModel, backend: Backend, source) -> None:
    """What a later predict/evaluate must not have to repeat (the feature columns, named or, for
    CSV, taken from the header)."""
    model.summary["engine"] = backend.name
    if source.columns.feature_cols:
        model.summary["feature_cols"] = list(source.columns.feature_cols)
    for key, col in (("weight_col", source.columns.weights.row), ("group_weight_col", source.columns.weights.group)):
        if col:  # informational: predict and evaluate need no weights
            model.summary[key] = col


def _compose(callbacks: list):
    if not callbacks:
        return None
    if len(callbacks) == 1:
        return callbacks[0]
    from ..solvers.callbacks import compose

    return compose(*callbacks)


@dataclass(frozen=True)
class Trained:
    """What the train use case made: the model (written to its path) and the report's PNGs."""

    model: RankingModel
    engine: str
    report: list


def train_model(backend: Backend, inputs, settings: FitSettings, *, model_path: str, init_model: str | None = None,
                checkpoints: CheckpointSettings = CheckpointSettings(), report_dir: str | None = None) -> Trained:
    """``sparkrank train``: outputs checked first (a bad ``model_path`` fails now, not after
    training), the fit from ``init_model``'s weights or a checkpoint, the model written, and with
    ``report_dir`` its PNGs (scores by label when the rows are in this process)."""
    from .settings import check_report_dir, load_model, open_input

    backend.check_output_file(model_path)
    if report_dir:
        check_report_dir(backend, report_dir)
    init = load_model(init_model) if init_model else None
    check_max_features(settings.n_features or 0, None, "--n-features")
    source = open_input(backend, inputs)
    start = None if init is None else StartWeights(init.weights, f"--init-model {init_model}")
    model = fit(backend, source, settings, start=start, checkpoints=checkpoints)
    model.save(model_path)
    paths = []
    if report_dir:
        from ..report import write_training_report

        paths = write_training_report(model, report_dir, data=backend.rows(source, model))
    return Trained(model, backend.name, paths)
