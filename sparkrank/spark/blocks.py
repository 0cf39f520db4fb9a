"""Executor side: decoded blocks kept as memory-mapped files, and the per-pass tasks.

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
``spark/private_dir.py``): a task reads back what is there.

A pass over a block is the in-process engine's fused pass (``engines/tiles.py``): the block's
groups cut into tiles of ~8 MB, each tile's ``X·w``, kernel and ``Xᵀc`` while it is in cache.

Kernel state (TRON's sorted scores, TopPush's dual iterates; one per tile) is kept beside the
block as a file (``spark/state_files.py``: data only, no pickle), but the driver also keeps its
*recipe* (:class:`StateRecipe`: the vector and kernel of the pass that made it, and the recipe of
that pass's input state).  A state lost with
its executor is recomputed from the rebuilt block by replaying the recipe: the same
arithmetic on the same bytes, so the fit continues bit for bit.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..data import memory
from ..data.block import DROP_HINT, DataError, RankingData
from ..data.groups import QueryGroups
from ..engines.tiles import Tile, fused_pass, make_tiles, stats_sum
from ..numerics.exact_sum import DoubleDouble, dd_add, rmatvec_dd_products, step_terms
from ..numerics.linalg import matvec
from .block_writer import DENSE as _DENSE, write_block as _write_block  # noqa: F401 - a block's files
from .errors import UnsafeDirectoryError
from .private_dir import check_private, private_dir
from .shutdown import process_stat
from .state_files import StateFileError, read_state, write_state
from .worker import worker_task

REF_SCHEMA = (
    "partition int, path string, host string, n_rows long, n_groups long, n_pairs long, "
    "n_groups_without_pairs long, width int, nnz long, nbytes long, error string"
)
_CSR_ARRAYS = ("indptr", "indices", "data")
_GROUP_ARRAYS = ("labels", "offsets", "label_rank", "n_levels", "pairs_per_group")


@dataclass(frozen=True)
class InlineValue:
    """A small value shipped inside a task, with the ``.value`` of a broadcast (see
    ``SparkEngine._broadcast``)."""

    value: Any


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
    :func:`blocks_root` this user's alone (:func:`~sparkrank.spark.private_dir.private_dir`:
    :class:`~sparkrank.spark.errors.UnsafeDirectoryError` otherwise)."""
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


def build_block_task(owner: Owner, store_id: str, label_col: str, qid_col: str | None, spec, dtype_name: str):
    """A ``mapInArrow`` function: Arrow batches of one partition -> one block file + one ref row.

    Rows arrive shuffled (grouped by qid), so a bad row is named by its qid, never by its
    position in the partition.  The feature limit in force on the driver
    (:func:`~sparkrank.data.block.max_features_limit`) travels with the task.
    """
    import pyarrow as pa

    from ..data.arrow import RowError
    from ..data.block import max_features_limit

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
                             dtype, max_features)
        batch = None
        try:
            for batch in batches:
                writer.add(batch)
            ref.update(writer.finish())
        except RowError as exc:
            writer.discard()
            ref["error"] = f"{_sample(batch, label_col, qid_col, exc.row)}: {exc.detail}"
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


def decode_rows(table, label_col: str, qid_col: str | None, spec, dtype, max_features: int) -> RankingData:
    """Arrow rows -> a checked :class:`RankingData`; bad rows raise
    :class:`~sparkrank.data.arrow.RowError` with their position in ``table``."""
    from ..data.arrow import table_to_csr

    labels = _labels(table, label_col)
    qid = None if qid_col is None else _qids(table, qid_col)
    # a fixed-width array column stays dense rows (no column indices: half the bytes per pass)
    X = table_to_csr(table, spec, None, dtype, "", max_features, layout="auto")
    return RankingData.from_arrays(X, labels, qid, dtype=dtype, layout="auto")


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
#: (:mod:`sparkrank.spark.locate` then names its file and row).
QID_ROW, LABEL_ROW = "a row of qid ", "a row with label "


