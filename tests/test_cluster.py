"""The spark-submit jobs on a real Spark standalone cluster (one master, two workers on 127.0.0.1).

One cluster serves the whole test session (``conftest.cluster``, started on first use).  Its
workers run with a *plain* environment: no venv, no sparkrank, no ``PYSPARK_PYTHON`` on their
``PATH``; every job is submitted exactly as the README prints it, from a shell where the venv
is active (its ``bin`` first on ``PATH``).  Cluster-side tuning for a small machine (fast JVM
flags, executor memory, loopback driver address, the JVMs' class-data archive) reaches
``spark-submit`` through the environment (``StandaloneCluster.submit_env``), not the command lines.

Data is generated here (a few thousand rows), so nothing needs ``../shared``.  Every
``spark-submit`` costs a driver JVM, two executor JVMs and their Python workers (~10 s and
~13 CPU-seconds alone here, with the JVMs' class-data archive), so one job carries as many checks
as it can: 10 submissions in all.

* The README's train job (TRON) loses an executor JVM after iteration 2 and a whole worker
  after iteration 4, and must still give the weights of an undisturbed run bit for bit: the
  local engine's model of the same data and settings (:func:`reference`).  Its model feeds the
  README's evaluate job; the convert job makes the evaluate job's input.
* A BMRM fit loses an executor, a worker and then its driver; the same command with
  ``--resume`` must end in the undisturbed BMRM model, bit for bit.
* On a Hive-partitioned lake filtered by ``--where``, the tune job (every fit from w = 0) refits
  the kept rows exactly as the local engine does, and the predict job scores them with its model.
* An executor that runs out of heap for real is one error line naming ``spark.executor.memory``.
* One global ranking in range placement (BMRM and TRON) equals driver placement's models, bit
  for bit for BMRM (to TRON's documented last bits), though a worker is killed mid-fit.

Iterations are read from the jobs' log lines; faults are ``kill -9`` of processes this module
started (or that the cluster started for it).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cluster import StandaloneCluster

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
SUBMIT_TIMEOUT = 600
TRON = ["--solver", "tron", "-C", "1", "--tol", "1e-6"]
BMRM = ["--solver", "bmrm", "-C", "0.01", "--tol", "1e-2"]  # 13 iterations


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """3,000 generated rows in Parquet (train, 4 row groups) and 900 as SVMlight text (test, for ``jobs/convert.py``)."""
    from sparkrank.io.files import write_parquet
    from sparkrank.data.svmlight import write_svmlight
    from sparkrank.datasets import make_ranking_data

    out = tmp_path_factory.mktemp("cluster-data")
    train, _ = make_ranking_data(3000, 10, rows_per_group=30, n_levels=4, density=0.6, seed=3)
    test, _ = make_ranking_data(900, 10, rows_per_group=30, n_levels=4, density=0.6, seed=4)
    # four row groups: the train jobs read their blocks straight from them (on the executors,
    # ~9 s less per job than shuffling); the lake jobs below shuffle (Hive partitions, --where)
    write_parquet(out / "train.parquet", train, row_group_size=750)
    write_svmlight(out / "test.txt", test.X, test.labels, np.repeat(test.qids, np.diff(test.groups.offsets)))
    return out


#: the same settings as keyword arguments of :func:`sparkrank.training.train`
SOLVER_KWARGS = {"tron": {"solver": "tron", "C": 1.0, "tol": 1e-6}, "bmrm": {"solver": "bmrm", "C": 0.01, "tol": 1e-2}}


@pytest.fixture(scope="module")
def reference(data):
    """``reference(solver)``: the weights of an undisturbed fit (the local engine's, trained once each),
    which the Spark engine reproduces bit for bit."""
    from sparkrank.io.files import read_ranking_data
    from sparkrank.training import train

    models: dict[str, np.ndarray] = {}

    def get(solver: str) -> np.ndarray:
        if solver not in models:
            models[solver] = train(read_ranking_data(data / "train.parquet"), **SOLVER_KWARGS[solver]).weights
        return models[solver]

    return get


def _submit_env(cluster: StandaloneCluster) -> dict[str, str]:
    """The user's shell with the venv active, as the README assumes (the workers' is plain)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update(cluster.submit_env)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    return env


