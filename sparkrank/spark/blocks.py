"""Executor side: decoded blocks kept as memory-mapped files, and the per-pass tasks.

Why files: PySpark's RDD cache holds pickled bytes that every pass must send from the
JVM to Python and unpickle again (SPARK-NOTES: 1-2.4 s per pass for 1M rows, against
0.1-0.3 s for the products themselves), and Python-worker globals are not pinned to
partitions.  So each block is decoded once, written as ``.npy`` arrays under the
executor's own working directory, and every later task of any Python worker of that
executor memory-maps them: no copy, no unpickling, one copy in the page cache.  The
cached Spark dataset is only a tiny *reference* per partition, whose lineage rebuilds
the block if an executor is lost; a task that lands on a host without the file raises
:class:`BlockMissingError` and the driver rebuilds the store (``engine.py``).
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..data.block import DROP_HINT, DataError, RankingData
from ..data.groups import QueryGroups
from ..engines.exact_sum import csr_tdot_dd, dd_add
from ..engines.linalg import csr_dot

REF_SCHEMA = (
    "partition int, path string, host string, n_rows long, n_groups long, n_pairs long, "
    "n_groups_without_pairs long, width int, nbytes long, error string"
)
_ARRAYS = ("indptr", "indices", "data", "labels", "offsets", "label_rank", "n_levels", "pairs_per_group")


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
    X: CsrArrays
    groups: QueryGroups
    qids: np.ndarray | None


def store_root() -> str:
    """The executor's working directory for this application (SparkFiles root)."""
    from pyspark import SparkFiles

    return SparkFiles.getRootDirectory()


def build_block_task(store_id: str, label_col: str, qid_col: str | None, spec, dtype_name: str):
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

        pid = TaskContext.get().partitionId()
        batches = list(batches)
        ref = {"partition": pid, "path": "", "host": socket.gethostname(), "n_rows": 0, "n_groups": 0,
               "n_pairs": 0, "n_groups_without_pairs": 0, "width": 0, "nbytes": 0, "error": None}
        table = None
        try:
            table = pa.Table.from_batches(batches) if batches else None
            if table is None or table.num_rows == 0:
                data = RankingData.from_arrays(np.zeros((0, 0)), np.zeros(0), None if qid_col is None else np.zeros(0))
            else:
                data = decode_rows(table, label_col, qid_col, spec, dtype, max_features)
            path = os.path.join(store_root(), "sparkrank-blocks", store_id, f"part-{pid:05d}")
            ref.update(_write_block(path, data))
        except RowError as exc:
            ref["error"] = f"{_sample(table, label_col, qid_col, exc.row)}: {exc.detail}"
        except DataError as exc:
            ref["error"] = str(exc)
        yield pa.RecordBatch.from_pylist([ref], schema=_ref_arrow_schema())

    return task


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
    X = table_to_csr(table, spec, None, dtype, "", max_features)
    return RankingData.from_arrays(X, labels, qid, dtype=dtype)


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
                      ("n_groups_without_pairs", pa.int64()), ("width", pa.int32()), ("nbytes", pa.int64()),
                      ("error", pa.string())])


QID_ROW = "a row of qid "


def _sample(table, label_col: str, qid_col: str | None, row: int) -> str:
    """A shuffled row named by what it holds: its qid, else its label."""
    if qid_col:
        return f"{QID_ROW}{table.column(qid_col)[row].as_py()!r}"
    return f"a row with label {table.column(label_col)[row].as_py()!r}"


def _labels(table, label_col) -> np.ndarray:
    from ..data.arrow import label_array

    return label_array(table.column(label_col), label_col, "", DROP_HINT)


def _qids(table, qid_col) -> np.ndarray:
    from ..data.arrow import RowError

    col = table.column(qid_col)
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise RowError("", row, f"column {qid_col!r} is null (in {col.null_count} rows){DROP_HINT}")
    return col.to_numpy(zero_copy_only=False)


def _write_block(path: str, data: RankingData) -> dict:
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    g = data.groups
    arrays = {"indptr": data.X.indptr.astype(np.int64), "indices": data.X.indices.astype(np.int32),
              "data": data.X.data, "labels": g.labels, "offsets": g.offsets, "label_rank": g.label_rank,
              "n_levels": g.n_levels, "pairs_per_group": g.pairs_per_group}
    if data.qids is not None:
        arrays["qids"] = np.asarray(data.qids)
    nbytes = 0
    for name, arr in arrays.items():
        np.save(os.path.join(path, name + ".npy"), np.ascontiguousarray(arr))
        nbytes += arr.nbytes
    return {"path": path, "n_rows": data.n_rows, "n_groups": g.n_groups, "n_pairs": g.n_pairs,
            "n_groups_without_pairs": g.n_groups_without_pairs, "width": data.n_features, "nbytes": nbytes}


_OPEN: dict[str, Block] = {}


def open_block(path: str, width: int) -> Block:
    """Memory-map a block (cached per Python worker)."""
    block = _OPEN.get(path)
    if block is not None:
        return block
    if not os.path.isdir(path):
        raise BlockMissingError(f"sparkrank block {path} is not on host {socket.gethostname()}")
    a = {name: np.asarray(np.load(os.path.join(path, name + ".npy"), mmap_mode="r")) for name in _ARRAYS}
    n_rows = a["indptr"].shape[0] - 1
    qpath = os.path.join(path, "qids.npy")
    qids = np.load(qpath) if os.path.exists(qpath) else None
    block = Block(
        CsrArrays(a["indptr"], a["indices"], a["data"], (n_rows, width)),
        QueryGroups(a["labels"], a["offsets"], a["label_rank"], a["n_levels"], a["pairs_per_group"]),
        qids,
    )
    _OPEN[path] = block
    return block


