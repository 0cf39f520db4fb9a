"""Get a SparkSession: the one spark-submit made, or an embedded ``local[*]`` one."""

from __future__ import annotations

import os
import sys


#: Spark's log configuration while sparkrank runs without -v (warnings and errors only).
QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")
QUIET_LEVELS = ("WARN", "ERROR", "FATAL", "OFF")


def get_session(master: str | None = None, app_name: str = "sparkrank", conf: dict | None = None,
                log_level: str = "WARN"):
    """Return the active SparkSession or create one.

    Under ``spark-submit`` the master and resources come from the command line; otherwise
    an embedded ``local[*]`` session is started (UI off, quiet progress) whose Python
    workers use this interpreter, so they import the same sparkrank and numba.

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
        return active
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # launched by spark-submit: connect to its JVM first, so SparkConf() sees --master / --conf
        from pyspark import SparkContext

        SparkContext._ensure_initialized()
    submitted = SparkConf()  # holds spark-submit's settings when launched through it
    builder = SparkSession.builder.appName(app_name)
    if master or not submitted.contains("spark.master"):
        builder = builder.master(master or "local[*]")
    is_local = (master or submitted.get("spark.master", "local[*]")).startswith("local")
    defaults = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        # workers must run this interpreter (it has numba, scipy and sparkrank)
        "spark.pyspark.python": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "spark.pyspark.driver.python": sys.executable,
    }
    defaults["spark.log.level"] = log_level.upper()
    if log_level.upper() in QUIET_LEVELS:
        defaults["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}"
    if is_local:
        defaults["spark.driver.host"] = "127.0.0.1"
        defaults["spark.driver.bindAddress"] = "127.0.0.1"
    for key, value in {**defaults, **(conf or {})}.items():
        if not submitted.contains(key):
            builder = builder.config(key, value)
    if is_local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level.upper())
    return spark