def _sample(table, label_col: str, qid_col: str | None, row: int) -> str:
    """A shuffled row named by what it holds: its qid, else its label."""
    if qid_col:
        return f"{QID_ROW}{table.column(qid_col)[row].as_py()!r}"
    return f"{LABEL_ROW}{table.column(label_col)[row].as_py()!r}"


def _labels(table, label_col) -> np.ndarray:
    from ..data.arrow import label_array

    return label_array(table.column(label_col), label_col, "", DROP_HINT)


def _qids(table, qid_col) -> np.ndarray:
    from ..data.arrow import group_id_array

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
        block = _OPEN[path] = Block(None, QueryGroups(*(_load(path, name) for name in _GROUP_ARRAYS)), qids)
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


_TILES: dict[tuple[str, int | None], list[Tile]] = {}


def block_tiles(path: str, block: Block, kernel, tile_bytes: int | None) -> list[Tile]:
    """The block's groups cut into tiles for the fused pass (``engines/tiles.py``; cached per
    Python worker like the block).  A kernel that needs every group at once gets one tile."""
    if kernel.spans_groups:
        return [Tile(block.groups, 0, int(block.groups.offsets[-1]))]
    key = (path, tile_bytes)
    tiles = _TILES.get(key)
    if tiles is None:
        tiles = _TILES[key] = make_tiles(block.X, block.groups, tile_bytes)[0]
    return tiles


def remove_store(paths: list[str]) -> None:
    for path in paths:
        _OPEN.pop(path, None)
        _MAPPED.pop(path, None)
        for key in [k for k in _TILES if k[0] == path]:
            del _TILES[key]
        shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class StateRecipe:
    """How a kept kernel state was made: ``kernel(groups, X·vector, parent state)``.

    The driver keeps one per live state; a task whose state file is gone (its executor was
    lost and the block rebuilt elsewhere) replays the chain from the nearest state still on
    disk, or from the start.  TRON's states have no parent (one sort at ``w``); TopPush's
    dual iterates chain back to the first step.
    """

    state_id: int
    vector: np.ndarray
    kernel: Any
    parent: "StateRecipe | None" = None

    def chain(self) -> list["StateRecipe"]:
        """This recipe and its ancestors, newest first."""
        out, r = [], self
        while r is not None:
            out.append(r)
            r = r.parent
        return out


@dataclass(frozen=True)
class MissingStates:
    """What an executor pass returns instead of a result when kernel states were not found."""

    partitions: frozenset


def _state_file(path: str, state_id: int) -> str:
    return os.path.join(path, f"state-{state_id}.bin")


def _drop_states(path: str, released: tuple[int, ...]) -> None:
    for sid in released:
        try:
            os.remove(_state_file(path, sid))
        except FileNotFoundError:
            pass


def _read_state(path: str, state_id: int):
    """The kept state, or ``None`` when its file is not on this host or is not a state file
    (then it is recomputed from its recipe like a lost one: it is never executed).

    Its arrays are views of the file's pages in the page cache (a private mapping: a write to
    them stays in this process), not copies: a Hessian pass of TRON reads its scores, order and
    sweep plan (15 bytes per row for queries of under 128 rows), which copying into fresh
    memory on every pass costs (10M rows on local[2], then 12 bytes per row: ~0.04 s of a
    0.6 s pass)."""
    try:
        return read_state(_state_file(path, state_id))
    except (FileNotFoundError, StateFileError):
        return None


def _write_state(path: str, state_id: int, state) -> None:
    """``state`` as a state file (:mod:`sparkrank.spark.state_files`) that :func:`_read_state` maps."""
    write_state(_state_file(path, state_id), state)


