"""The Spark engine's memory plan: how many blocks to build, and whether a pass fits the driver.

The numbers come from the memory model (:mod:`sparkrank.data.memory`); this module reads the
session's settings and the data's shape for it:

* before building, the default partition count (:func:`default_partitions`): from the input's
  shape (Parquet footers, a size hint of the source, else Spark's own size estimate of the
  plan) and each Python worker's budget;
* after building, with the blocks' exact rows, stored entries and width, the refusals
  (:func:`check_passes`): a pass's partial sums against the Python workers' budget, what one
  pass sends to the driver against ``spark.driver.maxResultSize`` and the driver's JVM heap,
  and, in driver placement, the scores the driver gathers against the driver host's memory.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ...data import memory
from ...data.memory import DataShape, WorkerBudget

log = logging.getLogger("sparkrank.spark")


@dataclass(frozen=True)
class SessionMemory:
    """What the session gives: each Python worker's budget, the workers an executor runs at once,
    the driver's JVM heap and the settings for messages."""

    budget: WorkerBudget
    workers: int
    heap_bytes: int | None
    max_result_size: str | None
    driver_memory: str | None

    @classmethod
    def of(cls, sc, local: bool) -> "SessionMemory":
        conf = sc.getConf()

        def get(key):
            return conf.get(key, None)

        workers = _concurrent_workers(sc, get, local)
        try:
            heap = int(sc._jvm.java.lang.Runtime.getRuntime().maxMemory())
        except Exception:  # noqa: BLE001 - no JVM to ask (a connect client): no heap check
            heap = None
        return cls(memory.worker_budget(get, local=local, cores=workers), workers, heap,
                   get("spark.driver.maxResultSize"), get("spark.driver.memory"))


def _concurrent_workers(sc, get, local: bool) -> int:
    """Python workers one executor runs at once: local mode's cores; else the executor's cores
    (``spark.executor.cores``, or the cores over the executors) over ``spark.task.cpus``."""
    per_task = max(int(get("spark.task.cpus") or 1), 1)
    if local:
        return max(sc.defaultParallelism // per_task, 1)
    cores = get("spark.executor.cores")
    if cores is None:
        executors = max(int(sc._jsc.sc().getExecutorMemoryStatus().size()) - 1, 1)
        cores = -(-sc.defaultParallelism // executors)
    return max(int(cores) // per_task, 1)


def input_shape(df, spec, itemsize: int, parquet_files: list[str] | None, hint: DataShape | None) -> DataShape | None:
    """The input's shape before building: from the Parquet footers of a plain scan, else the
    source's ``hint``, else Spark's estimate of the plan's size (bytes of a file scan; ``None``
    when Spark does not know), taken as dense float64 rows of 1 KB."""
    if parquet_files:
        try:
            found = memory.parquet_shape(parquet_files, spec, itemsize)
        except OSError:
            found = None
        if found is not None:
            return found
    if hint is not None:
        return hint
    try:
        size = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # noqa: BLE001 - no plan statistics: no estimate
        return None
    if not 0 < size < 1 << 50:  # Spark's "unknown" is Long.MaxValue
        return None
    return DataShape(rows=max(size // 1024, 1), features=128, itemsize=8)


def default_partitions(session: SessionMemory, shape: DataShape | None, minimum: int) -> int:
    """Blocks to build when none were asked for (:func:`memory.partition_count`); ``minimum``
    (the default parallelism) when the input's shape is unknown.  Refuses an input whose pass
    sums cannot fit a worker (:func:`memory.check_worker`).  An input wider than the feature
    limit is left to the build, whose refusal names the row and ``--max-features``, as the local
    engine's does."""
    from ...data.block import max_features_limit

    if shape is None or shape.features > max_features_limit():
        return minimum
    if not shape.sparse_passes:  # a sparse pass's sums follow a block's entries (partition_count)
        memory.check_worker(shape.features, memory.PARTIAL_FEATURE_BYTES * shape.features, session.budget)
    values = shape.features if shape.dense else -(-shape.nnz // max(shape.rows, 1))
    input_bytes = memory.build_input_bytes(values, 8)
    parts = memory.partition_count(shape, session.budget, session.workers, minimum=minimum, input_bytes=input_bytes)
    log.info("%d partitions: %s, ~%s a block, for Python workers of %s each (%s, %d at once)", parts,
             shape.describe(), memory.size_text(memory.worker_block_bytes(shape.part(parts))),
             memory.size_text(session.budget.bytes), session.budget.source, session.workers)
    return parts


def column_merge_bytes(n_features: int, slices: int) -> tuple[int, int]:
    """``(to the driver, a slice's sums)`` of a pass whose sums the column-sliced merge
    (:mod:`.column_merge`) adds up in ``slices`` slices: the driver gets each column's rounded sums
    once; a slice's task holds its slice's double-doubles and one task's piece of them (the two
    that :func:`~sparkrank.data.memory.check_worker` counts)."""
    width = -(-n_features // max(slices, 1))
    return merged_sums_bytes(n_features), memory.PARTIAL_FEATURE_BYTES * width


def merged_sums_bytes(n_features: int) -> int:
    """What the driver receives of a pass whose sums the column-sliced merge added up: each
    column's three products once, rounded (float64)."""
    return memory.PARTIAL_FEATURE_BYTES // 2 * n_features


def check_passes(session: SessionMemory, refs, tasks: int, depth: int, n_features: int, placement: str,
                 slices: int = 0) -> None:
    """Refuse, in one line naming the setting, passes that cannot fit (see the module docstring);
    ``slices``: those of the column-sliced merge of a pass's sums (0: ``treeAggregate``)."""
    built = [r for r in refs if r.n_rows]
    nnz = [int(r.nnz) for r in built]
    to_driver, per_task = memory.pass_result_bytes(n_features, nnz, tasks, depth)
    block_partial = max((memory.block_partial_bytes(n_features, z) for z in nnz), default=0)
    per_slice = 0
    if slices:
        to_driver, per_slice = column_merge_bytes(n_features, slices)
    memory.check_worker(n_features, max(per_task, block_partial, per_slice), session.budget)
    if placement == "executor":
        what = f"a pass over {n_features:,} features ({tasks} tasks' partial sums)"
        memory.check_driver_results(to_driver, what, session.max_result_size, session.heap_bytes,
                                    session.driver_memory)
        return
    # driver and range placement: the blocks' column sums and cut steps, as they reach the driver
    products = memory.driver_products_bytes(to_driver, nnz, [int(r.n_rows) for r in built])
    if placement == "range":  # no score per row
        memory.check_driver_results(products, "one global ranking in range placement (the blocks' column sums, each "
                                    "pass)", session.max_result_size, session.heap_bytes, session.driver_memory)
        return
    rows = sum(int(r.n_rows) for r in built)
    scores = 8 * rows + 64 * len(built)
    memory.check_driver_results(max(scores, products),
                                f"one global ranking of {rows:,} rows (driver placement: its scores, or the "
                                "blocks' column sums, each pass)", session.max_result_size, session.heap_bytes,
                                session.driver_memory)
    need = memory.driver_placement_bytes(rows)
    free, source = memory.available_memory()
    if need > free:
        raise memory.MemoryBudgetError(
            f"one global ranking of {rows:,} rows (driver placement) needs ~{memory.size_text(need)} in the driver "
            f"process ({memory.DRIVER_ROW_BYTES} bytes a row: its scores, labels, coefficients and sort), more than "
            f"the {memory.size_text(free)} it can have ({source}); run the driver on a host with more memory")