def _readme_command(cluster: StandaloneCluster, job: str, *args: str) -> list[str]:
    """``spark-submit --master spark://HOST:7077 jobs/JOB ARGS``: the README's line."""
    return [str(VENV_BIN / "spark-submit"), "--master", cluster.master_url, f"jobs/{job}", *args]


def _submit(cluster: StandaloneCluster, job: str, *args: str) -> subprocess.CompletedProcess:
    r = subprocess.run(_readme_command(cluster, job, *args), cwd=REPO, env=_submit_env(cluster),
                       capture_output=True, text=True, timeout=SUBMIT_TIMEOUT)
    stem = cluster.base_dir / f"submit-{Path(job).stem}-{time.monotonic_ns()}"
    Path(f"{stem}.err").write_text(r.stderr)
    assert r.returncode == 0, f"{job} exited {r.returncode}:\nstdout:\n{r.stdout}\nstderr (tail):\n{r.stderr[-6000:]}"
    return r


class Job:
    """A spark-submit run whose output is read line by line (in threads), to act at a solver iteration."""

    def __init__(self, cluster: StandaloneCluster, job: str, *args: str, command: list[str] | None = None):
        """``command``: another spark-submit line than the README's ``jobs/JOB ARGS``."""
        self.proc = subprocess.Popen(command or _readme_command(cluster, job, *args), cwd=REPO, env=_submit_env(cluster),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self._iterations: dict[int, threading.Event] = {}
        self._pattern = re.compile(r"sparkrank\.(tron|bmrm) iter\s+(\d+)\s")
        # spark-submit prints the Python driver's stderr (the solver's log lines) on its stdout
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True)]
        for t in self._readers:
            t.start()

    def _event(self, iteration: int) -> threading.Event:
        return self._iterations.setdefault(iteration, threading.Event())

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line)
            m = self._pattern.search(line)
            if m:
                self._event(int(m.group(2))).set()

    def wait_for_iteration(self, iteration: int, timeout: float = SUBMIT_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not self._event(iteration).wait(0.5):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._readers[0].join(timeout=10)
                raise AssertionError(f"the job never logged iteration {iteration}:\n{self.log[-6000:]}")

    def finish(self) -> int:
        rc = self.proc.wait(timeout=SUBMIT_TIMEOUT)
        for t in self._readers:
            t.join(timeout=30)
        return rc

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def kill_driver(self) -> None:
        """``kill -9`` spark-submit and the Python driver it started (one process group), unless
        the job has already ended (then a failed wait, not this, is what the test reports)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.finish()


def _weights(path: Path) -> np.ndarray:
    from sparkrank.model import RankingModel

    return RankingModel.load(path).weights


def _block_bytes(cluster: StandaloneCluster, app_id: str, workers: tuple[int, ...] | None = None,
                 skip: frozenset[Path] = frozenset()) -> int:
    """Bytes of the sparkrank block files of application ``app_id`` under the local directories
    of ``workers`` (1-based; default all), leaving out those under the directories ``skip``."""
    total = 0
    for i in workers or range(1, cluster.n_workers + 1):
        for d, _, files in os.walk(cluster.local_dir(i)):
            if "sparkrank-blocks-" in d and f"{os.sep}{app_id}" in d and not any(p in skip for p in Path(d).parents):
                for f in files:
                    try:
                        total += os.path.getsize(os.path.join(d, f))
                    except OSError:  # deleted meanwhile
                        pass
    return total


# -- the README's jobs, and the faults they survive ------------------------------------------------
#: The iteration after which worker 2 is killed, once the executor killed at iteration 2 has been
#: replaced and the fit goes on (TRON converges in 7 iterations here, BMRM in 13), and the one
#: after which BMRM's driver is killed.
WORKER_KILL_ITERATION = {"tron": 4, "bmrm": 5}
DRIVER_KILL_ITERATION = 8


def _app_id(log: str) -> str:
    return re.search(r"spark application (app-[0-9-]+)", log).group(1)


def _kill_an_executor_of(cluster: StandaloneCluster, worker: int) -> int:
    pids = cluster.executor_pids(worker)
    assert pids, f"worker {worker} runs no executor"
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


@pytest.fixture(scope="module")
def readme_model(cluster, data, tmp_path_factory) -> Path:
    """The model written by ``jobs/train.py`` as the README prints it (TRON), in a run that loses
    worker 1's executor JVM (``kill -9``) after iteration 2 and then the whole worker 2 (its
    executor, its block files and kept kernel states are gone for good) after iteration 4; its
    log beside it (``.log``).  One submission serves the README's train line, both faults and
    the evaluate job's model: the model must be the undisturbed one bit for bit, so the faults
    cannot hide in it."""
    path = tmp_path_factory.mktemp("readme-train") / "model.json"
    job = Job(cluster, "train.py", "--input", str(data / "train.parquet"), "--model", str(path), *TRON)
    worker_killed = False
    try:
        job.wait_for_iteration(2)
        _kill_an_executor_of(cluster, 1)
        job.wait_for_iteration(WORKER_KILL_ITERATION["tron"])
        cluster.kill("worker-2")
        worker_killed = True
        rc = job.finish()
    finally:
        if job.proc.poll() is None:
            job.kill_driver()
        if worker_killed:
            cluster.restart_worker(2)  # the next test finds both workers alive
    path.with_suffix(".log").write_text(job.log)
    assert rc == 0, f"the README train job failed after the faults ({rc}):\n{job.log[-8000:]}"
    print(f"block files left by the killed worker: {_block_bytes(cluster, _app_id(job.log), (2,))} bytes")
    return path


@pytest.fixture(scope="module")
def readme_test_parquet(cluster, data, tmp_path_factory) -> Path:
    """The SVMlight test file converted to Parquet by ``jobs/convert.py``, both given as ``file://`` URIs."""
    test = tmp_path_factory.mktemp("readme-convert") / "test.parquet"
    _submit(cluster, "convert.py", "--input", f"file://{data / 'test.txt'}", "--output", f"file://{test}")
    return test


