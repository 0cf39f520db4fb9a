"""Under ``spark-submit``, the Python driver's stderr goes to spark-submit's stderr again.

``spark-submit app.py`` runs the Python driver with its stdout and stderr joined into one pipe
(``builder.redirectErrorStream(true)`` in Spark's ``PythonRunner``) that the JVM copies to its
own *stdout*.  A job's one-line error (and its log) would then be on stdout, mixed into what
the job prints there (``jobs/evaluate.py``'s metrics), and ``2>err.log`` or a scheduler that
reads stderr would see nothing.  :func:`restore_submit_stderr` points this process's file
descriptor 2 at the stderr of the spark-submit JVM that started it (``/proc/PPID/fd/2``), so the
streams are as they are without spark-submit.

It does so only where reopening that stream is exact: a terminal or another character device,
a pipe, or a regular file opened for appending (``2>>``).  A file opened by ``2>`` is written at
the JVM's own offset, which a second opening cannot share, and a socket cannot be reopened
through ``/proc``: there the streams stay joined, as spark-submit makes them.
"""

from __future__ import annotations

import os
import stat
import sys

#: The class whose JVM a Python driver of ``spark-submit`` runs under.
SPARK_SUBMIT_CLASS = b"org.apache.spark.deploy.SparkSubmit"


def _submit_parent() -> int | None:
    """The spark-submit JVM that started this process, if one did (Linux's ``/proc``)."""
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as f:
            return parent if SPARK_SUBMIT_CLASS in f.read() else None
    except OSError:
        return None


def _open_flags(parent: int) -> int | None:
    """How the parent's stderr can be opened again exactly (see the module), or ``None``."""
    try:
        mode = os.stat(f"/proc/{parent}/fd/2").st_mode
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            return os.O_WRONLY
        if not stat.S_ISREG(mode):
            return None
        with open(f"/proc/{parent}/fdinfo/2") as f:
            flags = next(int(line.split()[1], 8) for line in f if line.startswith("flags:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return os.O_WRONLY | os.O_APPEND if flags & os.O_APPEND else None


def restore_submit_stderr() -> bool:
    """Point file descriptor 2 at spark-submit's stderr when this process is a Python driver
    that spark-submit started and that stream can be reopened exactly; whether it did."""
    parent = _submit_parent()
    flags = None if parent is None else _open_flags(parent)
    if flags is None:
        return False
    try:
        fd = os.open(f"/proc/{parent}/fd/2", flags)
    except OSError:
        return False
    try:
        sys.stderr.flush()
        os.dup2(fd, 2)
    finally:
        os.close(fd)
    return True
