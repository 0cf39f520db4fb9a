"""Score-space kernels of the pairwise RankSVM losses.

Each kernel maps the scores of whole query groups to additive statistics and per-row
coefficients ``c`` (the engine turns them into ``Xᵀc``).  They are plain picklable
dataclasses so the Spark engine can ship them to executors.

Sums here are *unnormalised* (over all pairs); objectives apply ``1/N`` or ``C``.

Weighted rows and groups (:mod:`sparkrank.data.weights`): a pair ``(u, l)`` of group ``q``
weighs ``b_q·a_u·a_l``.  The trees then hold weight sums (``l±`` = ``Σ a_j`` and ``α±``, ``γ±``
= ``Σ a_j v_j`` over the partners, :func:`count_support_pairs` with ``weights``), and each row's
terms are multiplied by its own ``b_q·a_k`` (:meth:`QueryGroups.row_factors`): the formulas
below with every pair counted by its weight, the data with integer weights repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..choices import DEFAULT_PAIR_RULE
from ..conventions import MARGIN
from ..data.groups import QueryGroups
from ..numerics.exact_sum import dd_add, sum_dd
from .base import KernelResult, ScoreKernel, Statistics
from .counting import DEFAULT_COUNTING, PairCounts, count_support_pairs, sort_within_groups

#: The statistics of a pairwise RankSVM loss kernel: the loss sum and the support pairs.
LOSS_STATISTICS = ("loss", "support_pairs")


@dataclass(frozen=True)
class HingeKernel(ScoreKernel):
    """L1 pairwise hinge: airola2011 eqs. (5)-(8).

    statistics: ``loss`` = ``Σ_P max(0, 1 - (p_u - p_l))``, ``support_pairs``; coef = ``c - d``.
    """

    statistics = LOSS_STATISTICS
    counting: str = DEFAULT_COUNTING
    #: The pairs summed over (:data:`sparkrank.choices.PAIR_RULES`).
    pair_rule: str = DEFAULT_PAIR_RULE

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        if groups.weighted:
            return self._weighted(groups, scores)
        return self.from_counts(count_support_pairs(groups, scores, margin=MARGIN, method=self.counting,
                                                    pair_rule=self.pair_rule), scores)

    def from_counts(self, counts: PairCounts, scores: np.ndarray, factors: np.ndarray | None = None) -> KernelResult:
        """The result from the rows' support-pair counts (also range placement's formula);
        ``factors``: weighted rows' ``b_q·a_k`` (the counts are then weight sums)."""
        if factors is not None:
            return self._weighted_from_counts(counts, scores, factors)
        c, d = counts.n_above, counts.n_below
        coef = (c - d).astype(np.float64)  # airola2011 eq. (8)
        n_support = float(c.sum())
        loss = dd_add(sum_dd(coef * scores), (n_support, 0.0))  # eq. (7)
        return Statistics(self.statistics, [loss[0], n_support], [loss[1], 0.0]).result(coef)

    def _weighted(self, groups: QueryGroups, scores: np.ndarray) -> KernelResult:
        # eqs. (7)-(8) with weight sums c, d and each row's terms times b_q·a_k
        counts = count_support_pairs(groups, scores, margin=MARGIN, method=self.counting, pair_rule=self.pair_rule,
                                     weights=groups.row_weights)
        return self._weighted_from_counts(counts, scores, groups.row_factors())

    def _weighted_from_counts(self, counts: PairCounts, scores: np.ndarray, factors: np.ndarray) -> KernelResult:
        coef = factors * (counts.n_above - counts.n_below)
        support = sum_dd(factors * counts.n_above)
        loss = dd_add(sum_dd(coef * scores), support)
        return Statistics(self.statistics, [loss[0], support[0]], [loss[1], support[1]]).result(coef)


