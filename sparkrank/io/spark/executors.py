"""The executors' Python, set up the same way on every path that makes or receives a session.

PySpark runs a task's Python function with the interpreter in ``SparkContext.pythonExec``,
which the context reads from ``PYSPARK_PYTHON`` when it starts and otherwise leaves as plain
``python3``: whatever that is on the worker hosts' ``PATH``.  A session made with a bare
``SparkSession.builder.getOrCreate()`` (a notebook, the pyspark.ml pipeline of the README) from
a venv that is not on the workers' ``PATH`` then fails its first sparkrank task with
``ModuleNotFoundError: No module named 'sparkrank'``, after Spark's 4 attempts of every task and
pages of log (a minute or more).

:func:`prepare_executors` runs on every path into Spark (:func:`~sparkrank.io.spark.session.get_session`
for the command line and the ``jobs/``, ``LinearRanker.fit``, ``LinearRankerModel.transform``,
``RankingEvaluator.evaluate`` and :func:`~sparkrank.io.sources.open_source`):

1. the interpreter: the one chosen (``PYSPARK_PYTHON`` when the context started, or
   ``spark.pyspark.python`` in its settings, which a builder's ``.config`` alone does not
   make PySpark use), else this process's own (as :func:`~sparkrank.io.spark.session.get_session`
   does before it starts a context);
2. the probe (:func:`check_executors`): every executor core imports
   sparkrank's modules once, in one small job whose tasks catch their own import errors, so a
   Python without sparkrank is one :class:`~sparkrank.io.spark.errors.ClusterError` in seconds
   naming the interpreter and the fix.  A local master running this very interpreter needs
   no probe.

Both happen once per context and interpreter.
"""

from __future__ import annotations

import builtins
import logging
import os
import sys

from .errors import ClusterError

log = logging.getLogger("sparkrank.spark")

#: What the probe task imports: everything a pass needs on the executors.
EXECUTOR_MODULES = ("numpy", "numba", "pyarrow", "scipy", "sparkrank")

# The probe is compiled here rather than defined in this module: cloudpickle ships a function
# of an importable module by reference, and unpickling it would need the very sparkrank whose
# absence the probe reports.
_PROBE_SOURCE = '''
def probe(_):
    import sys
    missing = []
    for name in MODULES:
        try:
            __import__(name)
        except Exception as exc:
            missing.append(name + " (" + type(exc).__name__ + ": " + str(exc) + ")")
    yield sys.executable, missing
'''


#: Where the documentation says how to give the executors their Python (a section of docs/spark.md).
CLUSTER_DOCS = "docs/spark.md#running-on-a-cluster"


def _probe_function(modules: tuple[str, ...]):
    namespace = {"__builtins__": builtins, "MODULES": modules}
    exec(_PROBE_SOURCE, namespace)  # noqa: S102 - fixed source above
    return namespace["probe"]


def interpreter_hint(python: str) -> str:
    """How to give the executors an interpreter that has sparkrank (docs/spark.md, 'Running on a cluster')."""
    return ("give the executors a Python that has sparkrank: `spark-submit --conf spark.pyspark.python="
            f"{python} ...` (or `.config(\"spark.pyspark.python\", ...)` on the session builder) when every "
            "worker host has that path, or ship a packed venv: "
            "`spark-submit --archives venv.tar.gz#environment --conf spark.pyspark.python=./environment/bin/python ...`"
            f" (see {CLUSTER_DOCS})")


def check_executors(spark, modules: tuple[str, ...] = EXECUTOR_MODULES, python: str | None = None) -> None:
    """Have every executor core import ``modules``; raise :class:`ClusterError` if one cannot.

    One small job of ``defaultParallelism`` tasks (one per executor core): besides finding a
    host whose Python lacks sparkrank, it starts every executor's Python worker and pays its
    imports in parallel, up front, where the first pass would otherwise pay them one
    executor after another.  (Python workers are reused, so the work is not repeated.)  The
    tasks catch their own import errors, so Spark does not retry them.
    """
    sc = spark.sparkContext
    python = python or sc.pythonExec
    tasks = max(1, sc.defaultParallelism)
    try:
        found = sc.parallelize(range(tasks), tasks).mapPartitions(_probe_function(tuple(modules))).collect()
    except Exception as exc:  # the interpreter itself could not start on the executor
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterError(f"the executors could not start Python {python!r} ({first[:300]}); "
                           f"{interpreter_hint(sys.executable)}") from None
    for executable, missing in found:
        if missing:
            raise ClusterError(f"the executors' Python {executable} cannot import {'; '.join(missing)}; "
                               f"{interpreter_hint(sys.executable)}")


#: ``SparkContext.pythonExec`` when nothing chose the executors' interpreter (pyspark/core/context.py).
PYSPARK_DEFAULT_PYTHON = "python3"

# id(SparkContext) -> (its Java context, the interpreter probed): prepared already
_PREPARED: dict[int, tuple[object, str]] = {}


def chosen_python(sc) -> str:
    """The executors' interpreter for context ``sc``: its ``spark.pyspark.python`` setting (which
    wins over the environment, as in spark-submit), else ``PYSPARK_PYTHON`` (read by the context
    as it started), else this process's interpreter."""
    configured = sc.getConf().get("spark.pyspark.python", None)
    if configured:
        return configured
    if sc.pythonExec != PYSPARK_DEFAULT_PYTHON or os.environ.get("PYSPARK_PYTHON"):
        return sc.pythonExec
    return sys.executable


def prepare_executors(spark) -> None:
    """Give the executors of ``spark`` their interpreter and make sure it imports sparkrank
    (see the module); raises :class:`~sparkrank.io.spark.errors.ClusterError` naming the fix when
    it cannot.  Cheap after the first call on a context."""
    sc = spark.sparkContext
    done = _PREPARED.get(id(sc))
    if done is not None and done[0] is sc._jsc and done[1] == sc.pythonExec:  # noqa: SLF001
        return
    python = chosen_python(sc)
    if python != sc.pythonExec:
        log.info("executors' Python: %s (was %s)", python, sc.pythonExec)
        sc.pythonExec = python  # every Python function made from now on names it
    if not (sc.master.startswith("local") and os.path.realpath(python) == os.path.realpath(sys.executable)):
        check_executors(spark, python=python)
    _PREPARED[id(sc)] = (sc._jsc, python)  # noqa: SLF001 - a new context has a new Java context
