"""SparkEngine: the local engine's interface over distributed, cached blocks.

Two placements of the score-space kernel (docs/design.md §2):

* ``executor``: rows are hash-partitioned by query id so no group is ever split; each
  task runs the kernel on its own groups and returns only ``(stats, Xᵀc)``, summed by
  ``treeAggregate``.  The driver never holds an m-length array.  Kernel state (TRON's
  sorted order) stays beside the block on the executor.
* ``driver`` (the default for one global ranking): the driver gathers the scores ``X·w``, runs the
  kernel, broadcasts ``c``; executors compute ``Xᵀc``, ``treeAggregate`` sums.  ``range``: range_placement.py.

A pass sends the vector inside its tasks (up to :data:`INLINE_ARRAY_BYTES`) or as a broadcast
destroyed afterwards (Spark ML's ``RDDLossFunction``), runs a task per block (:meth:`~SparkEngine._pass_refs`),
and adds wide column sums up by slices on the executors (``column_merge.py``).  Blocks are
memory-mapped files on the executors (``store.py``), built by :class:`~.building.StoreBuilding`.

Failures: a lost executor's blocks come back through the cached references' lineage and
its kept states through their recipes; a task that finds no block file makes the engine
rebuild the whole store.  Either way the pass is retried, at most :data:`MAX_RECOVERIES`
times, and the numbers are the undisturbed run's.  Block files go when the engine closes
(a cleanup job), when the driver exits (:func:`_close_at_exit`), when a standalone worker
ends the application, and, for local applications that died without either, at the next
start (``store.sweep_stale_applications``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import logging
import os
import shutil
from typing import Literal

import numpy as np

from ...data.block import DataError
from ...data.weights import WeightColumns
from ...io.spark.columns import feature_spec
from ...io.spark.errors import ClusterError
from ...kernels.base import ScoreKernel
from ...numerics.exact_sum import dd_round
from .. import tiles
from ..base import ColumnMoments, DataSummary, Engine, PassResult, StateHandle
from . import column_merge, kernel_state, sizing, step_sums, store, tasks
from .placements import checked_placement
from .building import DRIVER_PARTIALS_ENTRIES, StoreBuilding, auto_aggregation_depth  # noqa: F401 - its names
from .progress import job_progress

log = logging.getLogger("sparkrank.spark")

Placement = Literal["auto", "executor", "driver", "range"]
#: Rebuilds (of the block store, or of lost kernel states) one pass may need before it gives up.
MAX_RECOVERIES = 3


class ExecutorLossError(ClusterError):
    """Blocks or kernel states kept being lost: the pass failed :data:`MAX_RECOVERIES` times."""


#: Local mode: the block directories of this driver's applications, removed at exit.  Paths, not
#: engines: an engine whose close() was interrupted (Ctrl-C during its clean-up job or its build),
#: or that was collected before the exit, leaves its files there all the same.
_LOCAL_APP_DIRS: set[str] = set()
_EXIT_HOOK: list[bool] = []


def _close_at_exit() -> None:
    """Driver exit hook: remove this driver's block directories.

    Local mode: the executors share this host, so the application's directory is removed
    here (no Spark job at exit: the context may be going down).  On a cluster the worker
    deletes each application's local directories, block files included, when it ends.
    """
    for path in list(_LOCAL_APP_DIRS):
        shutil.rmtree(path, ignore_errors=True)


#: Tasks per core of a pass on a local master (each over several blocks when there are more).
LOCAL_TASKS_PER_CORE = 2
#: Arrays up to this size (a weight vector of up to 8,192 features) go to the executors inside
#: each task instead of as a broadcast.  A broadcast costs a pass its creation and a blocking
#: destroy, ~0.1 s of a 10M-row TRON pass on local[2] (Hessian pass 0.82-0.88 s with one,
#: 0.70-0.75 s without), while 20 tasks carrying 64 KB each cost nothing measurable.
INLINE_ARRAY_BYTES = 64 << 10


class SparkEngine(StoreBuilding, Engine):
    """Runs passes over a Spark DataFrame of ranking rows.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        One row per item: a label column, optionally a group-id column, and features as a
        Spark ML vector, an array column, or ``indices``/``values`` list columns.
    label_col, qid_col, features_col, weight_col, group_weight_col : str
        Column names; ``qid_col=None`` (or a missing column) means one global ranking; weights: data/weights.py.
    placement : {"auto", "executor", "driver", "range"}
        Where the kernel runs; ``auto`` = executor with group ids; ``range``: see range_placement.py.
    num_partitions : int, optional
        Blocks to build.  Default: from the memory model (:mod:`sparkrank.engines.spark.sizing`), enough
        that each Python worker's block fits its budget, at least the context's default
        parallelism and a multiple of the workers that run at once; the default parallelism
        when the input's size is unknown.
    dtype : float64 or float32
        Feature storage precision on the executors.
    aggregation_depth : int, optional
        Depth of ``treeAggregate``; default 1 (one stage per pass), or, where the blocks' partial
        sums would crowd the driver, the column-sliced merge (:mod:`.column_merge`).
    n_features : int, optional
        Feature count (default: the largest index seen + 1).
    drop_invalid_rows : bool
        Drop :data:`~sparkrank.data.block.INVALID_ROWS` (counted in the log and in
        ``dropped_rows``) instead of failing on them.
    parquet_files : list of str, optional
        Local Parquet files of which ``df`` is a plain, unfiltered scan.  In executor
        placement the blocks are then read from them directly, a run of row groups per
        block, without the JVM shuffle (:mod:`sparkrank.engines.spark.parquet_blocks`), whenever
        the rows of each query are contiguous in the files and there are at least as many
        row groups as partitions; otherwise rows are shuffled.
    row_locator : callable, optional
        ``row_locator(dtype, drop_invalid_rows=...) -> "file: row n: detail" | None``: the local
        engine's message for the bad rows of a source whose files are local, by reading them
        in-process (:meth:`sparkrank.io.sources.Source.locate_row`), on the error path only.
    input_name : str, optional
        The input as messages name it (:attr:`sparkrank.io.sources.Source.name`), for errors
        only the driver can tell whole (a group weight that differs within a query).
    size_hint : sparkrank.data.memory.DataShape, optional
        The input's shape as its source tells it before reading (rows, features, stored
        entries), for the default partition count when ``df`` is not a plain Parquet scan.

    Raises
    ------
    sparkrank.data.memory.MemoryBudgetError
        When a pass cannot fit the memory the session's settings give it (the message names the
        setting to raise): checked before building where the input's width is known, and after.
    """

    def __init__(
        self,
        df,
        *,
        label_col: str = "label",
        qid_col: str | None = "qid",
        features_col: str = "features",
        placement: Placement = "auto",
        num_partitions: int | None = None,
        dtype: type = np.float64,
        aggregation_depth: int | None = None,
        n_features: int | None = None,
        drop_invalid_rows: bool = False,
        parquet_files: list[str] | None = None,
        row_locator=None,
        size_hint=None,
        weight_col: str | None = None, group_weight_col: str | None = None, n_ranges: int | None = None,
        input_name: str | None = None,
    ):
        self.spark = df.sparkSession
        self.sc = self.spark.sparkContext
        self.owner = store.Owner.of_this_driver(self.sc.applicationId)
        self.is_local = self.sc.master.startswith("local")
        self._session_memory = None  # read when first needed (_memory)
        # where the block manager keeps its directories: the executors' blocks go beside them
        self.local_dir = str(self.sc._jvm.org.apache.spark.util.Utils.getConfiguredLocalDirs(self.sc._jsc.sc().conf())[0])
        self._reset_store_state()
        if self.is_local:  # the executors share this host: sweep what dead applications left
            # ... once their directory is known to be this user's alone (refused here, in one
            # line, rather than in every task)
            store.app_dir(self.owner, self.local_dir)
            for path in store.sweep_stale_applications(self.owner.app_id, self.local_dir):
                log.info("removed stale block directory %s", path)
        names = df.columns
        if label_col not in names:
            raise DataError(f"no label column {label_col!r}; columns are {', '.join(names)}")
        if qid_col is not None and qid_col not in names:
            qid_col = None
        self.label_col, self.qid_col = label_col, qid_col
        self.weights = WeightColumns(weight_col, group_weight_col).present_in(names)  # data/weights.py
        self.spec = feature_spec(df, features_col)
        self.placement, self._n_ranges = checked_placement(placement, qid_col), n_ranges
        self.dtype = np.dtype(dtype).name
        self._auto_partitions = num_partitions is None
        self.num_partitions = num_partitions or sizing.default_partitions(
            self._memory(), sizing.input_shape(df, self.spec, np.dtype(dtype).itemsize, parquet_files, size_hint),
            self.sc.defaultParallelism)
        if aggregation_depth is not None and aggregation_depth < 1:
            raise ValueError(f"the treeAggregate depth must be at least 1, got {aggregation_depth}")
        self.aggregation_depth = aggregation_depth
        # the executors' tile size, fixed for the engine's life: kept states are one per tile
        self.tile_bytes = tiles.TILE_BYTES
        self._requested_features = n_features
        if drop_invalid_rows:
            df = self._drop_invalid_rows(df)
            parquet_files = None  # the filter runs in Spark
        self._source_df = df  # where a bad row's file and row are looked up (locate.py)
        self.input_name = input_name
        self._row_locator = None if row_locator is None else \
            functools.partial(row_locator, drop_invalid_rows=drop_invalid_rows)
        self._df = self._arrange(df)
        self._parquet_files = list(parquet_files or []) if self.placement == "executor" else []
        self._open()

    #: What an engine derived from this one (a fold view, :mod:`sparkrank.engines.spark.folds`)
    #: shares with it: the session, the columns, the placement and the block layout.
    SHARED_SETTINGS = ("spark", "sc", "owner", "is_local", "local_dir", "label_col", "qid_col", "weights", "spec",
                       "placement", "num_partitions", "dtype", "aggregation_depth", "tile_bytes", "_source_df",
                       "input_name", "_row_locator", "_df", "_auto_partitions", "_session_memory")

    def _memory(self) -> sizing.SessionMemory:
        """The session's memory settings (read once)."""
        if getattr(self, "_session_memory", None) is None:
            self._session_memory = sizing.SessionMemory.of(self.sc, self.is_local)
        return self._session_memory

    def _reset_store_state(self) -> None:
        """What belongs to this engine's own blocks: stores, kept states and their recipes,
        cached references, counters (none yet)."""
        self._store_ids: list[str] = []
        self._recipes: dict[int, kernel_state.StateRecipe] = {}
        self._state_ids = itertools.count(1)
        self._released: list[int] = []
        self._driver_states: dict[int, object] = {}
        self.dropped_rows = 0
        self._passes_started = False
        self._processed = np.zeros(3, dtype=np.int64)  # passes, rows, groups since progress()
        self._refs_df = self._refs_rdd = None
        self._plans_bc = None  # driver placement: the partitions' steps of Xᵀc (_step_plans)
        self._coalesced = None  # local master: the references in fewer tasks (_pass_refs)
        self._parquet_files: list[str] = []
        self._digest = self._range = None  # data_digest() (made on first use); range placement's passes

    def _open(self) -> None:
        """Build the blocks, the engine registered for closing at exit first."""
        if self.is_local:
            _LOCAL_APP_DIRS.add(os.path.join(store.blocks_root(self.local_dir), self.owner.app_id))
        if not _EXIT_HOOK:
            atexit.register(_close_at_exit)
            _EXIT_HOOK.append(True)
        self._build()

    # -- the Engine interface ------------------------------------------------------------
    @property
    def summary(self) -> DataSummary:
        return self._summary

    def run(self, vector, kernel: ScoreKernel, *, state=None, keep_state=False) -> PassResult:
        if state is not None and state.released:
            raise RuntimeError("kernel state was already released")
        vector = np.ascontiguousarray(vector, dtype=np.float64)
        if self.placement == "executor":
            return self._with_recovery(lambda replay: self._run_executor(vector, kernel, state, keep_state, replay))
        if self._range is not None:  # (a rebuild replaces self._range: looked up in each attempt)
            return self._with_recovery(lambda replay: self._range.run(vector, kernel, state, keep_state))
        return self._with_recovery(lambda replay: self._run_driver(vector, kernel, state, keep_state))

    def _with_recovery(self, attempt):
        """``attempt(replay)`` until it returns a result: a block file missing on a task's host
        rebuilds the store, lost kernel states (:class:`~sparkrank.engines.spark.store.MissingStates`)
        are replayed from their recipes; at most :data:`MAX_RECOVERIES` times."""
        replay = False
        for n in range(MAX_RECOVERIES + 1):
            try:
                with self._first_pass_progress():
                    result = attempt(replay)
            except Exception as exc:  # a block file missing on the task's host: rebuild the store
                if "BlockMissingError" not in str(exc):
                    raise
                self._recover(n, "block files missing on an executor; rebuilding the block store", exc)
                self._drop_refs()
                self._build()
                replay = True  # the new store has no kept states
                continue
            if isinstance(result, kernel_state.MissingStates):
                self._recover(n, f"kernel state lost with an executor in {len(result.partitions)} "
                                 "partition(s); recomputing it from its recipe", None)
                replay = True
                continue
            return result

    def _first_pass_progress(self):
        """Progress lines during the first pass, where every Python worker compiles (or loads
        from numba's cache) the kernels; later passes are quick and stay quiet."""
        if self._passes_started:
            return contextlib.nullcontext()
        self._passes_started = True
        return job_progress(self.spark.sparkContext, "first pass (executors load or compile the numba kernels)")

    def _recover(self, attempt: int, what: str, cause: Exception | None) -> None:
        if attempt >= MAX_RECOVERIES:
            raise ExecutorLossError(
                f"a Spark pass failed {MAX_RECOVERIES + 1} times because executors kept losing sparkrank's "
                f"blocks ({what}); check the executors' logs for why they die (memory, preemption)"
            ) from cause
        log.warning("%s (recovery %d of at most %d)", what, attempt + 1, MAX_RECOVERIES)

    @contextlib.contextmanager
    def _broadcast(self, *values):
        """Handles with a ``.value`` for the tasks of a pass: a broadcast of each value, destroyed
        when the pass is done, as Spark ML's ``RDDLossFunction`` does, except that an array of at
        most :data:`INLINE_ARRAY_BYTES` travels inside the tasks themselves
        (:class:`~sparkrank.engines.spark.store.InlineValue`; ``None`` stays ``None``)."""
        handles = [None if v is None else tasks.InlineValue(v)
                   if isinstance(v, np.ndarray) and v.nbytes <= INLINE_ARRAY_BYTES else self.sc.broadcast(v)
                   for v in values]
        try:
            yield handles
        finally:
            for h in handles:
                if h is not None and not isinstance(h, tasks.InlineValue):
                    h.destroy()

    def _pass_refs(self):
        """The block references a pass runs over: one task per block on a cluster (a task must
        run where its block's files are), and on a local master at most
        :data:`LOCAL_TASKS_PER_CORE` tasks per core, each over several blocks in turn (a pass's
        cost in Spark is mostly per task: ~15 ms of JVM CPU each on this host)."""
        tasks = LOCAL_TASKS_PER_CORE * max(self.sc.defaultParallelism, 1)
        if not self.is_local or self._refs_rdd.getNumPartitions() <= tasks:
            return self._refs_rdd
        if self._coalesced is None:
            self._coalesced = self._refs_rdd.coalesce(tasks)
        return self._coalesced

    def _tree_sum(self, task, sums, rounded: bool = False):
        """``task``'s outputs over every block added up by ``treeAggregate`` with the combiner ``sums``,
        or, when ``sums`` is a :class:`~.column_merge.SumLayout` whose column sums are wide, by the
        column-sliced merge (``rounded``: they come back rounded, as :func:`~.tasks.rounded_sums`)."""
        return self._summed(self._pass_refs().mapPartitions(task), sums, rounded)

    def _summed(self, outputs, sums, rounded: bool = False):
        """:meth:`_tree_sum` of an RDD of outputs, one partition per task of a pass."""
        n_tasks = outputs.getNumPartitions()
        layout = sums if isinstance(sums, column_merge.SumLayout) else None
        slices = 0 if layout is None else self._merge_slices(n_tasks)
        if slices:
            return column_merge.column_merged(outputs, layout, self.n_features, slices, rounded)
        combine = sums if layout is None else layout.combine
        depth = self.aggregation_depth or auto_aggregation_depth(n_tasks, self.n_features)
        return outputs.treeAggregate(None, combine, combine, depth=depth)

    def _gather_scores(self, bw) -> np.ndarray:
        """Driver placement: ``X·w`` of all rows in block order (``bw``: the broadcast ``w``)."""
        parts = sorted(self._pass_refs().mapPartitions(tasks.scores_task(bw)).collect(), key=lambda t: t[0])
        return np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)

    def _run_executor(self, vector, kernel, state, keep_state, replay: bool):
        in_id = None if state is None else state.payload
        recipe = None if in_id is None else self._recipes[in_id]
        released = tuple(self._released)
        out_id = next(self._state_ids) if keep_state else None
        with self._broadcast(vector, recipe if replay else None) as (bw, recipe_bc):
            task = tasks.executor_pass_task(bw, kernel, self.n_features, in_id, out_id, released, recipe_bc,
                                             self.tile_bytes)
            total = self._tree_sum(task, tasks.PASS_SUMS, rounded=True)
        if isinstance(total, kernel_state.MissingStates):
            if out_id is not None:  # states some partitions wrote in this failed attempt
                self._released.append(out_id)
            return total
        self._released = [sid for sid in self._released if sid not in released]
        if keep_state:
            self._recipes[out_id] = kernel_state.StateRecipe(out_id, vector, kernel, recipe)
        stats, grad, counts, moments = total if total is not None else \
            ((np.zeros(0), np.zeros(0)), None, np.zeros(2), None)
        self._processed += (1, int(counts[0]), int(counts[1]))
        grad = None if grad is None else tasks.rounded_sums(grad)
        moments = None if moments is None else [tasks.rounded_sums(m) for m in moments]
        return PassResult(dd_round(stats), grad, StateHandle(out_id) if keep_state else None, moments)

    def _run_driver(self, vector, kernel, state, keep_state) -> PassResult:
        with self._broadcast(vector) as (bw,):
            scores = self._gather_scores(bw)
        result = kernel(self.groups, scores, None if state is None else self._driver_states[state.payload])
        # Xᵀc and the moments of the kernel's moment_coef, in one job
        grad_sums, moments = tiles.split_products(result, (1,), self._driver_products(tiles.pass_products(result, (1,))))
        grad = None if grad_sums is None else grad_sums[0]
        handle = None
        if keep_state:
            sid = next(self._state_ids)
            self._driver_states[sid] = result.state
            handle = StateHandle(sid)
        self._processed += (1, self._summary.n_rows, self._summary.n_groups)
        return PassResult(dd_round(result.stats_dd()), grad, handle, moments)

    def _driver_products(self, products: list[tuple[np.ndarray, int]]) -> list[np.ndarray]:
        """Driver placement: ``Xᵀc`` (power 1) or ``(X∘X)ᵀc`` (power 2) of each ``(c, power)`` over
        every block, rounded (one job for all of them, each distinct ``c`` broadcast once; no job
        without products)."""
        if not products:
            return []
        index: dict[int, tuple[int, np.ndarray]] = {}  # id(c) -> (its broadcast's position, c)
        for c, _ in products:
            index.setdefault(id(c), (len(index), c))
        wanted = tuple((index[id(c)][0], p) for c, p in products)
        with self._broadcast(*[np.ascontiguousarray(c, dtype=np.float64) for _, c in index.values()]) as bcs:
            task = step_sums.driver_products_task(bcs, wanted, self.row_start, self.n_features, self._step_plans())
            total = self._tree_sum(task, step_sums.STEPPED_SUMS, rounded=True)
        if total is None:
            return [np.zeros(self.n_features) for _ in products]
        # the steps of Xᵀc that the partitions cut added as one partition would have, then rounded
        return [step_sums.rounded_stepped(t) for t in total]

    def _step_plans(self):
        """Driver placement: a broadcast, kept until the blocks change, of each partition's steps
        of ``Xᵀc`` (:func:`~.step_sums.step_plans`) for :meth:`_driver_products`."""
        if self._plans_bc is None:
            self._plans_bc = self.sc.broadcast(step_sums.step_plans(self.refs, self.row_start, self.groups.offsets))
        return self._plans_bc

    def column_moments(self, vector, kernel: ScoreKernel) -> ColumnMoments:
        """``(stats, Xᵀc, (X∘X)ᵀc)`` in one stateless pass (the kernel runs where :meth:`run`'s would);
        retried like :meth:`run` when block files went missing."""
        vector = np.ascontiguousarray(vector, dtype=np.float64)
        if self._range is not None:
            return self._with_recovery(lambda replay: self._range.column_moments(vector, kernel))
        return self._with_recovery(lambda replay: self._column_moments(vector, kernel))

    def _column_moments(self, vector, kernel: ScoreKernel) -> ColumnMoments:
        with self._broadcast(vector) as (bw,):
            if self.placement == "executor":
                total = self._tree_sum(tasks.column_moments_task(bw, kernel, self.n_features, self.tile_bytes),
                                       tasks.MOMENT_SUMS, rounded=True)
            else:
                result = kernel(self.groups, self._gather_scores(bw), None)
                first, second = self._driver_products([(result.coef, 1), (result.coef, 2)])
                self._processed += (1, self._summary.n_rows, self._summary.n_groups)
                return ColumnMoments(dd_round(result.stats_dd()), first, second)
        if total is None:
            zero = np.zeros(self.n_features)
            total = ((np.zeros(0), np.zeros(0)), (zero, zero), (zero, zero), np.zeros(2))
        self._processed += (1, self._summary.n_rows, self._summary.n_groups)
        return ColumnMoments(dd_round(total[0]), tasks.rounded_sums(total[1]), tasks.rounded_sums(total[2]))

    def progress(self) -> dict[str, int]:
        passes, rows, groups = (int(v) for v in self._processed)
        self._processed[:] = 0
        return {"passes": passes, "rows": rows, "groups": groups}

    def release(self, state: StateHandle) -> None:
        if state.released:
            return
        state.released = True
        if self._range is not None:
            self._range.release(state)
        elif self.placement == "executor":
            self._released.append(state.payload)  # deleted by the next pass's tasks
            self._recipes.pop(state.payload, None)  # (a later state's recipe may still hold it)
        else:
            self._driver_states.pop(state.payload, None)

    def feature_statistics(self):
        """Per-feature statistics in two passes over the blocks (the tasks of :meth:`_pass_refs`):
        their column totals, then their squared deviations from the mean, each added up exactly
        by ``treeAggregate`` (:class:`~sparkrank.engines.base.FeatureStatistics`: the local
        engine's bits)."""
        from ..base import FeatureStatistics

        totals = self._tree_sum(tasks.column_totals_task(), tasks.add_totals)
        if totals is None or totals.count == 0:
            return FeatureStatistics.empty(self.n_features)
        with self._broadcast(totals.mean()) as (mean,):
            squares = self._tree_sum(tasks.centred_squares_task(mean, self.n_features), tasks.COLUMN_SUMS)
        return FeatureStatistics.from_totals(totals.padded(self.n_features), tasks.dense_sums(squares))

    def data_digest(self):
        """The blocks' :class:`~sparkrank.data.digest.DataDigest` s added up (one job, on first
        use); in driver placement the chunks that blocks cut are joined and hashed here."""
        from ...data.digest import DataDigest, digest_pieces

        if self._digest is None:
            parts = self._with_recovery(lambda replay: self._pass_refs().mapPartitions(
                tasks.digest_task(self._cut_plans())).collect())
            total = DataDigest()
            for digest, _ in parts:
                total = total.add(digest)
            self._digest = total.add(digest_pieces([p for _, pieces in parts for p in pieces]))
        return self._digest

    def _cut_plans(self) -> dict | None:
        """Driver placement, where blocks may cut queries (:meth:`_arrange`): where each block's rows
        start and end in their queries (:func:`~sparkrank.data.digest.cut_plan`); else ``None``."""
        from ...data.digest import cut_plan

        if self.placement not in ("driver", "range"):
            return None
        offsets = np.array([0, self._summary.n_rows]) if self._range is not None else self.groups.offsets
        return {r.partition: cut_plan(offsets, self.row_start[r.partition],
                                      self.row_start[r.partition] + r.n_rows) for r in self.refs if r.n_rows}

    def close(self) -> None:
        """Delete the block files and drop the cached references."""
        if getattr(self, "_refs_rdd", None) is None:
            return
        try:
            self._refs_rdd.mapPartitions(store.cleanup_task(self.owner, tuple(self._store_ids))).collect()
        finally:
            self._drop_refs()
            self._recipes.clear()

