"""Delta tables: read by Spark only (the ``delta-spark`` package and its jars on the session)."""

from __future__ import annotations

from dataclasses import dataclass

from ...data.block import DataError
from .. import uri as U
from .base import Format


@dataclass(frozen=True)
class DeltaFormat(Format):
    """A Delta table: one directory with a ``_delta_log/``."""

    @property
    def spark_only_reason(self) -> str:
        return "Delta tables are read by Spark"

    @property
    def tables(self) -> bool:
        return True

    def is_table(self, fs, matches):
        return len(matches) == 1 and fs.is_dir(matches[0]) and fs.exists(U.join(matches[0], "_delta_log"))

    def read_spark(self, spark, uris, base_path=None):
        if len(uris) != 1:
            raise DataError("a Delta input is one table; give one --input")
        return spark.read.format("delta").load(uris[0])
