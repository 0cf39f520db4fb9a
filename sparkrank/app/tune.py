"""The tune use case: pick C over a grid by a validation set or group-wise k-fold
(:func:`sparkrank.selection.tune`) on any engine's rows, then write what was asked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .. import defaults
from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from ..engines.backend import Backend
from ..selection import TuneResult, tune as select_c
from .fit import remember_source
from .settings import InputSettings, check_report_dir, open_input


@dataclass(frozen=True)
class TuneSettings:
    """The search (:func:`sparkrank.selection.tune`'s options) and where its results go."""

    C_grid: Sequence[float] | None = None
    valid: str | None = None
    folds: int | None = None
    solver: str = defaults.SOLVER
    metric: str | None = None  # the solver's tune_metric
    tol: float | None = defaults.TOL
    counting: str = defaults.COUNTING
    max_iter: int | None = defaults.MAX_ITER
    solver_options: dict = field(default_factory=dict)
    cold_start: bool = False
    seed: int = 0
    discount: str = DEFAULT_NDCG_DISCOUNT
    zero_idcg: str = DEFAULT_ZERO_IDCG
    checkpoint_dir: str | None = None
    checkpoint_interval: int = defaults.CHECKPOINT_INTERVAL
    resume: bool = False
    model: str | None = None
    output_json: str | None = None
    report: str | None = None


@dataclass(frozen=True)
class Tuned:
    """The search's result and the PNGs of its report."""

    result: TuneResult
    report: list


def tune(backend: Backend, inputs: InputSettings, settings: TuneSettings) -> Tuned:
    """``sparkrank tune``: outputs checked first, the rows of ``inputs`` (and ``settings.valid``,
    read with the same columns) handed to the backend's rows, the search, then the table JSON, the
    best model (remembering its input) and the report written."""
    for path in (settings.model, settings.output_json):
        if path:
            backend.check_output_file(path)
    if settings.report:
        check_report_dir(backend, settings.report)
    s = settings
    opts = dict(C_grid=s.C_grid, folds=s.folds, solver=s.solver, metric=s.metric, tol=s.tol, counting=s.counting,
                max_iter=s.max_iter, cold_start=s.cold_start, seed=s.seed, discount=s.discount,
                zero_idcg=s.zero_idcg, solver_options=s.solver_options, checkpoint_dir=s.checkpoint_dir,
                checkpoint_interval=s.checkpoint_interval, resume=s.resume)
    train_source = open_input(backend, inputs)
    valid_source = open_input(backend, inputs, columns=train_source.columns, uris=[s.valid]) if s.valid else None
    if valid_source is not None:
        opts["names"] = (f"--input {train_source.name}", f"--valid {valid_source.name}")
    train_rows = backend.tune_rows(train_source)
    valid_rows = backend.tune_rows(valid_source) if valid_source is not None else None
    result = select_c(train_rows, valid=valid_rows, **opts)
    if result.model is not None:
        remember_source(result.model, backend, train_source)
        result.model.summary["tune"] = result.c_path()  # `report --model` draws the C path it came from
    if s.output_json:
        result.save(s.output_json)
    if s.model and result.model is not None:
        result.model.save(s.model)
    paths = []
    if s.report:
        from ..report import write_tune_report

        # the score distribution needs the rows in this process
        data = valid_rows.data if valid_rows is not None and valid_rows.data is not None else train_rows.data
        paths = write_tune_report(result, s.report, data=data)
    return Tuned(result, paths)
