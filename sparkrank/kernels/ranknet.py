"""Score-space kernel of the log-sigmoid pairwise likelihood (raykar2007 §3-§5, "RankNCG").

Per query group, over the full order of its label levels (``P``: pairs with ``y_u > y_l``;
two levels is the bipartite case), the loss in minimisation form is

    ℓ(p) = Σ_P -log σ(p_u - p_l),      σ(z) = 1 / (1 + e^{-z}),

and its derivative per row (the engine turns it into ``Xᵀc``) is

    c_k = Σ_{u: y_u > y_k} σ(p_k - p_u) - Σ_{l: y_l < y_k} σ(p_l - p_k).

Gradient modes
--------------
* ``direct``: exact σ over all pairs, O(pairs) = O(m²) per group — the oracle (raykar2007's
  "RankNCG direct").  The exact loss comes free in the same loop.
* ``fast``: raykar2007 §4 approximates ``σ(z) ≈ 1 - ½ erfc(a z)``, ``a = √3/(√2 π)``, so with
  ``z_k = a p_k``
  ``c_k ≈ ½ Σ_{u above k} erfc(z_u - z_k) - ½ Σ_{l below k} erfc(z_k - z_l)``
  ``     = n_above(k) - ½ Σ_{u above} erfc(z_k - z_u) - ½ Σ_{l below} erfc(z_k - z_l)``
  (``erfc(-x) = 2 - erfc(x)``): two weighted erfc sums per row, each ε-exact through
  :mod:`sparkrank.kernels.erfc_sum`.  The levels are swept in sorted order over one cluster
  grid per group: the upward sweep evaluates a level's rows against the coefficients of all
  lower levels and then adds the level's rows as sources; the downward sweep does the same
  from the top.  Every row is inserted at most twice (O(p) each) and evaluated at most twice
  (O(p·l + log K) each), so a group costs ``O(p·l·m + m log K)`` *whatever* its number of
  levels (``l`` ≈ 4 influential clusters, ``K`` occupied clusters, ``p`` ≈ 13 at ε=1e-6).
  Each ``c_k`` errs by at most ``½ ε (n_above(k) + n_below(k))`` from the erfc-approximated
  gradient.  Groups with few pairs per row are summed directly (same erfc terms, O(pairs))
  because that is cheaper there.

  The fast coefficients are the exact derivative of the smooth convex surrogate
  ``ℓ̃(z) = ½ ∫_z^∞ erfc(a t) dt = (e^{-a²z²}/√π - a z erfc(a z)) / (2a)`` summed over pairs,
  so a solver driven by them converges to the minimiser of that surrogate
  (:func:`surrogate_pair_loss`), not exactly to the log-sigmoid one.

Exact value
-----------
We know no sub-quadratic exact method for ``Σ_P log σ(p_u - p_l)`` (``log(1 + e^{-z})`` does not
separate like the erfc series, and at ``w = 0`` every pair sits in the non-asymptotic range),
so the exact value costs O(pairs) per group.  The kernel computes it only when asked
(``value=True``); the objective lets a fast run skip it (``monitor=False``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..choices import RANKNET_GRADIENTS, check_choice
from ..data.groups import QueryGroups
from .base import KernelResult, ScoreKernel, Statistics
from .erfc_sum import (
    check_grid_span,
    empty_expansions,
    erfc_sum_parameters,
    expansion_evaluate,
    expansion_insert,
    series_factors,
)

#: ``a`` of ``σ(z) ≈ 1 - ½ erfc(a z)`` (raykar2007 §4, eq. (3)).
SIGMOID_ERFC_SCALE = math.sqrt(3.0) / (math.sqrt(2.0) * math.pi)

DEFAULT_EPSILON = 1e-6

#: A group is summed directly when its pairs per row are below this many series terms
#: (the fast sweeps cost about ``2·p·(l + 1)`` series terms per row).
DIRECT_PAIRS_PER_TERM = 4.0


def surrogate_pair_loss(z: np.ndarray) -> np.ndarray:
    """``ℓ̃(z) = (e^{-a²z²}/√π - a z erfc(a z)) / (2a)``: the loss whose derivative the fast
    gradient computes (``-ℓ̃'(z) = ½ erfc(a z) ≈ σ(-z)``)."""
    from scipy.special import erfc

    az = SIGMOID_ERFC_SCALE * np.asarray(z, dtype=np.float64)
    return (np.exp(-az * az) / math.sqrt(math.pi) - az * erfc(az)) / (2.0 * SIGMOID_ERFC_SCALE)


@njit(cache=True, nogil=True)
def _softplus_neg(z):
    """``-log σ(z) = log(1 + e^{-z})`` without overflow."""
    if z > 0.0:
        return math.log1p(math.exp(-z))
    return -z + math.log1p(math.exp(z))


@njit(cache=True, nogil=True)
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@njit(cache=True, nogil=True)
def _exact_pairs(scores, label_rank, offsets, n_levels, want_coef, coef, weights=None, factors=None):
    """Exact ``Σ_P -log σ(p_u - p_l)`` and (optionally) its derivative; O(pairs).  With row
    ``weights`` each pair ``(i, j)`` weighs ``factors[i]·weights[j]`` (``b_q·a_i·a_j``); without,
    1.0 (a product by 1.0 is exact: the unweighted sums keep their bits)."""
    loss = 0.0
    for g in range(offsets.shape[0] - 1):
        if n_levels[g] < 2:
            continue
        lo = offsets[g]
        hi = offsets[g + 1]
        for i in range(lo, hi):
            ri = label_rank[i]
            pi = scores[i]
            for j in range(lo, hi):
                if ri > label_rank[j]:
                    z = pi - scores[j]  # i above j
                    pair = 1.0
                    if weights is not None:
                        pair = factors[i] * weights[j]
                    loss += pair * _softplus_neg(z)
                    if want_coef:
                        s = pair * _sigmoid(-z)  # d/dz -log σ(z) = -σ(-z)
                        coef[i] -= s
                        coef[j] += s
    return loss


@njit(cache=True, nogil=True)
def _fast_coef(scores, label_rank, offsets, n_levels, pairs_per_group, a, p, h, r_x, r_y, direct_below, coef,
               weights=None):
    """Erfc-approximated derivative (module docstring), ε-exact fast sums per group.

    ``weights`` (row weights ``a_i``; ``None``: unweighted): every source enters the erfc sums with
    its weight (raykar2007's ``q_i``) and ``n_above`` is the weight above, so ``coef[k]`` sums its
    pairs weighed by the partner's ``a_j``; the caller multiplies it by ``b_q·a_k``."""
    factors = series_factors(p, h)
    for g in range(offsets.shape[0] - 1):
        s_levels = n_levels[g]
        if s_levels < 2:
            continue
        lo = offsets[g]
        m = offsets[g + 1] - lo
        z = np.empty(m)
        for i in range(m):
            z[i] = a * scores[lo + i]
        if pairs_per_group[g] < direct_below * m:
            for i in range(m):
                for j in range(m):
                    if label_rank[lo + i] > label_rank[lo + j]:
                        e = 0.5 * math.erfc(z[i] - z[j])  # ≈ σ(p_j - p_i), raykar2007 eq. (3)
                        if weights is None:
                            coef[lo + i] -= e
                            coef[lo + j] += e
                        else:
                            coef[lo + i] -= e * weights[lo + j]
                            coef[lo + j] += e * weights[lo + i]
            continue
        # rows of the group ordered by label level (counting sort)
        start = np.zeros(s_levels + 1, dtype=np.int64)
        for i in range(m):
            start[label_rank[lo + i] + 1] += 1
        for k in range(s_levels):
            start[k + 1] += start[k]
        fill = start[:-1].copy()
        order = np.empty(m, dtype=np.int64)
        for i in range(m):
            r = label_rank[lo + i]
            order[fill[r]] = i
            fill[r] += 1
        centres, cid, A, B, qk, tree = empty_expansions(z, r_x, p)
        # upward sweep: -½ Σ_{l below} erfc(z_k - z_l)
        for lev in range(s_levels):
            if lev > 0:
                for t in range(start[lev], start[lev + 1]):
                    i = order[t]
                    coef[lo + i] -= 0.5 * expansion_evaluate(A, B, qk, tree, centres, h, r_y, z[i])
            if lev < s_levels - 1:
                for t in range(start[lev], start[lev + 1]):
                    i = order[t]
                    expansion_insert(A, B, qk, tree, centres, factors, h, cid[i], z[i],
                                     1.0 if weights is None else weights[lo + i])
        A[:, :] = 0.0
        B[:, :] = 0.0
        qk[:] = 0.0
        tree[:] = 0.0
        # downward sweep: ½ Σ_{u above} erfc(z_u - z_k) = n_above - ½ Σ_{u above} erfc(z_k - z_u)
        n_above = 0 if weights is None else 0.0
        for lev in range(s_levels - 1, -1, -1):
            if lev < s_levels - 1:
                for t in range(start[lev], start[lev + 1]):
                    i = order[t]
                    coef[lo + i] += n_above - 0.5 * expansion_evaluate(A, B, qk, tree, centres, h, r_y, z[i])
            if lev > 0:
                for t in range(start[lev], start[lev + 1]):
                    i = order[t]
                    expansion_insert(A, B, qk, tree, centres, factors, h, cid[i], z[i],
                                     1.0 if weights is None else weights[lo + i])
                if weights is None:
                    n_above += start[lev + 1] - start[lev]
                else:
                    for t in range(start[lev], start[lev + 1]):
                        n_above += weights[lo + order[t]]


def check_gradient_mode(gradient: str) -> str:
    return check_choice(gradient, RANKNET_GRADIENTS, "RankNet gradient")


@dataclass(frozen=True)
class RankNetKernel(ScoreKernel):
    """Log-sigmoid pairwise loss per query group (module docstring); statistics: ``loss``
    (0 unless computed).

    Attributes
    ----------
    gradient : {"fast", "direct"} or None
        How to compute the per-row derivative ``c``; ``None``: no coefficients.
    epsilon : float
        Accuracy of the fast erfc sums (relative to the number of terms in each sum).
    value : bool
        Also compute the exact loss (O(pairs) per group; free with ``direct``).
    direct_small_groups : bool
        Let ``fast`` sum groups with few pairs per row directly (same erfc terms).

    ``stats = [Σ_P -log σ(p_u - p_l)]`` (0 when ``value`` is false and ``gradient`` is not
    ``direct``).
    """

    gradient: str | None = "fast"
    epsilon: float = DEFAULT_EPSILON
    value: bool = False
    direct_small_groups: bool = True
    statistics = ("loss",)

    def __post_init__(self):
        if self.gradient is not None:
            check_gradient_mode(self.gradient)
        erfc_sum_parameters(self.epsilon)  # validates ε

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            bad = int(np.flatnonzero(~np.isfinite(scores))[0])
            raise FloatingPointError(f"score of row {bad} is not finite ({scores[bad]!r}); the weights diverged")
        rank = np.ascontiguousarray(groups.label_rank)
        coef = None if self.gradient is None else np.zeros(scores.shape[0])
        loss = 0.0
        factors = groups.row_factors() if groups.weighted else None
        if self.gradient == "direct" or self.value:
            want = self.gradient == "direct"
            args = (scores, rank, groups.offsets, groups.n_levels, want, coef if want else np.zeros(0))
            loss = _exact_pairs(*args) if factors is None else _exact_pairs(*args, groups.row_weights, factors)
        if self.gradient == "fast":
            prm = erfc_sum_parameters(self.epsilon)
            check_grid_span(SIGMOID_ERFC_SCALE * scores, prm.r_x, "scores")
            direct_below = DIRECT_PAIRS_PER_TERM * prm.p if self.direct_small_groups else 0.0
            args = (scores, rank, groups.offsets, groups.n_levels, groups.pairs_per_group,
                    SIGMOID_ERFC_SCALE, prm.p, prm.h, prm.r_x, prm.r_y, direct_below, coef)
            if factors is None:
                _fast_coef(*args)
            else:  # the partners' weights in the sums, the row's own b_q·a_k here
                _fast_coef(*args, groups.row_weights)
                coef *= factors
        return Statistics(self.statistics, [loss]).result(coef)
