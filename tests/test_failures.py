"""Every failure is one line naming the file or the setting, with a meaningful exit status, and
leaves nothing partial (issue 36 item 4): signals, a full disk, memory, a lost worker, a
malformed model file, a read-only destination, inputs without rows.

Where a clean stderr is the point, the command runs in a subprocess and the test reads all of
its stderr: a real signal sent to a real process, a real full file system (a small tmpfs,
mounted here as root; skipped where mounting is not allowed), a real address-space limit, a
real Python worker killed by ``SIGKILL``, a real ``OutOfMemoryError`` of the driver's JVM.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkrank.cli import main
from sparkrank.io.spark.failures import job_failure_message

DATA = Path(__file__).parent / "data" / "spark_failures"
#: The JVM's own first line (it starts with the vector module): not sparkrank's to remove.
JVM_BANNER = "WARNING: Using incubator modules: jdk.incubator.vector"
# sparkrank's log lines ("17:06:51 sparkrank.bmrm iter 2 ...")
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d sparkrank[\w.]* ")


def _letor(path: Path, rows: int = 9600, features: int = 46) -> Path:
    """LETOR-like SVMlight rows (MQ2008's shape): 3 label levels, groups of 20, dense features."""
    import numpy as np

    rng = np.random.default_rng(36)
    X = rng.random((rows, features))
    labels = rng.integers(0, 3, rows)
    with open(path, "w") as f:
        for i in range(rows):
            values = " ".join(f"{j + 1}:{X[i, j]:.6f}" for j in range(features))
            f.write(f"{labels[i]} qid:{i // 20 + 1} {values}\n")
    return path


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    return _letor(tmp_path_factory.mktemp("letor") / "train.txt")


def _env() -> dict:
    java = "/usr/lib/jvm/java-17-openjdk-amd64"
    extra = {"JAVA_HOME": java} if os.path.isdir(java) and "JAVA_HOME" not in os.environ else {}
    return {**os.environ, **extra, "PYSPARK_PYTHON": sys.executable}


def _foreign_lines(stderr: str) -> list[str]:
    """What stderr holds besides sparkrank's log lines and the JVM's banner."""
    return [ln for ln in stderr.splitlines() if ln.strip() and not LOG_LINE.match(ln) and ln != JVM_BANNER]


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2:].split()[1]) == pid:
                found.append(int(name))
    return found


def _descendants(pid: int) -> list[int]:
    return [d for c in _children(pid) for d in (c, *_descendants(c))]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2] != "Z"


# ----------------------------------------------------------------------------- signals

def _train_until_iterating(tmp_path: Path, data: Path, engine: str) -> tuple[subprocess.Popen, list[str]]:
    """``sparkrank train`` with a BMRM that runs for minutes, in its own process group (as a
    shell's job), read until its solver logs an iteration."""
    model = tmp_path / "model.json"
    args = [sys.executable, "-m", "sparkrank", "train", "--engine", engine, "--input", str(data),
            "--model", str(model), "--solver", "bmrm", "--tol", "1e-12", "--max-iter", "1000000"]
    if engine == "spark":
        args += ["--master", "local[2]"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            start_new_session=True)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if " iter " in line:
            return proc, lines
    proc.wait()
    pytest.fail("the fit ended before its first iteration:\n" + "".join(lines))


@pytest.mark.parametrize("engine, signum, to_group", [
    ("local", signal.SIGINT, True), ("local", signal.SIGTERM, False),
    ("spark", signal.SIGINT, True), ("spark", signal.SIGTERM, False)],
    ids=["local-SIGINT-group", "local-SIGTERM", "spark-SIGINT-group", "spark-SIGTERM"])
