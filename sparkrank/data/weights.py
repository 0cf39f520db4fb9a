"""Row and group weights, defined by duplication, and the one check of their values.

A **row weight** ``a_i ≥ 0`` weighs every preference pair ``(u, l)`` a row takes part in by
``a_u·a_l``; a **group weight** ``b_q ≥ 0`` weighs every pair of group ``q`` by ``b_q``.  With
integer weights this is exactly the data with row ``i`` repeated ``a_i`` times and group ``q``
repeated ``b_q`` times under new group ids, so every loss, its normaliser (the weighted pair
count ``Σ b_q a_u a_l``, or TopPush's weighted positives) and every metric is the one of that
repeated data; a zero weight drops the row's (or the group's) pairs.  TopPush weighs each
positive's term by ``b_q·a_i`` and lets a negative in when its weight is positive
(:mod:`sparkrank.kernels.toppush`).

The weights live in :class:`~sparkrank.data.groups.QueryGroups` (``row_weights``,
``group_weights``), so every kernel and engine sees them beside the labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import DataError

#: The column SVMlight's ``cost:`` tokens are read into, on both engines (:mod:`sparkrank.data.svmlight.costs`):
#: here, beside the weights, so that naming it loads no parser.
COST_COLUMN = "cost"

#: The requirement every weight meets (in each error message).
WEIGHT_RULE = "weights must be finite and non-negative"


class WeightError(DataError):
    """A bad weight: the message names the row; ``row`` (as counted by the caller) and ``detail``
    (the message without the file and row) let a reader that knows the file name it."""

    def __init__(self, message: str, row: int, detail: str):
        super().__init__(message)
        self.row, self.detail = row, detail


def check_weights(values, column: str, *, where: str | None = None, first_row: int = 0) -> np.ndarray:
    """``values`` as float64 when every one is finite and ``≥ 0``, else one :class:`DataError`
    naming ``where`` (a file), the column and the first bad row (``first_row`` + its index,
    counted as the caller counts rows)."""
    a = np.asarray(values, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(np.isfinite(a) & (a >= 0)))
    if bad.size:
        row = int(bad[0])
        named = f"{where}: " if where else ""
        detail = f"{column} is {float(a[row])!r}: {WEIGHT_RULE}"
        raise WeightError(f"{named}{column} of row {first_row + row} is {float(a[row])!r}: {WEIGHT_RULE} "
                          f"({bad.size} bad rows)", first_row + row, detail)
    return a


def group_weights_of_rows(values: np.ndarray, offsets: np.ndarray, column: str, *, where: str | None = None,
                          rows: np.ndarray | None = None) -> np.ndarray:
    """One weight per group from a per-row column that must hold the same value on every row of
    a group (``offsets``: contiguous groups), else a :class:`DataError` naming the first row
    that differs from its group's first row (``rows``: each stored row's input position)."""
    b = np.asarray(values, dtype=np.float64)
    if b.shape[0] == 0:
        return np.zeros(offsets.shape[0] - 1)
    first = np.repeat(b[offsets[:-1]], np.diff(offsets))
    bad = np.flatnonzero(b != first)
    if bad.size:
        r = int(bad[0])
        row = r if rows is None else int(rows[r])
        named = f"{where}: " if where else ""
        g = int(np.searchsorted(offsets, r, side="right") - 1)
        first_row = int(offsets[g]) if rows is None else int(rows[offsets[g]])
        raise DataError(f"{named}{column} of row {row} is {float(b[r])!r} but {float(first[r])!r} on row "
                        f"{first_row} of the same group: a group weight must be the same on all its rows")
    return b[offsets[:-1]].copy()


@dataclass(frozen=True)
class WeightColumns:
    """The input columns that hold the row weights and the group weights (``None``: none).

    What readers and Spark block builders are given beside the label and group-id columns; a
    value that is null, NaN, infinite or negative is one error naming its row
    (:func:`check_weights`)."""

    row: str | None = None
    group: str | None = None

    @property
    def columns(self) -> list[str]:
        """The columns to read, in order (row weights first)."""
        return [c for c in (self.row, self.group) if c]

    def __bool__(self) -> bool:
        return bool(self.row or self.group)

    def present_in(self, names) -> "WeightColumns":
        """These columns, when each is one of ``names`` (else a :class:`DataError` naming it)."""
        for col in self.columns:
            if col not in names:
                raise DataError(f"no weight column {col!r}; columns are {', '.join(names)}")
        return self

    def arrays(self, table, *, where: str | None = None, first_row: int = 0) -> tuple:
        """``(row weights, group weights per row)`` of an Arrow table (``None`` for a column not
        given), each checked (:func:`check_weights`; a null is an error too)."""
        return tuple(None if col is None else check_weights(_column_values(table.column(col), col), col, where=where,
                                                             first_row=first_row)
                     for col in (self.row, self.group))


def _column_values(column, name: str) -> np.ndarray:
    """A numeric Arrow column as float64, nulls as NaN (so that the check names them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
            or pa.types.is_decimal(column.type)):
        raise DataError(f"weight column {name!r} has type {column.type}; weights must be numbers")
    return np.asarray(pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
