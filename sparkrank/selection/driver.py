"""The model-selection driver: train along the C grid (warm starts), score held-out queries."""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..choices import DEFAULT_COUNTING
from ..conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from ..data.block import DataError
from ..engines.base import Engine
from ..model import model_weights_for
from ..evaluation.kernel import MetricsKernel
from ..evaluation.names import canonical_metric, metric_ks
from ..model import RankingModel
from ..numerics.vectors import fit_length
from ..objectives.base import require_pairs
from ..solvers.registry import SolverSpec, solver_spec
from ..training import train
from .folds import OpenedEngine, as_rows
from .grid import check_c_grid
from .result import TuneResult, combine_folds

log = logging.getLogger("sparkrank.tune")


def tune(
    train_data,
    *,
    valid=None,
    folds: int | None = None,
    C_grid: Sequence[float] | None = None,
    solver: str = "tron",
    metric: str | None = None,
    tol: float | None = None,
    counting: str = DEFAULT_COUNTING,
    max_iter: int | None = None,
    solver_options: dict | None = None,
    option_grid: dict[str, Sequence] | None = None,
    cold_start: bool = False,
    refit: bool = True,
    seed: int = 0,
    keep_models: bool = False,
    discount: str = DEFAULT_NDCG_DISCOUNT,
    zero_idcg: str = DEFAULT_ZERO_IDCG,
    train_options: dict | None = None,
    checkpoint_dir: str | None = None,
    checkpoint_interval: int = 1,
    resume: bool = False,
    names: tuple[str, str] = ("the training data", "the validation data"),
) -> TuneResult:
    """Pick ``C`` (and solver options) by validation-set or group-wise k-fold scores,
    warm-starting along the C grid.

    Parameters
    ----------
    train_data : RankingData, SparkSource, Spark DataFrame or Engine
        Training rows.  An engine works with ``valid`` only.
    valid : same types, optional
        Validation rows; give exactly one of ``valid`` and ``folds``.
    folds : int, optional
        ``k`` of group-wise k-fold cross-validation on ``train_data`` (``k >= 2``).
    C_grid : sequence of float, optional
        LIBLINEAR-convention ``C`` values (sorted ascending here); default
        :data:`DEFAULT_C_GRID`.
    solver : str
        Any name in :data:`sparkrank.solvers.registry.SOLVERS`.
    metric : str, optional
        The solver's ``tune_metric`` by default (``pairwise_accuracy``; TopPush:
        ``positives_at_top``), or ``pairwise_accuracy``, ``auc``, ``mean_ndcg``, ``ndcg@K``, ``positives_at_top``
        or ``precision@K`` in either spelling of :mod:`sparkrank.evaluation.names`; higher is better.
    tol, counting, max_iter, solver_options :
        As in :func:`sparkrank.training.train`.
    option_grid : dict, optional
        Solver options to search together with ``C``: ``{name: values}``; every combination is
        trained along the whole C grid and the best (combination, C) wins.  By default the
        options the solver's registry entry gives ``tune_values`` and ``solver_options`` leaves
        open (TopPush's ``top_fraction``); ``{}`` searches C only.
    cold_start : bool
        Train every ``C`` from zero instead of from the previous ``C``'s solution.
    refit : bool
        After k-fold, train at the best ``C`` on all of ``train_data`` (warm-started from
        the mean of the fold solutions) and return it as ``model``.
    seed : int
        Fold assignment seed.
    keep_models : bool
        Keep every trained model in ``TuneResult.models``.
    discount, zero_idcg :
        NDCG conventions (:mod:`sparkrank.conventions`).
    train_options : dict, optional
        Further keyword options of :func:`~sparkrank.training.train`, the same for every ``C``.
    checkpoint_dir : str, optional
        Record every finished ``C`` (per fold) and checkpoint the fit in progress every
        ``checkpoint_interval`` solver iterations (see :mod:`sparkrank.tune_checkpoints`).
    checkpoint_interval : int
    resume : bool
        Continue the search recorded in ``checkpoint_dir`` (same settings and data, else a
        :class:`~sparkrank.checkpoints.CheckpointMismatchError`): finished Cs are reused, the
        interrupted one resumes, and the table and best model equal an undisturbed search's
        (weights bit for bit with TRON, BMRM and NCG; seconds are the recorded ones).
    names : (str, str)
        How messages name ``train_data`` and ``valid`` (the CLI: ``--input X``, ``--valid Y``).

    Returns
    -------
    TuneResult
        Its rows run over the option combinations (outer) and C (inner); ties go to the first
        such row (the smallest C of the first combination).
    """
    spec = solver_spec(solver)  # fails early on an unknown solver
    spec.check_options(solver_options)  # and on a bad option, before any engine pass
    combos = option_combinations(spec, solver_options, option_grid)
    # a solver whose start is fixed (TopPush's APG starts at the dual origin) declares
    # ``warm_start=False`` in the registry; it is then trained from zero at every C
    if not spec.warm_start:
        if not cold_start:
            log.info("%s cannot start from given weights: every C is trained from zero", solver)
        cold_start = True
    metric = canonical_metric(metric or spec.tune_metric)  # "NDCG@10", "ndcg@10"; "pairwiseAccuracy", "pairwise_accuracy"
    ks = metric_ks(metric)
    grid = check_c_grid(C_grid)
    if (valid is None) == (folds is None):
        raise ValueError("give exactly one of a validation set (valid) or a fold count (folds)")
    train_rows = as_rows(train_data)
    common = dict(train_options or {}, solver=solver, tol=tol, counting=counting, max_iter=max_iter,
                  solver_options=solver_options)
    checkpoints = None
    if checkpoint_dir is not None:
        from ..tune_checkpoints import TuneCheckpoints

        settings = dict(grid=grid, solver=solver, metric=metric, valid=valid is not None, folds=folds, seed=seed,
                        tol=tol, counting=counting, max_iter=max_iter, solver_options=solver_options or {},
                        cold_start=cold_start, refit=refit, discount=discount, zero_idcg=zero_idcg,
                        train_options=train_options or {})
        if combos != [{}]:
            settings["option_combinations"] = combos
        checkpoints = TuneCheckpoints(checkpoint_dir, checkpoint_interval, resume, settings)
    elif resume:
        raise ValueError("--resume needs --checkpoint-dir")
    t0 = time.perf_counter()
    log.info("tuning %s over %d values of C (%g .. %g)%s by %s, %s%s", solver, len(grid), grid[0], grid[-1],
             f" x {len(combos)} option settings ({describe_combinations(combos)})" if combos != [{}] else "",
             metric, "a validation set" if valid is not None else f"group-wise {folds}-fold",
             ", cold starts" if cold_start else ", warm starts")
    search = _Search(spec, grid, combos, MetricsKernel(ks, discount, zero_idcg, counting), metric, cold_start,
                     common, keep_models, refit and valid is None, checkpoints)
    # k-fold parts are as wide as all rows, on every engine (data/folds.take_groups, fold views);
    # a validation set has its own width and may be narrower than the training rows, not wider
    # (evaluate refuses such data for the model); weights are padded to the held-out width
    with contextlib.ExitStack() as stack:  # the k-fold parts and the engine over all rows
        if valid is not None:
            paths, held_out = search.on_validation(train_rows, as_rows(valid), names)
            mode, k, kfold = "validation", 1, None
        else:
            k = int(folds)
            kfold = stack.enter_context(train_rows.kfold(k, seed))
            paths, held_out = search.on_folds(kfold, k)
            mode = "kfold"
        rows = search.rows(paths)
        scored = [r for r in rows if not math.isnan(r.metric)]
        if not scored:
            raise DataError(f"the validation {metric} is undefined for every C (no pairs or no NDCG-able "
                            "queries in the held-out data)")
        best = max(scored, key=lambda r: r.metric)  # max returns the first maximum: smallest C on ties
        model = None
        if mode == "validation":
            model = search.best_seen["model"]
        elif refit:
            model = search.refit(kfold, k, best)
    result = TuneResult(solver, metric, mode, k, cold_start, rows, best.C, model, search.models,
                        time.perf_counter() - t0, seed, held_out, dict(best.options))
    log.info("best C=%g (log2 %.2f)%s: validation %s %.5f; %d solver iterations in all, %.1fs",
             best.C, math.log2(best.C), f", {describe_combinations([best.options])}" if best.options else "",
             metric, best.metric, result.total_iterations, result.seconds)
    kept = [r.C for r in rows if r.kept]
    if kept:
        log.warning("%d of %d values of C (from %g) kept the previous C's solution: it already met the "
                    "solver's relative stopping rule; a smaller tol (e.g. 1e-5) gives a finer metric-vs-C curve",
                    len(kept), len(rows), kept[0])
    return result


