"""Pooled ranking metrics, one path: a score-space kernel any engine runs in one pass.

Per block, :class:`MetricsKernel` sums the per-query counts and values of
:func:`~sparkrank.evaluation.metrics.group_sums` into named, exactly summed
:class:`~sparkrank.kernels.base.Statistics` (pairs, correctly ordered and tied pairs, per
NDCG cut-off the sum and count of the defined values, positives, …); engines add them up
over blocks and :meth:`MetricsKernel.finish` turns the totals into the metrics dictionary.
Because the sums are double-double, every engine and partitioning gives the same values.

Everything that reports pooled metrics goes through it: ``sparkrank evaluate``
(:func:`~sparkrank.app.evaluate.evaluate_model`, any engine), ``tune``'s validation
scores, :class:`sparkrank.ml.RankingEvaluator` (a Spark engine over the scored rows), and
the in-memory :func:`evaluate_ranking` and single-metric functions below (the kernel on
one block).  Names are those of :mod:`sparkrank.evaluation.names`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_POSITIVE_THRESHOLD, DEFAULT_ZERO_IDCG
from ..data.groups import QueryGroups
from ..kernels.base import KernelResult, ScoreKernel, Statistics
from ..kernels.counting import DEFAULT_COUNTING
from .metrics import DEFAULT_KS, group_sums
from .names import AUC, MEAN_NDCG, PAIRWISE_ACCURACY, POSITIVES_AT_TOP, ndcg_name, precision_name

#: Counts reported as ints, in this order, after the metrics.
COUNTS = ("n_rows", "n_groups", "n_pairs", "n_groups_without_pairs", "n_groups_zero_idcg")


@dataclass(frozen=True)
class MetricsKernel(ScoreKernel):
    """Additive evaluation statistics of the scores of whole query groups (module docstring).

    Attributes
    ----------
    ks : tuple of int
        NDCG and precision cut-offs.
    discount, zero_idcg : str
        NDCG conventions (:mod:`sparkrank.conventions`).
    counting : str
        Support-pair counting structure for the pairwise metrics.
    threshold : float
        Rows with ``label > threshold`` are positives (positives at the top, precision@k).
    """

    ks: tuple[int, ...] = DEFAULT_KS
    discount: str = DEFAULT_NDCG_DISCOUNT
    zero_idcg: str = DEFAULT_ZERO_IDCG
    counting: str = DEFAULT_COUNTING
    threshold: float = DEFAULT_POSITIVE_THRESHOLD

    @property
    def averaged(self) -> list[str]:
        """Metrics that are means over the queries where they are defined (sum and count each)."""
        return [ndcg_name(k) for k in self.ks] + [MEAN_NDCG] + [precision_name(k) for k in self.ks]

    @property
    def statistic_names(self) -> tuple[str, ...]:
        """Names of the summed statistics, in the order engines carry them."""
        names = ["rows", "groups", "groups_without_pairs", "groups_zero_idcg", "pairs", "correct_pairs",
                 "tied_pairs", "positives", "positives_with_negative", "positives_at_top"]
        for name in self.averaged:
            names += [f"{name}:sum", f"{name}:count"]
        return tuple(names)

    def statistics(self, groups: QueryGroups, scores: np.ndarray) -> Statistics:
        """The statistics of one block of whole groups."""
        per = group_sums(groups, scores, ks=self.ks, discount=self.discount, zero_idcg=self.zero_idcg,
                         method=self.counting, threshold=self.threshold)
        # with weights (data/weights.py) the pair statistics are pair weights (group_sums); the
        # per-query means (NDCG, precision) and the positives weigh each query by its b_q (a
        # query repeated b_q times), and a query of weight 0 counts nowhere
        b = groups.group_weights if groups.weighted else None
        positives = per["positives"] if b is None else b * per["positives"]
        values: dict[str, np.ndarray | float] = {
            "rows": float(groups.n_rows),
            "groups": float(groups.n_groups),
            "groups_without_pairs": float(np.count_nonzero(per["pairs"] == 0)),
            "groups_zero_idcg": float(np.count_nonzero(per["zero_idcg"])),
            "pairs": per["pairs"],
            "correct_pairs": per["correct_pairs"],
            "tied_pairs": per["tied_pairs"],
            "positives": positives,
            "positives_with_negative": positives[per["both_classes"]],
            "positives_at_top": per["positives_at_top"] if b is None else b * per["positives_at_top"],
        }
        for name in self.averaged:
            if b is None:
                defined = per[name][~np.isnan(per[name])]
                values[f"{name}:sum"], values[f"{name}:count"] = defined, float(defined.size)
            else:
                defined = ~np.isnan(per[name]) & (b > 0)
                values[f"{name}:sum"], values[f"{name}:count"] = b[defined] * per[name][defined], b[defined]
        return Statistics.summed(values)

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        return self.statistics(groups, scores).result()

    def finish(self, stats: np.ndarray | Statistics) -> dict:
        """The metrics dictionary from an engine's summed statistics (or merged :class:`Statistics`).

        Pooled over all pairs: ``pairwise_accuracy`` (ties count as wrong) and ``auc`` (ties
        count ½); means over the queries where defined: ``ndcg@K``, ``mean_ndcg``,
        ``precision@K``; ``positives_at_top`` pooled over the positives of groups with both
        classes; ``n_positives`` and :data:`COUNTS` as ints.  NaN where nothing is defined.
        """
        s = stats if isinstance(stats, Statistics) else Statistics.of(self.statistic_names, stats)
        out: dict[str, float | int] = {
            PAIRWISE_ACCURACY: _ratio(s["correct_pairs"], s["pairs"]),
            AUC: _ratio(s["correct_pairs"] + 0.5 * s["tied_pairs"], s["pairs"]),
        }
        for k in self.ks:
            out[ndcg_name(k)] = _ratio(s[f"{ndcg_name(k)}:sum"], s[f"{ndcg_name(k)}:count"])
        out[MEAN_NDCG] = _ratio(s[f"{MEAN_NDCG}:sum"], s[f"{MEAN_NDCG}:count"])
        out[POSITIVES_AT_TOP] = _ratio(s["positives_at_top"], s["positives_with_negative"])
        out["n_positives"] = int(round(s["positives"]))
        for k in self.ks:
            out[precision_name(k)] = _ratio(s[f"{precision_name(k)}:sum"], s[f"{precision_name(k)}:count"])
        for name, key in zip(COUNTS, ("rows", "groups", "pairs", "groups_without_pairs", "groups_zero_idcg")):
            out[name] = int(round(s[key]))
        return out


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator > 0 else float("nan")


# ----------------------------------------------------------------------------- in memory


def evaluate_ranking(
    groups: QueryGroups,
    scores: np.ndarray,
    *,
    ks: Iterable[int] = DEFAULT_KS,
    discount: str = DEFAULT_NDCG_DISCOUNT,
    zero_idcg: str = DEFAULT_ZERO_IDCG,
    method: str = DEFAULT_COUNTING,
    threshold: float = DEFAULT_POSITIVE_THRESHOLD,
) -> dict[str, float | int]:
    """All pooled metrics of one scoring held in memory: :class:`MetricsKernel` on one block.

    Parameters are those of :func:`~sparkrank.evaluation.metrics.per_group_metrics` (``ks``
    are the NDCG and precision cut-offs, ``method`` the pair-counting structure); the
    result is :meth:`MetricsKernel.finish`'s dictionary of plain Python numbers.
    """
    kernel = MetricsKernel(tuple(ks), discount, zero_idcg, method, threshold)
    return kernel.finish(kernel.statistics(groups, scores))


def _one(name: str, groups: QueryGroups, scores: np.ndarray, **options) -> float:
    return float(evaluate_ranking(groups, scores, **options)[name])


def pairwise_accuracy(groups: QueryGroups, scores: np.ndarray, *, method: str = DEFAULT_COUNTING) -> float:
    """Pooled pairwise accuracy ``|{(u, l) in P: p_u > p_l}| / N`` (lee-lin2014 §4.4); tied scores
    count as *not* correct, so a constant model scores 0.  NaN when the data has no pairs."""
    return _one(PAIRWISE_ACCURACY, groups, scores, ks=(), method=method)


def auc(groups: QueryGroups, scores: np.ndarray, *, method: str = DEFAULT_COUNTING) -> float:
    """Pooled Wilcoxon–Mann–Whitney AUC ``(#{p_u > p_l} + ½ #{p_u == p_l}) / N`` over all pairs.

    For two label levels the AUC (per group, pooled); for more the pairwise concordance
    ("C-index").  A constant model scores exactly 0.5.  NaN without pairs.
    """
    return _one(AUC, groups, scores, ks=(), method=method)


def mean_ndcg(groups: QueryGroups, scores: np.ndarray, *, discount: str = DEFAULT_NDCG_DISCOUNT,
              zero_idcg: str = DEFAULT_ZERO_IDCG) -> float:
    """LETOR's MeanNDCG: per query the average of NDCG@1..n_q, then the mean over the queries
    where it is defined (not empty, not ``"skip"``-ed); NaN when none is."""
    return _one(MEAN_NDCG, groups, scores, ks=(), discount=discount, zero_idcg=zero_idcg)


def positives_at_top(groups: QueryGroups, scores: np.ndarray, *,
                     threshold: float = DEFAULT_POSITIVE_THRESHOLD) -> float:
    """Pooled positives at the top: ``Σ_g #{positives above g's top negative} / Σ_g #positives``
    over the groups with both classes (li2014; ties count against the model); NaN without any."""
    return _one(POSITIVES_AT_TOP, groups, scores, ks=(), threshold=threshold)


def precision_at_k(groups: QueryGroups, scores: np.ndarray, k: int, *,
                   threshold: float = DEFAULT_POSITIVE_THRESHOLD) -> float:
    """Mean precision@k over the groups that have a positive (NaN when none has)."""
    return _one(precision_name(k), groups, scores, ks=(k,), threshold=threshold)
