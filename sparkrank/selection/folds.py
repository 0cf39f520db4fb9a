"""Where the rows of a model selection come from, and their group-wise folds (whole query groups)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ..data.block import DataError, RankingData
from ..data.folds import group_folds, spark_group_fold, take_groups
from ..engines.base import Engine
from ..engines.registry import make_engine


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
        from ..engines.registry import make_engine
        from ..io.sources import ColumnSpec, FrameSource

        columns = ColumnSpec(self.label_col, ColumnSpec.parse_group(self.qid_col), self.features_col)
        return make_engine(FrameSource(self.df, columns), "spark", n_features=n_features, **self.engine_options)

    def fold_column(self, k: int, seed: int):
        """The fold number of each row, a seeded hash of its group id (whole groups)."""
        from ..io.sources import ColumnSpec, group_expression

        group = ColumnSpec.parse_group(self.qid_col)
        if not group or any(g not in self.df.columns for g in group):
            raise DataError("group-wise k-fold needs a query-id column; this DataFrame has none (one global ranking)")
        return spark_group_fold(group_expression(group), k, seed)


def local_split(data: RankingData, k: int, seed: int) -> list[tuple[RankingData, RankingData]]:
    """``(training part, held-out part)`` of each of the ``k`` folds of ``data`` (whole groups)."""
    if data.qids is None:
        raise DataError("group-wise k-fold needs query ids; this data is one global ranking")
    fold = group_folds(data.qids, k, seed)
    return [(take_groups(data, np.flatnonzero(fold != i)), take_groups(data, np.flatnonzero(fold == i)))
            for i in range(k)]


def as_source(x):
    if isinstance(x, (RankingData, Engine, SparkSource)):
        return x
    if type(x).__name__ == "DataFrame" and hasattr(x, "sparkSession"):
        return SparkSource(x)
    raise TypeError(f"expected RankingData, an Engine, a SparkSource or a Spark DataFrame, got {type(x).__name__}")


class OpenedEngine:
    """An engine over a source; closes it afterwards only if it built it."""

    def __init__(self, source):
        if isinstance(source, Engine):
            self.engine, self.owned = source, False
        elif isinstance(source, RankingData):
            self.engine, self.owned = make_engine(source, "local"), True
        else:
            self.engine, self.owned = source.engine(), True

    def __enter__(self) -> Engine:
        return self.engine

    def __exit__(self, *exc) -> None:
        if self.owned:
            self.engine.close()


class KFold:
    """The parts of group-wise k-fold of a source, and the engine over all of it (for the refit).

    In memory (:class:`RankingData`) the parts are split up front (:func:`local_split`) and an
    engine over all rows is built only when the refit asks for it.  On Spark the engine over all
    rows is built first and each part is a fold view of it
    (:mod:`sparkrank.engines.spark_folds`): the source is read once, not 2k + 1 times.  Either
    way a fold without a query group is an error before any fit.  A context manager: it closes
    what it built.
    """

    def __init__(self, source, k: int, seed: int):
        self.source, self.k, self.seed = source, k, seed
        self._parts: list[tuple[RankingData, RankingData]] | None = None
        self._whole: Engine | None = None

    def __enter__(self) -> "KFold":
        if isinstance(self.source, RankingData):
            self._parts = local_split(self.source, self.k, self.seed)
        else:
            from ..engines.spark_folds import check_spark_folds

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
        """Engines over ``(training part, held-out part)`` of fold ``fold``, closed afterwards."""
        if self._parts is not None:
            tr_data, va_data = self._parts[fold]
            with OpenedEngine(tr_data) as tr, OpenedEngine(va_data) as va:
                yield tr, va
            return
        from ..engines.spark_folds import fold_views

        tr, va = fold_views(self._whole, self.k, fold, self.seed)
        try:
            yield tr, va
        finally:
            va.close()
            tr.close()

    def whole(self) -> Engine:
        """The engine over all rows (built on first use in memory)."""
        if self._whole is None:
            self._whole = make_engine(self.source, "local")
        return self._whole

    def __exit__(self, *exc) -> None:
        if self._whole is not None:
            whole, self._whole = self._whole, None
            whole.close()
