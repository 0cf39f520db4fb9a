"""A throw-away Spark standalone cluster for a benchmark's session (``--workers N``).

The master and ``N`` workers are real Spark daemons on 127.0.0.1 (``tests/cluster.py``'s
:class:`StandaloneCluster`, which starts them from the pip-installed pyspark); the benchmark's
driver is this process, its executors run this interpreter with this checkout on their
``PYTHONPATH``.  :func:`cluster_roots` gives the worker JVMs' PIDs, under which the executor
JVMs and their Python workers run, for :class:`~_tree_memory.TreeMemorySampler`'s ``also``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cluster import StandaloneCluster  # noqa: E402


@contextlib.contextmanager
def standalone(n_workers: int, cores: int, memory: str):
    """``(master URL, session settings, cluster)`` of a started cluster of ``n_workers`` workers
    offering ``cores`` cores and ``memory`` each; stopped (with its executors) on exit."""
    with tempfile.TemporaryDirectory(prefix="sparkrank-bench-cluster-") as tmp:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        cluster = StandaloneCluster(tmp, n_workers=n_workers, cores=cores, memory=memory,
                                    python=sys.executable, extra_env={"PYTHONPATH": path}, timeout=120.0)
        with cluster:
            os.environ.setdefault("SPARK_LOCAL_IP", cluster.host)
            conf = {"spark.driver.host": cluster.host, "spark.driver.bindAddress": cluster.host,
                    "spark.executor.memory": memory, "spark.executorEnv.PYTHONPATH": path}
            yield cluster.master_url, conf, cluster


def cluster_roots(cluster) -> list[int]:
    """The worker daemons' PIDs (their executors and Python workers are below them)."""
    return [pid for name, pid in cluster.pids.items() if name.startswith("worker-")]
