"""``bench/toppush.py --part evidence``: the top-k push against L1 and L2 RankSVM at the top of the list.

Every set is measured on several splits (never tuned on its test split; every split reported):

* MQ2008 Fold1, query groups (TopPush scope ``group``): train on train.txt, tune on vali.txt and
  test on test.txt, and the same with the roles of vali.txt and test.txt swapped (the only fold
  in the shared data);
* the ``bench/_synthetic`` dense set as one global ranking (30,000 rows, 20 features uniform in
  [0, 1], a linear utility plus 50 % Gaussian noise, its top fifth positive), data seeds 7, 8, 9,
  rows split 60/20/20; the planted direction is the Bayes-optimal ranker (the probability of a
  positive grows with it), and its row ("planted w") is the ceiling every method estimates;
* cadata binarised at its median, one global ranking, standardized, three 60/20/20 row splits;
* two public binary sets shipped inside scikit-learn (``pip install -e '.[bench]'``), each one
  global ranking, standardized, three 60/20/20 row splits: Wisconsin diagnostic breast cancer
  (569 rows, 30 features, malignant positive) and optical digits, the digit 8 against the rest
  (1,797 rows, 64 features);
* a synthetic set with decoys, one global ranking of 30,000 rows, 20 Gaussian features, a fifth
  positive, data seeds 0, 1, 2: most positives are shifted along feature 1, a third of them are
  instead far out along feature 2, and one negative in twenty (the decoys) is shifted further
  along feature 1 than the positives.  The direction that orders most pairs (feature 1) puts
  the decoys on top; the top of the list needs feature 2.  This is the case a top-of-list loss
  is for, the way ads and spam data put a few confident negatives above everything.

Per split: li2014's TopPush (τ = 0, on the first split of a set: its optimum is w = 0), the top-k
push with the solver's defaults, and tuned (``tune`` over C and τ by positives at the top on
the validation split), against L1 and L2 RankSVM (BMRM, TRON) tuned by the same metric; on the
test split: positives at the top (above the highest negative), precision@10 and @100, AUC; and
whether ``w ≠ 0`` and the optimum is certified.  Per set: the mean over its splits and on how
many splits each top-k push row has more positives at the top than both tuned RankSVMs.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from _common import RESULTS, SHARED_DATA, table, write_result

from sparkrank.data.block import RankingData
from sparkrank.io.files import read_ranking_data
from sparkrank.evaluation import evaluate_ranking
from sparkrank.selection import tune
from sparkrank.solvers.registry import SOLVERS
from sparkrank.training import train

#: C values tune tries for TopPush (above 1/4 the dual method often does not certify within its
#: 5,000 iterations on the global sets) and for RankSVM: the same steps of 4 from 2⁻¹⁰, so neither
#: method is held to a coarser grid (RankSVM's test positives at the top on the small public sets
#: peak near C = 2⁻¹⁰).
TOPPUSH_TUNE_C = tuple(2.0**e for e in range(-10, -1, 2))
RANKSVM_TUNE_C = tuple(2.0**e for e in range(-10, 5, 2))
EVIDENCE_METRIC = "positives_at_top"
KS = (10, 100)
COLUMNS = ["set", "split", "method", "tau", "C", "w_nonzero", "certified", "iterations", "train_s",
           "test_pos_at_top", "test_p@10", "test_p@100", "test_auc"]
METRICS = ("test_pos_at_top", "test_p@10", "test_p@100", "test_auc")
TOPK_ROWS = ("top-k push, defaults", "top-k push, tuned")
SVM_ROWS = ("L1 RankSVM, tuned", "L2 RankSVM, tuned")
#: The shared data beside the checkout, or beside the directory of worktrees (/work/wt/<name>).
DATA = next((d for d in (SHARED_DATA, Path(__file__).resolve().parents[3] / "shared" / "data") if d.exists()),
            SHARED_DATA)


class Split:
    """One train / validation / test split of a set, with TopPush's scope and the standardization."""

    def __init__(self, label, train, valid, test, scope, std, planted=None):
        self.label, self.train, self.valid, self.test = label, train, valid, test
        self.scope, self.std, self.planted = scope, std, planted


