"""Ending a local Spark session without the Python workers' shutdown traceback.

In local mode the executor's Python daemon (``pyspark/daemon.py``) writes to this terminal.
When the program ends, the JVM shuts down, and PySpark 4's reused workers can print a
``BrokenPipeError`` traceback:

- an idle worker, waiting for its next task, reads end-of-file when the JVM closes its
  connection;
- it tries to send that error back, and the flush fails;
- since SPARK-54344, that failure is re-raised and printed.

The daemon's SIGHUP would have ended these workers silently, but it often arrives too late.
About a third of ``sparkrank train --engine spark`` runs on SVMlight input ended with such a
traceback, printed after the shell prompt had come back; scripts, benchmarks and notebooks
using the engines did the same.

:func:`stop_local_python_daemons` sends each of the session's Python daemons SIGTERM before
the JVM goes down. The daemon's own handler then sends its workers SIGHUP, which is how Spark
means to end them. :func:`stop_at_exit` has it run as the interpreter exits, for every local
session :func:`sparkrank.io.spark.session.get_session` starts.
"""

from __future__ import annotations

import atexit
import os
import signal
import time

#: How long to wait for a signalled daemon to exit (it does in milliseconds).
DAEMON_EXIT_WAIT = 1.0


def process_stat(pid: int) -> list[str] | None:
    """Linux's ``/proc/PID/stat`` from its third field on (state, parent pid, …, the start
    time at index 19), or ``None`` (no such process, or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ", whatever the command's name


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    fields = process_stat(pid)
    return bool(fields) and fields[0] != "Z"


def _children(parent: int) -> list[tuple[int, list[str]]]:
    """The live children of ``parent`` with their command lines, from Linux's ``/proc`` (empty
    elsewhere: there the traceback may still appear, nothing else changes)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    children = []
    for name in names:
        fields = process_stat(int(name)) if name.isdigit() else None
        if not fields or int(fields[1]) != parent or fields[0] == "Z":
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:  # the process ended meanwhile
            continue
        children.append((int(name), argv))
    return children


def stop_local_python_daemons(sc) -> list[int]:
    """SIGTERM to the Python daemons of ``sc``'s executor when it runs in this JVM (a
    ``local`` master), then wait up to :data:`DAEMON_EXIT_WAIT` seconds for them to exit;
    returns their process ids.  Call it when the session's work is over: the workers die."""
    if not sc.master.startswith("local"):
        return []  # executors elsewhere: their daemons' output goes to their own logs
    proc = getattr(sc._gateway, "proc", None)  # noqa: SLF001 - the JVM PySpark launched, if it did
    jvm_pid = proc.pid if proc is not None else os.getppid()  # else spark-submit's JVM started us
    module = sc.getConf().get("spark.python.daemon.module", "pyspark.daemon")
    daemons = [pid for pid, argv in _children(jvm_pid) if "-m" in argv and module in argv]  # python -m module
    for pid in daemons:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + DAEMON_EXIT_WAIT
    while any(_alive(pid) for pid in daemons) and time.monotonic() < deadline:
        time.sleep(0.01)
    return daemons


def stop_at_exit(sc) -> None:
    """Run :func:`stop_local_python_daemons` on ``sc`` as the interpreter exits (``atexit``: after
    the program, before the JVM, which goes down once this process has ended)."""
    atexit.register(_stop_at_exit, sc)


def _stop_at_exit(sc) -> None:
    if getattr(sc, "_jsc", None) is not None:  # not stopped by the program already
        try:
            stop_local_python_daemons(sc)
        except Exception:  # noqa: BLE001 - the JVM died (it took its daemons with it): nothing to stop
            pass
