"""Executor side: decoded blocks kept as memory-mapped files (the store of a :class:`SparkEngine`).

Why files: PySpark's RDD cache holds pickled bytes that every pass must send from the
JVM to Python and unpickle again (SPARK-NOTES: 1-2.4 s per pass for 1M rows, against
0.1-0.3 s for the products themselves), and Python-worker globals are not pinned to
partitions.  So each block is decoded once, written as ``.npy`` arrays under the
executor's own working directory, and every later task of any Python worker of that
executor memory-maps them: no copy, no unpickling, one copy in the page cache.  The
cached Spark dataset is only a tiny *reference* per partition, whose lineage rebuilds
the block if an executor is lost; a task that lands on a host without the file raises
:class:`BlockMissingError` and the driver rebuilds the store (``sparkrank.engines.spark``).

Where: ``<local dir>/sparkrank-blocks-<user>/<application id>/<store id>/part-NNNNN``, an
absolute path.  ``<local dir>`` is the parent of the executor's Spark block-manager
directory: on a standalone worker that is the application's own local directory, which
the worker deletes when the application ends (even a killed one); in local mode it is
``spark.local.dir`` (``/tmp``), cleaned by :meth:`SparkEngine.close`, by the driver's exit
hook, and by :func:`sweep_stale_applications` at the next start.  Both ``sparkrank-blocks-<user>``
and the application's directory are this user's alone (mode 0700, checked before use:
``private_dir.py``): a task reads back what is there.

A pass over a block is the in-process engine's fused pass (``engines/tiles.py``): the block's
groups cut into tiles of ~8 MB, each tile's ``X·w``, kernel and ``Xᵀc`` while it is in cache.

The tasks of a pass over the blocks are :mod:`.tasks`; kernel state kept beside them is
:mod:`.kernel_state`.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ...defaults import LAYOUT
from ...data.block import DROP_HINT, DataError, RankingData
from ...data.groups import QueryGroups
from ...data.weights import GroupWeightError
from ...io.spark.errors import UnsafeDirectoryError
from ...io.spark.shutdown import process_stat
from ...io.spark.worker import worker_task
from .block_writer import DENSE as _DENSE, write_block as _write_block  # noqa: F401 - a block's files
from . import tile_files
from .private_dir import check_private, private_dir

REF_SCHEMA = (
    "partition int, path string, host string, n_rows long, n_groups long, n_pairs long, "
    "n_groups_without_pairs long, width int, nnz long, nbytes long, error string"
)


_CSR_ARRAYS = ("indptr", "indices", "data")


_GROUP_ARRAYS = ("labels", "offsets", "label_rank", "n_levels", "pairs_per_group")


class BlockMissingError(RuntimeError):
    """The block file of a partition is not on the host that runs the task."""


@dataclass(frozen=True)
class CsrArrays:
    """A read-only CSR matrix as bare arrays (memory-mapped); what ``csr_dot`` needs."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]


@dataclass(frozen=True)
class Block:
    X: "CsrArrays | np.ndarray | None"  # None in the per-worker cache of groups (open_block)
    groups: QueryGroups
    qids: np.ndarray | None


#: Block directories of other applications older than this are removed at start-up even
#: when their owner cannot be checked (another host, or no owner file).
STALE_AFTER_SECONDS = 24 * 3600


_OWNER_FILE = "owner"


@dataclass(frozen=True)
class Owner:
    """The application a block directory belongs to: its id and the driver's host and PID."""

    app_id: str
    host: str
    pid: int
    started: str = ""  # the driver process's start time (Linux), which a recycled PID does not share

    @classmethod
    def of_this_driver(cls, app_id: str) -> "Owner":
        return cls(app_id, socket.gethostname(), os.getpid(), _process_start(os.getpid()))


