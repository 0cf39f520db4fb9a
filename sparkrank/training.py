"""Train a linear ranker: pick the objective for a solver, run it, wrap a model."""

from __future__ import annotations

import logging

import numpy as np

from .choices import DEFAULT_COUNTING, DEFAULT_PAIR_RULE, check_positive_float, check_positive_int
from .data.block import DataError, RankingData
from .engines.base import Engine
from .engines.registry import engine_for
from .kernels.counting import check_counting_method
from .model import RankingModel
from .objectives.base import Objective
from .objectives.pair_rules import training_pairs
from .objectives.ranksvm import HingeRisk
from .solvers.registry import solver_spec
from .solvers.callbacks import EngineProgress, compose
from .solvers.result import IterationCallback
from .solvers.safeguards import NonFiniteError, start_point
from .standardization import RESCALE_ADVICE, standardized_engine

log = logging.getLogger("sparkrank")


def resolve_c(engine: Engine, C: float | None, lam: float | None, solver: str = "tron",
              solver_options: dict | None = None) -> float:
    """The LIBLINEAR ``C`` from either ``C`` or BMRM's ``λ`` (exactly one, or neither for the solver's
    default: :attr:`~sparkrank.solvers.registry.SolverSpec.default_C`, 1 but for TopPush).  BMRM's
    ``λ`` divides the loss by the number of pairs trained on (``solver_options`` ``pairs``)."""
    if C is not None and lam is not None:
        raise ValueError("give either C or lambda, not both")
    if lam is not None:
        if not solver_spec(solver).takes_lambda:
            raise ValueError(f"lambda is the RankSVM (BMRM) λ; give C for solver {solver!r} "
                             "(see sparkrank.conventions for its own λ)")
        pairs = (solver_options or {}).get("pairs", DEFAULT_PAIR_RULE)
        # BMRM's λ (conventions.RANKSVM_LAMBDA) over the pairs trained on, or their weight (data/weights.py)
        n_pairs = training_pairs(engine, pairs)
        return HingeRisk.convert(n_pairs, lam=lam)[0]
    return solver_spec(solver).default_C if C is None else float(C)