def test_a_signal_mid_fit_ends_the_command_in_one_line(tmp_path, letor, engine, signum, to_group):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it: the JVM and the Python
    workers get it too) or SIGTERM to the command alone, while the solver iterates: the process
    ends by that signal (a shell's $? is 130 / 143), its one line says so, no traceback and no
    py4j "reentrant call" errors, no model file, no temporary file, and no process of the run
    (JVM, Python daemon and workers) outlives it."""
    proc, lines = _train_until_iterating(tmp_path, letor, engine)
    time.sleep(0.3)  # well inside the fit: on Spark, a job is running or about to
    helpers = _descendants(proc.pid)
    if to_group:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    stderr = "".join(lines) + err
    assert proc.returncode == -signum, stderr[-3000:]
    assert _foreign_lines(stderr) == [f"sparkrank train: interrupted by {signal.Signals(signum).name}"], stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing written, nothing left behind"
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in helpers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in helpers if _alive(p)], "the session's processes end with the command"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_spark_block_build_is_one_line_and_leaves_no_blocks(tmp_path, letor, signum):
    """While the executors build the blocks (a shuffle by qid): one line, the signal's status, and
    no block directory left in the executors' local directory (the engine was never returned, so
    only the exit hook can remove it), nor the cancelled tasks' JVM errors on stderr."""
    local = tmp_path / "local"
    local.mkdir()
    args = [sys.executable, "-m", "sparkrank", "train", "--engine", "spark", "--master", "local[2]",
            "--input", str(letor), "--model", str(tmp_path / "model.json"), "--partitions", "4"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**_env(), "SPARK_LOCAL_DIRS": str(local)})
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "sparkrank.spark building " in line:
            break
    blocks = list(local.glob("sparkrank-blocks-*"))
    deadline = time.monotonic() + 60
    while not list(local.glob("sparkrank-blocks-*/*/*/part-*")) and time.monotonic() < deadline:
        time.sleep(0.01)  # the first block's files are being written
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    stderr = "".join(lines) + err
    assert proc.returncode == -signum, stderr[-3000:]
    assert _foreign_lines(stderr) == [f"sparkrank train: interrupted by {signal.Signals(signum).name}"], stderr[-3000:]
    assert blocks and [list(b.iterdir()) for b in blocks] == [[]], "the application's blocks are removed"
    assert not (tmp_path / "model.json").exists()


def test_sigterm_during_a_local_write_leaves_no_temporary_file(tmp_path, letor):
    """``convert`` writes CSV through a temporary file: SIGTERM while it is being written (it
    used to kill the process on the spot) removes it; no output appears."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out.csv"
    proc = subprocess.Popen([sys.executable, "-m", "sparkrank", "convert", "--input", str(letor),
                             "--output", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**_env(), "TMPDIR": str(scratch)})
    deadline = time.monotonic() + 120
    while not any(scratch.glob("*.sparkrank.tmp")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    assert _foreign_lines(err) == ["sparkrank convert: interrupted by SIGTERM"], err
    assert list(scratch.iterdir()) == [] and not out.exists()


# ----------------------------------------------------------------------------- a full disk, a read-only one

@contextlib.contextmanager
def _tmpfs(directory: Path, options: str):
    """A tmpfs mounted at ``directory`` (root only: skipped where mounting is not allowed)."""
    directory.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def _fill(directory: Path) -> None:
    """Fill the file system of ``directory`` to its last byte."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):  # ENOSPC: full
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


def test_a_full_disk_names_the_file_and_leaves_nothing_on_the_local_engine(tmp_path, letor, capsys):
    """ENOSPC while writing a model, scores or a converted file: ``cannot write PATH: No space
    left on device`` (it named no file), exit 2, and no file or temporary file left."""
    data = letor
    model = tmp_path / "m.json"
    assert main(["train", "--input", str(data), "--model", str(model), "-q"]) == 0
    with _tmpfs(tmp_path / "full", "size=64k") as full:
        _fill(full)
        commands = {full / "m.json": ["train", "--input", "sample:train", "--model"],
                    full / "scores.txt": ["predict", "--model", str(model), "--input", str(data), "--output"],
                    full / "c.parquet": ["convert", "--input", str(data), "--output"],
                    full / "c.csv": ["convert", "--input", str(data), "--output"]}
        for target, command in commands.items():
            capsys.readouterr()
            assert main([*command, str(target), "-q"]) == 2
            err = capsys.readouterr().err
            assert err.splitlines() == [f"sparkrank {command[0]}: error: cannot write {target}: No space left on "
                                        "device"], err
        assert sorted(p.name for p in full.iterdir()) == ["filler"]


