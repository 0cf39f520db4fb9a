"""Read and write ranking data by path: SVMlight/LETOR text, Parquet or CSV/TSV
(:func:`read_ranking_data`), Parquet in sparkrank's ``indices``/``values`` layout
(:func:`write_parquet`, see :mod:`sparkrank.io.formats.parquet`)."""

from __future__ import annotations

from pathlib import Path


from ..data.block import RankingData
from ..defaults import DTYPE
from .formats.parquet import write_parquet

__all__ = ["read_parquet", "read_ranking_data", "write_parquet"]


def read_ranking_data(
    path: str | Path,
    *,
    n_features: int | None = None,
    dtype: type = DTYPE,
    label_col: str = "label",
    qid_col: str | None = "qid",
    features_col: str = "features",
    feature_cols: list[str] | None = None,
    drop_invalid_rows: bool = False,
    format: str = "auto",
    where: str | None = None,
) -> RankingData:
    """Load SVMlight/LETOR text (``.gz``/``.bz2``), Parquet or CSV into a :class:`RankingData`.

    A thin call of :func:`sparkrank.io.sources.open_source` (``sample:train`` / ``sample:test``
    name the bundled sample; directories, Hive partitions and ``where`` filters work as
    there).  ``qid_col`` may name several columns (``"user_id,session_id"``); ``None`` or
    ``""`` ranks all rows as one group.  With ``drop_invalid_rows`` rows with a
    null/non-finite label or a null group id are dropped (and counted in the log) instead
    of being an error.
    """
    from .sources import ColumnSpec, open_source

    columns = ColumnSpec(label_col, ColumnSpec.parse_group(qid_col), features_col, tuple(feature_cols or ()))
    source = open_source(str(path), format=format, columns=columns, where=where)
    return source.ranking_data(n_features=n_features, dtype=dtype, drop_invalid_rows=drop_invalid_rows)


def read_parquet(path: str | Path, **options) -> RankingData:
    """:func:`read_ranking_data` of a Parquet file or directory (see the module docstring)."""
    return read_ranking_data(path, format="parquet", **options)
