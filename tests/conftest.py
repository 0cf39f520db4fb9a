"""Shared fixtures: paths of the shared real data, small random ranking problems, and the
session's two Spark deployments, each started once on first use and shared by every test
that asks for it: the embedded ``local[2]`` :func:`spark` session and the standalone
:func:`cluster` (one master, two workers on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MQ2008 = SHARED_DATA / "MQ2008" / "Fold1"
CADATA = SHARED_DATA / "cadata" / "cadata"


def require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data {path} not available")
    return path


def explicit_pairs(labels: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (upper, lower) index pairs with y_upper > y_lower inside each group: the O(m²) oracle."""
    upper, lower = [], []
    for g in range(len(offsets) - 1):
        idx = np.arange(offsets[g], offsets[g + 1])
        yy = labels[idx]
        u, l = np.nonzero(yy[:, None] > yy[None, :])
        upper.append(idx[u])
        lower.append(idx[l])
    return np.concatenate(upper or [np.zeros(0, int)]), np.concatenate(lower or [np.zeros(0, int)])


def pytest_configure(config):
    """Before the test processes start, in the controlling pytest process, side by side in
    subprocesses: fill numba's cache when a kernel's source is newer than its cache
    (``tests/warm_numba.py`` says why; ``SPARKRANK_WARM_NUMBA=0`` skips it), and write the Spark
    JVMs' class-data archive when the run includes the cluster tests and there is none yet for
    this Java and pyspark (``tests/jvm_archive.py``; ``SPARKRANK_JVM_ARCHIVE=0`` skips it).  A
    failure of either only costs time: the tests that need the kernels say what is wrong, and
    the ``cluster`` fixture tries the archive once more or starts its JVMs without one."""
    import os
    import subprocess
    import sys

    import jvm_archive
    from cluster import java_home, spark_home
    from warm_numba import cache_is_stale

    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller has done both
    script = Path(__file__).with_name("warm_numba.py")
    repo = script.parents[1]
    jobs = []
    if os.environ.get("SPARKRANK_WARM_NUMBA", "1") != "0" and cache_is_stale():
        jobs += [(f"warming numba's cache (part {part})", [sys.executable, str(script), part]) for part in "ab"]
    jh = java_home()
    if jh is not None and jvm_archive.enabled() and _selects_cluster_tests(config) \
            and not jvm_archive.archive(jh, spark_home()).exists():
        jobs.append(("writing the JVM class-data archive", [sys.executable, str(script.with_name("jvm_archive.py"))]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    procs = [(what, subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True))
             for what, cmd in jobs]
    for what, proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            print(f"{what} failed:\n{out[-2000:]}", file=sys.stderr)


def _selects_cluster_tests(config) -> bool:
    """Whether the command line's paths include ``test_cluster.py`` (the tests folder, the file,
    or one of its tests; no path means the configured ``testpaths``)."""
    cluster_tests = Path(__file__).with_name("test_cluster.py").resolve()
    invoked_in = Path(getattr(getattr(config, "invocation_params", None), "dir", "."))
    for arg in config.args or [str(Path(__file__).parent)]:
        path = (invoked_in / str(arg).split("::", 1)[0]).resolve()
        if path == cluster_tests or path in cluster_tests.parents:
            return True
    return False


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def spark():
    """One embedded local[2] SparkSession for the whole test session (creating one costs ~10 s)."""
    import os

    if os.path.isdir("/usr/lib/jvm/java-17-openjdk-amd64"):
        os.environ.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    from cluster import FAST_JVM

    from sparkrank.io.spark.session import QUIET_LOG4J, get_session

    conf = {"spark.sql.shuffle.partitions": "4", **lake_scheme_conf(),
            # thousands of tiny jobs: the C2 compiler's and the parallel collector's threads
            # cost more CPU than they save here (the quiet log4j option is get_session's default)
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J} {FAST_JVM}"}
    session = get_session("local[2]", app_name="sparkrank-tests", conf=conf)
    _SHARED_SESSION.append(session)
    yield session
    _SHARED_SESSION.clear()
    session.stop()


#: The :func:`spark` session of this test process, once started.
_SHARED_SESSION: list = []


@pytest.fixture(autouse=True)
def _the_shared_session_survives():
    """Fail the test that stopped this process's shared Spark session (an interrupted command
    run in-process stops it): otherwise every later Spark test of the process fails instead,
    with "Cannot call methods on a stopped SparkContext" and no word of the cause."""
    yield
    if _SHARED_SESSION:
        from pyspark import SparkContext

        if SparkContext._active_spark_context is None:  # noqa: SLF001
            _SHARED_SESSION.clear()
            pytest.fail("this test stopped the shared Spark session of the test run: run a command that "
                        "may stop it (an interruption, a dead JVM) in a subprocess")


#: The Hadoop-only URI scheme of the test session (see tests/java/LakeFileSystem.java).
LAKE_SCHEME = "lake"


def require_lake_scheme(spark) -> None:
    """Skip the test when the session has no ``lake:`` scheme (no javac to compile it)."""
    if spark.sparkContext.getConf().get(f"spark.hadoop.fs.{LAKE_SCHEME}.impl", None) is None:
        pytest.skip("no javac: the lake: test scheme is not registered")


def lake_scheme_conf() -> dict:
    """Spark settings that register ``lake:`` (the local disk, through Hadoop only): the
    class is compiled once per test run with the JDK's javac against pyspark's jars.
    Without a javac the scheme is not registered and tests using it skip."""
    import glob
    import os
    import shutil
    import subprocess
    import tempfile

    import pyspark

    java_home = os.environ.get("JAVA_HOME", "")
    javac = os.path.join(java_home, "bin", "javac") if java_home else shutil.which("javac")
    if not javac or not os.path.exists(javac):
        return {}
    source = Path(__file__).parent / "java" / "LakeFileSystem.java"
    out = Path(tempfile.mkdtemp(prefix="sparkrank-lakefs-"))
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "hadoop-client-*.jar"))
    subprocess.run([javac, "-nowarn", "-cp", os.pathsep.join(jars), "-d", str(out), str(source)], check=True,
                   capture_output=True)
    return {"spark.driver.extraClassPath": str(out), "spark.executor.extraClassPath": str(out),
            f"spark.hadoop.fs.{LAKE_SCHEME}.impl": "sparkrank.test.LakeFileSystem",
            f"spark.hadoop.fs.{LAKE_SCHEME}.impl.disable.cache": "true"}


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """The session's Spark standalone cluster (master + 2 one-core workers): started on first use,
    stopped at the end.  Only ``test_cluster.py`` uses it, and pytest-xdist's ``--dist loadfile``
    (pyproject's addopts) runs a module in one test process, so one cluster serves the run.
    Its workers run with a *plain* environment (no venv, no sparkrank, no ``PYSPARK_PYTHON``).
    Tests that kill a worker restart it before they return
    (:meth:`StandaloneCluster.restart_worker`), so every test finds both workers alive."""
    import jvm_archive
    from cluster import CLUSTER_SPARK_DEFAULTS, FAST_JVM, ClusterError, StandaloneCluster, java_home, spark_home

    jh, sh = java_home(), spark_home()
    if jh is None:
        pytest.skip("java is not available (no JAVA_HOME, no /usr/lib/jvm/java-17-openjdk-amd64, no java on PATH)")
    # every JVM of the cluster maps one class-data archive (tests/jvm_archive.py says why),
    # normally written by pytest_configure; here only if that did not run or failed
    try:
        jvm_archive.build(jh, sh, FAST_JVM)
        archive = {"conf_dir": jvm_archive.conf_dir(jh, sh), "jvm_options": jvm_archive.jvm_options(jh, sh)}
    except OSError as exc:  # e.g. a read-only checkout: the JVMs start without the archive
        print(f"no JVM class-data archive: {exc}")
        archive = {}
    c = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), n_workers=2, cores=1, memory="1g",
                          python=None, daemon_java_opts=FAST_JVM, spark_defaults=CLUSTER_SPARK_DEFAULTS, **archive)
    try:
        c.start()
    except ClusterError as exc:
        pytest.fail(f"the standalone cluster did not start: {exc}")
    try:
        yield c
    finally:
        c.stop()


#: Modules that take longest, run first: with two test processes (pyproject's addopts) the
#: standalone-cluster module then runs beside the rest instead of alone at the end.
LONGEST_MODULES = ("test_cluster.py", "test_spark_engine.py", "test_ml.py", "test_bad_inputs.py")


def pytest_collection_modifyitems(config, items):
    """Longest modules first (stable within each module and for the rest)."""
    def rank(item):
        name = item.path.name
        return LONGEST_MODULES.index(name) if name in LONGEST_MODULES else len(LONGEST_MODULES)

    items.sort(key=rank)
