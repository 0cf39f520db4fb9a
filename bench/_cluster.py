"""A throw-away Spark standalone cluster for a benchmark's session (``--workers N``).

The master and ``N`` workers are real Spark daemons on 127.0.0.1 (``tests/cluster.py``'s
:class:`StandaloneCluster`, which starts them from the pip-installed pyspark); the benchmark's
driver is this process, its executors run this interpreter with this checkout on their
``PYTHONPATH``.  :func:`cluster_roots` gives the worker JVMs' PIDs, under which the executor
JVMs and their Python workers run, for :class:`~_tree_memory.TreeMemorySampler`'s ``also``.
"""

from __future__ import annotations

import argparse
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


def add_cluster_options(ap: argparse.ArgumentParser, worker_memory: str) -> None:
    """``--workers``, ``--worker-cores``, ``--worker-memory`` (default ``worker_memory``)."""
    ap.add_argument("--workers", type=int, default=0,
                    help="run on a throw-away standalone cluster of this many workers on 127.0.0.1 "
                         "(bench/_cluster.py) instead of --master; memory includes its executors")
    ap.add_argument("--worker-cores", type=int, default=None, help="cores per worker (default: all cores / workers)")
    ap.add_argument("--worker-memory", default=worker_memory, help="memory per worker, and spark.executor.memory")


def cluster_from_options(args, stack: contextlib.ExitStack) -> tuple[dict, list[int]]:
    """With ``--workers N``: start the cluster (stopped by ``stack``), point ``args.master`` at it
    and return ``(its session settings, memory roots)``; without: ``({}, [])``."""
    if not args.workers:
        return {}, []
    cores = args.worker_cores or max((os.cpu_count() or 2) // args.workers, 1)
    args.master, settings, cluster = stack.enter_context(standalone(args.workers, cores, args.worker_memory))
    return settings, cluster_roots(cluster)
