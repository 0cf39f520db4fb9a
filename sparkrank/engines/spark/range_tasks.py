"""Executor side of range placement (``range_placement.py``): the tasks of a pass.

A pass is one Spark job (the range boundaries come from the driver's fixed sample of rows,
:func:`sample_rows_task`):

one job of three stages, :func:`route_task` → :func:`middle_task` → :func:`final_task`:
   blocks compute ``X·v`` (kept beside the block as a file), send each row's events to its score ranges (and, for real-valued labels, its row to
   its label bucket) and their ``(bucket, range)`` histograms to one summing task; ranges
   sweep, buckets scan, the histograms are summed once; each block then gathers its rows'
   parts, adds the cross-range terms, runs the kernel's formula and returns
   ``(stats, Xᵀc sums with their cut steps)``, added up as driver placement's products are
   (``step_sums.py``).

The route and final stages open blocks, so both run over the cached block references: the
route stage maps them, and the final stage zips them (:func:`gathered`) with the middle
stage's parts shuffled to the same partitions (:func:`gathered_values`).  Spark places a
zipped task where its first parent's partition is cached, so a final task runs on the
executor that holds its blocks' files, as any pass's task does (and one that does not raises
:class:`~sparkrank.engines.spark.store.BlockMissingError`, which rebuilds the store).  The
scores files are a cache: a block rebuilt elsewhere from lineage between the stages has none,
and its task computes ``X·v`` again from the pass's vectors (the same bits).
"""

from __future__ import annotations

import glob
import os
from typing import Any

import numpy as np

from ...io.spark.worker import worker_task
from ...kernels import range_counts as rc
from ...kernels.counting import PairCounts
from ...numerics.linalg import matvec
from .store import app_dir, open_block
from .column_merge import SumLayout
from .step_sums import add_stepped, add_stepped_lists, block_products, rounded_stepped, STEPPED_SUMS
from .tasks import add_dd

#: Middle-stage record tags.
RANGE, BUCKET, HIST = 0, 1, 2


def scores_file(block_path: str, file_id: int) -> str:
    """Where a pass keeps a block's scores (or values) ``file_id``."""
    return os.path.join(block_path, f"range-{file_id}.npy")


def _remove_quietly(paths) -> None:
    """Delete these files; one already gone (another task of this host removed it) is no error."""
    for path in paths:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def _drop_files(block_path: str, file_ids: tuple[int, ...]) -> None:
    _remove_quietly(scores_file(block_path, fid) for fid in file_ids)


def sample_rows_task(n_sample: int, row_start: dict[int, int]):
    """``n_sample`` rows of each block at evenly spaced positions, as CSR pieces ``(global rows,
    row lengths, column indices, values)``: the driver's fixed sample, whose scores at each
    pass's ``w`` place the range boundaries (no job over the data for them)."""

    def task(refs):
        for ref in refs:
            if not ref.n_rows:
                continue
            X = open_block(ref.path, ref.width).X
            picks = (np.arange(min(n_sample, ref.n_rows)) * ref.n_rows) // min(n_sample, ref.n_rows)
            if isinstance(X, np.ndarray):
                dense = np.asarray(X[picks], dtype=np.float64)
                cols = [np.flatnonzero(row) for row in dense]
                vals = [row[c] for row, c in zip(dense, cols)]
            else:
                spans = [(int(X.indptr[i]), int(X.indptr[i + 1])) for i in picks]
                cols = [np.asarray(X.indices[a:b]) for a, b in spans]
                vals = [np.asarray(X.data[a:b], dtype=np.float64) for a, b in spans]
            yield (picks.astype(np.int64) + row_start[ref.partition], np.array([c.size for c in cols], dtype=np.int64),
                   np.concatenate(cols).astype(np.int32) if cols else np.zeros(0, dtype=np.int32),
                   np.concatenate(vals) if vals else np.zeros(0))

    return worker_task(task)


def _saved(path: str, values: np.ndarray) -> None:
    """Write a scores file whole or not at all (a retried task may write it again meanwhile)."""
    tmp = f"{path}.{os.getpid()}.npy"
    np.save(tmp, values)
    os.replace(tmp, path)


def _scores(ref, X, file_id: int, vector_bc, write: bool) -> np.ndarray:
    """``X·v`` of a block: computed and (``write``) kept as ``file_id`` beside it, or read back
    from that file; recomputed when the file is not there (the block was rebuilt from lineage
    on another executor after the file was written)."""
    path = scores_file(ref.path, file_id)
    if not write:
        try:
            return np.load(path)
        except FileNotFoundError:
            pass
    fresh = matvec(X, vector_bc.value[: ref.width])
    if write:
        _saved(path, fresh)
    return fresh


