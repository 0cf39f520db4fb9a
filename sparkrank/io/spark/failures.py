"""A failed Spark job or a dead Spark JVM as one line: what ran out or died, and what to change.

The driver sees a job's failure as a ``Py4JJavaError`` whose text is the JVM's stack trace
with the task's failure inside ("Lost task 0.0 in stage 3.0 (TID 7) (host executor 1):
java.lang.OutOfMemoryError: Java heap space").  :func:`spark_failure_message` reads that
text (the forms below were captured from real runs: ``tests/test_failures.py``):

* a task's :class:`~sparkrank.data.block.DataError`: its own message (:func:`data_error_in`);
* ``No space left on device``: the output being written (``TASK_WRITE_FAILED``), else
  Spark's scratch directory (``spark.local.dir``);
* ``java.lang.OutOfMemoryError``: in a task on an executor, ``spark.executor.memory``; in
  the driver (a local master runs the tasks there too), ``--driver-memory``;
* a Python ``MemoryError`` in a task: the executors' Python workers
  (``spark.executor.pyspark.memory`` when the session limits them);
* ``Python worker exited unexpectedly (crashed)``: a worker killed (the kernel's
  out-of-memory killer, ``kill -9``) or crashed;
* an executor lost (``ExecutorLostFailure``), with its exit code;
* the driver JVM gone (a local master's JVM exits with code 52 on ``OutOfMemoryError`` in a
  task, and the driver then only sees a stopped context or a closed connection): its exit
  code, read from the process PySpark started.  A failed job that arrives first, its task's
  ``OutOfMemoryError`` in that JVM, waits for the exit code too: the same line either way.

Once a failure's line is known, :func:`silence_spark_log` turns the driver JVM's log off (not
with ``-v``), so nothing Spark prints while it goes down follows the line.

The settings named in the messages are remembered when the session starts
(:func:`on_session_start`): once the JVM is gone they cannot be asked for.
"""

from __future__ import annotations

import re
import sys

from .errors import data_error_in, exception_text

#: Spark's exit codes (``org.apache.spark.util.SparkExitCode``) a message can explain.
JVM_EXIT_CODES = {50: "an uncaught exception", 51: "an uncaught exception while handling another",
                  52: "java.lang.OutOfMemoryError", 53: "its local directory could not be created",
                  56: "lost heartbeats"}
OOM_EXIT_CODE = 52
#: Spark log levels at which sparkrank runs quietly (without -v): warnings and errors only.
QUIET_LEVELS = ("WARN", "ERROR", "FATAL", "OFF")
#: Seconds to wait for a dying driver JVM to exit, to read its exit code.
JVM_EXIT_WAIT = 10.0

_SETTINGS: dict[str, str] = {}

_OOM = re.compile(r"java\.lang\.OutOfMemoryError(?::\s*([^\n]*?))?\s*(?:\n|$)")
# "Lost task 0.0 in stage 16.0 (TID 16) (localhost executor driver): ..."
_LOST_TASK = re.compile(r"Lost task [\d.]+ in stage ([\d.]+) \(TID \d+\) \(([^)]*)\)")
# "[TASK_WRITE_FAILED] Task failed while writing rows to file:/x/scores. SQLSTATE: 58030"
_WRITING = re.compile(r"Task failed while writing rows to (\S+?)\.?\s+SQLSTATE")
_EXECUTOR_LOST = re.compile(r"ExecutorLostFailure \(executor (\S+) exited[^)]*\) Reason: ([^\n]*)")
_EXIT_CODE = re.compile(r"exit(?:ed with)? code:? (\d+)", re.I)
_PYTHON_MEMORY = re.compile(r"^\s*MemoryError\b", re.M)
_WORKER_CRASHED = "Python worker exited unexpectedly (crashed)"
# what the driver sees when its JVM is going down or gone
_CONTEXT_GONE = ("SparkContext was shut down", "stopped SparkContext", "dagScheduler()\" is null",
                 "Answer from Java side is empty", "Error while sending or receiving", "Connection refused",
                 "Connection reset by peer")


