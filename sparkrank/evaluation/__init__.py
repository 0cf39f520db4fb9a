"""Ranking evaluation: per-query metrics (:mod:`.metrics`), pooled metrics through one
kernel (:mod:`.kernel`), the metric vocabulary (:mod:`.names`) and model evaluation on any
engine (:mod:`.evaluate`)."""

from .kernel import (
    MetricsKernel,
    auc,
    evaluate_ranking,
    mean_ndcg,
    pairwise_accuracy,
    positives_at_top,
    precision_at_k,
)
from .metrics import (
    DEFAULT_KS,
    auc_per_group,
    ndcg_at,
    pairwise_accuracy_per_group,
    per_group_metrics,
    positives_at_top_per_group,
    precision_at_k_per_group,
)

__all__ = [
    "DEFAULT_KS",
    "MetricsKernel",
    "auc",
    "auc_per_group",
    "evaluate_ranking",
    "mean_ndcg",
    "ndcg_at",
    "pairwise_accuracy",
    "pairwise_accuracy_per_group",
    "per_group_metrics",
    "positives_at_top",
    "positives_at_top_per_group",
    "precision_at_k",
    "precision_at_k_per_group",
]