def make_objective(
    engine: Engine, solver: str, C: float, counting: str = DEFAULT_COUNTING, **options
) -> Objective:
    """The training objective of ``solver`` with LIBLINEAR-convention ``C`` on ``engine``'s data.

    ``options`` are ``solver``'s options (:class:`~sparkrank.solvers.registry.SolverSpec`,
    checked); the optimiser's own (e.g. ``precondition``) are not the objective's and are left out.
    """
    spec = solver_spec(solver)
    objective_options, _ = spec.split_options(options)
    if spec.counts_pairs:
        objective_options["counting"] = check_counting_method(counting)
    return spec.make_objective(engine, C, **objective_options)


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
    solver : str
        A name in :data:`sparkrank.solvers.registry.SOLVERS`: ``tron``: L2-loss RankSVM by trust-region Newton; ``bmrm``: L1-loss RankSVM by
        cutting planes; ``ncg``: log-sigmoid pairwise likelihood (RankNCG) by nonlinear CG;
        ``toppush``: accuracy at the top (TopPush) by accelerated projected gradient.
    C, lam : float, optional
        Regularisation, LIBLINEAR ``C`` (default: the solver's, 1 but for TopPush) for every
        solver, or BMRM ``λ`` (RankSVM solvers only); converted with :mod:`sparkrank.conventions`.
    tol : float, optional
        Stopping tolerance (default: the solver's). TRON, NCG: relative gradient norm (1e-4;
        in the units-free preconditioned norm unless ``precondition=False``); BMRM: absolute
        gap (1e-3); TopPush: certified relative duality gap (1e-3).
    counting : {"selection", "rbtree", "direct", "pairs", "prsvm+"}
    max_iter : int, optional
        Cap on the solver's iterations (default: the solver's); ``tol`` and ``max_iter`` must
        be positive (a ``ValueError`` otherwise, before any engine pass).
    w0 : ndarray, optional
        Warm start.
    solver_options : dict, optional
        The solver's options (its registry entry's schema: an unknown name or a bad value is a
        ``ValueError`` before any engine pass); each goes to the objective or the optimiser.
    callback : callable, optional
        ``callback(record)`` after every solver iteration
        (:class:`~sparkrank.solvers.result.IterationRecord`; compose several with
        :func:`sparkrank.solvers.callbacks.compose`).
    standardization : {"none", "minmax", "standard"}
        Train on per-feature standardized features (one statistics pass, then the exact
        reparametrisation of :mod:`sparkrank.standardization`); the model stores it and
        applies it at predict time.  ``w0``, the callback's ``w`` and the model's
        ``weights`` are then on the standardized features.
    resume : dict, optional
        The solver's own state from a checkpoint (:mod:`sparkrank.checkpoints`), with ``w0``
        the checkpoint's weights: the fit continues exactly where that run was (a solver whose
        registry entry has ``resumes=False`` keeps no state: it warm-starts from ``w0``).

    Returns
    -------
    RankingModel
    """
    spec = solver_spec(solver)
    # bad options fail before any engine pass; a recorded option's default is passed (and stored)
    options, run_options = spec.split_options(spec.with_recorded_defaults(solver_options))
    check_counting_method(counting)
    tol = spec.default_tol if tol is None else check_positive_float(tol, "tol")
    max_iter = spec.default_max_iter if max_iter is None else check_positive_int(max_iter, "max_iter")
    engine = engine_for(data)  # rows in this process get the local engine
    C = resolve_c(engine, C, lam, solver, options)
    summary = engine.summary
    log.info(
        "training %s (%s): %d rows, %d features, %d groups (%d without pairs), %d pairs, C=%g",
        solver, spec.loss, summary.n_rows, summary.n_features, summary.n_groups,
        summary.n_groups_without_pairs, summary.n_pairs, C,
    )
    if w0 is not None:
        if np.shape(w0) != (summary.n_features,):
            raise ValueError(f"initial weights have shape {np.shape(w0)}, expected ({summary.n_features},)")
        w0 = start_point(w0, summary.n_features)  # non-finite initial weights are an error
    raw_engine = engine
    engine, standardizer = standardized_engine(engine, standardization)
    objective = make_objective(engine, solver, C, counting, **options)
    # the engine's work (rows, groups, passes on Spark) joins every record before the caller sees it
    callback = compose(EngineProgress(engine), callback)
    try:
        # overflow is detected and reported (NonFiniteError), not warned about on the way
        with np.errstate(over="ignore", invalid="ignore"):
            result = spec.run(objective, w0, tol=tol, max_iter=max_iter,
                              callback=callback, **run_options,
                              **({"resume": resume} if resume and spec.resumes else {}))
    except (ValueError, ArithmeticError) as exc:  # NonFiniteError, or a kernel's error on absurd scores
        diagnosis = feature_magnitude_diagnosis(raw_engine, only_extreme=not isinstance(exc, NonFiniteError),
                                                standardized=standardizer is not None)
        if not diagnosis:
            raise
        raise DataError(f"{solver} failed: {exc}; {diagnosis}") from exc
    finally:
        objective.close()  # engines shared by several fits (tune, fitMultiple) keep no state
    if result.iterations == 0 and not result.converged:
        diagnosis = feature_magnitude_diagnosis(raw_engine, only_extreme=True, standardized=standardizer is not None)
        if diagnosis:
            raise DataError(f"{solver} made no step from its start ({result.message}); {diagnosis}")
    log.info("%s stopped after %d iterations (%s): objective %.6e, %.2fs",
             solver, result.iterations, result.message, result.objective, result.seconds)
    return RankingModel(
        standardization=standardizer,
        weights=result.w,
        solver=solver,
        C=C,
        lam=float(objective.lam),
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
            **({"zero_solution": True} if result.zero_solution else {}),  # a model that ranks nothing
            "max_iter": max_iter,
            "seconds": result.seconds,
            "history": result.history,
            "n_rows": summary.n_rows,
            "n_groups": summary.n_groups,
            "n_groups_without_pairs": summary.n_groups_without_pairs,
            "n_pairs": summary.n_pairs,
            **objective.facts(),
        },
    )


#: Feature magnitudes beyond which products of features and weights leave float64's range.
OVERFLOW_MAGNITUDE = 1e100
UNDERFLOW_MAGNITUDE = 1e-100
#: Beyond this a feature's square (the Hessian's diagonal, a standard deviation) leaves
#: float64's range: every pass computes it on the raw rows, so no standardization helps.
SQUARE_OVERFLOW_MAGNITUDE = 1e152


def feature_magnitude_diagnosis(engine: Engine, only_extreme: bool = False, standardized: bool = False) -> str:
    """Which feature's magnitude explains a non-finite or vanishing objective (one statistics pass).

    E.g. ``"features overflow: feature 4 (weight index 3) has |x| up to 1.2e+120; use
    --standardization or rescale"``.  Features are numbered from 1 as in SVMlight files.
    ``engine``: the raw rows (the passes' products are taken on them, standardized or not);
    ``standardized``: the fit already standardized them, so that is not the advice.
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
    advice = "rescale the features" if standardized else \
        "use --standardization (standardization='standard' or 'minmax') or rescale the features"
    if top >= SQUARE_OVERFLOW_MAGNITUDE:
        return (f"features overflow: feature {k + 1} (weight index {k}) has |x| up to {top:.3g}, whose square "
                f"leaves float64's range, so neither the solvers nor --standardization can use it; {RESCALE_ADVICE}")
    if top >= OVERFLOW_MAGNITUDE:
        return f"features overflow: feature {k + 1} (weight index {k}) has |x| up to {top:.3g}; {advice}"
    if 0 < top <= UNDERFLOW_MAGNITUDE:
        return f"features underflow: the largest |x| of any feature is {top:.3g} (feature {k + 1}); {advice}"
    if top == 0:
        return "every feature is zero on every row: there is nothing to learn"
    return "" if only_extreme else f"feature magnitudes look ordinary (largest |x| {top:.3g}, feature {k + 1})"


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
