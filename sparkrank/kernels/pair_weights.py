"""The weighted pair count ``Σ_q b_q Σ_{(u,l)∈P_q} a_u a_l`` as a kernel statistic.

With row and group weights (:mod:`sparkrank.data.weights`) the normaliser ``N`` of the
pairwise losses (airola2011's ``1/N``) and the weighted pairwise accuracy are over this sum,
the pair count of the data with integer weights repeated.  It is computed where the groups
live, by one pass of this kernel, and summed exactly, so every engine gives the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.groups import QueryGroups
from .base import KernelResult, ScoreKernel, Statistics


@dataclass(frozen=True)
class PairWeightKernel(ScoreKernel):
    """statistics: ``pair_weight`` = ``Σ b_q a_u a_l`` over the preference pairs (the pair
    count when unweighted); no coefficients."""

    statistics = ("pair_weight",)

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        return Statistics.summed({"pair_weight": groups.pair_weights_per_group()}).result()
