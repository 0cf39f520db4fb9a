"""What a model selection found: one row per C, the best C and model, as a table and as JSON."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model import RankingModel, json_default


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
    options : dict
        The searched solver options of this row (``tune``'s option grid; empty when only C is searched).
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
    options: dict[str, Any] = field(default_factory=dict)

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
        One per ``C``, ascending (per option combination, one combination after the other).
    best_C : float
        The ``C`` with the highest metric (the smallest such ``C`` on ties: the most
        regularised model).
    model : RankingModel or None
        Trained at ``best_C`` (and ``best_options``) on all training data (refit after k-fold).
    models : dict
        ``C -> [model per fold]`` when ``keep_models`` was set (not serialised); with searched
        options the key is ``(C, ((option, value), ...))``.
    seconds : float
        Wall time of the whole search.
    held_out : list of dict
        Rows, groups and pairs of the held-out data of each fold (or the validation set).
    best_options : dict
        The searched solver options of the best row (empty when only C was searched).
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
    best_options: dict[str, Any] = field(default_factory=dict)

    @property
    def best_row(self) -> TuneRow:
        return next(r for r in self.rows if r.C == self.best_C and r.options == self.best_options)

    @property
    def option_names(self) -> list[str]:
        """The searched solver options (columns of :meth:`table`)."""
        return list(self.rows[0].options) if self.rows else []

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
            "grid": list(dict.fromkeys(r.C for r in self.rows)),
            "rows": [row_dict(r) for r in self.rows],
            "best_C": self.best_C,
            "best_log2_C": math.log2(self.best_C),
            "best_metric": best.metric,
            "total_iterations": self.total_iterations,
            "seconds": self.seconds,
            "held_out": self.held_out,
        }
        if self.option_names:
            d["option_grid"] = {n: list(dict.fromkeys(r.options[n] for r in self.rows)) for n in self.option_names}
            d["best_options"] = self.best_options
        if self.model is not None:
            s = self.model.summary
            d["best_model"] = {"C": self.model.C, "lam": self.model.lam, "iterations": s.get("iterations"),
                               "objective": s.get("objective"), "seconds": s.get("seconds"),
                               "converged": s.get("converged"),
                               **({"options": self.model.options} if self.model.options else {})}
        return json.loads(json.dumps(d, default=json_default))

    def c_path(self) -> dict[str, Any]:
        """The search as the best model keeps it (``model.summary["tune"]``): :meth:`to_dict`
        without the best model's own summary, so ``sparkrank report --model`` draws the C path
        the model came from (:func:`sparkrank.report.plot_metric_vs_c`)."""
        d = self.to_dict()
        d.pop("best_model", None)
        return d

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_dict` as JSON to a local path or any Hadoop URI (atomically)."""
        from ..io.fs import filesystem

        filesystem(str(path)).write_text(str(path), json.dumps(self.to_dict(), indent=1))

    def table(self) -> str:
        """A fixed-width text table: C, log2 C, the searched options, iterations, seconds, objective, metric."""
        names = self.option_names
        width = {n: max(12, len(n)) for n in names}
        head = (f"{'C':>12} {'log2C':>6} " + "".join(f"{n:>{width[n]}} " for n in names)
                + f"{'iter':>6} {'seconds':>8} {'objective':>13} {self.metric:>18}")
        lines = [head, "-" * len(head)]
        best = self.best_row
        for r in self.rows:
            metric = f"{r.metric:.5f}" + (f" ±{r.metric_std:.4f}" if self.folds > 1 else "")
            mark = ("  <- best" if r is best else "") + ("  (kept)" if r.kept else "")
            options = "".join(f"{_cell(r.options[n]):>{width[n]}} " for n in names)
            lines.append(f"{r.C:>12.6g} {math.log2(r.C):>6.2f} {options}{r.iterations:>6d} {r.seconds:>8.2f} "
                         f"{r.objective:>13.6e} {metric:>18}{mark}")
        return "\n".join(lines)


def _cell(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def row_dict(r: TuneRow) -> dict[str, Any]:
    return {"C": r.C, "log2_C": math.log2(r.C), **({"options": r.options} if r.options else {}),
            "iterations": r.iterations, "seconds": r.seconds,
            "objective": r.objective, "metric": r.metric, "metric_std": r.metric_std, "converged": r.converged,
            "fold_metrics": r.fold_metrics, "fold_iterations": r.fold_iterations, "metrics": r.metrics,
            "kept": r.kept}


def load_tune_result(path: str | Path) -> dict[str, Any]:
    """Read a JSON file written by :meth:`TuneResult.save` (as a dict), checking its kind."""
    from ..io.fs import filesystem

    path = str(path)
    try:
        d = json.loads(filesystem(path).read_text(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read tune result {path}: {exc}") from exc
    if d.get("kind") != "tune" or not d.get("rows"):
        raise ValueError(f"{path} is not a sparkrank tune result (no 'kind': 'tune' with rows)")
    return d


def combine_folds(C: float, parts: list[dict], metric: str) -> TuneRow:
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
