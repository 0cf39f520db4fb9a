"""Starting Spark from the command line: one line when it cannot (issue 38 items 3 and 4).

Each case runs the real command in a subprocess and reads all of its stderr: a ``JAVA_HOME``
that names no Java, a machine without any ``java`` (a ``PATH`` of every system tool but it), a
JVM that refuses its heap, a standalone master that is not there; the local engine needs no
Java.  ``--conf`` reaches the JVM as it starts, and a URI scheme without its connector names the
package, computed from the running Spark's Hadoop.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sparkrank.cli import main
from sparkrank.io.spark.passthrough import spark_conf, spark_setting

JVM_BANNER = "WARNING: Using incubator modules: jdk.incubator.vector"


def _run(tmp_path: Path, *args: str, env: dict | None = None) -> tuple[int, list[str]]:
    """``sparkrank train --input sample:train ARGS -q``: its status and its stderr's lines."""
    cmd = [sys.executable, "-m", "sparkrank", "train", "--input", "sample:train", "--model",
           str(tmp_path / "m.json"), "-q", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env or dict(os.environ), timeout=600)
    return r.returncode, [ln for ln in r.stderr.splitlines() if ln.strip() and ln != JVM_BANNER]


def _no_java_path(tmp_path: Path) -> str:
    """A directory with every program of /usr/bin but ``java``: a machine without Java."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for name in os.listdir("/usr/bin"):
        if name != "java":
            (farm / name).symlink_to(Path("/usr/bin") / name)
    return str(farm)


def test_no_java_or_a_wrong_java_home_is_one_line_and_the_local_engine_needs_none(tmp_path):
    """It was exit 1 and 35+ lines of ``PySparkRuntimeError: [JAVA_GATEWAY_EXITED]``."""
    wrong = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk")}
    rc, err = _run(tmp_path, "--engine", "spark", env=wrong)
    assert rc == 2 and err == [
        f"sparkrank train: error: Spark needs Java 17 or 21 and cannot run it: JAVA_HOME={tmp_path / 'no-jdk'} has "
        "no bin/java; install a JDK or JRE and set JAVA_HOME to its directory (e.g. "
        "/usr/lib/jvm/java-17-openjdk-amd64), or use --engine local"], err
    without = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    without["PATH"] = _no_java_path(tmp_path)
    rc, err = _run(tmp_path, "--engine", "spark", env=without)
    assert rc == 2 and len(err) == 1 and "JAVA_HOME is not set and no java is on PATH" in err[0], err
    rc, err = _run(tmp_path, "--engine", "local", env=wrong)
    assert rc == 0 and (tmp_path / "m.json").exists(), err


def test_a_jvm_that_refuses_its_heap_names_the_setting_given_by_conf(tmp_path):
    """``--conf spark.driver.memory=900t`` reaches the JVM as it starts (a heap no 64-bit address
    space holds): HotSpot's start-up error, which it writes on stdout, becomes the one line."""
    rc, err = _run(tmp_path, "--engine", "spark", "--conf", "spark.driver.memory=900t")
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("sparkrank train: error: Spark's driver JVM (") and \
        "did not start: Could not reserve enough space for" in err[0] and \
        err[0].endswith("give a --driver-memory (spark.driver.memory, now 900t) this host can reserve"), err


def test_a_master_that_is_not_there_is_one_line_at_once(tmp_path):
    """It was a minute of ``Failed to connect to master`` traces, then a Py4JJavaError (210 lines)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, err = _run(tmp_path, "--master", f"spark://127.0.0.1:{port}")
    assert rc == 2 and err == [
        f"sparkrank train: error: cannot reach the Spark master spark://127.0.0.1:{port} (127.0.0.1:{port}: "
        "Connection refused): start it, or give the URL its log prints ('Starting Spark master at "
        "spark://HOST:PORT')"], err


def test_conf_and_packages_are_parsed_and_merged():
    assert spark_setting("spark.hadoop.fs.s3a.endpoint=http://h:9000/?a=b") == (
        "spark.hadoop.fs.s3a.endpoint", "http://h:9000/?a=b")
    for bad in ("spark.x", "=1", "fs.s3a.endpoint=x"):
        with pytest.raises(argparse.ArgumentTypeError):
            spark_setting(bad)
    assert spark_conf([("spark.jars.packages", "a:b:1")], "c:d:2,a:b:1", "2g") == {
        "spark.jars.packages": "a:b:1,c:d:2", "spark.driver.memory": "2g"}
    with pytest.raises(ValueError, match="spark.driver.memory is given twice: '4g' and '2g'"):
        spark_conf([("spark.driver.memory", "4g")], None, "2g")


def test_a_scheme_without_its_connector_names_the_package_for_this_spark(spark, tmp_path, capsys):
    """``s3a://`` without hadoop-aws said ``ClassNotFoundException ... S3AFileSystem not found``."""
    hadoop = spark.sparkContext._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
    for scheme, flag in (("s3a", f"--packages org.apache.hadoop:hadoop-aws:{hadoop}"),
                         ("abfss", f"--packages org.apache.hadoop:hadoop-azure:{hadoop}")):
        uri = f"{scheme}://bucket/ltr/" if scheme == "s3a" else "abfss://c@acct.dfs.core.windows.net/ltr/"
        capsys.readouterr()
        rc = main(["train", "--engine", "spark", "--input", uri, "--model", str(tmp_path / "m.json"), "-q"])
        err = capsys.readouterr().err.splitlines()
        assert rc == 2 and len(err) == 1, err
        assert err[0].startswith(f"sparkrank train: error: {uri}: this Spark has no {scheme}:// connector (") and \
            f"add it with {flag}, on the sparkrank command line or spark-submit alike" in err[0], err