def test_the_cluster_runs_both_workers_and_its_jvms_map_the_class_data_archive(cluster):
    """The session's cluster (started by this first test): master and both workers alive, each
    daemon JVM started with the class-data archive when there is one (``tests/jvm_archive.py``)."""
    assert cluster.alive_workers() == cluster.n_workers == 2
    if cluster.jvm_options:
        for name, pid in cluster.pids.items():
            assert b"-XX:SharedArchiveFile=" in Path(f"/proc/{pid}/cmdline").read_bytes(), name


def test_readme_train_job_runs_on_workers_without_the_venv_and_survives_a_lost_executor_and_worker(
        cluster, readme_model, reference):
    if cluster.jvm_options:  # the executors the workers launched map the class-data archive (tests/jvm_archive.py)
        launches = [ln for ln in (cluster.base_dir / "worker-1.log").read_text().splitlines() if "Launch command" in ln]
        assert launches and all("-XX:SharedArchiveFile=" in ln for ln in launches), launches[:1]
    raw = json.loads(readme_model.read_text())
    assert raw["summary"]["engine"] == "spark" and raw["summary"]["converged"], raw["summary"]
    log = readme_model.with_suffix(".log").read_text()
    assert "reading 4 Parquet row groups" in log  # blocks read straight from the file (no shuffle), then rebuilt
    np.testing.assert_array_equal(_weights(readme_model), reference("tron"))


def test_readme_convert_job_on_file_uris(readme_test_parquet, data):
    import pyarrow.parquet as pq

    from sparkrank.data.svmlight import load_svmlight

    converted = pq.read_table(readme_test_parquet)
    assert converted.num_rows == 900
    np.testing.assert_array_equal(np.sort(converted.column("label").to_numpy()),
                                  np.sort(load_svmlight(str(data / "test.txt")).labels))


