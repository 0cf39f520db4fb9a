"""A block written as its rows arrive: each Arrow chunk decoded and appended to the block's files.

Why: a Python worker that gathered its partition's rows into one Arrow table and decoded the
table as a whole held the Arrow rows, a combined copy of them and the decoded matrix at once,
then left ~1.4 GB in Arrow's allocator (mimalloc keeps what it frees): 2.8 GB at the peak and
1.5 GB after the build for a block of 1M x 136 float64 rows (1.1 GB).  Written chunk by chunk,
the decoded features exist only in the block's files (the page cache), and the worker holds one
chunk, plus 16 bytes a row for the labels and query ids, at a time
(:func:`sparkrank.data.memory.build_peak_bytes`).

The files are exactly those :func:`write_block` writes for the same rows (a whole block): the
features as ``.npy`` arrays whose header is written last (:class:`NpyAppender`), the groups
from the labels and ids by the same :meth:`RankingData.from_arrays`.  A chunk is checked by the
same decoders as a whole partition (:func:`~sparkrank.engines.spark.store.decode_rows`); a bad row is
raised as a :class:`~sparkrank.data.arrow.RowError` at its position in the chunk, and the caller,
who knows where the chunk started (:attr:`BlockWriter.rows` before :meth:`BlockWriter.add`),
names it.  Rows of one query that are not contiguous (a Parquet file not written query by
query) are put in order as :meth:`RankingData.from_arrays` would, in memory, once.
"""

from __future__ import annotations

import os
import shutil
import struct

import numpy as np

from ...defaults import LAYOUT
from ...data.arrow import RowError, group_id_array, label_array, table_to_csr
from ...data.block import DROP_HINT, RankingData
from ...data.weights import WeightColumns, WeightError

#: The file of a block whose features are dense rows (a fixed-width array column): one
#: C-ordered ``(rows, width)`` array instead of CSR's three, no column indices.
DENSE = "dense"
#: Bytes of the ``.npy`` header of an appended array: numpy's format 1.0 with room for any shape.
HEADER_BYTES = 128
#: Rows decoded at a time: the float64 copy of a 136-feature chunk is ~70 MB.
CHUNK_ROWS = 1 << 16


def write_block(path: str, data: RankingData) -> dict:
    """A whole block's files at ``path`` (replacing any there) and its reference's fields."""
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    g = data.groups
    X = data.X
    if isinstance(X, np.ndarray):
        arrays = {DENSE: X}
    else:
        arrays = {"indptr": X.indptr.astype(np.int64, copy=False), "indices": X.indices.astype(np.int32, copy=False),
                  "data": X.data}
    nbytes = _save_arrays(path, arrays) + write_groups(path, data)
    nnz = X.size if isinstance(X, np.ndarray) else int(X.indptr[-1])
    return {"path": path, "n_rows": data.n_rows, "n_groups": g.n_groups, "n_pairs": g.n_pairs,
            "n_groups_without_pairs": g.n_groups_without_pairs, "width": data.n_features, "nnz": nnz,
            "nbytes": nbytes}


def write_groups(path: str, data: RankingData) -> int:
    """The block's group arrays (and query ids) into ``path``; their bytes."""
    g = data.groups
    arrays = {"labels": g.labels, "offsets": g.offsets, "label_rank": g.label_rank,
              "n_levels": g.n_levels, "pairs_per_group": g.pairs_per_group}
    if g.weighted:  # data/weights.py; open_block reads them when present
        arrays.update(row_weights=g.row_weights, group_weights=g.group_weights)
    if data.qids is not None:
        arrays["qids"] = np.asarray(data.qids)
    return _save_arrays(path, arrays)


def _save_arrays(path: str, arrays: dict[str, np.ndarray]) -> int:
    nbytes = 0
    for name, arr in arrays.items():
        np.save(os.path.join(path, name + ".npy"), np.ascontiguousarray(arr), allow_pickle=False)
        nbytes += arr.nbytes
    return nbytes


