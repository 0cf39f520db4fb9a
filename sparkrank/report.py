"""Pictures of a training run or a model selection, as PNG files (matplotlib, Agg backend).

* :func:`plot_convergence`: objective and stopping measure (each iteration record's: gradient
  ratio for TRON/NCG, gap for BMRM, relative duality gap for TopPush) per iteration and over wall time, log scale, from ``model.summary["history"]``; several
  models overlay in one figure.
* :func:`plot_metric_vs_c`: validation metric against ``log2 C`` from a
  :func:`sparkrank.selection.tune` result (fold spread as error bars, the best ``C``
  marked), with the solver iterations per ``C`` below it.
* :func:`plot_score_distribution`: the model's scores grouped by label level (box plots,
  with counts).  Only the order of scores *inside* a query matters to a ranker, so by
  default each score is shown relative to its query's mean score; ``centered=False``
  shows raw ``w·x``.

Every figure is ``FIGSIZE`` at ``DPI`` (1200×800 px) with titles, axis labels with units
and legends.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .data.block import RankingData
from .solvers.result import accepted_records

FIGSIZE = (12.0, 8.0)
DPI = 100
#: At most this many rows are drawn in the score distribution (a uniform sample of rows).
MAX_ROWS = 200_000
#: Labels with more distinct values than this are binned into this many quantile bins.
MAX_LEVELS = 12


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path | str:
    """Write the PNG to a local path or any Hadoop URI (atomically); returns the path (a
    ``Path`` when local)."""
    import io

    import matplotlib.pyplot as plt

    from .io import uri as U
    from .io.fs import filesystem

    path = str(path)
    buffer = io.BytesIO()
    # no bbox_inches="tight": it would change the pixel size from the promised FIGSIZE × DPI
    fig.savefig(buffer, dpi=DPI, format="png")
    plt.close(fig)
    fs = filesystem(path)
    fs.mkdirs(U.parent(path))
    fs.write_bytes(path, buffer.getvalue())
    return path if U.has_scheme(path) else Path(path)


# ----------------------------------------------------------------------------- convergence


def _history_series(history: Sequence[dict]) -> tuple[dict[str, np.ndarray], str]:
    """Series of accepted iterations (objective and stopping measure) and the measure's name."""
    recs = accepted_records(list(history))
    if not recs:
        raise ValueError("the model has no iteration history (trained with 0 iterations or by an old version)")
    out = {
        "iter": np.array([r.iteration for r in recs], dtype=float),
        "seconds": np.array([r.seconds for r in recs], dtype=float),
        "objective": np.array([r.objective for r in recs], dtype=float),
        "measure": np.array([r.measure for r in recs], dtype=float),
    }
    return out, recs[0].measure_name


#: Axis names of the stopping measures.
MEASURE_NAMES = {"grad_ratio": "‖∇f(w)‖/‖∇f(0)‖", "gap": "gap", "relative_gap": "relative gap"}


def _positive(v: np.ndarray) -> np.ndarray:
    """Log axes cannot show values <= 0; they become gaps in the line."""
    return np.where(v > 0, v, np.nan)


def plot_convergence(models: Sequence[tuple[str, Any]], path: str | Path, *, title: str | None = None) -> Path:
    """Objective and gradient norm / gap against iterations and seconds.

    Parameters
    ----------
    models : sequence of (label, RankingModel or history list)
        Runs to overlay; a label names each in the legend.
    path : str or Path
        PNG to write.
    title : str, optional

    Returns
    -------
    Path
    """
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=FIGSIZE, dpi=DPI, sharex="col")
    measures = set()
    all_positive = True  # a dual objective can be negative: then the top row stays linear
    for label, model in models:
        history = model if isinstance(model, (list, tuple)) else model.summary.get("history", [])
        s, measure = _history_series(history)
        if not isinstance(model, (list, tuple)) and model.summary.get("tune"):
            label += " (tune's refit, warm-started: its C path is metric_vs_C.png)"
        measures.add(measure)
        finite = s["objective"][np.isfinite(s["objective"])]
        all_positive &= bool(np.all(finite > 0))
        name = label
        if finite.size == 0:  # e.g. RankNCG's fast gradient does not evaluate the objective
            name += " (objective not recorded)"
        for col, x in enumerate(("iter", "seconds")):
            line, = axes[0, col].plot(s[x], s["objective"], marker="o", ms=3, label=name)
            if measure:
                axes[1, col].plot(s[x], _positive(s["measure"]), marker="o", ms=3, color=line.get_color(),
                                  label=f"{label} ({MEASURE_NAMES.get(measure, measure)})")
    from matplotlib.ticker import MaxNLocator

    # iterations are whole numbers: a short (warm-started) run gets ticks 1, 2, not 1.0, 1.2, ...
    axes[1, 0].xaxis.set_major_locator(MaxNLocator(integer=True))
    lower = " / ".join(MEASURE_NAMES.get(m, m) for m in sorted(m for m in measures if m)) or "(no progress measure)"
    for col, xlabel in enumerate(("iteration", "wall time since solver start (s)")):
        axes[0, col].set_ylabel("training objective" + (", log scale" if all_positive else ""))
        axes[1, col].set_ylabel(f"{lower}, log scale")
        axes[1, col].set_xlabel(xlabel)
        for row in range(2):
            ax = axes[row, col]
            if row == 1 or all_positive:
                ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=9)
    axes[0, 0].set_title("objective per iteration")
    axes[0, 1].set_title("objective over time")
    axes[1, 0].set_title("gradient norm / gap per iteration")
    axes[1, 1].set_title("gradient norm / gap over time")
    fig.suptitle(title or "Solver convergence (each solver's own objective, e.g. TRON ½‖w‖² + C·Σ loss, "
                 "BMRM λ‖w‖² + mean loss)", fontsize=13)
    fig.tight_layout()
    return _save(fig, path)


