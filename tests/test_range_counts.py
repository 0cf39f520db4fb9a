"""Range placement's counting (kernels/range_counts.py) against the all-pairs oracle: one global
ranking with ties, many equal scores, graded and real-valued labels, and tiny ranges that split
tied scores."""

import numpy as np
import pytest

from sparkrank.conventions import MARGIN
from sparkrank.data.groups import QueryGroups
from sparkrank.kernels.counting import count_support_pairs
from sparkrank.kernels.losses import HingeKernel, SquaredHingeHessianKernel, SquaredHingeKernel
from sparkrank.kernels.range_counts import (
    CountPlan,
    LabelBuckets,
    RangePlacementError,
    arrange,
    count_by_ranges,
    count_plan,
    cross_table,
    sweep_range,
)
from sparkrank.kernels.ranknet import RankNetKernel
from sparkrank.kernels.toppush import TopPushStepKernel


def _data(seed: int, m: int, graded: bool, spread: float):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, m).astype(float) if graded else np.round(rng.normal(size=m), 1)
    scores = np.round(rng.normal(scale=spread, size=m), 1)  # many ties, also at a margin apart
    return labels, scores, rng.normal(size=m)


def _buckets(labels, graded: bool, n: int = 3) -> LabelBuckets:
    if graded:
        return LabelBuckets(np.unique(labels), True)
    return LabelBuckets(np.quantile(np.unique(labels), np.linspace(0, 1, n + 1)[1:-1]), False)


@pytest.mark.parametrize("graded", [True, False])
@pytest.mark.parametrize("inclusive,margin", [(False, MARGIN), (True, 0.0), (False, 0.0)])
@pytest.mark.parametrize("n_ranges", [1, 2, 7, 60])
def test_counts_match_the_oracle(graded, inclusive, margin, n_ranges):
    for seed in range(4):
        labels, scores, values = _data(seed, 57, graded, spread=[0.3, 2.0][seed % 2])
        plan = CountPlan(margin, inclusive, "scores", False)
        got = count_by_ranges(scores, labels, values, plan, _buckets(labels, graded), n_ranges)
        want = count_support_pairs(QueryGroups.single(labels), scores, values, margin=margin, inclusive=inclusive,
                                   method="pairs")
        np.testing.assert_array_equal(got.n_above, want.n_above)
        np.testing.assert_array_equal(got.n_below, want.n_below)
        np.testing.assert_allclose(got.s_above, want.s_above, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.s_below, want.s_below, rtol=1e-12, atol=1e-12)


def test_all_scores_equal_split_over_many_ranges():
    labels = np.tile([0.0, 1.0, 2.0], 20)
    scores = np.zeros(60)
    plan = CountPlan(MARGIN, False, None, False)
    got = count_by_ranges(scores, labels, None, plan, _buckets(labels, True), 25)
    want = count_support_pairs(QueryGroups.single(labels), scores, method="pairs")
    np.testing.assert_array_equal(got.n_above, want.n_above)
    np.testing.assert_array_equal(got.n_below, want.n_below)


def test_hinge_result_is_the_driver_kernels_bit_for_bit():
    labels, scores, _ = _data(3, 80, True, 1.5)
    groups = QueryGroups.single(labels)
    for kernel in (HingeKernel(), SquaredHingeKernel()):
        plan = count_plan(kernel)
        counts = count_by_ranges(scores, labels, scores if plan.values else None, plan, _buckets(labels, True), 9)
        got, want = kernel.from_counts(counts, scores), kernel(groups, scores, None)
        np.testing.assert_array_equal(got.stats_dd()[1] + got.stats, want.stats_dd()[1] + want.stats) \
            if plan.values is None else np.testing.assert_allclose(got.coef, want.coef, rtol=1e-13)
        if plan.values is None:
            np.testing.assert_array_equal(got.coef, want.coef)
    assert count_plan(SquaredHingeHessianKernel()).at_state


def test_cross_table_sums_other_buckets_and_ranges():
    hist = np.arange(12.0).reshape(3, 4)
    above, below = cross_table(hist, True), cross_table(hist, False)
    for b in range(3):
        for r in range(4):
            assert above[b, r] == hist[b + 1:, :r].sum()
            assert below[b, r] == hist[:b, r + 1:].sum()


@pytest.mark.parametrize("kernel", [RankNetKernel(), TopPushStepKernel(eta=0.0, step=1.0, scope="global")])
def test_other_losses_are_refused_by_name(kernel):
    with pytest.raises(RangePlacementError, match=type(kernel).__name__):
        count_plan(kernel)


def test_arranged_events_sort_as_the_full_order():
    """Chunks of blocks (p-events then q-events, rows ascending) arranged and sorted by value
    alone give the counts of the full (value, kind, row) order."""
    labels, scores, values = _data(7, 90, True, 0.5)
    rows = np.arange(90)
    for inclusive in (False, True):
        q = scores + (0.0 if inclusive else MARGIN)
        chunks = []
        for lo, hi in ((40, 90), (0, 40)):  # blocks arrive out of order
            r = rows[lo:hi]
            chunks.append((np.concatenate([scores[r], q[r]]), np.repeat([True, False], r.size),
                           np.concatenate([r, r]), np.concatenate([labels[r], labels[r]]),
                           np.concatenate([values[r], values[r]])))
        ev, is_p, ev_rows, ev_labels, ev_vals = arrange(chunks, inclusive)
        got = sweep_range(ev, is_p, ev_rows, ev_labels, ev_vals, inclusive, arranged=True)
        want = sweep_range(ev, is_p, ev_rows, ev_labels, ev_vals, inclusive)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