def _row_split(X, y, seed: int) -> list[RankingData]:
    """Rows split 60/20/20 at random into train / validation / test, each one global ranking."""
    perm = np.random.default_rng(seed).permutation(len(y))
    cuts = [0, int(0.6 * len(y)), int(0.8 * len(y)), len(y)]
    return [RankingData.from_arrays(X[np.sort(perm[a:b])], y[np.sort(perm[a:b])]) for a, b in zip(cuts, cuts[1:])]


def _synthetic(seed: int) -> Split:
    import pyarrow.parquet as pq
    from _synthetic import synthetic_parquet

    t = pq.read_table(str(synthetic_parquet(30_000, 20, n_levels=5, seed=seed)))
    X = np.asarray(t.column("features").combine_chunks().flatten(), dtype=np.float64).reshape(-1, 20)
    y = (t.column("label").to_numpy() > 3).astype(np.float64)  # the top fifth of a noisy utility
    planted = np.random.default_rng(seed).normal(size=20)  # synthetic_parquet's first draw: its w
    return Split(f"data seed {seed}", *_row_split(X, y, 1), "global", "none", planted)


def evidence_sets() -> dict[str, Callable[[], list[Split]]]:
    """name -> what makes its splits (called only for the sets a run measures: the public binary
    sets need scikit-learn, the others not)."""
    return {"MQ2008 Fold1": _mq2008_splits, "synthetic, top 20%": lambda: [_synthetic(s) for s in (7, 8, 9)],
            "cadata > median": _cadata_splits,
            "breast cancer (WDBC)": lambda: _row_splits(*_public_binary_sets()["breast cancer (WDBC)"]),
            "digits: 8 vs rest": lambda: _row_splits(*_public_binary_sets()["digits: 8 vs rest"]),
            "synthetic with decoys": lambda: [_decoys(s) for s in (0, 1, 2)]}


def _mq2008_splits() -> list[Split]:
    mq = DATA / "MQ2008" / "Fold1"
    tr, va, te = (read_ranking_data(str(mq / f)) for f in ("train.txt", "vali.txt", "test.txt"))
    return [Split("tune vali, test test", tr, va, te, "group", "none"),
            Split("tune test, test vali", tr, te, va, "group", "none")]


def _cadata_splits() -> list[Split]:
    ca = read_ranking_data(str(DATA / "cadata" / "cadata"))
    Xc = ca.X.toarray() if hasattr(ca.X, "toarray") else np.asarray(ca.X)
    return _row_splits(Xc, (ca.groups.labels > np.median(ca.groups.labels)).astype(np.float64))


def _row_splits(X: np.ndarray, y: np.ndarray) -> list[Split]:
    """Three seeded row splits of one global ranking, features standardized."""
    return [Split(f"row split {s}", *_row_split(X, y, s), "global", "standard") for s in (0, 1, 2)]


@functools.cache  # both sets' splits come from one load
def _public_binary_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """WDBC (malignant = 1) and optical digits (8 = 1), from the copies inside scikit-learn."""
    try:
        from sklearn.datasets import load_breast_cancer, load_digits
    except ImportError as e:  # the bench extra; say how to get it instead of a trace
        raise SystemExit("bench/toppush.py --part evidence reads two public sets shipped with scikit-learn: "
                         "pip install -e '.[bench]'") from e
    bc, digits = load_breast_cancer(), load_digits()
    return {"breast cancer (WDBC)": (bc.data, (bc.target == 0).astype(np.float64)),
            "digits: 8 vs rest": (digits.data.astype(np.float64), (digits.target == 8).astype(np.float64))}


def _decoys(seed: int, m: int = 30_000, d: int = 20) -> Split:
    """One global ranking whose top is decided by a direction most pairs do not need (module doc)."""
    rng = np.random.default_rng(seed)
    n_pos = m // 5
    X = rng.normal(size=(m, d))
    pos = np.zeros(m, dtype=bool)
    pos[rng.permutation(m)[:n_pos]] = True
    far = pos & (rng.random(m) < 0.3)
    X[pos & ~far, 0] += 1.5
    X[far, 1] += 5.0
    X[~pos & (rng.random(m) < 0.05), 0] += 3.0  # the decoys
    return Split(f"data seed {seed}", *_row_split(X, pos.astype(np.float64), seed), "global", "none")


