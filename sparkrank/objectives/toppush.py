"""TopPush (li2014) and its top-k push: push every positive above the top negatives, in linear time.

Primal (li2014 eq. (6) with ``max_j`` replaced by ``T_k``, docs/design.md §3.4), over the
``m`` positives of units that have both classes::

    P(w) = (λ/2)‖w‖² + (1/m) Σ_i ℓ(T_k(X⁻w) − w·x⁺_i),   ℓ(z) = [1 + z]₊²

``T_k`` is the mean of the unit's ``k = ⌈τ·n⁻⌉`` highest negative scores (the top fraction
``τ``; ``τ = 0``: ``k = 1``, ``T_1 = max_j``, li2014's TopPush exactly).  ``T_k`` is convex (a max
of linear functions over the capped simplex), so ``P`` is.

Dual (li2014 eq. (7), Theorem 1; only the set changes with k)::

    F(α, β) = (1/(2λm)) ‖X⁺ᵀα − X⁻ᵀβ‖² + Σ_i ℓ*(α_i),   ℓ*(a) = a²/4 − a,
    over Ω_k = {α ≥ 0, 0 ≤ β_j ≤ Σα/k, Σα = Σβ}   (per unit; Ω_1 = li2014's Ω),
    w = (X⁺ᵀα − X⁻ᵀβ)/(λm),   ∇_α F = X⁺w + α/2 − 1,   ∇_β F = −X⁻w.

(:mod:`sparkrank.kernels.capped_projection` derives ``Ω_k`` and projects onto it.)

When w = 0 is the answer
------------------------
``P(0) = 1`` (every hinge is 1) and the regulariser is flat at 0, so the directional
derivative of ``P`` at 0 along ``v`` is ``2·mean_i(T_k(X⁻v) − v·x⁺_i)``, whatever ``C``.
``w = 0`` is the minimiser exactly when no direction makes the positives' mean margin over their
unit's top-k negative mean positive; with ``k = 1`` one outlying negative per unit suffices, which
is common on noisy data.  A larger ``τ`` lowers ``T_k`` towards the negatives' mean (``k = n⁻``
pushes the positives above the mean negative, which only fails when the class means coincide):
:meth:`TopPushObjective.zero_solution_message` says so when a fit ends at (or within the
tolerance of) ``w = 0``.

Strong duality gives ``min P = −min F / m``; for any primal ``w`` and feasible dual
``(α, β)``, ``P(w) + F(α, β)/m ≥ 0`` is a duality gap.  In terms of ``w`` the quadratic
part of ``F`` is ``(λm/2)‖w‖²``, so the driver evaluates ``F`` from ``w`` (n-vector) and
the summed ``Σℓ*`` statistic; the dual vector itself stays with the engine (kernel state).

``C`` follows LIBLINEAR: ``½‖w‖² + C Σ_i ℓ`` ⇔ ``λ = 1/(C m)``
(:data:`sparkrank.conventions.TOPPUSH_LAMBDA`), so ``λm = 1/C``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..conventions import DEFAULT_POSITIVE_THRESHOLD, TOPPUSH_LAMBDA
from ..data.block import DataError
from ..engines.base import Engine, StateHandle
from ..kernels.toppush import (
    TopPushCountKernel,
    TopPushPrimalKernel,
    TopPushStepKernel,
    check_scope,
)
from .base import RegularizedRisk

log = logging.getLogger("sparkrank.toppush")

#: The solver's default top fraction τ and C (``train``, the CLI, ``LinearRanker``; the objective's own
#: τ stays 0), chosen on validation splits (``bench/toppush.py``, docs/benchmarks.md "TopPush at the top
#: of the list"): on MQ2008 Fold1 τ ≤ 0.1 still gives w = 0 (its queries have ~15 negatives: k = 1 or 2)
#: and τ = 0.3 had the most positives at the top of vali.txt at every C tried (1/16, 1/4, 1).  On one
#: global ranking the optimum is w = 0 for every k up to k*, where the positives' mean leaves the
#: negatives' reduced convex hull (one LP, ``--part w0-threshold``): k*/n⁻ = 0.036–0.039 on the noisy
#: synthetic set and 0.030–0.033 on cadata above its median, so a small k (or τ) cannot rank there and
#: a fraction, not a count, is the right unit; above it no τ from 0.05 to 1 was consistently better on
#: the validation splits.  C = 1/16 was as good as 1/4 and 1 and certifies its optimum in 2-4x fewer
#: iterations (cadata at τ ≤ 0.3, C ≥ 1/4 often did not within 5000).
DEFAULT_TOP_FRACTION = 0.3
DEFAULT_TOPPUSH_C = 0.0625
#: The top fractions ``tune`` tries with every C when none is given (0.05 is the first above the global
#: sets' w = 0 threshold; smaller values only add fits that end at w = 0, the slowest to certify).
TOP_FRACTION_TUNE_VALUES = (0.05, 0.1, 0.2, 0.3, 0.5)


@dataclass
class DualIterate:
    """A feasible dual point ``x_k`` known to the driver only through ``w`` and ``F``.

    Attributes
    ----------
    w, w_prev : ndarray (n_features,)
        ``w(x_k)`` and ``w(x_{k−1})``.
    state : StateHandle or None
        Engine-kept per-row ``(x_k, x_{k−1})``; None means both are zero.
    value : float
        ``F(x_k)``.
    """

    w: np.ndarray
    w_prev: np.ndarray
    state: StateHandle | None
    value: float


@dataclass
class ProjectedStep:
    """One trial step ``x₊ = Π_Ω(y − ∇F(y)/L)`` from the search point ``y``.

    Attributes
    ----------
    candidate : DualIterate
        ``x₊`` (with ``x_k`` as its predecessor).
    value_y : float
        ``F(y)``.
    linear, dist2 : float
        ``⟨∇F(y), x₊ − y⟩`` and ``‖x₊ − y‖²``.
    w_search : ndarray (n_features,)
        ``w(y)``, the search point in feature space.
    primal_y : float
        ``P(w(y))``: the primal objective at the search point (free from the same pass).
    not_at_top_y : int
        Positives not strictly above their top negative at ``w(y)``.
    """

    candidate: DualIterate
    value_y: float
    linear: float
    dist2: float
    w_search: np.ndarray
    primal_y: float
    not_at_top_y: int

    def sufficient_decrease(self, L: float) -> bool:
        """Nemirovski's backtracking test ``F(x₊) ≤ F(y) + ⟨∇F(y), x₊−y⟩ + (L/2)‖x₊−y‖²``."""
        bound = self.value_y + self.linear + 0.5 * L * self.dist2
        # a few ulps of slack: both sides are sums of rounded terms of size ~|F|
        slack = 1e-12 * max(1.0, abs(self.value_y), abs(self.candidate.value))
        return self.candidate.value <= bound + slack


