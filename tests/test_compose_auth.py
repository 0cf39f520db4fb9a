"""docker/entrypoint.sh turns on Spark's shared-secret authentication from the compose secret
(SPARKRANK_SECRET_FILE): run here without Docker, a real standalone master and worker started
by the entrypoint accept a spark-submit that has the secret and refuse one that has not, and the
secret is on no command line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster import java_home, spark_home

ENTRYPOINT = Path(__file__).resolve().parents[1] / "docker" / "entrypoint.sh"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {seconds:.0f} s")


def test_the_entrypoint_runs_master_worker_and_submit_with_the_shared_secret(tmp_path):
    jh = java_home()
    if jh is None:
        pytest.skip("no Java for a standalone cluster")
    master, master_ui, worker_ui = _free_port(), _free_port(), _free_port()
    secret = tmp_path / "secret" / "secret"
    secret.parent.mkdir(mode=0o700)
    env = {**os.environ, "JAVA_HOME": str(jh), "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "SPARKRANK_SECRET_FILE": str(secret), "SPARK_MASTER_HOST": "127.0.0.1",
           "SPARK_MASTER_PORT": str(master), "SPARK_MASTER_WEBUI_PORT": str(master_ui),
           "SPARK_WORKER_WEBUI_PORT": str(worker_ui), "SPARK_MASTER_URL": f"spark://127.0.0.1:{master}",
           "SPARK_WORKER_HOST": "127.0.0.1", "SPARK_DRIVER_HOST": "127.0.0.1",
           "SPARK_WORKER_DIR": str(tmp_path / "work"), "SPARK_EXECUTOR_MEMORY": "512m", "TMPDIR": str(tmp_path)}
    run = dict(env=env, capture_output=True, text=True, timeout=60)
    assert "wrote a new secret" in subprocess.run(["sh", str(ENTRYPOINT), "secret"], **run).stdout
    first = secret.read_text()
    assert "kept" in subprocess.run(["sh", str(ENTRYPOINT), "secret"], **run).stdout and secret.read_text() == first
    assert len(first.strip()) == 64 and secret.stat().st_mode & 0o077 == 0
    job = tmp_path / "job.py"
    job.write_text("from pyspark.sql import SparkSession\ns = SparkSession.builder.getOrCreate()\n"
                   "print('SUM', s.sparkContext.parallelize(range(100), 2).map(lambda x: 2 * x).sum())\n"
                   "print('AUTH', s.conf.get('spark.authenticate'), s.conf.get('spark.network.crypto.enabled'))\n")
    daemons = []
    try:
        for role, port in (("master", master), ("worker", worker_ui)):
            daemons.append(subprocess.Popen(["sh", str(ENTRYPOINT), role], env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
            _wait_for_port(port, 120)
        command_lines = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert first.strip() not in command_lines
        ok = subprocess.run(["sh", str(ENTRYPOINT), "submit", str(job)], env=env, capture_output=True, text=True,
                            timeout=300)
        assert ok.returncode == 0 and "SUM 9900" in ok.stdout and "AUTH true true" in ok.stdout, ok.stderr[-3000:]
        without = {k: v for k, v in env.items() if k != "SPARKRANK_SECRET_FILE"}
        try:
            refused = subprocess.run(["sh", str(ENTRYPOINT), "submit", "--conf", "spark.app.name=no-secret", str(job)],
                                     env=without, capture_output=True, text=True, timeout=120)
            output = refused.stdout + refused.stderr
        except subprocess.TimeoutExpired as exc:  # Spark retries the master until it gives up
            output = (exc.stdout or b"").decode() + (exc.stderr or b"").decode()
        assert "SUM" not in output and "SaslMessage" in output, output[-3000:]
    finally:
        for proc in daemons:  # the entrypoint execs spark-class, which execs java: this pid is the JVM
            proc.terminate()
            proc.wait(timeout=60)
