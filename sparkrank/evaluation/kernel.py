"""Ranking metrics as a score-space kernel, so any engine (local, Spark in either
placement) evaluates a model in one pass and only additive sums travel.

Per block the kernel computes the per-query metrics of :mod:`.metrics` and returns
``[pairs, correct pairs, AUC numerator, then for every NDCG metric: sum, count, then
positives, positives in groups with both classes, positives at the top, and for every precision@k:
sum, count]``;
:func:`metrics_from_stats` turns the summed vector into the same dictionary as
:func:`~sparkrank.evaluation.metrics.evaluate_ranking`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_POSITIVE_THRESHOLD, DEFAULT_ZERO_IDCG
from ..data.groups import QueryGroups
from ..engines.base import KernelResult
from ..kernels.counting import DEFAULT_COUNTING
from .metrics import DEFAULT_KS, per_group_metrics

_HEAD = ("n_pairs", "correct_pairs", "auc_numerator", "n_rows", "n_groups", "n_groups_without_pairs")


@dataclass(frozen=True)
class MetricsKernel:
    """Additive evaluation statistics of the scores of whole query groups."""

    ks: tuple[int, ...] = DEFAULT_KS
    discount: str = DEFAULT_NDCG_DISCOUNT
    zero_idcg: str = DEFAULT_ZERO_IDCG
    counting: str = DEFAULT_COUNTING
    threshold: float = DEFAULT_POSITIVE_THRESHOLD

    @property
    def ndcg_names(self) -> list[str]:
        return [f"ndcg@{k}" for k in self.ks] + ["mean_ndcg"]

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        per = per_group_metrics(groups, scores, ks=self.ks, discount=self.discount, zero_idcg=self.zero_idcg,
                                method=self.counting, threshold=self.threshold)
        pairs = per["pairs"].astype(np.float64)
        has_pairs = pairs > 0
        stats = [
            pairs.sum(),
            float(np.sum(per["pairwise_accuracy"][has_pairs] * pairs[has_pairs])),
            float(np.sum(per["auc"][has_pairs] * pairs[has_pairs])),
            float(groups.n_rows),
            float(groups.n_groups),
            float(np.count_nonzero(~has_pairs)),
        ]
        for name in self.ndcg_names:
            values = per[name]
            counted = ~np.isnan(values)
            stats += [float(values[counted].sum()), float(np.count_nonzero(counted))]
        both = ~np.isnan(per["positives_at_top"])
        positives = per["positives"][both].astype(np.float64)
        stats += [float(per["positives"].sum()), positives.sum(),
                  float(np.rint(per["positives_at_top"][both] * positives).sum())]
        for k in self.ks:
            values = per[f"precision@{k}"]
            counted = ~np.isnan(values)
            stats += [float(values[counted].sum()), float(np.count_nonzero(counted))]
        return KernelResult(np.array(stats))

    def finish(self, stats: np.ndarray) -> dict:
        """The metrics dictionary from summed statistics."""
        return metrics_from_stats(stats, self.ndcg_names, self.ks)


def metrics_from_stats(stats: np.ndarray, ndcg_names: list[str], precision_ks: tuple[int, ...] = ()) -> dict:
    head = dict(zip(_HEAD, stats[: len(_HEAD)]))
    n_pairs = head["n_pairs"]
    out = {
        "pairwise_accuracy": head["correct_pairs"] / n_pairs if n_pairs else float("nan"),
        "auc": head["auc_numerator"] / n_pairs if n_pairs else float("nan"),
    }
    rest = stats[len(_HEAD):]
    for i, name in enumerate(ndcg_names):
        total, count = rest[2 * i], rest[2 * i + 1]
        out[name] = float(total / count) if count else float("nan")
    bipartite = rest[2 * len(ndcg_names):]
    if bipartite.size:
        positives, at_top = bipartite[1], bipartite[2]
        out["positives_at_top"] = float(at_top / positives) if positives else float("nan")
        out["n_positives"] = int(round(bipartite[0]))
        for i, k in enumerate(precision_ks):
            total, count = bipartite[3 + 2 * i], bipartite[4 + 2 * i]
            out[f"precision@{k}"] = float(total / count) if count else float("nan")
    out.update({k: int(round(head[k])) for k in ("n_rows", "n_groups", "n_pairs", "n_groups_without_pairs")})
    return {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in out.items()}
