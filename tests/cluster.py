"""A throw-away Spark standalone cluster (one master, N workers) from the pip-installed pyspark.

The pip package ships ``bin/spark-class`` but not ``sbin/start-master.sh``, so the daemons
are started directly in the foreground of child processes::

    spark-class org.apache.spark.deploy.master.Master --host H --port P --webui-port U
    spark-class org.apache.spark.deploy.worker.Worker --host H --cores 1 --memory 1g \
        --webui-port U --work-dir DIR spark://H:P

``spark-class`` execs ``java``, so each child's PID is the JVM's.  Every port is chosen
free at run time, everything binds to 127.0.0.1 (``SPARK_LOCAL_IP``), and :meth:`stop`
ends the processes by PID only (each runs in its own session, so executor JVMs that a
worker forked go with it).  ``docker/compose.yaml`` is the same topology in containers.

    with StandaloneCluster(tmp_path, n_workers=2) as cluster:
        subprocess.run([cluster.spark_submit, "--master", cluster.master_url, ...],
                       env={**os.environ, **cluster.submit_env})
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

DEFAULT_JAVA_HOME = Path("/usr/lib/jvm/java-17-openjdk-amd64")
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
# Short-lived JVMs on a small machine: C1 only and the serial collector start faster and leave the
# cores to the Python workers.
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: The test cluster's spark-submit settings (:attr:`StandaloneCluster.submit_env`): tuning for a small
#: machine (fast JVM flags, executor memory, loopback driver address), kept off the job command lines
#: so they stay as the README prints them.
CLUSTER_SPARK_DEFAULTS = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.executor.memory": "768m",
    "spark.executor.extraJavaOptions": FAST_JVM,
    "spark.driver.extraJavaOptions": FAST_JVM,
}
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class ClusterError(RuntimeError):
    """The cluster did not come up (the message carries the tail of the daemon logs)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (bind to port 0, read it back, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


#: ``LOW-HIGH``: the ports the clusters of a run may listen on (the daemons', the driver's and its
#: block managers'), for a machine shared with other runs; unset, any free port.
PORTS_VARIABLE = "SPARKRANK_CLUSTER_PORTS"


def port_span() -> range | None:
    """The ports of :data:`PORTS_VARIABLE` (``None``: unset)."""
    value = os.environ.get(PORTS_VARIABLE, "").strip()
    if not value:
        return None
    low, high = (int(v) for v in value.split("-"))
    return range(low, high + 1)


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct free ports (all sockets held open together so none repeats), the lowest
    free ones of :func:`port_span` when it is set."""
    span = port_span()
    if span is not None:
        found = []
        for port in span:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
            found.append(port)
            if len(found) == n:
                return found
        raise ClusterError(f"fewer than {n} free ports in {PORTS_VARIABLE}={os.environ[PORTS_VARIABLE]}")
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def java_home() -> str | None:
    """``$JAVA_HOME`` if it has ``bin/java``, else the Debian JDK 17 path, else the one on PATH."""
    env = os.environ.get("JAVA_HOME")
    if env and (Path(env) / "bin" / "java").exists():
        return env
    if (DEFAULT_JAVA_HOME / "bin" / "java").exists():
        return str(DEFAULT_JAVA_HOME)
    java = shutil.which("java")
    if java:
        return str(Path(java).resolve().parent.parent)
    return None


def spark_home() -> str:
    """``$SPARK_HOME`` if it has ``bin/spark-class``, else the pip-installed pyspark directory."""
    env = os.environ.get("SPARK_HOME")
    if env and (Path(env) / "bin" / "spark-class").exists():
        return env
    import pyspark

    return str(Path(pyspark.__file__).resolve().parent)


def _tail(path: Path, n: int = 40) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


class StandaloneCluster:
    """A Spark standalone master and ``n_workers`` workers on free local ports.

    Parameters
    ----------
    base_dir : path
        Logs (``master.log``, ``worker-N.log``), worker work dirs and an empty conf dir go here.
    n_workers, cores, memory :
        Workers and the resources each one offers.
    host : str
        Address everything binds to and advertises.
    python : str, optional
        Interpreter of the executors' Python workers (``PYSPARK_PYTHON`` of the daemons).
        ``None`` starts the daemons with a *plain* environment: ``PATH`` is only the system's,
        no ``PYSPARK_PYTHON``, ``PYTHONPATH`` or venv, so the executors run whatever Python
        the job asks for and nothing else (what a real cluster without the venv looks like).
    extra_env : dict, optional
        More environment for the daemons (and hence the executors they fork), e.g. PYTHONPATH.
    spark_defaults : dict, optional
        Settings of every ``spark-submit`` run with :attr:`submit_env` (cluster-side tuning
        that keeps the job command lines as printed), given to it as ``SPARK_SUBMIT_OPTS``
        (``-Dkey=value``; ``spark.driver.extraJavaOptions`` as the driver JVM's own options),
        not as ``spark-defaults.conf``: the conf directory stays empty, so the JVMs can use a
        class-data archive (``tests/jvm_archive.py``).
    timeout : float
        Seconds to wait for the master and for all workers to register.
    daemon_java_opts : str
        ``SPARK_DAEMON_JAVA_OPTS`` of the master and workers.
    conf_dir : path, optional
        ``SPARK_CONF_DIR`` of the daemons and submissions (default: an empty ``conf`` under
        ``base_dir``); it must stay empty for a class-data archive to be used.
    jvm_options : str
        More options for every JVM of the cluster: daemons, drivers and executors (e.g.
        :func:`jvm_archive.jvm_options`).
    """

    def __init__(
        self,
        base_dir: str | os.PathLike,
        *,
        n_workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        host: str = "127.0.0.1",
        python: str | None = sys.executable,
        extra_env: dict[str, str] | None = None,
        timeout: float = 90.0,
        daemon_java_opts: str = "",
        spark_defaults: dict[str, str] | None = None,
        conf_dir: str | os.PathLike | None = None,
        jvm_options: str = "",
    ):
        self.base_dir = Path(base_dir)
        self.n_workers = n_workers
        self.cores = cores
        self.memory = memory
        self.host = host
        self.python = python
        self.extra_env = dict(extra_env or {})
        self.timeout = timeout
        self.daemon_java_opts = daemon_java_opts
        self.spark_defaults = dict(spark_defaults or {})
        self.conf_dir = Path(conf_dir) if conf_dir is not None else self.base_dir / "conf"
        self.jvm_options = jvm_options
        self.spark_home = spark_home()
        self.java_home = java_home()
        self.master_port = self.ui_port = self.rest_port = None
        self.worker_ui_ports: list[int] = []
        self.worker_ports: list[int] = []
        self._procs: list[tuple[str, subprocess.Popen, Path]] = []
        self._logs: list = []

    # --- addresses -------------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        if self.master_port is None:
            raise ClusterError("cluster not started")
        return f"spark://{self.host}:{self.master_port}"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.ui_port}"

    @property
    def spark_submit(self) -> str:
        return str(Path(self.spark_home) / "bin" / "spark-submit")

    @property
    def spark_class(self) -> str:
        return str(Path(self.spark_home) / "bin" / "spark-class")

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p, _ in self._procs}

    def local_dir(self, worker: int) -> Path:
        """``SPARK_LOCAL_DIRS`` of worker ``worker`` (1-based): its applications' local files."""
        return self.base_dir / f"local-{worker}"

    @property
    def env(self) -> dict[str, str]:
        """Environment for the daemons and for ``spark-submit`` against this cluster."""
        if self.python is None:
            env = {k: os.environ[k] for k in ("HOME", "USER", "LANG", "TMPDIR") if k in os.environ}
            env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        else:
            env = dict(os.environ)
            env["PYSPARK_PYTHON"] = self.python
        if self.java_home:
            env["JAVA_HOME"] = self.java_home
        env.update(
            SPARK_HOME=self.spark_home,
            SPARK_CONF_DIR=str(self.conf_dir),  # empty: no stray spark-defaults / log4j from the host
            SPARK_LOCAL_IP=self.host,
            SPARK_LOCAL_HOSTNAME=self.host,
            # the pip package has no REST server worth having; keep it off port 6066
            SPARK_MASTER_OPTS=f"-Dspark.master.rest.enabled=false -Dspark.master.rest.port={self.rest_port or 0}",
        )
        daemon_opts = f"{self.daemon_java_opts} {self.jvm_options}".strip()
        if daemon_opts:
            env["SPARK_DAEMON_JAVA_OPTS"] = daemon_opts
        env.pop("PYSPARK_DRIVER_PYTHON", None)
        env.update(self.extra_env)
        return env

    @property
    def submit_env(self) -> dict[str, str]:
        """The ``SPARK_*`` and ``JAVA_HOME`` variables a ``spark-submit`` against this cluster
        needs: :attr:`env`'s, and :attr:`spark_defaults` (plus :attr:`jvm_options` for the
        driver and executor JVMs) as ``SPARK_SUBMIT_OPTS``."""
        env = {k: v for k, v in self.env.items() if k.startswith("SPARK_") or k == "JAVA_HOME"}
        env.pop("SPARK_DAEMON_JAVA_OPTS", None)
        settings = dict(self.spark_defaults)
        if port_span() is not None:  # the driver's ports too; its and the executors' block managers
            # take the first free one from spark.blockManager.port up (spark.port.maxRetries)
            driver_port, block_port = free_ports(2, self.host)
            settings.setdefault("spark.driver.port", str(driver_port))
            settings.setdefault("spark.blockManager.port", str(block_port))
        driver_opts = f"{settings.pop('spark.driver.extraJavaOptions', '')} {self.jvm_options}".strip()
        executor_opts = f"{settings.pop('spark.executor.extraJavaOptions', '')} {self.jvm_options}".strip()
        if executor_opts:
            settings["spark.executor.extraJavaOptions"] = executor_opts
        # spark-submit's launcher splits SPARK_SUBMIT_OPTS like a shell (double quotes group);
        # in client mode the driver is the spark-submit JVM, so its options go there as they are
        props = [f'"-D{k}={v}"' for k, v in settings.items()]
        env["SPARK_SUBMIT_OPTS"] = " ".join([driver_opts, *props]).strip()
        return env

    # --- state -----------------------------------------------------------------------------
    def state(self, timeout: float = 5.0) -> dict:
        """The master's JSON status (``aliveworkers``, ``workers``, ``activeapps``, ...)."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=timeout) as r:
            return json.loads(r.read().decode())

    def alive_workers(self) -> int:
        return int(self.state().get("aliveworkers", 0))

    # --- lifecycle -------------------------------------------------------------------------
    def _launch(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        log = self.base_dir / f"{name}.log"
        fh = open(log, "ab")
        self._logs.append(fh)
        proc = subprocess.Popen(
            [self.spark_class, *args], stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
            env=env or self.env, cwd=self.base_dir, start_new_session=True,
        )
        self._procs = [p for p in self._procs if p[0] != name] + [(name, proc, log)]

    def _launch_worker(self, i: int) -> None:
        work = self.base_dir / f"work-{i}"
        work.mkdir(exist_ok=True)
        self.local_dir(i).mkdir(exist_ok=True)
        self._launch(f"worker-{i}", [WORKER_CLASS, "--host", self.host, "--port", str(self.worker_ports[i - 1]),
                                     "--cores", str(self.cores),
                                     "--memory", self.memory, "--webui-port", str(self.worker_ui_ports[i - 1]),
                                     "--work-dir", str(work), self.master_url],
                     env={**self.env, "SPARK_LOCAL_DIRS": str(self.local_dir(i))})

    def executor_pids(self, worker: int) -> list[int]:
        """PIDs of the executor JVMs below worker ``worker`` in the process tree (from ``/proc``)."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [self.pids[f"worker-{worker}"]]
        while todo:
            for pid in children.get(todo.pop(), []):
                todo.append(pid)
                try:
                    if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        found.append(pid)
                except OSError:
                    pass
        return found

    def kill(self, name: str) -> None:
        """``kill -9`` one daemon (``master``, ``worker-N``), as a crash would; its executors follow."""
        proc = dict((n, p) for n, p, _ in self._procs)[name]
        proc.kill()
        proc.wait(timeout=30)

    def restart_worker(self, worker: int) -> None:
        """Start worker ``worker`` again (after :meth:`kill`) and wait until all workers are alive."""
        self._launch_worker(worker)
        self._wait(f"{self.n_workers} workers to register", lambda: self.alive_workers() >= self.n_workers)

    def _check_alive(self) -> None:
        for name, proc, log in self._procs:
            if proc.poll() is not None:
                raise ClusterError(f"{name} exited with code {proc.returncode}; log {log}:\n{_tail(log)}")

    def _wait(self, what: str, ready) -> None:
        deadline = time.monotonic() + self.timeout
        last_error = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                if ready():
                    return
            except (OSError, urllib.error.URLError, ValueError) as exc:
                last_error = exc
            time.sleep(0.5)
        logs = "\n".join(f"--- {log}:\n{_tail(log)}" for _, _, log in self._procs)
        raise ClusterError(f"timed out after {self.timeout:.0f}s waiting for {what} ({last_error})\n{logs}")

    def start(self) -> "StandaloneCluster":
        if self._procs:
            raise ClusterError("already started")
        if self.java_home is None:
            raise ClusterError("no Java found (set JAVA_HOME)")
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(3 + 2 * self.n_workers, self.host)
        self.master_port, self.ui_port, self.rest_port = ports[:3]
        self.worker_ui_ports = ports[3:3 + self.n_workers]
        self.worker_ports = ports[3 + self.n_workers:]
        try:
            self._launch("master", [MASTER_CLASS, "--host", self.host, "--port", str(self.master_port),
                                    "--webui-port", str(self.ui_port)])
            self._wait("the master", lambda: self.state().get("status") == "ALIVE")
            for i in range(1, self.n_workers + 1):
                self._launch_worker(i)
            self._wait(f"{self.n_workers} workers to register", lambda: self.alive_workers() >= self.n_workers)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM each daemon by PID (workers first), then SIGKILL its process group if needed."""
        for name, proc, _ in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for name, proc, _ in reversed(self._procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            try:  # executor JVMs / Python daemons a worker forked share its process group
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for fh in self._logs:
            fh.close()
        self._procs.clear()
        self._logs.clear()

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