def test_readme_evaluate_job_writes_per_query_and_json_to_file_uris(cluster, readme_model, readme_test_parquet,
                                                                    tmp_path):
    r = _submit(cluster, "evaluate.py", "--model", str(readme_model), "--input", str(readme_test_parquet),
                "--per-query", f"file://{tmp_path}/per_query", "--output-json", f"file://{tmp_path}/metrics.json")
    metrics = json.loads(r.stdout[r.stdout.find("{"): r.stdout.rfind("}") + 1])
    assert 0.5 < metrics["pairwise_accuracy"] <= 1.0, metrics
    assert json.loads((tmp_path / "metrics.json").read_text())["n_rows"] == 900
    assert any((tmp_path / "per_query").iterdir())


def test_executors_without_sparkrank_fail_fast_with_the_fix(cluster, data, tmp_path):
    cmd = _readme_command(cluster, "train.py", "--input", str(data / "train.parquet"), "--model", str(tmp_path / "m.json"))
    # the driver has sparkrank, the executors get a Python without it
    cmd[3:3] = ["--conf", "spark.pyspark.python=/usr/bin/python3", "--conf", f"spark.pyspark.driver.python={sys.executable}"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=REPO, env=_submit_env(cluster), capture_output=True, text=True, timeout=SUBMIT_TIMEOUT)
    seconds = time.monotonic() - t0
    out = r.stdout + r.stderr  # spark-submit prints the Python driver's stderr on its stdout
    assert r.returncode == 2, out[-4000:]
    assert "cannot import sparkrank" in out or "sparkrank (ModuleNotFoundError" in out, out[-4000:]
    assert "spark.pyspark.python=" in out and "Traceback" not in out
    # the one line is on spark-submit's stderr (the Python driver's streams reach it joined, on stdout)
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("sparkrank train: error: ")], r.stderr[-4000:]
    print(f"failed in {seconds:.1f}s")


@pytest.fixture(scope="module")
def bmrm_killed_driver(cluster, data, tmp_path_factory):
    """One BMRM fit, three faults: ``kill -9`` of worker 1's executor JVM after iteration 2, of
    the whole worker 2 after iteration 5 (restarted at once: the application may get a new
    executor there), and of the driver (``spark-submit`` and its Python) after iteration 8,
    checkpointing every iteration.  Returns the job's arguments and log and the application's
    block-file bytes: on every worker right before the driver kill (``held``), and in the live
    workers' directories once the master has ended the application (``after``).  (Which
    directories hold the blocks when the driver dies depends on where Spark placed the rebuilt
    partitions, so ``held`` counts every worker's files; ``after`` leaves out the crashed
    worker's old ones, which nothing cleans.)  The two tests below check the cleanup and the
    resume: one scenario, split so neither test carries both Spark applications."""
    tmp_path = tmp_path_factory.mktemp("bmrm-faults")
    args = ("--input", str(data / "train.parquet"), "--model", str(tmp_path / "model.json"), *BMRM,
            "--checkpoint-dir", str(tmp_path / "checkpoints"))
    job = Job(cluster, "train.py", *args)
    try:
        job.wait_for_iteration(2)
        _kill_an_executor_of(cluster, 1)
        job.wait_for_iteration(WORKER_KILL_ITERATION["bmrm"])
        cluster.kill("worker-2")
        crashed = frozenset(cluster.local_dir(2).iterdir())  # its application directories stay behind
        cluster.restart_worker(2)
        job.wait_for_iteration(DRIVER_KILL_ITERATION)
        # counted while the driver lives: once it is killed, the master ends the application at
        # once and the workers may delete its directories before a count after the kill
        app_id = _app_id(job.log)
        held = _block_bytes(cluster, app_id)
        left = _block_bytes(cluster, app_id, skip=crashed)
    finally:
        job.kill_driver()
        if cluster.alive_workers() < cluster.n_workers:
            cluster.restart_worker(2)
    # the master notices the lost driver and the live workers (worker 1, and worker 2 since its
    # restart) delete the application's directories; the crashed worker 2 cleaned nothing, so
    # its old directories stay behind
    deadline = time.monotonic() + 60
    while cluster.state().get("activeapps") and time.monotonic() < deadline:
        time.sleep(0.5)
    while _block_bytes(cluster, app_id, skip=crashed) and time.monotonic() < deadline + 2:
        time.sleep(0.25)
    after = _block_bytes(cluster, app_id, skip=crashed)
    print(f"block files of the killed application: {held} bytes right before the kill, {left} of them in the live "
          f"workers' directories, {after} there after it ended; {_block_bytes(cluster, app_id, (2,))} bytes on "
          f"worker 2, left by its crash")
    return {"args": args, "log": job.log, "held": held, "after": after, "model": tmp_path / "model.json"}


