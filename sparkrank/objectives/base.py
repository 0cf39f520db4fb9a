"""What a solver sees: ``value``, ``gradient`` and (when it exists) ``hessian_vector``.

Like LIBLINEAR's ``fun/grad/Hv``, evaluating the value at ``w`` may compute per-``w`` state
(sorted scores, support-pair counts) that the gradient and the Hessian products at the
same ``w`` reuse.  That state belongs to the objective (:class:`PointCache`), never to the
solver; solvers always pass ``w`` explicitly, so a rejected trial point cannot corrupt
the state of the current iterate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..conventions import LambdaForm
from ..data.block import DataError
from ..engines.base import Engine, StateHandle
from ..kernels.pair_weights import PairWeightKernel
from ..numerics.same_bits import frozen_copy, same_bits
from ..numerics.vectors import spread_diagonal


class NonFiniteError(ValueError):
    """A value, gradient, Hessian estimate or step is NaN or infinite where a solver needs a number.

    Raised by objectives and solvers; the training driver adds which feature overflows.
    """


class Objective(ABC):
    """A differentiable (or subdifferentiable) function of the weights."""

    n_features: int
    #: Whether ``value`` is cheap enough for a gradient-only solver to log it every iteration
    #: (RankNCG's exact value costs O(pairs) with the fast gradient).
    monitor_value: bool = True

    @abstractmethod
    def value(self, w: np.ndarray) -> float:
        """Objective value at ``w``."""

    @abstractmethod
    def gradient(self, w: np.ndarray) -> np.ndarray:
        """Gradient (or a subgradient) at ``w``."""

    def hessian_vector(self, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(Generalized) Hessian at ``w`` times ``v``."""
        raise TypeError(f"{type(self).__name__} has no Hessian")

    def hessian_diagonal(self, w: np.ndarray) -> np.ndarray:
        """A positive estimate of the (generalized) Hessian's diagonal near ``w``.

        What diagonal preconditioners use (TRON's PCG, preconditioned NCG); an objective may
        return a fixed one (the same for every ``w``).  One engine pass.
        """
        raise TypeError(f"{type(self).__name__} has no Hessian diagonal estimate")

    def progress(self, w: np.ndarray) -> dict[str, Any]:
        """Extra per-iteration facts for the log line (e.g. violated pairs)."""
        return {}

    def facts(self) -> dict[str, Any]:
        """Facts about the problem for the model summary (e.g. TopPush's positives and negatives)."""
        return {}

    #: Evaluated points with engine-kept state (objectives that keep some set it).
    _cache: "PointCache | None" = None

    def close(self) -> None:
        """Release the engine-kept state of every cached point (the objective stays usable)."""
        if self._cache is not None:
            self._cache.clear()