def test_a_full_disk_names_the_file_and_leaves_nothing_on_spark(spark, tmp_path, letor, capsys):
    """ENOSPC on Spark's predict and convert (a py4j traceback and an empty directory once): one
    line naming the output, exit 2, and nothing left but what filled the disk: no output
    directory, no probe file, no Hadoop ``.crc``."""
    model = tmp_path / "m.json"
    assert main(["train", "--input", str(letor), "--model", str(model), "-q"]) == 0
    with _tmpfs(tmp_path / "full", "size=64k") as full:
        _fill(full)
        outputs = {f"file://{full}/scores.txt": "predict", f"file://{full}/scores.parquet": "predict",
                   f"{full}/scores": "predict", f"file://{full}/c.parquet": "convert"}
        for target, command in outputs.items():
            capsys.readouterr()
            args = ["--model", str(model)] if command == "predict" else []
            rc = main([command, "--engine", "spark", *args, "--input", str(letor), "--output", target, "-q"])
            err = capsys.readouterr().err
            assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (target, err)
            assert err.startswith(f"sparkrank {command}: error: cannot write {target}: ") and \
                "No space left on device" in err, (target, err)
            assert sorted(p.name for p in full.iterdir()) == ["filler"], target


def test_a_read_only_file_uri_destination_says_so_on_both_engines(spark, tmp_path, capsys):
    """A ``file:///`` model on a read-only file system said ``does not exist`` on Spark (Hadoop's
    FileNotFoundException for a refused create): now both engines name the directory and why."""
    with _tmpfs(tmp_path / "ro", "ro,size=64k") as ro:
        for engine in ("local", "spark"):
            capsys.readouterr()
            rc = main(["train", "--engine", engine, "--input", "sample:train", "--model", f"file://{ro}/m.json", "-q"])
            err = capsys.readouterr().err
            assert rc == 2 and err.splitlines() == [
                f"sparkrank train: error: cannot write file://{ro}/m.json: file://{ro} is not writable: "
                "Read-only file system"], (engine, err)


# ----------------------------------------------------------------------------- the Spark engine in one process

# Runs ``cli.main`` on each scenario in turn in one process (one Spark session, 512 MB of driver
# heap for the last), marking where each begins and its status on stderr.  A scenario with
# "kill" has a thread SIGKILL the first Python worker it finds running a task.
_SCENARIOS = """
import json, os, signal, sys, threading, time
from sparkrank import cli


def kill_a_busy_worker(done):
    from pyspark import SparkContext
    while not done.is_set():
        gateway = SparkContext._gateway
        jvm = getattr(getattr(gateway, "proc", None), "pid", None)
        for daemon in (children(jvm) if jvm else []):
            for worker in children(daemon):
                if state(worker) == "R":
                    os.kill(worker, signal.SIGKILL)
                    return
        time.sleep(0.002)


def children(pid):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = open(f"/proc/{name}/stat").read()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2:].split()[1]) == pid:
                out.append(int(name))
    return out


def state(pid):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return ""
    return stat[stat.rfind(")") + 2]


for name, argv, kill in json.loads(sys.argv[1]):
    print("@@", name, file=sys.stderr, flush=True)
    done = threading.Event()
    if kill:
        threading.Thread(target=kill_a_busy_worker, args=(done,), daemon=True).start()
    status = cli.main(argv)
    done.set()
    print("@@ status", status, file=sys.stderr, flush=True)
"""


def _run_scenarios(scenarios: list) -> dict[str, tuple[int, list[str]]]:
    """``{name: (status, the lines of stderr that are not log lines)}`` of each scenario, and
    the lines after the last (the process's exit) under ``"exit"``."""
    proc = subprocess.run([sys.executable, "-c", _SCENARIOS, json.dumps(scenarios)], capture_output=True,
                          text=True, env=_env(), timeout=900)
    assert proc.returncode == 0, proc.stderr[:4000] + "\n[...]\n" + proc.stderr[-3000:]  # the cause is at the top
    out: dict[str, tuple[int, list[str]]] = {}
    name, status, lines = None, None, []
    for line in proc.stderr.splitlines():
        if line.startswith("@@ status "):
            status = int(line.split()[-1])
        elif line.startswith("@@ "):
            if name is not None:
                out[name] = (status, _foreign_lines("\n".join(lines)))
            name, status, lines = line[3:], None, []
        else:
            lines.append(line)
    out[name] = (status, _foreign_lines("\n".join(lines)))
    return out