def remove_store(paths: list[str]) -> None:
    for path in paths:
        _OPEN.pop(path, None)
        shutil.rmtree(path, ignore_errors=True)


def _state_file(path: str, state_id: int) -> str:
    return os.path.join(path, f"state-{state_id}.pkl")


def _drop_states(path: str, released: tuple[int, ...]) -> None:
    for sid in released:
        try:
            os.remove(_state_file(path, sid))
        except FileNotFoundError:
            pass


def executor_pass_task(w_bc, kernel, n_features: int, in_state: int | None, out_state: int | None,
                       released: tuple[int, ...]):
    """Executor mode: ``X·w``, the kernel on this block's groups, ``Xᵀc``; keeps state on disk."""

    def task(refs) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        w = w_bc.value
        for ref in refs:
            if ref.n_rows == 0:
                continue
            block = open_block(ref.path, ref.width)
            _drop_states(ref.path, released)
            state = None
            if in_state is not None:
                with open(_state_file(ref.path, in_state), "rb") as f:
                    state = pickle.load(f)
            scores = csr_dot(block.X, w[: ref.width])
            result = kernel(block.groups, scores, state)
            if out_state is not None:
                with open(_state_file(ref.path, out_state), "wb") as f:
                    pickle.dump(result.state, f, protocol=pickle.HIGHEST_PROTOCOL)
            grad = None if result.coef is None else _padded_tdot(block.X, result.coef, n_features)
            yield result.stats_dd(), grad, np.array([ref.n_rows, ref.n_groups])

    return task


def scores_task(w_bc):
    """Driver mode, first half: each partition's scores ``X·w`` tagged with its index."""

    def task(refs):
        w = w_bc.value
        for ref in refs:
            if ref.n_rows:
                yield ref.partition, csr_dot(open_block(ref.path, ref.width).X, w[: ref.width])

    return task


def gradient_task(c_bc, row_start: dict[int, int], n_features: int):
    """Driver mode, second half: ``Xᵀc`` with this partition's slice of the broadcast ``c``."""

    def task(refs):
        c = c_bc.value
        for ref in refs:
            if ref.n_rows:
                start = row_start[ref.partition]
                yield _padded_tdot(open_block(ref.path, ref.width).X, c[start: start + ref.n_rows], n_features)

    return task


def column_moments_task(w_bc, kernel, c_bc, row_start: dict[int, int], n_features: int):
    """``(stats, Xᵀc, (X∘X)ᵀc, [rows, groups])`` of each block, as double-doubles (no kernel state).

    Executor mode (``kernel`` given): the kernel runs on this block's groups at ``X·w``.
    Driver mode (``kernel=None``): ``c`` is this partition's slice of the broadcast ``c_bc``.
    """

    def task(refs):
        for ref in refs:
            if ref.n_rows == 0:
                continue
            X = open_block(ref.path, ref.width).X
            if kernel is not None:
                result = kernel(open_block(ref.path, ref.width).groups, csr_dot(X, w_bc.value[: ref.width]), None)
                stats, coef = result.stats_dd(), result.coef
            else:
                start = row_start[ref.partition]
                stats, coef = (np.zeros(0), np.zeros(0)), c_bc.value[start: start + ref.n_rows]
            yield (stats, _padded_tdot(X, coef, n_features), _padded_tdot(X, coef, n_features, power=2),
                   np.array([ref.n_rows, ref.n_groups]))

    return task


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

    return task


def cleanup_task():
    """Delete this partition's block directory (and its kernel states)."""

    def task(refs):
        for ref in refs:
            remove_store([ref.path])
        yield 0

    return task


def _padded_tdot(X, coef: np.ndarray, n_features: int, power: int = 1):
    """``Xᵀc`` (or ``(X∘X)ᵀc`` with ``power=2``) of one block as a double-double padded to ``n_features``."""
    hi, lo = csr_tdot_dd(X, coef, power)
    pad = n_features - hi.shape[0]
    return np.pad(hi, (0, pad)), np.pad(lo, (0, pad))


def add_dd(a: Any, b: Any):
    """``treeAggregate`` combiner for double-doubles (``None`` = nothing yet)."""
    if a is None:
        return b
    if b is None:
        return a
    return dd_add(a, b)


def add_pair(a: Any, b: Any):
    """``treeAggregate`` combiner for ``(stats, gradient, [rows, groups])`` of executor passes.

    ``stats`` and ``gradient`` are double-doubles; the counts are what the tasks processed.
    """
    if a is None:
        return b
    if b is None:
        return a
    return add_dd(a[0], b[0]), add_dd(a[1], b[1]), a[2] + b[2]


def feature_stats_task(n_features: int):
    """Per-feature count/mean/M2/min/max of each block (merged by ``treeAggregate``)."""
    from ..engines.base import FeatureStatistics

    def task(refs):
        for ref in refs:
            if ref.n_rows:
                X = open_block(ref.path, ref.width).X
                yield FeatureStatistics.from_csr(X.indptr, X.indices, X.data, ref.n_rows, n_features)

    return task


def merge_stats(a: Any, b: Any):
    """``treeAggregate`` combiner for :class:`~sparkrank.engines.base.FeatureStatistics`."""
    if a is None:
        return b
    return a.merge(b)