def _block_values(ref, X, job, vector_bc, kept_bc, route: bool):
    """``(scores the pairs are counted at, values summed, the kernel's scores)`` of a block.  The
    route stage computes ``X·v`` and keeps it in a file for the final stage: a value pass's
    scores as ``job.scores_id``, a Hessian pass's ``u`` as ``job.values_id`` (its scores are the
    kept ``job.scores_id``, those of ``kept_bc``'s vector)."""
    plan = job.plan
    at_state = plan.values == "vector"
    fresh = _scores(ref, X, job.values_id if at_state else job.scores_id, vector_bc, route)
    if not at_state:
        return fresh, (fresh if plan.values == "scores" else None), fresh
    return _scores(ref, X, job.scores_id, kept_bc, False), fresh, fresh


def route_task(job, vector_bc, kept_bc, dropped: tuple[int, ...]):
    """Stage 1: each block's ``X·v``, its events to their ranges, rows to their buckets,
    histograms to one task (``job``: :class:`~sparkrank.engines.range_placement.PassJob`);
    first the files of ``dropped`` (passes done with) are deleted."""

    def task(refs):
        for ref in refs:
            _drop_files(ref.path, dropped)
            if not ref.n_rows:
                continue
            start = job.row_start[ref.partition]
            block = open_block(ref.path, ref.width)
            labels, weights = np.asarray(block.groups.labels), block.groups.row_weights  # weights: None unweighted
            p, values, _ = _block_values(ref, block.X, job, vector_bc, kept_bc, True)
            if weights is not None and values is not None:
                values = weights * values  # a partner adds a_j·v_j (kernels/range_counts.py)
            rows = np.arange(start, start + ref.n_rows, dtype=np.int64)
            range_p, range_q = rc.route(p, rows, job.plan, job.bounds)
            bucket = job.buckets.of(labels)
            yield job.hist_task, (HIST, ref.partition, rc.histograms(bucket, range_p, range_q, values,
                                                                     job.buckets.n_buckets, job.n_ranges, weights))
            keys = _label_keys(job, labels, bucket)
            for r in np.unique(np.concatenate([range_p, range_q])):
                yield int(r), _range_chunk(job, ref.partition, start, p, keys, values, weights, range_p, range_q, int(r))
            if not job.buckets.exact:
                for b in np.unique(bucket):
                    at = np.flatnonzero(bucket == b)  # rows ascending: the scan's tie order, no row numbers
                    yield job.n_ranges + int(b), (BUCKET, ref.partition, start, labels[at], range_p[at],
                                                  range_q[at], *(None if a is None else a[at] for a in (values, weights)))

    return worker_task(task)


def _label_keys(job, labels: np.ndarray, bucket: np.ndarray) -> np.ndarray:
    """What a range's sweep ranks rows by: graded labels' buckets (one per label, in label
    order: the same ranks in 4 bytes instead of 8), else the labels."""
    return bucket if job.buckets.exact else labels


def _range_chunk(job, partition: int, start: int, p, keys, values, weights, range_p, range_q, r: int):
    """A block's events in range ``r`` as the route stage ships them: ``(RANGE, block partition,
    first row, p-events, event values, label keys, values, weights)``, p-events (rows ascending)
    then q-events (rows ascending), the arrays only: the final stage finds the rows again from
    its own ``route``, so neither row numbers nor kinds travel (the shuffle's bytes are what
    a range pass spends most of its time on)."""
    at_p, at_q = np.flatnonzero(range_p == r), np.flatnonzero(range_q == r)
    positions = np.concatenate([at_p, at_q])
    event_values = np.concatenate([p[at_p], rc.q_keys(p[at_q], job.plan.margin)])
    return (RANGE, partition, start, int(at_p.size), event_values, keys[positions],
            *(None if a is None else a[positions] for a in (values, weights)))


def order_file(job, scores_id: int, index: int | str) -> str:
    """Where the middle task of range ``index`` keeps the order of its events at the scores
    ``scores_id`` (beside the store's blocks on this host: removed with them; ``index`` ``"*"``:
    the pattern of every range's)."""
    return os.path.join(app_dir(job.owner), job.store_id, f"range-order-{scores_id}-{index}.npy")


def _drop_orders(job, scores_ids: tuple[int, ...]) -> None:
    _remove_quietly(path for sid in scores_ids for path in glob.glob(order_file(job, sid, "*")))


