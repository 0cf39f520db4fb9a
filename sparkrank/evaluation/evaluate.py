"""Evaluate a model on any engine: metrics and its own training objective in two passes."""

from __future__ import annotations

import numpy as np

from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from ..engines.base import Engine
from .kernel import MetricsKernel
from .metrics import DEFAULT_KS


def model_weights_for(model, n_features: int) -> np.ndarray:
    """The model's weights padded (or cut, for unseen trailing features) to ``n_features``."""
    w = np.zeros(n_features)
    k = min(n_features, model.n_features)
    w[:k] = model.weights[:k]
    return w


def evaluate_model(
    model,
    engine: Engine,
    *,
    ks=DEFAULT_KS,
    discount: str = DEFAULT_NDCG_DISCOUNT,
    zero_idcg: str = DEFAULT_ZERO_IDCG,
) -> dict:
    """Pairwise accuracy, AUC, NDCG@k, mean NDCG and the training objective of ``model``.

    Parameters
    ----------
    model : RankingModel
    engine : Engine
        The evaluation data (local or Spark).
    ks, discount, zero_idcg :
        NDCG options (see :mod:`sparkrank.conventions`).
    """
    from ..training import training_objective_value

    kernel = MetricsKernel(tuple(ks), discount, zero_idcg, model.counting)
    w = model_weights_for(model, engine.summary.n_features)
    result = kernel.finish(engine.run(w, kernel).stats)
    result["objective"] = training_objective_value(model, engine) if engine.summary.n_pairs else float("nan")
    result["solver"] = model.solver
    result["C"] = model.C
    return result