# ----------------------------------------------------------------------------- metric vs C


def plot_metric_vs_c(tune_result: dict | Any, path: str | Path, *, title: str | None = None) -> Path:
    """Validation metric against ``log2 C`` with the best ``C`` marked; iterations per ``C`` below.

    Parameters
    ----------
    tune_result : dict or TuneResult
        A :class:`sparkrank.selection.TuneResult` or its :meth:`~TuneResult.to_dict` /
        saved JSON.
    path : str or Path
    title : str, optional
    """
    plt = _pyplot()
    d = tune_result if isinstance(tune_result, dict) else tune_result.to_dict()
    rows, others = _rows_by_options(d)
    x = np.array([math.log2(r["C"]) for r in rows])
    metric = np.array([r["metric"] for r in rows], dtype=float)
    std = np.array([r.get("metric_std", 0.0) for r in rows], dtype=float)
    iters = np.array([r["iterations"] for r in rows], dtype=float)
    secs = np.array([r["seconds"] for r in rows], dtype=float)
    name = d["metric"]
    best_x = math.log2(d["best_C"])
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=FIGSIZE, dpi=DPI, sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    how = f"group-wise {d['folds']}-fold mean" if d.get("mode") == "kfold" else "validation set"
    if d.get("mode") == "kfold":
        # folds differ mostly by a constant offset (some folds hold easier queries), so the
        # per-fold curves show how C matters better than error bars alone
        per_fold = np.array([r.get("fold_metrics", []) for r in rows], dtype=float)
        for i in range(per_fold.shape[1] if per_fold.ndim == 2 else 0):
            ax.plot(x, per_fold[:, i], color="tab:blue", lw=0.8, alpha=0.35,
                    label="single folds" if i == 0 else None)
        ax.fill_between(x, metric - std, metric + std, color="tab:blue", alpha=0.12, label="±1 s.d. over folds")
    best_options = "".join(f", {k}={v:g}" for k, v in d.get("best_options", {}).items())
    ax.plot(x, metric, marker="o", color="tab:blue", lw=2, label=f"{name} ({how}{best_options})")
    for group in others:  # the other searched option settings, thin
        label = ", ".join(f"{k}={v:g}" for k, v in group[0]["options"].items())
        ax.plot([math.log2(r["C"]) for r in group], [r["metric"] for r in group], lw=1, alpha=0.6, label=label)
    kept = np.array([bool(r.get("kept", False)) for r in rows])
    if kept.any():
        ax.plot(x[kept], metric[kept], marker="o", ms=9, mfc="white", color="tab:blue", ls="none",
                label="kept the previous C's model (warm start met the stopping rule; try a smaller tol)")
    ax.axvline(best_x, color="tab:red", ls="--", alpha=0.6)
    ax.plot([best_x], [d["best_metric"]], marker="*", ms=18, color="tab:red", ls="none",
            label=f"best C = $2^{{{best_x:g}}}$ = {d['best_C']:.4g}: {d['best_metric']:.4f}")
    ax.set_ylabel(f"validation {name} (higher is better)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=9, framealpha=0.85)
    ax.set_title(f"{name} vs C — {d['solver']}, {how}, {'cold' if d.get('cold_start') else 'warm'} starts")
    width = 0.4 if len(x) < 2 else 0.4 * float(np.min(np.diff(x)))
    ax2.bar(x, iters, width=width, color="tab:gray", label="solver iterations (all folds)")
    ax2.set_ylabel("solver iterations")
    ax2.set_xlabel("log2 C  (C: LIBLINEAR-convention weight of the summed pair loss)")
    ax2.grid(True, axis="y", alpha=0.3)
    t = ax2.twinx()
    t.plot(x, secs, color="tab:orange", marker=".", label="training time (s)")
    t.set_ylabel("training time (s)")
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = t.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=9)
    fig.suptitle(title or "Model selection over C", fontsize=14)
    fig.tight_layout()
    return _save(fig, path)


