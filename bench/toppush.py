"""TopPush (li2014) and its top-k push: time vs m, and accuracy at the top vs RankSVM.

    python bench/toppush.py [--part all|scaling|evidence|projection] [--max-rows 1000000] [--iters 10]
                            [--max-iter 300] [--compare-rows 20000] [--max-n 10000000]

Scaling: one global bipartite ranking (driver-style single block, LocalEngine) on two
synthetic data sets — ``a9a-like`` (123 binary features, 14 non-zeros per row, ~24%
positives, like LIBSVM's a9a) and ``dense`` (20 dense features, ~10% positives).  For each
m it times ``--iters`` passes of accelerated projected gradient (``tol=0``, so every run
does the same work; backtracking passes count toward the cap and into the seconds per
iteration) and a full run to a certified relative duality gap of 1e-4 (the solver's rule
since issue 11; docs/benchmarks.md's numbers were measured with li2014's relative dual change 1e-4)
capped at ``--max-iter`` passes, and prints
the growth exponent of both in m (≈1 is linear).

Comparison: on an a9a-like train/test split of ``--compare-rows`` rows each, TopPush,
L1 RankSVM (BMRM, capped at 100 cutting planes) and L2 RankSVM (TRON) trained with the
same normalised regularisation ``λ = 1e-3`` (converted to each solver's C through
:mod:`sparkrank.conventions`); test positives-at-top, AUC and precision@k.

Projection (``--part projection``): the top-k push's projection onto the capped dual set, one
unit of n negatives (n/10 positives), n from 1e3 to ``--max-n`` (1e7), for k = 1, 1% of n, n/2
and n: the best of three (two from 1e6 on) wall times of the solver's sort-free routine and of the
sort-based one, each one's growth exponent in n (sort-free, expected linear: ≈ 1) and their
ratio at the largest n.  Writes bench/results/toppush_projection.json.

Evidence (``--part evidence``): on MQ2008 Fold1 (query groups; train / vali / test),
a ``bench/_synthetic`` set as one global ranking (30,000 rows, 20 dense features, utility plus
50% noise, the top fifth positive; rows split 60/20/20) and cadata binarised at its median (one
global ranking, standardized; rows split 60/20/20): TopPush with k = 1 (li2014), the top-k push
with the solver's defaults (τ, C), and tuned (``tune`` over C and τ by positives at the top on
the validation split), against L1 and L2 RankSVM (BMRM, TRON) with C = 1 and tuned by the same
metric: positives at the top, precision@10 and AUC on the test split, whether ``w ≠ 0`` and the
optimum's certificate (converged, relative gap).  Prints a table and the ratio of positives at
the top, top-k push over the better RankSVM.

The machine is shared, so times are noisy.  Writes bench/results/toppush.json.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED_DATA, best_time, growth_exponent, table, write_result  # noqa: E402

from sparkrank.conventions import c_from_lambda  # noqa: E402
from sparkrank.data.block import RankingData  # noqa: E402
from sparkrank.io.files import read_ranking_data  # noqa: E402
from sparkrank.engines.local import LocalEngine  # noqa: E402
from sparkrank.evaluation import evaluate_ranking  # noqa: E402
from sparkrank.kernels.capped_projection import project_top_k_unit  # noqa: E402
from sparkrank.kernels.capped_projection_sorted import project_top_k_unit_sorted  # noqa: E402
from sparkrank.objectives.toppush import TopPushObjective  # noqa: E402
from sparkrank.selection import tune  # noqa: E402
from sparkrank.solvers.apg import apg  # noqa: E402
from sparkrank.solvers.registry import SOLVERS  # noqa: E402
from sparkrank.training import train  # noqa: E402

LAMBDA = 1e-3
#: precision@k cut-offs of the comparison (the test set has ~24% positives)
PRECISION_KS = (100, 1000, 4000)


def bipartite_data(kind: str, m: int, seed: int = 0) -> RankingData:
    """One global ranking with a planted linear utility, labels 1 for its top fraction.

    The planted weights depend on ``kind`` only, so different seeds give a train and a
    test sample of the same problem.
    """
    rng = np.random.default_rng(seed)
    planted = np.random.default_rng(12345)
    if kind == "a9a-like":
        n, nnz, pos_frac = 123, 14, 0.24
        w_true = planted.normal(size=n)
        cols = rng.integers(0, n, size=(m, nnz))  # with replacement; duplicates merge below (~13.3 nnz/row)
        X = sp.csr_matrix((np.ones(m * nnz), cols.ravel(), np.arange(0, m * nnz + 1, nnz)), shape=(m, n))
        X.sum_duplicates()
        X.data[:] = 1.0
    elif kind == "dense":
        n, pos_frac = 20, 0.10
        w_true = planted.normal(size=n)
        X = sp.csr_matrix(rng.random((m, n)))
    else:
        raise ValueError(kind)
    utility = X @ w_true
    utility = utility + 0.5 * utility.std() * rng.normal(size=m)
    labels = (utility > np.quantile(utility, 1.0 - pos_frac)).astype(np.float64)
    return RankingData.from_arrays(X, labels)


def toppush_c(data: RankingData) -> float:
    # li2014's λ = 1/(C m) with m positives: C = 1/(λ m)
    return 1.0 / (LAMBDA * float(np.sum(data.groups.labels > 0)))


def scaling(kind: str, sizes: list[int], iters: int, max_iter: int) -> list[dict]:
    rows = []
    for m in sizes:
        data = bipartite_data(kind, m, seed=1)
        C = toppush_c(data)
        # warm-up compiles the numba kernels outside the timings
        apg(TopPushObjective(LocalEngine(data), C=C, scope="global"), tol=0.0, max_iter=2)
        obj = TopPushObjective(LocalEngine(data), C=C, scope="global")
        t = time.perf_counter()
        fixed = apg(obj, tol=0.0, max_iter=iters)
        per_iter = (time.perf_counter() - t) / fixed.iterations
        passes = sum(1 + r["backtracks"] for r in fixed.history)
        obj = TopPushObjective(LocalEngine(data), C=C, scope="global")
        t = time.perf_counter()
        full = apg(obj, tol=1e-4, max_iter=max_iter)
        total = time.perf_counter() - t
        row = {"data": kind, "m": m, "nnz": int(data.X.nnz), "positives": obj.n_positives,
               "s_per_iter": per_iter, "s_per_pass": per_iter * fixed.iterations / passes,
               "iterations": full.iterations, "converged": full.converged, "total_s": total,
               "gap": full.history[-1]["gap"], "primal": full.objective}
        rows.append(row)
        print(table([row], list(row)).splitlines()[-1], flush=True)
    return rows


def compare(m: int, max_iter: int) -> list[dict]:
    train_data = bipartite_data("a9a-like", m, seed=2)
    test_data = bipartite_data("a9a-like", m, seed=3)
    n_pairs = train_data.groups.n_pairs
    runs = {
        "toppush": dict(solver="toppush", C=toppush_c(train_data), max_iter=max_iter,
                        solver_options={"scope": "global"}),
        "bmrm (L1 RankSVM)": dict(solver="bmrm", C=c_from_lambda(LAMBDA, n_pairs), max_iter=100),
        "tron (L2 RankSVM)": dict(solver="tron", C=c_from_lambda(LAMBDA, n_pairs)),
    }
    rows = []
    for name, kw in runs.items():
        t = time.perf_counter()
        model = train(train_data, **kw)
        seconds = time.perf_counter() - t
        rep = evaluate_ranking(test_data.groups, model.predict(test_data), ks=PRECISION_KS)
        row = {"solver": name, "train_s": seconds, "iterations": model.summary["iterations"],
               "test_pos_at_top": rep["positives_at_top"], "test_auc": rep["auc"],
               **{f"test_p@{k}": rep[f"precision@{k}"] for k in PRECISION_KS}}
        rows.append(row)
        print(table([row], list(row)).splitlines()[-1], flush=True)
    return rows


#: The projection's sizes n (negatives of one unit; n/10 positives) and its k at both ends and between.
PROJECTION_SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
PROJECTION_KS = (("k=1", lambda n: 1), ("k=1%", lambda n: max(1, n // 100)), ("k=n/2", lambda n: n // 2),
                 ("k=n", lambda n: n))


def projection_scaling(max_n: int) -> dict:
    """Seconds of one unit's projection onto Ω_k, sort-free vs sort-based, and the growth exponents in n.

    The sort-free routine is the solver's (randomized pivots, expected linear time); the sort-based
    one (:mod:`sparkrank.kernels.capped_projection_sorted`) sorts both blocks and walks the events.
    Both give the same point (tests); the exponent of the sort-free one should be ≈ 1.
    """
    rng = np.random.default_rng(0)
    sizes = [n for n in PROJECTION_SIZES if n <= max_n]
    rows = []
    for n in sizes:
        a, b = rng.normal(size=max(1, n // 10)), rng.normal(size=n)
        repeat = 3 if n < 1_000_000 else 2
        row = {"n": n}
        for name, k_of in PROJECTION_KS:
            k = k_of(n)
            row[f"free {name} s"] = best_time(lambda: project_top_k_unit(a, b, k, np.uint64(1)), repeat)
            row[f"sort {name} s"] = best_time(lambda: project_top_k_unit_sorted(a, b, k), repeat)
        rows.append(row)
        print(table([row], list(row)).splitlines()[-1], flush=True)
    exponents = {key: growth_exponent(sizes, [r[key] for r in rows]) for key in rows[0] if key != "n"}
    speedup = {name: rows[-1][f"sort {name} s"] / rows[-1][f"free {name} s"] for name, _ in PROJECTION_KS}
    return {"rows": rows, "exponents": exponents, "sorted_over_free_at_max_n": speedup}


def print_projection(result: dict) -> None:
    print(table(result["rows"], list(result["rows"][0])))
    exponents = result["exponents"]
    print("growth exponents in n (1 = linear): " + ", ".join(f"{k.replace(' s', '')} {v:.2f}"
                                                           for k, v in exponents.items()))
    n = result["rows"][-1]["n"]
    print(f"sort-based / sort-free time at n = {n:g}: "
          + ", ".join(f"{k} {v:.2f}x" for k, v in result["sorted_over_free_at_max_n"].items()))


# --------------------------------------------------------------------------- evidence

#: C values tune tries for TopPush (large C slows the dual method down) and for RankSVM.
TOPPUSH_TUNE_C = (2.0**-6, 2.0**-4, 2.0**-2, 1.0)
RANKSVM_TUNE_C = (2.0**-6, 2.0**-3, 1.0, 8.0)
EVIDENCE_METRIC = "positives_at_top"
#: The shared data beside the checkout, or beside the directory of worktrees (/work/wt/<name>).
DATA = next((d for d in (SHARED_DATA, Path(__file__).resolve().parents[3] / "shared" / "data") if d.exists()),
            SHARED_DATA)


def _row_split(X, y, seed: int) -> list[RankingData]:
    """Rows split 60/20/20 at random into train / validation / test, each one global ranking."""
    perm = np.random.default_rng(seed).permutation(len(y))
    cuts = [0, int(0.6 * len(y)), int(0.8 * len(y)), len(y)]
    return [RankingData.from_arrays(X[np.sort(perm[a:b])], y[np.sort(perm[a:b])]) for a, b in zip(cuts, cuts[1:])]


def evidence_sets() -> dict:
    """name -> (train, validation, test, TopPush scope, standardization)."""
    import pyarrow.parquet as pq
    from _synthetic import synthetic_parquet

    mq = DATA / "MQ2008" / "Fold1"
    sets = {"MQ2008 Fold1": (*[read_ranking_data(str(mq / f)) for f in ("train.txt", "vali.txt", "test.txt")],
                             "group", "none")}
    t = pq.read_table(str(synthetic_parquet(30_000, 20, n_levels=5, seed=7)))
    X = np.asarray(t.column("features").combine_chunks().flatten(), dtype=np.float64).reshape(-1, 20)
    y = (t.column("label").to_numpy() > 3).astype(np.float64)  # the top fifth of a noisy utility
    sets["synthetic, top 20%"] = (*_row_split(X, y, 1), "global", "none")
    ca = read_ranking_data(str(DATA / "cadata" / "cadata"))
    Xc = ca.X.toarray() if hasattr(ca.X, "toarray") else np.asarray(ca.X)
    yc = ca.groups.labels
    sets["cadata > median"] = (*_row_split(Xc, (yc > np.median(yc)).astype(np.float64), 0), "global", "standard")
    return sets


def _scored(name: str, how: str, model, seconds: float, test: RankingData) -> dict:
    s = model.summary
    rep = evaluate_ranking(test.groups, model.predict(test), ks=(10,))
    return {"set": name, "method": how, "tau": model.options.get("top_fraction"), "C": model.C,
            "w_nonzero": bool(np.any(model.weights)), "certified": bool(s["converged"]),
            "rel_gap": s["stopping_value"] if model.solver == "toppush" else None,
            "iterations": s["iterations"], "train_s": seconds,
            "test_pos_at_top": rep["positives_at_top"], "test_p@10": rep["precision@10"], "test_auc": rep["auc"]}


def evidence_for(name: str, tr: RankingData, va: RankingData, te: RankingData, scope: str, std: str) -> list[dict]:
    toppush = {"scope": scope}
    fits = [("TopPush k=1 (li2014)", dict(solver="toppush", solver_options={**toppush, "top_fraction": 0.0})),
            ("top-k push, defaults", dict(solver="toppush", solver_options=toppush)),
            ("L1 RankSVM, C=1", dict(solver="bmrm", C=1.0)),
            ("L2 RankSVM, C=1", dict(solver="tron", C=1.0))]
    rows = []
    for how, kw in fits:
        t = time.perf_counter()
        model = train(tr, standardization=std, **kw)
        rows.append(_scored(name, how, model, time.perf_counter() - t, te))
        print(table([rows[-1]], list(rows[-1])).splitlines()[-1], flush=True)
    tuned = [("top-k push, tuned C and tau", "toppush", TOPPUSH_TUNE_C, toppush),
             ("L1 RankSVM, tuned C", "bmrm", RANKSVM_TUNE_C, {}),
             ("L2 RankSVM, tuned C", "tron", RANKSVM_TUNE_C, {})]
    for how, solver, grid, options in tuned:
        t = time.perf_counter()
        result = tune(tr, valid=va, solver=solver, C_grid=list(grid), metric=EVIDENCE_METRIC, solver_options=options,
                      train_options={"standardization": std})
        rows.append(_scored(name, how, result.model, time.perf_counter() - t, te))
        rows[-1]["valid_pos_at_top"] = result.best_row.metric
        print(table([rows[-1]], list(rows[-1])).splitlines()[-1], flush=True)
    return rows


def evidence() -> dict:
    spec = SOLVERS["toppush"]
    out: dict = {"default_top_fraction": spec.option("top_fraction").default, "default_C": 1.0,
                 "tune_top_fractions": list(spec.option("top_fraction").tune_values), "metric": EVIDENCE_METRIC,
                 "toppush_tune_C": list(TOPPUSH_TUNE_C), "ranksvm_tune_C": list(RANKSVM_TUNE_C), "sets": {}}
    columns = ["set", "method", "tau", "C", "w_nonzero", "certified", "rel_gap", "iterations", "train_s",
               "test_pos_at_top", "test_p@10", "test_auc"]
    all_rows = []
    for name, (tr, va, te, scope, std) in evidence_sets().items():
        print(f"\n== {name}: {tr.n_rows} / {va.n_rows} / {te.n_rows} rows, scope {scope}, standardization {std}")
        rows = evidence_for(name, tr, va, te, scope, std)
        best_svm = max(r["test_pos_at_top"] for r in rows if "RankSVM" in r["method"])
        ratios = {r["method"]: (r["test_pos_at_top"] / best_svm if best_svm else float("inf"))
                  for r in rows if r["method"].startswith("top-k")}
        out["sets"][name] = {"rows": rows, "pos_at_top_over_best_ranksvm": ratios}
        all_rows += rows
    print("\n== accuracy at the top on the test splits")
    print(table(all_rows, columns))
    for name, d in out["sets"].items():
        print(f"{name}: positives at the top, top-k push / best RankSVM: "
              + ", ".join(f"{how} {ratio:.3f}" for how, ratio in d["pos_at_top_over_best_ranksvm"].items()))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("all", "scaling", "evidence", "projection"), default="all")
    ap.add_argument("--max-rows", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--compare-rows", type=int, default=20_000)
    ap.add_argument("--max-n", type=int, default=10_000_000, help="the projection's largest unit")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    result: dict = {"lambda": LAMBDA, "iters_timed": args.iters, "max_iter": args.max_iter, "scaling": {}}
    if args.part in ("all", "evidence"):
        result["evidence"] = evidence()
    if args.part == "evidence":
        print("wrote", write_result("toppush_evidence", result["evidence"]))
        return 0
    if args.part in ("all", "projection"):
        print("\n== projection onto the top-k push's dual set, one unit of n negatives and n/10 positives")
        result["projection"] = projection_scaling(args.max_n)
        print_projection(result["projection"])
    if args.part == "projection":
        print("wrote", write_result("toppush_projection", result["projection"]))
        return 0
    sizes = [m for m in (10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000) if m <= args.max_rows]
    for kind in ("a9a-like", "dense"):
        print(f"\n== {kind}: one global ranking, time per iteration and to tol 1e-4 (cap {args.max_iter})")
        rows = scaling(kind, sizes, args.iters, args.max_iter)
        print(table(rows, list(rows[0])))
        exp_iter = growth_exponent([r["m"] for r in rows], [r["s_per_iter"] for r in rows])
        exp_total = growth_exponent([r["m"] for r in rows], [r["total_s"] for r in rows])
        print(f"growth exponent in m: per iteration {exp_iter:.2f}, total {exp_total:.2f} (1 = linear)")
        result["scaling"][kind] = {"rows": rows, "exponent_per_iter": exp_iter, "exponent_total": exp_total}
    print(f"\n== accuracy at the top, a9a-like, {args.compare_rows} train / {args.compare_rows} test rows, λ = {LAMBDA}")
    rows = compare(args.compare_rows, args.max_iter)
    print(table(rows, list(rows[0])))
    tp = rows[0]["test_pos_at_top"]
    for r in rows[1:]:
        print(f"positives at top, toppush / {r['solver']}: {tp / r['test_pos_at_top'] if r['test_pos_at_top'] else float('inf'):.2f}")
    result["comparison"] = rows
    print("wrote", write_result("toppush", result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