@dataclass(frozen=True)
class SquaredHingeKernel(ScoreKernel):
    """L2 pairwise squared hinge: loss and gradient of lee-lin2014 eqs. (18)-(19).

    With ``l⁺ = n_above``, ``l⁻ = n_below`` and ``α± = `` sums of ``p`` over the support
    partners, ``Σ_SV (1 - p_u + p_l)² = Σ_k (l⁺+l⁻)p_k² - (α⁺+α⁻)p_k + 2(l⁺-l⁻)p_k + l⁻_k``
    and its derivative in ``p`` is ``c = 2((l⁺+l⁻)p - (α⁺+α⁻) + (l⁺-l⁻))``.
    statistics: ``loss`` = ``Σ_SV (1 - p_u + p_l)²``, ``support_pairs``.  Keeps ``(p, order)``
    for Hessian products (its group form also keeps the sweeps' plan at ``p``, with which
    the Hessian's group form skips the sweeps: :func:`sparkrank.kernels.group_forms.squared_hinge_group`).
    """

    statistics = LOSS_STATISTICS
    #: Whether the result also carries the score-space Hessian diagonal (``moment_coef``).
    with_diagonal: ClassVar[bool] = False
    counting: str = DEFAULT_COUNTING
    pair_rule: str = DEFAULT_PAIR_RULE

    @property
    def group_form(self) -> str | None:  # type: ignore[override]
        # kernels/group_forms.squared_hinge_group sorts and sweeps as the selection counting does
        return "squared_hinge" if self.counting == "selection" and self.pair_rule == "all" else None

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        order = None if self.counting == "pairs" else sort_within_groups(scores, groups.offsets)
        if groups.weighted:
            return self._weighted(groups, scores, order)
        k = count_support_pairs(groups, scores, scores, order=order, margin=MARGIN, method=self.counting,
                                pair_rule=self.pair_rule)
        return self.from_counts(k, scores, (scores, order))

    def from_counts(self, k: PairCounts, scores: np.ndarray, state=None,
                    factors: np.ndarray | None = None) -> KernelResult:
        """The result from the rows' support-pair counts and ``α`` sums (``v = p``), keeping
        ``state`` (also range placement's formula, where the engine keeps the scores);
        ``factors``: weighted rows' ``b_q·a_k`` (the counts and sums are then weighted)."""
        if factors is not None:
            return self._weighted_from_counts(k, scores, factors, state)
        l_sum = (k.n_above + k.n_below).astype(np.float64)
        l_diff = (k.n_above - k.n_below).astype(np.float64)
        alpha = k.s_above + k.s_below
        coef = 2.0 * (l_sum * scores - alpha + l_diff)
        # SupportPairDiagonalKernel's coef, from the same counts, when asked for
        diagonal = 2.0 * l_sum if self.with_diagonal else None
        stats = self.statistics_from_sums(sum_dd((l_sum * scores - alpha + 2.0 * l_diff) * scores),
                                          k.n_above.sum(), k.n_below.sum(),
                                          None if diagonal is None else sum_dd(diagonal))
        return stats.result(coef, state, diagonal)

    def _weighted(self, groups: QueryGroups, scores: np.ndarray, order) -> KernelResult:
        # the expressions above with weight sums l±, α± = Σ a_j p_j and each row's terms times
        # f_k = b_q·a_k; every statistic an exact sum (they are no longer integers)
        k = count_support_pairs(groups, scores, scores, order=order, margin=MARGIN, method=self.counting,
                                pair_rule=self.pair_rule, weights=groups.row_weights)
        return self._weighted_from_counts(k, scores, groups.row_factors(), (scores, order))

    def _weighted_from_counts(self, k: PairCounts, scores: np.ndarray, factors: np.ndarray, state) -> KernelResult:
        l_sum, l_diff = k.n_above + k.n_below, k.n_above - k.n_below
        alpha = k.s_above + k.s_below
        coef = 2.0 * factors * (l_sum * scores - alpha + l_diff)
        diagonal = 2.0 * factors * l_sum if self.with_diagonal else None
        stats = self.weighted_statistics_from_sums(sum_dd(factors * ((l_sum * scores - alpha + 2.0 * l_diff) * scores)),
                                                   sum_dd(factors * k.n_above), sum_dd(factors * k.n_below),
                                                   None if diagonal is None else sum_dd(diagonal))
        return stats.result(coef, state, diagonal)

    def weighted_statistics_from_sums(self, loss_terms, above, below, diagonal) -> Statistics:
        """The weighted statistics from the exact sums (double-doubles) over the rows of the loss
        terms ``f((l⁺+l⁻)p - (α⁺+α⁻) + 2(l⁺-l⁻))p``, of ``f·l⁺``, ``f·l⁻`` and of the diagonal
        ``2f(l⁺+l⁻)`` (``f = b_q·a_k``, ``l±`` weight sums; the diagonal's is only read by the
        diagonal variant): the one place of these formulas for the weighted kernel and the group
        form (:func:`sparkrank.kernels.group_forms.squared_hinge_group`)."""
        loss = dd_add(loss_terms, below)
        hi, lo = [loss[0], above[0]], [loss[1], above[1]]
        if self.with_diagonal:
            return Statistics(self.statistics, hi + [diagonal[0]], lo + [diagonal[1]])
        return Statistics(self.statistics, hi, lo)

    def statistics_from_sums(self, loss_terms, n_above: float, n_below: float, diagonal) -> Statistics:
        """The statistics from the exact sums over the rows of the loss terms
        ``((l⁺+l⁻)p - (α⁺+α⁻) + 2(l⁺-l⁻))p`` and of the diagonal ``2(l⁺+l⁻)`` (double-doubles; the
        diagonal's is only read by the diagonal variant) and
        of ``l⁺`` and ``l⁻`` (the loss adds ``Σ l⁻``; ``support_pairs`` is ``Σ l⁺``); the one place
        of these formulas for ``__call__`` and the group form
        (:func:`sparkrank.kernels.group_forms.squared_hinge_group`)."""
        loss = dd_add(loss_terms, (float(n_below), 0.0))
        hi, lo = [loss[0], float(n_above)], [loss[1], 0.0]
        if self.with_diagonal:  # SupportPairDiagonalKernel's weight
            return Statistics(self.statistics, hi + [diagonal[0]], lo + [diagonal[1]])
        return Statistics(self.statistics, hi, lo)


