"""Get a SparkSession: the one spark-submit made, or an embedded ``local[*]`` one.

The executors' Python: PySpark 4 takes the worker interpreter from the driver's
``PYSPARK_PYTHON`` environment variable when the context starts (``spark-submit --conf
spark.pyspark.python=...`` sets it); setting ``spark.pyspark.python`` on the builder is not
enough.  So unless one was chosen, :func:`get_session` sets ``PYSPARK_PYTHON`` to this
interpreter *before* the context starts: embedded sessions and single-host clusters then run
the same Python (with sparkrank, numba, pyarrow) whether or not its venv is on ``PATH``.  On
a cluster, :func:`~sparkrank.io.spark.executors.check_executors` has every executor core import
sparkrank (which also warms the Python workers) and fails in seconds with the flag to use when
the executors cannot; :mod:`sparkrank.io.spark.executors` does the same for sessions made elsewhere.
"""

from __future__ import annotations

import logging
import os
import sys

from .executors import prepare_executors
from .failures import QUIET_LEVELS

log = logging.getLogger("sparkrank.spark")

#: Spark's log configuration while sparkrank runs without -v (warnings and errors only).
QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")


#: A local master's Python daemon: PySpark's, without the workers' hang-up tracebacks
#: (``daemon/sparkrank_quiet_daemon.py``; for this interpreter, which can import it).
QUIET_DAEMON = {"spark.python.daemon.module": "sparkrank_quiet_daemon",
                "spark.executorEnv.PYTHONPATH": os.path.join(os.path.dirname(os.path.abspath(__file__)), "daemon")}


def _start_keeping_sigint(builder):
    """``builder.getOrCreate()``, keeping the SIGINT handler the program installed.

    A new SparkContext replaces it with PySpark's, which cancels the jobs from inside the
    handler: when the signal came while the driver waited in a py4j call, that second call on
    the busy connection fails with pages of py4j "reentrant call" errors.  A program with its
    own handler (the command line's, :mod:`sparkrank.failures`) keeps it; Python's default
    one is left to PySpark.
    """
    import signal
    import threading

    in_main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if in_main else None
    spark = builder.getOrCreate()
    if in_main and callable(before) and before is not signal.default_int_handler:
        signal.signal(signal.SIGINT, before)
    from .failures import on_session_start

    on_session_start(spark.sparkContext)  # the settings the messages of a failed job name
    return spark


def get_session(master: str | None = None, app_name: str = "sparkrank", conf: dict | None = None,
                log_level: str = "WARN"):
    """Return the active SparkSession or create one.

    Under ``spark-submit`` the master and resources come from the command line; otherwise
    an embedded ``local[*]`` session is started (UI off, quiet progress).  Either way the
    executors' Python workers run this interpreter unless ``PYSPARK_PYTHON`` /
    ``spark.pyspark.python`` names another, and on a cluster :func:`~sparkrank.io.spark.executors.check_executors` makes
    sure they can import sparkrank before any work is done.

    Parameters
    ----------
    master : str, optional
        e.g. ``local[2]`` or ``spark://host:7077``; ignored if a session already runs.
    app_name : str
    conf : dict, optional
        Extra Spark settings (``spark.driver.memory`` only works before the JVM starts).
    log_level : str
        Spark's log level.  ``WARN`` (default) is quiet from the JVM's first line: an embedded
        driver starts with ``log4j2-quiet.properties`` (no start-up INFO lines), and
        ``spark.log.level`` applies it as the context starts under spark-submit; any other
        level keeps Spark's own log4j profile.
    """
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        prepare_executors(active)
        return active
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # launched by spark-submit: connect to its JVM first, so SparkConf() sees --master / --conf
        from pyspark import SparkContext

        SparkContext._ensure_initialized()
    submitted = SparkConf()  # holds spark-submit's settings when launched through it
    builder = SparkSession.builder.appName(app_name)
    given = {"spark.app.name": app_name}  # what the builder is given, for the JVM's start
    if master or not submitted.contains("spark.master"):
        builder = builder.master(master or "local[*]")
        given["spark.master"] = master or "local[*]"
    is_local = (master or submitted.get("spark.master", "local[*]")).startswith("local")
    # the context reads the workers' interpreter from the environment when it starts
    python = (conf or {}).get("spark.pyspark.python") or submitted.get("spark.pyspark.python", None) \
        or os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    defaults = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": sys.executable,
        # executor JVM <-> Python worker over a Unix domain socket instead of loopback TCP:
        # on TCP the worker's first read of a task's input waits out a 40 ms delayed ACK,
        # which was 40% of a small pass (Spark >= 4.0; older versions ignore the key)
        "spark.python.unix.domain.socket.enabled": "true",
        # a CSV of 136 feature columns made Spark WARN that it truncated a plan's text, every run
        "spark.sql.debug.maxToStringFields": "10000",
    }
    defaults["spark.log.level"] = log_level.upper()
    if log_level.upper() in QUIET_LEVELS:
        defaults["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}"
    if is_local:
        defaults["spark.driver.host"] = "127.0.0.1"
        defaults["spark.driver.bindAddress"] = "127.0.0.1"
        if python == sys.executable and not any(submitted.contains(k) or k in (conf or {}) for k in QUIET_DAEMON):
            defaults.update(QUIET_DAEMON)  # its workers print no traceback on this terminal
    for key, value in {**defaults, **(conf or {})}.items():
        if not submitted.contains(key):
            builder = builder.config(key, value)
            given[key] = value
    if is_local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from .launch import check_master_reachable, launch_driver_jvm

    check_master_reachable(master or submitted.get("spark.master", "local[*]"))  # not a minute of retries
    launch_driver_jvm(given)  # no Java, or a JVM that refuses its options: one line
    spark = _start_keeping_sigint(builder)
    if is_local:  # its Python workers end quietly with this process (spark/shutdown.py)
        from .shutdown import stop_at_exit

        stop_at_exit(spark.sparkContext)
    spark.sparkContext.setLogLevel(log_level.upper())
    # Spark's own INFO lines are off by default: say which application this is (executor logs,
    # the master's UI and block directories are named after it)
    log.info("spark application %s on %s", spark.sparkContext.applicationId, spark.sparkContext.master)
    prepare_executors(spark)  # a cluster's executors import sparkrank, or one line says how to fix it
    return spark
