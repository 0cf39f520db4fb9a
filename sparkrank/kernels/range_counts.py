"""Support-pair counts of one global ranking from score ranges and their summaries.

The Spark engine's range placement (``engines/range_placement.py``) splits the real line of
scores into ranges and counts, for every row ``k`` of one global ranking (the module
docstring of :mod:`.counting`),

* ``n_above[k] = |{j : y_j > y_k, p_j < q_k}|`` with ``q_k = p_k + δ`` (``<=`` when inclusive),
* ``n_below[k] = |{j : y_j < y_k, q_j > p_k}|`` (``>=`` when inclusive),

and the sums of a value ``v_j`` over the same sets, without any task holding all rows.  The
comparisons are the sweeps' own (``counting.sweep_group`` inserts ``j`` while
``p_j < p_t + δ``), so the counts are those of every counting method, exactly.

Events.  Each row has a *p-event* at ``p_k`` and a *q-event* at ``q_k = fl(p_k + δ)`` (the
sum the sweeps compute).  Events are totally ordered by ``(value, kind, row)``, the kind
putting q-events first at an equal value when the comparison is strict and last when it is
inclusive: then ``j`` counts for ``n_above[k]`` iff ``j``'s p-event precedes ``k``'s q-event,
and for ``n_below[k]`` iff ``j``'s q-event follows ``k``'s p-event.  Ranges are runs of that
order cut at sampled events (so a range boundary may split tied scores).

A pair is then counted in one of three places:

* both events in one range: the range's own sweep (:func:`sweep_range`), the label trees of
  :mod:`.tree_kinds` over the range's label ranks;
* different ranges and different label buckets: per ``(bucket, range)`` histograms of the
  events (counts and value sums) turned into a table by prefix sums (:func:`cross_table`);
* different ranges, one bucket: a scan of the bucket's rows in label order with per-range
  counts (:func:`scan_bucket`; only for real-valued labels: graded labels have a bucket per
  label, whose rows never form a pair).

Counts are integers, so they equal the driver's bit for bit.  Value sums (the squared hinge's
``α`` and ``γ``) are added in another order than the driver's single sweep, so they may
differ from it in the last bits; statistics are exact sums either way.

Weighted rows (:mod:`sparkrank.data.weights`): every event carries its row's weight ``a_j``,
the trees, histograms and bucket scans add weights where they add ones (the values are
``a_j·v_j``), and the kernels' formulas multiply each row's terms by its ``b·a_k``
(``from_counts`` with ``factors``).  The weight sums are then added in another order than the
driver's too: equal to rounding (exactly, when the weights are small multiples of a power of 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import literally, njit

from ..choices import DEFAULT_PAIR_RULE
from ..conventions import MARGIN
from . import tree_kinds, trees
from .counting import PairCounts, sort_group, sort_scratch
from .tree_kinds import insert_weight
from .losses import HingeKernel, SquaredHingeHessianKernel, SquaredHingeKernel, SupportPairDiagonalKernel
from .tree_kinds import SELECTION


class RangePlacementError(ValueError):
    """A kernel that range placement cannot run (its pairs are not support-pair counts)."""


@dataclass(frozen=True)
class CountPlan:
    """What a kernel needs counted in range placement.

    Attributes
    ----------
    margin, inclusive : the support-pair comparison ``p_u < p_l + margin`` (``<=``).
    values : ``None`` (counts only), ``"scores"`` (sums of ``p``: the squared hinge's ``α``) or
        ``"vector"`` (sums of ``X·v`` at the kept scores: its Hessian's ``γ``).
    at_state : the counts are at the kept scores of an earlier pass (the Hessian's support set).
    """

    margin: float
    inclusive: bool
    values: str | None
    at_state: bool


def count_plan(kernel) -> CountPlan:
    """The :class:`CountPlan` of ``kernel``, or a :class:`RangePlacementError` naming it."""
    rule = getattr(kernel, "pair_rule", DEFAULT_PAIR_RULE)
    if rule != DEFAULT_PAIR_RULE:
        raise RangePlacementError(f"placement 'range' counts all preference pairs; the {rule!r} pair rule "
                                  "needs placement 'driver'")
    if isinstance(kernel, SquaredHingeHessianKernel):
        return CountPlan(MARGIN, False, "vector", True)
    if isinstance(kernel, SquaredHingeKernel):
        return CountPlan(MARGIN, False, "scores", False)
    if isinstance(kernel, (HingeKernel, SupportPairDiagonalKernel)):
        return CountPlan(MARGIN, False, None, False)
    raise RangePlacementError(
        f"placement 'range' counts the support pairs of the RankSVM losses (L1 and L2) only; "
        f"{type(kernel).__name__} (RankNCG, TopPush and the ranking metrics) needs placement 'driver'")


def finish(kernel, counts: PairCounts, scores: np.ndarray, factors: np.ndarray | None = None):
    """``kernel``'s :class:`~sparkrank.kernels.base.KernelResult` from the counts of its rows (the
    kernel's own formulas: ``from_counts``; ``factors``: weighted rows' ``b·a_k``); no kernel
    state (the engine keeps the scores)."""
    if factors is None:
        return kernel.from_counts(counts, scores)
    return kernel.from_counts(counts, scores, factors=factors)


def q_keys(scores: np.ndarray, margin: float) -> np.ndarray:
    """The q-events' values ``fl(p + δ)``, as the sweeps compute their threshold."""
    return scores + margin


def q_kind(inclusive: bool) -> int:
    """The kind of a q-event (a p-event has the other one; see the module docstring)."""
    return 1 if inclusive else 0


@njit(cache=True, nogil=True)
def _precedes(v1, k1, r1, v2, k2, r2):
    # (v1, k1, r1) < (v2, k2, r2) lexicographically; NaN values sort last (as +inf, then by kind)
    a = v1 if v1 == v1 else np.inf
    b = v2 if v2 == v2 else np.inf
    if a != b:
        return a < b
    if k1 != k2:
        return k1 < k2
    return r1 < r2


@njit(cache=True, nogil=True)
def event_ranges(values, kind, rows, bound_values, bound_kinds, bound_rows, out):
    """``out[i]`` = the range of event ``(values[i], kind, rows[i])``: how many boundaries are at
    or before it (boundaries sorted; an event equal to a boundary starts that boundary's range)."""
    n_bounds = bound_values.shape[0]
    for i in range(values.shape[0]):
        lo, hi = 0, n_bounds
        while lo < hi:  # first boundary strictly after the event
            mid = (lo + hi) // 2
            if _precedes(values[i], kind, rows[i], bound_values[mid], bound_kinds[mid], bound_rows[mid]):
                hi = mid
            else:
                lo = mid + 1
        out[i] = lo


def event_order(values: np.ndarray, kinds: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions of the events in their total order ``(value, kind, row)`` (NaN as ``+inf``)."""
    keys = np.where(np.isnan(values), np.inf, values)
    return np.lexsort((rows, kinds, keys))


@njit(cache=True, nogil=True)
def _sweep(kind, is_p, rank, values, n_levels, with_sums, tree, counts, sums, weights):
    # the events in their order (every array gathered so: the loop reads them in sequence, where
    # reading them through the order's positions costs a cache miss an array an event).
    # Ascending: p-events go into an "above" tree, q-events ask it (n_above); descending:
    # q-events go into a "below" tree, p-events ask it (n_below).  One tree, reset per
    # direction (the direction is a compile-time constant of the tree calls: two loops).
    literally(kind)
    n = is_p.shape[0]
    height = tree_kinds.tree_reset(kind, tree, n_levels, with_sums)
    for e in range(n):
        if is_p[e]:
            value = values[e] if with_sums else 0.0
            tree_kinds.tree_insert(kind, tree, height, False, rank[e], 0.0, insert_weight(weights, e), value,
                                   with_sums)
        else:
            c, s = tree_kinds.tree_query(kind, tree, height, False, rank[e], 0.0, with_sums)
            counts[e] = c
            sums[e] = s
    height = tree_kinds.tree_reset(kind, tree, n_levels, with_sums)
    for e in range(n - 1, -1, -1):
        if not is_p[e]:
            value = values[e] if with_sums else 0.0
            tree_kinds.tree_insert(kind, tree, height, True, rank[e], 0.0, insert_weight(weights, e), value,
                                   with_sums)
        else:
            c, s = tree_kinds.tree_query(kind, tree, height, True, rank[e], 0.0, with_sums)
            counts[e] = c
            sums[e] = s


@njit(cache=True, nogil=True)
def _sweep_selection(is_p, rank, values, n_levels, with_sums, tree, counts, sums, weights=None):
    # weights None: the unweighted sweep (int64 counts); an array: its own compilation
    _sweep(SELECTION, is_p, rank, values, n_levels, with_sums, tree, counts, sums, weights)


def arrange(chunks: list, inclusive: bool) -> list:
    """Events of chunks ``(values, is_p, rows, labels, sums_of, weights)`` (each from one block, rows
    ascending within each kind, as :func:`range_events` gives them) concatenated in
    ``(kind, row)`` order: a stable sort by value alone then gives the events' order."""
    width = len(chunks[0]) if chunks else 6  # the fields of an event (weights: the sixth, when given)
    chunks = sorted((c for c in chunks if c[0].shape[0]), key=lambda c: int(c[2][0]))
    first_is_p = q_kind(inclusive) == 1
    pieces = [(c, c[1] == take_p) for take_p in (first_is_p, not first_is_p) for c in chunks]
    out = []
    for i in range(width):
        if chunks and chunks[0][i] is None:
            out.append(None)
        else:
            out.append(np.concatenate([c[i][mask] for c, mask in pieces]) if pieces else None)
    return out


#: Integer labels below this are ranked by counting (:func:`label_ranks`; a table this long).
COUNTED_RANKS = 1 << 16


def label_ranks(labels: np.ndarray) -> tuple[int, np.ndarray]:
    """``(distinct labels, each label's rank among them)`` (int32 ranks): ``np.unique``'s
    inverse, by counting when the labels are small non-negative integers (graded labels'
    bucket numbers: no sort of the range's events)."""
    if labels.dtype.kind in "iu" and labels.shape[0] and labels.min() >= 0 and labels.max() < COUNTED_RANKS:
        present = np.bincount(labels) > 0
        ranks = (np.cumsum(present) - 1).astype(np.int32)
        return int(ranks[-1]) + 1, ranks[labels]
    levels, rank = np.unique(labels, return_inverse=True)
    return int(levels.shape[0]), rank.astype(np.int32)


def range_order(values: np.ndarray, is_p: np.ndarray, rows: np.ndarray | None, inclusive: bool,
                arranged: bool = False) -> np.ndarray:
    """Positions of a range's events in their total order ``(value, kind, row)``: int32 below
    2³¹ events (what the range placement keeps between a value pass and its Hessian passes,
    whose events are the same).  ``arranged``: the events are in ``(kind, row)`` order already
    (:func:`arrange`), so one stable sort by value orders them (``counting.sort_group``) and
    ``rows`` is not read."""
    n = values.shape[0]
    dtype = np.int32 if n < 2 ** 31 else np.int64
    if not arranged:
        kinds = np.where(is_p, 1 - q_kind(inclusive), q_kind(inclusive)).astype(np.int8)
        return event_order(values, kinds, rows).astype(dtype, copy=False)
    order = np.empty(n, dtype=dtype)  # written by the sort: no int64 copy to narrow
    if n:
        sort_group(np.ascontiguousarray(values, dtype=np.float64), 0, n, order, *sort_scratch(n))
    return order


def sweep_range(values: np.ndarray, is_p: np.ndarray, rows: np.ndarray, labels: np.ndarray,
                sums_of: np.ndarray | None, inclusive: bool, arranged: bool = False,
                weights: np.ndarray | None = None, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The pairs inside one range: for each event, the count (and value sum) of its partners
    among the range's events: a q-event's ``n_above`` part, a p-event's ``n_below`` part.

    ``values``: the events' values (``p`` or ``q``); ``is_p``: p-event or q-event; ``rows``:
    global row numbers (the order's last key); ``labels``: the rows' labels; ``sums_of``: the
    values summed over partners (``None``: counts only).  The selection tree runs over the
    range's own label ranks.  ``arranged``: see :func:`range_order`; ``order``: that order,
    when known (a Hessian pass's events are its value pass's).  ``weights``: the events' row
    weights (counts are then float64 weight sums)."""
    n = values.shape[0]
    counts = np.zeros(n, dtype=np.int64 if weights is None else np.float64)
    sums = np.zeros(n)
    if n == 0:
        return counts, sums
    n_levels, rank = label_ranks(labels)
    if n_levels < 2:
        return counts, sums
    if order is None:
        order = range_order(values, is_p, rows, inclusive, arranged)
    with_sums = sums_of is not None
    tree = trees.selection_new(n_levels, n, with_sums, weights is not None)
    sorted_counts, sorted_sums = np.empty_like(counts), np.empty_like(sums)
    args = (is_p[order], rank[order],
            np.asarray(sums_of, dtype=np.float64)[order] if with_sums else np.zeros(0),
            n_levels, with_sums, tree, sorted_counts, sorted_sums)
    if weights is None:
        _sweep_selection(*args)
    else:
        _sweep_selection(*args, np.asarray(weights, dtype=np.float64)[order])
    counts[order] = sorted_counts
    sums[order] = sorted_sums
    return counts, sums


@njit(cache=True, nogil=True)
def _fenwick_add(count, total, i, weight, value):
    i += 1
    while i < count.shape[0]:
        count[i] += weight
        total[i] += value
        i += i & (-i)


@njit(cache=True, nogil=True)
def _fenwick_prefix(count, total, i):
    # entries 0 .. i-1
    n, s = count[0] * 0, 0.0  # count[0] is never used: a zero of the counts' type
    while i > 0:
        n += count[i]
        s += total[i]
        i -= i & (-i)
    return n, s


@njit(cache=True, nogil=True)
def _scan(order, labels, insert_at, query_below, values, with_sums, n_ranges, counts, sums, weights):
    # rows in label order (``order``); a run of equal labels asks before any of it is inserted
    count = np.zeros(n_ranges + 1, dtype=counts.dtype)
    total = np.zeros(n_ranges + 1)
    n = order.shape[0]
    start = 0
    while start < n:
        end = start + 1
        while end < n and labels[order[end]] == labels[order[start]]:
            end += 1
        for t in range(start, end):
            e = order[t]
            c, s = _fenwick_prefix(count, total, query_below[e])
            counts[e] = c
            sums[e] = s if with_sums else 0.0
        for t in range(start, end):
            e = order[t]
            _fenwick_add(count, total, insert_at[e], insert_weight(weights, e), values[e] if with_sums else 0.0)
        start = end


def scan_bucket(labels: np.ndarray, rows: np.ndarray, range_p: np.ndarray, range_q: np.ndarray,
                sums_of: np.ndarray | None, n_ranges: int, weights: np.ndarray | None = None):
    """The pairs of one label bucket whose events lie in different ranges:
    ``n_above`` part ``|{j : y_j > y_k, range_p[j] < range_q[k]}|`` and ``n_below`` part
    ``|{j : y_j < y_k, range_q[j] > range_p[k]}|`` (with value sums), for each row of the
    bucket (``rows``: their global numbers, which order equal labels); ``weights``: each
    partner counts its row weight."""
    n = labels.shape[0]
    with_sums = sums_of is not None
    values = np.ascontiguousarray(sums_of if with_sums else np.zeros(n), dtype=np.float64)
    dtype = np.int64 if weights is None else np.float64
    above, above_sums = np.zeros(n, dtype=dtype), np.zeros(n)
    below, below_sums = np.zeros(n, dtype=dtype), np.zeros(n)
    if weights is not None:
        weights = np.ascontiguousarray(weights, dtype=np.float64)
    if n == 0:
        return above, above_sums, below, below_sums
    down = np.lexsort((rows, -labels))  # label descending: earlier rows have larger labels
    _scan(down, labels, range_p.astype(np.int64), range_q.astype(np.int64), values, with_sums, n_ranges,
          above, above_sums, weights)
    # n_below: ranges mirrored (r -> R-1-r) so "q-range after the p-range" is a prefix
    mirror_q = (n_ranges - 1 - range_q).astype(np.int64)
    mirror_p = (n_ranges - 1 - range_p).astype(np.int64)
    up = np.lexsort((rows, labels))
    _scan(up, labels, mirror_q, mirror_p, values, with_sums, n_ranges, below, below_sums, weights)
    return above, above_sums, below, below_sums


def cross_table(hist: np.ndarray, above: bool) -> np.ndarray:
    """From per ``(bucket, range)`` totals ``hist`` (counts or value sums), the table of the
    totals a row of bucket ``b`` whose event is in range ``r`` pairs with in other buckets and
    ranges: ``above`` true, ``Σ_{b' > b, r' < r}`` (p-events for ``n_above``); false,
    ``Σ_{b' < b, r' > r}`` (q-events for ``n_below``)."""
    hist = np.asarray(hist)
    zero_b = np.zeros((1, hist.shape[1]), dtype=hist.dtype)
    if above:  # buckets strictly above: reverse cumulative, shifted
        by_bucket = np.concatenate([np.cumsum(hist[::-1], axis=0)[::-1][1:], zero_b])
        zero_r = np.zeros((hist.shape[0], 1), dtype=hist.dtype)
        return np.concatenate([zero_r, np.cumsum(by_bucket, axis=1)[:, :-1]], axis=1)
    by_bucket = np.concatenate([zero_b, np.cumsum(hist, axis=0)[:-1]])
    zero_r = np.zeros((hist.shape[0], 1), dtype=hist.dtype)
    after = np.cumsum(by_bucket[:, ::-1], axis=1)[:, ::-1]  # ranges r' >= r
    return np.concatenate([after[:, 1:], zero_r], axis=1)


@dataclass(frozen=True)
class LabelBuckets:
    """How labels are bucketed for the cross-range summaries (fixed for a fit).

    ``exact``: one bucket per label (``edges`` are the distinct labels; graded labels): no two
    rows of a bucket form a pair.  Otherwise ``edges`` cut the labels into ``len(edges) + 1``
    buckets (equal labels always share one) and each bucket's rows are scanned
    (:func:`scan_bucket`)."""

    edges: np.ndarray
    exact: bool

    @property
    def n_buckets(self) -> int:
        return int(self.edges.shape[0]) if self.exact else int(self.edges.shape[0]) + 1

    def of(self, labels: np.ndarray) -> np.ndarray:
        side = "left" if self.exact else "right"
        return np.searchsorted(self.edges, labels, side=side).astype(np.int32)


def event_keys(scores: np.ndarray, plan: CountPlan):
    """``(p, q, kind of a p-event, kind of a q-event)`` of rows with ``scores``."""
    qk = q_kind(plan.inclusive)
    return scores, q_keys(scores, plan.margin), 1 - qk, qk


def route(scores: np.ndarray, rows: np.ndarray, plan: CountPlan, bounds) -> tuple[np.ndarray, np.ndarray]:
    """The ranges of each row's p-event and q-event; ``bounds``: ``(values, kinds, rows)`` of the
    sorted range boundaries."""
    p, q, p_kind, qk = event_keys(scores, plan)
    range_p, range_q = np.empty(p.shape[0], dtype=np.int32), np.empty(p.shape[0], dtype=np.int32)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    event_ranges(np.ascontiguousarray(p), p_kind, rows, *bounds, range_p)
    event_ranges(np.ascontiguousarray(q), qk, rows, *bounds, range_q)
    return range_p, range_q


def histograms(bucket: np.ndarray, range_p: np.ndarray, range_q: np.ndarray, values: np.ndarray | None,
               n_buckets: int, n_ranges: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Per ``(bucket, range)``: counts (``weights``: weight sums) of p-events and q-events and,
    with ``values``, their value sums, as a float64 array ``[4, n_buckets, n_ranges]`` (counts
    exact below 2⁵³)."""
    out = np.zeros((4, n_buckets * n_ranges))
    cells_p = bucket.astype(np.int64) * n_ranges + range_p
    cells_q = bucket.astype(np.int64) * n_ranges + range_q
    size = n_buckets * n_ranges
    out[0] = np.bincount(cells_p, weights=weights, minlength=size)
    out[1] = np.bincount(cells_q, weights=weights, minlength=size)
    if values is not None:
        out[2] = np.bincount(cells_p, weights=values, minlength=size)
        out[3] = np.bincount(cells_q, weights=values, minlength=size)
    return out.reshape(4, n_buckets, n_ranges)


def cross_terms(hist: np.ndarray, bucket: np.ndarray, range_p: np.ndarray, range_q: np.ndarray,
                weighted: bool = False):
    """Each row's partners in other buckets and ranges from the summed :func:`histograms`:
    ``(n_above, s_above, n_below, s_below)`` parts (counts int64, or weight sums)."""
    above_n = cross_table(hist[0], True)[bucket, range_q]
    above_s = cross_table(hist[2], True)[bucket, range_q]
    below_n = cross_table(hist[1], False)[bucket, range_p]
    below_s = cross_table(hist[3], False)[bucket, range_p]
    if weighted:
        return above_n, above_s, below_n, below_s
    return above_n.astype(np.int64), above_s, below_n.astype(np.int64), below_s


def range_events(scores: np.ndarray, rows: np.ndarray, labels: np.ndarray, values: np.ndarray | None,
                 range_p: np.ndarray, range_q: np.ndarray, r: int, plan: CountPlan,
                 weights: np.ndarray | None = None):
    """The events of range ``r`` among these rows: ``(event values, is_p, rows, labels, values,
    weights, positions)``, positions indexing the rows (p-events first, then q-events)."""
    at_p = np.flatnonzero(range_p == r)
    at_q = np.flatnonzero(range_q == r)
    positions = np.concatenate([at_p, at_q])
    p, q, _, _ = event_keys(scores, plan)
    event_values = np.concatenate([p[at_p], q[at_q]])
    is_p = np.concatenate([np.ones(at_p.size, dtype=np.bool_), np.zeros(at_q.size, dtype=np.bool_)])
    vals = None if values is None else values[positions]
    event_weights = None if weights is None else weights[positions]
    return event_values, is_p, rows[positions], labels[positions], vals, event_weights, positions


def sample_bounds(scores: np.ndarray, rows: np.ndarray, plan: CountPlan, n_ranges: int):
    """``n_ranges - 1`` boundaries at evenly spaced events of a sample (sorted ``(values, kinds,
    rows)``): each of these rows gives its p-event and q-event."""
    p, q, p_kind, qk = event_keys(scores, plan)
    values = np.concatenate([p, q])
    kinds = np.concatenate([np.full(p.size, p_kind, dtype=np.int8), np.full(q.size, qk, dtype=np.int8)])
    all_rows = np.concatenate([rows, rows]).astype(np.int64)
    order = event_order(values, kinds, all_rows)
    if order.size == 0 or n_ranges < 2:
        return np.zeros(0), np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.int64)
    picks = order[(np.arange(1, n_ranges) * order.size) // n_ranges]
    return (np.ascontiguousarray(values[picks]), np.ascontiguousarray(kinds[picks]),
            np.ascontiguousarray(all_rows[picks]))


def count_by_ranges(scores: np.ndarray, labels: np.ndarray, values: np.ndarray | None, plan: CountPlan,
                    buckets: LabelBuckets, n_ranges: int, bounds=None, weights: np.ndarray | None = None) -> PairCounts:
    """All rows' counts through the range decomposition, in one process: what the Spark
    engine's range placement computes across tasks (the same functions), for tests and for
    reading the method.  ``bounds``: the boundaries (default: from all rows); ``weights``: row
    weights (partners count ``a_j`` and add ``a_j·v_j``)."""
    m = scores.shape[0]
    rows = np.arange(m, dtype=np.int64)
    if bounds is None:
        bounds = sample_bounds(scores, rows, plan, n_ranges)
    n_ranges = bounds[0].shape[0] + 1
    if weights is not None and values is not None:
        values = weights * values
    range_p, range_q = route(scores, rows, plan, bounds)
    bucket = buckets.of(labels)
    n_above, s_above, n_below, s_below = cross_terms(
        histograms(bucket, range_p, range_q, values, buckets.n_buckets, n_ranges, weights), bucket, range_p, range_q,
        weights is not None)
    for r in range(n_ranges):
        ev, is_p, ev_rows, ev_labels, ev_vals, ev_weights, pos = range_events(scores, rows, labels, values, range_p,
                                                                              range_q, r, plan, weights)
        counts, sums = sweep_range(ev, is_p, ev_rows, ev_labels, ev_vals, plan.inclusive, weights=ev_weights)
        at_q, at_p = pos[~is_p], pos[is_p]
        n_above[at_q] += counts[~is_p]
        s_above[at_q] += sums[~is_p]
        n_below[at_p] += counts[is_p]
        s_below[at_p] += sums[is_p]
    if not buckets.exact:
        for b in range(buckets.n_buckets):
            at = np.flatnonzero(bucket == b)
            a, sa, d, sd = scan_bucket(labels[at], rows[at], range_p[at], range_q[at],
                                       None if values is None else values[at], n_ranges,
                                       None if weights is None else weights[at])
            n_above[at] += a
            s_above[at] += sa
            n_below[at] += d
            s_below[at] += sd
    return PairCounts(n_above, n_below, s_above, s_below)
