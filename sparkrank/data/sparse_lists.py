"""The sparse feature rows of one record batch, as :func:`.row_fill.fill_sparse_rows` takes them.

Three layouts hold the same thing -- per row, column indices and their values: top-level
``indices`` and ``values`` list columns (``write_parquet``'s layout), a ``struct<indices,
values>`` column (the Spark SVMlight reader's rows) and a Spark ML vector column
(``struct<type: int8, size: int32, indices, values>``, dense rows of type 1 without indices).
Each gives the kernel the lists' Arrow offsets and whole child arrays, without a copy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


class CannotStream(Exception):
    """The batch reader leaves this input to the whole-table path (bad data, or a case it does
    not handle); the message says why, for the debug log."""



@dataclass(frozen=True)
class _Lists:
    """One batch's sparse rows as the kernel takes them (see :func:`.row_fill.fill_sparse_rows`)."""

    kinds: np.ndarray
    sizes: np.ndarray
    i_off: np.ndarray
    indices: np.ndarray
    v_off: np.ndarray
    values: np.ndarray


_NO_KINDS, _NO_SIZES = np.empty(0, np.int8), np.empty(0, np.int32)


def _lists(indices, values, kinds=_NO_KINDS, sizes=_NO_SIZES, dense_rows=None) -> _Lists:
    """The kernel's arrays of list arrays ``indices`` and ``values`` (no copy: their offsets and
    whole children); :class:`CannotStream` for nulls (but the indices of ``dense_rows``), or
    element types other than integer indices and float values."""
    if values.null_count or values.values.null_count or indices.values.null_count:
        raise CannotStream("a null feature list or value")
    if indices.null_count and (dense_rows is None or np.any(indices.is_null().to_numpy(zero_copy_only=False)
                                                            & ~dense_rows)):
        raise CannotStream("a null feature index list")
    if not (pa.types.is_integer(indices.values.type) and pa.types.is_floating(values.values.type)):
        raise CannotStream(f"feature lists of {indices.values.type} and {values.values.type}")
    return _Lists(kinds, sizes, indices.offsets.to_numpy(), indices.values.to_numpy(),
                  values.offsets.to_numpy(), values.values.to_numpy())


class ListRows:
    """Top-level ``indices`` and ``values`` list columns (``write_parquet``'s layout)."""

    vectors = False

    def __init__(self, indices: str, values: str):
        self.indices, self.values = indices, values
        self.leaves = (indices, values)

    def lists(self, batch) -> _Lists:
        return _lists(batch.column(self.indices), batch.column(self.values))


class StructRows(ListRows):
    """A ``struct<indices, values>`` column (the Spark SVMlight reader's rows)."""

    def __init__(self, name: str):
        self.name = name
        self.leaves = (f"{name}.indices", f"{name}.values")

    def lists(self, batch) -> _Lists:
        col = batch.column(self.name)
        if col.null_count:
            raise CannotStream("a null feature struct")
        return _lists(col.field("indices"), col.field("values"))


class VectorRows(StructRows):
    """A Spark ML vector column: ``struct<type: int8, size: int32, indices, values>``, dense
    (type 1) and sparse rows mixed."""

    vectors = True

    def lists(self, batch) -> _Lists:
        col = batch.column(self.name)
        kinds = col.field("type")
        if col.null_count or kinds.null_count:
            raise CannotStream("a null feature vector")
        kinds = kinds.to_numpy(zero_copy_only=False).astype(np.int8, copy=False)
        sizes = col.field("size").fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
        return _lists(col.field("indices"), col.field("values"), kinds, sizes, kinds == 1)


def no_lists(dtype) -> tuple:
    """The CSR outputs the kernel is handed when it writes dense rows (it does not touch them)."""
    return np.zeros(1, np.int64), np.empty(0, np.int32), np.empty(0, dtype)
