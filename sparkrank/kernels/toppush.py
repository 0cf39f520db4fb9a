"""Score-space kernels of TopPush (li2014; docs/design.md §3.4) and its top-k push.

Rows are made bipartite by a label threshold (positive when ``y > threshold``).  The
ranking unit is a query group (``scope="group"``: each group pushes its positives above
*its own* highest-scoring negatives, and the dual constraints hold per group)
or the whole block (``scope="global"``: one ranking; the engine must then run the kernel
on a single block).  Units without both a positive and a negative are skipped.

Each positive is compared with ``T_k``, the mean of the ``k`` highest negative scores of its
unit, ``k = ⌈τ·n⁻⌉`` for the top fraction ``τ`` (:func:`sparkrank.conventions.top_k_count`):
``τ = 0`` (``k = 1``, ``T_1`` the top negative) is li2014's TopPush, bit for bit; the dual
set becomes ``Ω_k`` (:mod:`sparkrank.kernels.capped_projection`, where it is derived).

The dual variables live here, per row, as kernel *state* kept by the engine beside the
block (``z`` = ``α`` on positives, ``β`` on negatives; zero on skipped rows), so the
driver never holds an m-length dual vector.  Because ``w`` is linear in the dual,
``w(z) = (X⁺ᵀα − X⁻ᵀβ)/(λm)``, the driver forms Nesterov's search point
``w(y) = w(x_k) + η (w(x_k) − w(x_{k−1}))`` itself; one pass with that vector gives the
scores ``p = X w(y)`` from which :class:`TopPushStepKernel` takes the projected gradient
step per unit.

Sums here are unnormalised; the objective applies ``λ``, ``m`` and ``C``.

Weighted rows and groups (:mod:`sparkrank.data.weights`): a row takes part when its weight
``f_i = b_q·a_i`` is positive (:class:`PresentRows`; the others are left out, as if dropped).  A
positive's term is multiplied by ``f_i`` and ``m`` becomes ``Σ f_i`` over the positives
(statistic ``positive_weight``); a present negative counts once, whatever its weight
(``max_j`` does not change when a negative is repeated; with a top fraction ``τ > 0``, ``k`` and
``T_k`` count each present negative once).  In the dual, ``Σ_i f_i ℓ(z_i)`` has the conjugate
``Σ_i f_i ℓ*(α_i/f_i) = Σ_i α_i²/(4 f_i) − α_i`` and ``∇_α F = p⁺ + α/(2f) − 1``; the rest is
unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numba import njit

from ..choices import TOPPUSH_SCOPES as SCOPES, check_choice
from ..conventions import DEFAULT_POSITIVE_THRESHOLD, top_k_count
from ..data.groups import QueryGroups
from .base import KernelResult, ScoreKernel, Statistics
from .capped_projection import project_top_k_groups

Scope = Literal["group", "global"]

#: Order of :class:`TopPushCountKernel`'s statistics.
COUNT_STATS = ("n_positives", "n_negatives", "n_units", "n_units_skipped", "n_blocks", "top_k_sum",
               "positive_weight")
#: Order of :class:`TopPushStepKernel`'s statistics.
STEP_STATS = ("conj_y", "conj_next", "linear", "dist2", "primal_loss_y", "not_at_top_y")
#: Order of :class:`TopPushPrimalKernel`'s statistics.
PRIMAL_STATS = ("loss", "positives_not_at_top")


def check_scope(scope: str) -> str:
    return check_choice(scope, SCOPES, "TopPush scope")


@dataclass(frozen=True)
class Bipartite:
    """Rows of one block split into positives / negatives and ranking units."""

    is_pos: np.ndarray  # bool (m,)
    offsets: np.ndarray  # int64 (U+1,): units (groups, or the whole block)
    active: np.ndarray  # bool (U,): unit has a positive and a negative
    row_active: np.ndarray  # bool (m,)
    k: np.ndarray  # int64 (U,): how many top negatives each positive is compared with

    @classmethod
    def of(cls, groups: "QueryGroups | PresentRows", threshold: float, scope: str,
           top_fraction: float = 0.0) -> "Bipartite":
        is_pos = groups.labels > threshold
        offsets = groups.offsets if scope == "group" else np.array([0, groups.n_rows], dtype=np.int64)
        sizes = np.diff(offsets)
        csum = np.concatenate([[0], np.cumsum(is_pos, dtype=np.int64)])
        n_pos = csum[offsets[1:]] - csum[offsets[:-1]]
        active = (n_pos > 0) & (n_pos < sizes)
        return cls(is_pos, offsets, active, np.repeat(active, sizes), top_k_count(top_fraction, sizes - n_pos))


@dataclass(frozen=True)
class PresentRows:
    """The rows of a block that take part in TopPush: all of them unweighted, else those of
    weight ``b_q·a_i > 0`` (module docstring), as labels and group offsets of their own.

    Attributes
    ----------
    rows : int64 array or None
        The present rows of the block (``None``: every row, unweighted).
    labels : float64 array
    offsets : int64 array (G+1,)
        The block's groups over the present rows (empty groups where none is present).
    factors : float64 array or None
        ``b_q·a_i`` of the present rows (``None``: unweighted).
    n_block_rows : int
    """

    rows: np.ndarray | None
    labels: np.ndarray
    offsets: np.ndarray
    factors: np.ndarray | None
    n_block_rows: int

    @classmethod
    def of(cls, groups: QueryGroups) -> "PresentRows":
        if not groups.weighted:
            return cls(None, groups.labels, groups.offsets, None, groups.n_rows)
        factors = groups.row_factors()
        rows = np.flatnonzero(factors > 0)
        offsets = np.searchsorted(rows, groups.offsets).astype(np.int64)
        return cls(rows, groups.labels[rows], offsets, factors[rows], groups.n_rows)

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    def take(self, values: np.ndarray) -> np.ndarray:
        """A per-row array of the block restricted to the present rows."""
        return values if self.rows is None else values[self.rows]

    def put(self, values: np.ndarray) -> np.ndarray:
        """A per-row array of the present rows as one of the block (0 on the others)."""
        if self.rows is None:
            return values
        out = np.zeros(self.n_block_rows)
        out[self.rows] = values
        return out

    def weighed(self, values: np.ndarray) -> np.ndarray:
        """``values`` (of the present rows) times their ``b_q·a_i`` (unchanged when unweighted)."""
        return values if self.factors is None else values * self.factors


@njit(cache=True)
def top_negative(scores, is_pos, offsets, active):
    """Per unit: the highest negative score and the first row attaining it (also the
    bipartite metrics' "positives at the top", :mod:`sparkrank.evaluation.metrics`)."""
    U = offsets.shape[0] - 1
    top = np.full(U, -np.inf)
    arg = np.full(U, -1, dtype=np.int64)
    for u in range(U):
        if not active[u]:
            continue
        for r in range(offsets[u], offsets[u + 1]):
            if not is_pos[r] and scores[r] > top[u]:
                top[u] = scores[r]
                arg[u] = r
    return top, arg


@njit(cache=True)
def top_k_negatives(scores, is_pos, offsets, active, k):
    """Per unit: the highest negative score, ``T_k`` (the mean of the ``k[u]`` highest) and, per
    row, whether it is one of the ``k`` negatives a subgradient of ``T_k`` puts ``1/k`` on (ties
    at the k-th score in row order: for ``k = 1`` the first top negative, as :func:`top_negative`).

    ``T_k`` is found by selection (``np.partition``), not a sort: with ``v`` the k-th largest
    negative score, ``T_k = (Σ_{p⁻ > v} p⁻ + (k − #{p⁻ > v})·v)/k`` whatever the ties.
    """
    U = offsets.shape[0] - 1
    top = np.full(U, -np.inf)
    mean = np.full(U, -np.inf)
    chosen = np.zeros(scores.shape[0], dtype=np.bool_)
    for u in range(U):
        if not active[u]:
            continue
        lo, hi = offsets[u], offsets[u + 1]
        arg = -1
        n = 0
        for r in range(lo, hi):
            if not is_pos[r]:
                n += 1
                if scores[r] > top[u]:
                    top[u] = scores[r]
                    arg = r
        if k[u] == 1:
            mean[u] = top[u]
            if arg >= 0:
                chosen[arg] = True
            continue
        values = np.empty(n)
        n = 0
        for r in range(lo, hi):
            if not is_pos[r]:
                values[n] = scores[r]
                n += 1
        v = np.partition(values, n - k[u])[n - k[u]]
        above = 0.0
        quota = k[u]
        for r in range(lo, hi):
            if not is_pos[r] and scores[r] > v:
                above += scores[r]
                chosen[r] = True
                quota -= 1
        mean[u] = (above + quota * v) / k[u]
        for r in range(lo, hi):
            if quota > 0 and not is_pos[r] and scores[r] == v:
                chosen[r] = True
                quota -= 1
    return top, mean, chosen


def primal_terms(bp: Bipartite, scores: np.ndarray):
    """The top-k push's loss per positive row: ``ℓ(T_k(p⁻) − p_i) = [1 + T_k − p_i]₊²``
    (li2014's ``ℓ(max_j p⁻_j − p_i)`` when ``k = 1``).

    Returns ``(hinge, loss, not_at_top, chosen)``: the per-row ``[1 + z_i]₊`` (0 off the active
    positives), its square, the per-row flag "positive not strictly above its top negative"
    (ties count against the model, :mod:`sparkrank.conventions`; the metric, whatever ``k``) and
    the rows of each unit's ``k`` top negatives (:func:`top_k_negatives`).
    """
    top, mean, chosen = top_k_negatives(scores, bp.is_pos, bp.offsets, bp.active, bp.k)
    sizes = np.diff(bp.offsets)
    mean_row = np.repeat(mean, sizes)
    pos = bp.is_pos & bp.row_active
    hinge = np.where(pos, np.maximum(1.0 + mean_row - scores, 0.0), 0.0)
    return hinge, hinge * hinge, pos & (scores <= np.repeat(top, sizes)), chosen


class _RankingUnit(ScoreKernel):
    """``spans_groups`` for the TopPush kernels: a global-scope kernel ranks all rows at once,
    so an engine must not cut its input at group boundaries (see ``ScoreKernel``)."""

    scope: Scope
    threshold: float
    top_fraction: float

    def bipartite(self, groups: "QueryGroups | PresentRows") -> Bipartite:
        return Bipartite.of(groups, self.threshold, self.scope, self.top_fraction)

    @property
    def spans_groups(self) -> bool:
        return self.scope == "global"


@dataclass(frozen=True)
class TopPushCountKernel(_RankingUnit):
    """Counts of the bipartite units (:data:`COUNT_STATS`): positives, negatives, units,
    skipped units, blocks, and the sum of the active units' ``k``.

    Positives/negatives are counted in active units only; ``m`` of li2014 is the positives.
    """

    statistics = COUNT_STATS

    threshold: float = DEFAULT_POSITIVE_THRESHOLD
    scope: Scope = "group"
    top_fraction: float = 0.0

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        present = PresentRows.of(groups)
        bp = self.bipartite(present)
        positives = bp.is_pos & bp.row_active
        n_pos = np.count_nonzero(positives)
        n_neg = np.count_nonzero(~bp.is_pos & bp.row_active)
        n_units = bp.active.size
        n_skipped = n_units - np.count_nonzero(bp.active)
        k_sum = float(np.sum(bp.k[bp.active]))
        if present.factors is None:
            return Statistics(self.statistics, [n_pos, n_neg, n_units, n_skipped, 1.0, k_sum, n_pos]).result()
        counts = {name: float(v) for name, v in zip(self.statistics, [n_pos, n_neg, n_units, n_skipped, 1.0, k_sum])}
        return Statistics.summed({**counts, "positive_weight": present.factors[positives]}).result()


@dataclass(frozen=True)
class TopPushPrimalKernel(_RankingUnit):
    """Primal loss sum ``Σ_i ℓ(T_k(p⁻) − p_i)`` and its gradient coefficients.

    statistics (:data:`PRIMAL_STATS`): ``loss``, ``positives_not_at_top``; coef = ``∂/∂p`` of the
    summed loss: ``−2[1+z_i]₊`` on positive ``i`` and ``Σ_i 2[1+z_i]₊ / k`` on each of its unit's
    ``k`` top negatives (ties at the k-th score in row order: a subgradient).
    """

    threshold: float = DEFAULT_POSITIVE_THRESHOLD
    scope: Scope = "group"
    top_fraction: float = 0.0
    statistics = PRIMAL_STATS

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        present = PresentRows.of(groups)
        bp = self.bipartite(present)
        hinge, loss, not_top, chosen = primal_terms(bp, present.take(scores))
        weighed = present.weighed(hinge)  # f_i·[1 + z_i]₊ (weighted rows)
        coef = -2.0 * weighed
        unit_of_row = np.repeat(np.arange(bp.active.size), np.diff(bp.offsets))
        per_unit = np.bincount(unit_of_row, weights=2.0 * weighed, minlength=bp.active.size)
        rows = np.flatnonzero(chosen)
        coef[rows] += per_unit[unit_of_row[rows]] / bp.k[unit_of_row[rows]]  # k = 1: li2014's, exactly
        not_top_count = float(np.count_nonzero(not_top)) if present.factors is None else present.weighed(not_top)
        return Statistics.summed(dict(zip(self.statistics, [present.weighed(loss), not_top_count]))).result(
            present.put(coef))


def conjugate_loss(a: np.ndarray) -> np.ndarray:
    """``ℓ*(a) = a²/4 − a``, the conjugate of ``[1 + z]₊²`` on ``a ≥ 0`` (li2014 dual)."""
    return 0.25 * a * a - a


@dataclass(frozen=True)
class TopPushStepKernel(_RankingUnit):
    """One projected gradient step of the TopPush dual at Nesterov's search point.

    With kept state ``(x_k, x_{k−1})`` (zeros when ``state`` is None) the search point is
    ``y = x_k + η (x_k − x_{k−1})``; given ``p = X w(y)`` the dual gradient is
    ``∇_α F = p⁺ + α/2 − 1`` and ``∇_β F = −p⁻`` (li2014 dual), and the step is
    ``x₊ = Π_{Ω_k}(y − step·∇F(y))`` per unit (:func:`project_top_k_groups`; li2014's
    projection where ``k = 1``).

    Returns state ``(x₊, x_k)``, coef = ``α₊`` on positives and ``−β₊`` on negatives (so
    ``Xᵀc/(λm) = w(x₊)``), and stats (:data:`STEP_STATS`): ``Σℓ*(α_y)``, ``Σℓ*(α₊)``,
    ``⟨∇F(y), x₊ − y⟩``, ``‖x₊ − y‖²``, and the primal loss sum and count of positives not
    at the top at ``w(y)`` (free: the scores are those of ``w(y)``).
    """

    eta: float
    step: float
    threshold: float = DEFAULT_POSITIVE_THRESHOLD
    scope: Scope = "group"
    top_fraction: float = 0.0
    statistics = STEP_STATS

    def __call__(self, groups: QueryGroups, scores: np.ndarray, state) -> KernelResult:
        present = PresentRows.of(groups)
        bp = self.bipartite(present)
        scores = present.take(scores)
        m = present.n_rows
        if state is None:
            x = x_prev = np.zeros(m)
        else:  # the kept state is per row of the block (0 on rows not present)
            x, x_prev = present.take(state[0]), present.take(state[1])
        y = x + self.eta * (x - x_prev) if self.eta else x
        pos = bp.is_pos
        # ∇_α F = p⁺ + α/(2f) − 1 (f = 1 unweighted)
        half = 0.5 * y if present.factors is None else 0.5 * y / present.factors
        grad = np.where(pos, scores + half - 1.0, -scores)
        grad[~bp.row_active] = 0.0
        x_next = project_top_k_groups(y - self.step * grad, pos, bp.offsets, bp.k, bp.active)
        d = x_next - y
        _, loss, not_top, _ = primal_terms(bp, scores)
        stats = Statistics.summed(dict(zip(self.statistics, [
            np.where(pos, self._conjugate(y, present), 0.0),
            np.where(pos, self._conjugate(x_next, present), 0.0),
            grad * d,
            d * d,
            present.weighed(loss),
            float(np.count_nonzero(not_top)) if present.factors is None else present.weighed(not_top),
        ])))
        return stats.result(present.put(np.where(pos, x_next, -x_next)), (present.put(x_next), present.put(x)))

    @staticmethod
    def _conjugate(a: np.ndarray, present: PresentRows) -> np.ndarray:
        """``ℓ*(a)``, or with weights ``f·ℓ*(a/f) = a²/(4f) − a`` (module docstring)."""
        if present.factors is None:
            return conjugate_loss(a)
        return 0.25 * a * a / present.factors - a
