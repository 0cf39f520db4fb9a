"""Whole-process measurements: wall time, CPU time and peak resident memory of a command."""

from __future__ import annotations

import os
import subprocess
import time


def run_measured(cmd: list[str], *, env: dict | None = None) -> dict:
    """Run ``cmd`` to completion; its wall seconds, CPU seconds (user + system) and peak RSS in MB.

    ``os.wait4`` returns the resource usage of that one child (and the descendants it waited
    for), so other processes on the machine do not count, unlike ``RUSAGE_CHILDREN``.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{out.decode(errors='replace')[-2000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024.0,
            "output": out.decode(errors="replace")}
