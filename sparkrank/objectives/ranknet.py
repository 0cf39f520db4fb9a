"""Log-sigmoid pairwise likelihood (raykar2007, "RankNCG") over an engine.

Minimisation form with LIBLINEAR's C (raykar2007 §3 MAP estimator, negated and divided by λ;
``C = 1/λ``, see :func:`sparkrank.conventions.raykar_lambda_from_c`):

    f(w) = ½‖w‖² + C Σ_P -log σ(w·(x_u - x_l)),
    ∇f(w) = w + C Xᵀc,    c from :class:`sparkrank.kernels.ranknet.RankNetKernel`.

The solver (:mod:`sparkrank.solvers.ncg`) needs only gradients: its line search works on the
directional derivative ``∇f(w + αd)·d``.  The exact value costs O(pairs) per group (no
sub-quadratic exact method is known, see :mod:`sparkrank.kernels.ranknet`): with the
``direct`` gradient it comes free in the same pass, with the ``fast`` one it needs its own
O(pairs) pass, which the solver skips unless ``monitor`` is true.
"""

from __future__ import annotations

import numpy as np

from ..conventions import RAYKAR_LAMBDA
from ..engines.base import Engine
from ..kernels.losses import SupportPairDiagonalKernel
from ..kernels.ranknet import DEFAULT_EPSILON, RankNetKernel, check_gradient_mode
from .base import EvaluatedPoint, PointCache, RegularizedRisk, hessian_diagonal_estimate, require_pairs


class RankNetObjective(RegularizedRisk):
    """``½‖w‖² + C Σ_P -log σ(w·(x_u - x_l))`` (raykar2007 §3-§4).

    Parameters
    ----------
    engine : Engine
    C : float
        Weight of the summed pairwise loss (LIBLINEAR convention, ``C = 1/λ``).
    gradient : {"fast", "direct"}
        ``fast``: ε-exact erfc sums of raykar2007 §5, O(p·m) per group (default);
        ``direct``: exact σ over all pairs, O(m²) per group.
    epsilon : float
        Accuracy of the fast erfc sums (default 1e-6, raykar2007 §6).
    monitor : bool, optional
        Whether solvers should evaluate the exact value every iteration (default: only
        when it is free, i.e. with ``gradient="direct"``).
    """

    lambda_form = RAYKAR_LAMBDA

    def __init__(
        self,
        engine: Engine,
        C: float,
        *,
        gradient: str = "fast",
        epsilon: float = DEFAULT_EPSILON,
        monitor: bool | None = None,
    ):
        count = require_pairs(engine)
        self.gradient_mode = check_gradient_mode(gradient)
        self.epsilon = float(epsilon)
        self.kernel = RankNetKernel(gradient, self.epsilon, value=gradient == "direct")
        self.value_kernel = RankNetKernel(None, self.epsilon, value=True)
        self.monitor_value = (gradient == "direct") if monitor is None else bool(monitor)
        self._setup(engine, count=1, C=C, form="C")
        self.n_pairs = count
        self._values = PointCache(engine)
        self._diagonal: np.ndarray | None = None

    @classmethod
    def from_lambda(cls, engine: Engine, lam: float, **options) -> "RankNetObjective":
        """From raykar2007's λ of ``-(λ/2)‖w‖² + Σ_P log σ``."""
        return cls(engine, cls.convert(1, lam=lam)[0], **options)

    def loss_sum(self, w: np.ndarray) -> float:
        """Exact ``Σ_P -log σ(w·(x_u - x_l))`` (O(pairs) per group; free with the direct gradient)."""
        if self.gradient_mode == "direct":
            return self.kernel.named(self._point(w).stats)["loss"]

        def compute(w):
            return EvaluatedPoint(w, self.engine.run(w, self.value_kernel).stats, None)

        return self.value_kernel.named(self._values.get(w, compute).stats)["loss"]

    def close(self) -> None:
        super().close()
        self._values.clear()

    def hessian_diagonal(self, w: np.ndarray) -> np.ndarray:
        """The Hessian's diagonal at ``w = 0``, estimated; the same for every ``w``.

        ``∇²f = I + C Σ_P σ'(z)(x_u − x_l)(x_u − x_l)ᵀ`` with ``σ' ≤ σ'(0) = 1/4``: at ``w = 0``
        every pair weighs 1/4, i.e. half the squared hinge's 2 per support pair (all pairs are
        support pairs at 0), hence ``C/8`` times :class:`SupportPairDiagonalKernel`'s weights.
        The exact diagonal at other ``w`` costs O(pairs), and a fixed preconditioner keeps
        nonlinear CG's conjugacy (Nocedal & Wright 2006 §5.2), so it is computed once.
        """
        if self._diagonal is None:
            self._diagonal = hessian_diagonal_estimate(self.engine, np.zeros(self.n_features),
                                                       SupportPairDiagonalKernel(), self.C / 8.0)
        return self._diagonal
