"""Every named choice sparkrank offers, and the one check for a named option.

The CLI (``choices=``), the pyspark.ml params and evaluator, and the modules that implement
each choice all read these tuples; the first entry is not necessarily the default (defaults
are next to each tuple).  Solver names come from :mod:`sparkrank.solvers.registry`.
"""

from __future__ import annotations

from typing import Iterable

#: Support-pair counting structures (lee-lin2014 §2.3-2.5, :mod:`sparkrank.kernels.counting`).
COUNTING_METHODS: tuple[str, ...] = ("selection", "rbtree", "direct", "pairs")
DEFAULT_COUNTING = "selection"

#: RankNCG gradient: ε-exact fast erfc sums or the exact O(m²)-per-group sum (raykar2007 §5).
RANKNET_GRADIENTS: tuple[str, ...] = ("fast", "direct")

#: TopPush ranking units: each query group, or one global ranking (li2014).
TOPPUSH_SCOPES: tuple[str, ...] = ("group", "global")

#: Per-feature standardization (:mod:`sparkrank.standardization`).
STANDARDIZATIONS: tuple[str, ...] = ("none", "minmax", "standard")

#: In-memory layout of the feature rows (:mod:`sparkrank.data.features`): dense rows when
#: they take no more memory than CSR, CSR (scipy), or dense rows.
FEATURE_LAYOUTS: tuple[str, ...] = ("auto", "sparse", "dense")

#: Where the Spark engine runs the score-space kernel (DESIGN.md §2).
PLACEMENTS: tuple[str, ...] = ("auto", "executor", "driver")

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
