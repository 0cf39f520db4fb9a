"""How a command ends when it cannot finish: one line on stderr and a meaningful exit status.

:func:`run_command` runs one command of the command line and turns every failure it
knows into one line, ``sparkrank COMMAND: error: ...`` (status 2) or ``sparkrank COMMAND:
interrupted by SIGINT`` (status 128 + the signal's number); anything else is a bug and keeps
its traceback.  :func:`exit_process` ends the process with that status.

Exit statuses
-------------
0 done; 2 an error named in one line (input, setting, file, memory, disk, a lost worker);
130 / 143 / 129 interrupted by SIGINT / SIGTERM / SIGHUP: the process ends *by* that signal
once its clean-up has run, as a program killed by it would (a shell shows ``$?`` = 130 and
stops a loop on Ctrl-C; Python's ``subprocess`` sees ``-2``); 1 an unexpected failure (a
traceback: please report it).

Interruptions
-------------
SIGINT, SIGTERM and SIGHUP (unless ignored, as under ``nohup``) raise :class:`Interrupted`
in the main thread, so ``finally`` blocks and ``except BaseException`` clean-ups run: atomic
writes remove their temporary files (:mod:`sparkrank.io.fs`) and Spark outputs their partial
directory (:func:`sparkrank.io.outputs.write_dataframe`).  Then the Spark session is
stopped.

While the main thread waits inside a py4j call (a Spark job, a Hadoop file operation), an
exception raised there would leave the gateway connection mid-message: PySpark's own
handler does that, and its job cancellation then fails with py4j's ``reentrant call`` errors
(pages of them).  So the handler only records the signal there and starts a watcher thread.
While the main thread is in py4j, the watcher cancels Spark's jobs (through its own gateway
connection), which ends the waiting call with the job's failure, and any job started next;
once the main thread is out of py4j and not already carrying an exception up, it re-delivers
the signal (:func:`_thread.interrupt_main`), which then raises.

An exception raised by a signal handler can also be lost: Python runs the handler at whatever
bytecode the main thread is at, and if that is a ``__del__``, a weakref callback or a garbage
collection finalizer, the exception is "ignored" (printed, not raised) and the command would
go on as if no signal had come.  So after raising, the watcher stays as a backstop: if the
exception has not reached :func:`run_command` within :data:`REDELIVER_AFTER` seconds, it
delivers the signal again."""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time

#: The signals that end a command cleanly (status 128 + number).
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
#: Exit status of a failure reported in one line.
ERROR_STATUS = 2
#: How often the watcher looks whether the main thread has left py4j (seconds).
WATCH_EVERY = 0.05
#: How long a raised :class:`Interrupted` may take to reach :func:`run_command` (its clean-ups
#: included) before the watcher takes it for lost and delivers the signal again (seconds).
REDELIVER_AFTER = 5.0


class Interrupted(KeyboardInterrupt):
    """A signal (SIGINT, SIGTERM, SIGHUP) asked the command to stop."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    """The signal handling of the running command (one per process: signals go to the main thread)."""

    def __init__(self):
        self.installed: dict[int, object] = {}  # signal -> the handler it had before
        self.signum: int | None = None  # the first signal received
        self.redelivery = False  # the next handler call is the watcher's, not a real signal
        self.reporting = False  # the failure is being reported: later signals wait for the clean-up
        self.watcher: threading.Thread | None = None
        self.deliver_at = 0.0  # time.monotonic() from which the watcher (re-)delivers the signal
        self.command = 0  # which run_command call of this process: an older one's watcher stops
        self.silenced = -1  # the command whose interruption turned Spark's log off


_STATE = _State()


def _in_py4j(frame) -> bool:
    """Whether ``frame`` or a caller of it runs py4j's code (a gateway call in progress)."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("py4j"):
            return True
        frame = frame.f_back
    return False


def _handle(signum: int, frame) -> None:
    state = _STATE
    if state.reporting:
        return
    redelivered, state.redelivery = state.redelivery, False
    if state.signum is None:
        state.signum = signum
    if _in_py4j(frame):
        state.deliver_at = 0.0  # as soon as the main thread is out of py4j
        _start_watcher()
        return
    # the backstop if the exception raised below, or the cancelled job's, is lost on its way up
    state.deliver_at = time.monotonic() + REDELIVER_AFTER
    _start_watcher()
    if redelivered and sys.exc_info()[0] is not None:
        return  # an exception (the cancelled job's) is on its way up: let it arrive
    raise Interrupted(state.signum)


def _cancel_spark_jobs() -> None:
    """Cancel the running Spark jobs, if a context runs (from this thread's own connection).

    Spark's log is silenced first: the command ends in its one line, and the cancelled tasks'
    echoes (a shuffle's "Error occurred while fetching local blocks", a broadcast's
    ``SparkException`` stack trace from a task completion listener) are not the user's."""
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context  # noqa: SLF001 - None when no Spark runs
        if sc is not None:
            if _STATE.silenced != _STATE.command:
                _STATE.silenced = _STATE.command
                sc.setLogLevel("OFF")
            sc.cancelAllJobs()
    except Exception:  # noqa: BLE001 - the JVM may be gone already; the interruption goes on
        pass


def _start_watcher() -> None:
    state = _STATE
    if state.watcher is not None and state.watcher.is_alive() and state.watcher.command == state.command:
        return
    state.watcher = threading.Thread(target=_watch, args=(state.command,), name="sparkrank-interrupt", daemon=True)
    state.watcher.command = state.command
    state.watcher.start()