def replay_state(block: Block, tiles: list[Tile], ref, recipe: StateRecipe):
    """Recompute a lost state (one per tile) from its recipe chain (bitwise what the original
    passes made)."""
    chain = recipe.chain()
    state, start = None, len(chain)
    for i, r in enumerate(chain):  # the newest ancestor still on disk
        found = _read_state(ref.path, r.state_id)
        if found is not None:
            state, start = found, i
            break
    scores = np.empty(ref.n_rows, dtype=np.float64)
    for r in reversed(chain[:start]):
        results, _, _ = fused_pass(block.X, tiles, r.vector[: ref.width], r.kernel, state, (), scores)
        state = [result.state for result in results]
    _write_state(ref.path, recipe.state_id, state)
    return state


def executor_pass_task(w_bc, kernel, n_features: int, in_state: int | None, out_state: int | None,
                       released: tuple[int, ...], recipe_bc=None, tile_bytes: int | None = None):
    """Executor mode: the fused pass over this block's tiles (``X·w``, the kernel on each
    tile's groups, ``Xᵀc``; ``engines/tiles.py``); keeps the tiles' states on disk.  ``w_bc``
    is the vector's broadcast or :class:`InlineValue` (read through ``.value``).

    A missing input state yields :class:`MissingStates` (no task failure, so Spark does not
    retry in vain) unless ``recipe_bc`` (a broadcast :class:`StateRecipe`) is given; then it
    is recomputed.
    """

    def task(refs) -> Iterator[Any]:
        w = w_bc.value
        for ref in refs:
            if ref.n_rows == 0:
                continue
            block = open_block(ref.path, ref.width)
            tiles = block_tiles(ref.path, block, kernel, tile_bytes)
            _drop_states(ref.path, released)
            states = None
            if in_state is not None:
                states = _read_state(ref.path, in_state)
                if states is None:
                    if recipe_bc is None:
                        yield MissingStates(frozenset([ref.partition]))
                        continue
                    states = replay_state(block, tiles, ref, recipe_bc.value)
            results, (grad,), moments = fused_pass(block.X, tiles, w[: ref.width], kernel, states, (1,),
                                                   np.empty(ref.n_rows, dtype=np.float64))
            if out_state is not None:
                _write_state(ref.path, out_state, [r.state for r in results])
            grad = None if grad is None else _padded(grad, n_features)
            moments = None if moments is None else [_padded(m, n_features) for m in moments]
            yield stats_sum(results), grad, np.array([ref.n_rows, ref.n_groups]), moments

    return worker_task(task)


def scores_task(w_bc):
    """Driver mode, first half: each partition's scores ``X·w`` tagged with its index."""

    def task(refs):
        w = w_bc.value
        for ref in refs:
            if ref.n_rows:
                yield ref.partition, matvec(open_block(ref.path, ref.width).X, w[: ref.width])

    return worker_task(task)


def driver_products_task(coef_bcs, products: tuple[tuple[int, int], ...], row_start: dict[int, int],
                         n_features: int, plans_bc):
    """Driver mode, second half: for each ``(k, power)`` of ``products``, with this partition's
    slice of the broadcast coefficient vector ``c = coef_bcs[k]``, ``Xᵀc`` (power 1) or
    ``(X∘X)ᵀc`` (power 2) from one sweep over the block (one job for every product of a pass).

    Range partitioning may cut a query anywhere, so a block's first and last rows may belong to
    steps of ``Xᵀc`` (``exact_sum``'s convention) that other blocks share: ``plans_bc`` holds,
    per partition, ``(head, tail, starts)`` (:func:`~sparkrank.numerics.exact_sum.split_steps`,
    relative to the block).  The block sums its whole steps and yields ``(sums, rows, terms)``:
    the double-doubles, and the global rows and terms of its cut steps for the driver
    (:func:`~sparkrank.numerics.exact_sum.add_split_steps`)."""

    def task(refs):
        coefs = [bc.value for bc in coef_bcs]
        plans = plans_bc.value
        for ref in refs:
            if ref.n_rows:
                X = open_block(ref.path, ref.width).X
                start = row_start[ref.partition]
                head, tail, starts = plans[ref.partition]
                wanted = [(coefs[k][start: start + ref.n_rows], p) for k, p in products]
                sums = rmatvec_dd_products(X, wanted, (head, tail), starts)
                cut = [*range(head), *range(tail, ref.n_rows)]
                terms = step_terms(X, cut, wanted)
                yield ([_padded(dd, n_features) for dd in sums], np.asarray(cut, dtype=np.int64) + start,
                       np.pad(terms, ((0, 0), (0, 0), (0, n_features - terms.shape[2]))))

    return worker_task(task)


