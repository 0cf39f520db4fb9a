"""Ranking evaluation metrics (pairwise accuracy, AUC / C-index, NDCG)."""

from .metrics import (
    DEFAULT_KS,
    auc,
    auc_per_group,
    evaluate_ranking,
    mean_ndcg,
    ndcg_at,
    pairwise_accuracy,
    pairwise_accuracy_per_group,
    per_group_metrics,
)

__all__ = [
    "DEFAULT_KS",
    "auc",
    "auc_per_group",
    "evaluate_ranking",
    "mean_ndcg",
    "ndcg_at",
    "pairwise_accuracy",
    "pairwise_accuracy_per_group",
    "per_group_metrics",
]
