"""How many preference pairs a pair rule keeps: the normaliser of a RankSVM loss on those pairs.

The engines' data summary counts every pair of a group with different labels
(``QueryGroups.pairs_per_group``).  The adjacent-level rule of lee-lin2014 §5 keeps only the
pairs whose upper row is on the next label level above the lower row's: ``Σ_r n_r·n_{r+1}``
over a group's levels (``n_r`` its rows of level ``r``).  :class:`PairCountKernel` counts them
in one engine pass, from the labels alone, on whatever engine holds the rows.

With row and group weights (:mod:`sparkrank.data.weights`) the normaliser is the pairs' weight
``Σ_q b_q Σ_r A_r·A_{r+1}`` (``A_r`` the weight of a group's rows of level ``r``, levels among
the rows of positive weight), the adjacent pair count of the data with integer weights repeated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..choices import DEFAULT_PAIR_RULE
from ..data.groups import QueryGroups, level_pair_weights
from .base import KernelResult, ScoreKernel, Statistics
from .level_counting import positive_weight_levels


def pairs_per_group(groups: QueryGroups, pair_rule: str) -> np.ndarray:
    """The number of pairs ``pair_rule`` keeps in each group (int64, one per group)."""
    if pair_rule == "all":
        return groups.pairs_per_group
    if pair_rule != "adjacent":
        raise ValueError(f"unknown pair rule {pair_rule!r}")
    # every level 0..n_levels-1 of a group has rows (dense ranks): count the rows of each
    # (group, level), then multiply each level's count by the next level's of the same group
    first_level = np.concatenate([[0], np.cumsum(groups.n_levels, dtype=np.int64)])
    rows = np.bincount(first_level[:-1][groups.group_of_row()] + groups.label_rank, minlength=int(first_level[-1]))
    level_group = np.repeat(np.arange(groups.n_groups), groups.n_levels)
    products = rows[:-1].astype(np.int64) * rows[1:]
    products[level_group[:-1] != level_group[1:]] = 0  # a group's top level has no next level
    return np.bincount(level_group[:-1], weights=products, minlength=groups.n_groups).round().astype(np.int64)


def pair_weights_per_group(groups: QueryGroups, pair_rule: str) -> np.ndarray:
    """The weight ``Σ b_q a_u a_l`` of the pairs ``pair_rule`` keeps in each group (float64, one
    per group; the counts of :func:`pairs_per_group` when ``groups`` are unweighted)."""
    if not groups.weighted:
        return pairs_per_group(groups, pair_rule).astype(np.float64)
    if pair_rule == "all":
        return groups.pair_weights_per_group()
    if pair_rule != "adjacent":
        raise ValueError(f"unknown pair rule {pair_rule!r}")
    levels = positive_weight_levels(groups, groups.row_weights)  # adjacent as in the repeated data
    return level_pair_weights(groups.row_weights, levels.label_rank, levels.offsets, levels.n_levels, True) \
        * groups.group_weights


@dataclass(frozen=True)
class PairCountKernel(ScoreKernel):
    """The number of pairs :attr:`pair_rule` keeps (statistic ``pairs``; weighted groups: their
    weight, summed exactly); scores are not read."""

    statistics = ("pairs",)
    pair_rule: str = DEFAULT_PAIR_RULE

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        if groups.weighted:
            return Statistics.summed({"pairs": pair_weights_per_group(groups, self.pair_rule)}).result()
        return Statistics.summed({"pairs": float(pairs_per_group(groups, self.pair_rule).sum())}).result()
