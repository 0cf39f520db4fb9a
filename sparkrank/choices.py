"""Every named choice sparkrank offers, and the one check for a named or a numeric option.

The CLI (``choices=``), the pyspark.ml params and evaluator, and the modules that implement
each choice all read these tuples; the first entry is not necessarily the default (defaults
are next to each tuple).  Solver names come from :mod:`sparkrank.solvers.registry`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Iterable

#: Support-pair counting structures (lee-lin2014 §2.3-2.5, :mod:`sparkrank.kernels.counting`;
#: ``prsvm+``: the per-level two-level counting of lee-lin2014 §3.1, :mod:`sparkrank.kernels.level_counting`).
COUNTING_METHODS: tuple[str, ...] = ("selection", "rbtree", "direct", "pairs", "prsvm+")
DEFAULT_COUNTING = "selection"

#: The preference pairs a RankSVM loss sums over: every pair of a group with different labels,
#: or only those whose upper row is on the next level above the lower row's (lee-lin2014 §5).
PAIR_RULES: tuple[str, ...] = ("all", "adjacent")
DEFAULT_PAIR_RULE = "all"

#: RankNCG gradient: ε-exact fast erfc sums or the exact O(m²)-per-group sum (raykar2007 §5).
RANKNET_GRADIENTS: tuple[str, ...] = ("fast", "direct")

#: TopPush ranking units: each query group, or one global ranking (li2014).
TOPPUSH_SCOPES: tuple[str, ...] = ("group", "global")

#: Per-feature standardization (:mod:`sparkrank.standardization`).
STANDARDIZATIONS: tuple[str, ...] = ("none", "minmax", "standard")

#: In-memory layout of the feature rows (:mod:`sparkrank.data.features`): dense rows when
#: they take no more memory than CSR, CSR (scipy), or dense rows.
FEATURE_LAYOUTS: tuple[str, ...] = ("auto", "sparse", "dense")

#: Where the Spark engine runs the score-space kernel (docs/design.md §2).
PLACEMENTS: tuple[str, ...] = ("auto", "executor", "driver", "range")
#: Where a ``LinearRanker`` fit or a ``RankingEvaluator`` runs (``auto``: in the driver when the
#: rows fit it; :mod:`sparkrank.ml.local_fit`).
ML_ENGINES: tuple[str, ...] = ("auto", "local", "spark")

#: NDCG discount conventions and zero-IDCG rules (:mod:`sparkrank.conventions`).
NDCG_DISCOUNTS: tuple[str, ...] = ("letor", "yahoo")
ZERO_IDCG_RULES: tuple[str, ...] = ("zero", "one", "skip")

#: Feature storage precision.
DTYPES: tuple[str, ...] = ("float64", "float32")


def check_choice(value: str, choices: Iterable[str], what: str) -> str:
    """``value`` if it is one of ``choices``, else a ``ValueError`` naming ``what`` and the choices."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(map(str, choices))}")
    return value


def check_positive_int(value, what: str) -> int:
    """``value`` as an ``int`` if it is an integer >= 1 (an iteration cap, a count), else a
    ``ValueError`` naming ``what``; the CLI's parser and the Python API say it alike."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


def check_positive_float(value, what: str) -> float:
    """``value`` as a ``float`` if it is a finite number > 0 (a tolerance), else a ``ValueError``
    naming ``what``: a tolerance of 0 or less, NaN or infinity cannot stop a solver as asked."""
    if isinstance(value, bool) or not isinstance(value, Real) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a finite positive number, got {value!r}")
    return float(value)
