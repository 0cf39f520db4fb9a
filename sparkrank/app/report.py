"""The report use case: PNGs of models' convergence, a tune result's metric vs C (given, or kept by
a model ``tune`` wrote), and the score distribution of a model on labelled rows read in this
process (:mod:`sparkrank.report`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..engines.backend import Backend
from ..io import uri as U
from .settings import InputSettings, check_report_dir, load_model, open_input


@dataclass(frozen=True)
class ReportSettings:
    """What to draw and where: model files, a tune result JSON, labelled rows for the first
    model's scores, raw scores (``w·x``) instead of scores centred per query, the directory."""

    output_dir: str
    models: Sequence[str] = ()
    tune: str | None = None
    raw_scores: bool = False


@dataclass(frozen=True)
class Reported:
    """The PNGs written, the models drawn (name, model), and whether any had a history."""

    paths: list
    models: list
    with_history: bool


def report(settings: ReportSettings, inputs: InputSettings | None = None, backend: Backend | None = None) -> Reported:
    """``sparkrank report``: the directory checked, then each plot that its inputs allow."""
    from .. import report as plots
    from ..selection import load_tune_result

    if not (settings.models or settings.tune):
        raise ValueError("nothing to draw: give --model and/or --tune")
    if inputs is not None and not settings.models:
        raise ValueError("--input is for the score distribution and needs --model")
    out = settings.output_dir
    check_report_dir(None, out)
    models = [(U.basename(m).rsplit(".", 1)[0], load_model(m)) for m in settings.models]
    paths = []
    with_history = [(name, m) for name, m in models if m.summary.get("history")]
    if with_history:
        paths.append(plots.plot_convergence(with_history, U.join(out, "convergence.png")))
    # the C path: the tune result given, else the one a model written by `tune` keeps
    c_path = load_tune_result(settings.tune) if settings.tune else \
        next((m.summary["tune"] for _, m in models if m.summary.get("tune")), None)
    if c_path is not None:
        paths.append(plots.plot_metric_vs_c(c_path, U.join(out, "metric_vs_C.png")))
    if inputs is not None:
        model = models[0][1]
        source = open_input(backend, inputs, columns=inputs.columns(model))
        paths.append(plots.plot_score_distribution(model, backend.rows(source, model),
                                                   U.join(out, "scores_by_label.png"),
                                                   centered=not settings.raw_scores))
    return Reported(paths, models, bool(with_history))
