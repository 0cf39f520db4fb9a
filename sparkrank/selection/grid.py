"""The C grid and the default validation metric of a model selection."""

from __future__ import annotations

import math
from typing import Iterable

from ..evaluation.names import PAIRWISE_ACCURACY

#: lee-lin2014 §4.4: C ∈ {2⁻¹⁵, …, 2¹⁰}.
DEFAULT_C_GRID: tuple[float, ...] = tuple(2.0**e for e in range(-15, 11))
#: Pairwise accuracy is defined for every data set (real-valued labels, one global
#: ranking) and is what RankSVM's pairwise loss approximates, so it is the default.
DEFAULT_METRIC = PAIRWISE_ACCURACY


def c_grid_from_range(low: int, high: int) -> list[float]:
    """``[2**low, 2**(low+1), …, 2**high]`` (integer exponents, inclusive)."""
    if int(low) != low or int(high) != high:
        raise ValueError(f"C range exponents must be integers, got {low} and {high}")
    if high < low:
        raise ValueError(f"C range is empty: low exponent {low} > high exponent {high}")
    return [2.0**e for e in range(int(low), int(high) + 1)]


def check_c_grid(grid: Iterable[float] | None) -> list[float]:
    """The grid as sorted, distinct, positive finite floats (default :data:`DEFAULT_C_GRID`)."""
    values = list(DEFAULT_C_GRID if grid is None else grid)
    if not values:
        raise ValueError("the C grid is empty")
    out = []
    for c in values:
        c = float(c)
        if not math.isfinite(c) or c <= 0:
            raise ValueError(f"every C must be a positive finite number, got {c!r}")
        out.append(c)
    return sorted(set(out))