def on_session_start(sc) -> None:
    """Keep the settings the messages name, and keep PySpark's accumulator server from printing
    a traceback when the JVM closes its connection (a JVM killed or stopped with the job)."""
    _remember_settings(sc)
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None:
        report = server.handle_error

        def handle_error(request, client_address):
            if not isinstance(sys.exc_info()[1], (EOFError, ConnectionError)):
                report(request, client_address)

        server.handle_error = handle_error


def _remember_settings(sc) -> None:
    conf = sc.getConf()
    _SETTINGS.clear()
    _SETTINGS.update(master=sc.master, driver_memory=conf.get("spark.driver.memory", "1g"),
                     executor_memory=conf.get("spark.executor.memory", "1g"),
                     local_dir=conf.get("spark.local.dir", "/tmp"),
                     pyspark_memory=conf.get("spark.executor.pyspark.memory", ""),
                     max_failures=conf.get("spark.task.maxFailures", "4"),
                     log_level=conf.get("spark.log.level", "WARN").upper())




def spark_failure_message(exc: BaseException) -> str | None:
    """The one line for a failed Spark job or a dead Spark JVM, or ``None`` (not one)."""
    data_error = data_error_in(exc)
    if data_error is not None:
        return str(data_error)
    text = f"{type(exc).__name__}: {exception_text(exc)}"
    message = job_failure_message(text)
    if message is None:
        return _dead_jvm_message(text)
    if _is_local(_SETTINGS) and _task_oom_in_driver(text):
        # A local master's JVM exits on an OutOfMemoryError in a task (code 52); whether the
        # driver hears of the failed job or of the dead JVM first is a race: one line for both.
        code = _driver_jvm_exit_code()
        if code == OOM_EXIT_CODE:
            return driver_oom_message(f"exit code {code}: java.lang.OutOfMemoryError", _SETTINGS)
    return message


def silence_spark_log() -> None:
    """Turn the driver JVM's log off once a failure's one line is known (not with ``-v``): a dead
    executor's echoes ("Failed to send RPC ..." as the driver shuts down) are not the user's."""
    if _SETTINGS.get("log_level", "WARN") not in QUIET_LEVELS:
        return
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context  # noqa: SLF001
    if sc is None:
        return
    try:
        sc.setLogLevel("OFF")
    except Exception:  # noqa: BLE001 - the JVM may be gone, which is as quiet
        pass


def _task_oom_in_driver(text: str) -> bool:
    lost = _LOST_TASK.search(text)
    return lost is not None and lost.group(2).endswith("executor driver") and _OOM.search(text) is not None


def job_failure_message(text: str, settings: dict | None = None) -> str | None:
    """The one line for the text of a failed job (a ``Py4JJavaError``'s), or ``None``;
    ``settings``: the session's (default: those :func:`on_session_start` kept)."""
    settings = _SETTINGS if settings is None else settings
    if "No space left on device" in text:
        return no_space_message(text, settings)
    lost = _LOST_TASK.search(text)
    where = f"a task of stage {lost.group(1)}" if lost else "a task"
    oom = _OOM.search(text)
    if oom:
        what = "java.lang.OutOfMemoryError" + (f": {oom.group(1).strip()}" if oom.group(1) else "")
        on_executor = lost is not None and not lost.group(2).endswith("executor driver")
        return executor_oom_message(what, where, settings) if on_executor else driver_oom_message(what, settings)
    if _PYTHON_MEMORY.search(text) and ("PythonException" in text or "pyspark" in text):
        return python_worker_memory_message(where, settings)
    if _WORKER_CRASHED in text:
        return (f"a Spark Python worker died in {where} (killed, e.g. by the kernel's out-of-memory killer, or "
                f"crashed); {_retry_hint(settings)}")
    lost_executor = _EXECUTOR_LOST.search(text)
    if lost_executor:
        reason = lost_executor.group(2).strip()
        code = _EXIT_CODE.search(reason)
        if code and int(code.group(1)) == OOM_EXIT_CODE:
            return executor_oom_message("exit code 52: java.lang.OutOfMemoryError", where, settings)
        return f"Spark executor {lost_executor.group(1)} was lost in {where} ({reason}); {_retry_hint(settings)}"
    return None