class RegularizedRisk(Objective):
    """``J(w) = q‖w‖² + R(w)`` over an engine, with ``R(w) = (f·L(Xw))/n`` for a score-space loss ``L``.

    The one regularised objective (LIBLINEAR's ``l2r_erm_fun``): it owns the engine pass and
    the point cache, the quadratic regulariser, the λ↔C conversion (through the loss's
    :class:`~sparkrank.conventions.LambdaForm`) and the checks on the data; a loss supplies
    only its score-space kernels (value and coefficients ``c`` of ``Xᵀc``; Hessian
    coefficients where twice differentiable) and its normaliser count ``n``.  Two forms of the
    same minimiser:

    * ``"C"`` — LIBLINEAR's ``½‖w‖² + C·L`` (``q = ½``, ``f = C``, ``n = 1``; TRON, NCG);
    * ``"lambda"`` — the paper's ``q·λ‖w‖² + L/n`` (e.g. airola2011's ``λ‖w‖² + (1/N)Σ``, what
      BMRM's cutting planes need, and li2014's primal).

    ``value = q‖w‖² + R``, ``gradient = 2q·w + ∇R`` and ``hessian_vector = 2q·v + (f·Xᵀ(A·Xv))/n``.

    Attributes
    ----------
    lam : float
        λ of the loss's λ form; ``C`` : LIBLINEAR's C (the same model).
    quadratic : float
        ``q`` of ``q‖w‖²`` in this form (BMRM's λ when the form is ``"lambda"``).
    """

    #: The paper's λ form of this loss (how λ and C convert).
    lambda_form: LambdaForm
    #: The kernel statistic reported each iteration, e.g. ``"support_pairs"``.
    progress_stat: str | None = None
    #: Score-space kernel of the value (its statistic ``loss``) and ``Xᵀc``; of the Hessian product, if any.
    kernel: Any
    hessian_kernel: Any = None

    @classmethod
    def convert(cls, count: int, *, C: float | None = None, lam: float | None = None) -> tuple[float, float]:
        """``(C, λ)`` from either (exactly one): the one place a λ and a C are converted, by the
        loss's :class:`~sparkrank.conventions.LambdaForm` (``count``: its normaliser's count, the
        pairs for RankSVM; 1 when the loss sum is not normalised)."""
        if lam is None:
            C = float(C)
            return C, cls.lambda_form.lambda_from_c(C, count)
        lam = float(lam)
        return cls.lambda_form.c_from_lambda(lam, count), lam

    def _setup(self, engine: Engine, *, count: int, C: float | None = None, lam: float | None = None,
               form: str = "C") -> None:
        """Set the engine, the cache and the scaling from ``C`` or ``lam`` (exactly one)."""
        self.engine = engine
        self.n_features = engine.summary.n_features
        self.count = count
        self.C, self.lam = self.convert(count, C=C, lam=lam)
        if form == "C":
            self.quadratic, self._factor, self._divisor = 0.5, self.C, 1.0
        elif form == "lambda":
            self.quadratic, self._factor, self._divisor = self.lambda_form.quadratic * self.lam, 1.0, count
        else:
            raise ValueError(f"unknown objective form {form!r}; use 'C' or 'lambda'")
        self._cache = PointCache(engine)

    def _point(self, w: np.ndarray) -> EvaluatedPoint:
        """The engine pass at ``w`` (cached): summed kernel statistics, ``Xᵀc``, kept state."""
        return self._cache.get(w, self._evaluate)

    def _evaluate(self, w: np.ndarray) -> EvaluatedPoint:
        keep = self.hessian_kernel is not None  # the Hessian products reuse the sorted order
        kernel = self._value_kernel()
        r = self.engine.run(w, kernel, keep_state=keep)
        return EvaluatedPoint(w, r.stats, r.gradient, r.state, moments=r.moments, kernel=kernel)

    def _value_kernel(self):
        """The kernel of a value pass (:attr:`kernel`; a loss may add what a later call at the
        same point needs, e.g. the preconditioner's diagonal)."""
        return self.kernel

    def _scaled(self, loss, fresh: bool = False):
        """``(loss·f)/n``; ``fresh``: ``loss`` is an array no one else holds, scaled in place (the
        same bits, one vector of the full width fewer a pass)."""
        if not fresh or not isinstance(loss, np.ndarray):
            return (loss * self._factor) / self._divisor
        if self._factor != 1.0:  # x·1 and x/1 are x, bit for bit: no pass over the width for them
            loss *= self._factor
        if self._divisor != 1.0:
            loss /= self._divisor
        return loss

    def _add_regularizer_gradient(self, out: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``out + 2q·v`` into ``out`` (``2q = 1``, LIBLINEAR's ½‖w‖²: ``out + v``, the same bits)."""
        coef = 2.0 * self.quadratic
        out += v if coef == 1.0 else coef * v
        return out

    def loss_sum(self, w: np.ndarray) -> float:
        """``L(Xw)``, the unscaled loss sum (a loss whose value needs its own pass overrides it)."""
        return self._point(w).named(self.kernel)["loss"]

    def risk(self, w: np.ndarray) -> float:
        """``R(w) = f·L/n``."""
        return self._scaled(self.loss_sum(w))

    def risk_subgradient(self, w: np.ndarray) -> np.ndarray:
        """A (sub)gradient of ``R`` at ``w``."""
        return self._scaled(self._point(w).xt_coef)

    def value(self, w: np.ndarray) -> float:
        return self.quadratic * float(np.dot(w, w)) + self.risk(w)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        # 2q·w + ∇R, into ∇R's new array (a + b = b + a, bit for bit)
        return self._add_regularizer_gradient(self.risk_subgradient(w), w)

    def hessian_vector(self, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        if self.hessian_kernel is None:
            return super().hessian_vector(w, v)
        r = self.engine.run(v, self.hessian_kernel, state=self._point(w).state)
        # 2q·v + (f·Xᵀc)/n, into the pass's own Xᵀc (a + b = b + a, bit for bit)
        return self._add_regularizer_gradient(self._scaled(r.gradient, fresh=True), v)

    def progress(self, w: np.ndarray) -> dict[str, Any]:
        if self.progress_stat is None:
            return {}
        return {self.progress_stat: int(round(self._point(w).named(self.kernel)[self.progress_stat]))}


def require_pairs(engine: Engine, data_name: str | None = None) -> int | float:
    """The number of preference pairs (with weights: their weight ``Σ b_q a_u a_l``,
    :func:`pair_weight`), or a :class:`DataError` when there are none (naming the input,
    ``data_name``, when the caller knows it)."""
    s = engine.summary
    named = f"{data_name}: " if data_name else ""
    if s.n_rows == 0:
        raise DataError(f"{named}no preference pairs: the input has no data rows")
    if s.n_pairs == 0:
        raise DataError(
            f"{named}no preference pairs: all {s.n_groups} query group(s) have a single label level, "
            "so there is nothing to rank"
        )
    if not s.weighted:
        return s.n_pairs
    total = pair_weight(engine)
    if not total > 0:
        raise DataError(f"{named}no preference pairs of positive weight: every one of the {s.n_pairs} pairs "
                        "has a row or group of weight 0")
    return total


def pair_weight(engine: Engine) -> float:
    """``Σ b_q a_u a_l`` over the preference pairs (:mod:`sparkrank.data.weights`), one engine pass
    (the pair count itself when the data is unweighted: no pass)."""
    if not engine.summary.weighted:
        return float(engine.summary.n_pairs)
    kernel = PairWeightKernel()
    return kernel.named(engine.run(np.zeros(engine.summary.n_features), kernel).stats)["pair_weight"]


def hessian_diagonal_estimate(engine: Engine, w: np.ndarray, kernel, weight: float) -> np.ndarray:
    """``1 + weight·diag(Xᵀ A X)`` estimated in one pass, for ``½‖w‖² + (pairwise loss)``.

    ``kernel`` gives the score-space Hessian's diagonal ``a`` (a row's support-pair count,
    :class:`~sparkrank.kernels.losses.SupportPairDiagonalKernel`).  The score-space Hessian
    ``A`` of a pairwise loss is a weighted graph Laplacian, so ``A·1 = 0`` and
    ``Xᵀ A X = (X − 1μᵀ)ᵀ A (X − 1μᵀ)`` for any shift ``μ``; keeping only ``A``'s diagonal
    after centring on the ``a``-weighted mean ``μ_k = Σ a_i x_ik / Σ a_i`` gives

        diag_k ≈ Σ_i a_i (x_ik − μ_k)² = Σ_i a_i x_ik² − (Σ_i a_i x_ik)² / Σ_i a_i,

    which costs ``(X∘X)ᵀa`` and ``Xᵀa`` (:meth:`Engine.column_moments`) instead of the exact
    ``Σ_pairs (x_uk − x_lk)²``, does not depend on a feature's offset (the pairwise loss does
    not either), and scales as the exact diagonal does under ``x_k ↦ s·x_k``.  It is an
    estimate (off-diagonal terms of ``A`` dropped), always ``≥ 1`` thanks to the regulariser;
    a difference lost to rounding (a feature constant up to ulps) counts as 0.
    """
    moments = engine.column_moments(np.asarray(w, dtype=np.float64), kernel)
    return diagonal_from_moments(moments.first, moments.second, kernel.named(moments.stats)["weight"], weight)


def diagonal_from_moments(first: np.ndarray, second: np.ndarray, total: float, weight: float) -> np.ndarray:
    """:func:`hessian_diagonal_estimate` from the moments ``Σ_i a_i x_i``, ``Σ_i a_i x_i²`` and
    ``Σ_i a_i`` of the diagonal's weights (however the pass that summed them was run)."""
    if not total > 0:
        bad = np.flatnonzero(~(np.isfinite(second) & np.isfinite(first)))
        if bad.size:
            _overflow(int(bad[0]), second)
        return np.ones(first.shape[0])
    diagonal, bad = spread_diagonal(first, second, total, weight)
    if bad >= 0:
        _overflow(bad, second)
    return diagonal


def _overflow(column: int, second: np.ndarray):
    raise NonFiniteError(f"the Hessian diagonal overflows: Σ a·x² of feature {column + 1} is "
                         f"{float(second[column]):.3g}")


@dataclass
class EvaluatedPoint:
    """One engine pass at ``w``: summed kernel statistics, ``Xᵀc`` and kept state."""

    w: np.ndarray
    stats: np.ndarray
    xt_coef: np.ndarray | None
    state: StateHandle | None = None
    extras: dict = field(default_factory=dict)
    #: ``[Xᵀa, (X∘X)ᵀa]`` of the value kernel's ``moment_coef``, when it gave one
    moments: list[np.ndarray] | None = None
    #: The kernel whose statistics ``stats`` are (``None``: the objective's :attr:`~RegularizedRisk.kernel`)
    kernel: Any = None

    def named(self, default_kernel) -> Any:
        """``stats`` by name (:meth:`ScoreKernel.named` of the kernel that computed them)."""
        return (default_kernel if self.kernel is None else self.kernel).named(self.stats)


class PointCache:
    """The last few evaluated points of an objective (2: the iterate and a trial point).

    A point is found by its ``w``'s bits (:func:`~sparkrank.numerics.same_bits.same_bits`), the
    key being the frozen copy of ``w`` the point was computed at: no bytes of the full width
    per lookup or per point (128 MB each at 2²⁴ hashed feature ids)."""

    def __init__(self, engine: Engine, size: int = 2):
        self.engine = engine
        self.size = size
        self._points: list[tuple[np.ndarray, EvaluatedPoint]] = []  # oldest first

    def _find(self, w: np.ndarray) -> int | None:
        for k in range(len(self._points) - 1, -1, -1):  # the newest first: most lookups are for it
            if same_bits(self._points[k][0], w):
                return k
        return None

    def peek(self, w: np.ndarray) -> EvaluatedPoint | None:
        """The evaluated point at ``w`` if it is cached (nothing is computed)."""
        k = self._find(w)
        return None if k is None else self._points[k][1]

    def get(self, w: np.ndarray, compute) -> EvaluatedPoint:
        k = self._find(w)
        if k is None:
            key = frozen_copy(w)
            point = compute(key)
            self._points.append((key, point))
            while len(self._points) > self.size:
                _, old = self._points.pop(0)
                if old.state is not None:
                    self.engine.release(old.state)
        else:
            self._points.append(self._points.pop(k))
            point = self._points[-1][1]
        return point

    def clear(self) -> None:
        for _, point in self._points:
            if point.state is not None:
                self.engine.release(point.state)
        self._points.clear()