def _process_start(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat``'s 22nd field),
    or ``""`` where that is unknown (no ``/proc``, or no such process)."""
    fields = process_stat(pid)
    return fields[19] if fields and len(fields) > 19 else ""


def blocks_root(local_dir: str | None = None) -> str:
    """``<local dir>/sparkrank-blocks-<user>``: where this user's block stores live on this host.

    ``local_dir`` defaults to the parent of the executor's block-manager directory
    (``SPARK_LOCAL_DIRS``, which PySpark sets for its workers), else the temp directory.
    """
    if local_dir is None:
        first = os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0]
        local_dir = os.path.dirname(os.path.abspath(first)) if first else tempfile.gettempdir()
    return os.path.join(os.path.abspath(local_dir), f"sparkrank-blocks-{_user()}")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers with an arbitrary uid)
        return str(os.getuid())


#: Application directories this Python worker has found to be this user's alone.
_CHECKED: set[str] = set()


def app_dir(owner: Owner, local_dir: str | None = None) -> str:
    """This application's block directory on this host (created with its owner file), it and
    :func:`blocks_root` this user's alone (:func:`~sparkrank.engines.spark.private_dir.private_dir`:
    :class:`~sparkrank.io.spark.errors.UnsafeDirectoryError` otherwise)."""
    path = os.path.join(private_dir(blocks_root(local_dir)), owner.app_id)
    private_dir(path)
    _CHECKED.add(path)
    marker = os.path.join(path, _OWNER_FILE)
    if not os.path.exists(marker):
        tmp = f"{marker}.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(f"{owner.host} {owner.pid} {owner.started}".rstrip() + "\n")
        os.replace(tmp, marker)
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def is_stale(path: str, now: float | None = None) -> bool:
    """Whether an application's block directory can go.

    Its driver ran on this host: when that process is gone (or its PID now names a process
    that started at another time), and never while it lives, however long it has been idle.
    Elsewhere: when the directory has not changed for :data:`STALE_AFTER_SECONDS` (the
    executors touch it as they use the blocks, :func:`open_block`)."""
    now = time.time() if now is None else now
    try:
        age = now - os.stat(path).st_mtime
    except OSError:
        return False
    try:
        with open(os.path.join(path, _OWNER_FILE)) as f:
            host, pid, *started = f.read().split()
        pid = int(pid)
    except (OSError, ValueError):
        return age > STALE_AFTER_SECONDS
    if host == socket.gethostname():
        if not _pid_alive(pid):
            return True
        now_started = _process_start(pid)
        return bool(started and now_started and started[0] != now_started)  # a recycled PID
    return age > STALE_AFTER_SECONDS


def sweep_stale_applications(current_app: str | None, local_dir: str | None = None) -> list[str]:
    """Remove the block directories of this user's earlier applications that are stale.

    Returns the removed paths.  Run by the driver when an engine starts and by each
    executor Python worker once, before its first block is written.
    """
    root = blocks_root(local_dir)
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        if name != current_app and os.path.isdir(path) and is_stale(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


_SWEPT: set[str] = set()


def _sweep_once(owner: Owner) -> None:
    """The executor-side stale sweep, once per Python worker and local directory, and only in a
    root of this user's alone (else the task's :func:`app_dir` reports it, as its block's error)."""
    root = blocks_root()
    if root not in _SWEPT:
        try:
            app_dir(owner)
        except UnsafeDirectoryError:
            return
        _SWEPT.add(root)
        sweep_stale_applications(owner.app_id)


def build_block_task(owner: Owner, store_id: str, label_col: str, qid_col: str | None, spec, dtype_name: str,
                     weights=None):
    """A ``mapInArrow`` function: Arrow batches of one partition -> one block file + one ref row.

    Rows arrive shuffled (grouped by qid), so a bad row is named by its qid, never by its
    position in the partition.  The feature limit in force on the driver
    (:func:`~sparkrank.data.block.max_features_limit`) travels with the task.
    """
    import pyarrow as pa

    from ...data.arrow import RowError
    from ...data.block import max_features_limit

    dtype = np.dtype(dtype_name).type
    max_features = max_features_limit()

    def task(batches: Iterator["pa.RecordBatch"]):
        from pyspark import TaskContext

        from .block_writer import BlockWriter

        pid = TaskContext.get().partitionId()
        _sweep_once(owner)
        ref = {"partition": pid, "path": "", "host": socket.gethostname(), "n_rows": 0, "n_groups": 0,
               "n_pairs": 0, "n_groups_without_pairs": 0, "width": 0, "nnz": 0, "nbytes": 0, "error": None}
        # the rows decoded batch by batch into the block's files (block_writer.py: one batch in memory)
        writer = BlockWriter(os.path.join(app_dir(owner), store_id, f"part-{pid:05d}"), label_col, qid_col, spec,
                             dtype, max_features, *([weights] if weights else []))
        batch = None
        try:
            for batch in batches:
                writer.add(batch)
            ref.update(writer.finish())
        except RowError as exc:
            writer.discard()
            ref["error"] = f"{_sample(batch, label_col, qid_col, exc.row)}: {exc.detail}"
        except GroupWeightError as exc:  # the driver merges the blocks' (building.py)
            writer.discard()
            ref["error"] = exc.payload()
        except DataError as exc:
            writer.discard()
            ref["error"] = str(exc)
        finally:
            release_arrow_memory()
        yield pa.RecordBatch.from_pylist([ref], schema=_ref_arrow_schema())

    return worker_task(task)