def _events_order(job, index: int, values, is_p) -> np.ndarray:
    """The order of range ``index``'s events: a Hessian pass's (``at_state``) is its value
    pass's, the same events, kept in a file by that pass's task for this range when it ran on
    this host (else sorted again: the same order); a squared hinge value pass, whose state
    TRON's Hessian passes count at, keeps its order so."""
    if job.plan.at_state:
        try:
            order = np.load(order_file(job, job.scores_id, index))
            if order.shape[0] == values.shape[0]:
                return order
        except (FileNotFoundError, ValueError):  # another host's range, or a file cut short
            pass
    order = rc.range_order(values, is_p, None, job.plan.inclusive, arranged=True)
    if job.plan.values == "scores":
        path = order_file(job, job.scores_id, index)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _saved(path, order)
    return order


def _sweep_chunks(job, index: int, parts: list):
    """Range ``index``'s sweep over its blocks' chunks (:func:`_range_chunk`); yields each
    block's ``(task, (partition, (RANGE, index, counts, sums)))``, counts and sums in the chunk's
    event order (``sums`` ``None`` when the pass sums no values)."""
    parts = sorted(parts, key=lambda c: c[2])  # blocks in row order
    first_p = rc.q_kind(job.plan.inclusive) == 1  # which kind comes first at equal values
    # the events in (kind, row) order, so that a stable sort by value alone orders them
    pieces = [(i, slice(0, c[3]) if take_p else slice(c[3], None), take_p)
              for take_p in (first_p, not first_p) for i, c in enumerate(parts)]
    values, keys, sums_of, weights = (None if parts[0][f] is None else
                                      np.concatenate([parts[i][f][at] for i, at, _ in pieces]) for f in range(4, 8))
    sizes = [parts[i][4][at].shape[0] for i, at, _ in pieces]
    is_p = np.concatenate([np.full(n, take_p) for n, (_, _, take_p) in zip(sizes, pieces)])
    counts, sums = rc.sweep_range(values, is_p, None, keys, sums_of, job.plan.inclusive, arranged=True,
                                  weights=weights, order=_events_order(job, index, values, is_p))
    if counts.dtype == np.int64 and counts.shape[0] < 2 ** 31:  # at most the range's events: 4 bytes each
        counts = counts.astype(np.int32)
    ends = np.cumsum(sizes)
    mine: dict[int, list] = {i: [] for i in range(len(parts))}
    for (i, _, take_p), end, n in zip(pieces, ends, sizes):
        mine[i].append((not take_p, counts[end - n:end], None if sums_of is None else sums[end - n:end]))
    for i, chunk in enumerate(parts):
        got = sorted(mine[i], key=lambda t: t[0])  # p-events first, as the chunk has them
        chunk_sums = None if sums_of is None else np.concatenate([g[2] for g in got])
        yield job.task_of[chunk[1]], (chunk[1], (RANGE, index, np.concatenate([g[1] for g in got]), chunk_sums))


def task_partitions(index: int, refs):
    """``(block partition, index)`` of each block of the pass's task ``index``."""
    return [(ref.partition, index) for ref in refs]


def gathered(items):
    """A partition's items as one list: one element each side of the final stage's ``zip``
    (which pairs its sides' elements one by one)."""
    return [list(items)]


def gathered_values(records):
    """The values of a partition's ``(key, value)`` records as one list (see :func:`gathered`)."""
    return [[value for _, value in records]]


def _concat(parts: list, i: int):
    arrays = [p[i] for p in parts]
    return None if arrays[0] is None else np.concatenate(arrays)


def middle_task(job, dropped: tuple[int, ...]):
    """Stage 2, by partition: a range's sweep, a bucket's scan, or the histograms' sum; yields
    ``(block partition, record)`` for the final stage; a range's task first deletes the kept
    orders of ``dropped`` (passes done with) on its host."""

    def task(index, records):
        if index < job.n_ranges:
            _drop_orders(job, dropped)
        parts = [value for _, value in records]
        if index == job.hist_task:
            hist = None
            for _, partition, h in sorted(parts, key=lambda t: t[1]):  # a fixed order of addition
                hist = h if hist is None else hist + h
            for partition in job.partitions:
                yield job.task_of[partition], (partition, (HIST, hist))
            return
        if not parts:
            return
        if parts[0][0] == RANGE:
            yield from _sweep_chunks(job, index, parts)
        else:
            yield from _scan_chunks(job, index - job.n_ranges, parts)

    return worker_task(task)


