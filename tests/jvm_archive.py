"""A class-data-sharing archive for the test suite's Spark JVMs: ``python tests/jvm_archive.py``.

Why: every ``spark-submit`` of ``test_cluster.py`` starts a driver JVM and two executor JVMs,
and the cluster's master and workers are JVMs too.  Most of their start-up is loading and
verifying the same ~10k classes from Spark's ~250 jars.  JDK 13+ can write the classes one run
loaded into an archive at exit (``-XX:ArchiveClassesAtExit``, dynamic AppCDS) and map it into
later JVMs (``-XX:SharedArchiveFile``): measured here, a README train submission on the test
cluster went from 12.7-14.0 s to 9.5-9.7 s, and a local ``spark-submit`` of it from 8.4 to
5.7 s wall, 8.9 to 5.9 CPU-seconds.

The archive is only valid for the class path it was written with, and the JVM refuses to write
one whose class path has a non-empty directory in it; Spark puts its conf directory first on
every class path.  So the archive comes with its own, always empty, conf directory
(:func:`conf_dir`): the cluster's daemons and submissions use it as ``SPARK_CONF_DIR``, and
spark-submit gets its settings from ``SPARK_SUBMIT_OPTS`` instead of ``spark-defaults.conf``
(``cluster.StandaloneCluster.submit_env``).  Each JVM then runs with :func:`jvm_options`; one whose
class path does not match (another Java, another pyspark) silently starts without the archive
(``-Xlog:cds=off``: no warnings in the jobs' output), as it would have before.

The archive is written once per Java and pyspark installation (~20 s) under
``.pytest_cache/sparkrank-jvm/``: by ``conftest.pytest_configure``, beside the numba warm-up and
before the test processes start, when the run includes the cluster tests (else by the
``cluster`` fixture); a run with an archive already there pays nothing.
``SPARKRANK_JVM_ARCHIVE=0`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the JVM options of an archive's users: no CDS log lines, whatever happens
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def enabled() -> bool:
    return os.environ.get("SPARKRANK_JVM_ARCHIVE", "1") != "0"


def _installation_key(java_home: str, spark_home: str) -> str:
    """What an archive is valid for: this java binary and these Spark jars (paths and sizes)."""
    java = Path(java_home) / "bin" / "java"
    parts = [str(java.resolve()), str(java.resolve().stat().st_mtime_ns)]
    jars = Path(spark_home) / "jars"
    parts += sorted(f"{j.name}:{j.stat().st_size}" for j in jars.glob("*.jar"))
    parts.append(str(jars))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _home(java_home: str, spark_home: str) -> Path:
    return REPO / ".pytest_cache" / "sparkrank-jvm" / _installation_key(java_home, spark_home)


def conf_dir(java_home: str, spark_home: str) -> Path:
    """The (empty) ``SPARK_CONF_DIR`` of every JVM that uses the archive."""
    path = _home(java_home, spark_home) / "conf"
    path.mkdir(parents=True, exist_ok=True)
    return path


def archive(java_home: str, spark_home: str) -> Path:
    return _home(java_home, spark_home) / "spark.jsa"


def jvm_options(java_home: str, spark_home: str) -> str:
    """``-XX:SharedArchiveFile=...`` (quietly) when the archive exists and is enabled, else ``""``."""
    path = archive(java_home, spark_home)
    if not enabled() or not path.exists():
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


#: What the archive's JVM does: the kinds of Spark work sparkrank's jobs do (Parquet and
#: Arrow batches in and out, SQL filters, Python workers over RDD partitions, broadcasts,
#: treeAggregate), so that the classes they load are in it.  Plain PySpark: no sparkrank
#: kernel runs, so the JVM's run does not wait for numba.
WORKLOAD = r"""
import sys
import pyarrow as pa
from pyspark.sql import SparkSession
out = sys.argv[1]
spark = SparkSession.builder.appName("sparkrank-jvm-archive").getOrCreate()
df = spark.createDataFrame([(float(i % 3), i // 10, [float(i), 1.0]) for i in range(200)], "label double, qid long, features array<double>")
df.write.mode("overwrite").partitionBy("qid").parquet(out + "/lake")
rows = spark.read.parquet(out + "/lake").where("qid >= 3").repartition(2, "qid")
def batches(it):
    for b in it:
        yield pa.RecordBatch.from_pydict({"n": [b.num_rows]})
rows.mapInArrow(batches, "n long").collect()
bw = spark.sparkContext.broadcast([1.0, 2.0])
rdd = rows.rdd.map(lambda r: r.label * bw.value[0]).cache()
rdd.treeAggregate(0.0, lambda a, b: a + b, lambda a, b: a + b, depth=2)
rdd.mapPartitions(lambda it: [sum(it)]).collect()
bw.destroy()
rows.groupBy("qid").count().write.mode("overwrite").json(out + "/counts")
spark.stop()
"""


def build(java_home: str, spark_home: str, java_opts: str = "", timeout: float = 300) -> Path | None:
    """Write the archive (from a local ``spark-submit`` of :data:`WORKLOAD`) unless it exists.

    Returns its path, or ``None`` when it could not be written (an old Java, say): the JVMs
    then start as they would without it.
    """
    path = archive(java_home, spark_home)
    if path.exists() or not enabled():
        return path if path.exists() else None
    for old in path.parent.parent.glob("*/spark.jsa"):  # ~190 MB each: drop those of other installations
        old.unlink(missing_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="sparkrank-jvm-archive-") as work:
        script = Path(work) / "workload.py"
        script.write_text(WORKLOAD)
        env = {**os.environ, "JAVA_HOME": java_home, "SPARK_HOME": spark_home,
               "SPARK_CONF_DIR": str(conf_dir(java_home, spark_home)), "PYSPARK_PYTHON": sys.executable,
               "SPARK_LOCAL_IP": "127.0.0.1"}
        env.pop("PYSPARK_DRIVER_PYTHON", None)
        cmd = [str(Path(spark_home) / "bin" / "spark-submit"), "--master", "local[2]",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
               "--conf", "spark.sql.shuffle.partitions=2",
               "--driver-java-options", f"{java_opts} -XX:ArchiveClassesAtExit={tmp} {QUIET}".strip(),
               str(script), str(Path(work) / "out")]
        try:
            done = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            done = None
    if done is None or done.returncode != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        if done is not None and done.returncode != 0:
            print(f"no JVM class archive (spark-submit exited {done.returncode}):\n{done.stderr[-2000:]}",
                  file=sys.stderr)
        return None
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    from cluster import FAST_JVM, java_home, spark_home

    jh = java_home()
    if jh is None:
        sys.exit("no Java")
    built = build(jh, spark_home(), FAST_JVM)
    print(built if built else "no archive written")
    sys.exit(0 if built else 1)
