"""Pairwise RankSVM objectives over an engine: the hinge losses of :class:`RegularizedRisk`.

* :class:`HingeRisk` — L1 loss, airola2011, in BMRM's λ form:
  ``J(w) = λ‖w‖² + (1/N) Σ_P max(0, 1 - w·(x_u - x_l))``.
* :class:`SquaredHingeObjective` — L2 loss, lee-lin2014 eq. (3), LIBLINEAR's form:
  ``f(w) = ½‖w‖² + C Σ_P max(0, 1 - w·(x_u - x_l))²``.

λ and C convert through :data:`sparkrank.conventions.RANKSVM_LAMBDA` only.
"""

from __future__ import annotations

import numpy as np

from ..choices import DEFAULT_COUNTING, DEFAULT_PAIR_RULE
from ..conventions import RANKSVM_LAMBDA
from ..engines.base import Engine
from ..kernels.counting import check_counting_method, check_pair_rule
from ..kernels.losses import (HingeKernel, SquaredHingeDiagonalKernel, SquaredHingeHessianKernel, SquaredHingeKernel,
                              SupportPairDiagonalKernel)
from .base import RegularizedRisk, diagonal_from_moments, hessian_diagonal_estimate
from .pair_rules import pair_facts, training_pairs


class HingeRisk(RegularizedRisk):
    """L1-loss RankSVM in BMRM form (airola2011 eqs. (2), (4), (7), (8)).

    Parameters
    ----------
    engine : Engine
    lam : float
        λ of ``λ‖w‖²``; see :meth:`from_c` for LIBLINEAR's C.
    counting : str
        Counting method (``selection``, ``rbtree``, ``direct``, ``pairs``, ``prsvm+``).
    pairs : {"all", "adjacent"}
        The pairs ``P`` of the loss (and ``N = |P|``): all pairs, or adjacent levels only
        (lee-lin2014 §5).
    n_pairs : int, optional
        ``N`` when the caller has counted it (:func:`~.pair_rules.training_pairs`).
    """

    lambda_form = RANKSVM_LAMBDA
    progress_stat = "support_pairs"

    def __init__(self, engine: Engine, lam: float, counting: str = DEFAULT_COUNTING, pairs: str = DEFAULT_PAIR_RULE,
                 *, n_pairs: int | None = None):
        self.kernel = HingeKernel(check_counting_method(counting), check_pair_rule(pairs))
        count = training_pairs(engine, pairs) if n_pairs is None else n_pairs  # n_pairs: counted by the caller
        self._setup(engine, count=count, lam=lam, form="lambda")
        self.n_pairs = self.count

    @classmethod
    def from_c(cls, engine: Engine, C: float, counting: str = DEFAULT_COUNTING,
               pairs: str = DEFAULT_PAIR_RULE) -> "HingeRisk":
        """The λ-form of LIBLINEAR's ``½‖w‖² + C Σ loss`` (same minimiser)."""
        count = training_pairs(engine, check_pair_rule(pairs))
        return cls(engine, cls.convert(count, C=C)[1], counting, pairs, n_pairs=count)

    def facts(self) -> dict:
        return pair_facts(self.kernel.pair_rule, self.n_pairs)


class SquaredHingeObjective(RegularizedRisk):
    """L2-loss RankSVM, lee-lin2014 eqs. (3), (15)-(19).

    Parameters
    ----------
    engine : Engine
    C : float
        Weight of the summed squared hinge (LIBLINEAR convention).
    counting : str
        Counting method.
    precondition : bool
        Whether a solver will ask for :meth:`hessian_diagonal` (TRON's default): value passes
        then bring the diagonal's column moments along, so asking costs no pass of its own.
    pairs : {"all", "adjacent"}
        The pairs of the loss: all pairs, or adjacent levels only (lee-lin2014 §5).
    n_pairs : int, optional
        Their number when the caller has counted it (:func:`~.pair_rules.training_pairs`).
    """

    lambda_form = RANKSVM_LAMBDA
    progress_stat = "support_pairs"

    def __init__(self, engine: Engine, C: float, counting: str = DEFAULT_COUNTING, precondition: bool = True,
                 pairs: str = DEFAULT_PAIR_RULE, *, n_pairs: int | None = None):
        counting, rule = check_counting_method(counting), check_pair_rule(pairs)
        self.kernel = SquaredHingeKernel(counting, rule)  # value (18) and gradient (19)
        self.hessian_kernel = SquaredHingeHessianKernel(counting, rule)  # generalized Hessian product (17)
        self.diagonal_kernel = SupportPairDiagonalKernel(counting, rule)
        # the value kernel that also gives the diagonal's weights, when a solver will ask for them
        self._value_and_diagonal_kernel = SquaredHingeDiagonalKernel(counting, rule) if precondition else None
        count = training_pairs(engine, rule) if n_pairs is None else n_pairs  # n_pairs: counted by the caller
        self._setup(engine, count=count, C=C, form="C")
        self.n_pairs = self.count

    @classmethod
    def from_lambda(cls, engine: Engine, lam: float, counting: str = DEFAULT_COUNTING,
                    precondition: bool = True, pairs: str = DEFAULT_PAIR_RULE) -> "SquaredHingeObjective":
        count = training_pairs(engine, check_pair_rule(pairs))
        return cls(engine, cls.convert(count, lam=lam)[0], counting, precondition, pairs, n_pairs=count)

    def facts(self) -> dict:
        return pair_facts(self.kernel.pair_rule, self.n_pairs)

    def hessian_diagonal(self, w: np.ndarray) -> np.ndarray:
        """``diag(I + C·Xᵀ(2L)X)`` estimated at ``w``'s support pairs (:func:`hessian_diagonal_estimate`).

        TRON asks for it at every accepted iterate, right after the value there.  With
        ``precondition`` the value passes use :class:`SquaredHingeDiagonalKernel`, which brings
        the diagonal's column moments along from the same counts, so a call at an evaluated point
        costs no pass (the same numbers as a pass of its own, bit for bit); elsewhere (``w = 0``
        after a warm start, say, or a second call at one point: the moments, two vectors of the
        full width, are let go once used) it takes one pass.
        """
        point = self._cache.peek(w)
        if point is not None and point.moments is not None:
            total = point.named(self.kernel)["weight"]
            (first, second), point.moments = point.moments, None  # asked once a point: let them go
            return diagonal_from_moments(first, second, total, self.C)
        return hessian_diagonal_estimate(self.engine, w, self.diagonal_kernel, self.C)

    def _value_kernel(self):
        return self.kernel if self._value_and_diagonal_kernel is None else self._value_and_diagonal_kernel
