"""Where the rows of a model selection come from: any engine's rows
(:func:`~sparkrank.engines.registry.rows_for`: a ``RankingData``, a Spark DataFrame or
:class:`SparkSource`, an engine), opened as engines and cut into group-wise folds (whole query
groups) by the backend they belong to."""

from __future__ import annotations

from ..data.folds import local_split, take_groups
from ..engines.backend import Rows
from ..engines.base import Engine
from ..engines.registry import rows_for
from ..engines.spark.inputs import SparkSource

__all__ = ["OpenedEngine", "SparkSource", "as_rows", "local_split", "take_groups"]


def as_rows(x) -> Rows:
    """``x`` as :class:`~sparkrank.engines.backend.Rows` of its engine."""
    return rows_for(x)


class OpenedEngine:
    """An engine over rows; closes it afterwards only if it built it."""

    def __init__(self, source):
        rows = rows_for(source)
        self.engine, self.owned = rows.engine(), rows.owned

    def __enter__(self) -> Engine:
        return self.engine

    def __exit__(self, *exc) -> None:
        if self.owned:
            self.engine.close()
