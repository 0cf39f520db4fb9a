"""A DataFrame that is a plain scan of Parquet files, read as the command line reads them.

``spark.read.parquet(path)`` -- or a selection of its columns -- holds exactly the rows of its
files in their order, so ``LinearRanker`` may open those files as a
:class:`~sparkrank.io.sources.Source` and read them through the source layer's row-group path
(in-process: :mod:`sparkrank.data.parquet_rows`; on Spark: the engine's Parquet blocks),
never shuffling rows by query.  Anything else (a filter, a computed column, a join, a
``VectorAssembler``) is read from the DataFrame as before.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger("sparkrank.ml")

#: An optimized plan's lines of a plain scan: a ``Relation`` of Parquet files, under at most one
#: ``Project`` of bare columns (``label#0, qid#1L``; no expression, alias or function).
_RELATION = re.compile(r"^(\+- )?Relation [^\n]* parquet$")
_BARE_PROJECT = re.compile(r"^Project \[[\w#, ]*\]$")


def parquet_scan_files(df) -> list[str] | None:
    """The files ``df`` is a plain scan of (see the module docstring), or ``None``."""
    try:
        plan = str(df._jdf.queryExecution().optimizedPlan().toString()).strip().splitlines()
        files = list(df.inputFiles())
    except Exception as exc:  # noqa: BLE001 - no plan or file list: read the DataFrame
        log.debug("not a plain file scan (%s)", exc)
        return None
    lines = [line.strip() for line in plan]
    if not files or not lines or not _RELATION.match(lines[-1]):
        return None
    if len(lines) > 2 or (len(lines) == 2 and not _BARE_PROJECT.match(lines[0])):
        return None
    # in the command line's order (a directory's files sorted by path, io/fs.py), so that the
    # rows, and the model bit for bit, are the command line's; Spark lists them in no order
    return sorted(files)


def file_source(df, columns):
    """The :class:`~sparkrank.io.sources.Source` of the Parquet files ``df`` plainly scans, with
    ``columns`` checked against them; ``None`` when ``df`` is no plain scan or its files do not
    hold the columns as the source layer reads them (then the DataFrame is read as it is)."""
    files = parquet_scan_files(df)
    if files is None:
        return None
    from ..data.block import DataError
    from ..io.sources import open_source

    try:
        source = open_source(files, format="parquet", columns=columns, spark=df.sparkSession)
        source.dataframe(df.sparkSession)  # the columns checked as the command line checks them
    except (DataError, ValueError, OSError) as exc:
        log.info("LinearRanker: reading the DataFrame, not its %d Parquet files (%s)", len(files), exc)
        return None
    log.info("LinearRanker: the DataFrame is a plain scan of %d Parquet files: reading them directly", len(files))
    return source
