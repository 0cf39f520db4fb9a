"""An Arrow table of ranking rows -> :class:`~sparkrank.data.block.RankingData` (the local readers).

Columns are named by a :class:`~sparkrank.io.sources.ColumnSpec`; the group id of several
columns is the JSON text of their values, the same text Spark's ``to_json(struct(...))``
gives (:func:`sparkrank.io.spark.frames.group_expression`), so both engines see the same ids.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pyarrow as pa

from ..defaults import LAYOUT
from .arrow import FeatureSpec, RowError, group_id_array, label_array, table_to_csr, value_detail
from .block import DROP_HINT, INVALID_ROWS, DataError, RankingData

log = logging.getLogger("sparkrank")


def ranking_data_from_table(
    table: pa.Table,
    columns,
    *,
    where: str = "",
    n_features: int | None = None,
    stored_n_features: int | None = None,
    dtype: type = np.float64,
    drop_invalid_rows: bool = False,
) -> RankingData:
    """A :class:`RankingData` from an Arrow table whose columns were checked against
    ``columns`` (a :class:`~sparkrank.io.sources.ColumnSpec`).

    ``drop_invalid_rows``: drop (and log the count of) :data:`~sparkrank.data.block.INVALID_ROWS`
    instead of raising :class:`DataError`.  Without ``columns.labels`` (scoring) neither labels nor
    group ids are read: every row is scored, in one ranking of all 0 labels, whatever those
    columns hold (the caller checked that they exist).
    """
    label_col = columns.label if columns.labels else None
    group = combine_group_columns(table, columns.group) if columns.group and columns.labels else None
    if group is not None:
        table = table.append_column("__sparkrank_group", group)
    group_col = None if group is None else "__sparkrank_group"
    kept = None
    if drop_invalid_rows:
        table, kept = _drop_invalid_rows(table, label_col, group_col, where)
    try:
        labels = np.zeros(table.num_rows) if label_col is None else label_array(table.column(label_col), label_col,
                                                                                where, DROP_HINT)
        qid = None if group_col is None else group_id_array(table.column(group_col), columns.group_name, where,
                                                            DROP_HINT)
        # dense columns stay dense rows (half the memory of CSR; the kernels agree bit for bit)
        if columns.feature_cols:
            X = _named_columns_to_dense(table, columns.feature_cols, dtype, where)
        else:
            spec = FeatureSpec.detect(table.column_names, columns.features)
            X = table_to_csr(table, spec, n_features or stored_n_features, dtype, where, layout=LAYOUT)
    except RowError as exc:
        if kept is None:
            raise
        # the row of the table as given, not of the rows kept (the caller names it in its file)
        raise RowError(where, int(kept[exc.row]), exc.detail) from None
    return RankingData.from_arrays(X, labels, qid, dtype=dtype, n_features=n_features, layout=LAYOUT)


def _named_columns_to_dense(table: pa.Table, names, dtype, where: str) -> np.ndarray:
    """Dense features from named numeric columns; a null or non-finite value is a
    :class:`RowError` worded as Spark words it for the same columns assembled into an array
    (``feature column 'f1' is null``, :func:`~sparkrank.data.arrow.dense_lists`)."""
    spec = FeatureSpec(names=tuple(names))
    dense = np.empty((table.num_rows, len(names)), dtype=dtype)
    for j, name in enumerate(names):
        col = table.column(name)
        t = col.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
                or pa.types.is_boolean(t) or pa.types.is_null(t)):  # the types Spark casts (spark's prepare_frame)
            raise DataError(f"{where}feature column {name!r} is not numeric ({t})")
        if col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise RowError(where, row, f"feature column {spec.column_label(j)} is null")
        with np.errstate(over="ignore"):  # beyond float32's range: inf, named below
            dense[:, j] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    bad = np.argwhere(~np.isfinite(dense))
    if bad.size:
        r, c = int(bad[0, 0]), int(bad[0, 1])
        raw = table.column(names[c])[r].as_py()
        raise RowError(where, r, value_detail(spec.column_label(c), dense[r, c], None if raw is None else float(raw)))
    return dense


def combine_group_columns(table, group: tuple[str, ...]) -> np.ndarray:
    """The group id of each row of an Arrow table: one column's values, or for several the
    JSON text of the values (as Spark's ``to_json(struct(...))``); ``None`` where a part is null."""
    if len(group) == 1:
        return table.column(group[0])
    columns = [table.column(g).to_pylist() for g in group]
    out = [None if any(v is None for v in values) else
           json.dumps(dict(zip(group, values)), separators=(",", ":"), default=str)
           for values in zip(*columns)]
    return pa.array(out, type=pa.string())


def _drop_invalid_rows(table, label_col: str | None, qid_col: str | None, where: str):
    """``(table without INVALID_ROWS, positions of the rows kept or None when none was
    dropped)``; logs how many were dropped."""
    bad = invalid_row_mask(table.num_rows, None if label_col is None else table.column(label_col),
                           None if qid_col is None else table.column(qid_col))
    n_bad = int(bad.sum())
    if not n_bad:
        return table, None
    log.warning("%sdropped %d of %d %s", where, n_bad, table.num_rows, INVALID_ROWS)
    return table.filter(pa.array(~bad)), np.flatnonzero(~bad)


def invalid_row_mask(n_rows: int, label=None, group=None) -> np.ndarray:
    """Which of ``n_rows`` rows are :data:`~sparkrank.data.block.INVALID_ROWS`: a null or
    non-finite ``label`` (an Arrow column, or ``None``) or a null ``group`` id."""
    bad = np.zeros(n_rows, dtype=bool)
    if label is not None:
        bad |= label.is_null().to_numpy(zero_copy_only=False)
        values = np.asarray(label.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        bad |= ~np.isfinite(values)
    if group is not None:
        bad |= group.is_null().to_numpy(zero_copy_only=False)
    return bad