@dataclass
class _Search:
    """One run of :func:`tune`: the grid paths of every option combination, and what they leave
    (the models when kept, the best validation model, the fold solutions' sums for the refit)."""

    spec: SolverSpec
    grid: list[float]
    combos: list[dict]
    kernel: MetricsKernel
    metric: str
    cold_start: bool
    common: dict
    keep_models: bool
    sums_for_refit: bool
    checkpoints: Any = None
    # per (option combination, C): the models when kept, the fold solutions' sum (k-fold refit)
    models: dict = field(default_factory=dict)
    best_seen: dict = field(default_factory=lambda: {"metric": -math.inf, "model": None})  # validation mode
    fold_sum: dict = field(default_factory=dict)

    def common_for(self, combo: dict) -> dict:
        """The training options of one option combination."""
        if not combo:
            return self.common
        return dict(self.common, solver_options={**(self.common["solver_options"] or {}), **combo})

    def sink_for(self, ci: int, validation: bool):
        """Where the models of option combination ``ci`` go as its path makes them."""
        def sink(j: int, model: RankingModel, metrics: dict) -> None:
            if self.keep_models:
                key = self.grid[j] if self.combos == [{}] else (self.grid[j], tuple(sorted(self.combos[ci].items())))
                self.models.setdefault(key, []).append(model)
            if validation and metrics[self.metric] > self.best_seen["metric"]:  # strict: first row on ties
                self.best_seen.update(metric=metrics[self.metric], model=model)
            if not validation and self.sums_for_refit and not self.cold_start:
                prev = self.fold_sum.get((ci, j), np.zeros(0))
                w = model.weights
                n = max(prev.shape[0], w.shape[0])  # (k-fold parts are as wide as all rows: n is w's)
                self.fold_sum[(ci, j)] = fit_length(prev, n) + fit_length(w, n)
        return sink

    def _paths(self, tr: Engine, va: Engine, label: str, path_index, validation: bool, paths: list) -> None:
        """Each option combination's path on one split; ``path_index(ci)``: its checkpoint path."""
        for ci, combo in enumerate(self.combos):
            paths[ci].append(_path(tr, va, self.grid, self.kernel, self.metric, self.cold_start,
                                   self.common_for(combo), label + _combo_label(combo), self.sink_for(ci, validation),
                                   self.checkpoints and self.checkpoints.path(path_index(ci), tr, va)))

    def on_validation(self, train_rows, valid_rows, names: tuple[str, str]):
        """``(paths, held_out)`` of a validation set: paths[ci] holds one list of per-C results."""
        paths: list[list[list[dict]]] = [[] for _ in self.combos]
        with OpenedEngine(train_rows) as tr, OpenedEngine(valid_rows) as va:
            require_pairs(tr, names[0])  # before any fit, naming the input
            check_valid_width(tr, va, names)
            self._paths(tr, va, "", lambda ci: ci, True, paths)
            return paths, [_sizes(va)]

    def on_folds(self, kfold, k: int):
        """``(paths, held_out)`` of group-wise k-fold: paths[ci] holds one list per fold
        (checkpoint path ci·k + fold)."""
        paths: list[list[list[dict]]] = [[] for _ in self.combos]
        held_out = []
        for i in range(k):
            with kfold.part(i) as (tr, va):
                self._paths(tr, va, f"fold {i + 1}/{k} ", lambda ci: ci * k + i, False, paths)
                held_out.append(_sizes(va))
        return paths, held_out

    def rows(self, paths) -> list:
        """The table: option combinations (outer) by C (inner), folds combined."""
        rows = []
        for ci, combo in enumerate(self.combos):
            for j, C in enumerate(self.grid):
                row = combine_folds(C, [p[j] for p in paths[ci]], self.metric)
                row.warm = j > 0 and not self.cold_start
                row.options = dict(combo)
                rows.append(row)
        return rows

    def refit(self, kfold, k: int, best) -> RankingModel:
        """The model at the best row, trained on all the rows the folds were cut from."""
        log.info("refitting %s at the best C=%g%s on all training data", self.spec.name, best.C,
                 f", {describe_combinations([best.options])}" if best.options else "")
        tr = kfold.whole()  # on Spark the engine the folds were views of: no second read
        # the mean fold solution is a close start: every fold saw most of the data
        w_sum = self.fold_sum.get((self.combos.index(best.options), self.grid.index(best.C)))
        w0 = None if w_sum is None else fit_length(w_sum / k, tr.summary.n_features)
        best_common = self.common_for(best.options)
        if self.checkpoints is None or not self.spec.warm_start:
            return train(tr, C=best.C, w0=w0, **best_common)
        start = self.checkpoints.refit(tr, _fit_settings(best.C, best_common), w0)
        return train(tr, C=best.C, w0=start.w0, callback=start.callback, resume=start.solver_state, **best_common)


