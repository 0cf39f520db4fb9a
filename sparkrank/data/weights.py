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


class GroupWeightError(DataError):
    """A group-weight column whose value differs within a query: ``qid`` the smallest such
    query id (``None``: the one global ranking), ``values`` its two smallest distinct weights,
    ``n_groups`` how many queries differ.  Told the same way whichever order a query's rows
    come in, so the Spark engine's blocks (each holding whole queries, in shuffled order) and
    the local engine give one message (:meth:`payload`, :meth:`merged`)."""

    #: What a Spark block's error field starts with for this error (then :meth:`payload`'s JSON).
    MARKER = "sparkrank-group-weight:"

    def __init__(self, qid, values, n_groups: int, column: str = "group weight", where: str | None = None):
        self.qid, self.values, self.n_groups, self.column, self.where = qid, list(values), int(n_groups), column, where
        query = "the global ranking" if qid is None else f"query {qid!r}"
        more = f" (and {n_groups - 1} more {'query' if n_groups == 2 else 'queries'})" if n_groups > 1 else ""
        super().__init__(f"{where + ': ' if where else ''}{column} differs within {query}: "
                         f"{self.values[0]!r} and {self.values[1]!r}{more}; a group weight must be the same on "
                         "all rows of its query")

    def named(self, column: str, where: str | None) -> "GroupWeightError":
        """The same error for weights read from ``column`` of the input ``where``."""
        return GroupWeightError(self.qid, self.values, self.n_groups, column, where)

    def payload(self) -> str:
        """This error as a Spark block reports it: :data:`MARKER` and JSON."""
        import json

        return self.MARKER + json.dumps({"qid": self.qid, "values": self.values, "n": self.n_groups})

    @classmethod
    def merged(cls, payloads: list[str], column: str, where: str | None) -> "GroupWeightError":
        """The error of several blocks' :meth:`payload`: the smallest query id among them, the
        count summed (a query lies in one block)."""
        import json

        found = [json.loads(p[len(cls.MARKER):]) for p in payloads]
        first = min(found, key=lambda f: (f["qid"] is not None, f["qid"]))
        return cls(first["qid"], first["values"], sum(f["n"] for f in found), column, where)


def group_weights_of_rows(values: np.ndarray, offsets: np.ndarray, column: str, *, where: str | None = None,
                          qids: np.ndarray | None = None) -> np.ndarray:
    """One weight per group from a per-row column that must hold the same value on every row of
    a group (``offsets``: contiguous groups; ``qids``: their ids, ``None`` for one global
    ranking), else a :class:`GroupWeightError` naming ``where`` (the input), the column and the
    smallest query id whose rows differ."""
    b = np.asarray(values, dtype=np.float64)
    if b.shape[0] == 0:
        return np.zeros(offsets.shape[0] - 1)
    first = np.repeat(b[offsets[:-1]], np.diff(offsets))
    bad = np.flatnonzero(b != first)
    if bad.size:
        groups = np.unique(np.searchsorted(offsets, bad, side="right") - 1)
        g = int(groups[np.argmin(np.asarray(qids)[groups])]) if qids is not None else int(groups[0])
        qid = None if qids is None else np.asarray(qids)[g].item()
        distinct = np.unique(b[offsets[g]:offsets[g + 1]])[:2].tolist()
        raise GroupWeightError(qid, distinct, groups.size, column, where)
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
