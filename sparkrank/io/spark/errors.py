"""Errors of the Spark side that the command line reports as one clean message (exit 2).

:class:`ClusterError`: the cluster cannot run sparkrank's tasks.  Data errors raised inside
Spark tasks are recovered on the driver (:func:`data_error_in`).

A :class:`~sparkrank.data.block.DataError` raised by a Python task (a bad SVMlight line,
a bad Parquet row) fails the Spark job; the driver then sees a ``PythonException`` or
``Py4JJavaError`` whose text holds the worker's traceback.  Its last line is the
exception's class and message, which are turned back into the same ``DataError`` the
local engine raises, so both engines fail with the same class and text.
"""

from __future__ import annotations

import contextlib
import re

from ...data.block import DataError


class ClusterError(RuntimeError):
    """The cluster cannot run sparkrank's tasks (wrong interpreter, executors keep dying)."""


class UnsafeDirectoryError(DataError):
    """A directory where executors would keep block or kernel-state files is not this user's
    alone (another owner, a link, or writable by others): refused, since what a task reads
    back from it decides the numbers of the fit (:mod:`sparkrank.engines.spark.private_dir`).  A
    :class:`DataError`, so that it reaches the command line as one line from a task too."""


# "sparkrank.data.svmlight.SVMLightFormatError: data.txt: malformed label 'x' on line 7"
_RAISED = re.compile(r"^\s*(?:\w+: )?sparkrank\.[\w.]+\.(\w*Error): (.+)$", re.M)


# Spark 4 wraps a file that cannot be read: "[FAILED_READ_FILE...] ... reading file file:///x.gz."
_FAILED_READ = re.compile(r"FAILED_READ_FILE[\w.]*\] Encountered error while reading file (\S+?)\.\s")
_GZIP_CAUSE = re.compile(r"Caused by: java\.(?:io\.EOFException|util\.zip\.ZipException)")


# "[FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered error while reading file file:/x/a.parquet."
_NO_FOOTER = re.compile(r"CANNOT_READ_FILE_FOOTER\] Encountered error while reading file (\S+?)\.\s")

#: The condition of a value that a ``--where`` comparison cannot cast to the other side's type.
CAST_CONDITION = "CAST_INVALID_INPUT"
#: Spark's error conditions that come from the input or the command line, not from sparkrank
#: or the cluster (a value that a --where cannot cast, a CSV header that names a column twice,
#: an unknown column or bad SQL, a path that is not there): reported in one line, as a DataError.
INPUT_CONDITIONS = (CAST_CONDITION, "COLUMN_ALREADY_EXISTS", "UNRESOLVED_COLUMN", "PARSE_SYNTAX_ERROR",
                    "DATATYPE_MISMATCH", "PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA", "FAILED_READ_FILE")
# "[CAST_INVALID_INPUT] The value 'q1' of the type ... SQLSTATE: 22018" up to the end of its line
_INPUT_CONDITION = re.compile(r"\[((?:%s)[\w.]*)\] ([^\n]*?)(?:\s*SQLSTATE: \w+)?\s*(?:\n|$)" % "|".join(INPUT_CONDITIONS))


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, also when it cannot be had: a ``Py4JJavaError`` asks the JVM for its
    text, and a JVM that has died (e.g. exit 52 after an ``OutOfMemoryError``) answers with a
    network error instead; then its Python-side message and that error's, whose words
    (:data:`sparkrank.io.spark.failures._CONTEXT_GONE`) say the JVM is gone."""
    try:
        return str(exc)
    except Exception as unreachable:  # noqa: BLE001 - any failure to fetch the text
        message = getattr(exc, "errmsg", None) or type(exc).__name__
        return f"{message}: {type(unreachable).__name__}: {unreachable}"


def data_error_in(exc: BaseException) -> DataError | None:
    """The :class:`DataError` a Spark task raised, if ``exc`` is the job failure it caused.

    Also a ``.gz`` file that Hadoop's decoder found truncated or corrupt (the text source
    streams those, see :mod:`sparkrank.io.spark.svmlight`) becomes the local reader's error, a file
    read as Parquet that is not one the local reader's error too, and any other of Spark's
    :data:`INPUT_CONDITIONS` its own first line (no JVM stack trace).
    """
    if isinstance(exc, DataError):
        return exc
    text = exception_text(exc)
    failed = _FAILED_READ.search(text)
    if failed and failed.group(1).lower().endswith(".gz") and _GZIP_CAUSE.search(text):
        from ...data.svmlight import SVMLightFormatError, truncated_gzip_message
        from ..uri import display_name

        name = display_name(failed.group(1))
        return SVMLightFormatError(truncated_gzip_message(name), path=name)
    for match in _RAISED.finditer(text):
        cls = _data_error_class(match.group(1))
        if cls is not None:
            return cls(match.group(2).strip())
    no_footer = _NO_FOOTER.search(text)
    if no_footer:
        from ..formats.arrow import unreadable_parquet

        return DataError(unreadable_parquet(no_footer.group(1)))
    condition = _INPUT_CONDITION.search(text)
    if condition:
        return DataError(f"[{condition.group(1)}] {condition.group(2).strip()}")
    return None


#: PySpark's loggers that print a failed query's error, with its JVM stack trace, before raising it.
QUERY_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")


def _query_context_loggers() -> list:
    from pyspark.logger import PySparkLogger

    return [PySparkLogger.getLogger(name) for name in QUERY_CONTEXT_LOGGERS]


def quiet_query_context_logs() -> None:
    """Keep PySpark from logging (at ERROR, as a JSON line with the JVM stack trace) an analysis
    or execution error it is about to raise: the command line reports it in one line instead."""
    for logger in _query_context_loggers():
        logger.disabled = True


@contextlib.contextmanager
def query_context_logs_held_back():
    """:func:`quiet_query_context_logs` for the ``with`` block only (an error expected there, in a
    library call whose caller keeps PySpark's logs)."""
    loggers = _query_context_loggers()
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, before):
            logger.disabled = disabled


def _data_error_class(name: str):
    from ...data.svmlight import SVMLightFormatError

    return {"DataError": DataError, "SVMLightFormatError": SVMLightFormatError,
            "UnsafeDirectoryError": UnsafeDirectoryError}.get(name)


#: Loggers that print a failed task's Python traceback on the driver's console (local mode
#: runs the executor in the driver's JVM); the job failure reaches the driver anyway.
_TASK_FAILURE_LOGGERS = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager",
                         "org.apache.spark.sql.execution.datasources.FileFormatWriter",
                         "org.apache.spark.sql.execution.python.PythonArrowOutput",
                         # a failed write: "Aborting task" with the stack trace, then the files
                         # of the aborted task that the committer could not delete (the CLI
                         # removes the partial output: io/outputs.write_dataframe)
                         "org.apache.spark.util.Utils",
                         "org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter",
                         "org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory$MapInBatchEvaluator$$anon$1",
                         # an OutOfMemoryError in a task, before the JVM exits with code 52
                         # (reported in one line: io/spark/failures.py)
                         "org.apache.spark.util.SparkUncaughtExceptionHandler")


def quiet_task_failure_logs(spark) -> None:
    """Keep a task's DataError from also printing as a JVM stack trace: the CLI reports it
    in one line (:func:`data_error_in`) and re-raises, with the worker's traceback, anything else."""
    jvm = spark.sparkContext._jvm
    off = jvm.org.apache.logging.log4j.Level.OFF
    for name in _TASK_FAILURE_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, off)
