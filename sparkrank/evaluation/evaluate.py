"""Evaluate a model on any engine: metrics and its own training objective in two passes."""

from __future__ import annotations

import logging

import numpy as np

from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_POSITIVE_THRESHOLD, DEFAULT_ZERO_IDCG
from ..data.block import DataError
from ..engines.base import Engine
from ..model import convergence_report
from ..numerics.vectors import fit_length
from .kernel import MetricsKernel
from .metrics import DEFAULT_KS

log = logging.getLogger("sparkrank")


def model_weights_for(model, n_features: int) -> np.ndarray:
    """Weights on the raw features of ``n_features`` columns that rank exactly like ``model``.

    A standardized model's own weights act on scaled columns; its ``raw_weights`` act on the
    raw ones and give the same ranking (the scores differ only by a constant).
    """
    return fit_length(model.raw_weights, n_features)


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
