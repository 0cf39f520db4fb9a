"""The one place for every convention sparkrank uses.

Everything that papers, tools or evaluation scripts disagree on is decided here and
referenced from the rest of the code.

Preference pairs
----------------
``P = {(u, l): q_u == q_l and y_u > y_l}``: row ``u`` ("upper") should score above row
``l`` ("lower").  Rows without a group id form one global ranking.  Equal labels never
form a pair.  ``N = |P|``.

Support pairs (the hinge is active)
-----------------------------------
A pair ``(u, l)`` is a *support pair* at scores ``p`` when ``1 - (p_u - p_l) > 0``,
evaluated in floating point exactly as ``p_u < p_l + 1.0``.  Every counting method and
the brute-force oracle use this one expression (see :func:`is_support_pair`), so they
agree bit for bit; at ``p_u - p_l == 1`` both losses and their derivatives are zero, so
the choice only matters for the generalized Hessian (lee-lin2014 eq. (13)), where we
follow LIBLINEAR (``z < 1`` is active).

Regularisation: λ and C
-----------------------
* BMRM / airola2011: ``J(w) = λ‖w‖² + (1/N) Σ_P max(0, 1 - w·(x_u - x_l))``.
* LIBLINEAR / lee-lin2014: ``f(w) = ½‖w‖² + C Σ_P loss``.

Dividing ``J`` by ``2λ`` gives ``½‖w‖² + (1/(2λN)) Σ_P loss``, so the two have the same
minimiser when ``C = 1 / (2 λ N)``.  :class:`LambdaForm` is the only implementation of this
and every other λ↔C conversion below.  SVMrank divides its ``-c`` by the number of
training queries: ``C_liblinear = C_svmrank / n_queries`` (see :func:`c_from_svmrank`).

* raykar2007 (RankNCG) maximises ``L(w) = -(λ/2)‖w‖² + Σ_P log σ(w·(x_u - x_l))``.
  Negating and dividing by λ gives ``½‖w‖² + (1/λ) Σ_P -log σ(...)``, LIBLINEAR's form with
  ``C = 1/λ`` (no ``N``: neither sum is normalised); see :func:`raykar_lambda_from_c`.

* li2014 (TopPush) minimises ``(λ/2)‖w‖² + (1/m) Σ_i ℓ(max_j w·x⁻_j − w·x⁺_i)`` over the
  ``m`` positives.  Dividing by λ gives ``½‖w‖² + (1/(λm)) Σ_i ℓ``, LIBLINEAR's form with
  ``C = 1/(λm)``, i.e. ``λ = 1/(C·m)``; see :func:`toppush_lambda_from_c`.

Bipartite labels (TopPush, positives at the top, precision@k)
-------------------------------------------------------------
A row is *positive* when its label is strictly above a threshold, by default
``y > 0`` (:data:`DEFAULT_POSITIVE_THRESHOLD`); all other rows are negatives.  A positive
is "at the top" only when it scores strictly above the highest-scoring negative of its
group (a tie counts against the model).

The top-k push (TopPush with a top fraction ``τ``) compares each positive with the mean of the
``k = ⌈τ·n⁻⌉`` highest-scoring negatives of its ranking unit (``n⁻`` its negatives), at least 1
and at most ``n⁻``; ``τ = 0`` is ``k = 1``, li2014's TopPush.  A product ``τ·n⁻`` within 1e-9
(relative) of an integer counts as that integer, so 0.1 of 30 negatives is 3, not 4
(:func:`top_k_count`).

Ties in scores (evaluation)
---------------------------
Ties are never broken in the model's favour:

* pairwise accuracy counts a tied pair as *not* correctly ordered (lee-lin2014 §4.4);
* AUC (two label levels) counts a tied pair as one half (Wilcoxon–Mann–Whitney);
* NDCG orders tied scores pessimistically: inside a run of equal scores the rows with
  the lowest labels come first.

NDCG
----
Gain ``2**y - 1``.  Discount ``1/log2(max(2, i))`` for rank ``i = 1, 2, ...`` (LETOR /
MSLR, the default) or ``1/log2(i + 1)`` (Yahoo! LTR challenge).  A query whose ideal DCG is
zero (all labels 0) has undefined NDCG; by default it scores 0 like LETOR's
``Eval-Score-4.0.pl``; ``"one"`` scores it 1 and ``"skip"`` leaves it out of averages.

Summation order of a score
--------------------------
A row's score ``x·w`` is summed in eight lanes by column index mod 8, each in column order,
the lanes combined in a fixed tree, the same for dense rows and CSR (defined, with why, in
:mod:`sparkrank.numerics.simd`, which the numerical layer owns); sums over rows (``Xᵀc``,
statistics) are double-doubles rounded once (:mod:`sparkrank.numerics.exact_sum`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

#: Hinge margin of both RankSVM losses.
MARGIN: float = 1.0

#: Rows with ``label > DEFAULT_POSITIVE_THRESHOLD`` are positives (TopPush, precision@k).
DEFAULT_POSITIVE_THRESHOLD: float = 0.0

NdcgDiscount = Literal["letor", "yahoo"]
ZeroIdcgRule = Literal["zero", "one", "skip"]

DEFAULT_NDCG_DISCOUNT: NdcgDiscount = "letor"
DEFAULT_ZERO_IDCG: ZeroIdcgRule = "zero"


def is_support_pair(p_upper: float, p_lower: float, margin: float = MARGIN) -> bool:
    """True when the pair ``(upper, lower)`` violates the margin: ``p_u < p_l + margin``."""
    return p_upper < p_lower + margin


@dataclass(frozen=True)
class LambdaForm:
    """A paper's λ form ``q·λ‖w‖² + (1/n) Σ loss`` and its one conversion to LIBLINEAR's C.

    Dividing by ``2qλ`` gives ``½‖w‖² + (1/(2qλn)) Σ loss``, LIBLINEAR's form with
    ``C = 1/(2qλn)`` (``n = 1`` when the paper's sum is not normalised).

    Attributes
    ----------
    quadratic : float
        ``q``: 1 for airola2011's ``λ‖w‖²``, ½ for ``(λ/2)‖w‖²`` (li2014, raykar2007).
    normaliser : str or None
        What the loss sum is divided by (``"pairs"``, ``"positives"``), None when it is not.
    """

    quadratic: float
    normaliser: str | None

    def lambda_from_c(self, c: float, n: int = 1) -> float:
        """λ of this form equivalent to LIBLINEAR's ``C`` (``n``: the normaliser's count)."""
        _check_positive(c, "C")
        self._check_count(n)
        return 1.0 / (2.0 * self.quadratic * c * n)

    def c_from_lambda(self, lam: float, n: int = 1) -> float:
        """LIBLINEAR's ``C`` equivalent to λ of this form."""
        _check_positive(lam, "lambda")
        self._check_count(n)
        return 1.0 / (2.0 * self.quadratic * lam * n)

    def _check_count(self, n: int) -> None:
        if self.normaliser is None:
            if n != 1:
                raise ValueError("this λ form has no normaliser; n must be 1")
        elif n <= 0:
            raise ValueError(_EMPTY[self.normaliser])


