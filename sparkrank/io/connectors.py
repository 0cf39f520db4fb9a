"""The Hadoop connector a URI scheme needs, named in the error when its class is missing.

``s3a://`` without ``hadoop-aws`` on the classpath fails in Hadoop with ``ClassNotFoundException:
Class org.apache.hadoop.fs.s3a.S3AFileSystem not found``: true, but not what to do.  The
connectors of Hadoop's own object stores must be the Hadoop version inside this Spark
(``org.apache.hadoop.util.VersionInfo``, asked of the running JVM), so the message computes
the exact ``--packages`` coordinates.
"""

from __future__ import annotations

#: scheme -> its connector's Maven artifact, whose version is Hadoop's own
HADOOP_CONNECTORS = {"s3a": "org.apache.hadoop:hadoop-aws", "abfs": "org.apache.hadoop:hadoop-azure",
                     "abfss": "org.apache.hadoop:hadoop-azure", "wasb": "org.apache.hadoop:hadoop-azure",
                     "wasbs": "org.apache.hadoop:hadoop-azure"}
#: Google's connector has versions of its own; its shaded jar carries its dependencies
GCS_CONNECTOR = "--conf spark.jars=gcs-connector-<3.x>-shaded.jar (spark-submit: --jars)"


def hadoop_version(jvm) -> str | None:
    """The Hadoop version of the running Spark (``None`` when the JVM cannot say)."""
    try:
        return str(jvm.org.apache.hadoop.util.VersionInfo.getVersion())
    except Exception:  # noqa: BLE001 - a JVM gone or without Hadoop: the hint goes without it
        return None


def connector_flag(scheme: str, jvm) -> str | None:
    """The option that adds ``scheme``'s connector, or ``None`` (no known connector)."""
    if scheme == "gs":
        return GCS_CONNECTOR
    if scheme not in HADOOP_CONNECTORS:
        return None
    return f"--packages {HADOOP_CONNECTORS[scheme]}:{hadoop_version(jvm) or '<the Hadoop version of your Spark>'}"


def missing_connector_message(path: str, java_message: str, jvm) -> str | None:
    """One line for a file system class that is not on the classpath, naming what to add;
    ``None`` when ``java_message`` is not that or the scheme has no known connector."""
    if "ClassNotFoundException" not in java_message and "No FileSystem for scheme" not in java_message:
        return None
    scheme = path.split(":", 1)[0].lower() if ":" in path else ""
    flag = connector_flag(scheme, jvm)
    if flag is None:
        return None
    return (f"{path}: this Spark has no {scheme}:// connector ({java_message.strip()}); add it with {flag}, "
            "on the sparkrank command line or spark-submit alike (docs/data.md, 'URIs')")
