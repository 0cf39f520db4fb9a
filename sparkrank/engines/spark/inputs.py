"""Spark inputs as engines: a :class:`SparkEngine` over a source (:func:`build_engine`), a ranking
DataFrame with the options to build one on it (:class:`SparkSource`), and ``tune``'s rows with
their group-wise folds as fold views of one engine (:class:`SparkRows`)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ...data.block import DataError
from ...defaults import DTYPE, PLACEMENT
from ..backend import Rows, input_shape
from ..base import Engine


def build_engine(source, *, spark=None, n_features: int | None = None, dtype: type = DTYPE,
                 drop_invalid_rows: bool = False, placement: str = PLACEMENT, num_partitions: int | None = None,
                 aggregation_depth: int | None = None) -> Engine:
    """A :class:`~sparkrank.engines.spark.SparkEngine` over ``source`` (a
    :class:`~sparkrank.io.sources.Source` or :class:`~sparkrank.io.sources.FrameSource`), read
    through ``spark`` (default: the active session, else a new one)."""
    from ...io.fs import active_or_new_session
    from .engine import SparkEngine

    df, cols = source.dataframe(spark or active_or_new_session())
    weights = getattr(getattr(source, "columns", None), "weights", None)  # data/weights.py
    local_files = getattr(source, "local_parquet_files", None)
    hint = None if num_partitions else input_shape(source, np.dtype(dtype).itemsize)
    try:
        return SparkEngine(df, label_col=cols.label, qid_col=cols.qid, features_col=cols.features,
                           placement=placement, num_partitions=num_partitions, dtype=dtype,
                           aggregation_depth=aggregation_depth, n_features=n_features,
                           drop_invalid_rows=drop_invalid_rows, parquet_files=local_files() if local_files else None,
                           row_locator=getattr(source, "locate_row", None), size_hint=hint,
                           input_name=getattr(source, "name", None),
                           weight_col=weights.row if weights else None,
                           group_weight_col=weights.group if weights else None)
    except Exception as exc:  # a value the --where cannot cast: say which input and filter, as in-process
        from ...io.spark.errors import CAST_CONDITION, data_error_in
        from ...io.where import cannot_read

        error = data_error_in(exc)
        where = getattr(source, "where", None)
        if error is None or not where or not str(error).startswith(f"[{CAST_CONDITION}]"):
            raise
        raise DataError(cannot_read(source.name, where, error, getattr(source, "filter_option", "--where"))) from None


@dataclass(frozen=True)
class SparkSource:
    """A ranking DataFrame and how to build a :class:`~sparkrank.engines.spark.SparkEngine` on it.

    Attributes
    ----------
    df : pyspark.sql.DataFrame
    label_col, qid_col, features_col : str
        Column names (``qid_col=None``: one global ranking, which cannot be k-folded).
    engine_options : dict
        Keyword options of ``SparkEngine`` (``placement``, ``num_partitions``, ``dtype``,
        ``aggregation_depth``).
    """

    df: Any
    label_col: str = "label"
    qid_col: str | None = "qid"
    features_col: str = "features"
    engine_options: dict = field(default_factory=dict)

    def engine(self, n_features: int | None = None) -> Engine:
        from ...io.sources import ColumnSpec, FrameSource

        columns = ColumnSpec(self.label_col, ColumnSpec.parse_group(self.qid_col), self.features_col)
        options = {k: v for k, v in dict(self.engine_options, n_features=n_features).items() if v is not None}
        return build_engine(FrameSource(self.df, columns), **options)

    def fold_column(self, k: int, seed: int):
        """The fold number of each row, a seeded hash of its group id (whole groups)."""
        from ...io.sources import ColumnSpec
        from ...io.spark.frames import group_expression
        from .folds import spark_group_fold

        group = ColumnSpec.parse_group(self.qid_col)
        if not group or any(g not in self.df.columns for g in group):
            raise DataError("group-wise k-fold needs a query-id column; this DataFrame has none (one global ranking)")
        return spark_group_fold(group_expression(group), k, seed)


class SparkRows(Rows):
    """A :class:`SparkSource` as ``tune``'s rows."""

    def __init__(self, source: SparkSource):
        self.source = source

    def engine(self) -> Engine:
        return self.source.engine()

    def kfold(self, k: int, seed: int):
        return _SparkFolds(self.source, k, seed)


class _SparkFolds:
    """The engine over all rows is built first and each part is a fold view of it
    (:mod:`sparkrank.engines.spark.folds`): the source is read once, not 2k + 1 times; a fold
    without a query group is an error before any fit."""

    def __init__(self, source: SparkSource, k: int, seed: int):
        self.source, self.k, self.seed = source, k, seed
        self._whole: Engine | None = None

    def __enter__(self) -> "_SparkFolds":
        from .folds import check_spark_folds

        self.source.fold_column(self.k, self.seed)  # clear error for data without query ids
        self._whole = self.source.engine()
        try:
            check_spark_folds(self._whole, self.k, self.seed)
        except BaseException:
            self.__exit__()
            raise
        return self

    @contextmanager
    def part(self, fold: int) -> Iterator[tuple[Engine, Engine]]:
        from .folds import fold_views

        tr, va = fold_views(self._whole, self.k, fold, self.seed)
        try:
            yield tr, va
        finally:
            va.close()
            tr.close()

    def whole(self) -> Engine:
        return self._whole

    def __exit__(self, *exc) -> None:
        if self._whole is not None:
            whole, self._whole = self._whole, None
            whole.close()