def release_arrow_memory() -> None:
    """Give back what Arrow's allocator kept of the memory it freed: mimalloc, pyarrow's default,
    holds freed pages for reuse, 1.4 GB of a worker that had decoded a 1M x 136 block."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def feature_type(schema, spec) -> str:
    """``"array"``, ``"vector"`` or ``"sparse"``: how the Spark frame holds the features."""
    if spec.features_col is None:
        return "sparse"
    dt = schema[spec.features_col].dataType
    if dt.typeName() == "array":
        return "array"
    return "vector" if type(dt).__name__ == "VectorUDT" else "sparse"


def decode_rows(table, label_col: str, qid_col: str | None, spec, dtype, max_features: int,
                weights=None) -> RankingData:
    """Arrow rows -> a checked :class:`RankingData`; bad rows raise
    :class:`~sparkrank.data.arrow.RowError` with their position in ``table`` (a bad weight:
    :class:`~sparkrank.data.weights.WeightError`).  ``weights``: the
    :class:`~sparkrank.data.weights.WeightColumns` to read, if any."""
    from ...data.arrow import table_to_csr

    labels = _labels(table, label_col)
    qid = None if qid_col is None else _qids(table, qid_col)
    # a fixed-width array column stays dense rows (no column indices: half the bytes per pass)
    X = table_to_csr(table, spec, None, dtype, "", max_features, layout=LAYOUT)
    row_w, group_w = weights.arrays(table) if weights else (None, None)
    return RankingData.from_arrays(X, labels, qid, dtype=dtype, layout=LAYOUT, row_weights=row_w,
                                   group_weights=group_w)


def fixed_width_error(refs, feature_type: str) -> str | None:
    """Dense arrays and ML vectors must have one width across all blocks (each block checks
    its own rows); ``feature_type`` is the Spark type name of the features column."""
    if feature_type not in ("array", "vector"):
        return None
    widths = sorted({r.width for r in refs if r.n_rows})
    if len(widths) < 2:
        return None
    what = "feature arrays differ in length" if feature_type == "array" else "feature vectors differ in size"
    return f"{what}: {', '.join(map(str, widths))} in different rows"


def _ref_arrow_schema():
    import pyarrow as pa

    return pa.schema([("partition", pa.int32()), ("path", pa.string()), ("host", pa.string()),
                      ("n_rows", pa.int64()), ("n_groups", pa.int64()), ("n_pairs", pa.int64()),
                      ("n_groups_without_pairs", pa.int64()), ("width", pa.int32()), ("nnz", pa.int64()),
                      ("nbytes", pa.int64()),
                      ("error", pa.string())])


#: How a block names a bad row: by its qid, or by its label when rows have no group id
#: (:mod:`sparkrank.engines.spark.locate` then names its file and row).
QID_ROW, LABEL_ROW = "a row of qid ", "a row with label "


def _sample(table, label_col: str, qid_col: str | None, row: int) -> str:
    """A shuffled row named by what it holds: its qid, else its label."""
    if qid_col:
        return f"{QID_ROW}{table.column(qid_col)[row].as_py()!r}"
    return f"{LABEL_ROW}{table.column(label_col)[row].as_py()!r}"


def _labels(table, label_col) -> np.ndarray:
    from ...data.arrow import label_array

    return label_array(table.column(label_col), label_col, "", DROP_HINT)


def _qids(table, qid_col) -> np.ndarray:
    from ...data.arrow import group_id_array

    return group_id_array(table.column(qid_col), qid_col, "", DROP_HINT)


_OPEN: dict[str, Block] = {}


#: How often a Python worker touches the application directory of the blocks it uses.
HEARTBEAT_SECONDS = 600.0


_TOUCHED: dict[str, float] = {}


def _heartbeat(block_path: str) -> None:
    """Mark the application's block directory (two levels up: ``<app>/<store>/<part>``) as in
    use, at most every :data:`HEARTBEAT_SECONDS`: another application's sweep on this host
    judges a driver elsewhere by that time (:func:`is_stale`)."""
    app = os.path.dirname(os.path.dirname(block_path))
    now = time.monotonic()
    if now - _TOUCHED.get(app, -HEARTBEAT_SECONDS) >= HEARTBEAT_SECONDS:
        _TOUCHED[app] = now
        try:
            os.utime(app)
        except OSError:
            pass


def open_block(path: str, width: int) -> Block:
    """Memory-map a block: its groups cached per Python worker, its features mapped while the
    worker uses this block and no other.

    Why only one block's features: nothing pins a partition to a Python worker, so over the
    passes every worker of an executor runs every block; kept mapped, each worker's resident
    set grew to all the blocks (2.2 GB for each of local[2]'s workers over a 2.2 GB store,
    pages the kernel shares but every process's resident set counts).  A block mapped again
    costs nothing measurable (the pages are in the page cache; 0.12 s to read 1.1 GB either
    way), so a worker holds one block's features at a time: its share of the data.
    """
    _heartbeat(path)
    block = _OPEN.get(path)
    if block is None:
        if not os.path.isdir(path):
            raise BlockMissingError(f"sparkrank block {path} is not on host {socket.gethostname()}")
        _check_app_dir(path)
        qpath = os.path.join(path, "qids.npy")
        qids = np.load(qpath, allow_pickle=False) if os.path.exists(qpath) else None
        groups = QueryGroups(*(_load(path, name) for name in _GROUP_ARRAYS))
        if os.path.exists(os.path.join(path, "row_weights.npy")):  # weighted rows (block_writer.write_groups)
            groups = groups.with_weights(_load(path, "row_weights"), _load(path, "group_weights"))
        block = _OPEN[path] = Block(None, groups, qids)
    X = _MAPPED.get(path)
    if X is None:
        _MAPPED.clear()  # the block this worker used before: unmapped once the task lets go of it
        X = _MAPPED[path] = _map_features(path, width)
    return Block(X, block.groups, block.qids)


def _load(path: str, name: str) -> np.ndarray:
    return np.asarray(np.load(os.path.join(path, name + ".npy"), mmap_mode="r", allow_pickle=False))


def _map_features(path: str, width: int):
    if os.path.exists(os.path.join(path, _DENSE + ".npy")):
        return _load(path, _DENSE)
    if not os.path.exists(os.path.join(path, "indptr.npy")):
        raise BlockMissingError(f"sparkrank block {path} is not on host {socket.gethostname()}")
    a = {name: _load(path, name) for name in _CSR_ARRAYS}
    return CsrArrays(a["indptr"], a["indices"], a["data"], (a["indptr"].shape[0] - 1, width))


#: The features of the one block this Python worker works on (:func:`open_block`).
_MAPPED: dict[str, "CsrArrays | np.ndarray"] = {}


def _check_app_dir(block_path: str) -> None:
    """Before a Python worker first reads a block of an application (``<root>/<app>/<store>/<part>``):
    the application's directory and the root are this user's alone (their files could be anyone's
    otherwise; kernel states are read from beside the block)."""
    app = os.path.dirname(os.path.dirname(block_path))
    if app not in _CHECKED:
        check_private(os.path.dirname(app))
        check_private(app)
        _CHECKED.add(app)


def remove_store(paths: list[str]) -> None:
    for path in paths:
        _OPEN.pop(path, None)
        _MAPPED.pop(path, None)
        tile_files.forget(path)
        shutil.rmtree(path, ignore_errors=True)


def cleanup_task(owner: Owner, store_ids: tuple[str, ...]):
    """Delete this partition's block directory, and every store of this engine on the host."""

    def task(refs):
        for ref in refs:
            remove_store([ref.path])
        root = os.path.join(blocks_root(), owner.app_id)
        for store_id in store_ids:
            shutil.rmtree(os.path.join(root, store_id), ignore_errors=True)
        yield 0

    return worker_task(task)