def _test_metrics(test: RankingData, scores: np.ndarray) -> dict:
    rep = evaluate_ranking(test.groups, scores, ks=KS)
    return {"test_pos_at_top": rep["positives_at_top"], **{f"test_p@{k}": rep[f"precision@{k}"] for k in KS},
            "test_auc": rep["auc"]}


def _scored(name: str, split: Split, how: str, model, seconds: float) -> dict:
    s = model.summary
    return {"set": name, "split": split.label, "method": how, "tau": model.options.get("top_fraction"),
            "C": model.C, "w_nonzero": bool(np.any(model.weights)), "certified": bool(s["converged"]),
            "rel_gap": s["stopping_value"] if model.solver == "toppush" else None,
            "iterations": s["iterations"], "train_s": seconds,
            **_test_metrics(split.test, model.predict(split.test))}


def _report(rows: list[dict], row: dict) -> None:
    rows.append(row)
    print(table([row], COLUMNS).splitlines()[-1], flush=True)


def evidence_for(name: str, split: Split, first: bool) -> list[dict]:
    toppush = {"scope": split.scope}
    rows: list[dict] = []
    if split.planted is not None:
        _report(rows, {"set": name, "split": split.label, "method": "planted w (Bayes-optimal ranker)",
                       **_test_metrics(split.test, np.asarray(split.test.X @ split.planted).ravel())})
    fits = [("top-k push, defaults", dict(solver="toppush", solver_options=toppush))]
    if first:
        fits.insert(0, ("TopPush k=1 (li2014)", dict(solver="toppush", solver_options={**toppush, "top_fraction": 0.0})))
    for how, kw in fits:
        t = time.perf_counter()
        model = train(split.train, standardization=split.std, **kw)
        _report(rows, _scored(name, split, how, model, time.perf_counter() - t))
    tuned = [("top-k push, tuned", "toppush", TOPPUSH_TUNE_C, toppush),
             ("L1 RankSVM, tuned", "bmrm", RANKSVM_TUNE_C, {}),
             ("L2 RankSVM, tuned", "tron", RANKSVM_TUNE_C, {})]
    for how, solver, grid, options in tuned:
        t = time.perf_counter()
        try:
            result = tune(split.train, valid=split.valid, solver=solver, C_grid=list(grid), metric=EVIDENCE_METRIC,
                          solver_options=options, train_options={"standardization": split.std})
        except Exception as e:  # a solver's failure is a result too: record it and go on
            _report(rows, {"set": name, "split": split.label, "method": how, "error": f"{type(e).__name__}: {e}"})
            continue
        row = _scored(name, split, how, result.model, time.perf_counter() - t)
        row["valid_pos_at_top"] = result.best_row.metric
        _report(rows, row)
    return rows


def summarize(rows: list[dict]) -> dict:
    """Means over a set's splits, and per top-k row the splits where it beats both tuned RankSVMs."""
    splits = sorted({r["split"] for r in rows}, key=[r["split"] for r in rows].index)
    by = {(r["split"], r["method"]): r for r in rows if "error" not in r}
    methods = sorted({r["method"] for r in rows}, key=[r["method"] for r in rows].index)
    means = {m: {k: float(np.mean([by[s, m][k] for s in splits if (s, m) in by])) for k in METRICS}
             for m in methods if any((s, m) in by for s in splits)}
    wins = {}
    for m in TOPK_ROWS:
        best_svm = [max((by[s, svm]["test_pos_at_top"] for svm in SVM_ROWS if (s, svm) in by), default=0.0)
                    for s in splits]
        wins[m] = {"more_pos_at_top_than_both": sum(by[s, m]["test_pos_at_top"] > b for s, b in zip(splits, best_svm)),
                   "splits": len(splits),
                   "ratio_to_best_ranksvm": [by[s, m]["test_pos_at_top"] / b if b else None
                                             for s, b in zip(splits, best_svm)]}
    return {"means": means, "top_k_vs_tuned_ranksvm": wins}


def _merged(new: dict) -> dict:
    """``new`` over the sets of the evidence written before, so a run of some sets keeps the others."""
    path = RESULTS / "toppush_evidence.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    return {**old, **new, "sets": {**old.get("sets", {}), **new["sets"]}}