def option_combinations(spec: SolverSpec, solver_options: dict | None,
                        option_grid: dict[str, Sequence] | None) -> list[dict]:
    """Every combination of the searched options' values (``[{}]`` when none is searched).

    ``option_grid`` by default: the registry's ``tune_values`` of the options ``solver_options``
    leaves open (:meth:`~sparkrank.solvers.registry.SolverSpec.tuned_options`).  Each value is
    checked as a solver option; an option both fixed and searched is a ``ValueError``.
    """
    grid = spec.tuned_options(solver_options) if option_grid is None else dict(option_grid)
    for name, values in grid.items():
        if name in (solver_options or {}):
            raise ValueError(f"option {name!r} is both given ({solver_options[name]!r}) and searched; give one")
        if isinstance(values, (str, bytes)) or not len(values):
            raise ValueError(f"the values of option {name!r} to search must be a non-empty list, got {values!r}")
        grid[name] = tuple(spec.check_options({name: v})[name] for v in values)
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*grid.values())]


def describe_combinations(combos: list[dict]) -> str:
    """``"top_fraction in 0.05, 0.1"`` (the values each option takes over ``combos``)."""
    def values(name: str) -> str:
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in dict.fromkeys(c[name] for c in combos))

    return "; ".join(f"{name} in {values(name)}" for name in (combos[0] if combos else {}))