def add_split_products(a: Any, b: Any):
    """``treeAggregate`` combiner for :func:`driver_products_task`'s ``(sums, rows, terms)``:
    sums added entry by entry, the cut steps' rows and terms gathered (``None`` = nothing yet)."""
    if a is None:
        return b
    if b is None:
        return a
    return (add_dd_lists(a[0], b[0]), np.concatenate([a[1], b[1]]), np.concatenate([a[2], b[2]], axis=1))


def column_moments_task(w_bc, kernel, n_features: int, tile_bytes: int | None = None):
    """Executor mode: ``(stats, Xᵀc, (X∘X)ᵀc, [rows, groups])`` of each block from the fused pass
    over its tiles at ``X·w``, as double-doubles (no kernel state)."""

    def task(refs):
        for ref in refs:
            if ref.n_rows == 0:
                continue
            block = open_block(ref.path, ref.width)
            results, (first, second), _ = fused_pass(block.X, block_tiles(ref.path, block, kernel, tile_bytes),
                                                  w_bc.value[: ref.width], kernel, None, (1, 2),
                                                  np.empty(ref.n_rows, dtype=np.float64))
            yield (stats_sum(results), _padded(first, n_features), _padded(second, n_features),
                   np.array([ref.n_rows, ref.n_groups]))

    return worker_task(task)


def add_moments(a: Any, b: Any):
    """``treeAggregate`` combiner for :func:`column_moments_task` tuples."""
    if a is None:
        return b
    if b is None:
        return a
    return add_dd(a[0], b[0]), add_dd(a[1], b[1]), add_dd(a[2], b[2]), a[3] + b[3]


def labels_task():
    """Driver mode set-up: each partition's labels and group ids, tagged with its index."""

    def task(refs):
        for ref in refs:
            if ref.n_rows:
                b = open_block(ref.path, ref.width)
                sizes = np.diff(b.groups.offsets)
                qid_rows = None if b.qids is None else np.repeat(b.qids, sizes)
                yield ref.partition, np.array(b.groups.labels), qid_rows

    return worker_task(task)


def digest_task(plans: dict[int, dict] | None):
    """Each block's :func:`~sparkrank.data.digest.block_digest` ``(digest, pieces)``; ``plans``: per
    partition where its rows start and end in their queries (driver placement), else ``None``."""
    from ..data.digest import block_digest, group_keys

    def task(refs):
        for ref in refs:
            if ref.n_rows:
                b = open_block(ref.path, ref.width)
                g = b.groups
                yield block_digest(b.X, g.labels, g.offsets, group_keys(b.qids, g.n_groups),
                                   **(plans[ref.partition] if plans else {}))

    return worker_task(task)


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


#: A block's column sums over at least this many features travel as their non-zero columns
#: when those are at most a quarter of them (:class:`SparseSums`; the memory model's bound too).
SPARSE_SUMS_MIN_FEATURES = memory.SPARSE_SUMS_MIN_FEATURES


@dataclass(frozen=True)
class SparseSums:
    """A block's double-double column sums over ``n_features`` columns, only those not zero.

    Why: a task's result travels through the JVM, and dense sums cost 16 bytes per feature per
    product whatever the block holds: one SVMlight row with feature 4,000,000 made every pass
    ship ~200 MB per block and ran the local driver's JVM out of heap.  A zero column adds
    nothing to a double-double sum (``dd_add`` of ``(0, 0)`` keeps the other sum's value), so
    adding only the non-zero columns gives the dense sum's bits."""

    columns: np.ndarray
    hi: np.ndarray
    lo: np.ndarray
    n_features: int

    def dense(self) -> DoubleDouble:
        hi, lo = np.zeros(self.n_features), np.zeros(self.n_features)
        hi[self.columns], lo[self.columns] = self.hi, self.lo
        return hi, lo


