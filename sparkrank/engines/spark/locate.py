"""Name a bad row by its file and row, as the local engine does, after blocks rejected it.

Blocks are built from shuffled rows, so a block can only name a bad row by what it holds
(``a row of qid 17: ...``), and each block checks only its own rows: with bad rows in several
blocks, the first block's is not the one the local reader names, nor are its counts.  On that
error path (never otherwise) the driver looks again, as the local reader does when it looks
for a bad row (:func:`sparkrank.io.formats.arrow.row_in_its_file`): file after file, each checked as
a whole, the first file with a bad row gives ``file: row N: ...``, the text the local reader
prints for the same input.  Local files are read in-process, in the local reader's order;
others by one more Spark job: the rows with Spark's ``_metadata.file_path`` and
``_metadata.row_index`` (Parquet), grouped by file, each file put in row order and checked
(:func:`~sparkrank.engines.spark.store.decode_rows`, the local reader's checks in its order), files
by path.  Sources with neither keep the blocks' wording.
"""

from __future__ import annotations

import numpy as np

from ...data.arrow import RowError
from ...data.block import DataError, max_features_limit
from . import store


#: Names of :func:`file_row_columns` in a selection.
FILE_COLUMN, FILE_ROW_COLUMN = "__sparkrank_file", "__sparkrank_file_row"


def file_row_columns() -> list:
    """A Parquet scan's file and row in that file (Spark's ``_metadata.file_path`` and
    ``_metadata.row_index``) as columns :data:`FILE_COLUMN` and :data:`FILE_ROW_COLUMN`: sorted
    by them, rows come in the local reader's order (files by path, then their rows).  Selecting
    them raises for a source without that metadata (not Parquet, or an older Spark); see
    :func:`select_with_file_rows`."""
    from pyspark.sql import functions as F

    return [F.col("_metadata.file_path").alias(FILE_COLUMN), F.col("_metadata.row_index").alias(FILE_ROW_COLUMN)]


def select_with_file_rows(df, cols: list):
    """``df.select(*cols, *file_row_columns())``, or ``None`` when ``df`` has no file rows (an
    SVMlight or CSV source, a DataFrame built in memory).  The failed selection is expected
    there, so PySpark's log of it is held back: PySpark 4 logs every analysis error of a
    DataFrame at ERROR with its JVM stack trace (logger ``DataFrameQueryContextLogger``) before
    raising it, which would print a stack trace on every such Spark fit."""
    from ...io.spark.errors import query_context_logs_held_back

    with query_context_logs_held_back():
        try:
            return df.select(*cols, *file_row_columns())
        except Exception:  # noqa: BLE001 - any analysis error here means: no file rows
            return None


def is_row_error(message: str) -> bool:
    """Whether a block's error is about one of its rows (``a row of qid Q: ...``, or ``a row
    with label Y: ...`` without group ids): rows a block can only name by what they hold."""
    return message.startswith((store.QID_ROW, store.LABEL_ROW))


def locate_row_error(df, label_col: str, qid_col: str | None, spec, dtype_name: str, row_locator=None) -> str | None:
    """The local engine's message for the bad rows of ``df`` (after ``--where``), or ``None``
    when it cannot be told: the first file (in the local reader's order) that has a bad row,
    checked as a whole as the local reader checks it, so the same row is named, with the same
    counts (``(in 3 rows)``), however the rows were shuffled into blocks.  Found by
    ``row_locator(dtype)`` when the source's files are local (it reads them in-process, in the
    local reader's order: :meth:`sparkrank.io.sources.Source.locate_row`), else from the
    scan's file rows (Parquet on any file system; files by path)."""
    located = None
    if row_locator is not None:
        try:
            located = row_locator(np.dtype(dtype_name).type)
        except Exception:  # noqa: BLE001 - the Spark job below, or the blocks' error
            located = None
    return located if located is not None else _first_bad_file(df, label_col, qid_col, spec, dtype_name)


def _file_check_task(label_col: str, qid_col: str | None, spec, dtype_name: str, max_features: int):
    """``applyInArrow`` function: one file's rows -> that file's first bad row as the local
    reader names it (``[file, message]``), or no row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = [label_col, *([qid_col] if qid_col else []), *spec.columns]
    schema = pa.schema([(FILE_COLUMN, pa.string()), ("message", pa.string())])

    def check(table):
        from ...io.uri import display_name

        if table.num_rows == 0:
            return schema.empty_table()
        table = table.take(pc.sort_indices(table, [(FILE_ROW_COLUMN, "ascending")]))
        try:
            store.decode_rows(table.select(cols), label_col, qid_col, spec, np.dtype(dtype_name).type, max_features)
        except RowError as exc:
            file = table.column(FILE_COLUMN)[0].as_py()
            message = f"{display_name(file)}: row {table.column(FILE_ROW_COLUMN)[exc.row].as_py()}: {exc.detail}"
            return pa.table([[file], [message]], schema=schema)
        except DataError:
            pass  # not about a row: the blocks' error stays the one reported
        return schema.empty_table()

    return check


def _first_bad_file(df, label_col: str, qid_col: str | None, spec, dtype_name: str) -> str | None:
    """The module docstring's lookup, every file's rows checked in one task (one Spark job on
    the error path, which shuffles the rows by file); ``None`` when the scan has no file rows
    or the job fails."""
    cols = [label_col, *([qid_col] if qid_col else []), *spec.columns]
    selected = select_with_file_rows(df, cols)
    if selected is None:  # no file metadata (not a Parquet scan, or an older Spark)
        return None
    task = _file_check_task(label_col, qid_col, spec, dtype_name, max_features_limit())
    try:
        found = selected.groupBy(FILE_COLUMN).applyInArrow(task, f"`{FILE_COLUMN}` string, message string").toArrow()
    except Exception:  # noqa: BLE001 - the blocks' error stays the one reported
        return None
    if found.num_rows == 0:
        return None
    files, messages = found.column(FILE_COLUMN).to_pylist(), found.column("message").to_pylist()
    return messages[min(range(len(files)), key=files.__getitem__)]
