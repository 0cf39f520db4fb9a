"""Whole-process measurements: wall time, CPU time and peak resident memory of a command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from _tree_memory import TreeMemorySampler

#: Runs the command as its own child and reports that child's resource usage.  Why a launcher:
#: Linux keeps a process's peak RSS across ``exec`` (the kernel folds the old address space's
#: high-water mark into it), so a command forked straight from a benchmark that holds a few
#: hundred MB (the synthetic data it just wrote) would report the benchmark's peak, not its
#: own.  The launcher is a fresh ``python -S`` of ~10 MB: what its child inherits is that.
_LAUNCHER = r"""
import json, os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with os.fdopen(int(sys.argv[1]), "w") as report:
    json.dump({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024.0,
               "exit": os.waitstatus_to_exitcode(status)}, report)
"""


def run_measured(cmd: list[str], *, env: dict | None = None) -> dict:
    """Run ``cmd`` to completion; its wall seconds, CPU seconds (user + system), peak RSS in MB
    (``peak_mb``) and the peak of its whole process tree's summed RSS (``tree_peak_mb``,
    :class:`~_tree_memory.TreeMemorySampler` every 0.1 s, the launcher's ~10 MB included).

    ``peak_mb`` is that of ``cmd``'s process alone (and the descendants it waited for), read
    with ``os.wait4`` by a small launcher process (see ``_LAUNCHER``), so neither this process's
    memory nor other processes on the machine count.
    """
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, str(write_fd), *cmd], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(write_fd,))
    finally:
        os.close(write_fd)
    with os.fdopen(read_fd) as report, TreeMemorySampler(proc.pid, 0.1) as tree:
        out = proc.stdout.read()
        measured = report.read()
    proc.wait()
    if proc.returncode != 0 or not measured:
        raise RuntimeError(f"the launcher of {' '.join(cmd)} exited {proc.returncode}:\n"
                           f"{out.decode(errors='replace')[-2000:]}")
    result = json.loads(measured)
    if result.pop("exit") != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.decode(errors='replace')[-2000:]}")
    return {**result, "tree_peak_mb": tree.peak_rss / 2**20, "output": out.decode(errors="replace")}
