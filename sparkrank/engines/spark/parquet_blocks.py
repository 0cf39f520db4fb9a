"""Blocks read straight from local Parquet files: no JVM scan, no shuffle, no sort.

Why: the general build (``SparkEngine._arrange``) has the JVM read every row, hash them
across the cluster by query id, sort each partition and hand the rows to Python as Arrow
batches.  For LETOR-style data, a 136-float array per row, that costs far more than the
decoding itself.  But ranking data is nearly always written query by query, so the rows
of a query are already contiguous in the files.  Then each block can be a contiguous run
of row groups, read by its task with pyarrow, as the local engine reads the same files:

* the driver reads only the footers (:func:`plan_row_groups`) and cuts the row groups
  into ``P`` runs of about equal rows (:func:`split_runs`);
* task ``i`` reads its run, drops the leading rows of the query the run before it ends
  in, and reads on past its end to the last row of its own last query
  (:func:`block_rows`), so no query is split between blocks;
* it decodes the rows with the same :func:`~sparkrank.engines.spark.store.decode_rows` as the
  shuffled build and keeps the block the same way (``block_writer.py``).

The driver then checks that no query id turned up in two blocks (a file not written
query by query, or one query in two files); if one did, the engine falls back to the
shuffle.  A bad row is named by its file and its row in that file, the local reader's
words.  The blocks are a cached RDD of references, as in the shuffled build: a lost
executor's blocks come back from the lineage, which reads the same rows again.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

import numpy as np

from ...data import memory
from ...data.block import DataError
from ...data.weights import GroupWeightError
from ...io.spark.worker import worker_task
from . import store
from .block_writer import BlockWriter


@dataclass(frozen=True)
class RowGroup:
    """One Parquet row group: its file, index in the file, first row in the file, and size."""

    path: str
    index: int
    first_row: int
    n_rows: int


def plan_row_groups(paths: list[str], columns: list[str]) -> list[RowGroup] | None:
    """The row groups of ``paths`` (local files) in order, from the footers only; ``None``
    when a file lacks one of ``columns`` (a Hive partition column, say: Spark must read it)."""
    import pyarrow.parquet as pq

    out: list[RowGroup] = []
    for path in paths:
        meta = pq.ParquetFile(path).metadata
        names = set(meta.schema.to_arrow_schema().names)
        if not set(columns) <= names:
            return None
        first = 0
        for i in range(meta.num_row_groups):
            n = meta.row_group(i).num_rows
            if n:
                out.append(RowGroup(os.path.abspath(path), i, first, n))
            first += n
    return out


def split_runs(row_groups: list[RowGroup], n_parts: int) -> list[tuple[int, int]]:
    """``[start, stop)`` indices into ``row_groups``: at most ``n_parts`` non-empty runs of
    about equal rows (a cut falls at the row group nearest to each ``k/n_parts`` of the rows)."""
    sizes = np.array([g.n_rows for g in row_groups], dtype=np.int64)
    if sizes.size == 0:
        return []
    ends = np.cumsum(sizes)
    targets = ends[-1] * np.arange(1, n_parts) / n_parts
    cuts = np.searchsorted(ends, targets, side="left")
    # the cut after row group c when its end is nearer the target than its start
    cuts = np.where(ends[cuts] - targets <= targets - (ends[cuts] - sizes[cuts]), cuts + 1, cuts)
    bounds = sorted({0, *cuts.tolist(), len(row_groups)})
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


class _Files:
    """Open Parquet files of one task (each footer read once)."""

    def __init__(self):
        self._open = {}

    def read(self, group: RowGroup, columns: list[str]):
        import pyarrow.parquet as pq

        pf = self._open.get(group.path)
        if pf is None:
            # no pre-buffering: it kept the last row group's column chunks (~100 MB) until the next read
            pf = self._open[group.path] = pq.ParquetFile(group.path, pre_buffer=False)
        return pf.read_row_group(group.index, columns=columns)

    def batches(self, group: RowGroup, columns: list[str], first: int, stop: int):
        """Rows ``first:stop`` of ``group`` as tables of at most :data:`memory.READ_BATCH_ROWS`
        rows, read one after another: pyarrow holds ~3.5 bytes per byte of what it reads at once
        (values, repetition and definition levels), 0.6 GB for a row group of 200k x 136 floats,
        0.2 GB in batches."""
        import pyarrow as pa

        self.read(group, [])  # opens the file
        start = 0
        for batch in self._open[group.path].iter_batches(memory.READ_BATCH_ROWS, row_groups=[group.index],
                                                        columns=columns, use_threads=False):
            a, b = max(first - start, 0), min(stop - start, batch.num_rows)
            start += batch.num_rows
            if b > a:
                yield pa.Table.from_batches([batch.slice(a, b - a)])
            if start >= stop:
                return

    def qids(self, group: RowGroup, qid_col: str) -> np.ndarray:
        return self.read(group, [qid_col]).column(0).to_numpy(zero_copy_only=False)


def _leading_run(qids: np.ndarray, qid) -> int:
    """How many leading entries of ``qids`` equal ``qid``."""
    differ = np.flatnonzero(qids != qid)
    return int(differ[0]) if differ.size else int(qids.shape[0])


def block_rows(row_groups: list[RowGroup], run: tuple[int, int], qid_col: str, files: _Files):
    """The rows of the block of ``run``: ``[(row group, first, stop)]`` slices, file order.

    The run's leading rows that continue the query the row group before it ends in belong
    to the block before; rows after the run that continue its last query belong here.
    """
    start, stop = run
    gi, first = start, 0
    if start > 0:  # skip the rows of the previous run's last query
        previous = files.qids(row_groups[start - 1], qid_col)[-1]
        while gi < stop:
            lead = _leading_run(files.qids(row_groups[gi], qid_col), previous)
            if lead < row_groups[gi].n_rows:
                first = lead
                break
            gi += 1
        if gi == stop:
            return []  # the whole run continues the previous run's last query
    pieces = [(row_groups[gi], first, row_groups[gi].n_rows)]
    pieces += [(row_groups[k], 0, row_groups[k].n_rows) for k in range(gi + 1, stop)]
    last = files.qids(row_groups[stop - 1], qid_col)[-1]
    for k in range(stop, len(row_groups)):  # read on to the end of the last query
        lead = _leading_run(files.qids(row_groups[k], qid_col), last)
        if lead:
            pieces.append((row_groups[k], 0, lead))
        if lead < row_groups[k].n_rows:
            break
    return pieces


def build_task(owner: store.Owner, store_id: str, row_groups: list[RowGroup], runs: list[tuple[int, int]],
               label_col: str, qid_col: str, spec, dtype_name: str, weights=None):
    """A ``mapPartitionsWithIndex`` function: partition ``i`` reads run ``i`` into one block
    and yields its reference (a :class:`pyspark.sql.Row` with the fields of
    :data:`~sparkrank.engines.spark.store.REF_SCHEMA`, plus ``group_ids``: its distinct query ids)."""
    from ...data.block import max_features_limit

    dtype = np.dtype(dtype_name).type
    max_features = max_features_limit()
    columns = [label_col, qid_col, *spec.columns, *(weights.columns if weights else [])]

    def task(index, _):
        from pyspark.sql import Row

        from ...data.arrow import RowError

        store._sweep_once(owner)
        ref = {"partition": index, "path": "", "host": socket.gethostname(), "n_rows": 0, "n_groups": 0,
               "n_pairs": 0, "n_groups_without_pairs": 0, "width": 0, "nnz": 0, "nbytes": 0, "error": None,
               "group_ids": None, "row_error": False}
        files = _Files()
        pieces, writer = [], None
        offset = 0  # rows of the pieces before the one being read
        try:
            writer = BlockWriter(os.path.join(store.app_dir(owner), store_id, f"part-{index:05d}"), label_col,
                                 qid_col, spec, dtype, max_features, *([weights] if weights else []))
            pieces = block_rows(row_groups, runs[index], qid_col, files)
            # a batch of rows in memory at a time, decoded into the block's files (block_writer.py)
            for g, a, b in pieces:
                for table in files.batches(g, columns, a, b):
                    offset = writer.rows
                    writer.add(table)
                    store.release_arrow_memory()
            ref.update(writer.finish())
            ref["group_ids"] = _group_ids(ref["path"]) if ref["n_rows"] else np.zeros(0)
        except RowError as exc:
            _discard(writer)
            group, row = _row_in_file(pieces, offset + exc.row)
            ref["error"] = f"{group.path}: row {row}: {exc.detail}"
            ref["row_error"] = True  # the driver names the local reader's row (spark/locate.py)
        except GroupWeightError as exc:  # the driver merges the blocks' (building.py)
            _discard(writer)
            ref["error"] = exc.payload()
        except DataError as exc:
            _discard(writer)
            ref["error"] = str(exc)
        except OSError as exc:  # the file is not readable on this host: the driver falls back
            _discard(writer)
            ref["error"] = f"{_UNREADABLE}{exc}"
        finally:
            store.release_arrow_memory()
        yield Row(**ref)

    return worker_task(task)


def _discard(writer: BlockWriter | None) -> None:
    if writer is not None:
        writer.discard()


def _group_ids(path: str) -> np.ndarray:
    """The distinct query ids of the block written at ``path`` (its ``qids``, one per group)."""
    return np.unique(np.load(os.path.join(path, "qids.npy")))


#: The start of a reference's error when a file could not be read on an executor.
_UNREADABLE = "unreadable on the executor: "


def is_unreadable(error: str | None) -> bool:
    return bool(error) and error.startswith(_UNREADABLE)


def _row_in_file(pieces, row: int) -> tuple[RowGroup, int]:
    """The row group and the row in its file of row ``row`` of the concatenated pieces."""
    for group, a, b in pieces:
        if row < b - a:
            return group, group.first_row + a + row
        row -= b - a
    raise IndexError(row)


def repeated_group_ids(refs) -> bool:
    """Whether a query id turned up in two blocks (then the rows were not query by query)."""
    ids = [r.group_ids for r in refs if r.group_ids is not None and len(r.group_ids)]
    if len(ids) < 2:
        return False
    every = np.concatenate(ids)
    return np.unique(every).size < every.size