@dataclass(frozen=True)
class SquaredHingeDiagonalKernel(SquaredHingeKernel):
    """:class:`SquaredHingeKernel` that also returns :class:`SupportPairDiagonalKernel`'s
    coefficients ``2(l⁺ + l⁻)`` (as ``moment_coef``) and their sum (statistic ``weight``),
    from the same counts: the value pass then brings the preconditioner's column moments
    along, and TRON needs no separate pass for them (the same numbers, bit for bit)."""

    statistics = LOSS_STATISTICS + ("weight",)
    with_diagonal = True


@dataclass(frozen=True)
class SquaredHingeHessianKernel(ScoreKernel):
    """Generalized Hessian-vector product of the squared hinge, lee-lin2014 eq. (17).

    Given ``u = Xv`` and the kept ``(p, order)``: ``c = 2((l⁺+l⁻)u - (γ⁺+γ⁻))`` where ``γ±``
    sum ``u`` over the support partners (the support set is the one at ``p``).  With the
    default counting its group form (:func:`sparkrank.kernels.group_forms.squared_hinge_hessian_group`)
    lets engines run the pass group by group, reading ``X`` once.
    """

    counting: str = DEFAULT_COUNTING
    pair_rule: str = DEFAULT_PAIR_RULE

    @property
    def group_form(self) -> str | None:  # type: ignore[override]
        # the group form sweeps all pairs with the selection tree: other counting methods add the
        # sums in another order
        return "squared_hinge_hessian" if self.counting == "selection" and self.pair_rule == "all" else None

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        p, order = state[0], state[1]  # the group form also keeps its sweep plan: same support set
        weights = groups.row_weights if groups.weighted else None
        k = count_support_pairs(groups, p, scores, order=order, margin=MARGIN, method=self.counting,
                                pair_rule=self.pair_rule, weights=weights)
        # γ± = Σ a_j u_j; the row's terms times b_q·a_k
        return self.from_counts(k, scores, None if weights is None else groups.row_factors())

    def from_counts(self, k: PairCounts, scores: np.ndarray, factors: np.ndarray | None = None) -> KernelResult:
        """The product from the support set's counts and ``γ`` sums (``v = u``; also range
        placement's formula); ``factors``: weighted rows' ``b_q·a_k``."""
        coef = 2.0 * ((k.n_above + k.n_below).astype(np.float64) * scores - (k.s_above + k.s_below))
        if factors is not None:
            coef *= factors
        return KernelResult(np.zeros(0), coef)


@dataclass(frozen=True)
class SupportPairDiagonalKernel(ScoreKernel):
    """The score-space Hessian's diagonal of the squared hinge, for diagonal preconditioners.

    The generalized Hessian of ``Σ_SV (1 - p_u + p_l)²`` in score space is ``2·L`` with ``L``
    the Laplacian of the support-pair graph, whose diagonal is the number of support pairs
    a row takes part in: ``coef = 2(l⁺ + l⁻)`` (lee-lin2014 §2.2 counts).  At ``p = 0`` every
    pair is a support pair (margin 1), so there ``coef`` is twice each row's pair count.
    No state: it sorts and counts again (one O(m log m) sweep).  statistics: ``weight`` = ``Σ coef``.
    """

    statistics = ("weight",)
    counting: str = DEFAULT_COUNTING
    pair_rule: str = DEFAULT_PAIR_RULE

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        weights = groups.row_weights if groups.weighted else None
        k = count_support_pairs(groups, scores, margin=MARGIN, method=self.counting, pair_rule=self.pair_rule,
                                weights=weights)
        return self.from_counts(k, scores, None if weights is None else groups.row_factors())

    def from_counts(self, k: PairCounts, scores: np.ndarray, factors: np.ndarray | None = None) -> KernelResult:
        """The diagonal from the rows' support-pair counts (also range placement's formula);
        ``factors``: weighted rows' ``b_q·a_k``."""
        coef = 2.0 * (k.n_above + k.n_below).astype(np.float64)
        if factors is not None:
            coef *= factors
        return Statistics.summed({"weight": coef}).result(coef)
