"""TopPush (li2014) and its top-k push: time vs m, and accuracy at the top vs RankSVM.

    python bench/toppush.py [--part all|scaling|evidence|projection|w0-threshold] [--max-rows 1000000] [--iters 10]
                            [--max-iter 300] [--compare-rows 20000] [--max-n 10000000] [--sets NAME ...]

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

w = 0 threshold (``--part w0-threshold``): on every global split of the evidence, the largest k
whose top-k push has the optimum w = 0 (one LP; ``bench/_toppush_evidence.py``).  Writes
bench/results/toppush_w0_threshold.json.

Evidence (``--part evidence``): see ``bench/_toppush_evidence.py`` (several splits of MQ2008 Fold1,
a noisy synthetic set and cadata; the top-k push against tuned L1 and L2 RankSVM).  Writes
bench/results/toppush_evidence.json.

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
from _common import best_time, growth_exponent, table, write_result  # noqa: E402
from _toppush_evidence import evidence, w0_thresholds  # noqa: E402

from sparkrank.conventions import c_from_lambda  # noqa: E402
from sparkrank.data.block import RankingData  # noqa: E402
from sparkrank.engines.local import LocalEngine  # noqa: E402
from sparkrank.evaluation import evaluate_ranking  # noqa: E402
from sparkrank.kernels.capped_projection import project_top_k_unit  # noqa: E402
from sparkrank.kernels.capped_projection_sorted import project_top_k_unit_sorted  # noqa: E402
from sparkrank.objectives.toppush import TopPushObjective  # noqa: E402
from sparkrank.solvers.apg import apg  # noqa: E402
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
    # from 1e5 on both blocks are far out of cache: the exponent without the caches' step
    big = [r for r in rows if r["n"] >= 100_000]
    exponents_big = ({key: growth_exponent([r["n"] for r in big], [r[key] for r in big]) for key in exponents}
                     if len(big) > 1 else {})
    speedup = {name: rows[-1][f"sort {name} s"] / rows[-1][f"free {name} s"] for name, _ in PROJECTION_KS}
    return {"rows": rows, "exponents": exponents, "exponents_from_1e5": exponents_big,
            "sorted_over_free_at_max_n": speedup}


def print_projection(result: dict) -> None:
    print(table(result["rows"], list(result["rows"][0])))
    for label, key in (("", "exponents"), (" from 1e5 (out of cache)", "exponents_from_1e5")):
        if result[key]:
            print(f"growth exponents in n{label} (1 = linear): "
                  + ", ".join(f"{k.replace(' s', '')} {v:.2f}" for k, v in result[key].items()))
    n = result["rows"][-1]["n"]
    print(f"sort-based / sort-free time at n = {n:g}: "
          + ", ".join(f"{k} {v:.2f}x" for k, v in result["sorted_over_free_at_max_n"].items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("all", "scaling", "evidence", "projection", "w0-threshold"), default="all")
    ap.add_argument("--max-rows", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--compare-rows", type=int, default=20_000)
    ap.add_argument("--max-n", type=int, default=10_000_000, help="the projection's largest unit")
    ap.add_argument("--sets", nargs="+", metavar="NAME", help="evidence: the sets to measure, each name one "
                    "argument (default all); their rows replace those sets in bench/results/toppush_evidence.json, "
                    "the other sets are kept")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    result: dict = {"lambda": LAMBDA, "iters_timed": args.iters, "max_iter": args.max_iter, "scaling": {}}
    if args.part in ("all", "w0-threshold"):
        print("\n== the largest k whose top-k push is w = 0 (the positives' mean in the negatives' reduced hull)")
        result["w0_threshold"] = w0_thresholds()
    if args.part == "w0-threshold":
        print("wrote", write_result("toppush_w0_threshold", result["w0_threshold"]))
        return 0
    if args.part in ("all", "evidence"):
        result["evidence"] = evidence(args.sets)
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
