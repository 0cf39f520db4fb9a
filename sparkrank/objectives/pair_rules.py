"""The preference pairs a RankSVM objective trains on (``pairs``: all, or adjacent levels).

lee-lin2014 §5 trains on a subset of the pairs: those whose upper row is on the next label
level above the lower row's.  The loss then sums over those pairs only (the kernels' pair rule)
and BMRM's λ form divides by their number ``N``, which this module counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engines.base import Engine
from ..kernels.pair_count import PairCountKernel
from .base import require_pairs


def training_pairs(engine: Engine, pair_rule: str) -> int | float:
    """``N``, the number of pairs ``pair_rule`` trains on (all pairs: the engine's summary;
    adjacent pairs: one pass of :class:`PairCountKernel`), or a :class:`DataError` when there are
    none (a group with pairs has two adjacent levels, so adjacent pairs exist when pairs do).
    Weighted data: their weight ``Σ b_q a_u a_l`` (a float; adjacency among the levels of rows
    of positive weight, so adjacent pairs of positive weight exist when pairs of it do)."""
    n_all = require_pairs(engine)
    if pair_rule == "all":
        return n_all
    kernel = PairCountKernel(pair_rule)
    total = kernel.named(engine.run(np.zeros(engine.summary.n_features), kernel).stats)["pairs"]
    return total if engine.summary.weighted else int(round(total))


def pair_facts(pair_rule: str, n_pairs: int) -> dict[str, Any]:
    """The model summary's record of a rule other than ``all``: the pairs trained on."""
    return {} if pair_rule == "all" else {"training_pairs": n_pairs}