class NpyAppender:
    """An ``.npy`` file of a C-ordered array whose rows are appended; the header (shape) is
    written by :meth:`close` into the :data:`HEADER_BYTES` kept free at the start, so
    ``numpy.load`` (and its memory map) reads it as any other ``.npy`` file."""

    def __init__(self, path: str, dtype, row_shape: tuple[int, ...] = ()):
        self.path, self.dtype, self.row_shape = path, np.dtype(dtype), tuple(row_shape)
        self.rows = 0
        self._file = open(path, "wb")
        self._file.write(bytes(HEADER_BYTES))

    def append(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype)
        self._file.write(memoryview(values).cast("B"))
        self.rows += values.shape[0]

    def close(self) -> int:
        """Write the header; the array's bytes."""
        shape = (self.rows, *self.row_shape)
        text = "{" + f"'descr': {np.lib.format.dtype_to_descr(self.dtype)!r}, 'fortran_order': False, " \
                     f"'shape': {shape!r}, " + "}"
        body = HEADER_BYTES - 10  # magic (6), version (2), header length (2)
        header = b"\x93NUMPY\x01\x00" + struct.pack("<H", body) + text.ljust(body - 1).encode("latin1") + b"\n"
        self._file.seek(0)
        self._file.write(header)
        self._file.close()
        return int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize

    def discard(self) -> None:
        self._file.close()


def _fixed_width_message(table, spec) -> str | None:
    """For features that must have one width in every row (dense arrays, Spark ML vectors), the
    words of :func:`~sparkrank.data.arrow._same_width`; ``None`` for index/value lists."""
    import pyarrow as pa

    if spec.features_col is None:
        return None
    typ = table.schema.field(spec.features_col).type
    if pa.types.is_struct(typ):
        names = {typ.field(i).name for i in range(typ.num_fields)}
        return "feature vectors differ in size" if "type" in names else None
    return "feature arrays differ in length"


