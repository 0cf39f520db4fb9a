"""The memory model: bytes per row, per stored entry and per feature, by engine and layout.

Used before anything is allocated:

* the Spark engine's default partition count (:func:`partition_count`): blocks small enough
  that each Python worker's share of the data, and what a pass adds to it, stay within the
  worker's budget (:func:`worker_budget`, from ``spark.executor.memory`` or, in local mode,
  ``spark.driver.memory``, ``spark.python.worker.memory``, ``spark.executor.pyspark.memory``
  and the cores that run workers at once);
* the Spark engine's refusals, one line naming the setting to raise, when a pass's column sums
  cannot fit a Python worker (:func:`check_worker`) or the driver
  (:func:`check_driver_results`: ``spark.driver.maxResultSize`` and the driver's JVM heap), or
  when one global ranking's scores cannot fit the driver process (driver placement);
* the local engine's refusal when the rows cannot fit this process (:func:`check_local`).

What a block holds (``engines/spark/store.py``, ``data/block.py``; exact, :func:`DataShape.block_bytes`):
dense rows ``rows x features x itemsize``; CSR an ``int64`` row pointer per row, an ``int32``
column and an ``itemsize`` value per stored entry; per row a ``float64`` label and an ``int32``
label rank; per group an ``int64`` offset, ``int32`` level count, ``float64`` pair count and an
``int64`` query id.  The rest are measured constants (2M x 136 dense rows on local[2], TRON):
each is named below with what it covers.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from typing import Callable

from ..numerics.sparse_sums import SPARSE_PASS_MIN_FEATURES as _SPARSE_PASS_MIN_FEATURES
from ..numerics.sparse_sums import SUM_BATCH_BYTES as _SUM_BATCH_BYTES

MiB = 1 << 20
GiB = 1 << 30

#: Bytes per row of a block besides its features: label (float64) and label rank (int32).
ROW_BYTES = 8 + 4
#: Bytes per group: offset (int64), level count (int32), pair count (float64), query id (int64).
GROUP_BYTES = 8 + 4 + 8 + 8
#: Rows per query group assumed when the count is unknown (LETOR sets: ~120; fewer rows per
#: group is more groups, so this errs towards more bytes only for tiny groups).
ROWS_PER_GROUP = 100
#: Bytes per row a pass adds in a Python worker, besides the block: the scores (float64), the
#: kept kernel state read back (TRON: scores, order, sweep plan, ~24), one tile's coefficients.
PASS_ROW_BYTES = 8 + 24 + 8
#: Bytes per row while a block is built (``engines/spark/block_writer.py``): labels and query ids kept
#: until the block is done (16) and the grouping's temporaries (sorts, level ids: ~64).
BUILD_ROW_BYTES = 16 + 64
#: Bytes per feature of one block's partial sums: ``Xᵀc`` and the preconditioner's two column
#: moments as double-doubles (3 x 2 float64); a merge of two holds both.
PARTIAL_FEATURE_BYTES = 3 * 2 * 8
#: A block's column sums over at least this many features travel as their non-zero columns
#: (an int64 index and a double-double each) when those are at most a quarter of them
#: (``numerics.sparse_sums.SparseSums``); the sum of two such stays so while the two together
#: cover at most two thirds of the features (no more bytes than the dense sums).
SPARSE_SUMS_MIN_FEATURES = 1 << 16
#: CSR rows over at least this many features take the sparse passes
#: (:mod:`sparkrank.numerics.sparse_sums`): their cost follows the stored entries, not the width.
SPARSE_PASS_MIN_FEATURES = _SPARSE_PASS_MIN_FEATURES
#: Bytes per stored entry the sparse passes keep beside the rows, besides its value: the tile's
#: column-major copy's row (int32 at worst), and at most one tile column's pointer and place
#: among the block's (int32 each) (:class:`sparkrank.numerics.tile_columns.TileColumns`).
SPARSE_ENTRY_BYTES = 4 + 4 + 4
#: Bytes per column a block touches (at most one per stored entry) of a sparse pass in process:
#: the block's column (int64) and the accumulator of three products' double-doubles (48).
SPARSE_COLUMN_BYTES = 8 + 48
#: A sparse pass's batch of tiles' sums waiting to be added (``numerics.sparse_sums.ColumnSums
#: .add_batch``): about this many bytes or the accumulator's (``sparse_sums.batch_bytes``), and
#: at most three products' double-doubles per entry.
SPARSE_BATCH_BYTES = _SUM_BATCH_BYTES
SPARSE_BATCH_ENTRY_BYTES = 48
#: ... and in a Spark Python worker, besides: the block's sums as they travel (three products,
#: an index and a double-double each) and a merge of two such.
SPARSE_SHIPPED_COLUMN_BYTES = 2 * 72
#: Dense float64 vectors of the full width the in-process engine and a solver hold at once
#: (TRON in a value pass: weights, trial point, gradient, two diagonals, six CG vectors kept
#: between solves, the pass's three rounded column sums).
SOLVER_VECTORS = 14
#: A Python worker before it holds any block: the interpreter, numpy, pyarrow, numba and the
#: compiled kernels (measured: 0.12-0.20 GB resident on local[2]).
WORKER_BASE_BYTES = 256 * MiB
#: Rows of the Arrow batches a block's builder holds at once: Parquet rows read straight from
#: the files (``engines/spark/parquet_blocks.py``), and Spark's Arrow batches in a shuffled build
#: (``spark.sql.execution.arrow.maxRecordsPerBatch``'s default).
READ_BATCH_ROWS = 1 << 14
ARROW_BATCH_ROWS = 10_000
#: Bytes pyarrow holds per byte of Parquet values it reads (values, repetition and definition
#: levels, offsets; measured 3.3 for a list<float> column), and per value decoded (the float64
#: copy and its check's mask).
PARQUET_READ_FACTOR = 3.5
DECODED_VALUE_BYTES = 8 + 1
#: Spark's reserved JVM memory (``RESERVED_SYSTEM_MEMORY_BYTES``), and how many copies of one
#: pass's results the JVM holds on the way to the driver (the executor's serialised result,
#: the block manager's, the driver's; measured on local[2]: 2 x 96 MiB passed a 1 GiB heap and
#: 2 x 144 MiB did not; 2 x 192 MiB passed 2 GiB and 2 x 240 MiB did not).
JVM_RESERVED_BYTES = 300 * MiB
JVM_RESULT_COPIES = 3.7
#: Bytes per row the driver process holds in driver placement: labels and ranks (12), the
#: gathered scores (8), the coefficients and their broadcast copy (16), the kernel's sort and
#: kept state (~40).
DRIVER_ROW_BYTES = 12 + 8 + 16 + 40
#: Bytes per row of the in-process engine's passes: scores and the remembered copy's (8), the
#: kept kernel state (~24), the coefficients of the tiles in flight (8).
LOCAL_PASS_ROW_BYTES = 8 + 24 + 8


class MemoryBudgetError(ValueError):
    """The data cannot fit the memory a setting gives it; the message names the setting."""


@dataclass(frozen=True)
class DataShape:
    """What the memory model needs to know of a data set (or of one block of it)."""

    rows: int
    features: int
    nnz: int | None = None  # stored entries of CSR; None: dense rows
    groups: int | None = None  # None: rows / ROWS_PER_GROUP
    itemsize: int = 8  # of a feature value: 8 (float64) or 4 (float32)

    @property
    def dense(self) -> bool:
        return self.nnz is None

    @property
    def n_groups(self) -> int:
        return self.groups if self.groups is not None else -(-self.rows // ROWS_PER_GROUP)

    def feature_bytes(self) -> int:
        if self.dense:
            return self.rows * self.features * self.itemsize
        return 8 * (self.rows + 1) + self.nnz * (4 + self.itemsize)

    def block_bytes(self) -> int:
        """The bytes of a block of these rows (``engines/spark/block_writer.py``'s arrays)."""
        return self.feature_bytes() + ROW_BYTES * self.rows + GROUP_BYTES * self.n_groups + 8

    def part(self, parts: int) -> "DataShape":
        """One of ``parts`` equal blocks of these rows (rounded up)."""
        parts = max(int(parts), 1)
        return replace(self, rows=-(-self.rows // parts), nnz=None if self.dense else -(-self.nnz // parts),
                       groups=-(-self.n_groups // parts))

    @property
    def sparse_passes(self) -> bool:
        """Whether passes over these rows sum their columns sparsely (:data:`SPARSE_PASS_MIN_FEATURES`)."""
        return not self.dense and self.features >= SPARSE_PASS_MIN_FEATURES

    def sparse_pass_bytes(self, shipped: bool = False) -> int:
        """What a sparse pass keeps beside the rows (``shipped``: and sends, from a Spark worker):
        O(stored entries), a block touching at most one column per entry."""
        if not self.sparse_passes:
            return 0
        per_column = SPARSE_COLUMN_BYTES + (SPARSE_SHIPPED_COLUMN_BYTES if shipped else 0)
        return (SPARSE_ENTRY_BYTES + self.itemsize) * self.nnz + per_column * min(self.nnz, self.features) \
            + self.sparse_batch_bytes()

    def sparse_batch_bytes(self) -> int:
        """The part of :meth:`sparse_pass_bytes` that grows with the columns touched, not the rows:
        a batch of tiles' sums (``numerics.sparse_sums.batch_bytes``; all of them when fewer)."""
        if not self.sparse_passes:
            return 0
        batch = max(SPARSE_BATCH_BYTES, SPARSE_BATCH_ENTRY_BYTES * min(self.nnz, self.features))
        return min(batch, SPARSE_BATCH_ENTRY_BYTES * self.nnz)

    def describe(self) -> str:
        layout = "dense rows" if self.dense else f"CSR, {self.nnz:,} stored entries"
        return f"{self.rows:,} rows x {self.features:,} features ({layout}, float{8 * self.itemsize})"


def size_text(n: float) -> str:
    """``n`` bytes for a message: ``"1.3 GiB"``, ``"512 MiB"``."""
    return f"{n / GiB:.1f} GiB" if n >= GiB else f"{max(n, 0) / MiB:.0f} MiB"


def spark_size_text(n: float) -> str:
    """``n`` bytes, rounded up, as a Spark setting takes it: ``"3g"``, ``"700m"``."""
    return f"{math.ceil(n / GiB)}g" if n >= 4 * GiB else f"{math.ceil(n / MiB)}m"


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)i?b?\s*$", re.I)


def parse_size(text: str, default_unit: str = "m") -> int:
    """Bytes of a Spark size setting (``"512m"``, ``"4g"``, ``"1.5g"``); a bare number is in
    ``default_unit`` (MiB for Spark's memory settings, bytes for ``maxResultSize``)."""
    match = _SIZE.match(str(text))
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    unit = (match.group(2) or default_unit).lower()
    return int(float(match.group(1)) * 1024 ** "bkmgtp".index(unit if unit in "kmgtp" else "b"))


# -- Spark: a Python worker -----------------------------------------------------------------------
@dataclass(frozen=True)
class WorkerBudget:
    """The memory one Python worker may use, and the settings it comes from."""

    bytes: int
    source: str  # for messages: "spark.driver.memory=1g over 2 cores"
    setting: str  # the setting to raise


def worker_budget(conf: Callable[[str], str | None], *, local: bool, cores: int) -> WorkerBudget:
    """Each Python worker's budget.  ``conf(key)`` reads a Spark setting (``None`` when unset);
    ``cores`` are the workers one executor runs at once (``local[N]``: N; a cluster executor's
    ``spark.executor.cores`` over ``spark.task.cpus``).

    ``spark.executor.pyspark.memory``, when set, is a hard limit that Spark splits among the
    executor's ``spark.executor.cores`` workers (1 unless set: in local mode every worker gets all
    of it).  Otherwise the workers share the executor's memory, ``spark.executor.memory`` (local
    mode: the driver's, ``spark.driver.memory``), or get ``spark.python.worker.memory`` each
    when that is more.
    """
    pyspark = conf("spark.executor.pyspark.memory")
    if pyspark:
        share = max(int(conf("spark.executor.cores") or 1), 1)
        return WorkerBudget(parse_size(pyspark) // share, f"spark.executor.pyspark.memory={pyspark}"
                            + (f" over {share} cores" if share > 1 else ""), "spark.executor.pyspark.memory")
    key = "spark.driver.memory" if local else "spark.executor.memory"
    memory = conf(key) or "1g"
    cores = max(int(cores), 1)
    shared = parse_size(memory) // cores
    each = parse_size(conf("spark.python.worker.memory") or "512m")
    if each > shared:
        return WorkerBudget(each, f"spark.python.worker.memory={conf('spark.python.worker.memory') or '512m'}",
                            "spark.python.worker.memory")
    return WorkerBudget(shared, f"{key}={memory}" + (f" over {cores} cores" if cores > 1 else ""), key)


def block_partial_bytes(n_features: int, nnz: int | None = None) -> int:
    """Bytes of one block's partial sums of a pass: dense, or its non-zero columns when at most
    ``nnz`` (the block's stored entries) of them can be and that is sparse enough to travel so."""
    if nnz is not None and n_features >= SPARSE_SUMS_MIN_FEATURES and 4 * min(nnz, n_features) <= n_features:
        return 3 * 24 * min(nnz, n_features)
    return PARTIAL_FEATURE_BYTES * n_features


def worker_fixed_bytes(partial: int) -> int:
    """What a Python worker needs for a pass whatever its block's rows: itself and two partial
    sums of ``partial`` bytes (a merge)."""
    return WORKER_BASE_BYTES + 2 * partial


def worker_block_bytes(block: DataShape) -> int:
    """What a Python worker holds of the block it runs a pass over: the block (memory-mapped),
    what the pass adds per row and, for sparse passes, per stored entry."""
    return block.block_bytes() + PASS_ROW_BYTES * block.rows + block.sparse_pass_bytes(shipped=True)


def build_input_bytes(values_per_row: int, arrow_value_bytes: int = 4) -> int:
    """The Arrow rows a block's builder holds at once, and their decoded copy: one batch of
    :data:`READ_BATCH_ROWS` rows of ``values_per_row`` values of ``arrow_value_bytes``."""
    rows = max(READ_BATCH_ROWS, ARROW_BATCH_ROWS)
    return int(rows * values_per_row * (arrow_value_bytes * PARQUET_READ_FACTOR + DECODED_VALUE_BYTES))


def check_worker(n_features: int, partial: int, budget: WorkerBudget) -> None:
    """Refuse, naming the setting, when a pass's partial sums (``partial`` bytes a block) alone
    overflow a Python worker's budget."""
    need = worker_fixed_bytes(partial)
    if need > budget.bytes:
        raise MemoryBudgetError(
            f"each Spark Python worker needs ~{size_text(need)} for a pass over {n_features:,} features (two "
            f"blocks' partial column sums of {size_text(partial)} each, and the worker itself), more than its "
            f"budget of {size_text(budget.bytes)} ({budget.source}); raise {budget.setting} to at least "
            f"{spark_size_text(need + WORKER_BASE_BYTES)}")


def partition_count(shape: DataShape, budget: WorkerBudget, workers: int, *, minimum: int = 1,
                    input_bytes: int = 0) -> int:
    """Blocks to build so that a Python worker stays within its budget both while it builds a
    block (the Arrow rows it reads, ``input_bytes``, and :data:`BUILD_ROW_BYTES` a row; the
    features go straight to the block's files) and while it runs a pass over one (the block,
    :data:`PASS_ROW_BYTES` a row, two dense partial sums): at least ``minimum``, and a multiple of
    ``workers`` (the workers that run at once) so no pass ends on one worker alone.  A build
    whose input alone overflows the budget is left to the pass's bound (smaller Parquet row
    groups are the remedy there, not more blocks)."""
    if shape.rows == 0:
        return max(minimum, 1)
    base = WORKER_BASE_BYTES
    # dense partial sums cost the width whatever the block; sparse ones are in worker_block_bytes
    partials = 0 if shape.sparse_passes else 2 * PARTIAL_FEATURE_BYTES * shape.features
    # a block's batch of tiles' sums, counted per entry (what a block of any size holds at most)
    batch = shape.sparse_batch_bytes()
    uncapped = SPARSE_BATCH_ENTRY_BYTES * shape.nnz if shape.sparse_passes else 0
    pass_room = budget.bytes - base - partials
    per_row = (worker_block_bytes(shape) - batch + uncapped) / shape.rows
    rows = pass_room / per_row if pass_room > 0 else 1.0  # check_worker refuses a pass that cannot fit
    build_room = budget.bytes - base - input_bytes
    if build_room > 0:
        rows = min(rows, build_room / BUILD_ROW_BYTES)
    parts = max(math.ceil(shape.rows / max(rows, 1.0)), minimum, 1)
    workers = max(int(workers), 1)
    return -(-parts // workers) * workers


# -- Spark: the driver --------------------------------------------------------------------------
def driver_partials(partitions: int, depth: int) -> int:
    """How many partial results a ``treeAggregate`` of ``depth`` over ``partitions`` sends to the
    driver (PySpark's ``RDD.treeAggregate``: levels are added while they shorten the tree)."""
    n = float(max(partitions, 1))
    scale = max(int(math.ceil(n ** (1.0 / max(depth, 1)))), 2)
    while n > scale + n / scale:
        n /= scale
    return max(int(n), 1)


def pass_result_bytes(n_features: int, block_nnz: list[int], tasks: int, depth: int) -> tuple[int, int]:
    """``(to the driver, largest of one task)``: the bytes of one executor-placement pass's
    partial sums that reach the driver, over blocks of ``block_nnz`` stored entries run as
    ``tasks`` tasks merged by a ``treeAggregate`` of ``depth``.  A task over one block sends its
    block's sums (sparse when they may be); a task over several, or a level of the tree, sums
    them: dense."""
    dense = PARTIAL_FEATURE_BYTES * n_features
    tasks = max(min(tasks, len(block_nnz)), 1)
    per_task = [block_partial_bytes(n_features, z) for z in block_nnz] if len(block_nnz) <= tasks else [dense] * tasks
    final = driver_partials(tasks, depth)
    return (sum(per_task) if final >= tasks else final * dense), max(per_task, default=0)


def driver_products_bytes(block_sums_bytes: int, block_nnz: list[int], block_rows: list[int], products: int = 3) -> int:
    """Driver and range placement's products of a pass at the driver: the blocks' column sums
    (``block_sums_bytes``, as they arrive) and the terms of the steps each block cuts (at most 3
    rows at each end: a column index and a term per stored entry and product, 16 bytes)."""
    return block_sums_bytes + sum(products * 6 * 16 * -(-int(z) // max(int(r), 1)) for z, r in zip(block_nnz, block_rows))


def check_driver_results(result_bytes: int, what: str, max_result_size: str | None, heap_bytes: int | None,
                         driver_memory: str | None) -> None:
    """Refuse, naming the setting, when ``result_bytes`` (one job's results) exceed
    ``spark.driver.maxResultSize`` (``"0"``: unlimited) or the driver's JVM heap."""
    limit_text = max_result_size or "1g"
    limit = parse_size(limit_text, "b")
    if limit and result_bytes > limit:
        raise MemoryBudgetError(
            f"{what} sends ~{size_text(result_bytes)} to the driver in one job, more than "
            f"spark.driver.maxResultSize={limit_text}; raise spark.driver.maxResultSize to at least "
            f"{spark_size_text(result_bytes * 1.1)}")
    if heap_bytes:
        need = JVM_RESERVED_BYTES + JVM_RESULT_COPIES * result_bytes
        if need > heap_bytes:
            raise MemoryBudgetError(
                f"{what} needs ~{size_text(need)} of the driver's JVM heap ({JVM_RESULT_COPIES:g} copies of "
                f"~{size_text(result_bytes)} of task results on the way), more than its {size_text(heap_bytes)} "
                f"(spark.driver.memory={driver_memory or '1g'}); raise spark.driver.memory (--driver-memory) to at "
                f"least {spark_size_text(need * 1.1)}")


def driver_placement_bytes(rows: int) -> int:
    """What the driver process holds for one global ranking of ``rows`` (driver placement)."""
    return DRIVER_ROW_BYTES * rows


# -- the local engine ---------------------------------------------------------------------------
def local_bytes(shape: DataShape, threads: int) -> int:
    """What the in-process engine holds once the rows are read: the block, the passes' rows and
    every thread's partial sums (sparse passes: one accumulator over the touched columns and
    what they keep per stored entry, and the solver's dense vectors of the full width).  A lower
    bound: reading the rows needs more for a while."""
    held = shape.block_bytes() + LOCAL_PASS_ROW_BYTES * shape.rows
    if shape.sparse_passes:
        return held + shape.sparse_pass_bytes() + SOLVER_VECTORS * 8 * shape.features
    return held + max(threads, 1) * PARTIAL_FEATURE_BYTES * shape.features


def available_memory() -> tuple[int, str]:
    """Bytes this process may still allocate, and where that bound comes from: the smallest of
    the memory available now (``MemAvailable``), a cgroup's limit less its usage, and the
    address-space limit (``ulimit -v``) less what is mapped."""
    bounds = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    bounds.append((int(line.split()[1]) * 1024, "memory available now"))
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current") as f:
                bounds.append((int(limit) - int(f.read()), "the cgroup's memory.max less its usage"))
    except (OSError, ValueError):
        pass
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            from .jit_room import room_text

            bounds.append((soft - _mapped_bytes(),
                           f"the address-space limit (ulimit -v) less what is mapped{room_text()}"))
    except (ImportError, OSError, ValueError):
        pass
    if not bounds:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "physical memory"
    return min(bounds)


def _mapped_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def check_local(shape: DataShape, threads: int, name: str, available: tuple[int, str] | None = None) -> None:
    """Refuse in one line, before reading, rows the in-process engine cannot hold."""
    need = local_bytes(shape, threads)
    free, source = available if available is not None else available_memory()
    if need > free:
        hint = "--dtype float32 (half the feature bytes), " if shape.itemsize == 8 else ""
        if source.startswith("the address-space limit"):
            from .jit_room import limit_for

            hint = f"ulimit -v {limit_for(need - free, slack=1 << 20)} or more, {hint}"
        raise MemoryBudgetError(
            f"{name}: the in-process engine needs at least ~{size_text(need)} for {shape.describe()} and its "
            f"passes, more than the {size_text(free)} this process can have ({source}); use {hint}--engine spark "
            "(blocks on disk, memory-mapped) or a machine with more memory")


# -- what the inputs hold, before reading them ----------------------------------------------------
def parquet_shape(paths: list[str], spec, itemsize: int) -> DataShape | None:
    """From the footers of local Parquet files: the rows and the stored values of the
    features of ``spec`` (a :class:`~sparkrank.data.arrow.FeatureSpec`): a list column (dense rows),
    ``indices``/``values`` lists or a vector struct (CSR: its values leaf is the stored entries,
    its indices' or sizes' largest value the width).  ``None`` when the footers do not tell."""
    import pyarrow.parquet as pq

    rows = values = widest = 0
    dense = spec.features_col is not None
    for path in paths:
        meta = pq.ParquetFile(path).metadata
        rows += meta.num_rows
        stored = (meta.metadata or {}).get(b"sparkrank.n_features")
        widest = max(widest, int(stored) if stored else 0)
        leaves: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        for j in range(meta.num_columns):
            parts = tuple(meta.schema.column(j).path.split("."))
            leaves.setdefault(parts[0], []).append((parts[1:], j))
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            for top, kind in ((spec.features_col, None), (spec.indices_col, "indices"), (spec.values_col, "values")):
                for rest, j in leaves.get(top, []) if top else []:
                    role = kind or ("dense" if len(leaves[top]) == 1 else next(
                        (r for r in ("values", "indices", "size") if r in rest), None))
                    if role in ("dense", "values"):
                        values += group.column(j).num_values
                        dense = dense and role == "dense"
                    elif role in ("indices", "size"):
                        widest = max(widest, _max_value(group.column(j)) + (role == "indices"))
    if not rows or (spec.features_col is not None and spec.features_col not in leaves):
        return None
    if dense:
        return DataShape(rows, values // rows, None, None, itemsize)
    return DataShape(rows, widest, values, None, itemsize)


def _max_value(column) -> int:
    stats = column.statistics
    return int(stats.max) if stats is not None and stats.has_min_max else -1


#: Bytes of an SVMlight file read to estimate the whole input.
SVMLIGHT_SAMPLE_BYTES = 1 << 20
_SVM_INDEX = re.compile(rb"\s(\d+):")


def svmlight_shape(files: list[tuple[str, int]], itemsize: int) -> DataShape | None:
    """From the first :data:`SVMLIGHT_SAMPLE_BYTES` of the first of ``files`` (local path, size):
    the rows and stored entries of all of them at the sample's bytes per line and entries per
    line, the widest index seen, in the layout the reader picks (dense rows when smaller than
    CSR).  ``None`` for compressed or unreadable files."""
    if not files or any(path.lower().endswith((".gz", ".bz2", ".xz", ".zst")) for path, _ in files):
        return None
    try:
        with open(files[0][0], "rb") as f:
            sample = f.read(SVMLIGHT_SAMPLE_BYTES)
    except OSError:
        return None
    lines = sample.count(b"\n") if len(sample) == SVMLIGHT_SAMPLE_BYTES else sample.count(b"\n") + 1
    whole = sample[: sample.rfind(b"\n") + 1] if len(sample) == SVMLIGHT_SAMPLE_BYTES else sample
    if lines == 0 or not whole.strip():
        return None
    entries = len(_SVM_INDEX.findall(whole))
    width = max((int(i) for i in _SVM_INDEX.findall(whole)), default=0) + 1
    total = sum(size for _, size in files)
    rows = max(int(total * lines / max(len(whole), 1)), 1)
    nnz = int(entries / lines * rows)
    shape = DataShape(rows, width, nnz, None, itemsize)
    if replace(shape, nnz=None).feature_bytes() <= shape.feature_bytes():
        shape = replace(shape, nnz=None)
    return shape
