"""How a :class:`~sparkrank.engines.spark.engine.SparkEngine` builds its blocks: the rows (invalid ones
dropped when asked) arranged in partitions, each decoded once on the executors into a block
(:mod:`.store`: rows shuffled by query id; :mod:`.parquet_blocks`: Parquet row groups read as
they are), a bad row named as the local engine names it (:mod:`.locate`), the blocks checked
(one width, the memory the passes need) and summed up; in driver placement the global groups
gathered on the driver."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid

import numpy as np

from ...data.block import INVALID_ROWS, DataError
from ...data.groups import QueryGroups
from ...data.memory import MemoryBudgetError, pass_result_bytes
from ...data.weights import GroupWeightError
from ..base import DataSummary
from . import column_merge, sizing, store, tasks
from .locate import FILE_COLUMN, FILE_ROW_COLUMN, is_row_error, locate_row_error, select_with_file_rows
from .progress import job_progress

log = logging.getLogger("sparkrank.spark")

_ROW_ID = "__sparkrank_row_id"


def _with_read_order(df, cols: list[str]):
    """``df``'s ``cols`` and the columns that order its rows as they were read, with their names:
    for Parquet files the file and the row in it (:func:`~sparkrank.engines.spark.locate.file_row_columns`:
    the local reader's order), else Spark's partition order (``monotonically_increasing_id``).
    The order of a query's rows decides the steps of ``Xᵀc`` (``exact_sum``), and Spark reads
    the larger files first."""
    from pyspark.sql import functions as F

    selected = select_with_file_rows(df, cols)
    if selected is not None:
        return selected, [FILE_COLUMN, FILE_ROW_COLUMN]
    # not a Parquet scan (an SVMlight or user DataFrame, CSV): no row numbers
    return df.select(*cols).withColumn(_ROW_ID, F.monotonically_increasing_id()), [_ROW_ID]


#: Float64 entries of partial sums the driver may receive from one pass at depth 1 (32 MB).
DRIVER_PARTIALS_ENTRIES = 4 << 20


def auto_aggregation_depth(n_partitions: int, n_features: int) -> int:
    """``treeAggregate`` depth for a pass: 1 while the blocks' partial sums (a pass sends at most
    six double-double-sized vectors of ``n_features``: ``Xᵀc`` and two column moments, hi and
    lo) stay under :data:`DRIVER_PARTIALS_ENTRIES` together, else 2 (Spark ML's default).

    Why not always 2: at depth 2 a pass over more than nine blocks becomes two stages with a
    shuffle between them (PySpark first sums groups of ~sqrt(P) blocks on executors); on 20
    blocks of 50k rows (1M x 136 float32, local[2]) a pass took 0.56-0.63 s at depth 2 and
    0.37 s at depth 1, and the vectors are small (136 features: 6.5 KB per block).
    """
    return 1 if n_partitions * n_features * 6 <= DRIVER_PARTIALS_ENTRIES else 2


def merge_slices(n_partitions: int, n_features: int, parallelism: int, depth: int | None,
                 tree_bytes: int = 0, worker_bytes: int | None = None) -> int:
    """How a pass's wide column sums are added up: ``0`` for ``treeAggregate`` (at ``depth``, when
    it was asked for, or at depth 1 while the blocks' partial sums stay under
    :data:`DRIVER_PARTIALS_ENTRIES`), else the slices of the column-sliced merge
    (:mod:`.column_merge`; one per core of the cluster, ``parallelism``, or more, as a Python
    worker's ``worker_bytes`` need: :func:`~.column_merge.slice_count`) when ``treeAggregate`` would
    send the driver (``tree_bytes``) more than twice the merge's rounded sums.

    Why: ``treeAggregate`` sends every task's sums of the full width to the driver (at depth 2
    about √P of them), which the driver adds on one core.  The merge sends the same bytes through a
    shuffle and then each column once more, rounded.  2²⁴ hashed ids on ``local[2]``, value pass /
    Hessian pass, the two run in turn three times: 1M rows in 2 blocks (1.6 GB of dense sums to the
    driver) 11–16 s / 4–6 s merged against 20–35 s / 4–7 s; 200k rows (~0.5 GB of sparse sums)
    7.5–10 s / 1.9–3.1 s merged against 5.3–8.2 s / 1.4–2.1 s."""
    if depth is not None or auto_aggregation_depth(n_partitions, n_features) == 1:
        return 0
    if tree_bytes <= 2 * sizing.merged_sums_bytes(n_features):
        return 0
    return column_merge.slice_count(n_features, parallelism, worker_bytes)


class StoreBuilding:
    """The block-building half of :class:`~sparkrank.engines.spark.engine.SparkEngine` (its
    settings, ``close`` and ``_pass_refs`` are the engine's)."""

    def _drop_invalid_rows(self, df):
        from pyspark.sql import functions as F

        label = F.col(self.label_col)
        bad = label.isNull() | F.isnan(label) | (F.abs(label) == float("inf"))
        if self.qid_col:
            bad = bad | F.col(self.qid_col).isNull()
        bad = F.coalesce(bad, F.lit(True))
        self.dropped_rows = df.filter(bad).count()
        if self.dropped_rows:
            log.warning("dropped %d %s", self.dropped_rows, INVALID_ROWS)
        return df.filter(~bad)

    def _arrange(self, df):
        cols = [self.label_col] + ([self.qid_col] if self.qid_col else [])
        cols += self.spec.columns + self.weights.columns
        df, order = _with_read_order(df, cols)
        P = self.num_partitions
        if self.placement == "executor":
            # hash partitioning by query id: a group is never split across partitions
            df = df.repartition(P, self.qid_col).sortWithinPartitions(self.qid_col, *order)
        elif self.qid_col:
            # range partitioning keeps groups contiguous in the global (partition-major) order
            df = df.repartitionByRange(P, self.qid_col, *order).sortWithinPartitions(self.qid_col, *order)
        else:
            df = df.repartitionByRange(P, *order).sortWithinPartitions(*order)
        return df.drop(*order)

    def _new_store(self) -> str:
        self.store_id = uuid.uuid4().hex[:12]
        self._store_ids.append(self.store_id)
        return self.store_id

    def _build(self) -> None:
        t0 = time.perf_counter()
        refs = self._build_from_parquet() if self._parquet_files else None
        if refs is None:
            refs = self._build_by_shuffle()
        self._check_built(refs, t0)

    def _build_by_shuffle(self) -> list:
        task = store.build_block_task(self.owner, self._new_store(), self.label_col, self.qid_col, self.spec,
                                      self.dtype, self.weights)
        self._refs_df = self._df.mapInArrow(task, store.REF_SCHEMA).cache()
        log.info("building %d blocks (shuffling rows by %s and decoding them on the executors)",
                 self.num_partitions, self.qid_col or "row order")
        with job_progress(self.spark.sparkContext, "building blocks"):
            refs = sorted(self._refs_df.collect(), key=lambda r: r.partition)
        errors = [r.error for r in refs if r.error]
        if errors:
            self._drop_refs()
            raise DataError(self._located_error(errors, "partitions", is_row_error(errors[0])))
        # a Python-side cached copy of the tiny refs: passes then skip the DataFrame-to-RDD
        # row conversion, and the cached partitions keep the executor locality of the blocks
        self._refs_rdd = self._refs_df.rdd.persist()
        self._refs_rdd.count()
        return refs

    def _build_from_parquet(self) -> list | None:
        """Blocks read straight from the Parquet files (``parquet_blocks.py``), or
        ``None`` (nothing kept) when the rows must be shuffled after all."""
        from . import parquet_blocks as pb

        cols = [self.label_col, self.qid_col, *self.spec.columns, *self.weights.columns]
        try:
            row_groups = pb.plan_row_groups(self._parquet_files, cols)
        except OSError as exc:
            log.info("reading the Parquet footers failed (%s); shuffling rows instead", exc)
            return None
        if not row_groups:
            return None  # no rows, or a column Spark adds (a Hive partition): Spark reads them
        wanted = self.num_partitions
        if self._auto_partitions:  # a block is whole row groups: no more blocks than row groups
            wanted = min(wanted, max(len(row_groups), self.sc.defaultParallelism))
        runs = pb.split_runs(row_groups, wanted)
        if len(runs) < wanted:
            # a block is a run of whole row groups: fewer blocks than partitions would leave
            # cores idle in every later pass (a file written as one row group is one block)
            log.info("the files have %d Parquet row groups for %d partitions; shuffling rows by %s instead",
                     len(row_groups), self.num_partitions, self.qid_col)
            self._parquet_files = []
            return None
        task = pb.build_task(self.owner, self._new_store(), row_groups, runs, self.label_col, self.qid_col,
                             self.spec, self.dtype, self.weights)
        log.info("building %d blocks (reading %d Parquet row groups of %d files straight into them)",
                 len(runs), len(row_groups), len(self._parquet_files))
        self._refs_rdd = self.sc.parallelize(range(len(runs)), max(len(runs), 1)) \
            .mapPartitionsWithIndex(task).persist()
        with job_progress(self.spark.sparkContext, "building blocks"):
            refs = sorted(self._refs_rdd.collect(), key=lambda r: r.partition)
        why = None
        if any(pb.is_unreadable(r.error) for r in refs):
            why = next(r.error for r in refs if pb.is_unreadable(r.error))
        elif pb.repeated_group_ids([r for r in refs if not r.error]):
            why = "the rows of a query are not contiguous in the files"
        if why is None:
            errors = [r.error for r in refs if r.error]
            if not errors:
                return refs
            self._discard_store()
            raise DataError(self._located_error(errors, "blocks", next(r for r in refs if r.error).row_error))
        log.info("%s; shuffling rows by %s instead", why, self.qid_col)
        self._discard_store()
        self._parquet_files = []  # later rebuilds shuffle too
        return None

    def _located_error(self, errors: list[str], parts: str, row_error: bool) -> str:
        """The message for the blocks' ``errors`` (one per ``parts`` that failed, in order): the
        local engine's when the first is about a row (``row_error``;
        :func:`~sparkrank.engines.spark.locate.locate_row_error`: the first file with a bad row, checked
        as the local reader checks it, whichever blocks held its rows), else the first error
        and how many more ``parts`` failed.  Group weights that differ within queries are told
        as the local engine tells them, from every block's (:class:`GroupWeightError`)."""
        differing = [e for e in errors if e.startswith(GroupWeightError.MARKER)]
        if differing:
            return str(GroupWeightError.merged(differing, self.weights.group, self.input_name))
        if row_error:
            located = locate_row_error(self._source_df, self.label_col, self.qid_col, self.spec, self.dtype,
                                       self._row_locator)
            if located is not None:
                return located
        return errors[0] + (f" (and {len(errors) - 1} more {parts} with errors)" if len(errors) > 1 else "")

    def _discard_store(self) -> None:
        """Delete the current store's block files and drop its references."""
        try:
            self._refs_rdd.mapPartitions(store.cleanup_task(self.owner, (self.store_id,))).collect()
        finally:
            self._drop_refs()

    def _drop_refs(self) -> None:
        for cached in (self._refs_rdd, self._refs_df):
            if cached is not None:
                cached.unpersist()
        self._refs_rdd = self._refs_df = self._coalesced = None
        if self._plans_bc is not None:  # the next blocks may cut the rows elsewhere
            plans, self._plans_bc = self._plans_bc, None
            with contextlib.suppress(Exception):  # a context already stopped holds no broadcast
                plans.destroy()

    def _check_built(self, refs, t0: float) -> None:
        self.refs = refs
        width = max((r.width for r in refs), default=0)
        width_error = store.fixed_width_error(refs, store.feature_type(self._df.schema, self.spec))
        if width_error:
            self.close()
            raise DataError(width_error)
        if self._requested_features is not None and width > self._requested_features:
            self.close()  # the blocks were built: delete them and drop the cached references
            raise DataError(f"data has feature index {width - 1} but n_features={self._requested_features}")
        self.n_features = self._requested_features or width
        self.row_start: dict[int, int] = {}
        start = 0
        for r in refs:
            self.row_start[r.partition] = start
            start += r.n_rows
        n_rows = start
        self._check_memory(refs)
        if self.placement == "range":
            from .range_placement import RangePlacement

            # a rebuilt store (a lost block) keeps the fit's kept states and label buckets
            self._range = RangePlacement(self, self._n_ranges, previous=self._range)
            self._summary = self._range.summary
        elif self.placement == "driver":
            self._collect_driver_groups()
            g = self.groups
            self._summary = DataSummary(n_rows, self.n_features, g.n_groups, g.n_pairs, g.n_groups_without_pairs,
                                        bool(self.weights))
        else:
            self._summary = DataSummary(n_rows, self.n_features, sum(r.n_groups for r in refs),
                                        sum(r.n_pairs for r in refs), sum(r.n_groups_without_pairs for r in refs),
                                        bool(self.weights))
        s = self._summary
        log.info("spark %s placement: %d partitions, %d rows, %d groups (%d without pairs), %d pairs, "
                 "%d features, %.1f MB cached as memory-mapped blocks, built in %.1fs",
                 self.placement, len(refs), s.n_rows, s.n_groups, s.n_groups_without_pairs, s.n_pairs,
                 s.n_features, sum(r.nbytes for r in refs) / 1e6, time.perf_counter() - t0)

    def _merge_slices(self, n_tasks: int) -> int:
        """Slices of the column-sliced merge of a pass over ``n_tasks`` tasks, 0 for ``treeAggregate``
        (:func:`merge_slices`)."""
        nnz = [int(r.nnz) for r in self.refs if r.n_rows]
        tree_bytes = pass_result_bytes(self.n_features, nnz, n_tasks, auto_aggregation_depth(n_tasks, self.n_features))[0]
        return merge_slices(n_tasks, self.n_features, self.sc.defaultParallelism, self.aggregation_depth,
                            tree_bytes, self._memory().budget.bytes)

    def _check_memory(self, refs) -> None:
        """Refuse passes that cannot fit the session's memory (:func:`sizing.check_passes`),
        the blocks deleted first."""
        tasks = self._pass_refs().getNumPartitions()
        depth = self.aggregation_depth or auto_aggregation_depth(tasks, self.n_features)
        slices = self._merge_slices(tasks)
        try:
            sizing.check_passes(self._memory(), refs, tasks, depth, self.n_features, self.placement, slices)
        except MemoryBudgetError:
            self.close()
            raise

    def _collect_driver_groups(self) -> None:
        parts = sorted(self._refs_rdd.mapPartitions(tasks.labels_task()).collect(), key=lambda t: t[0])
        labels = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
        if self.qid_col and parts:
            qids = np.concatenate([p[2] for p in parts])
            change = np.ones(len(qids), dtype=bool)
            change[1:] = qids[1:] != qids[:-1]
            offsets = np.append(np.flatnonzero(change), len(qids)).astype(np.int64)
            self.groups = QueryGroups.from_offsets(labels, offsets)
        else:
            self.groups = QueryGroups.single(labels)
        if self.weights:  # the blocks' weights, checked as they were built (data/weights.py)
            row = np.concatenate([p[3][0] if p[3] else np.ones(len(p[1])) for p in parts]) if parts else np.zeros(0)
            per_row = np.concatenate([p[3][1] if p[3] else np.ones(len(p[1])) for p in parts]) if parts else row
            self.groups = self.groups.with_weights(row, per_row[self.groups.offsets[:-1]])