def _scan_chunks(job, bucket: int, parts: list):
    """Bucket ``bucket``'s scan over its blocks' rows (:func:`route_task`'s ``BUCKET`` records);
    yields each block's ``(task, (partition, (BUCKET, bucket, n_above, s_above, n_below,
    s_below)))`` in the rows' order, which the final stage finds again from its own buckets.

    The blocks in row order and each block's rows ascending put the rows in global row order,
    so their positions order equal labels as the row numbers would (none travel)."""
    parts = sorted(parts, key=lambda c: c[2])
    labels, range_p, range_q, vals, weights = (_concat(parts, i) for i in range(3, 8))
    positions = np.arange(labels.shape[0], dtype=np.int64)
    above, s_above, below, s_below = rc.scan_bucket(labels, positions, range_p, range_q, vals, job.n_ranges, weights)
    if above.dtype == np.int64 and above.shape[0] < 2 ** 31:  # at most the bucket's rows: 4 bytes each
        above, below = above.astype(np.int32), below.astype(np.int32)
    ends = np.cumsum([c[3].shape[0] for c in parts])
    for chunk, end, n in zip(parts, ends, (c[3].shape[0] for c in parts)):
        cut = slice(end - n, end)
        yield job.task_of[chunk[1]], (chunk[1], (BUCKET, bucket, above[cut], s_above[cut], below[cut], s_below[cut]))


def _pair_counts(job, ref, parts, p, labels, weighted: bool) -> PairCounts:
    """A block's counts (``weighted``: weight sums): the cross-range terms from the histograms
    plus the ranges' and buckets' parts of its rows."""
    start = job.row_start[ref.partition]
    rows = np.arange(start, start + ref.n_rows, dtype=np.int64)
    range_p, range_q = rc.route(p, rows, job.plan, job.bounds)
    bucket = job.buckets.of(labels)
    hist = next(part[1] for part in parts if part[0] == HIST)
    n_above, s_above, n_below, s_below = rc.cross_terms(hist, bucket, range_p, range_q, weighted)
    # ranges before buckets: each row's terms added in one order, whatever order the shuffle gave
    for part in sorted(parts, key=lambda t: t[0]):
        if part[0] == RANGE:
            _, r, counts, sums = part
            at_p, at_q = np.flatnonzero(range_p == r), np.flatnonzero(range_q == r)  # as _range_chunk cut them
            n_below[at_p] += counts[: at_p.size]
            n_above[at_q] += counts[at_p.size:]
            if sums is not None:
                s_below[at_p] += sums[: at_p.size]
                s_above[at_q] += sums[at_p.size:]
        elif part[0] == BUCKET:
            _, b, a, sa, d, sd = part
            at = np.flatnonzero(bucket == b)  # as route_task cut them
            n_above[at] += a
            s_above[at] += sa
            n_below[at] += d
            s_below[at] += sd
    return PairCounts(n_above, n_below, s_above, s_below)


def final_task(job, kernel, powers: tuple[int, ...], n_features: int, vector_bc, kept_bc):
    """Stage 3, over the zipped ``(this task's block references, their parts)``: each block's
    kernel result from its rows' counts; yields ``(stats, [SteppedSums per product])`` as
    :func:`~sparkrank.engines.spark.step_sums.block_products` sums ``Xᵀc`` (driver placement's steps)."""
    from ..tiles import pass_products

    def task(zipped):
        for refs, records in zipped:
            parts: dict[int, list] = {}
            for partition, part in records:
                parts.setdefault(partition, []).append(part)
            for ref in refs:
                if ref.n_rows:
                    yield _final(job, kernel, powers, n_features, ref, parts.get(ref.partition, []), vector_bc,
                                 kept_bc, pass_products)

    return worker_task(task)


def _final(job, kernel, powers, n_features, ref, parts, vector_bc, kept_bc, pass_products):
    block = open_block(ref.path, ref.width)
    p, _, scores = _block_values(ref, block.X, job, vector_bc, kept_bc, False)
    groups = block.groups
    counts = _pair_counts(job, ref, parts, p, np.asarray(groups.labels), groups.weighted)
    result = rc.finish(kernel, counts, scores, groups.row_factors() if groups.weighted else None)
    wanted = pass_products(result, powers)
    return result.stats_dd(), block_products(block, ref, job.row_start[ref.partition], wanted,
                                             job.step_plans[ref.partition], n_features)


def add_final(a: Any, b: Any):
    """``treeAggregate`` combiner of :func:`final_task`'s outputs ``(stats, [SteppedSums])``
    (``None``: nothing yet; the products ``None`` where the column-sliced merge took them out)."""
    if a is None:
        return b
    if b is None:
        return a
    (sa, pa), (sb, pb) = a, b
    return add_dd(sa, sb), add_stepped_lists(pa, pb)


#: Where :func:`final_task`'s outputs keep their column sums (:mod:`.column_merge`).
FINAL_SUMS = SumLayout(add_final, lambda o: ((o[0], None), list(o[1])), lambda rest, sums: (rest[0], sums),
                       add_stepped, rounded_stepped, STEPPED_SUMS.piece, STEPPED_SUMS.unpiece)