def _watch(command: int) -> None:
    """Until the interruption reaches :func:`run_command`: while the main thread waits in py4j,
    cancel Spark's jobs (the one it waits for, and any it starts next); once it is out, and
    from ``deliver_at`` on, re-deliver the signal to it (see the module)."""
    import _thread

    state = _STATE
    main = threading.main_thread().ident
    while not state.reporting and state.command == command:
        frame = sys._current_frames().get(main)  # noqa: SLF001 - the main thread's stack
        if frame is None:
            return
        if _in_py4j(frame):
            _cancel_spark_jobs()
        elif time.monotonic() >= state.deliver_at:
            state.deliver_at = time.monotonic() + REDELIVER_AFTER
            state.redelivery = True
            _thread.interrupt_main(state.signum)
        time.sleep(WATCH_EVERY)


def _install() -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # signals are delivered to the main thread only
    for signum in SIGNALS:
        previous = signal.getsignal(signum)
        if previous is signal.SIG_IGN:  # nohup, or a parent that wants this process to ignore it
            continue
        _STATE.installed[signum] = previous
        signal.signal(signum, _handle)


def _restore() -> None:
    for signum, previous in _STATE.installed.items():
        signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
    _STATE.installed.clear()


class _Py4JRootRecords(logging.Filter):
    """py4j logs a dead gateway's errors on the *root* logger, with their traceback, before the
    exception reaches the command (which reports it in one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and f"{os.sep}py4j{os.sep}" in record.pathname)


def run_command(command: str, call) -> int:
    """``call()`` (a command, returning its exit status) with the failures reported in one line.

    ``DataError``/``OSError``/``ValueError``/``ClusterError``: their message; a failed Spark job:
    the data error a task raised, or what ran out (memory, disk), or the worker or JVM that died
    (:mod:`sparkrank.io.spark.failures`); ``MemoryError``: which process and what to change;
    a signal: ``interrupted by SIG...`` after the clean-up.  Anything else propagates.
    """
    state = _STATE
    state.signum, state.reporting, state.deliver_at = None, False, 0.0
    state.command += 1
    _install()
    for handler in logging.getLogger().handlers:  # for the rest of the process: exit hooks call py4j too
        if not any(isinstance(f, _Py4JRootRecords) for f in handler.filters):
            handler.addFilter(_Py4JRootRecords())
    try:
        return call()
    except BaseException as exc:  # noqa: BLE001 - sorted below; unknown ones are re-raised
        state.reporting = True
        if state.signum is not None or isinstance(exc, KeyboardInterrupt):
            return _interrupted(command, exc)
        message = failure_message(exc)
        if message is None:
            raise
        print(f"sparkrank {command}: error: {message}", file=sys.stderr)
        return ERROR_STATUS
    finally:
        state.reporting = True  # the watcher stops
        _restore()


def failure_message(exc: BaseException) -> str | None:
    """The one line for a failure this module knows, or ``None`` (a bug: keep its traceback)."""
    from .data.block import DataError
    from .io.spark.errors import ClusterError

    plain = (DataError, OSError, ValueError, ClusterError)
    if isinstance(exc, MemoryError):
        return out_of_memory_message(exc)
    if isinstance(exc, ImportError) and _MAP_FAILED in str(exc):  # a library's code, not mappable under ulimit -v
        return out_of_memory_message(MemoryError(f"cannot load a library: {exc}"))
    # a job's failure; a connection refused or reset may be a driver JVM that died
    if _spark_loaded() and (not isinstance(exc, plain) or isinstance(exc, ConnectionError)):
        from .io.spark.failures import silence_spark_log, spark_failure_message

        message = spark_failure_message(exc)
        if message is not None:
            silence_spark_log()  # the command ends in this one line
            return message
    if isinstance(exc, plain):
        return str(exc)
    return None


#: How the dynamic loader says that it could not map a library (``ImportError`` of an extension).
_MAP_FAILED = "failed to map segment from shared object"


def _spark_loaded() -> bool:
    return "pyspark" in sys.modules


def out_of_memory_message(exc: MemoryError) -> str:
    """A ``MemoryError`` of this process: which process, its limit if one is set, what to change."""
    detail = str(exc).strip() or "an allocation failed"
    limit = _address_space_limit()
    where = f"this process ran out of memory{limit}"
    if _spark_running():
        where = f"this process (the Spark driver's Python) ran out of memory{limit}"
        hint = ("the driver holds vectors as long as the features (and, with --placement driver, a score per "
                "row): use --placement executor, fewer features, or a host with more memory")
    else:
        hint = "use --dtype float32, fewer rows or features, or --engine spark to spread the rows over executors"
    return f"{where}: {detail}; {hint}"


def _address_space_limit() -> str:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return ""
    if soft == resource.RLIM_INFINITY:
        return ""
    return f" (its address-space limit, ulimit -v, is {soft / 2 ** 30:.2f} GiB)"


def _spark_running() -> bool:
    if not _spark_loaded():
        return False
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None  # noqa: SLF001


def _interrupted(command: str, exc: BaseException) -> int:
    signum = _STATE.signum or getattr(exc, "signum", None) or signal.SIGINT
    _STATE.signum = signum
    print(f"sparkrank {command}: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
    if _spark_loaded():
        from .io.spark.failures import stop_session_quietly

        stop_session_quietly()
    return 128 + signum


def exit_process(status: int) -> None:
    """End the process with ``status``; after an interruption, by the signal itself (its
    ``atexit`` clean-ups first), so the parent sees what a killed program reports."""
    signum = _STATE.signum if status == 128 + (_STATE.signum or 0) else None
    if signum is None:
        sys.exit(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()  # noqa: SLF001 - what a normal exit would run, before the signal
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    sys.exit(status)  # the signal was not fatal after all (blocked elsewhere)
