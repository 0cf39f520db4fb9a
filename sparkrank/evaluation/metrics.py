"""Per-query ranking metrics: pairwise accuracy, AUC / C-index, NDCG, positives at the top,
precision@k (docs/design.md §3.5).  Pooled values (over all queries) have one path, the metrics
kernel of :mod:`sparkrank.evaluation.kernel`, which sums :func:`group_sums`.

Every convention (preference pairs, tied scores, NDCG gain and discount, queries with a
zero ideal DCG) comes from :mod:`sparkrank.conventions`; this module only implements them.

All per-group work is vectorised over groups: the pairwise metrics reduce the per-row
counts of :func:`sparkrank.kernels.counting.count_support_pairs` (``O(m log m)`` per group,
no pair is materialised), and NDCG uses one global ``lexsort`` plus segmented cumulative
sums, so there is no Python loop over queries.

Summary of the conventions applied here
---------------------------------------
* Pairs ``P = {(u, l): same group, y_u > y_l}``; ``N = |P|``.
* Pairwise accuracy ``|{(u, l) in P: p_u > p_l}| / N``: a tied pair is *not* correct.
* AUC ``(#{p_u > p_l} + ½ #{p_u == p_l}) / N`` (Wilcoxon–Mann–Whitney, ties count ½).
* Pooled values are ratios over all pairs of all groups (not means of per-group values);
  a group without pairs has a NaN per-group value and contributes nothing to the pool.
* NDCG: gain ``2**y - 1``, discount ``"letor"`` (``1/log2(max(2, i))``) or ``"yahoo"``
  (``1/log2(i + 1)``); rows ranked by score descending with tied scores ordered
  pessimistically (lowest label first); NDCG@k with ``k`` above the group size uses the
  whole group (as LETOR's evaluation script does).
* A cut-off whose ideal DCG is not positive gets the ``zero_idcg`` rule: ``"zero"`` → 0,
  ``"one"`` → 1, ``"skip"`` → NaN, left out of every average.  For labels ``>= 0`` this
  happens exactly for groups whose labels are all 0 (the case
  :mod:`sparkrank.conventions` describes).  Negative labels have negative gains, for
  which NDCG is not meaningful; treating a non-positive ideal DCG like a zero one keeps
  the value bounded instead of dividing by a negative number.
* Empty groups have NaN for every per-group metric and are left out of every average.
* Bipartite metrics (li2014) use the positive-label threshold of
  :mod:`sparkrank.conventions` (``y > threshold``, default 0).  *Positives at the top*: the
  fraction of positives scoring strictly above the highest-scoring negative of their group
  (ties count against the model); NaN for a group without both classes, pooled as
  ``Σ at top / Σ positives`` over the groups with both.  *Precision@k*: positives among
  the first ``min(k, n_g)`` rows ranked by score descending with tied scores ordered
  pessimistically (negatives first), divided by ``min(k, n_g)``; NaN for a group without
  a positive, averaged over the groups with one.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
from numba import njit

from ..choices import ZERO_IDCG_RULES
from ..conventions import (
    DEFAULT_POSITIVE_THRESHOLD,
    DEFAULT_NDCG_DISCOUNT,
    DEFAULT_ZERO_IDCG,
    NdcgDiscount,
    ZeroIdcgRule,
    ndcg_discounts,
    ndcg_gain,
)
from ..data.groups import QueryGroups
from ..kernels.counting import DEFAULT_COUNTING, check_counting_method, count_support_pairs
from ..kernels.toppush import Bipartite, top_negative
from .names import AUC, MEAN_NDCG, PAIRWISE_ACCURACY, POSITIVES_AT_TOP, ndcg_name, precision_name

__all__ = [
    "pairwise_accuracy_per_group",
    "auc_per_group",
    "ndcg_at",
    "group_sums",
    "per_group_metrics",
    "positives_at_top_per_group",
    "precision_at_k_per_group",
    "DEFAULT_KS",
]

#: Default NDCG cut-offs reported by :func:`evaluate_ranking`.
DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)



# --------------------------------------------------------------------------- helpers


def _check_scores(groups: QueryGroups, scores: np.ndarray) -> np.ndarray:
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.shape[0] != groups.n_rows:
        raise ValueError(f"expected {groups.n_rows} scores in a 1-d array, got shape {scores.shape}")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(f"score of row {int(bad[0])} is not finite ({float(scores[bad[0]])!r}); {bad.size} such rows")
    return scores


def _check_zero_idcg(zero_idcg: str) -> str:
    if zero_idcg not in ZERO_IDCG_RULES:
        raise ValueError(f"unknown zero-IDCG rule {zero_idcg!r}; use one of {', '.join(ZERO_IDCG_RULES)}")
    return zero_idcg


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"NDCG cut-off k must be a positive integer, got {k!r}")
    return int(k)


def _group_sums_int(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Exact per-group sums of integer per-row values (empty groups give 0)."""
    csum = np.zeros(values.shape[0] + 1, dtype=np.int64)
    np.cumsum(values, out=csum[1:])
    return csum[offsets[1:]] - csum[offsets[:-1]]


