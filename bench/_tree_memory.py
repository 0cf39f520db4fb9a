"""Peak memory of a whole process tree, each process and summed, sampled from ``/proc``.

Why a tree: a Spark run is a driver (Python), a JVM (driver and, in local mode, the executors)
and Python workers forked by PySpark's daemon; ``/usr/bin/time`` or ``ru_maxrss`` on the
command sees only the driver (237 MB of a run whose tree peaked at 12.2 GiB).

Every ``interval`` seconds the sampler reads ``VmRSS``, ``RssAnon`` and ``RssFile`` of every
process under ``root`` (``/proc/PID/status``).  It keeps, per process, its own peaks, and for
the tree the peak of the *summed* resident set (and of the summed anonymous memory) with each
process's share at that moment.  ``RssAnon`` is what a process needs (heaps, numpy and Arrow
buffers, the JVM heap in use); ``RssFile`` counts memory-mapped files (the block files), pages
the kernel can drop and shares between processes, so a sum of resident sets counts a block
mapped by two workers twice.  ``Pss`` (``/proc/PID/smaps_rollup``) divides each shared page
among the processes that map it, so the tree's summed ``Pss`` is its real footprint.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

_FIELDS = {"VmRSS:": "rss", "RssAnon:": "anon", "RssFile:": "file"}


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(entry))
    return out


def tree_of(root: int) -> list[int]:
    """``root`` and all its descendants."""
    children = _children()
    tree, frontier = [root], [root]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            tree.append(child)
            frontier.append(child)
    return tree


def _status(pid: int) -> dict[str, int] | None:
    """``rss``, ``anon``, ``file`` (``/proc/PID/status``) and ``pss`` (``smaps_rollup``) in bytes."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = _FIELDS.get(line.split(None, 1)[0]) if line else None
                if key:
                    out[key] = int(line.split()[1]) * 1024
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["pss"] = int(line.split()[1]) * 1024
                    break
    except OSError:
        return out or None
    return out or None


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def role_of(pid: int, root: int, parents: dict[int, int], cmdlines: dict[int, list[str]]) -> str:
    """``driver``, ``jvm`` (the driver's), ``worker jvm`` and ``executor jvm`` (a standalone
    cluster's), ``python daemon``, ``python worker`` or ``other``."""
    cmd = cmdlines.get(pid, [])
    if pid == root:
        return "driver"
    if cmd and os.path.basename(cmd[0]) == "java":
        if "org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmd:
            return "executor jvm"
        if "org.apache.spark.deploy.worker.Worker" in cmd:
            return "worker jvm"
        return "jvm"
    if "pyspark.daemon" in cmd:
        parent = cmdlines.get(parents.get(pid, -1), [])
        # the daemon forks its workers: same command line, parent the daemon
        return "python worker" if "pyspark.daemon" in parent else "python daemon"
    if any("pyspark" in a and "worker" in a for a in cmd):
        return "python worker"
    return "other"


@dataclass
class ProcessPeak:
    pid: int
    role: str
    rss: int = 0
    anon: int = 0
    file: int = 0
    pss: int = 0

    def update(self, status: dict[str, int]) -> None:
        self.rss = max(self.rss, status.get("rss", 0))
        self.anon = max(self.anon, status.get("anon", 0))
        self.file = max(self.file, status.get("file", 0))
        self.pss = max(self.pss, status.get("pss", 0))


