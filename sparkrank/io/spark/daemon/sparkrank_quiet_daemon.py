"""PySpark's worker daemon (``pyspark.daemon``) for sparkrank's local sessions, without the
traceback of a worker whose connection the JVM has already closed.

On a local master the daemon's output is this terminal.  A worker whose task failed (or was
cancelled, or whose JVM is going down) often finds its connection closed when it flushes its
last bytes; since SPARK-54344 the ``BrokenPipeError`` is re-raised and the daemon prints its
traceback, before or after the one-line error the command reports.  The JVM has the task's
outcome already, so here such a worker just ends, as it would have a moment later, quietly;
so does one that a terminal's Ctrl-C reached (``KeyboardInterrupt``): the command reports the
interruption.

This file is a top-level module on purpose: ``python -m sparkrank.io.spark...`` would import
the ``sparkrank`` package (numba and all, ~2 s) into the daemon before it forks its workers.
:func:`sparkrank.io.spark.session.get_session` adds this directory to the workers' ``PYTHONPATH``
and names the module in ``spark.python.daemon.module``.
"""

import pyspark.daemon as daemon

_worker = daemon.worker


def quiet_worker(sock, authenticated):
    """``pyspark.daemon.worker`` that ends quietly when its peer has hung up or Ctrl-C came."""
    try:
        return _worker(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        return 1  # non-zero: the forked worker leaves its loop and exits (pyspark/daemon.py)


daemon.worker = quiet_worker

if __name__ == "__main__":
    daemon.manager()
