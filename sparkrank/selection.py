"""Model selection over the regularisation constant ``C`` (lee-lin2014 §4.4).

:func:`tune` trains one model per ``C`` of a grid, in ascending order, and scores each on
held-out queries, either a separate validation set or group-wise k-fold cross-validation
(folds hold whole query groups: groups are assigned to folds, never rows, because
preference pairs only exist inside a group and a split group would leak its pairs into
both sides).

Warm starts
-----------
With ``½‖w‖² + C·Σ loss`` the minimiser ``w*(C)`` moves continuously with ``C``, so the
solution at the previous (smaller) ``C`` is a good start for the next one; this is how
LIBLINEAR's ``-C`` parameter search works (chu2015 "warm start for parameter selection").
TRON's stopping rule stays relative to ``‖∇f(0)‖`` (see :mod:`sparkrank.solvers.tron`), so
a warm start reaches the same tolerance as a cold start, only in fewer iterations.
``cold_start=True`` trains every ``C`` from ``w = 0`` for comparison.

One consequence to know: at the previous optimum ``w_prev`` (for ``C_prev``) the gradient
of the new objective is ``w_prev·(1 − C/C_prev)``, of norm ``‖w_prev‖`` when ``C = 2·C_prev``,
while the threshold ``tol·‖∇f(0)‖`` grows linearly with ``C``.  From some ``C`` on the
previous solution therefore already meets the rule and the solver runs 0 iterations: the
model is kept, correct to the solver's tolerance but no closer, and the metric-vs-C curve
goes flat.  Such rows are marked ``kept`` and a note suggests a smaller ``tol`` (1e-5 makes
the warm path agree with cold starts as closely as cold starts at 1e-4 agree with each
other on MQ2008).

Engines
-------
* ``RankingData``: the local engine.
* :class:`SparkSource` (a DataFrame plus column names and engine options) or a plain
  DataFrame: the Spark engine; a fold is a filter Spark pushes into the scan, so it is
  never collected to the driver.
* An already-built :class:`~sparkrank.engines.base.Engine`: validation-set mode only (an
  engine cannot be split into folds).

Both engines put a group into fold ``seeded hash of its id mod k``
(:mod:`sparkrank.data.folds`), so the same data gets the same folds on either.  Validation
metrics come from the same one-pass :class:`~sparkrank.evaluation.kernel.MetricsKernel` as
``sparkrank evaluate`` (executor or driver placement).

The grid default is lee-lin2014 §4.4's ``C ∈ {2⁻¹⁵, 2⁻¹⁴, …, 2¹⁰}``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from .data.block import DataError, RankingData
from .data.folds import group_folds, spark_group_fold
from .data.groups import QueryGroups
from .engines.base import Engine
from .engines.registry import make_engine
from .evaluation.evaluate import model_weights_for
from .evaluation.kernel import MetricsKernel
from .evaluation.names import PAIRWISE_ACCURACY, canonical_metric, metric_ks
from .kernels.counting import DEFAULT_COUNTING
from .model import RankingModel, json_default
from .numerics.vectors import fit_length
from .training import solver_spec, train

log = logging.getLogger("sparkrank.tune")

#: lee-lin2014 §4.4: C ∈ {2⁻¹⁵, …, 2¹⁰}.
DEFAULT_C_GRID: tuple[float, ...] = tuple(2.0**e for e in range(-15, 11))
#: Pairwise accuracy is defined for every data set (real-valued labels, one global
#: ranking) and is what RankSVM's pairwise loss approximates, so it is the default.
DEFAULT_METRIC = PAIRWISE_ACCURACY


def c_grid_from_range(low: int, high: int) -> list[float]:
    """``[2**low, 2**(low+1), …, 2**high]`` (integer exponents, inclusive)."""
    if int(low) != low or int(high) != high:
        raise ValueError(f"C range exponents must be integers, got {low} and {high}")
    if high < low:
        raise ValueError(f"C range is empty: low exponent {low} > high exponent {high}")
    return [2.0**e for e in range(int(low), int(high) + 1)]


def check_c_grid(grid: Iterable[float] | None) -> list[float]:
    """The grid as sorted, distinct, positive finite floats (default :data:`DEFAULT_C_GRID`)."""
    values = list(DEFAULT_C_GRID if grid is None else grid)
    if not values:
        raise ValueError("the C grid is empty")
    out = []
    for c in values:
        c = float(c)
        if not math.isfinite(c) or c <= 0:
            raise ValueError(f"every C must be a positive finite number, got {c!r}")
        out.append(c)
    return sorted(set(out))


# ----------------------------------------------------------------------------- data sources


@dataclass(frozen=True)
class SparkSource:
    """A ranking DataFrame and how to build a :class:`~sparkrank.engines.spark.SparkEngine` on it.

    Attributes
    ----------
    df : pyspark.sql.DataFrame
    label_col, qid_col, features_col : str
        Column names (``qid_col=None``: one global ranking, which cannot be k-folded).
    engine_options : dict
        Keyword options of ``SparkEngine`` (``placement``, ``num_partitions``, ``dtype``,
        ``aggregation_depth``).
    """

    df: Any
    label_col: str = "label"
    qid_col: str | None = "qid"
    features_col: str = "features"
    engine_options: dict = field(default_factory=dict)

    def engine(self, n_features: int | None = None) -> Engine:
        from .engines.registry import make_engine
        from .io.sources import ColumnSpec, FrameSource

        columns = ColumnSpec(self.label_col, ColumnSpec.parse_group(self.qid_col), self.features_col)
        return make_engine(FrameSource(self.df, columns), "spark", n_features=n_features, **self.engine_options)

    def fold_column(self, k: int, seed: int):
        """The fold number of each row, a seeded hash of its group id (whole groups)."""
        from .io.sources import ColumnSpec, group_expression

        group = ColumnSpec.parse_group(self.qid_col)
        if not group or any(g not in self.df.columns for g in group):
            raise DataError("group-wise k-fold needs a query-id column; this DataFrame has none (one global ranking)")
        return spark_group_fold(group_expression(group), k, seed)

    def split(self, k: int, fold: int, seed: int) -> tuple["SparkSource", "SparkSource"]:
        """``(training part, held-out part)`` of fold ``fold``."""
        f = self.fold_column(k, seed)
        return (SparkSource(self.df.filter(f != fold), self.label_col, self.qid_col, self.features_col,
                            self.engine_options),
                SparkSource(self.df.filter(f == fold), self.label_col, self.qid_col, self.features_col,
                            self.engine_options))


def take_groups(data: RankingData, group_index: np.ndarray) -> RankingData:
    """The rows of the given groups (in the given order) as a new :class:`RankingData`."""
    group_index = np.asarray(group_index, dtype=np.int64)
    offsets = data.groups.offsets
    sizes = np.diff(offsets)[group_index]
    new_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # row r of new group j is old row offsets[g_j] + (r - new_offsets[j])
    rows = np.repeat(offsets[group_index] - new_offsets[:-1], sizes) + np.arange(new_offsets[-1], dtype=np.int64)
    groups = QueryGroups.from_offsets(data.labels[rows], new_offsets)
    qids = None if data.qids is None else data.qids[group_index]
    # the subset's own input order: the rank of each kept row's original position
    return RankingData(data.X[rows], groups, qids, np.argsort(np.argsort(data.row_order[rows])))


def _local_split(data: RankingData, k: int, seed: int) -> list[tuple[RankingData, RankingData]]:
    if data.qids is None:
        raise DataError("group-wise k-fold needs query ids; this data is one global ranking")
    fold = group_folds(data.qids, k, seed)
    return [(take_groups(data, np.flatnonzero(fold != i)), take_groups(data, np.flatnonzero(fold == i)))
            for i in range(k)]


def _as_source(x):
    if isinstance(x, (RankingData, Engine, SparkSource)):
        return x
    if type(x).__name__ == "DataFrame" and hasattr(x, "sparkSession"):
        return SparkSource(x)
    raise TypeError(f"expected RankingData, an Engine, a SparkSource or a Spark DataFrame, got {type(x).__name__}")


class _Opened:
    """An engine over a source; closes it afterwards only if it built it."""

    def __init__(self, source):
        if isinstance(source, Engine):
            self.engine, self.owned = source, False
        elif isinstance(source, RankingData):
            self.engine, self.owned = make_engine(source, "local"), True
        else:
            self.engine, self.owned = source.engine(), True

    def __enter__(self) -> Engine:
        return self.engine

    def __exit__(self, *exc) -> None:
        if self.owned:
            self.engine.close()


# ----------------------------------------------------------------------------- results


@dataclass
class TuneRow:
    """What one ``C`` gave.

    Attributes
    ----------
    C : float
    iterations : int
        Solver iterations (summed over folds).
    seconds : float
        Training wall time (summed over folds; evaluation not included).
    objective : float
        Training objective at the solution (mean over folds).
    metric : float
        Validation metric (mean over folds).
    metric_std : float
        Standard deviation of the metric over folds (0 with a validation set).
    converged : bool
        Every fold's solver met its stopping rule.
    fold_metrics, fold_iterations : list
        Per fold (one entry with a validation set).
    metrics : dict
        Every validation metric the kernel computed (means over folds).
    warm : bool
        Trained from the previous ``C``'s solution (see :attr:`kept`).
    """

    C: float
    iterations: int
    seconds: float
    objective: float
    metric: float
    metric_std: float = 0.0
    converged: bool = True
    fold_metrics: list[float] = field(default_factory=list)
    fold_iterations: list[int] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    warm: bool = False

    @property
    def kept(self) -> bool:
        """Warm-started and no fold's solver moved: the previous C's solution met the stopping rule."""
        return self.warm and bool(self.fold_iterations) and not any(self.fold_iterations)


@dataclass
class TuneResult:
    """Outcome of :func:`tune`; :meth:`to_dict` is JSON-serialisable.

    Attributes
    ----------
    solver, metric : str
    mode : {"validation", "kfold"}
    folds : int
        ``k`` (1 with a validation set).
    cold_start : bool
    rows : list of TuneRow
        One per ``C``, ascending.
    best_C : float
        The ``C`` with the highest metric (the smallest such ``C`` on ties: the most
        regularised model).
    model : RankingModel or None
        Trained at ``best_C`` on all training data (refit after k-fold).
    models : dict
        ``C -> [model per fold]`` when ``keep_models`` was set (not serialised).
    seconds : float
        Wall time of the whole search.
    held_out : list of dict
        Rows, groups and pairs of the held-out data of each fold (or the validation set).
    """

    solver: str
    metric: str
    mode: str
    folds: int
    cold_start: bool
    rows: list[TuneRow]
    best_C: float
    model: RankingModel | None = None
    models: dict[float, list[RankingModel]] = field(default_factory=dict)
    seconds: float = 0.0
    seed: int = 0
    held_out: list[dict] = field(default_factory=list)

    @property
    def best_row(self) -> TuneRow:
        return next(r for r in self.rows if r.C == self.best_C)

    @property
    def total_iterations(self) -> int:
        return int(sum(r.iterations for r in self.rows))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types: settings, rows, best C and the best model's summary (not its weights)."""
        best = self.best_row
        d = {
            "library": "sparkrank",
            "kind": "tune",
            "solver": self.solver,
            "metric": self.metric,
            "mode": self.mode,
            "folds": self.folds,
            "seed": self.seed,
            "cold_start": self.cold_start,
            "grid": [r.C for r in self.rows],
            "rows": [_row_dict(r) for r in self.rows],
            "best_C": self.best_C,
            "best_log2_C": math.log2(self.best_C),
            "best_metric": best.metric,
            "total_iterations": self.total_iterations,
            "seconds": self.seconds,
            "held_out": self.held_out,
        }
        if self.model is not None:
            s = self.model.summary
            d["best_model"] = {"C": self.model.C, "lam": self.model.lam, "iterations": s.get("iterations"),
                               "objective": s.get("objective"), "seconds": s.get("seconds"),
                               "converged": s.get("converged")}
        return json.loads(json.dumps(d, default=json_default))

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_dict` as JSON to a local path or any Hadoop URI (atomically)."""
        from .io.fs import filesystem

        filesystem(str(path)).write_text(str(path), json.dumps(self.to_dict(), indent=1))

    def table(self) -> str:
        """A fixed-width text table: C, log2 C, iterations, seconds, objective, metric."""
        head = f"{'C':>12} {'log2C':>6} {'iter':>6} {'seconds':>8} {'objective':>13} {self.metric:>18}"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            metric = f"{r.metric:.5f}" + (f" ±{r.metric_std:.4f}" if self.folds > 1 else "")
            mark = ("  <- best" if r.C == self.best_C else "") + ("  (kept)" if r.kept else "")
            lines.append(f"{r.C:>12.6g} {math.log2(r.C):>6.2f} {r.iterations:>6d} {r.seconds:>8.2f} "
                         f"{r.objective:>13.6e} {metric:>18}{mark}")
        return "\n".join(lines)


def _row_dict(r: TuneRow) -> dict[str, Any]:
    return {"C": r.C, "log2_C": math.log2(r.C), "iterations": r.iterations, "seconds": r.seconds,
            "objective": r.objective, "metric": r.metric, "metric_std": r.metric_std, "converged": r.converged,
            "fold_metrics": r.fold_metrics, "fold_iterations": r.fold_iterations, "metrics": r.metrics,
            "kept": r.kept}


def load_tune_result(path: str | Path) -> dict[str, Any]:
    """Read a JSON file written by :meth:`TuneResult.save` (as a dict), checking its kind."""
    from .io.fs import filesystem

    path = str(path)
    try:
        d = json.loads(filesystem(path).read_text(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read tune result {path}: {exc}") from exc
    if d.get("kind") != "tune" or not d.get("rows"):
        raise ValueError(f"{path} is not a sparkrank tune result (no 'kind': 'tune' with rows)")
    return d


# ----------------------------------------------------------------------------- tune


def tune(
    train_data,
    *,
    valid=None,
    folds: int | None = None,
    C_grid: Sequence[float] | None = None,
    solver: str = "tron",
    metric: str = DEFAULT_METRIC,
    tol: float | None = None,
    counting: str = DEFAULT_COUNTING,
    max_iter: int | None = None,
    solver_options: dict | None = None,
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
) -> TuneResult:
    """Pick ``C`` by validation-set or group-wise k-fold scores, warm-starting along the grid.

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
        Any name in :data:`sparkrank.training.SOLVERS`.
    metric : str
        ``pairwise_accuracy`` (default), ``auc``, ``mean_ndcg``, ``ndcg@K``, ``positives_at_top``
        or ``precision@K`` in either spelling of :mod:`sparkrank.evaluation.names`; higher is better.
    tol, counting, max_iter, solver_options :
        As in :func:`sparkrank.training.train`.
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

    Returns
    -------
    TuneResult
    """
    spec = solver_spec(solver)  # fails early on an unknown solver
    # a solver whose start is fixed (TopPush's APG starts at the dual origin) declares
    # ``warm_start=False`` on its SolverSpec; it is then trained from zero at every C
    if not getattr(spec, "warm_start", True):
        if not cold_start:
            log.info("%s cannot start from given weights: every C is trained from zero", solver)
        cold_start = True
    metric = canonical_metric(metric)  # "NDCG@10", "ndcg@10"; "pairwiseAccuracy", "pairwise_accuracy"
    ks = metric_ks(metric)
    grid = check_c_grid(C_grid)
    if (valid is None) == (folds is None):
        raise ValueError("give exactly one of a validation set (valid) or a fold count (folds)")
    train_data = _as_source(train_data)
    kernel = MetricsKernel(ks, discount, zero_idcg, counting)
    common = dict(train_options or {}, solver=solver, tol=tol, counting=counting, max_iter=max_iter,
                  solver_options=solver_options)
    checkpoints = None
    if checkpoint_dir is not None:
        from .tune_checkpoints import TuneCheckpoints

        settings = dict(grid=grid, solver=solver, metric=metric, valid=valid is not None, folds=folds, seed=seed,
                        tol=tol, counting=counting, max_iter=max_iter, solver_options=solver_options or {},
                        cold_start=cold_start, refit=refit, discount=discount, zero_idcg=zero_idcg,
                        train_options=train_options or {})
        checkpoints = TuneCheckpoints(checkpoint_dir, checkpoint_interval, resume, settings)
    elif resume:
        raise ValueError("--resume needs --checkpoint-dir")
    t0 = time.perf_counter()
    log.info("tuning %s over %d values of C (%g .. %g) by %s, %s%s", solver, len(grid), grid[0], grid[-1],
             metric, "a validation set" if valid is not None else f"group-wise {folds}-fold",
             ", cold starts" if cold_start else ", warm starts")

    models: dict[float, list[RankingModel]] = {C: [] for C in grid} if keep_models else {}
    best_seen: dict[str, Any] = {"metric": -math.inf, "model": None}  # validation mode
    fold_sum: dict[int, np.ndarray] = {}  # k-fold: per C, the sum of the fold solutions

    def sink(j: int, model: RankingModel, metrics: dict) -> None:
        if keep_models:
            models[grid[j]].append(model)
        if valid is not None and metrics[metric] > best_seen["metric"]:  # strict: smallest C on ties
            best_seen.update(metric=metrics[metric], model=model)
        if valid is None and refit and not cold_start:
            prev = fold_sum.get(j, np.zeros(0))
            w = model.weights
            n = max(prev.shape[0], w.shape[0])  # Spark folds may see different largest indices
            fold_sum[j] = fit_length(prev, n) + fit_length(w, n)

    # feature widths of training and held-out parts may differ (the largest index seen in
    # each); weights are padded or cut to the held-out width, unseen features score 0
    if valid is not None:
        with _Opened(train_data) as tr, _Opened(_as_source(valid)) as va:
            paths = [_path(tr, va, grid, kernel, metric, cold_start, common, "", sink,
                           checkpoints and checkpoints.path(0, tr, va))]
            held_out = [_sizes(va)]
        mode, k = "validation", 1
    else:
        k = int(folds)
        if isinstance(train_data, Engine):
            raise TypeError("k-fold needs RankingData or a Spark DataFrame/SparkSource, not an engine "
                            "(an engine cannot be split into folds)")
        if isinstance(train_data, RankingData):
            splits = _local_split(train_data, k, seed)
        else:
            train_data.fold_column(k, seed)  # clear error for data without query ids
            splits = [train_data.split(k, i, seed) for i in range(k)]
        paths, held_out = [], []
        for i, (tr_src, va_src) in enumerate(splits):
            with _Opened(tr_src) as tr, _Opened(va_src) as va:
                paths.append(_path(tr, va, grid, kernel, metric, cold_start, common, f"fold {i + 1}/{k} ", sink,
                                   checkpoints and checkpoints.path(i, tr, va)))
                held_out.append(_sizes(va))
        mode = "kfold"

    rows = [_combine(C, [p[j] for p in paths], metric) for j, C in enumerate(grid)]
    for j, row in enumerate(rows):
        row.warm = j > 0 and not cold_start
    scored = [r for r in rows if not math.isnan(r.metric)]
    if not scored:
        raise DataError(f"the validation {metric} is undefined for every C (no pairs or no NDCG-able "
                        "queries in the held-out data)")
    best = max(scored, key=lambda r: r.metric)  # max returns the first maximum: smallest C on ties

    model = None
    if mode == "validation":
        model = best_seen["model"]
    elif refit:
        log.info("refitting %s at the best C=%g on all training data", solver, best.C)
        with _Opened(train_data) as tr:
            # the mean fold solution is a close start: every fold saw most of the data
            w_sum = fold_sum.get(grid.index(best.C))
            w0 = None if w_sum is None else fit_length(w_sum / k, tr.summary.n_features)
            if checkpoints is None or not spec.warm_start:
                model = train(tr, C=best.C, w0=w0, **common)
            else:
                start = checkpoints.refit(tr, _fit_settings(best.C, common), w0)
                model = train(tr, C=best.C, w0=start.w0, callback=start.callback, resume=start.solver_state,
                              **common)
    result = TuneResult(solver, metric, mode, k, cold_start, rows, best.C, model, models,
                        time.perf_counter() - t0, seed, held_out)
    log.info("best C=%g (log2 %.2f): validation %s %.5f; %d solver iterations in all, %.1fs",
             best.C, math.log2(best.C), metric, best.metric, result.total_iterations, result.seconds)
    kept = [r.C for r in rows if r.kept]
    if kept:
        log.warning("%d of %d values of C (from %g) kept the previous C's solution: it already met the "
                    "solver's relative stopping rule; a smaller tol (e.g. 1e-5) gives a finer metric-vs-C curve",
                    len(kept), len(rows), kept[0])
    return result


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


def _combine(C: float, parts: list[dict], metric: str) -> TuneRow:
    """One row from the per-fold results at one ``C``."""
    summaries = [p["summary"] for p in parts]
    names = [k for k, v in parts[0]["metrics"].items() if isinstance(v, float)]
    fold_metrics = [float(p["metrics"][metric]) for p in parts]
    finite = [v for v in fold_metrics if not math.isnan(v)]
    return TuneRow(
        C=C,
        iterations=int(sum(s["iterations"] for s in summaries)),
        seconds=float(sum(s["seconds"] for s in summaries)),
        objective=float(np.mean([s["objective"] for s in summaries])),
        metric=float(np.mean(finite)) if finite else float("nan"),
        metric_std=float(np.std(finite)) if finite else float("nan"),
        converged=all(bool(s["converged"]) for s in summaries),
        fold_metrics=fold_metrics,
        fold_iterations=[int(s["iterations"]) for s in summaries],
        metrics={k: _nanmean([p["metrics"][k] for p in parts]) for k in names},
    )


def _nanmean(values: list[float]) -> float:
    finite = [float(v) for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else float("nan")