class TopPushObjective(RegularizedRisk):
    """TopPush over an engine: the primal for ``value``/``gradient``, the dual for the solver.

    Parameters
    ----------
    engine : Engine
    C : float
        LIBLINEAR-style weight of ``Σ_i ℓ``; ``λ = 1/(C m)``.
    threshold : float
        Rows with ``label > threshold`` are positives.
    scope : {"group", "global"}
        ``group``: each query group pushes its positives above its own top negatives
        (one dual constraint per group); ``global``: one ranking over all rows (needs an
        engine that runs the kernel on one block: :class:`~sparkrank.engines.local.LocalEngine`
        or a driver-placement Spark engine).
    top_fraction : float
        ``τ`` in ``[0, 1]``: compare each positive with the mean of its unit's ``⌈τ·n⁻⌉``
        highest negative scores; 0 (the default here) is li2014's TopPush, ``k = 1``.
    """

    lambda_form = TOPPUSH_LAMBDA
    progress_stat = "positives_not_at_top"

    def __init__(self, engine: Engine, C: float = 1.0, *,
                 threshold: float = DEFAULT_POSITIVE_THRESHOLD, scope: str = "group", top_fraction: float = 0.0):
        self.threshold = float(threshold)
        if not np.isfinite(self.threshold):
            raise ValueError(f"threshold must be finite, got {threshold!r}")
        self.scope = check_scope(scope)
        self.top_fraction = float(top_fraction)
        if not 0.0 <= self.top_fraction <= 1.0:
            raise ValueError(f"top_fraction must be in [0, 1], got {top_fraction!r}")
        count_kernel = TopPushCountKernel(self.threshold, self.scope, self.top_fraction)
        counts = count_kernel.named(engine.run(np.zeros(engine.summary.n_features), count_kernel).stats)
        self.n_positives = int(round(counts["n_positives"]))
        self.n_negatives = int(round(counts["n_negatives"]))
        self.n_units = int(round(counts["n_units"]))
        self.n_units_skipped = int(round(counts["n_units_skipped"]))
        self.top_k_sum = int(round(counts["top_k_sum"]))
        # m of li2014: the positives, or with weights Σ b_q·a_i over them (equal when unweighted)
        self.positive_weight = counts["positive_weight"]
        if self.scope == "global" and int(round(counts["n_blocks"])) > 1:
            raise ValueError(
                f"scope='global' ranks all rows at once, but the engine runs kernels on "
                f"{int(round(counts['n_blocks']))} separate blocks; use scope='group', a LocalEngine, "
                "or SparkEngine(placement='driver')")
        if self.n_positives == 0:
            raise DataError(
                f"TopPush has nothing to rank: none of the {self.n_units} {self._unit_name} has both a "
                f"positive (label > {self.threshold:g}) and a negative row")
        if self.n_units_skipped:
            log.info("TopPush: %d of %d %s skipped (no positive or no negative at threshold %g)",
                     self.n_units_skipped, self.n_units, self._unit_name, self.threshold)
        self.kernel = TopPushPrimalKernel(self.threshold, self.scope, self.top_fraction)
        # the primal in li2014's λ form: (λ/2)‖w‖² + (1/m) Σ_i ℓ
        weighted = self.positive_weight != self.n_positives
        self.m = self.positive_weight if weighted else self.n_positives
        self._setup(engine, count=self.m, C=C, form="lambda")
        self.lam_m = self.lam * self.m  # = 1/C

    @property
    def _unit_name(self) -> str:
        return "query groups" if self.scope == "group" else "global rankings"

    # -- primal: what `value`/`gradient` mean (RegularizedRisk in λ form; the subgradient takes
    # the first top negative of a unit when several tie) ---------------------------------------

    # -- dual: what the accelerated projected gradient solver drives ---------------------
    def dual_value_from(self, w: np.ndarray, conj_sum: float) -> float:
        """``F = (λm/2)‖w‖² + Σℓ*(α)`` from ``w`` and the summed conjugates."""
        return 0.5 * self.lam_m * float(w @ w) + conj_sum

    def primal_bound(self, dual_value: float) -> float:
        """The lower bound ``−F/m ≤ min P`` a feasible dual point certifies."""
        return -dual_value / self.m

    def initial_point(self) -> DualIterate:
        """``α = β = 0`` (feasible; ``w = 0``, ``F = 0``)."""
        z = np.zeros(self.n_features)
        return DualIterate(z, z.copy(), None, 0.0)

    def projected_step(self, current: DualIterate, eta: float, L: float) -> ProjectedStep:
        """One engine pass: ``x₊ = Π_Ω(y − ∇F(y)/L)`` with ``y = x_k + η(x_k − x_{k−1})``."""
        w_y = current.w + eta * (current.w - current.w_prev) if eta else current.w
        kernel = TopPushStepKernel(float(eta), 1.0 / float(L), self.threshold, self.scope, self.top_fraction)
        r = self.engine.run(w_y, kernel, state=current.state, keep_state=True)
        s = kernel.named(r.stats)
        w_next = r.gradient / self.lam_m  # w(x₊) = Xᵀc/(λm)
        candidate = DualIterate(w_next, current.w, r.state, self.dual_value_from(w_next, s["conj_next"]))
        primal_y = 0.5 * self.lam * float(w_y @ w_y) + s["primal_loss_y"] / self.m
        return ProjectedStep(candidate, self.dual_value_from(w_y, s["conj_y"]), float(s["linear"]),
                             float(s["dist2"]), w_y, primal_y, int(round(s["not_at_top_y"])))

    def release(self, point: DualIterate) -> None:
        """Free the engine-kept dual vectors of a point no longer needed."""
        if point.state is not None:
            self.engine.release(point.state)
            point.state = None

    def value_at_zero(self) -> float:
        """``P(0) = 1``: every active positive's hinge is ``[1 + 0 − 0]₊ = 1``."""
        return 1.0

    def zero_solution_message(self, certified: bool, bound: float) -> str:
        """Why the fit ended at ``w = 0`` and what to change (module docstring).

        ``certified``: the duality gap shows that no ``w`` beats ``P(0) = 1`` by more than the
        tolerance; otherwise the solver stopped with no iterate better than ``w = 0`` and
        ``bound``, its certified lower bound on ``min P``, is all that is known.
        """
        n_active = self.n_units - self.n_units_skipped
        unit = "their query group" if self.scope == "group" else "the global ranking"
        if self.top_k_sum == n_active:
            against = f"the top negative of {unit} (k = 1)"
        else:
            k = f", {self.top_k_sum / n_active:.3g} on average" if self.scope == "group" else f" = {self.top_k_sum}"
            against = f"the mean of the top k negatives of {unit} (k = ⌈{self.top_fraction:g}·n⁻⌉{k})"
        advice = ("the largest top fraction, 1, already compares with the mean negative: the classes' mean "
                  "features do not separate" if self.top_fraction >= 1.0 else
                  "use a larger top fraction (--top-fraction, solver option top_fraction; e.g. "
                  f"{min(1.0, max(0.05, 2 * self.top_fraction)):g}), which averages over more negatives")
        why = (f"the positives' mean margin over {against} does not improve in any direction, so no C "
               f"helps; {advice}")
        if certified:
            return f"w = 0 is optimal to the tolerance: {why}"
        return (f"no iterate improved on w = 0, whose objective is 1; the optimum is at least {bound:.3g}, so either "
                "a better w exists and the solver needs more iterations (a larger --max-iter, or a smaller C, "
                f"at which it converges faster), or w = 0 is optimal because {why}")

    def facts(self) -> dict:
        """Sizes of the bipartite problem (for models and logs)."""
        return {"n_positives": self.n_positives, "n_negatives": self.n_negatives,
                "scope": self.scope, "threshold": self.threshold, "top_fraction": self.top_fraction,
                "top_k_mean": self.top_k_sum / max(1, self.n_units - self.n_units_skipped),
                "n_units": self.n_units, "n_units_skipped": self.n_units_skipped}
