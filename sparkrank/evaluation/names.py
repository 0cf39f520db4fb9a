"""The metric vocabulary: one canonical spelling of every pooled metric, both spellings accepted.

Canonical names are snake case with ``@K`` cut-offs: ``pairwise_accuracy``, ``auc``,
``mean_ndcg``, ``ndcg@K``, ``positives_at_top``, ``precision@K``.  They key every metrics
dictionary (``sparkrank evaluate``, ``tune``, :class:`~sparkrank.evaluation.kernel.MetricsKernel`)
and the per-query reports.  :func:`canonical_metric` also takes the pyspark.ml spelling
(``pairwiseAccuracy``, ``meanNDCG``, ``positivesAtTop``, ``precision@K``) and any letter case
(``NDCG@10``), so ``tune --metric`` and ``RankingEvaluator(metricName=...)`` accept the same
names.  All of them are larger-is-better.
"""

from __future__ import annotations

PAIRWISE_ACCURACY = "pairwise_accuracy"
AUC = "auc"
MEAN_NDCG = "mean_ndcg"
POSITIVES_AT_TOP = "positives_at_top"
#: Metrics without a cut-off.
PLAIN_METRICS: tuple[str, ...] = (PAIRWISE_ACCURACY, AUC, MEAN_NDCG, POSITIVES_AT_TOP)
#: Metrics with a cut-off ``K``, spelled ``<prefix>@K``.
CUTOFF_METRICS: tuple[str, ...] = ("ndcg", "precision")

METRICS_HELP = "pairwise_accuracy, auc, mean_ndcg, ndcg@K, positives_at_top or precision@K (e.g. ndcg@10)"


def ndcg_name(k: int) -> str:
    return f"ndcg@{k}"


def precision_name(k: int) -> str:
    return f"precision@{k}"


def _folded(name: str) -> str:
    return name.replace("_", "").lower()


_BY_FOLDED = {_folded(n): n for n in PLAIN_METRICS}


def canonical_metric(name: str) -> str:
    """The canonical spelling of a metric name given in either vocabulary (a ``ValueError`` if unknown)."""
    text = str(name).strip()
    folded = _folded(text)
    if folded in _BY_FOLDED:
        return _BY_FOLDED[folded]
    prefix, at, cut = folded.partition("@")
    if at and prefix in CUTOFF_METRICS and cut.isdigit() and int(cut) >= 1:
        return f"{prefix}@{int(cut)}"
    raise ValueError(f"unknown metric {name!r}; choose {METRICS_HELP}")


def metric_cutoff(name: str) -> int | None:
    """``K`` of a canonical ``ndcg@K`` / ``precision@K`` name, else None."""
    prefix, at, cut = name.partition("@")
    return int(cut) if at and prefix in CUTOFF_METRICS else None


def metric_ks(name: str) -> tuple[int, ...]:
    """The cut-offs the metrics kernel must compute for ``name`` (any spelling); ``(1,)`` without one."""
    k = metric_cutoff(canonical_metric(name))
    return (1,) if k is None else (k,)
