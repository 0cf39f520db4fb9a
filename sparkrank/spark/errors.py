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

import re

from ..data.block import DataError


class ClusterError(RuntimeError):
    """The cluster cannot run sparkrank's tasks (wrong interpreter, executors keep dying)."""


# "sparkrank.data.svmlight.SVMLightFormatError: data.txt: malformed label 'x' on line 7"
_RAISED = re.compile(r"^\s*(?:\w+: )?sparkrank\.[\w.]+\.(\w*Error): (.+)$", re.M)


# Spark 4 wraps a file that cannot be read: "[FAILED_READ_FILE...] ... reading file file:///x.gz."
_FAILED_READ = re.compile(r"FAILED_READ_FILE[\w.]*\] Encountered error while reading file (\S+?)\.\s")
_GZIP_CAUSE = re.compile(r"Caused by: java\.(?:io\.EOFException|util\.zip\.ZipException)")


def data_error_in(exc: BaseException) -> DataError | None:
    """The :class:`DataError` a Spark task raised, if ``exc`` is the job failure it caused.

    Also a ``.gz`` file that Hadoop's decoder found truncated or corrupt (the text source
    streams those, see :mod:`sparkrank.spark.svmlight`) becomes the local reader's error.
    """
    if isinstance(exc, DataError):
        return exc
    text = str(exc)
    failed = _FAILED_READ.search(text)
    if failed and failed.group(1).lower().endswith(".gz") and _GZIP_CAUSE.search(text):
        from ..data.svmlight import SVMLightFormatError, truncated_gzip_message
        from ..io.uri import display_name

        name = display_name(failed.group(1))
        return SVMLightFormatError(truncated_gzip_message(name), path=name)
    for match in _RAISED.finditer(text):
        cls = _data_error_class(match.group(1))
        if cls is not None:
            return cls(match.group(2).strip())
    return None


def _data_error_class(name: str):
    from ..data.svmlight import SVMLightFormatError

    return {"DataError": DataError, "SVMLightFormatError": SVMLightFormatError}.get(name)


#: Loggers that print a failed task's Python traceback on the driver's console (local mode
#: runs the executor in the driver's JVM); the job failure reaches the driver anyway.
_TASK_FAILURE_LOGGERS = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager",
                         "org.apache.spark.sql.execution.datasources.FileFormatWriter",
                         "org.apache.spark.sql.execution.python.PythonArrowOutput")


def quiet_task_failure_logs(spark) -> None:
    """Keep a task's DataError from also printing as a JVM stack trace: the CLI reports it
    in one line (:func:`data_error_in`) and re-raises, with the worker's traceback, anything else."""
    jvm = spark.sparkContext._jvm
    off = jvm.org.apache.logging.log4j.Level.OFF
    for name in _TASK_FAILURE_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, off)
