"""The top-k push (issue 35): capped-simplex projection, loss, solver, k = 1 identity, engines, w = 0."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sparkrank.conventions import top_k_count
from sparkrank.data.block import RankingData
from sparkrank.engines.local import LocalEngine
from sparkrank.kernels.capped_projection import project_top_k_groups, project_top_k_unit
from sparkrank.kernels.simplex_projection import project_groups, project_pair
from sparkrank.objectives.toppush import DEFAULT_TOP_FRACTION, TopPushObjective
from sparkrank.solvers.apg import apg
from sparkrank.training import train

DATA = Path(__file__).parent / "data"


# --------------------------------------------------------------------------- projection onto Ω_k


def _distance(a, b, alpha, beta):
    return 0.5 * np.sum((alpha - a) ** 2) + 0.5 * np.sum((beta - b) ** 2)


def _qp_projection(a, b, k):
    """``argmin ½‖α − a‖² + ½‖β − b‖²`` over ``Ω_k`` by cvxopt (independent oracle)."""
    from cvxopt import matrix, solvers

    na, nb = a.size, b.size
    n = na + nb
    solvers.options["show_progress"] = False
    solvers.options["abstol"] = solvers.options["reltol"] = solvers.options["feastol"] = 1e-12
    cap = np.zeros((nb, n))  # β_j − Σα/k ≤ 0
    cap[:, na:] = np.eye(nb)
    cap[:, :na] = -1.0 / k
    G = np.vstack([-np.eye(n), cap])
    A = np.concatenate([np.ones(na), -np.ones(nb)])[None, :]
    sol = solvers.qp(matrix(np.eye(n)), matrix(-np.concatenate([a, b])), matrix(G), matrix(np.zeros(n + nb)),
                     matrix(A), matrix(np.zeros(1)))
    x = np.array(sol["x"]).ravel()
    return x[:na], x[na:]


def _assert_projection(a, b, k, alpha, beta, tol=1e-9):
    """The exact optimality test of a projection onto a closed convex cone K (Moreau):
    ``x ∈ K``, ``z − x`` in the polar cone ``{max p + T_k(q) ≤ 0}``, ``⟨z − x, x⟩ = 0``."""
    scale = max(1.0, np.abs(a).max(initial=0), np.abs(b).max(initial=0))
    s = alpha.sum()
    assert np.all(alpha >= 0) and np.all(beta >= 0)
    assert np.all(beta <= s / k + tol * scale)
    assert beta.sum() == pytest.approx(s, abs=tol * scale * max(1, a.size + b.size))
    ra, rb = a - alpha, b - beta
    assert ra.max() + np.sort(rb)[::-1][:k].mean() <= tol * scale
    assert abs(ra @ alpha + rb @ beta) <= tol * scale * scale * (a.size + b.size)


def _point(rng, n, kind):
    if kind == "ties":
        return rng.integers(-2, 3, size=n).astype(float)
    if kind == "zeros":
        return np.zeros(n)
    if kind == "shifted":
        return rng.normal(size=n) * 3 + rng.choice([-3.0, 3.0])
    return rng.normal(size=n) * rng.choice([0.1, 1.0, 10.0])


@pytest.mark.parametrize("kind", ["normal", "ties", "zeros", "shifted"])
def test_capped_projection_matches_the_cvxopt_qp_with_k_at_both_ends(rng, kind):
    for trial in range(60):
        na, nb = int(rng.integers(1, 7)), int(rng.integers(1, 9))
        a, b = _point(rng, na, kind), _point(rng, nb, kind)
        k = (1, nb, int(rng.integers(1, nb + 1)))[trial % 3]
        alpha, beta, _ = project_top_k_unit(a, b, k, np.uint64(trial + 1))
        _assert_projection(a, b, k, alpha, beta)
        qa, qb = _qp_projection(a, b, k)
        # the QP's point is feasible; the distance is 1-strongly convex, so a point that is no
        # farther from (a, b) than the QP's is within √(2·(its excess)) of the QP's
        ours, theirs = _distance(a, b, alpha, beta), _distance(a, b, qa, qb)
        assert ours <= theirs + 1e-9
        gap = np.sum((alpha - qa) ** 2) + np.sum((beta - qb) ** 2)
        assert gap <= 2 * (theirs - ours) + 1e-7


def test_capped_projection_large_units_and_ties_at_the_kth_place(rng):
    for n, k in [(2000, 1), (2000, 37), (2000, 1000), (2000, 2000), (20000, 500)]:
        a = rng.normal(size=n // 4)
        b = np.round(rng.normal(size=n), 1)  # many ties, also at the k-th largest
        alpha, beta, _ = project_top_k_unit(a, b, k, np.uint64(7))
        _assert_projection(a, b, k, alpha, beta, tol=1e-8)


def test_sort_based_projection_is_the_same_point(rng):
    """The bench's O(n log n) baseline walks the events in sorted order: the KKT point again."""
    from sparkrank.kernels.capped_projection_sorted import project_top_k_unit_sorted

    for trial in range(300):
        na, nb = int(rng.integers(1, 8)), int(rng.integers(1, 11))
        kind = ("normal", "ties", "zeros", "shifted")[trial % 4]
        a, b = _point(rng, na, kind), _point(rng, nb, kind)
        k = (1, nb, int(rng.integers(1, nb + 1)))[trial % 3]
        alpha, beta = project_top_k_unit_sorted(a, b, k)
        _assert_projection(a, b, k, alpha, beta)
        free_a, free_b, _ = project_top_k_unit(a, b, k, np.uint64(trial + 1))
        np.testing.assert_allclose(alpha, free_a, atol=1e-12 * max(1.0, np.abs(a).max()))
        np.testing.assert_allclose(beta, free_b, atol=1e-12 * max(1.0, np.abs(b).max()))
    for n, k in [(3000, 1), (3000, 40), (3000, 1500), (3000, 3000)]:
        a, b = rng.normal(size=n // 4), np.round(rng.normal(size=n), 1)  # ties at the k-th place
        alpha, beta = project_top_k_unit_sorted(a, b, k)
        _assert_projection(a, b, k, alpha, beta, tol=1e-8)


def test_k_equal_1_is_li2014s_projection(rng):
    for trial in range(200):
        na, nb = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        kind = ("normal", "ties", "shifted")[trial % 3]
        a, b = _point(rng, na, kind), _point(rng, nb, kind)
        alpha, beta, _ = project_top_k_unit(a, b, 1, np.uint64(trial))
        ref_a, ref_b = project_pair(a, b)
        np.testing.assert_allclose(alpha, ref_a, atol=1e-12)
        np.testing.assert_allclose(beta, ref_b, atol=1e-12)
    # the group routine calls li2014's own for k = 1: the same bits
    sizes = rng.integers(1, 12, size=30)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    z = rng.normal(size=offsets[-1])
    is_pos = rng.random(offsets[-1]) < 0.4
    ones = np.ones(sizes.size, dtype=np.int64)
    np.testing.assert_array_equal(project_top_k_groups(z, is_pos, offsets, ones),
                                  project_groups(z, is_pos, offsets))


def test_group_projection_uses_each_groups_k_and_skips_inactive_groups(rng):
    sizes = np.array([6, 9, 4, 12, 7])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    z = rng.normal(size=offsets[-1])
    is_pos = np.zeros(offsets[-1], bool)
    is_pos[offsets[:-1]] = is_pos[offsets[:-1] + 1] = True  # two positives per group
    k = np.array([1, 3, 2, 10, 5])
    active = np.array([True, True, True, True, False])
    out = project_top_k_groups(z, is_pos, offsets, k, active)
    for g in range(sizes.size):
        s = slice(offsets[g], offsets[g + 1])
        if not active[g]:
            np.testing.assert_array_equal(out[s], 0.0)
            continue
        alpha, beta, _ = project_top_k_unit(z[s][is_pos[s]], z[s][~is_pos[s]], int(k[g]), np.uint64(1))
        np.testing.assert_allclose(out[s][is_pos[s]], alpha, atol=1e-12)
        np.testing.assert_allclose(out[s][~is_pos[s]], beta, atol=1e-12)
    with pytest.raises(ValueError, match="group 3: k = 11 must be between 1 and its 10 negatives"):
        project_top_k_groups(z, is_pos, offsets, np.array([1, 3, 2, 11, 5]), active)


def test_top_k_count_rounds_products_that_are_integers():
    np.testing.assert_array_equal(top_k_count(0.1, np.array([0, 1, 9, 10, 11, 30, 1000])), [1, 1, 1, 1, 2, 3, 100])
    np.testing.assert_array_equal(top_k_count(0.0, np.array([5, 50])), [1, 1])
    np.testing.assert_array_equal(top_k_count(1.0, np.array([7])), [7])


# --------------------------------------------------------------------------- the top-k loss


def _units(data, threshold, scope):
    g = data.groups
    offsets = g.offsets if scope == "group" else np.array([0, g.n_rows])
    for u in range(len(offsets) - 1):
        rows = np.arange(offsets[u], offsets[u + 1])
        pos, neg = rows[g.labels[rows] > threshold], rows[g.labels[rows] <= threshold]
        if pos.size and neg.size:
            yield pos, neg


def _primal_brute(data, w, C, tau, threshold=0.0, scope="group"):
    """``(λ/2)‖w‖² + (1/m) Σ_i [1 + mean(k largest p⁻) − p_i]₊²`` by sorting each unit."""
    X = data.X.toarray()
    p = X @ w
    loss, m = 0.0, 0
    for pos, neg in _units(data, threshold, scope):
        k = int(top_k_count(tau, np.array([neg.size]))[0])
        top = np.sort(p[neg])[::-1][:k].mean()
        loss += np.sum(np.maximum(1.0 + top - p[pos], 0.0) ** 2)
        m += pos.size
    return 0.5 * w @ w / (C * m) + loss / m


def _tiny(rng, n_rows=60, n_features=4, group_size=12, levels=3, integer=False):
    shape = (n_rows, n_features)
    X = rng.integers(-2, 3, size=shape).astype(float) if integer else rng.normal(size=shape)
    y = rng.integers(0, levels, size=n_rows).astype(float)
    qid = np.repeat(np.arange(n_rows // group_size + 1), group_size)[:n_rows]
    return RankingData.from_arrays(X, y, qid)


@pytest.mark.parametrize("scope", ["group", "global"])
@pytest.mark.parametrize("tau", [0.0, 0.2, 0.5, 1.0])
def test_top_k_objective_and_gradient_match_brute_force(rng, scope, tau):
    data = _tiny(rng)
    obj = TopPushObjective(LocalEngine(data), C=2.0, scope=scope, top_fraction=tau)
    for _ in range(3):
        w = rng.normal(size=data.n_features)
        assert obj.value(w) == pytest.approx(_primal_brute(data, w, 2.0, tau, scope=scope), rel=1e-12)
        h = 1e-6
        fd = np.array([(_primal_brute(data, w + h * e, 2.0, tau, scope=scope)
                        - _primal_brute(data, w - h * e, 2.0, tau, scope=scope)) / (2 * h)
                       for e in np.eye(data.n_features)])
        np.testing.assert_allclose(obj.gradient(w), fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("tau", [0.0, 0.3, 1.0])
def test_top_k_gradient_is_a_subgradient_where_scores_tie(rng, tau):
    data = _tiny(rng, integer=True)  # integer features and weights: many tied scores
    obj = TopPushObjective(LocalEngine(data), C=1.0, top_fraction=tau)
    for _ in range(5):
        w = rng.integers(-2, 3, size=data.n_features).astype(float)
        g, f = obj.gradient(w), obj.value(w)
        for d in rng.normal(size=(20, data.n_features)):
            assert obj.value(w + d) >= f + g @ d - 1e-9  # P convex: the subgradient inequality


def _qp_top_k_primal(data, C, tau, scope):
    """The top-k push as a QP through ``T_k(p) = min_t t + (1/k)Σ_j [p_j − t]₊`` (Rockafellar–Uryasev):
    variables ``(w, ξ, t, e)``: min ``(λ/2)‖w‖² + (1/m)Σξ²`` s.t. ``e_j ≥ w·x⁻_j − t_u``, ``e ≥ 0``,
    ``ξ_i ≥ 1 + t_u + (1/k)Σ_j e_j − w·x⁺_i``, ``ξ ≥ 0``.  A unit with ``k`` = all its negatives
    takes their mean directly (``t_u``, ``e`` fixed at 0): there ``t_u → −∞`` with ``e`` growing
    alike keeps every point optimal, an unbounded face on which cvxopt's interior point stalls."""
    from cvxopt import matrix, solvers

    X = data.X.toarray()
    units = list(_units(data, 0.0, scope))
    n, m, U = X.shape[1], sum(p.size for p, _ in units), len(units)
    n_neg = sum(q.size for _, q in units)
    N = n + m + U + n_neg
    P = np.zeros((N, N))
    P[:n, :n] = np.eye(n) / (C * m)
    P[n:n + m, n:n + m] = 2.0 / m * np.eye(m)
    G, h, fixed = [], [], []
    i = j = 0
    for u, (pos, neg) in enumerate(units):
        k = int(top_k_count(tau, np.array([neg.size]))[0])
        e_cols = n + m + U + j + np.arange(neg.size)
        mean = k == neg.size  # the mean of all negatives: ξ_i ≥ 1 + w·mean(x⁻) − w·x⁺_i
        if mean:
            fixed += [n + m + u, *e_cols]
        for col, r in zip(e_cols, [] if mean else neg):
            row = np.zeros(N)
            row[:n], row[n + m + u], row[col] = X[r], -1.0, -1.0
            G.append(row), h.append(0.0)
            row = np.zeros(N)
            row[col] = -1.0
            G.append(row), h.append(0.0)
        for r in pos:
            row = np.zeros(N)
            if mean:
                row[:n], row[n + i] = X[neg].mean(axis=0) - X[r], -1.0
            else:
                row[:n], row[n + m + u], row[e_cols], row[n + i] = -X[r], 1.0, 1.0 / k, -1.0
            G.append(row), h.append(-1.0)
            row = np.zeros(N)
            row[n + i] = -1.0
            G.append(row), h.append(0.0)
            i += 1
        j += neg.size
    solvers.options["show_progress"] = False
    solvers.options["abstol"] = solvers.options["reltol"] = solvers.options["feastol"] = 1e-10
    A = np.eye(N)[fixed] if fixed else None
    sol = solvers.qp(matrix(P), matrix(np.zeros(N)), matrix(np.array(G)), matrix(np.array(h)),
                     *((matrix(A), matrix(np.zeros(len(fixed)))) if fixed else ()))
    # at 1e-10 cvxopt may stop short of its tolerances ("unknown") on a point already this close
    assert sol["status"] == "optimal" or sol["relative gap"] < 1e-8, (sol["status"], sol["relative gap"])
    return float(sol["primal objective"])


@pytest.mark.parametrize("scope,tau", [("group", 0.3), ("group", 1.0), ("global", 0.1)])
def test_apg_certifies_the_qp_optimum_of_the_top_k_push(rng, scope, tau):
    data = _tiny(rng, n_rows=48, n_features=3)
    obj = TopPushObjective(LocalEngine(data), C=0.5, scope=scope, top_fraction=tau)
    res = apg(obj, tol=1e-9, max_iter=20000)
    optimum = _qp_top_k_primal(data, 0.5, tau, scope)
    bound = max(obj.primal_bound(r["dual_objective"]) for r in res.history)
    assert res.converged
    assert res.objective == pytest.approx(_primal_brute(data, res.w, 0.5, tau, scope=scope), rel=1e-12)
    # the QP's value is that of a feasible point (≥ min P), the certified bound is ≤ min P, and the
    # APG's model is at least as good as the QP's (interior-point accuracy is ~1e-6 here)
    assert bound <= res.objective <= optimum * (1 + 1e-9)
    assert bound <= optimum and res.objective == pytest.approx(optimum, rel=1e-5)


# --------------------------------------------------------------------------- k = 1 is today's TopPush


@pytest.mark.parametrize("case", sorted(json.loads((DATA / "toppush_k1_reference.json").read_text())))
def test_top_fraction_0_reproduces_the_stored_toppush_models_bit_for_bit(case):
    """``tests/data/toppush_k1_reference.json``: models trained by li2014's TopPush before the
    top-k push existed (commit d28694e), weights and objective as float hex."""
    from sparkrank.datasets import make_ranking_data

    ref = json.loads((DATA / "toppush_k1_reference.json").read_text())[case]
    data, _ = make_ranking_data(**ref["data"])
    kw = dict(ref["train"])
    kw["solver_options"] = {**kw["solver_options"], "top_fraction": 0.0}
    model = train(data, solver="toppush", **kw)
    assert [float(x).hex() for x in model.weights] == ref["weights"]
    assert float(model.summary["objective"]).hex() == ref["objective"]
    assert model.summary["iterations"] == ref["iterations"]


# --------------------------------------------------------------------------- w = 0 and the default


def _noisy_global(seed=0, n=3000):
    """One global ranking whose labels follow a linear utility, and a few negatives that score
    above every positive in every direction that helps (outliers far out on all features)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X @ np.array([2.0, 1.0, -1.0, 0.5, 0.0]) + 0.5 * rng.normal(size=n) > 2.5).astype(float)
    out = rng.choice(np.flatnonzero(y == 0), size=8, replace=False)
    X[out] = 12.0 * np.vstack([np.eye(5)[:4], -np.eye(5)[:4]])  # ±12 on each axis
    return RankingData.from_arrays(X, y)


def test_noisy_set_k1_gives_w0_with_the_reason_and_the_default_does_not():
    from sparkrank.model import convergence_report

    data = _noisy_global()
    exact = train(data, solver="toppush", solver_options={"scope": "global", "top_fraction": 0.0})
    assert not np.any(exact.weights) and exact.summary["zero_solution"]
    line, warn = convergence_report(exact)
    assert warn and "does not improve in any direction" in line and "larger top fraction" in line
    assert "top negative of the global ranking (k = 1)" in line
    default = train(data, solver="toppush", solver_options={"scope": "global"})
    assert default.options["top_fraction"] == DEFAULT_TOP_FRACTION
    assert np.any(default.weights) and "zero_solution" not in default.summary
    assert default.summary["converged"] and default.summary["stopping_value"] <= 1e-3
    line, warn = convergence_report(default)
    assert not warn and line.startswith("converged: toppush")


@pytest.mark.parametrize("seed", [0, 1])
def test_w0_exactly_while_the_positives_mean_is_in_the_negatives_reduced_hull(seed):
    """Global scope: w = 0 is optimal iff μ⁺ ∈ {X⁻ᵀβ : 0 ≤ β ≤ 1/k, Σβ = 1} (the hulls shrink with k;
    bench/_toppush_evidence.w0_threshold), so the largest such k is 1/u* of one LP."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    X = rng.random((1500, 5))
    u = X @ np.array([2.0, 1.0, -1.0, 0.5, 0.0])
    y = (u + 0.6 * u.std() * rng.normal(size=1500) > np.quantile(u, 0.8)).astype(float)
    pos = y > 0
    neg, n = X[~pos], int(np.sum(~pos))
    lp = linprog(np.r_[np.zeros(n), 1.0], A_ub=sp.hstack([sp.eye(n), -np.ones((n, 1))]).tocsr(), b_ub=np.zeros(n),
                 A_eq=np.hstack([np.vstack([neg.T, np.ones((1, n))]), np.zeros((6, 1))]),
                 b_eq=np.r_[X[pos].mean(axis=0), 1.0], bounds=[(0, None)] * (n + 1), method="highs")
    k_star = 1.0 / lp.x[-1]
    data = RankingData.from_arrays(X, y)
    for k, ranks in ((int(np.floor(k_star)), False), (int(np.ceil(1.25 * k_star)), True)):
        model = train(data, solver="toppush", solver_options={"scope": "global", "top_fraction": k / n})
        assert model.summary["converged"] and bool(np.any(model.weights)) == ranks
        assert model.summary.get("zero_solution", False) != ranks


# --------------------------------------------------------------------------- engines


@pytest.fixture(scope="module")
def top_k_parquet(tmp_path_factory):
    from sparkrank.io.files import write_parquet
    from sparkrank.datasets import make_ranking_data

    data, _ = make_ranking_data(600, 6, rows_per_group=30, n_levels=3, density=0.6, seed=5)
    directory = tmp_path_factory.mktemp("top_k")
    write_parquet(directory / "grouped.parquet", data)
    flat = RankingData.from_arrays(data.X, data.groups.labels)
    write_parquet(directory / "flat.parquet", flat)
    return data, flat, str(directory / "grouped.parquet"), str(directory / "flat.parquet")


@pytest.mark.parametrize("placement", ["executor", "driver"])
def test_spark_gives_the_local_top_k_model_bit_for_bit(spark, top_k_parquet, placement):
    from sparkrank.engines.spark import SparkEngine

    data, flat, grouped_path, flat_path = top_k_parquet
    for scope, local_data, path in (("group", data, grouped_path), ("global", flat, flat_path)):
        if scope == "global" and placement == "executor":
            continue  # one global ranking runs on the driver (test_toppush.py: the error otherwise)
        options = {"scope": scope, "top_fraction": 0.2}
        local = train(local_data, solver="toppush", C=0.5, max_iter=40, solver_options=options)
        with SparkEngine(spark.read.parquet(path), placement=placement, num_partitions=3) as engine:
            on_spark = train(engine, solver="toppush", C=0.5, max_iter=40, solver_options=options)
        assert np.any(local.weights) and on_spark.summary["iterations"] == local.summary["iterations"]
        np.testing.assert_array_equal(on_spark.weights, local.weights)
        assert on_spark.summary["objective"] == local.summary["objective"]


def test_the_w0_reason_reaches_linear_rankers_summary_on_spark(spark):
    from sparkrank.ml import LinearRanker

    data = _noisy_global(n=800)
    X = data.X.toarray() if hasattr(data.X, "toarray") else data.X
    df = spark.createDataFrame([(float(y), [float(v) for v in x]) for y, x in zip(data.groups.labels, X)],
                               ["label", "features"])
    ranker = LinearRanker(solver="toppush", groupCol="", solverOptions={"scope": "global", "top_fraction": 0.0})
    summary = ranker.fit(df).summary
    assert "w = 0 is optimal" in summary.message and "larger top fraction" in summary.message
    fitted = LinearRanker(solver="toppush", groupCol="", solverOptions={"scope": "global"}).fit(df)
    assert np.any(fitted.weights) and "w = 0" not in fitted.summary.message
    assert fitted.rankingModel.options["top_fraction"] == DEFAULT_TOP_FRACTION


def test_cli_takes_and_records_the_top_fraction(tmp_path, capsys):
    from sparkrank.cli import main
    from sparkrank.model import RankingModel

    path = tmp_path / "m.json"
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(path), "--solver", "toppush",
                 "--top-fraction", "0.25", "--max-iter", "30", "-q"]) == 0
    assert RankingModel.load(path).options["top_fraction"] == 0.25
    capsys.readouterr()
    assert main(["train", "--engine", "local", "--input", "sample:train", "--model", str(path), "--solver", "toppush",
                 "--top-fraction", "1.5"]) == 2
    assert "top_fraction=1.5: must be a finite number in [0, 1]" in capsys.readouterr().err


# --------------------------------------------------------------------------- tune over C and τ


def _tune_split():
    from sparkrank.datasets import make_ranking_data
    from sparkrank.selection import take_groups

    data, _ = make_ranking_data(900, 6, rows_per_group=30, n_levels=2, density=0.8, seed=12)
    cut = int(0.7 * data.groups.n_groups)
    return take_groups(data, np.arange(cut)), take_groups(data, np.arange(cut, data.groups.n_groups))


def test_tune_selects_c_and_top_fraction_together():
    from sparkrank.selection import tune
    from sparkrank.solvers.registry import SOLVERS

    data, valid = _tune_split()
    result = tune(data, valid=valid, solver="toppush", C_grid=[0.1, 1.0], metric="precision@5", max_iter=200,
                  option_grid={"top_fraction": [0.0, 0.3]})
    assert [(r.options["top_fraction"], r.C) for r in result.rows] == [(0.0, 0.1), (0.0, 1.0), (0.3, 0.1), (0.3, 1.0)]
    best = max(result.rows, key=lambda r: r.metric)
    assert result.best_row is best and result.best_options == best.options and result.best_C == best.C
    assert result.model.options["top_fraction"] == best.options["top_fraction"] and result.model.C == best.C
    assert evaluate_precision(result.model, valid) == pytest.approx(best.metric, abs=1e-12)
    assert "top_fraction" in result.table().splitlines()[0]
    d = result.to_dict()
    assert d["best_options"] == best.options and d["option_grid"] == {"top_fraction": [0.0, 0.3]}
    assert d["grid"] == [0.1, 1.0] and d["rows"][2]["options"] == {"top_fraction": 0.3}
    # by default the registry's values of an option left open are searched; a given one is fixed
    default = SOLVERS["toppush"].option("top_fraction").tune_values
    searched = tune(data, valid=valid, solver="toppush", C_grid=[1.0], max_iter=5)
    assert [r.options["top_fraction"] for r in searched.rows] == list(default)
    # with no metric given, TopPush is selected by what it optimises: the positives at the top
    assert searched.metric == "positives_at_top"
    assert tune(data, valid=valid, solver="tron", C_grid=[1.0], max_iter=5).metric == "pairwise_accuracy"
    fixed = tune(data, valid=valid, solver="toppush", C_grid=[1.0], max_iter=5, solver_options={"top_fraction": 0.2})
    assert [r.options for r in fixed.rows] == [{}] and fixed.model.options["top_fraction"] == 0.2
    with pytest.raises(ValueError, match="both given"):
        tune(data, valid=valid, solver="toppush", solver_options={"top_fraction": 0.2},
             option_grid={"top_fraction": [0.1]})
    with pytest.raises(ValueError, match="top_fraction=2"):
        tune(data, valid=valid, solver="toppush", option_grid={"top_fraction": [2]})


def evaluate_precision(model, data) -> float:
    from sparkrank.evaluation import evaluate_ranking

    return evaluate_ranking(data.groups, model.predict(data), ks=(5,))["precision@5"]


def test_tune_over_top_fraction_on_spark_matches_local(spark):
    from sparkrank.selection import SparkSource, tune

    data, valid = _tune_split()

    def frame(d):
        qid = np.repeat(d.qids, d.groups.group_sizes)
        X = d.X.toarray()
        return spark.createDataFrame([(float(y), int(q), [float(v) for v in x]) for y, q, x in zip(d.labels, qid, X)],
                                     ["label", "qid", "features"])

    kw = dict(solver="toppush", C_grid=[0.25, 1.0], metric="positives_at_top", max_iter=40,
              option_grid={"top_fraction": [0.1, 0.4]})
    local = tune(data, valid=valid, **kw)
    on_spark = tune(SparkSource(frame(data), engine_options={"num_partitions": 2}),
                    valid=SparkSource(frame(valid), engine_options={"num_partitions": 2}), **kw)
    assert on_spark.best_C == local.best_C and on_spark.best_options == local.best_options
    for a, b in zip(local.rows, on_spark.rows):
        assert a.options == b.options and a.iterations == b.iterations
        assert b.metric == pytest.approx(a.metric, abs=1e-12) and b.objective == a.objective
    np.testing.assert_array_equal(on_spark.model.weights, local.model.weights)