def _garbage_line_input(tmp_path: Path, data: Path, size: int) -> tuple[Path, int]:
    """The first 3000 rows of ``data`` with row 1501 replaced by ``size`` bytes of garbage."""
    lines = data.read_text().splitlines()[:3000]
    lines[1500] = "x" * size
    path = tmp_path / f"garbage-{size}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, 1501


def test_spark_failures_are_one_line_each(tmp_path, letor):
    """On ``local[2]``, each in one line and exit 2, with nothing else on stderr (no py4j or JVM
    trace, no Python daemon ``BrokenPipeError``):

    * a full disk under ``predict`` and ``convert``: the output named, no directory left (it
      left an empty one);
    * a 10 MB garbage line: the data error alone (the daemon's ``BrokenPipeError`` came first);
    * a Python worker killed mid-task (``SIGKILL``, as the kernel's OOM killer does; on 60k
      rows, whose tasks run long enough to be caught running on a loaded machine);
    * a 200 MB line that the driver's 512 MB JVM cannot hold: ``OutOfMemoryError`` in a task,
      the JVM exits with code 52; the line names the JVM and ``--driver-memory``.
    """
    data = letor
    model = tmp_path / "m.json"
    assert main(["train", "--input", str(data), "--model", str(model), "-q"]) == 0
    garbage, line = _garbage_line_input(tmp_path, data, 10 << 20)
    huge, _ = _garbage_line_input(tmp_path, data, 200 << 20)
    longer = _letor(tmp_path / "longer.txt", rows=60_000)
    spark = ["--engine", "spark", "--master", "local[2]", "--driver-memory", "512m", "-q"]
    with _tmpfs(tmp_path / "small", "size=64k") as small:
        results = _run_scenarios([
            ["predict", ["predict", "--model", str(model), "--input", str(data), "--output", str(small / "scores"),
                         *spark], False],
            ["convert", ["convert", "--input", str(data), "--output", str(small / "c.parquet"), *spark], False],
            ["garbage", ["train", "--input", str(garbage), "--model", str(tmp_path / "g.json"), *spark], False],
            ["killed", ["train", "--input", str(longer), "--model", str(tmp_path / "k.json"), *spark], True],
            ["oom", ["train", "--input", str(huge), "--model", str(tmp_path / "o.json"), *spark], False],
        ])
        left = sorted(p.name for p in small.iterdir())
    assert results["predict"] == (2, [f"sparkrank predict: error: cannot write {small}/scores: No space left on "
                                      "device"]), results
    assert results["convert"] == (2, [f"sparkrank convert: error: cannot write {small}/c.parquet: No space left on "
                                      "device"]), results
    assert left == []
    assert results["garbage"] == (2, [f"sparkrank train: error: {garbage}: malformed label '{'x' * 60}...' on line "
                                      f"{line}"]), results
    status, killed = results["killed"]
    assert status == 2 and len(killed) == 1, results
    assert re.fullmatch(r"sparkrank train: error: a Spark Python worker died in a task of stage [\d.]+ \(killed, "
                        r"e\.g\. by the kernel's out-of-memory killer, or crashed\); a local master does not retry "
                        r"failed tasks: run it again, or use --master 'local\[N,R\]' to retry each task R times",
                        killed[0])
    assert results["oom"] == (2, [
        "sparkrank train: error: the Spark driver's JVM ran out of memory (exit code 52: java.lang.OutOfMemoryError) "
        "(a local master runs the executors' tasks in it too); raise --driver-memory (spark.driver.memory, now 512m) "
        "or give more --partitions so each task holds fewer rows"]), results
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "k.json").exists()


# ----------------------------------------------------------------------------- Spark's failure texts