def test_bmrm_survives_a_lost_executor_and_worker_and_a_killed_driver_leaves_no_block_files(bmrm_killed_driver):
    run = bmrm_killed_driver
    assert "Parquet row groups" in run["log"]
    assert "sparkrank.bmrm iter   8" in run["log"]  # the fit went on after both losses
    # (the live workers' directories may hold none of them: on one host an executor opens a block
    # by its path, so after the restart the passes may read every block from the crashed
    # worker's old directory, and nothing is rebuilt elsewhere)
    assert run["held"] > 0 and run["after"] == 0


def test_bmrm_resumes_after_the_killed_driver_bit_for_bit(cluster, bmrm_killed_driver, reference):
    r = _submit(cluster, "train.py", *bmrm_killed_driver["args"], "--resume")
    assert "resuming from" in r.stdout + r.stderr
    np.testing.assert_array_equal(_weights(bmrm_killed_driver["model"]), reference("bmrm"))


# -- one global ranking in range placement on the cluster (issue 37 item 2) --------------------------
#: A driver script: one application fits BMRM and TRON in range placement, then in driver placement,
#: on the same data, and prints the weights (hex) after ``@@``; the solvers' iteration lines go to
#: stderr for :class:`Job` (the range BMRM fit's come first).
_RANGE_FITS = """
import json, logging, sys
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
logging.getLogger("py4j").setLevel(logging.WARNING)
from sparkrank.engines.spark import SparkEngine
from sparkrank.io.spark.session import get_session
from sparkrank.training import train

spark = get_session()
df = spark.read.parquet(sys.argv[1])
settings = {"bmrm": dict(solver="bmrm", C=0.01, tol=1e-2), "tron": dict(solver="tron", C=1.0, tol=1e-6)}
out = {}
for placement in ("range", "driver"):
    with SparkEngine(df, placement=placement, num_partitions=4) as engine:
        for solver in ("bmrm", "tron"):
            model = train(engine, **settings[solver])
            out[f"{placement}/{solver}"] = [[float(w).hex() for w in model.weights], model.summary["iterations"]]
print("@@" + json.dumps(out), flush=True)
"""
#: The range BMRM fit's iteration after which worker 2 is killed (it takes ~10 here).
RANGE_KILL_ITERATION = 3


def test_range_placement_on_the_cluster_equals_driver_placement_though_a_worker_is_lost(cluster, tmp_path):
    """One global ranking (2,400 rows, 4 graded levels, no query ids; 4 blocks over both
    workers): BMRM and TRON in range placement, whose final stage opens the blocks after a
    shuffle, give driver placement's models, bit for bit for BMRM (counts only) and to the last
    bits for TRON (range_placement.py's docstring), though worker 2 is killed (``kill -9``: its
    executor, cached references, shuffle outputs and scores files are gone) during the range
    BMRM fit and restarted."""
    from sparkrank.data.block import RankingData
    from sparkrank.io.files import write_parquet

    rng = np.random.default_rng(11)
    X = rng.normal(size=(2400, 6))
    labels = np.digitize(X @ rng.normal(size=6) + rng.normal(scale=0.5, size=2400), [-1.0, 0.0, 1.0])
    data = tmp_path / "global.parquet"
    write_parquet(data, RankingData.from_arrays(X, labels.astype(np.float64), None, layout="dense"))
    script = tmp_path / "range_fits.py"
    script.write_text(_RANGE_FITS)
    job = Job(cluster, "", command=[str(VENV_BIN / "spark-submit"), "--master", cluster.master_url, str(script),
                                    str(data)])
    try:
        job.wait_for_iteration(RANGE_KILL_ITERATION)
        cluster.kill("worker-2")
        cluster.restart_worker(2)
        rc = job.finish()
    finally:
        if job.proc.poll() is None:
            job.kill_driver()
        if cluster.alive_workers() < cluster.n_workers:
            cluster.restart_worker(2)
    assert rc == 0 and "@@" in job.log, job.log[-8000:]
    assert "spark range placement: 4 partitions, 2400 rows" in job.log, job.log[-8000:]
    out = json.loads(job.log[job.log.index("@@") + 2:].splitlines()[0])
    weights = {k: np.array([float.fromhex(w) for w in v[0]]) for k, v in out.items()}
    assert out["range/bmrm"][1] > RANGE_KILL_ITERATION  # the fit went on after the loss
    np.testing.assert_array_equal(weights["range/bmrm"], weights["driver/bmrm"])
    assert out["range/tron"][1] == out["driver/tron"][1]
    np.testing.assert_allclose(weights["range/tron"], weights["driver/tron"], rtol=1e-9)