@njit(cache=True)
def _segmented_cumsum(values, offsets):
    # Cumulative sums restarting at every group start; summing each group on its own keeps
    # the result independent of the other groups (a global cumsum minus the group's start
    # would lose precision and could turn an exact zero IDCG into a rounding residue).
    out = np.empty_like(values)
    for g in range(offsets.shape[0] - 1):
        acc = 0.0
        for t in range(offsets[g], offsets[g + 1]):
            acc += values[t]
            out[t] = acc
    return out


# --------------------------------------------------------------------------- pairwise


def _misordered_counts(
    groups: QueryGroups, scores: np.ndarray, method: str, *, with_strict: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-group ``#{(u,l) in P: p_u <= p_l}`` and optionally ``#{p_u < p_l}``; with weights
    (:mod:`sparkrank.data.weights`) the weight ``Σ b_q a_u a_l`` of those pairs instead (float64)."""
    check_counting_method(method)
    if groups.weighted:
        return _weighted_misordered(groups, scores, method, with_strict)
    le_rows = count_support_pairs(groups, scores, margin=0.0, inclusive=True, method=method).n_above
    le = _group_sums_int(le_rows, groups.offsets)
    lt = None
    if with_strict:
        lt_rows = count_support_pairs(groups, scores, margin=0.0, inclusive=False, method=method).n_above
        lt = _group_sums_int(lt_rows, groups.offsets)
    return le, lt


def _weighted_misordered(groups: QueryGroups, scores: np.ndarray, method: str, with_strict: bool):
    # each lower row's weight sum of misordered upper partners, times its own b_q·a_l, per group
    factors = groups.row_factors()
    out = []
    for inclusive in (True, False) if with_strict else (True,):
        rows = count_support_pairs(groups, scores, margin=0.0, inclusive=inclusive, method=method,
                                   weights=groups.row_weights).n_above
        out.append(_segmented_cumsum(factors * rows, groups.offsets)[groups.offsets[1:] - 1]
                   if groups.n_rows else np.zeros(groups.n_groups))
        out[-1][np.diff(groups.offsets) == 0] = 0.0
    return out[0], (out[1] if with_strict else None)


def _ratio_per_group(numerator: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    out = np.full(pairs.shape[0], np.nan)
    has = pairs > 0
    out[has] = numerator[has] / pairs[has]
    return out


def pairwise_accuracy_per_group(
    groups: QueryGroups, scores: np.ndarray, *, method: str = DEFAULT_COUNTING
) -> np.ndarray:
    """Pairwise accuracy of every group; NaN for groups without preference pairs.

    Parameters
    ----------
    groups : QueryGroups
        Labels and contiguous group structure.
    scores : float64 array (m,)
        Model scores.
    method : {"selection", "rbtree", "direct", "pairs"}
        Counting structure passed to :func:`count_support_pairs` (all give equal counts).

    Returns
    -------
    float64 array (G,)
        ``|{(u, l) in P_g: p_u > p_l}| / |P_g|``; tied scores count as not correct.
    """
    scores = _check_scores(groups, scores)
    le, _ = _misordered_counts(groups, scores, method, with_strict=False)
    pairs = groups.pair_weights_per_group() if groups.weighted else groups.pairs_per_group
    return _ratio_per_group(pairs - le, pairs)


def auc_per_group(groups: QueryGroups, scores: np.ndarray, *, method: str = DEFAULT_COUNTING) -> np.ndarray:
    """Per-group AUC / C-index with tied scores counted ½; NaN for groups without pairs.

    See :func:`auc`.

    Returns
    -------
    float64 array (G,)
    """
    scores = _check_scores(groups, scores)
    le, lt = _misordered_counts(groups, scores, method, with_strict=True)
    pairs = groups.pair_weights_per_group() if groups.weighted else groups.pairs_per_group
    return _ratio_per_group(pairs - le + 0.5 * (le - lt), pairs)


# --------------------------------------------------------------------------- NDCG


class _NdcgTable:
    """NDCG@j of every group at every cut-off ``j = 1..n_g``, laid out like the rows.

    ``value[offsets[g] + j - 1]`` is NDCG@j of group ``g`` (NaN when the ``"skip"`` rule
    applies); ``undefined`` marks the cut-offs whose ideal DCG is not positive.
    """

    def __init__(
        self, groups: QueryGroups, scores: np.ndarray, discount: NdcgDiscount, zero_idcg: ZeroIdcgRule
    ) -> None:
        _check_zero_idcg(zero_idcg)
        offsets = groups.offsets
        sizes = groups.group_sizes
        m = groups.n_rows
        group_of_row = groups.group_of_row()
        labels = groups.labels
        max_size = int(sizes.max()) if sizes.size else 0
        discounts = ndcg_discounts(max_size, discount)
        # groups are contiguous and lexsort's last key is the group, so sorted position t
        # still belongs to group_of_row[t]: its rank inside the group is t - offsets[g] + 1
        position = np.arange(m, dtype=np.int64) - offsets[group_of_row]
        disc = discounts[position]
        # ranking: score descending, ties pessimistically (lowest label first)
        ranked = np.lexsort((labels, -scores, group_of_row))
        ideal = np.lexsort((-labels, group_of_row))
        dcg = _segmented_cumsum(ndcg_gain(labels[ranked]) * disc, offsets)
        idcg = _segmented_cumsum(ndcg_gain(labels[ideal]) * disc, offsets)
        undefined = ~(idcg > 0.0)
        value = np.empty(m, dtype=np.float64)
        ok = ~undefined
        value[ok] = dcg[ok] / idcg[ok]
        value[undefined] = {"zero": 0.0, "one": 1.0, "skip": np.nan}[zero_idcg]
        self.groups = groups
        self.value = value
        self.undefined = undefined
        self.group_of_row = group_of_row

    def at(self, k: int) -> np.ndarray:
        """NDCG@k of every group (the whole group when ``k`` exceeds its size)."""
        k = _check_k(k)
        sizes = self.groups.group_sizes
        out = np.full(sizes.shape[0], np.nan)
        nonempty = sizes > 0
        last = self.groups.offsets[:-1][nonempty] + np.minimum(k, sizes[nonempty]) - 1
        out[nonempty] = self.value[last]
        return out

    def mean(self) -> np.ndarray:
        """Per group, the average of NDCG@1..n_g over the cut-offs that are not NaN."""
        offsets = self.groups.offsets
        defined = ~np.isnan(self.value)
        count = _group_sums_int(defined.astype(np.int64), offsets)
        total = _segmented_cumsum(np.where(defined, self.value, 0.0), offsets)
        out = np.full(count.shape[0], np.nan)
        has = count > 0
        out[has] = total[offsets[1:][has] - 1] / count[has]
        return out

    def zero_idcg_groups(self) -> np.ndarray:
        """Per group: the zero-IDCG rule applied at some cut-off (never for an empty group)."""
        return np.bincount(self.group_of_row[self.undefined], minlength=self.groups.n_groups) > 0


def ndcg_at(
    groups: QueryGroups,
    scores: np.ndarray,
    k: int,
    *,
    discount: NdcgDiscount = DEFAULT_NDCG_DISCOUNT,
    zero_idcg: ZeroIdcgRule = DEFAULT_ZERO_IDCG,
) -> np.ndarray:
    """NDCG@k of every group.

    Rows are ranked by score descending; inside a run of equal scores the lowest labels
    come first (ties never help the model).  The ideal ranking sorts labels descending.
    ``DCG@k = Σ_{i<=k} (2**y_(i) - 1) · discount(i)``; when ``k`` exceeds the group size
    the whole group is used.

    Parameters
    ----------
    groups : QueryGroups
        Labels and contiguous group structure.
    scores : float64 array (m,)
        Model scores.
    k : int
        Cut-off, ``k >= 1``.
    discount : {"letor", "yahoo"}
        ``1/log2(max(2, i))`` (LETOR / MSLR) or ``1/log2(i + 1)`` (Yahoo! LTR).
    zero_idcg : {"zero", "one", "skip"}
        Value when the ideal DCG@k is not positive (all labels 0): 0, 1 or NaN.

    Returns
    -------
    float64 array (G,)
        NaN for empty groups and for ``"skip"``-ed groups.
    """
    scores = _check_scores(groups, scores)
    _check_k(k)
    return _NdcgTable(groups, scores, discount, zero_idcg).at(k)


# --------------------------------------------------------------------------- bipartite (li2014)


def _top_counts(groups: QueryGroups, scores: np.ndarray, threshold: float):
    """Per group: positives, positives strictly above the top negative, and "has both classes"."""
    bp = Bipartite.of(groups, float(threshold), "group")
    top, _ = top_negative(scores, bp.is_pos, bp.offsets, bp.active)
    at_top = bp.is_pos & bp.row_active & (scores > np.repeat(top, groups.group_sizes))
    n_pos = _group_sums_int(bp.is_pos.astype(np.int64), groups.offsets)
    return n_pos, _group_sums_int(at_top.astype(np.int64), groups.offsets), bp.active


def positives_at_top_per_group(
    groups: QueryGroups, scores: np.ndarray, *, threshold: float = DEFAULT_POSITIVE_THRESHOLD
) -> np.ndarray:
    """Fraction of each group's positives scoring strictly above its highest negative.

    Returns
    -------
    float64 array (G,)
        NaN for groups without both a positive (``y > threshold``) and a negative.
    """
    scores = _check_scores(groups, scores)
    n_pos, at_top, both = _top_counts(groups, scores, threshold)
    return _ratio_per_group(at_top, np.where(both, n_pos, 0))


def _precision_table(groups: QueryGroups, scores: np.ndarray, threshold: float):
    """Per row of the ranked order: positives among the first ``j`` rows of its group."""
    is_pos = groups.labels > threshold
    group_of_row = groups.group_of_row()
    # score descending, ties pessimistically (negatives first), groups kept contiguous
    ranked = np.lexsort((is_pos, -scores, group_of_row))
    hits = _segmented_cumsum(is_pos[ranked].astype(np.float64), groups.offsets)
    return hits, _group_sums_int(is_pos.astype(np.int64), groups.offsets)


def _precision_at(hits: np.ndarray, n_pos: np.ndarray, groups: QueryGroups, k: int) -> np.ndarray:
    sizes = groups.group_sizes
    out = np.full(sizes.shape[0], np.nan)
    has = (sizes > 0) & (n_pos > 0)
    cut = np.minimum(k, sizes[has])
    out[has] = hits[groups.offsets[:-1][has] + cut - 1] / cut
    return out


def precision_at_k_per_group(
    groups: QueryGroups, scores: np.ndarray, k: int, *, threshold: float = DEFAULT_POSITIVE_THRESHOLD
) -> np.ndarray:
    """Precision@k of every group: positives among the top ``min(k, n_g)`` rows / ``min(k, n_g)``.

    Tied scores are ordered pessimistically (negatives first).  NaN for empty groups and
    groups without a positive.
    """
    scores = _check_scores(groups, scores)
    k = _check_k(k)
    hits, n_pos = _precision_table(groups, scores, threshold)
    return _precision_at(hits, n_pos, groups, k)


# --------------------------------------------------------------------------- reports


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    ks = tuple(_check_k(k) for k in ks)
    if len(set(ks)) != len(ks):
        raise ValueError(f"duplicate NDCG cut-offs in {ks}")
    return ks


def group_sums(
    groups: QueryGroups,
    scores: np.ndarray,
    *,
    ks: Iterable[int] = DEFAULT_KS,
    discount: NdcgDiscount = DEFAULT_NDCG_DISCOUNT,
    zero_idcg: ZeroIdcgRule = DEFAULT_ZERO_IDCG,
    method: str = DEFAULT_COUNTING,
    threshold: float = DEFAULT_POSITIVE_THRESHOLD,
) -> dict[str, np.ndarray]:
    """Per group, the counts and values every metric is made of (per query here, pooled by
    :class:`~sparkrank.evaluation.kernel.MetricsKernel`).

    Returns
    -------
    dict of str to array (G,)
        ``rows``, ``pairs``, ``correct_pairs`` (``p_u > p_l``), ``tied_pairs`` (``p_u == p_l``),
        ``positives``, ``positives_at_top`` (above the group's top negative; 0 without both
        classes) as int64; ``both_classes`` and ``zero_idcg`` (the zero-IDCG rule applied)
        as bool; ``ndcg@K``, ``mean_ndcg`` and ``precision@K`` values (NaN where undefined).
        With weights (:mod:`sparkrank.data.weights`) the three pair counts are pair weights
        ``Σ b_q a_u a_l`` (float64); the rest is per query as without them (the callers weigh
        queries by ``b_q``: :class:`~sparkrank.evaluation.kernel.MetricsKernel`).
    """
    scores = _check_scores(groups, scores)
    ks = _check_ks(ks)
    le, lt = _misordered_counts(groups, scores, method, with_strict=True)
    pairs = groups.pair_weights_per_group() if groups.weighted else groups.pairs_per_group.astype(np.int64)
    table = _NdcgTable(groups, scores, discount, zero_idcg)
    n_pos, at_top, both = _top_counts(groups, scores, threshold)
    hits, _ = _precision_table(groups, scores, threshold)
    out: dict[str, np.ndarray] = {
        "rows": groups.group_sizes.astype(np.int64),
        "pairs": pairs,
        "correct_pairs": pairs - le,
        "tied_pairs": le - lt,
        "zero_idcg": table.zero_idcg_groups(),
    }
    for k in ks:
        out[ndcg_name(k)] = table.at(k)
    out[MEAN_NDCG] = table.mean()
    out.update(positives=n_pos, both_classes=both, positives_at_top=np.where(both, at_top, 0))
    for k in ks:
        out[precision_name(k)] = _precision_at(hits, n_pos, groups, k)
    return out


def per_group_metrics(
    groups: QueryGroups,
    scores: np.ndarray,
    *,
    ks: Iterable[int] = DEFAULT_KS,
    discount: NdcgDiscount = DEFAULT_NDCG_DISCOUNT,
    zero_idcg: ZeroIdcgRule = DEFAULT_ZERO_IDCG,
    method: str = DEFAULT_COUNTING,
    threshold: float = DEFAULT_POSITIVE_THRESHOLD,
) -> dict[str, np.ndarray]:
    """Per-query metrics for per-query reports.

    Parameters
    ----------
    groups : QueryGroups
        Labels and contiguous group structure.
    scores : float64 array (m,)
        Model scores.
    ks : iterable of int
        NDCG cut-offs.
    discount : {"letor", "yahoo"}
        NDCG discount convention.
    zero_idcg : {"zero", "one", "skip"}
        NDCG value where the ideal DCG is not positive.
    method : {"selection", "rbtree", "direct", "pairs"}
        Counting structure for the pairwise metrics.

    Returns
    -------
    dict of str to array (G,)
        ``"rows"`` and ``"pairs"`` (int64), ``"pairwise_accuracy"`` and ``"auc"`` (NaN
        without pairs), ``"ndcg@K"`` for each K and ``"mean_ndcg"`` (NaN when empty or
        skipped); ``"positives"`` (int64), ``"positives_at_top"`` and ``"precision@K"``
        (bipartite by ``label > threshold``; NaN where undefined).
    """
    ks = _check_ks(ks)
    sums = group_sums(groups, scores, ks=ks, discount=discount, zero_idcg=zero_idcg, method=method,
                      threshold=threshold)
    pairs = sums["pairs"]
    out: dict[str, np.ndarray] = {
        "rows": sums["rows"],
        "pairs": pairs,
        PAIRWISE_ACCURACY: _ratio_per_group(sums["correct_pairs"], pairs),
        AUC: _ratio_per_group(sums["correct_pairs"] + 0.5 * sums["tied_pairs"], pairs),
    }
    for k in ks:
        out[ndcg_name(k)] = sums[ndcg_name(k)]
    out[MEAN_NDCG] = sums[MEAN_NDCG]
    out["positives"] = sums["positives"]
    out[POSITIVES_AT_TOP] = _ratio_per_group(sums["positives_at_top"], np.where(sums["both_classes"],
                                                                                 sums["positives"], 0))
    for k in ks:
        out[precision_name(k)] = sums[precision_name(k)]
    return out
