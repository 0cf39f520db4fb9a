"""Row and group weight columns read in-process beside a source's rows (the local engine).

The rows of a local Parquet/CSV input are read by their own readers (batch by batch, or as one
table); the weight columns (:class:`~sparkrank.data.weights.WeightColumns`) are read once more
alone, through the same ``--where`` filter and ``--drop-invalid-rows`` rule, so that row ``i`` of
the input gets weight ``i``, and stored with the rows' groups (:meth:`QueryGroups.with_weights`).
The Spark engine reads them in its block builders instead (:mod:`sparkrank.spark.block_writer`);
both check them with :func:`~sparkrank.data.weights.check_weights`, so a bad weight is one error
naming the input and the row.
"""

from __future__ import annotations

import numpy as np

from ..data.block import DataError, RankingData
from ..data.weights import WeightError, group_weights_of_rows


def with_weight_columns(data: RankingData, dataset, source, *, drop_invalid_rows: bool) -> RankingData:
    """``data`` (read from ``dataset``, a ``pyarrow.dataset`` of ``source``) with the weights of
    ``source.columns.weights``."""
    from .where import read_arrow

    columns = source.columns
    weights = columns.weights
    where = source.name
    names = dataset.schema.names
    missing = [c for c in weights.columns if c not in names]
    if missing:
        raise DataError(f"{where}: no weight column {missing[0]!r}; columns are {', '.join(names)}")
    if source.where:
        table, _ = read_arrow(dataset, source.where, f"{where}: ")
    else:
        wanted = weights.columns + ([columns.label, *columns.group] if drop_invalid_rows else [])
        table = dataset.to_table(columns=list(dict.fromkeys(wanted)))
    if drop_invalid_rows:
        table = table.filter(_valid_rows(table, columns))
    if table.num_rows != data.n_rows:
        raise DataError(f"{where}: {table.num_rows} rows of weights for {data.n_rows} rows of data")
    try:
        row, group = weights.arrays(table, where=where)
    except WeightError as exc:  # named by its file and its row there, as the Spark engine names it
        raise DataError(source.locate_row(drop_invalid_rows=drop_invalid_rows) or str(exc)) from None
    stored = data.row_order
    a = None if row is None else row[stored]
    b = None if group is None else group_weights_of_rows(group[stored], data.groups.offsets, weights.group,
                                                         where=where, qids=data.qids)
    return RankingData(data.X, data.groups.with_weights(a, b), data.qids, data.input_order)


def _valid_rows(table, columns) -> np.ndarray:
    """The rows ``--drop-invalid-rows`` keeps (:data:`~sparkrank.data.block.INVALID_ROWS`)."""
    import pyarrow.compute as pc

    label = table.column(columns.label)
    keep = pc.fill_null(pc.is_finite(pc.cast(label, "float64")), False).to_numpy(zero_copy_only=False)
    for g in columns.group:
        keep &= pc.is_valid(table.column(g)).to_numpy(zero_copy_only=False)
    return keep
