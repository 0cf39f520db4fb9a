"""A command on an embedded Spark session ends without the Python workers' shutdown traceback
(``sparkrank.spark.shutdown``): its Python daemons are stopped before the JVM goes down."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

# Runs the console script's entry point (cli.run) and reports which daemons it stopped.
_SCRIPT = """
import sys
from sparkrank import cli
from sparkrank.spark import shutdown

stopped = []
stop = shutdown.stop_local_python_daemons
shutdown.stop_local_python_daemons = lambda sc: stopped.extend(stop(sc)) or stopped
try:
    cli.run(sys.argv[1:])
finally:
    alive = [pid for pid, _, state, _ in shutdown._process_table() if pid in stopped and state != "Z"]
    print("stopped", len(stopped), "alive", len(alive))
"""


def test_a_spark_command_stops_its_python_daemons_and_prints_no_traceback(tmp_path):
    rng = np.random.default_rng(3)
    lines = [f"{int(rng.integers(0, 3))} qid:{i // 10 + 1} 1:{rng.random():.3f} 2:{rng.random():.3f}"
             for i in range(200)]
    path = tmp_path / "train.txt"  # SVMlight: its read starts the SQL workers' daemon too
    path.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, "train", "--engine", "spark", "--input", str(path),
                           "--model", str(tmp_path / "m.json"), "-q"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stopped, alive = (int(proc.stdout.split(word)[1].split()[0]) for word in ("stopped", "alive"))
    assert stopped >= 1 and alive == 0, proc.stdout
    # stderr holds the JVM's start-up warning and the convergence line, nothing from the workers
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