@dataclass
class TreePeaks:
    """What :class:`TreeMemorySampler` found: per-process peaks and the tree's summed peaks."""

    processes: dict[int, ProcessPeak] = field(default_factory=dict)
    peak_rss: int = 0
    peak_anon: int = 0
    peak_pss: int = 0
    at_peak_rss: dict[int, int] = field(default_factory=dict)  # pid -> its resident set then
    samples: int = 0

    def by_role(self) -> dict[str, list[ProcessPeak]]:
        out: dict[str, list[ProcessPeak]] = {}
        for p in sorted(self.processes.values(), key=lambda p: -p.rss):
            out.setdefault(p.role, []).append(p)
        return out

    def rows(self, min_bytes: int = 20 << 20) -> list[dict]:
        """One row per process that reached ``min_bytes`` (its own peaks, GiB), then the tree."""
        gib = 1 << 30
        rows = [{"process": p.role, "pid": p.pid, "peak_rss_gib": p.rss / gib, "peak_anon_gib": p.anon / gib,
                 "peak_file_gib": p.file / gib, "peak_pss_gib": p.pss / gib, "rss_at_tree_peak_gib": self.at_peak_rss.get(p.pid, 0) / gib}
                for ps in self.by_role().values() for p in ps if p.rss >= min_bytes]
        rows.append({"process": "tree (summed)", "pid": None, "peak_rss_gib": self.peak_rss / gib,
                     "peak_anon_gib": self.peak_anon / gib, "peak_file_gib": None, "peak_pss_gib": self.peak_pss / gib,
                     "rss_at_tree_peak_gib": self.peak_rss / gib})
        return rows

    def as_json(self) -> dict:
        return {"peak_rss_bytes": self.peak_rss, "peak_anon_bytes": self.peak_anon, "peak_pss_bytes": self.peak_pss,
                "samples": self.samples,
                "processes": [{"pid": p.pid, "role": p.role, "peak_rss_bytes": p.rss, "peak_anon_bytes": p.anon,
                               "peak_file_bytes": p.file, "peak_pss_bytes": p.pss, "rss_at_tree_peak_bytes": self.at_peak_rss.get(p.pid, 0)}
                              for p in self.processes.values()]}


class TreeMemorySampler:
    """Samples the memory of ``root`` (default this process) and its descendants every
    ``interval`` seconds in a thread, from ``__enter__`` to ``__exit__``; ``peaks`` holds the result.
    ``also``: more roots sampled with their descendants as part of the tree (a standalone
    cluster's worker daemons, whose executors are not this process's children)."""

    def __init__(self, root: int | None = None, interval: float = 0.2, timeline: bool = False,
                 also: list[int] | None = None):
        self.timeline: list | None = [] if timeline else None  # (seconds, {pid: (resident, anonymous, proportional bytes)})
        self._t0 = time.monotonic()
        self.root = os.getpid() if root is None else root
        self.also = list(also or ())
        self.interval = interval
        self.peaks = TreePeaks()
        self._cmdlines: dict[int, list[str]] = {}
        self._parents: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    # the summed peaks, as the previous sampler of bench/scale.py offered them
    @property
    def peak_rss(self) -> int:
        return self.peaks.peak_rss

    @property
    def peak_anon(self) -> int:
        return self.peaks.peak_anon

    @property
    def peak_pss(self) -> int:
        return self.peaks.peak_pss

    def sample(self) -> None:
        children = _children()
        tree, frontier = [self.root, *self.also], [self.root, *self.also]
        while frontier:
            p = frontier.pop()
            for child in children.get(p, ()):
                self._parents[child] = p
                tree.append(child)
                frontier.append(child)
        now: dict[int, int] = {}
        anon_now: dict[int, int] = {}
        pss_now: dict[int, int] = {}
        for pid in tree:
            status = _status(pid)
            if status is None:
                continue
            peak = self.peaks.processes.get(pid)
            if peak is None or peak.role == "other":  # a launcher script may exec the JVM later
                self._cmdlines[pid] = _cmdline(pid)
                role = role_of(pid, self.root, self._parents, self._cmdlines)
                if peak is None:
                    peak = self.peaks.processes[pid] = ProcessPeak(pid, role)
                peak.role = role
            peak.update(status)
            now[pid] = status.get("rss", 0)
            anon_now[pid] = status.get("anon", 0)
            pss_now[pid] = status.get("pss", 0)
        total = sum(now.values())
        if self.timeline is not None:
            self.timeline.append((round(time.monotonic() - self._t0, 2),
                                  {pid: (rss, anon_now[pid], pss_now[pid]) for pid, rss in now.items()}))
        if total > self.peaks.peak_rss:
            self.peaks.peak_rss, self.peaks.at_peak_rss = total, now
        self.peaks.peak_anon = max(self.peaks.peak_anon, sum(anon_now.values()))
        self.peaks.peak_pss = max(self.peaks.peak_pss, sum(pss_now.values()))
        self.peaks.samples += 1

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()
