"""Starting the driver's JVM for an embedded session: a JVM that cannot start is one line.

PySpark starts the driver's JVM through ``bin/spark-submit`` with this process's stdout and
stderr.  When
Java is missing (``JAVA_HOME`` unset and no ``java`` on ``PATH``), ``JAVA_HOME`` names no Java,
or the JVM refuses its options (a heap it cannot reserve, an unsupported Java, ``--packages``
that cannot be fetched), the launcher's and the JVM's own lines (HotSpot writes its start-up errors on stdout) land on
the terminal and PySpark then raises
``PySparkRuntimeError: [JAVA_GATEWAY_EXITED]`` with a traceback: 35 lines or more.

:func:`launch_driver_jvm` starts that JVM the same way (PySpark's ``launch_gateway`` with the
session's settings) but with its stdout and stderr on pipes.  While the JVM starts, what it
writes is held; if it exits before it listens, :func:`start_failure_message` makes one line of
it (which Java, its words, the setting to change) and :class:`SparkStartError` carries it.
Once it listens, what it wrote goes to this process's stdout and stderr (file descriptors 1
and 2, where it went before), and so does everything it writes later: Spark's log, the local
Python workers' output.  (Whatever the JVM writes after this process has exited is lost.)
"""

from __future__ import annotations

import os
import re
import shutil
import threading

from .errors import ClusterError

#: Seconds to wait for the rest of a failed launcher's output once it has exited.
OUTPUT_WAIT = 5.0
#: The JVM's banner about the vector module: not the reason for anything.
_BANNER = "WARNING: Using incubator modules"
#: Lines of a launcher's output that say why it stopped, most telling first.
_REASONS = (re.compile(r"unresolved dependency: ([^\]\n]+)"),
            re.compile(r"UnsupportedClassVersionError: (.+)"),
            re.compile(r"(Could not reserve enough space[^\n]*|Invalid (?:initial|maximum) heap size[^\n]*|"
                       r"Invalid \w+ size[^\n]*)"),
            re.compile(r"(?:Exception in thread \"main\" )?([\w.]*(?:Exception|Error)\b:? [^\n]+)"),
            re.compile(r"(Error[^\n]+)"),
            re.compile(r"(\S+: No such file or directory|[^\n]*[Pp]ermission denied[^\n]*)"))


class SparkStartError(ClusterError):
    """The driver's JVM did not start (no Java, a wrong ``JAVA_HOME``, refused options)."""


class _HeldStream(threading.Thread):
    """Reads one of the JVM's output streams: holds it until :meth:`forward`, then writes it to
    ``target`` (file descriptor 1 or 2)."""

    def __init__(self, fd: int, target: int):
        super().__init__(name=f"sparkrank-jvm-output-{target}", daemon=True)
        self.fd = fd
        self.target = target
        self.held: list[bytes] = []
        self.lock = threading.Lock()
        self.forwarding = False

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    return  # every writer (the JVM and what it started) has closed it
                with self.lock:
                    if self.forwarding:
                        _write_all(self.target, chunk)
                    else:
                        self.held.append(chunk)
        except OSError:
            return
        finally:
            os.close(self.fd)

    def forward(self) -> None:
        with self.lock:
            for chunk in self.held:
                _write_all(self.target, chunk)
            self.held.clear()
            self.forwarding = True

    def text(self, wait: float = OUTPUT_WAIT) -> str:
        self.join(wait)
        with self.lock:
            return b"".join(self.held).decode(errors="replace")


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # closed: nothing to tell
        pass


def launch_driver_jvm(settings: dict[str, str]) -> None:
    """Start the JVM of the session about to be created, with ``settings`` (``spark.master``,
    ``spark.app.name`` and the rest, as the builder will have them), unless one runs already
    or spark-submit started this process; raises :class:`SparkStartError` in one line when it
    cannot start."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):  # noqa: SLF001
        return
    conf = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        conf.set(key, value)
    pipes = {target: os.pipe() for target in (1, 2)}
    streams = {target: _HeldStream(read, target) for target, (read, _) in pipes.items()}
    for stream in streams.values():
        stream.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": pipes[1][1], "stderr": pipes[2][1]})
    except Exception:  # noqa: BLE001 - PySpark's JAVA_GATEWAY_EXITED, or the launcher could not run
        for _, write in pipes.values():
            os.close(write)
        output = streams[2].text() + "\n" + streams[1].text()
        raise SparkStartError(start_failure_message(output, settings)) from None
    for _, write in pipes.values():
        os.close(write)
    for stream in streams.values():
        stream.forward()
    SparkContext._ensure_initialized(gateway=gateway)  # noqa: SLF001 - the context made next uses it


def java_runner() -> tuple[str | None, str | None]:
    """``(java, problem)``: the ``java`` that ``bin/spark-class`` runs (``$JAVA_HOME/bin/java``
    when ``JAVA_HOME`` is set, else the one on ``PATH``), or why there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if os.path.isfile(java) and os.access(java, os.X_OK):
            return java, None
        return None, f"JAVA_HOME={home} has no bin/java"
    java = shutil.which("java")
    if java is None:
        return None, "JAVA_HOME is not set and no java is on PATH"
    return java, None


def start_failure_message(output: str, settings: dict[str, str]) -> str:
    """One line for a driver JVM that exited before it started, from what it printed."""
    java, problem = java_runner()
    if problem is not None:
        return (f"Spark needs Java 17 or 21 and cannot run it: {problem}; install a JDK or JRE and set JAVA_HOME "
                "to its directory (e.g. /usr/lib/jvm/java-17-openjdk-amd64), or use --engine local")
    reason = _reason(output)
    hint = _hint(reason, settings)
    return f"Spark's driver JVM ({java}) did not start: {reason}{'; ' + hint if hint else ''}"


def _reason(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.startswith(_BANNER)]
    text = "\n".join(lines)
    for pattern in _REASONS:
        found = pattern.findall(text)
        if found:
            return found[-1].strip().rstrip(".") if pattern is not _REASONS[0] else \
                f"unresolved dependency {found[-1].strip()}"
    return lines[-1] if lines else "it exited without a word"


def _hint(reason: str, settings: dict[str, str]) -> str:
    if "heap" in reason:
        memory = settings.get("spark.driver.memory")
        now = f", now {memory}" if memory else ""
        return f"give a --driver-memory (spark.driver.memory{now}) this host can reserve"
    if "UnsupportedClassVersionError" in reason or "class file version" in reason:
        return "this Java is too old for Spark 4: set JAVA_HOME to a Java 17 or 21"
    if reason.startswith("unresolved dependency"):
        return ("check the coordinates of --packages (spark.jars.packages); fetching them needs Maven Central or "
                "spark.jars.ivySettings, or give the jars with --conf spark.jars=...")
    return ""


#: Seconds to wait for a standalone master to accept a connection before saying it cannot be reached.
MASTER_CONNECT_TIMEOUT = 10.0


def check_master_reachable(master: str, timeout: float = MASTER_CONNECT_TIMEOUT) -> None:
    """Raise :class:`SparkStartError` in one line when no master of a standalone URL
    (``spark://HOST:PORT[,HOST:PORT...]``) accepts a connection.  Spark itself would retry for a
    minute and then fail the session with pages of ``Failed to connect to master`` traces."""
    import socket

    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as exc:
            reasons.append(f"{address}: {getattr(exc, 'strerror', None) or exc}")
    raise SparkStartError(f"cannot reach the Spark master {master} ({'; '.join(reasons)}): start it, or give the "
                          "URL its log prints ('Starting Spark master at spark://HOST:PORT')")