_EMPTY = {"pairs": "the data has no preference pairs (every group has a single label level)",
          "positives": "TopPush needs at least one positive row in a group that also has a negative"}

#: airola2011 (BMRM): ``λ‖w‖² + (1/N) Σ_P loss``, ``C = 1/(2λN)``.
RANKSVM_LAMBDA = LambdaForm(1.0, "pairs")
#: raykar2007 (RankNCG): ``(λ/2)‖w‖² + Σ_P loss`` (the negated MAP estimator), ``C = 1/λ``.
RAYKAR_LAMBDA = LambdaForm(0.5, None)
#: li2014 (TopPush): ``(λ/2)‖w‖² + (1/m) Σ_i ℓ``, ``C = 1/(λm)``.
TOPPUSH_LAMBDA = LambdaForm(0.5, "positives")


def lambda_from_c(c: float, n_pairs: int) -> float:
    """λ of ``λ‖w‖² + (1/N)Σ loss`` equivalent to LIBLINEAR's ``C``: ``λ = 1/(2 C N)``."""
    return RANKSVM_LAMBDA.lambda_from_c(c, n_pairs)


def c_from_lambda(lam: float, n_pairs: int) -> float:
    """LIBLINEAR's ``C`` equivalent to λ of ``λ‖w‖² + (1/N)Σ loss``: ``C = 1/(2 λ N)``."""
    return RANKSVM_LAMBDA.c_from_lambda(lam, n_pairs)


def raykar_lambda_from_c(c: float) -> float:
    """raykar2007's λ of ``-(λ/2)‖w‖² + Σ_P log σ`` for LIBLINEAR's ``C``: ``λ = 1/C``."""
    return RAYKAR_LAMBDA.lambda_from_c(c)


def c_from_raykar_lambda(lam: float) -> float:
    """LIBLINEAR's ``C`` for raykar2007's λ: ``C = 1/λ``."""
    return RAYKAR_LAMBDA.c_from_lambda(lam)


def toppush_lambda_from_c(c: float, n_positives: int) -> float:
    """li2014's λ of ``(λ/2)‖w‖² + (1/m)Σ_i ℓ`` for LIBLINEAR's ``C``: ``λ = 1/(C m)``."""
    return TOPPUSH_LAMBDA.lambda_from_c(c, n_positives)


def top_k_count(top_fraction: float, n_negatives: np.ndarray) -> np.ndarray:
    """``k = ⌈τ·n⁻⌉`` per ranking unit, clipped to ``[1, n⁻]`` (``τ = 0``: 1; module docstring)."""
    n = np.asarray(n_negatives, dtype=np.int64)
    product = float(top_fraction) * n
    k = np.ceil(product - 1e-9 * np.maximum(product, 1.0)).astype(np.int64)
    return np.clip(k, 1, np.maximum(n, 1))


def c_from_svmrank(c_svmrank: float, n_queries: int) -> float:
    """LIBLINEAR's ``C`` for SVMrank's ``-c``: SVMrank divides ``-c`` by the query count."""
    _check_positive(c_svmrank, "C (SVMrank)")
    if n_queries <= 0:
        raise ValueError("n_queries must be positive")
    return c_svmrank / n_queries


def ndcg_discounts(n: int, discount: NdcgDiscount = DEFAULT_NDCG_DISCOUNT) -> np.ndarray:
    """Discounts for ranks ``1..n`` under the chosen convention."""
    ranks = np.arange(1, n + 1, dtype=np.float64)
    if discount == "letor":
        return 1.0 / np.log2(np.maximum(2.0, ranks))
    if discount == "yahoo":
        return 1.0 / np.log2(ranks + 1.0)
    raise ValueError(f"unknown NDCG discount {discount!r}; use 'letor' or 'yahoo'")


def ndcg_gain(labels: np.ndarray) -> np.ndarray:
    """Gain ``2**y - 1`` of each label."""
    return np.exp2(np.asarray(labels, dtype=np.float64)) - 1.0


def _check_positive(value: float, name: str) -> None:
    if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")



#: The score column sparkrank adds everywhere (``predict`` on Spark, per-query metrics,
#: pyspark.ml ``predictionCol``); ``--prediction-col`` renames it in ``predict``'s output.
PREDICTION_COL = "prediction"