# -- data lake: every job with ``file://`` URIs on a Hive-partitioned lake filtered by ``--where`` (issue 9)
WHERE = "day >= '2026-11-02'"
#: TRON's tolerance in the lake's tune job and its local twin: the refit equals the local fit at any
#: tolerance (the same iterations on both engines), and 1e-3 takes 3 iterations a fit instead of 5-6
LAKE_TOL = 1e-3


@pytest.fixture(scope="module")
def lake(cluster, tmp_path_factory):
    """A 3-day Hive-partitioned lake under ``root``, ``uri`` = ``file://root``, the rows the
    :data:`WHERE` filter keeps, and ``models/best.json`` and ``tune.json`` written there by
    ``jobs/tune.py`` (2 folds, C in {0.5, 1}, every fit from w = 0, so the refit at the best C
    is the same fit as a local train of the kept rows), in a run that loses worker 1's executor
    (``kill -9``) after the first fit's second iteration."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkrank.datasets import make_ranking_data

    root = tmp_path_factory.mktemp("lake-jobs")
    kept = []
    for day in (1, 2, 3):
        part, _ = make_ranking_data(600, 6, rows_per_group=20, n_levels=3, seed=10 + day)
        qid = np.repeat(part.qids + 1000 * day, part.groups.group_sizes)  # distinct groups per day
        X = part.X.toarray()
        (root / "lake" / f"day=2026-11-0{day}").mkdir(parents=True)
        pq.write_table(pa.table({"label": part.labels, "qid": qid, "features": [list(r) for r in X]}),
                       root / "lake" / f"day=2026-11-0{day}" / "part-0.parquet")
        if day >= 2:
            kept.append((X, part.labels, qid))
    uri = f"file://{root}"
    # the folds are views of one engine over the lake's rows (engines/spark_folds.py): an executor
    # killed in the first fit takes blocks of both, and the search must still end in the local fit
    job = Job(cluster, "tune.py", "--input", f"{uri}/lake", "--where", WHERE, "--folds", "2", "--C-grid", "0.5", "1",
              "--cold-start", "--partitions", "2", "--solver", "tron", "--tol", str(LAKE_TOL),
              "--model", f"{uri}/models/best.json", "--output-json", f"{uri}/tune.json")
    try:
        job.wait_for_iteration(2)
        _kill_an_executor_of(cluster, 1)
        rc = job.finish()
    finally:
        if job.proc.poll() is None:
            job.kill_driver()
    (root / "tune.log").write_text(job.log)
    assert rc == 0, f"the lake's tune job failed after a lost executor ({rc}):\n{job.log[-8000:]}"
    # the loss reached the job (its blocks and cached references on that executor went; the
    # engine's own recovery also shows when the loss took kernel state TRON still needed, i.e.
    # when it came during a fit's Hessian products rather than between two value passes)
    assert re.search(r"Lost executor \d+ on", job.log), "the tune job never noticed the lost executor"
    return root, uri, kept


def test_lake_tune_job_with_where_refits_the_kept_rows_like_local(lake):
    from sparkrank.data.block import RankingData
    from sparkrank.training import train

    root, _, kept = lake
    best_C = json.loads((root / "tune.json").read_text())["best_C"]
    assert best_C in (0.5, 1.0)
    local = train(RankingData.from_arrays(np.vstack([k[0] for k in kept]), np.concatenate([k[1] for k in kept]),
                                          np.concatenate([k[2] for k in kept])),
                  **{**SOLVER_KWARGS["tron"], "C": best_C, "tol": LAKE_TOL})
    np.testing.assert_allclose(_weights(root / "models" / "best.json"), local.weights, rtol=1e-9, atol=1e-12)


def test_lake_predict_job_partitions_by_day(cluster, lake):
    """(That an existing output is never replaced without ``--overwrite`` is decided on the driver
    before any work: ``test_outputs.py`` checks it for ``file://`` URIs without a cluster.)"""
    import pyarrow.parquet as pq

    root, L, _ = lake
    _submit(cluster, "predict.py", "--model", f"{L}/models/best.json", "--input", f"{L}/lake", "--where", WHERE,
            "--output", f"{L}/scores", "--partition-by", "day", "--rank")
    days = sorted(p.name for p in (root / "scores").iterdir() if p.name.startswith("day="))
    assert days == ["day=2026-11-02", "day=2026-11-03"]
    assert pq.read_table(root / "scores").num_rows == 1200


# -- sessions the user makes: the executors' Python set up on every path (issue 38 item 2) ----------
#: A driver script with two sessions of its own, as a notebook makes them (no spark-submit, no
#: get_session): the first while ``PYSPARK_PYTHON`` names a Python without sparkrank, where every
#: path into Spark must stop at once with the fix; the second plain, where the executors must get
#: this driver's interpreter and fit, transform and evaluate.
_OWN_SESSIONS = """
import json, os, sys, time
from pyspark.sql import SparkSession
from sparkrank.io.sources import open_source
from sparkrank.ml import LinearRanker, RankingEvaluator
from sparkrank.io.spark.errors import ClusterError

master, data = sys.argv[1], sys.argv[2]
out = {}
ranker = LinearRanker(groupCol="qid", solver="tron", C=1.0, tol=1e-6)
spark = SparkSession.builder.master(master).appName("without-sparkrank").getOrCreate()
df = spark.read.parquet(data)
for name, call in (("open_source", lambda: open_source(data, spark=spark)), ("fit", lambda: ranker.fit(df))):
    start = time.monotonic()
    try:
        call()
        out[name] = None
    except ClusterError as exc:
        out[name] = [str(exc), time.monotonic() - start]
spark.stop()
del os.environ["PYSPARK_PYTHON"]
spark = SparkSession.builder.master(master).appName("plain").getOrCreate()
df = spark.read.parquet(data)
model = ranker.fit(df)
scored = model.transform(df)
out["python"] = spark.sparkContext.pythonExec
out["weights"] = [float(w).hex() for w in model.rankingModel.weights]
out["ndcg"] = RankingEvaluator(metricName="ndcg@10", groupCol="qid").evaluate(scored)
print("@@" + json.dumps(out))
"""


def test_sessions_made_by_the_user_get_the_executors_python_on_every_path(cluster, data, reference):
    """A driver outside spark-submit and get_session, its venv not on ``PATH``, on workers whose
    ``python3`` lacks sparkrank.  With ``PYSPARK_PYTHON`` naming such a Python, ``open_source``
    and ``LinearRanker.fit`` each raise one ClusterError within seconds naming the interpreter,
    the fix and a documentation section that exists (it was 4 attempts of every task, 183 log
    lines and ``No module named 'sparkrank'``); with a plain session the executors run this
    driver's interpreter and the fit is the local engine's model bit for bit."""
    env = {**_submit_env(cluster), "PATH": "/usr/local/bin:/usr/bin:/bin", "PYSPARK_PYTHON": "/usr/bin/python3"}
    env.pop("VIRTUAL_ENV", None)
    r = subprocess.run([sys.executable, "-c", _OWN_SESSIONS, cluster.master_url, str(data / "train.parquet")],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT)
    assert r.returncode == 0 and "@@" in r.stdout, r.stderr[-6000:]
    out = json.loads(r.stdout[r.stdout.index("@@") + 2:])
    for path in ("open_source", "fit"):
        assert out[path] is not None, f"{path} ran on executors without sparkrank"
        message, seconds = out[path]
        print(f"{path}: failed in {seconds:.1f}s")
        assert message.startswith("the executors' Python /usr/bin/python3 cannot import ") and \
            "sparkrank (ModuleNotFoundError" in message and f"spark.pyspark.python={sys.executable}" in message, message
        assert "(see docs/spark.md#running-on-a-cluster)" in message
        assert seconds < 60, f"{path} took {seconds:.0f}s to fail"
    assert not re.search(r"Lost task|failed \d+ times|Traceback", r.stderr), r.stderr[-6000:]
    assert out["python"] == sys.executable
    np.testing.assert_array_equal(np.array([float.fromhex(w) for w in out["weights"]]), reference("tron"))
    assert 0.5 < out["ndcg"] <= 1.0


# -- the master lost during a run (issue 38 item 3) -----------------------------------------------

def test_a_master_lost_during_a_fit_does_not_stop_it(tmp_path, data, reference):
    """A cluster of its own (master + one worker: the shared one keeps its master) whose master is
    killed (``kill -9``) after the README's train job's first iteration: the application keeps
    the executor it holds, so the job ends normally with the undisturbed model bit for bit, exit
    0, no traceback (docs/failures.md, 'Starting Spark'); the lost master is one warning, not an
    error."""
    from cluster import CLUSTER_SPARK_DEFAULTS, FAST_JVM

    model = tmp_path / "m.json"
    with StandaloneCluster(tmp_path / "own", n_workers=1, cores=2, memory="1g", python=None,
                           daemon_java_opts=FAST_JVM, spark_defaults=CLUSTER_SPARK_DEFAULTS) as own:
        job = Job(own, "train.py", "--input", str(data / "train.parquet"), "--model", str(model), *TRON)
        try:
            job.wait_for_iteration(1)
            own.kill("master")
            rc = job.finish()
        finally:
            job.kill_driver()
    assert rc == 0, job.log[-6000:]
    assert "Traceback" not in job.log and "sparkrank train: error" not in job.log, job.log[-6000:]
    np.testing.assert_array_equal(_weights(model), reference("tron"))


# -- an executor out of memory (issue 38 item 3) ----------------------------------------------------

def test_an_executor_out_of_memory_is_one_line_naming_spark_executor_memory(cluster, data, tmp_path):
    """``sparkrank train --master`` on SVMlight text with one 200 MB line, executors of 512 MB:
    the executor reading that line runs out of heap for real (its JVM then exits with code 52) and
    the command prints one line, exit 2, naming the executor's JVM, the stage and
    ``spark.executor.memory`` with its value -- nothing else on stderr (Spark's "Lost executor"
    line included), no traceback, no model written.  ``spark.task.maxFailures=1`` keeps it to one
    executor's death (each attempt would kill one)."""
    huge = tmp_path / "huge.txt"
    lines = (data / "test.txt").read_text().splitlines()[:300]
    huge.write_text("\n".join([*lines[:150], "x" * (200 << 20), *lines[150:]]) + "\n")
    model = tmp_path / "m.json"
    cmd = [str(VENV_BIN / "sparkrank"), "train", "--input", str(huge), "--model", str(model),
           "--master", cluster.master_url, "--conf", "spark.executor.memory=512m",
           "--conf", "spark.task.maxFailures=1", "-q"]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=tmp_path, env=_submit_env(cluster), capture_output=True, text=True,
                           timeout=SUBMIT_TIMEOUT)
    finally:
        huge.unlink()  # 200 MB
    print(f"failed in {time.monotonic() - t0:.1f}s")
    banner = "WARNING: Using incubator modules: jdk.incubator.vector"
    said = [ln for ln in r.stderr.splitlines() if ln.strip() and ln != banner]
    assert r.returncode == 2 and len(said) == 1, r.stderr[-6000:]
    assert re.fullmatch(r"sparkrank train: error: a Spark executor's JVM ran out of memory \((exit code 52: )?"
                        r"java\.lang\.OutOfMemoryError[^)]*\) in a task of stage [\d.]+; raise spark\.executor\.memory "
                        r"\(now 512m\) or give more --partitions so each task holds fewer rows", said[0]), said
    assert "Traceback" not in r.stdout + r.stderr and not model.exists()
