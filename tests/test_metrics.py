"""Tests of sparkrank.evaluation.metrics against brute-force oracles and hand-computed values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkrank.data.groups import QueryGroups
from sparkrank.evaluation import (
    auc,
    auc_per_group,
    evaluate_ranking,
    mean_ndcg,
    ndcg_at,
    pairwise_accuracy,
    pairwise_accuracy_per_group,
    per_group_metrics,
)

# "selection" is the default; "pairs" is the O(m²) enumeration (other structures are covered
# by the counting tests and only add numba compile time here)
METHODS = ("selection", "pairs")


# --------------------------------------------------------------------------- oracles


def split(groups: QueryGroups, scores) -> list[tuple[list[float], list[float]]]:
    """(labels, scores) of every group as plain Python lists."""
    out = []
    for g in range(groups.n_groups):
        lo, hi = int(groups.offsets[g]), int(groups.offsets[g + 1])
        out.append(([float(y) for y in groups.labels[lo:hi]], [float(p) for p in scores[lo:hi]]))
    return out


def oracle_pair_counts(labels, scores):
    """(pairs, correct, tied) by looping over every ordered pair of rows."""
    pairs = correct = tied = 0
    for u in range(len(labels)):
        for lo in range(len(labels)):
            if labels[u] > labels[lo]:
                pairs += 1
                if scores[u] > scores[lo]:
                    correct += 1
                elif scores[u] == scores[lo]:
                    tied += 1
    return pairs, correct, tied


def oracle_pessimistic_ranking(labels, scores):
    """Repeatedly take the highest remaining score; among equal scores the lowest label."""
    remaining = list(range(len(labels)))
    ranking = []
    while remaining:
        best = remaining[0]
        for i in remaining[1:]:
            if scores[i] > scores[best] or (scores[i] == scores[best] and labels[i] < labels[best]):
                best = i
        ranking.append(best)
        remaining.remove(best)
    return ranking


def oracle_discount(rank: int, discount: str) -> float:
    if discount == "letor":
        return 1.0 / math.log2(max(2, rank))
    return 1.0 / math.log2(rank + 1)


def oracle_dcg(ranked_labels, k, discount):
    return sum((2.0 ** y - 1.0) * oracle_discount(i + 1, discount) for i, y in enumerate(ranked_labels[:k]))


def oracle_ndcg(labels, scores, k, discount, zero_idcg):
    if not labels:
        return math.nan
    ranking = oracle_pessimistic_ranking(labels, scores)
    dcg = oracle_dcg([labels[i] for i in ranking], k, discount)
    idcg = oracle_dcg(sorted(labels, reverse=True), k, discount)
    if idcg == 0.0:
        return {"zero": 0.0, "one": 1.0, "skip": math.nan}[zero_idcg]
    return dcg / idcg


def oracle_mean_ndcg_query(labels, scores, discount, zero_idcg):
    values = [oracle_ndcg(labels, scores, k, discount, zero_idcg) for k in range(1, len(labels) + 1)]
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def nanmean(values):
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def assert_close(actual, expected, rel=1e-12):
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=rel, atol=1e-14, equal_nan=True)


# --------------------------------------------------------------------------- strategies


@st.composite
def grouped_data(draw, nonnegative: bool = False, max_groups: int = 7, max_size: int = 8):
    """Random groups with ties in scores and labels (small pools), real or integer labels."""
    if nonnegative:
        label_pool = draw(st.sampled_from([[0.0], [0.0, 1.0], [0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 0.25, 1.5, 2.75]]))
    else:
        label_pool = draw(st.sampled_from([[0.0, 1.0], [-1.5, 0.0, 0.3, 2.0], [-3.0, 1.0, 4.5, 7.25, 9.0]]))
    score_pool = draw(st.sampled_from([[0.0], [0.0, 1.0], [-1.0, 0.0, 0.5, 2.0, 3.0], [-2.5, -0.1, 0.0, 0.7]]))
    n_groups = draw(st.integers(1, max_groups))
    sizes = draw(st.lists(st.integers(0, max_size), min_size=n_groups - 1, max_size=n_groups - 1))
    # QueryGroups.from_offsets cannot build a trailing empty group (np.add.reduceat index
    # out of bounds), so empty groups are only generated before a non-empty last group
    sizes.append(draw(st.integers(1, max_size)))
    m = sum(sizes)
    labels = draw(st.lists(st.sampled_from(label_pool), min_size=m, max_size=m))
    if draw(st.booleans()):
        scores = draw(st.lists(st.sampled_from(score_pool), min_size=m, max_size=m))
    else:
        scores = draw(st.lists(st.floats(-5, 5, allow_nan=False, width=32), min_size=m, max_size=m))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return QueryGroups.from_offsets(np.array(labels, dtype=float), offsets), np.array(scores, dtype=float)


FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- pairwise metrics


@FAST
@given(data=grouped_data(), method=st.sampled_from(METHODS))
def test_pairwise_metrics_match_brute_force(data, method):
    groups, scores = data
    per_group = [oracle_pair_counts(y, p) for y, p in split(groups, scores)]
    n_pairs = sum(c[0] for c in per_group)
    correct = sum(c[1] for c in per_group)
    tied = sum(c[2] for c in per_group)
    expected_acc = correct / n_pairs if n_pairs else math.nan
    expected_auc = (correct + 0.5 * tied) / n_pairs if n_pairs else math.nan
    assert_close(pairwise_accuracy(groups, scores, method=method), expected_acc)
    assert_close(auc(groups, scores, method=method), expected_auc)
    assert_close(
        pairwise_accuracy_per_group(groups, scores, method=method),
        [c / n if n else math.nan for n, c, _ in per_group],
    )
    assert_close(
        auc_per_group(groups, scores, method=method),
        [(c + 0.5 * t) / n if n else math.nan for n, c, t in per_group],
    )


def test_many_groups_pairwise_and_ndcg():
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 12, size=3000)
    sizes[-1] = 5  # no trailing empty group (see grouped_data)
    m = int(sizes.sum())
    labels = rng.integers(0, 4, size=m).astype(float)
    scores = rng.integers(0, 6, size=m).astype(float) * 0.5
    groups = QueryGroups.from_offsets(labels, np.concatenate([[0], np.cumsum(sizes)]))
    parts = split(groups, scores)
    counts = [oracle_pair_counts(y, p) for y, p in parts]
    n_pairs = sum(c[0] for c in counts)
    assert_close(pairwise_accuracy(groups, scores), sum(c[1] for c in counts) / n_pairs)
    assert_close(auc(groups, scores), sum(c[1] + 0.5 * c[2] for c in counts) / n_pairs)
    assert_close(ndcg_at(groups, scores, 5), [oracle_ndcg(y, p, 5, "letor", "zero") for y, p in parts])
    report = evaluate_ranking(groups, scores, ks=(5,))
    assert_close(report["mean_ndcg"], nanmean([oracle_mean_ndcg_query(y, p, "letor", "zero") for y, p in parts]))


def test_constant_scores_never_help():
    labels = np.array([0, 1, 2, 1, 0, 3, 3, 0.5])
    groups = QueryGroups.from_offsets(labels, np.array([0, 3, 5, 8]))
    scores = np.full(labels.size, 0.25)
    for method in METHODS:
        assert pairwise_accuracy(groups, scores, method=method) == 0.0
        assert auc(groups, scores, method=method) == 0.5
    assert np.all(pairwise_accuracy_per_group(groups, scores) == 0.0)
    assert np.all(auc_per_group(groups, scores) == 0.5)
    # NDCG of a constant model equals NDCG of the worst ordering (labels ascending)
    worst = -labels  # ascending labels inside every group, no ties
    for k in (1, 2, 3, 10):
        assert_close(ndcg_at(groups, scores, k), ndcg_at(groups, worst, k))


def test_perfect_scores():
    labels = np.array([3.0, 1.0, 2.0, 0.0, 0.0, 1.0])
    groups = QueryGroups.from_offsets(labels, np.array([0, 4, 6]))
    assert pairwise_accuracy(groups, labels) == 1.0
    assert auc(groups, labels) == 1.0
    assert mean_ndcg(groups, labels) == 1.0
    assert_close(ndcg_at(groups, labels, 2), [1.0, 1.0])


def test_two_level_auc_is_wilcoxon_mann_whitney():
    # positives 0.9, 0.5, 0.3; negatives 0.5, 0.2: 4 wins, 1 tie, 1 loss out of 6 pairs
    labels = np.array([1, 1, 1, 0, 0], dtype=float)
    scores = np.array([0.9, 0.5, 0.3, 0.5, 0.2])
    groups = QueryGroups.single(labels)
    assert auc(groups, scores) == pytest.approx(4.5 / 6)
    assert pairwise_accuracy(groups, scores) == pytest.approx(4 / 6)


def test_no_pairs_gives_nan():
    groups = QueryGroups.from_offsets(np.array([1.0, 1.0, 2.0]), np.array([0, 2, 2, 3]))
    scores = np.array([0.1, 0.2, 0.3])
    assert math.isnan(pairwise_accuracy(groups, scores))
    assert math.isnan(auc(groups, scores))
    assert np.all(np.isnan(pairwise_accuracy_per_group(groups, scores)))


# --------------------------------------------------------------------------- NDCG


@FAST
@given(
    data=grouped_data(nonnegative=True),
    discount=st.sampled_from(["letor", "yahoo"]),
    zero_idcg=st.sampled_from(["zero", "one", "skip"]),
    k=st.sampled_from([1, 2, 3, 5, 10, 100]),
)
def test_ndcg_matches_brute_force(data, discount, zero_idcg, k):
    groups, scores = data
    parts = split(groups, scores)
    expected = [oracle_ndcg(y, p, k, discount, zero_idcg) for y, p in parts]
    assert_close(ndcg_at(groups, scores, k, discount=discount, zero_idcg=zero_idcg), expected)
    expected_mean = nanmean([oracle_mean_ndcg_query(y, p, discount, zero_idcg) for y, p in parts])
    assert_close(mean_ndcg(groups, scores, discount=discount, zero_idcg=zero_idcg), expected_mean)


@FAST
@given(data=grouped_data(nonnegative=True), zero_idcg=st.sampled_from(["zero", "one", "skip"]))
def test_reports_match_oracles(data, zero_idcg):
    groups, scores = data
    parts = split(groups, scores)
    ks = (1, 3, 4, 20)
    report = evaluate_ranking(groups, scores, ks=ks, zero_idcg=zero_idcg)
    per_group = per_group_metrics(groups, scores, ks=ks, zero_idcg=zero_idcg)
    counts = [oracle_pair_counts(y, p) for y, p in parts]
    n_pairs = sum(c[0] for c in counts)
    assert report["n_rows"] == groups.n_rows
    assert report["n_groups"] == len(parts)
    assert report["n_pairs"] == n_pairs
    assert report["n_groups_without_pairs"] == sum(1 for c in counts if c[0] == 0)
    assert report["n_groups_zero_idcg"] == sum(1 for y, _ in parts if y and max(y) == 0.0)
    assert_close(report["pairwise_accuracy"], sum(c[1] for c in counts) / n_pairs if n_pairs else math.nan)
    assert_close(report["auc"], sum(c[1] + 0.5 * c[2] for c in counts) / n_pairs if n_pairs else math.nan)
    mean_per_query = [oracle_mean_ndcg_query(y, p, "letor", zero_idcg) for y, p in parts]
    assert_close(report["mean_ndcg"], nanmean(mean_per_query))
    assert_close(per_group["mean_ndcg"], mean_per_query)
    assert_close(per_group["pairs"], [c[0] for c in counts])
    assert_close(per_group["rows"], [len(y) for y, _ in parts])
    assert_close(per_group["pairwise_accuracy"], [c[1] / c[0] if c[0] else math.nan for c in counts])
    for k in ks:
        per_query = [oracle_ndcg(y, p, k, "letor", zero_idcg) for y, p in parts]
        assert_close(per_group[f"ndcg@{k}"], per_query)
        assert_close(report[f"ndcg@{k}"], nanmean(per_query))
    json.dumps(report)  # plain Python numbers
    for key, value in report.items():
        assert type(value) in (int, float), key


def _hand_example():
    # query 0: labels (2, 0, 1, 0), scores (0.9, 0.8, 0.8, 0.1); rows 1 and 2 tie at 0.8
    # query 1: labels (0, 0): ideal DCG 0
    # query 2: one row with label 1
    labels = np.array([2, 0, 1, 0, 0, 0, 1], dtype=float)
    scores = np.array([0.9, 0.8, 0.8, 0.1, 0.3, 0.4, -1.0])
    return QueryGroups.from_offsets(labels, np.array([0, 4, 6, 7])), scores


def test_hand_computed_letor():
    groups, scores = _hand_example()
    # Query 0, pessimistic ranking: labels (2, 0, 1, 0) -> gains (3, 0, 1, 0).
    # LETOR discounts: 1, 1, 1/log2(3) = 0.6309297535714574, 1/2.
    # DCG@1..4 = 3, 3, 3.6309297535714574, 3.6309297535714574
    # ideal labels (2, 1, 0, 0) -> IDCG@1..4 = 3, 4, 4, 4
    # NDCG@1..4 = 1, 0.75, 0.9077324383928644, 0.9077324383928644
    # mean over cut-offs 1..4 = 3.5654648767857288 / 4 = 0.8913662191964322
    expected_k = {
        1: [1.0, 0.0, 1.0],
        2: [0.75, 0.0, 1.0],
        3: [0.9077324383928644, 0.0, 1.0],
        4: [0.9077324383928644, 0.0, 1.0],
        10: [0.9077324383928644, 0.0, 1.0],  # k > group size: whole group
    }
    for k, expected in expected_k.items():
        assert_close(ndcg_at(groups, scores, k), expected)
    per_group = per_group_metrics(groups, scores, ks=(1, 2))
    assert_close(per_group["mean_ndcg"], [0.8913662191964322, 0.0, 1.0])
    # zero rule (default): (0.8913662191964322 + 0 + 1) / 3
    assert mean_ndcg(groups, scores) == pytest.approx(0.6304554063988107, rel=1e-14)
    assert mean_ndcg(groups, scores, zero_idcg="one") == pytest.approx(0.9637887397321441, rel=1e-14)
    assert mean_ndcg(groups, scores, zero_idcg="skip") == pytest.approx(0.9456831095982161, rel=1e-14)
    assert_close(ndcg_at(groups, scores, 2, zero_idcg="one"), [0.75, 1.0, 1.0])
    assert_close(ndcg_at(groups, scores, 2, zero_idcg="skip"), [0.75, math.nan, 1.0])
    # pairs of query 0: (2>0 row 1) ok, (2>1) ok, (2>0 row 3) ok, (1>0 row 3) ok, (1>0 row 1) tied
    assert pairwise_accuracy(groups, scores) == pytest.approx(4 / 5)
    assert auc(groups, scores) == pytest.approx(4.5 / 5)
    report = evaluate_ranking(groups, scores, ks=(1, 3))
    assert report["ndcg@1"] == pytest.approx(2 / 3)
    assert report["ndcg@3"] == pytest.approx((0.9077324383928644 + 1.0) / 3)
    assert report["n_groups_zero_idcg"] == 1
    assert report["n_groups_without_pairs"] == 2
    assert report["n_pairs"] == 5


def test_hand_computed_yahoo():
    groups, scores = _hand_example()
    # Yahoo discounts: 1, 1/log2(3) = 0.6309297535714574, 1/2, 1/log2(5) = 0.43067655807339306
    # DCG@1..3 = 3, 3, 3.5;  IDCG@1..3 = 3, 3.6309297535714574, 3.6309297535714574
    assert_close(ndcg_at(groups, scores, 1, discount="yahoo"), [1.0, 0.0, 1.0])
    assert_close(ndcg_at(groups, scores, 2, discount="yahoo"), [3 / 3.6309297535714574, 0.0, 1.0])
    assert_close(ndcg_at(groups, scores, 3, discount="yahoo"), [3.5 / 3.6309297535714574, 0.0, 1.0])


def test_ties_ordered_pessimistically():
    # all scores tied: the ranking is labels ascending, not the input order
    labels = np.array([3.0, 0.0, 1.0])
    groups = QueryGroups.single(labels)
    scores = np.zeros(3)
    # ranking labels (0, 1, 3): DCG@1 = 0
    assert ndcg_at(groups, scores, 1)[0] == 0.0
    # DCG@3 = 0 + 1 + 7/log2(3); IDCG@3 = 7 + 1 + 0
    assert ndcg_at(groups, scores, 3)[0] == pytest.approx((1 + 7 / math.log2(3)) / 8)


def test_validation():
    groups, scores = _hand_example()
    with pytest.raises(ValueError):
        ndcg_at(groups, scores, 0)
    with pytest.raises(ValueError):
        ndcg_at(groups, scores, 2, zero_idcg="ignore")
    with pytest.raises(ValueError):
        ndcg_at(groups, scores, 2, discount="nope")
    with pytest.raises(ValueError):
        pairwise_accuracy(groups, scores[:-1])
    with pytest.raises(ValueError):
        auc(groups, np.where(np.arange(scores.size) == 2, np.nan, scores))
    with pytest.raises(ValueError):
        pairwise_accuracy(groups, scores, method="bogus")
    with pytest.raises(ValueError):
        evaluate_ranking(groups, scores, ks=(1, 1))


def test_one_metric_vocabulary_accepts_both_spellings():
    from sparkrank.evaluation.names import canonical_metric, metric_ks

    for spelling, canonical in (("pairwiseAccuracy", "pairwise_accuracy"), ("pairwise_accuracy", "pairwise_accuracy"),
                             ("meanNDCG", "mean_ndcg"), ("MEAN_NDCG", "mean_ndcg"), ("auc", "auc"),
                             ("NDCG@10", "ndcg@10"), ("positivesAtTop", "positives_at_top"),
                             ("precision@5", "precision@5"), (" ndcg@07 ", "ndcg@7")):
        assert canonical_metric(spelling) == canonical, spelling
    assert metric_ks("precision@3") == (3,) and metric_ks("auc") == (1,)
    for bad in ("ndcg@0", "ndcg", "precision@", "map", "ndcg@x"):
        with pytest.raises(ValueError, match="unknown metric"):
            canonical_metric(bad)
    # every pooled metric the kernel reports is spelled canonically
    groups, scores = _hand_example()
    report = evaluate_ranking(groups, scores, ks=(1, 3))
    for name in report:
        if not name.startswith("n_"):
            assert canonical_metric(name) == name


def test_pooled_metrics_are_the_kernel_on_any_split_into_blocks():
    """Statistics of blocks merge (exactly) into the statistics of the whole: the one pooled path."""
    from sparkrank.evaluation import MetricsKernel
    from sparkrank.numerics.exact_sum import dd_add, dd_round

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, size=40)
    labels = rng.integers(0, 3, size=sizes.sum()).astype(float)
    groups = QueryGroups.from_offsets(labels, np.concatenate([[0], np.cumsum(sizes)]))
    scores = rng.normal(size=groups.n_rows)
    kernel = MetricsKernel(ks=(1, 5))
    whole = kernel.statistics(groups, scores)
    cut = 17  # blocks of whole groups, as engines cut them
    a = kernel.statistics(groups.slice(0, cut), scores[: groups.offsets[cut]])
    b = kernel.statistics(groups.slice(cut, groups.n_groups), scores[groups.offsets[cut]:])
    assert b.merge(a).as_dict() == whole.as_dict()
    # what an engine hands back: the blocks' double-double arrays added and rounded once
    engine_total = dd_round(dd_add(a.result().stats_dd(), b.result().stats_dd()))
    assert kernel.finish(a.merge(b)) == kernel.finish(engine_total) == kernel.finish(whole)
    assert kernel.finish(whole) == evaluate_ranking(groups, scores, ks=(1, 5))