def _padded(dd: DoubleDouble, n_features: int):
    """A block's double-double column sums (its width) over ``n_features`` columns: padded with
    zeros, or as :class:`SparseSums` when they are wide and mostly zero."""
    hi, lo = dd
    if n_features >= SPARSE_SUMS_MIN_FEATURES:
        columns = np.flatnonzero((hi != 0) | (lo != 0))
        if 4 * columns.shape[0] <= n_features:
            return SparseSums(columns, hi[columns], lo[columns], n_features)
    pad = n_features - hi.shape[0]
    return np.pad(hi, (0, pad)), np.pad(lo, (0, pad))


def dense_sums(dd):
    """``dd`` as dense double-doubles (a :class:`SparseSums` expanded; ``None`` stays ``None``)."""
    return dd.dense() if isinstance(dd, SparseSums) else dd


def add_dd(a: Any, b: Any):
    """``treeAggregate`` combiner for double-doubles, dense or :class:`SparseSums` (``None`` =
    nothing yet); the sum of two sparse ones is dense."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, SparseSums):
        a, b = b, a  # dd_add is symmetric: the same bits either way
    if not isinstance(b, SparseSums):
        return dd_add(a, b)
    hi, lo = (np.array(x) for x in dense_sums(a))
    hi[b.columns], lo[b.columns] = dd_add((hi[b.columns], lo[b.columns]), (b.hi, b.lo))
    return hi, lo


def add_dd_lists(a: Any, b: Any):
    """``treeAggregate`` combiner for lists of double-doubles, added entry by entry (``None`` = nothing yet)."""
    if a is None:
        return b
    if b is None:
        return a
    return [add_dd(x, y) for x, y in zip(a, b)]


def add_pair(a: Any, b: Any):
    """``treeAggregate`` combiner for ``(stats, gradient, [rows, groups], moments)`` of executor passes.

    ``stats`` and ``gradient`` are double-doubles, ``moments`` ``None`` or two double-doubles
    (``Xᵀa``, ``(X∘X)ᵀa``); the counts are what the tasks processed.  :class:`MissingStates`
    absorbs results (the pass is redone) and merges with its kind.
    """
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, MissingStates) or isinstance(b, MissingStates):
        parts = [x.partitions for x in (a, b) if isinstance(x, MissingStates)]
        return MissingStates(frozenset().union(*parts))
    moments = add_dd_lists(a[3], b[3])
    return add_dd(a[0], b[0]), add_dd(a[1], b[1]), a[2] + b[2], moments


def column_totals_task():
    """The first pass of the feature statistics: each block's
    :class:`~sparkrank.engines.base.ColumnTotals` over its own width (padded as they are added up by
    ``treeAggregate``, :func:`add_totals`)."""
    from ..engines.base import ColumnTotals

    def task(refs):
        for ref in refs:
            if ref.n_rows:
                yield ColumnTotals.of_rows(open_block(ref.path, ref.width).X, ref.width)

    return worker_task(task)


def add_totals(a: Any, b: Any):
    """``treeAggregate`` combiner for :class:`~sparkrank.engines.base.ColumnTotals` (any order: the same bits)."""
    if a is None:
        return b
    return a.add(b)


def centred_squares_task(mean_bc, n_features: int):
    """The second pass of the feature statistics: each block's exact sums of ``(x − mean)²`` over
    its non-zero entries (``mean_bc``: the means' broadcast; added up by :func:`add_dd`)."""
    from ..numerics.exact_sum import column_sums_dd

    def task(refs):
        mean = mean_bc.value
        for ref in refs:
            if ref.n_rows:
                yield _padded(column_sums_dd(open_block(ref.path, ref.width).X, ref.width, mean[: ref.width])[0],
                              n_features)

    return worker_task(task)
