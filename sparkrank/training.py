"""Train a linear ranker: pick the objective for a solver, run it, wrap a model."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .conventions import c_from_lambda, lambda_from_c
from .data.block import DataError, RankingData
from .engines.base import Engine
from .engines.local import LocalEngine
from .kernels.counting import DEFAULT_COUNTING, check_counting_method
from .model import RankingModel
from .objectives.base import Objective
from .objectives.ranknet import RankNetObjective
from .objectives.ranksvm import HingeRisk, SquaredHingeObjective
from .objectives.toppush import TopPushObjective
from .solvers.apg import apg
from .solvers.bmrm import bmrm
from .solvers.ncg import ncg
from .solvers.result import IterationCallback, SolverResult
from .solvers.safeguards import NonFiniteError, start_point
from .solvers.tron import tron
from .standardization import standardized_engine

log = logging.getLogger("sparkrank")

DEFAULT_C = 1.0


@dataclass(frozen=True)
class SolverSpec:
    """How a solver name maps to an objective and an optimiser."""

    name: str
    loss: str
    make_objective: Callable[..., Objective]
    """``(engine, C, counting, **options) -> Objective``."""
    run: Callable[..., SolverResult]
    """``(objective, w0, *, tol, max_iter, callback=None) -> SolverResult``."""
    default_max_iter: int
    default_tol: float = 1e-3
    warm_start: bool = True
    """Whether ``run`` accepts a starting ``w0`` (a dual method such as TopPush does not)."""
    run_options: tuple[str, ...] = ()
    """Keys of ``solver_options`` that go to ``run`` (the optimiser) instead of the objective."""


SOLVERS: dict[str, SolverSpec] = {
    # run option: precondition=True|False (diagonal PCG, see sparkrank.solvers.tron)
    # default tol 1e-4 (LIBLINEAR: 1e-3): in the preconditioned, units-free norm 1e-3 left MQ2008's
    # objective 1.5e-4 above the optimum, 1e-4 left 6e-6 for 3-4 more Newton steps (README, Conditioning)
    "tron": SolverSpec("tron", "L2 squared hinge (lee-lin2014)", SquaredHingeObjective, tron, 1000, 1e-4,
                       run_options=("precondition",)),
    "bmrm": SolverSpec("bmrm", "L1 hinge (airola2011)", HingeRisk.from_c, bmrm, 5000),
    # options: threshold=0.0 (label > threshold is positive), scope="group"|"global" (see TopPushObjective)
    # tol: certified relative duality gap (see sparkrank.solvers.apg)
    "toppush": SolverSpec("toppush", "TopPush: positives above the top negative (li2014)", TopPushObjective, apg,
                          5000, 1e-3, warm_start=False),
    # options: gradient="fast"|"direct", epsilon=1e-6, monitor=bool (see RankNetObjective);
    # run option: precondition=True|False (see sparkrank.solvers.ncg)
    "ncg": SolverSpec("ncg", "log-sigmoid pairwise likelihood (raykar2007)", RankNetObjective, ncg, 1000, 1e-4,
                      run_options=("precondition",)),
}


def solver_spec(name: str) -> SolverSpec:
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
    return SOLVERS[name]


def resolve_c(engine: Engine, C: float | None, lam: float | None) -> float:
    """The LIBLINEAR ``C`` from either ``C`` or ``λ`` (exactly one, or neither for the default)."""
    if C is not None and lam is not None:
        raise ValueError("give either C or lambda, not both")
    if lam is not None:
        return c_from_lambda(lam, engine.summary.n_pairs)
    return DEFAULT_C if C is None else float(C)


def make_objective(
    engine: Engine, solver: str, C: float, counting: str = DEFAULT_COUNTING, **options
) -> Objective:
    """The training objective of ``solver`` with LIBLINEAR-convention ``C`` on ``engine``'s data.

    ``options`` are solver-specific keyword options (see each solver's objective); the
    optimiser's own (:attr:`SolverSpec.run_options`, e.g. ``precondition``) are ignored here.
    """
    spec = solver_spec(solver)
    options = {k: v for k, v in options.items() if k not in spec.run_options}
    return spec.make_objective(engine, C, check_counting_method(counting), **options)


def train(
    data: RankingData | Engine,
    *,
    solver: str = "tron",
    C: float | None = None,
    lam: float | None = None,
    tol: float | None = None,
    counting: str = DEFAULT_COUNTING,
    max_iter: int | None = None,
    w0: np.ndarray | None = None,
    solver_options: dict | None = None,
    callback: IterationCallback | None = None,
    standardization: str = "none",
    resume: dict | None = None,
) -> RankingModel:
    """Train a linear ranker.

    Parameters
    ----------
    data : RankingData or Engine
        Training rows (wrapped in a :class:`LocalEngine`) or an engine.
    solver : {"tron", "bmrm", "ncg", "toppush"}
        ``tron``: L2-loss RankSVM by trust-region Newton; ``bmrm``: L1-loss RankSVM by
        cutting planes; ``ncg``: log-sigmoid pairwise likelihood (RankNCG) by nonlinear CG;
        ``toppush``: accuracy at the top (TopPush) by accelerated projected gradient.
    C, lam : float, optional
        Regularisation, LIBLINEAR ``C`` (default 1) for every solver, or BMRM ``λ`` (RankSVM
        solvers only); converted with :mod:`sparkrank.conventions`.
    tol : float, optional
        Stopping tolerance (default: the solver's). TRON, NCG: relative gradient norm (1e-4;
        in the units-free preconditioned norm unless ``precondition=False``); BMRM: absolute
        gap (1e-3); TopPush: certified relative duality gap (1e-3).
    counting : {"selection", "rbtree", "direct", "pairs"}
    max_iter : int, optional
    w0 : ndarray, optional
        Warm start.
    solver_options : dict, optional
        Solver-specific keyword options handed to the solver's objective, except the
        optimiser's own (``precondition=False`` for plain TRON/NCG), handed to the solver.
    callback : callable, optional
        ``callback(iteration, w, record)`` after every solver iteration.
    standardization : {"none", "minmax", "standard"}
        Train on per-feature standardized features (one statistics pass, then the exact
        reparametrisation of :mod:`sparkrank.standardization`); the model stores it and
        applies it at predict time.  ``w0``, the callback's ``w`` and the model's
        ``weights`` are then on the standardized features.
    resume : dict, optional
        The solver's own state from a checkpoint (:mod:`sparkrank.checkpoints`), with ``w0``
        the checkpoint's weights: the fit continues exactly where that run was.

    Returns
    -------
    RankingModel
    """
    spec = solver_spec(solver)
    if lam is not None and solver not in ("tron", "bmrm"):
        raise ValueError(f"lambda is the RankSVM (BMRM) λ; give C for solver {solver!r} "
                         "(see sparkrank.conventions for its own λ)")
    engine = LocalEngine(data) if isinstance(data, RankingData) else data
    C = resolve_c(engine, C, lam)
    summary = engine.summary
    log.info(
        "training %s (%s): %d rows, %d features, %d groups (%d without pairs), %d pairs, C=%g",
        solver, spec.loss, summary.n_rows, summary.n_features, summary.n_groups,
        summary.n_groups_without_pairs, summary.n_pairs, C,
    )
    options = dict(solver_options or {})
    run_options = {k: options.pop(k) for k in spec.run_options if k in options}
    tol = spec.default_tol if tol is None else float(tol)
    if w0 is not None:
        if np.shape(w0) != (summary.n_features,):
            raise ValueError(f"initial weights have shape {np.shape(w0)}, expected ({summary.n_features},)")
        w0 = start_point(w0, summary.n_features)  # non-finite initial weights are an error
    engine, standardizer = standardized_engine(engine, standardization)
    objective = _WithEngineProgress(make_objective(engine, solver, C, counting, **options), engine)
    try:
        # overflow is detected and reported (NonFiniteError), not warned about on the way
        with np.errstate(over="ignore", invalid="ignore"):
            result = spec.run(objective, w0, tol=tol, max_iter=max_iter or spec.default_max_iter,
                              callback=callback, **run_options, **({"resume": resume} if resume else {}))
    except (ValueError, ArithmeticError) as exc:  # NonFiniteError, or a kernel's error on absurd scores
        diagnosis = feature_magnitude_diagnosis(engine, only_extreme=not isinstance(exc, NonFiniteError))
        if not diagnosis:
            raise
        raise DataError(f"{solver} failed: {exc}; {diagnosis}") from exc
    finally:
        objective.close()  # engines shared by several fits (tune, fitMultiple) keep no state
    if result.iterations == 0 and not result.converged:
        diagnosis = feature_magnitude_diagnosis(engine, only_extreme=True)
        if diagnosis:
            raise DataError(f"{solver} made no step from its start ({result.message}); {diagnosis}")
    log.info("%s stopped after %d iterations (%s): objective %.6e, %.2fs",
             solver, result.iterations, result.message, result.objective, result.seconds)
    return RankingModel(
        standardization=standardizer,
        weights=result.w,
        solver=solver,
        C=C,
        lam=float(objective.lam if hasattr(objective, "lam") else lambda_from_c(C, summary.n_pairs)),
        tol=tol,
        counting=counting,
        options={**options, **run_options},
        summary={
            "iterations": result.iterations,
            "objective": result.objective,
            "converged": result.converged,
            "message": result.message,
            "stopping_measure": result.measure,
            "stopping_value": result.measure_value,
            "max_iter": max_iter or spec.default_max_iter,
            "seconds": result.seconds,
            "history": result.history,
            "n_rows": summary.n_rows,
            "n_groups": summary.n_groups,
            "n_groups_without_pairs": summary.n_groups_without_pairs,
            "n_pairs": summary.n_pairs,
            **(objective.facts() if hasattr(objective, "facts") else {}),
        },
    )


#: Feature magnitudes beyond which products of features and weights leave float64's range.
OVERFLOW_MAGNITUDE = 1e100
UNDERFLOW_MAGNITUDE = 1e-100


def feature_magnitude_diagnosis(engine: Engine, only_extreme: bool = False) -> str:
    """Which feature's magnitude explains a non-finite or vanishing objective (one statistics pass).

    E.g. ``"features overflow: feature 4 (weight index 3) has |x| up to 1.2e+150; use
    --standardization or rescale"``.  Features are numbered from 1 as in SVMlight files.
    With ``only_extreme``, ``""`` when every magnitude is unremarkable.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        stats = engine.feature_statistics()
    magnitude = np.maximum(np.abs(stats.min), np.abs(stats.max))
    magnitude[np.isnan(magnitude)] = 0.0
    if magnitude.size == 0:
        return "" if only_extreme else "the data has no features"
    k = int(np.argmax(magnitude))
    top = float(magnitude[k])
    advice = "use --standardization (standardization='standard' or 'minmax') or rescale the features"
    if top >= OVERFLOW_MAGNITUDE:
        return f"features overflow: feature {k + 1} (weight index {k}) has |x| up to {top:.3g}; {advice}"
    if 0 < top <= UNDERFLOW_MAGNITUDE:
        return f"features underflow: the largest |x| of any feature is {top:.3g} (feature {k + 1}); {advice}"
    if top == 0:
        return "every feature is zero on every row: there is nothing to learn"
    return "" if only_extreme else f"feature magnitudes look ordinary (largest |x| {top:.3g}, feature {k + 1})"


class _WithEngineProgress:
    """The objective, with the engine's work since the last iteration added to its progress facts.

    Solvers put ``progress(w)`` into each iteration's record and log line, so on Spark every
    line also says how many rows and groups the executors processed in how many passes.
    """

    def __init__(self, objective: Objective, engine: Engine):
        self._objective, self._engine = objective, engine

    def __getattr__(self, name):
        return getattr(self._objective, name)

    def progress(self, w: np.ndarray) -> dict:
        return {**self._objective.progress(w), **self._engine.progress()}

    def close(self) -> None:
        self._objective.close()

    def engine_progress(self) -> dict:
        """Only the engine's work (for solvers whose objective progress would cost a pass)."""
        return self._engine.progress()


def training_objective_value(model: RankingModel, engine: Engine) -> float:
    """The model's own training objective (same loss, C and standardization) at its weights on ``engine``'s data."""
    from .engines.scaled import ScaledEngine
    from .numerics.vectors import fit_length

    n = engine.summary.n_features
    if model.standardization is not None:  # the weights act on scaled columns
        engine = ScaledEngine(engine, fit_length(model.standardization.scale, n, fill=1.0))
    w = fit_length(model.weights, n)
    objective = make_objective(engine, model.solver, model.C, model.counting, **model.options)
    try:
        return objective.value(w)
    finally:
        objective.close()