def _rows_by_options(d: dict) -> tuple[list[dict], list[list[dict]]]:
    """The rows of the best option setting, and those of every other setting (a tune over solver
    options, e.g. TopPush's top fraction, has one C path per setting)."""
    if not d.get("best_options"):
        return d["rows"], []
    groups: dict[str, list[dict]] = {}
    for r in d["rows"]:
        groups.setdefault(json.dumps(r.get("options", {}), sort_keys=True), []).append(r)
    best = groups.pop(json.dumps(d["best_options"], sort_keys=True))
    return best, list(groups.values())


# ----------------------------------------------------------------------------- scores by label


def _levels(labels: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Level index per row and the level names; many distinct labels become quantile bins."""
    values = np.unique(labels)
    if values.size <= MAX_LEVELS:
        return np.searchsorted(values, labels), [f"{v:g}" for v in values]
    edges = np.unique(np.quantile(labels, np.linspace(0, 1, MAX_LEVELS + 1)))
    idx = np.clip(np.searchsorted(edges, labels, side="right") - 1, 0, edges.size - 2)
    return idx, [f"[{edges[i]:.3g}, {edges[i + 1]:.3g}{']' if i == edges.size - 2 else ')'}"
                 for i in range(edges.size - 1)]


def plot_score_distribution(
    model,
    data: RankingData,
    path: str | Path,
    *,
    centered: bool = True,
    title: str | None = None,
    seed: int = 0,
) -> Path:
    """Box plots of the model's scores per label level.

    Parameters
    ----------
    model : RankingModel
    data : RankingData
        Labelled rows (more than :data:`MAX_ROWS` are subsampled uniformly).
    path : str or Path
    centered : bool
        Subtract each query's mean score (only within-query order matters to a ranker).
    title : str, optional
    seed : int
        Subsampling seed.
    """
    plt = _pyplot()
    if data.n_features > model.n_features:
        data_X = data.X[:, : model.n_features]
    else:
        data_X = data.with_features(model.n_features).X
    scores = model.predict(data_X)
    labels = data.labels
    if centered:
        g = data.groups
        sizes = np.diff(g.offsets)
        sums = np.add.reduceat(scores, g.offsets[:-1][sizes > 0]) if scores.size else np.zeros(0)
        means = np.zeros(sizes.size)
        means[sizes > 0] = sums / sizes[sizes > 0]
        scores = scores - np.repeat(means, sizes)
    n = scores.size
    if n == 0:
        raise ValueError("no rows to plot")
    if n > MAX_ROWS:
        keep = np.sort(np.random.default_rng(seed).choice(n, MAX_ROWS, replace=False))
        scores, labels = scores[keep], labels[keep]
    level, names = _levels(labels)
    groups = [scores[level == i] for i in range(len(names))]
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    positions = np.arange(1, len(names) + 1)
    ax.boxplot([g if g.size else [np.nan] for g in groups], positions=positions, widths=0.6, showfliers=False,
               patch_artist=True, boxprops={"facecolor": "tab:blue", "alpha": 0.35},
               medianprops={"color": "black"})
    means = [float(g.mean()) if g.size else np.nan for g in groups]
    ax.plot(positions, means, "D", color="tab:red", label="mean score of the level")
    ax.set_xticks(positions)
    ax.set_xticklabels([f"{nm}\n(n={g.size:,})" for nm, g in zip(names, groups)])
    ax.set_xlabel("label level (relevance grade); n = rows" + (" (sampled)" if n > MAX_ROWS else ""))
    ax.set_ylabel("score w·x minus the query's mean score" if centered else "score w·x")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left")
    ax.set_title(title or f"Score distribution by label level — {model.solver}, C={model.C:.4g} "
                          f"(boxes: quartiles, whiskers: 1.5 IQR, outliers hidden)")
    fig.tight_layout()
    return _save(fig, path)


# ----------------------------------------------------------------------------- bundles


def write_training_report(model, directory: str | Path, *, data: RankingData | None = None,
                          label: str | None = None) -> list[Path]:
    """``convergence.png`` (with two or more iterations) and, given data, ``scores_by_label.png``."""
    from .io.uri import join

    directory = str(directory)
    out = []
    # a warm-started model (tune) may have run 0-1 iterations: one point is no convergence picture
    if len(accepted_records(model.summary.get("history", []))) >= 2:
        name = label or f"{model.solver} C={model.C:.4g}"
        out.append(plot_convergence([(name, model)], join(directory, "convergence.png")))
    if data is not None:
        out.append(plot_score_distribution(model, data, join(directory, "scores_by_label.png")))
    return out


def write_tune_report(result, directory: str | Path, *, data: RankingData | None = None) -> list[Path]:
    """``metric_vs_C.png`` and, for the best model, ``convergence.png`` (if it ran two or more
    iterations; warm starts often need fewer) and ``scores_by_label.png`` (given data)."""
    from .io.uri import join

    directory = str(directory)
    out = [plot_metric_vs_c(result, join(directory, "metric_vs_C.png"))]
    model = getattr(result, "model", None)
    if model is not None:
        out += write_training_report(model, directory, data=data, label=f"best: {model.solver} C={model.C:.4g}")
    return out