def no_space_message(text: str, settings: dict) -> str:
    """``No space left on device``: the output being written, or Spark's scratch directory."""
    writing = _WRITING.search(text)
    if writing:
        from ..uri import display_name

        return f"cannot write {display_name(writing.group(1))}: No space left on device"
    local_dir = settings.get("local_dir", "/tmp")
    return (f"No space left on device in Spark's scratch directory {local_dir} (shuffle and spill files): "
            "free space there or point spark.local.dir (SPARK_LOCAL_DIRS) to a larger disk")


def driver_oom_message(what: str, settings: dict) -> str:
    """The driver's JVM ran out of heap (on a local master it runs the tasks too)."""
    memory = settings.get("driver_memory")
    now = f", now {memory}" if memory else ""
    runs = " (a local master runs the executors' tasks in it too)" if _is_local(settings) else ""
    return (f"the Spark driver's JVM ran out of memory ({what}){runs}; raise --driver-memory "
            f"(spark.driver.memory{now}) or give more --partitions so each task holds fewer rows")


def python_worker_memory_message(where: str, settings: dict) -> str:
    """A Python worker's ``MemoryError``: past ``spark.executor.pyspark.memory`` when the session
    sets that limit (each worker's address space), else its host's memory."""
    limit = settings.get("pyspark_memory")
    if limit:
        return (f"a Spark Python worker ran out of memory (MemoryError) in {where}; raise "
                f"spark.executor.pyspark.memory (now {limit}, each Python worker's limit) or give more "
                "--partitions so each task holds fewer rows")
    return (f"a Spark Python worker ran out of memory (MemoryError) in {where}; give more --partitions so "
            "each task holds fewer rows, or more memory to the executors' hosts")


def executor_oom_message(what: str, where: str, settings: dict) -> str:
    """An executor's JVM ran out of heap in a task."""
    memory = settings.get("executor_memory")
    now = f" (now {memory})" if memory else ""
    return (f"a Spark executor's JVM ran out of memory ({what}) in {where}; raise spark.executor.memory"
            f"{now} or give more --partitions so each task holds fewer rows")


def _is_local(settings: dict) -> bool:
    return settings.get("master", "").startswith("local")


def _retry_hint(settings: dict) -> str:
    if _is_local(settings):
        return ("a local master does not retry failed tasks: run it again, or use --master 'local[N,R]' to retry "
                "each task R times")
    return f"Spark gave up after spark.task.maxFailures ({settings.get('max_failures', '4')}) attempts"


def _dead_jvm_message(text: str) -> str | None:
    """The driver JVM that PySpark started has exited (or is exiting): its exit code says why."""
    if not any(sign in text for sign in _CONTEXT_GONE):
        return None
    code = _driver_jvm_exit_code()
    if code is None:
        return None
    if code == OOM_EXIT_CODE:
        return driver_oom_message(f"exit code {code}: java.lang.OutOfMemoryError", _SETTINGS)
    meaning = JVM_EXIT_CODES.get(code)
    return (f"the Spark driver's JVM exited unexpectedly (exit code {code}{': ' + meaning if meaning else ''}); "
            "-v shows Spark's log")


def _driver_jvm_exit_code(wait: float = JVM_EXIT_WAIT) -> int | None:
    """The exit code of the JVM PySpark launched, once it has exited (``None``: it runs, or
    this process did not launch it: spark-submit's JVM is the parent)."""
    import subprocess

    from pyspark import SparkContext

    gateway = SparkContext._gateway  # noqa: SLF001
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return None
    try:
        return proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        return None


def stop_session_quietly() -> None:
    """Stop the running Spark context, its local Python workers first (no shutdown traceback,
    :mod:`sparkrank.io.spark.shutdown`); a JVM already gone is no error."""
    import logging

    from pyspark import SparkContext

    sc = SparkContext._active_spark_context  # noqa: SLF001
    if sc is None:
        return
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # py4j's root-logger lines about a gateway already closed
    try:
        from .shutdown import stop_local_python_daemons

        try:  # the running tasks' errors as the executor goes down: not the user's
            sc.setLogLevel("OFF")
        except Exception:  # noqa: BLE001 - the JVM may be gone
            pass

        try:
            stop_local_python_daemons(sc)
        except Exception:  # noqa: BLE001 - the JVM may be gone: nothing left to stop
            pass
        try:
            sc.stop()
        except Exception:  # noqa: BLE001
            pass
    finally:
        logging.disable(previous)
