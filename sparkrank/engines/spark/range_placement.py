"""Range placement: the Spark engine's exact counting of one global ranking across executors.

Driver placement gathers all ``m`` scores to the driver, which sorts and counts them on one
core.  Range placement (``--placement range``) leaves them on the executors: each pass cuts
the scores into ranges at a sample of them, every range counts the pairs inside it with the
label trees, and pairs across ranges come from summaries (:mod:`sparkrank.kernels.range_counts`:
per ``(label bucket, range)`` histograms combined by prefix sums, and for real-valued labels a
scan of each label bucket in label order with per-range counts).  Each block then computes its
rows' coefficients and ``Xᵀc`` in driver placement's steps (``range_tasks.py``).

The driver holds ``O(blocks × samples + ranges × buckets)`` numbers, not ``O(m)``.  Counts are
integers, equal to driver placement's; so the L1 loss (BMRM), its coefficients and ``Xᵀc`` are
driver placement's bit for bit.  The squared hinge's partner sums ``α`` and ``γ`` (TRON's value
and Hessian passes) are added per range and per summary instead of in one sweep's order, so its
coefficients may differ from driver placement's in the last bits, and the model with them.

Row and group weights (:mod:`sparkrank.data.weights`): events carry their rows' weights and
every count is a weight sum (:mod:`sparkrank.kernels.range_counts`), added in another order than
driver placement's sweep, so equal to it to rounding (bit for bit when the weights' sums are
exact, e.g. multiples of 1/2); the pairs' weight ``Σ b a_u a_l`` is the L1 hinge's support count
at ``w = 0``, where every pair is a support pair.

Only the RankSVM losses' kernels run here (:func:`~sparkrank.kernels.range_counts.count_plan`
refuses others by name), on a local master and on a cluster alike.  Why a cluster can: every
stage that opens a block runs over the cached block references (the route stage maps them;
the final stage zips them with the shuffled parts, ``range_tasks.py``), so its tasks prefer
the executor holding the block as every other pass's do; a task that lands elsewhere raises
:class:`~sparkrank.engines.spark.store.BlockMissingError` and the engine rebuilds the store
and runs the pass again (``SparkEngine._with_recovery``), keeping the fit's kept states: a kept
"state" is the vector of its value pass, whose scores any block recomputes bit for bit.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

import numpy as np

from ...kernels import range_counts as rc
from ...kernels.base import ScoreKernel
from ...kernels.losses import HingeKernel
from ...kernels.pair_weights import PairWeightKernel
from ...numerics.exact_sum import dd_round
from ...numerics.linalg import matvec
from ..base import ColumnMoments, DataSummary, PassResult, StateHandle
from . import range_tasks, step_sums, store

log = logging.getLogger("sparkrank.spark")

#: Distinct labels up to which every label is its own bucket (graded labels: no bucket scans).
MAX_EXACT_LEVELS = 4096
#: Sampled rows per range (over all blocks, fixed for the engine) whose scores place a pass's
#: range boundaries.
SAMPLES_PER_RANGE = 64


@dataclass(frozen=True)
class PassJob:
    """What the tasks of one range pass need (small: shipped in the tasks)."""

    plan: rc.CountPlan
    bounds: tuple
    n_ranges: int
    buckets: rc.LabelBuckets
    scores_id: int
    values_id: int | None
    row_start: dict
    task_of: dict  # block partition -> the task (partition of the pass's references) holding it
    step_plans: dict
    block_partitions: np.ndarray
    owner: store.Owner  # the application's blocks directory on each host (range_tasks.order_file)
    store_id: str

    @property
    def hist_task(self) -> int:
        """The middle-stage partition that sums the histograms (after ranges and buckets)."""
        return self.n_ranges + (0 if self.buckets.exact else self.buckets.n_buckets)

    @property
    def partitions(self) -> list[int]:
        return [int(p) for p in self.block_partitions]


@dataclass
class KeptScores:
    """A value pass's kept state: its scores files, the ranges cut at them and the vector they
    are the scores of (a block whose file is gone, rebuilt elsewhere, recomputes them)."""

    scores_id: int
    bounds: tuple
    vector: np.ndarray


class RangePlacement:
    """The passes of a :class:`~sparkrank.engines.spark.SparkEngine` in range placement.

    Parameters
    ----------
    engine : SparkEngine
        Built blocks in row order (as driver placement's).
    n_ranges : int, optional
        Score ranges per pass; default: the tasks of a pass (:meth:`SparkEngine._pass_refs`).
    """

    def __init__(self, engine, n_ranges: int | None = None, previous: "RangePlacement | None" = None):
        self.engine = engine
        self.n_ranges = n_ranges or max(engine._pass_refs().getNumPartitions(), 1)
        self._row_start = dict(engine.row_start)
        built = sorted((engine.row_start[r.partition], r.partition) for r in engine.refs if r.n_rows)
        self._block_partitions = np.array([p for _, p in built], dtype=np.int64)
        self._plans = self._task_of = None
        self._dropped: list[int] = []  # score files the next pass's tasks delete
        if previous is not None:  # the same rows in a rebuilt store: what depends on them only
            self._ids, self._kept, self._sample = previous._ids, previous._kept, previous._sample
            self.buckets, self.summary = previous.buckets, previous.summary
            return
        self._ids = itertools.count(1)
        self._kept: dict[int, KeptScores] = {}
        self._sample = None  # (global rows, CSR rows) of the fixed sample (_bounds)
        self.buckets, n_pairs = self._label_buckets()
        n_rows = sum(int(r.n_rows) for r in engine.refs)
        self.summary = DataSummary(n_rows, engine.n_features, 1, n_pairs, 0 if n_pairs else 1, bool(engine.weights))

    # -- set-up ----------------------------------------------------------------------------
    def _label_buckets(self) -> tuple[rc.LabelBuckets, int]:
        """The label buckets of the fit and the number of preference pairs (one job; a second,
        a shuffle of the labels, when they are not graded)."""
        parts = self.engine._pass_refs().mapPartitions(_label_summary_task(MAX_EXACT_LEVELS)).collect()
        exact = all(counts is not None for _, counts in parts)
        if exact:
            levels = np.unique(np.concatenate([v for v, _ in parts])) if parts else np.zeros(0)
            exact = levels.shape[0] <= MAX_EXACT_LEVELS
        if exact:
            sizes = np.zeros(levels.shape[0])
            for values, counts in parts:
                np.add.at(sizes, np.searchsorted(levels, values), counts)
            return rc.LabelBuckets(levels, True), _pairs(float(sizes.sum()), float((sizes ** 2).sum()))
        sample = np.sort(np.concatenate([v for v, _ in parts]))
        n_buckets = self.n_ranges
        edges = np.unique(sample[(np.arange(1, n_buckets) * sample.size) // n_buckets])
        buckets = rc.LabelBuckets(edges, False)
        squares, m = self.engine._pass_refs().mapPartitions(_label_rows_task(buckets)) \
            .partitionBy(buckets.n_buckets, int).mapPartitions(_duplicate_squares_task()) \
            .fold((0.0, 0.0), lambda a, b: (a[0] + b[0], a[1] + b[1]))
        return buckets, _pairs(m, squares)

    # -- passes ----------------------------------------------------------------------------
    def run(self, vector: np.ndarray, kernel: ScoreKernel, state: StateHandle | None, keep_state: bool) -> PassResult:
        if isinstance(kernel, PairWeightKernel):  # Σ b a_u a_l: at w = 0 every pair is a support pair
            hinge = HingeKernel()
            support = hinge.named(self.run(np.zeros_like(vector), hinge, None, False).stats)["support_pairs"]
            return PassResult(np.array([support]), np.zeros(self.engine.n_features), None, None)
        plan = rc.count_plan(kernel)
        result, kept = self._pass(vector, kernel, plan, state, (1,))
        stats, sums = result
        handle = None
        if keep_state:
            sid = next(self._ids)
            self._kept[sid] = kept
            handle = StateHandle(sid)
        elif not plan.at_state:
            self._dropped.append(kept.scores_id)
        grad, moments = sums[0], (sums[1:] if len(sums) > 1 else None)
        return PassResult(dd_round(stats), grad, handle, moments)

    def column_moments(self, vector: np.ndarray, kernel: ScoreKernel) -> ColumnMoments:
        plan = rc.count_plan(kernel)
        (stats, sums), kept = self._pass(vector, kernel, plan, None, (1, 2))
        self._dropped.append(kept.scores_id)
        return ColumnMoments(dd_round(stats), sums[0], sums[1])

    def release(self, state: StateHandle) -> None:
        kept = self._kept.pop(state.payload, None)
        if kept is not None:
            self._dropped.append(kept.scores_id)

    def _pass(self, vector, kernel, plan: rc.CountPlan, state, powers):
        """One pass: ``((stats dd, [rounded product sums]), KeptScores)``."""
        engine = self.engine
        if plan.at_state:
            if state is None:
                raise ValueError(f"{type(kernel).__name__} needs the kept state of a value pass")
            kept = self._kept[state.payload]
            values_id = next(self._ids)
        else:
            kept = KeptScores(next(self._ids), self._bounds(vector, plan), vector)
            values_id = None
        job = PassJob(plan, kept.bounds, kept.bounds[0].shape[0] + 1, self.buckets, kept.scores_id, values_id,
                      self._row_start, self._tasks(), self._step_plans(), self._block_partitions, engine.owner,
                      engine.store_id)
        dropped, self._dropped = tuple(self._dropped), []
        refs = engine._pass_refs()
        with engine._broadcast(vector, kept.vector if plan.at_state else None) as (vector_bc, kept_bc):
            parts = refs.mapPartitions(range_tasks.route_task(job, vector_bc, kept_bc, dropped)) \
                .partitionBy(job.hist_task + 1, int) \
                .mapPartitionsWithIndex(range_tasks.middle_task(job, dropped)) \
                .partitionBy(refs.getNumPartitions(), int) \
                .mapPartitions(range_tasks.gathered_values)
            # zipped with the references, a final task runs where its blocks' reference is cached
            # (on a cluster: the executor whose host has the block files), as a map over them would
            finals = refs.mapPartitions(range_tasks.gathered).zip(parts) \
                .mapPartitions(range_tasks.final_task(job, kernel, powers, engine.n_features, vector_bc, kept_bc))
            total = engine._summed(finals, range_tasks.FINAL_SUMS, rounded=True)
        if values_id is not None:
            self._dropped.append(values_id)
        engine._processed += (1, self.summary.n_rows, 1)
        if total is None:
            zero = np.zeros(engine.n_features)
            return ((np.zeros(len(kernel.statistics)), np.zeros(len(kernel.statistics))),
                    [zero for _ in powers]), kept
        stats, sums = total
        # the cut steps of Xᵀc added as one block would have, then rounded (step_sums.py)
        return (stats, [step_sums.rounded_stepped(t) for t in sums]), kept

    def _tasks(self) -> dict:
        """Which task of a pass (partition of :meth:`SparkEngine._pass_refs`) holds each block:
        where the final stage's parts of a block go (one small job per store)."""
        if self._task_of is None:
            pairs = self.engine._pass_refs().mapPartitionsWithIndex(range_tasks.task_partitions).collect()
            self._task_of = dict(pairs)
        return self._task_of

    def _bounds(self, vector, plan: rc.CountPlan) -> tuple:
        """The range boundaries of a pass at ``vector``: from the scores of the driver's fixed
        sample of rows (any boundaries give the same counts; these balance the ranges)."""
        if self._sample is None:
            n_blocks = max(len(self._block_partitions), 1)
            n_sample = max(SAMPLES_PER_RANGE * self.n_ranges // n_blocks, 8)
            parts = self.engine._pass_refs().mapPartitions(
                range_tasks.sample_rows_task(n_sample, self._row_start)).collect()
            rows = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
            lengths = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
            indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            indices = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, dtype=np.int32)
            data = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0)
            self._sample = (rows, store.CsrArrays(indptr, indices, data, (rows.shape[0], self.engine.n_features)))
        rows, X = self._sample
        scores = matvec(X, np.ascontiguousarray(vector[: self.engine.n_features])) if rows.size else np.zeros(0)
        return rc.sample_bounds(scores, rows, plan, self.n_ranges)

    def _step_plans(self) -> dict:
        """Each block's steps of ``Xᵀc`` (driver placement's: one ranking from row 0)."""
        if self._plans is None:
            offsets = np.array([0, self.summary.n_rows], dtype=np.int64)
            self._plans = step_sums.step_plans(self.engine.refs, self._row_start, offsets)
        return self._plans