def test_an_executor_oom_on_a_cluster_names_the_executor_setting():
    """Captured from a standalone master + worker (``spark.executor.memory=512m``,
    ``spark.task.maxFailures=2``): the executor died of an OutOfMemoryError (exit code 52)."""
    message = job_failure_message((DATA / "cluster_executor_oom.txt").read_text(),
                                  {"master": "spark://127.0.0.1:17377", "executor_memory": "512m"})
    assert message == ("a Spark executor's JVM ran out of memory (exit code 52: java.lang.OutOfMemoryError) in a task "
                       "of stage 1.0; raise spark.executor.memory (now 512m) or give more --partitions so each task "
                       "holds fewer rows")


def test_an_oom_in_the_driver_thread_names_the_driver_setting():
    """Captured from ``local[1]`` with 512 MB of driver heap: Spark's optimizer ran out of memory
    in the driver's own thread (the JVM lives on; the call fails)."""
    message = job_failure_message((DATA / "driver_oom.txt").read_text(),
                                  {"master": "local[1]", "driver_memory": "512m"})
    assert message == ("the Spark driver's JVM ran out of memory (java.lang.OutOfMemoryError: Java heap space) (a "
                       "local master runs the executors' tasks in it too); raise --driver-memory (spark.driver.memory, "
                       "now 512m) or give more --partitions so each task holds fewer rows")


@pytest.mark.parametrize("exit_code", [52, None])
def test_a_task_oom_in_a_local_driver_is_one_line_whichever_news_comes_first(monkeypatch, exit_code):
    """A local master's JVM exits with code 52 on an ``OutOfMemoryError`` in a task, and under
    load the driver may hear of the failed job before it sees the JVM gone: the same line as for
    the dead JVM (exit code 52).  A JVM that does not exit (``None``, e.g. launched by
    spark-submit): the task's own ``OutOfMemoryError`` text."""
    from sparkrank.io.spark import failures

    monkeypatch.setattr(failures, "_SETTINGS", {"master": "local[2]", "driver_memory": "512m"})
    monkeypatch.setattr(failures, "_driver_jvm_exit_code", lambda: exit_code)
    job = RuntimeError("org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 1.0 "
                       "failed 1 times, most recent failure: Lost task 0.0 in stage 1.0 (TID 1) (localhost executor "
                       "driver): java.lang.OutOfMemoryError: Java heap space\n\tat java.base/java.util.Arrays")
    what = ("exit code 52: java.lang.OutOfMemoryError" if exit_code == 52
            else "java.lang.OutOfMemoryError: Java heap space")
    assert failures.spark_failure_message(job) == (
        f"the Spark driver's JVM ran out of memory ({what}) (a local master runs the executors' tasks in it too); "
        "raise --driver-memory (spark.driver.memory, now 512m) or give more --partitions so each task holds fewer "
        "rows")


def test_a_memory_error_in_a_python_worker_names_the_workers():
    """Captured from a standalone worker: a task's Python raised MemoryError."""
    text = "PythonException: " + (DATA / "python_worker_memory_error.txt").read_text()
    assert job_failure_message(text, {"master": "spark://h:7077"}) == (
        "a Spark Python worker ran out of memory (MemoryError) in a task; give more --partitions so each task "
        "holds fewer rows, or more memory to the executors' hosts")
    # a session that limits the workers: that setting is the one to raise
    assert job_failure_message(text, {"master": "spark://h:7077", "pyspark_memory": "256m"}) == (
        "a Spark Python worker ran out of memory (MemoryError) in a task; raise spark.executor.pyspark.memory (now "
        "256m, each Python worker's limit) or give more --partitions so each task holds fewer rows")


# ----------------------------------------------------------------------------- memory in this process