def _combo_label(combo: dict) -> str:
    return "".join(f"{name}={value:g} " if isinstance(value, float) else f"{name}={value} "
                   for name, value in combo.items())


def check_valid_width(tr: Engine, va: Engine, names: tuple[str, str]) -> None:
    """A ``DataError`` before any fit when the validation rows ``va`` are wider than the
    training rows ``tr``: every model of the grid would have no weights for the features beyond,
    and ``sparkrank evaluate`` refuses such data for such a model.  ``names``: (training, validation)."""
    n_train, n_valid = tr.summary.n_features, va.summary.n_features
    if n_valid > n_train:
        raise DataError(f"{names[1]} has {n_valid} feature columns but {names[0]} has only {n_train}: a model "
                        "trained on it has no weights for the features beyond")


def _sizes(engine: Engine) -> dict[str, int]:
    s = engine.summary
    return {"n_rows": s.n_rows, "n_groups": s.n_groups, "n_pairs": s.n_pairs}


def _path(tr: Engine, va: Engine, grid: list[float], kernel: MetricsKernel, metric: str, cold_start: bool,
          common: dict, label: str, sink, checkpoints=None) -> list[dict]:
    """Train along the ascending grid on ``tr`` (warm starts unless ``cold_start``), score on ``va``.

    Returns the summary and metrics per ``C``; each model goes to ``sink(j, model, metrics)``
    only, so a long grid over many features never holds all the weight vectors.  With
    ``checkpoints`` (a :class:`~sparkrank.tune_checkpoints.PathCheckpoints`) each finished C
    is recorded, and a recorded one is reused instead of trained.
    """
    out = []
    w = None
    n = len(grid)
    for j, C in enumerate(grid):
        w0 = None if cold_start else w
        done = checkpoints.finished(j, C) if checkpoints is not None else None
        if done is not None:
            model, metrics = done
        elif checkpoints is None or not solver_spec(common["solver"]).warm_start:
            # a solver that cannot start from given weights (TopPush) redoes an interrupted C
            model = train(tr, C=C, w0=w0, **common)
        else:
            start = checkpoints.begin(j, tr, _fit_settings(C, common), w0)
            model = train(tr, C=C, w0=start.w0, callback=start.callback, resume=start.solver_state, **common)
        w = model.weights
        if done is None:
            # a standardized model's raw weights rank every query the same way
            metrics = kernel.finish(va.run(model_weights_for(model, va.summary.n_features), kernel).stats)
            if checkpoints is not None:
                checkpoints.record(j, model, metrics)
        s = model.summary
        log.info("%sC %d/%d = %g (log2 %.2f): %d iterations, %.2fs, objective %.6e, validation %s %.5f",
                 label, j + 1, n, C, math.log2(C), s["iterations"], s["seconds"], s["objective"], metric,
                 metrics[metric])
        sink(j, model, metrics)
        out.append({"summary": model.summary, "metrics": metrics})
    return out


def _fit_settings(C: float, common: dict) -> dict[str, Any]:
    """What one fit's train checkpoints must match (as ``sparkrank train --checkpoint-dir``)."""
    return {"solver": common["solver"], "C": C, "tol": common["tol"], "counting": common["counting"],
            "options": common.get("solver_options") or {}, "standardization": common.get("standardization", "none")}