def _pairs(m: float, squares: float) -> int:
    """Preference pairs of one ranking of ``m`` rows whose label levels' sizes squared sum to
    ``squares``: ``(m² - Σ n_ℓ²) / 2``."""
    return int(round((m * m - squares) / 2))


def _label_summary_task(max_levels: int):
    """Each block's distinct labels and their counts, or (more than ``max_levels``) a sample of
    its labels and ``None``."""

    def task(refs):
        for ref in refs:
            if not ref.n_rows:
                continue
            labels = np.asarray(store.open_block(ref.path, ref.width).groups.labels)
            values, counts = np.unique(labels, return_counts=True)
            if values.shape[0] <= max_levels:
                yield values, counts
            else:
                ordered = np.sort(labels)
                yield ordered[(np.arange(max_levels) * ordered.size) // max_levels], None

    return task


def _label_rows_task(buckets: rc.LabelBuckets):
    """Each block's labels, to their buckets."""

    def task(refs):
        for ref in refs:
            if not ref.n_rows:
                continue
            labels = np.asarray(store.open_block(ref.path, ref.width).groups.labels)
            bucket = buckets.of(labels)
            for b in np.unique(bucket):
                yield int(b), labels[bucket == b]

    return task


def _duplicate_squares_task():
    """A bucket's ``(Σ n_ℓ², rows)`` over its distinct labels (equal labels share a bucket)."""

    def task(records):
        labels = [v for _, v in records]
        if labels:
            _, counts = np.unique(np.concatenate(labels), return_counts=True)
            yield float((counts.astype(np.float64) ** 2).sum()), float(counts.sum())

    return task