def _limit_address_space(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


_TRAIN_WITHOUT_MEMORY_CHECK = """
import sys
import sparkrank.data.memory as memory
memory.check_local = lambda *a, **k: None  # past the estimate: the allocation itself fails
from sparkrank.cli import run
run(sys.argv[1:])
"""


def test_a_local_memory_error_is_one_line_with_what_to_change(tmp_path):
    """A weight vector of 10⁹ features under a 3 GiB address-space limit (``ulimit -v``): the
    memory model refuses it before reading, naming the limit; and where an allocation fails all
    the same (the estimate bypassed), numpy's MemoryError becomes one line naming the process,
    its limit and what to change."""
    args = ["train", "--input", "sample:train", "--model", str(tmp_path / "m.json"), "--n-features", "1000000000",
            "--max-features", "1000000000", "-q"]
    proc = subprocess.run([sys.executable, "-m", "sparkrank", *args], capture_output=True, text=True, env=_env(),
                          timeout=300, preexec_fn=_limit_address_space(3 << 30))
    assert proc.returncode == 2, proc.stderr
    [line] = _foreign_lines(proc.stderr)
    assert line.startswith("sparkrank train: error: ") and "sample/train.svmlight: the in-process engine needs at " \
        "least ~" in line and "(the address-space limit (ulimit -v) less what is mapped, 480 MiB kept for numba's " \
        "compiler included); use ulimit -v " in line and " or more, --dtype float32" in line
    proc = subprocess.run([sys.executable, "-c", _TRAIN_WITHOUT_MEMORY_CHECK, *args], capture_output=True, text=True,
                          env=_env(), timeout=300, preexec_fn=_limit_address_space(3 << 30))
    assert proc.returncode == 2, proc.stderr
    assert _foreign_lines(proc.stderr) == [
        "sparkrank train: error: this process ran out of memory (its address-space limit, ulimit -v, is 3.00 GiB): "
        "Unable to allocate 7.45 GiB for an array with shape (1000000000,) and data type float64; use --dtype "
        "float32, fewer rows or features, or --engine spark to spread the rows over executors"], proc.stderr
    assert not (tmp_path / "m.json").exists()


# ----------------------------------------------------------------------------- model files of any shape

MALFORMED_MODELS = {
    "deeply nested": ("[" * 100000 + "]" * 100000, "cannot read model file {path}: its JSON is nested too deeply"),
    "nested weights": ('{"weights": ' + "[" * 5000 + "]" * 5000 + ', "solver": "tron", "C": 1}',
                       "cannot read model file {path}: its JSON is nested too deeply"),
    "truncated": ('{"weights": [1, 2], "solver": "tr', "cannot read model file {path}: Unterminated string starting "
                                                       "at: line 1 column 31 (char 30)"),
    "a string": ('"weights"', "model file {path} holds a JSON str, not an object with weights"),
    "a list": ("[1, 2]", "model file {path} holds a JSON list, not an object with weights"),
    "solver a number": ('{"weights": [1, 2], "solver": 5, "C": 1}', "{path}: 'solver' must be a string, got 5"),
    "C a string": ('{"weights": [1, 2], "solver": "tron", "C": "x"}', "{path}: 'C' must be a number, got \"x\""),
    "C a list": ('{"weights": [1, 2], "solver": "tron", "C": [1]}', "{path}: 'C' must be a number, got [1]"),
    "C too large": ('{"weights": [1, 2], "solver": "tron", "C": 1' + "0" * 400 + "}",
                    "model file {path} is malformed (OverflowError: int too large to convert to float)"),
    "options a list": ('{"weights": [1, 2], "solver": "tron", "C": 1, "options": [1]}',
                       "{path}: 'options' must be an object or null, got [1]"),
    "summary a list": ('{"weights": [1, 2], "solver": "tron", "C": 1, "summary": [1]}',
                       "{path}: 'summary' must be an object or null, got [1]"),
    "feature_cols a number": ('{"weights": [1, 2], "solver": "tron", "C": 1, "summary": {"feature_cols": 5}}',
                              "{path}: summary 'feature_cols' must be a list or null, got 5"),
    "history of numbers": ('{"weights": [1, 2], "solver": "tron", "C": 1, "summary": {"history": [1]}}',
                           "{path}: summary 'history' must be a list of objects (one per iteration)"),
    "history without iter": ('{"weights": [1, 2], "solver": "tron", "C": 1, "summary": {"history": [{"x": 1}]}}',
                             "model file {path} has a malformed training summary (KeyError: 'iter')"),
    "stopping value text": ('{"weights": [1, 2], "solver": "tron", "C": 1, "summary": {"converged": true, '
                            '"stopping_measure": "gap", "stopping_value": "abc"}}',
                            "model file {path} has a malformed training summary (ValueError: could not convert "
                            "string to float: 'abc')"),
    "a 5000-digit weight": ('{"weights": [' + "9" * 5000 + '], "solver": "tron", "C": 1}',
                            "cannot read model file {path}: Exceeds the limit (4300 digits) for integer string "
                            "conversion: value has 5000 digits; use sys.set_int_max_str_digits() to increase the "
                            "limit"),
}


@pytest.mark.parametrize("case", list(MALFORMED_MODELS))
def test_a_malformed_model_file_is_one_line_naming_it(tmp_path, capsys, case):
    """Any shape of a damaged or hand-edited model file: one line naming the file, exit 2 (a deep
    nesting was a RecursionError, wrong types TypeError/AttributeError tracebacks)."""
    text, expected = MALFORMED_MODELS[case]
    path = tmp_path / "model.json"
    path.write_text(text)
    rc = main(["predict", "--model", str(path), "--input", "sample:test", "--output", str(tmp_path / "s.txt"), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.splitlines() == [f"sparkrank predict: error: {expected.format(path=path)}"], err
    assert not (tmp_path / "s.txt").exists()


# ----------------------------------------------------------------------------- inputs without rows

def test_inputs_without_rows_name_the_input(spark, tmp_path, letor, capsys):
    """``train`` on rows a --where leaves empty, and ``tune`` on an empty input, name it (as
    ``evaluate`` does) on both engines."""
    data = letor
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for engine in ("local", "spark"):
        capsys.readouterr()
        rc = main(["train", "--engine", engine, "--input", str(data), "--where", "qid < 0", "--model",
                   str(tmp_path / "m.json"), "-q"])
        err = capsys.readouterr().err
        assert rc == 2 and err.splitlines() == [f"sparkrank train: error: {data} (--where 'qid < 0'): no preference "
                                                "pairs: the input has no data rows"], (engine, err)
        rc = main(["tune", "--engine", engine, "--input", str(empty), "--valid", str(data), "-q"])
        err = capsys.readouterr().err
        assert rc == 2 and err.splitlines() == [f"sparkrank tune: error: --input {empty}: no preference pairs: the "
                                                "input has no data rows"], (engine, err)


def test_the_text_of_an_error_whose_jvm_has_died_is_still_had():
    """A ``Py4JJavaError`` fetches its text from the JVM; once that JVM has exited (exit 52 after
    an ``OutOfMemoryError``) ``str()`` raises a network error. The failure's text is then its own
    message and the network error's, which say that the JVM is gone, never a second traceback."""
    from py4j.protocol import Py4JNetworkError

    from sparkrank.io.spark.errors import data_error_in, exception_text

    class JavaErrorOfADeadJvm(Exception):
        errmsg = "An error occurred while calling o123.collectToPython.\n"

        def __str__(self):
            raise Py4JNetworkError("Error while sending or receiving")

    text = exception_text(JavaErrorOfADeadJvm())
    assert text.startswith("An error occurred while calling o123.collectToPython.")
    assert text.endswith("Py4JNetworkError: Error while sending or receiving")
    assert data_error_in(JavaErrorOfADeadJvm()) is None
    assert exception_text(ValueError("plain")) == "plain"


_SIGNAL_LOST_IN_DEL = """
import os, signal, sys, time
import pyspark  # loaded, as in a real command: the interruption's clean-up looks for a session
from sparkrank import failures


class SwallowsTheSignal:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler runs here; its exception is ignored
            pass


def command():
    SwallowsTheSignal()  # deleted at once, the signal delivered inside __del__
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.01)
    return 0  # the loop alone returns 0


print(failures.run_command("train", command))
"""


def test_a_signal_whose_exception_is_lost_is_delivered_again():
    """Python runs a signal handler wherever the main thread is; in a ``__del__`` the
    ``Interrupted`` it raises is "ignored" (printed, not raised). The command must still end,
    interrupted, not run on: the watcher delivers the signal again.  In a process of its own:
    an interrupted command stops the process's Spark session, which here is the test run's."""
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_LOST_IN_DEL], capture_output=True, text=True, env=_env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == [str(128 + signal.SIGINT)], proc.stderr[-3000:]
    assert "sparkrank train: interrupted by SIGINT" in proc.stderr
