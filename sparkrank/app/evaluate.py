"""The evaluate use case: a model's metrics and its own training objective on any engine (two
passes), the metrics as strict JSON, and per-query metrics written where the rows are."""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_POSITIVE_THRESHOLD, DEFAULT_ZERO_IDCG
from ..data.block import DataError, check_fixed_width
from ..engines.backend import Backend
from ..engines.base import Engine
from ..engines.padded import PaddedEngine
from ..evaluation.kernel import MetricsKernel
from ..evaluation.metrics import DEFAULT_KS, per_group_metrics
from ..model import convergence_report, model_weights_for
from .settings import InputSettings, open_input

log = logging.getLogger("sparkrank")


def evaluate_model(
    model,
    engine: Engine,
    *,
    ks=DEFAULT_KS,
    discount: str = DEFAULT_NDCG_DISCOUNT,
    zero_idcg: str = DEFAULT_ZERO_IDCG,
) -> dict:
    """Pairwise accuracy, AUC, NDCG@k, mean NDCG and the training objective of ``model``,
    and whether its solver converged (``converged``, and the one-line ``convergence``).

    Parameters
    ----------
    model : RankingModel
    engine : Engine
        The evaluation data (local or Spark).
    ks, discount, zero_idcg :
        NDCG options (see :mod:`sparkrank.conventions`).
    """
    from ..training import training_objective_value

    # positives (positives at the top, precision@k) as the model was trained, e.g. TopPush's threshold
    threshold = float(model.options.get("threshold", DEFAULT_POSITIVE_THRESHOLD))
    kernel = MetricsKernel(tuple(ks), discount, zero_idcg, model.counting, threshold)
    w = model_weights_for(model, engine.summary.n_features)
    result = kernel.finish(engine.run(w, kernel).stats)
    result["objective"] = float("nan")
    if engine.summary.n_pairs:
        try:
            result["objective"] = training_objective_value(model, engine)
        except (DataError, ValueError) as exc:  # e.g. TopPush without both classes in any group
            log.warning("objective of the %s model not evaluated on this data: %s", model.solver, exc)
    result["solver"] = model.solver
    result["C"] = model.C
    result["converged"] = bool(model.summary.get("converged", False))
    result["convergence"], _ = convergence_report(model)
    return result


@dataclass(frozen=True)
class EvaluateSettings:
    """NDCG conventions and where the metrics go besides the result.

    Attributes
    ----------
    ks : sequence of int
        NDCG cut-offs.
    discount, zero_idcg : str
        NDCG conventions (:mod:`sparkrank.conventions`).
    output_json : str, optional
        Also write the metrics to this JSON file.
    per_query : str, optional
        Also write per-query metrics: one CSV file when the name ends in ``.csv``, else Parquet.
    mode : str
        Write mode of a ``per_query`` directory (``error`` or ``overwrite``).
    """

    ks: Sequence[int] = DEFAULT_KS
    discount: str = DEFAULT_NDCG_DISCOUNT
    zero_idcg: str = DEFAULT_ZERO_IDCG
    output_json: str | None = None
    per_query: str | None = None
    mode: str = "error"


def evaluate(backend: Backend, inputs: InputSettings, model, settings: EvaluateSettings = EvaluateSettings()) -> dict:
    """``sparkrank evaluate``: outputs checked first, the metrics of ``model`` on ``inputs``'
    rows (at their own width: wider than the model is predict's error, on both engines; narrower,
    they are evaluated with the model's width, :mod:`sparkrank.engines.padded`, unless they are of a
    fixed width, :func:`~sparkrank.data.block.check_fixed_width`), then the JSON file and the
    per-query metrics written."""
    columns = inputs.columns(model)
    if settings.output_json:
        backend.check_output_file(settings.output_json)
    if settings.per_query:
        backend.check_per_query_output(settings.per_query, settings.mode)
    opts = dict(ks=tuple(settings.ks), discount=settings.discount, zero_idcg=settings.zero_idcg)
    source = open_input(backend, inputs, columns=columns)
    with backend.engine(source) as engine:
        model.check_width(engine.summary.n_features, source.name)
        if engine.summary.n_features < model.n_features and backend.fixed_width(source):
            check_fixed_width(engine.summary.n_features, model.n_features, model.source, source.name)
        if engine.summary.n_rows == 0:  # every metric would be NaN: most likely a --where that keeps nothing
            raise DataError(f"{source.name}: no data rows to evaluate" + (
                f" ({source.filter_option} {source.where!r})" if source.where else ""))
        result = evaluate_model(model, PaddedEngine(engine, model.n_features), **opts)
    if settings.output_json:
        backend.filesystem(settings.output_json).write_text(settings.output_json, strict_json(result))
    if settings.per_query:
        if not columns.group:
            raise ValueError("--per-query needs a group id (--qid-col)")
        backend.write_per_query(source, model, functools.partial(per_group_metrics, **opts), settings.per_query,
                                settings.mode)
    return result


def strict_json(metrics: dict) -> str:
    """``metrics`` as standard JSON: an undefined metric (NaN: no query with a pair, or with a
    positive) is ``null``, which every JSON parser reads (Python's ``NaN`` token is not JSON)."""
    def finite(v):
        return None if isinstance(v, float) and not np.isfinite(v) else v

    return json.dumps({k: finite(v) for k, v in metrics.items()}, indent=1, allow_nan=False)
