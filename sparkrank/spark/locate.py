"""Name a bad row by its file and row, as the local engine does, after blocks rejected it.

Blocks are built from shuffled rows, so a block can only name a bad row by its qid
(``a row of qid 17: ...``).  On that error path (never otherwise) the driver reads that
qid's rows again straight from the source, with Spark's ``_metadata.file_path`` and
``_metadata.row_index`` (Parquet), puts them in file order and runs the same checks
(:func:`~sparkrank.spark.blocks.decode_rows`): the first bad row gives ``file: row N: ...``,
the text the local reader prints for the same file.  Sources without file metadata keep
the qid wording.
"""

from __future__ import annotations

import ast

import numpy as np

from ..data.arrow import RowError
from ..data.block import DataError, max_features_limit
from . import blocks


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
    from .errors import query_context_logs_held_back

    with query_context_logs_held_back():
        try:
            return df.select(*cols, *file_row_columns())
        except Exception:  # noqa: BLE001 - any analysis error here means: no file rows
            return None


#: :func:`qid_of_row_error`'s answer for a message that names no qid (``None`` is a qid: a null one).
NO_QID = object()


def qid_of_row_error(message: str):
    """The qid of a block's ``a row of qid Q: ...`` error (``None`` for a null group id), or
    :data:`NO_QID` for another message."""
    if not message.startswith(blocks.QID_ROW):
        return NO_QID
    head = message[len(blocks.QID_ROW):].partition(": ")[0]
    try:
        return ast.literal_eval(head)
    except (ValueError, SyntaxError):
        return NO_QID


def group_is(column, qid):
    """The Spark condition "this row's group id is ``qid``" (``None``: a null id)."""
    from pyspark.sql import functions as F

    return column.isNull() if qid is None else column == F.lit(qid)


def locate_row_error(df, label_col: str, qid_col: str | None, spec, dtype_name: str, message: str,
                     row_locator=None) -> str:
    """``message`` (a block's error) with the qid replaced by the file and row, when found:
    from the scan's file rows (Parquet), else by ``row_locator(qid, dtype)`` (a source that
    reads its files in-process, :meth:`sparkrank.io.sources.Source.locate_row`)."""
    qid = qid_of_row_error(message) if qid_col else NO_QID
    if qid is NO_QID:
        return message
    located = _locate_by_file_rows(df, label_col, qid_col, spec, dtype_name, message, qid)
    if located == message and row_locator is not None:
        located = row_locator(qid, np.dtype(dtype_name).type) or message
    return located


def _locate_by_file_rows(df, label_col: str, qid_col: str, spec, dtype_name: str, message: str, qid) -> str:
    """The module docstring's lookup by ``_metadata.row_index``; ``message`` when it cannot."""
    from pyspark.sql import functions as F

    cols = [label_col, qid_col, *spec.columns]
    selected = select_with_file_rows(df.where(group_is(F.col(qid_col), qid)), cols)
    if selected is None:  # no file metadata (not a Parquet scan, or an older Spark): keep the qid
        return message
    try:
        rows = selected.toArrow()
    except Exception:  # noqa: BLE001 - the first error stays the one reported
        return message
    if rows.num_rows == 0:
        return message
    files, numbers = rows.column(FILE_COLUMN).to_pylist(), rows.column(FILE_ROW_COLUMN).to_pylist()
    rows = rows.take(sorted(range(rows.num_rows), key=lambda i: (files[i], numbers[i])))
    try:
        blocks.decode_rows(rows.select(cols), label_col, qid_col, spec, np.dtype(dtype_name).type,
                           max_features_limit())
    except RowError as exc:
        from ..io.uri import display_name

        return f"{display_name(rows.column(FILE_COLUMN)[exc.row].as_py())}: " \
               f"row {rows.column(FILE_ROW_COLUMN)[exc.row].as_py()}: " \
               f"{exc.detail}"
    except DataError:
        return message
    return message