class BlockWriter:
    """Decodes Arrow chunks of one block's rows (in order) into the block directory ``path``."""

    def __init__(self, path: str, label_col: str, qid_col: str | None, spec, dtype, max_features: int,
                 weights: WeightColumns = WeightColumns()):
        if os.path.exists(path):
            shutil.rmtree(path)
        os.makedirs(path)
        self.path, self.label_col, self.qid_col, self.spec = path, label_col, qid_col, spec
        self.dtype, self.max_features = np.dtype(dtype).type, max_features
        self.rows = 0
        self.width = 0
        self.weights = weights
        self._weights: list[tuple] = []  # per chunk: (row weights, group weights) or Nones
        self._labels: list[np.ndarray] = []
        self._qids: list[np.ndarray] = []
        self._dense: NpyAppender | None = None
        self._csr: dict[str, NpyAppender] | None = None
        self._nnz = 0

    def add(self, table) -> None:
        """Append ``table``'s rows, decoded in pieces of :data:`CHUNK_ROWS`; a bad row raises
        :class:`RowError` at its position in ``table``."""
        for start in range(0, table.num_rows, CHUNK_ROWS):
            chunk = table.slice(start, CHUNK_ROWS)
            try:
                self._add_chunk(chunk)
            except RowError as exc:
                raise RowError("", start + exc.row, exc.detail) from None

    def _add_chunk(self, chunk) -> None:
        labels = label_array(chunk.column(self.label_col), self.label_col, "", DROP_HINT)
        qids = None if self.qid_col is None else group_id_array(chunk.column(self.qid_col), self.qid_col, "",
                                                                 DROP_HINT)
        X = table_to_csr(chunk, self.spec, None, self.dtype, "", self.max_features, layout=LAYOUT)
        if self.weights:
            try:
                self._weights.append(self.weights.arrays(chunk))
            except WeightError as exc:  # a row of the chunk: the caller names it
                raise RowError("", exc.row, exc.detail) from None
        width = int(X.shape[1])
        what = _fixed_width_message(chunk, self.spec)
        if what is not None and self.rows and width != self.width:
            # every row of the chunk has its first row's width (the decoder checked): row 0 differs
            raise RowError("", 0, f"{what}: {width} here but {self.width} in the rows before")
        self.width = max(self.width, width)
        if isinstance(X, np.ndarray):
            if self._dense is None:
                self._dense = NpyAppender(os.path.join(self.path, DENSE + ".npy"), X.dtype, (width,))
            self._dense.append(X)
        else:
            if self._csr is None:
                self._csr = {"indptr": NpyAppender(os.path.join(self.path, "indptr.npy"), np.int64),
                             "indices": NpyAppender(os.path.join(self.path, "indices.npy"), np.int32),
                             "data": NpyAppender(os.path.join(self.path, "data.npy"), X.dtype)}
                self._csr["indptr"].append(np.zeros(1, dtype=np.int64))
            self._csr["indptr"].append(np.asarray(X.indptr[1:], dtype=np.int64) + self._nnz)
            self._csr["indices"].append(X.indices)
            self._csr["data"].append(X.data)
            self._nnz += int(X.indptr[-1])
        # copies: a view would keep the chunk's Arrow buffers alive until the block is done
        self._labels.append(np.array(labels))
        if qids is not None:
            self._qids.append(np.array(qids))
        self.rows += chunk.num_rows

    def finish(self) -> dict:
        """Close the files, write the groups; the reference fields of
        :func:`write_block` (``path``, ``n_rows``, ..., ``nnz``, ``nbytes``)."""
        if self.rows == 0:
            empty = RankingData.from_arrays(np.zeros((0, 0)), np.zeros(0), None if self.qid_col is None else np.zeros(0))
            return write_block(self.path, empty)
        labels = np.concatenate(self._labels)
        qids = np.concatenate(self._qids) if self.qid_col is not None else None
        weights = {}
        if self.weights:  # row_weights, group_weights as RankingData.from_arrays takes them
            weights = {name: None if parts[0] is None else np.concatenate(parts)
                       for name, parts in zip(("row_weights", "group_weights"), zip(*self._weights))}
        self._labels, self._qids, self._weights = [], [], []
        # the groups (and every check of labels and ids) as RankingData makes them, without X
        grouped = RankingData.from_arrays(np.zeros((self.rows, 0)), labels, qids, dtype=self.dtype, layout="dense",
                                          **weights)
        nbytes = self._close_features()
        if grouped.input_order is not None:  # a query's rows apart: reorder them as from_arrays does
            data = RankingData.from_arrays(self._features(), labels, qids, dtype=self.dtype, layout=LAYOUT, **weights)
            return write_block(self.path, data)
        nbytes += write_groups(self.path, grouped)
        g = grouped.groups
        return {"path": self.path, "n_rows": self.rows, "n_groups": g.n_groups, "n_pairs": g.n_pairs,
                "n_groups_without_pairs": g.n_groups_without_pairs, "width": self.width,
                "nnz": self.rows * self.width if self._dense is not None else self._nnz, "nbytes": nbytes}

    def _close_features(self) -> int:
        if self._dense is not None:
            return self._dense.close()
        return sum(a.close() for a in self._csr.values())

    def _features(self):
        """The features written, memory-mapped (dense rows, or a SciPy CSR matrix)."""
        import scipy.sparse as sp

        def load(name):
            return np.load(os.path.join(self.path, name + ".npy"), mmap_mode="r", allow_pickle=False)

        if self._dense is not None:
            return load("dense")
        return sp.csr_matrix((load("data"), load("indices"), load("indptr")), shape=(self.rows, self.width))

    def discard(self) -> None:
        """Close and delete what was written (a bad row abandons the block)."""
        for appender in [self._dense, *(self._csr or {}).values()]:
            if appender is not None:
                appender.discard()
        self._dense = self._csr = None
        shutil.rmtree(self.path, ignore_errors=True)