def evidence(only: list[str] | None = None) -> dict:
    """Every set's rows and summary, merged over the sets of the last run that ``only`` (the names
    of the sets to measure; default all) leaves out."""
    spec = SOLVERS["toppush"]
    out: dict = {"default_top_fraction": spec.option("top_fraction").default, "default_C": spec.default_C,
                 "tune_top_fractions": list(spec.option("top_fraction").tune_values), "metric": EVIDENCE_METRIC,
                 "toppush_tune_C": list(TOPPUSH_TUNE_C), "ranksvm_tune_C": list(RANKSVM_TUNE_C), "sets": {}}
    all_rows = []
    sets = evidence_sets()
    if set(only or ()) - set(sets):
        raise SystemExit(f"no evidence set is named {sorted(set(only) - set(sets))}; the sets: {', '.join(sets)}")
    for name, make_splits in sets.items():
        if only and name not in only:
            continue
        splits, rows = make_splits(), []
        for i, split in enumerate(splits):
            print(f"\n== {name}, {split.label}: {split.train.n_rows} / {split.valid.n_rows} / {split.test.n_rows} "
                  f"rows, scope {split.scope}, standardization {split.std}")
            print("  ".join(COLUMNS))
            rows += evidence_for(name, split, first=i == 0)
            out["sets"][name] = {"rows": rows, "toppush_tune_C": list(TOPPUSH_TUNE_C),  # per set: runs merge
                                 "ranksvm_tune_C": list(RANKSVM_TUNE_C), **summarize(rows)}
            write_result("toppush_evidence", _merged(out))  # what is measured so far survives a later failure
        all_rows += rows
    print("\n== accuracy at the top on the test splits")
    print(table(all_rows, COLUMNS))
    print("\n== means over the splits")
    means = [{"set": name, "method": m, **v} for name, d in out["sets"].items() for m, v in d["means"].items()]
    print(table(means, ["set", "method", *METRICS]))
    for name, d in out["sets"].items():
        print(f"{name}: splits where the top-k push has more positives at the top than both tuned RankSVMs: "
              + ", ".join(f"{m} {w['more_pos_at_top_than_both']}/{w['splits']}"
                          for m, w in d["top_k_vs_tuned_ranksvm"].items()))
    return _merged(out)


def w0_threshold(data: RankingData) -> dict:
    """The largest k whose top-k push has the optimum w = 0 on one global ranking, by one LP.

    The directional derivative of the primal at 0 along v is ``2·(T_k(X⁻v) − v·μ⁺)`` (μ⁺ the
    positives' mean), and ``T_k(X⁻v)`` is the support function of the reduced convex hull
    ``H_k = {X⁻ᵀβ : β ∈ Δ_k}``: w = 0 is optimal exactly when ``μ⁺ ∈ H_k``.  The hulls shrink as k
    grows, so ``k* = 1/u*`` with ``u* = min{u : X⁻ᵀβ = μ⁺, Σβ = 1, 0 ≤ β ≤ u}``: every k ≤ k* gives
    w = 0.  Shifts and scalings of the features move μ⁺ and H_k alike, so standardization does not
    change k*.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
    pos = data.groups.labels > 0
    Xn, n = X[~pos], int(np.sum(~pos))
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    a_eq = np.hstack([np.vstack([Xn.T, np.ones((1, n))]), np.zeros((X.shape[1] + 1, 1))])
    b_eq = np.concatenate([X[pos].mean(axis=0), [1.0]])
    a_ub = sp.hstack([sp.eye(n), -np.ones((n, 1))]).tocsr()
    r = linprog(cost, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=b_eq, bounds=[(0, None)] * (n + 1),
                method="highs")
    k_star = 1.0 / r.x[-1] if r.status == 0 else 0.0  # infeasible: μ⁺ outside even H_1, every k ranks
    return {"negatives": n, "k_star": k_star, "tau_star": k_star / n}


def w0_thresholds() -> dict:
    """``w0_threshold`` of every global split's training rows."""
    out = {}
    for name, make_splits in evidence_sets().items():
        for split in make_splits():
            if split.scope == "global":
                out[f"{name}, {split.label}"] = row = w0_threshold(split.train)
                print(f"{name}, {split.label}: w = 0 for k <= {row['k_star']:.1f} of {row['negatives']} negatives "
                      f"(tau* = {row['tau_star']:.4f})", flush=True)
    return out
