"""Where the rows of a model selection come from, and their group-wise folds (whole query groups)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.block import DataError, RankingData
from ..data.folds import group_folds, spark_group_fold
from ..data.groups import QueryGroups
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

    def split(self, k: int, fold: int, seed: int) -> tuple["SparkSource", "SparkSource"]:
        """``(training part, held-out part)`` of fold ``fold``."""
        f = self.fold_column(k, seed)
        return (SparkSource(self.df.filter(f != fold), self.label_col, self.qid_col, self.features_col,
                            self.engine_options),
                SparkSource(self.df.filter(f == fold), self.label_col, self.qid_col, self.features_col,
                            self.engine_options))


def take_groups(data: RankingData, group_index: np.ndarray) -> RankingData:
    """The rows of the given groups (in the given order) as a new :class:`RankingData`."""
    group_index = np.asarray(group_index, dtype=np.int64)
    offsets = data.groups.offsets
    sizes = np.diff(offsets)[group_index]
    new_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # row r of new group j is old row offsets[g_j] + (r - new_offsets[j])
    rows = np.repeat(offsets[group_index] - new_offsets[:-1], sizes) + np.arange(new_offsets[-1], dtype=np.int64)
    groups = QueryGroups.from_offsets(data.labels[rows], new_offsets)
    qids = None if data.qids is None else data.qids[group_index]
    # the subset's own input order: the rank of each kept row's original position
    return RankingData(data.X[rows], groups, qids, np.argsort(np.argsort(data.row_order[rows])))


def local_split(data: RankingData, k: int, seed: int) -> list[tuple[RankingData, RankingData]]:
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
