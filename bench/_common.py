"""Shared bench helpers: timing, growth exponents, result files."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def best_time(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls after one warm-up (numba compiles on the first)."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def best_times(fns: dict, repeat: int = 3, clock=time.perf_counter) -> dict:
    """Best time of each of ``fns`` (name -> callable) over ``repeat`` rounds after one warm-up
    each, the calls taking turns (A B A B ...): a machine whose speed drifts then slows every
    candidate alike, so their ratio holds where back-to-back best times would not.  ``clock``:
    wall time by default; ``time.process_time`` counts this process's CPU seconds, which other
    processes on a shared machine do not add to."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = clock()
            fn()
            times[name].append(clock() - t)
    return {name: min(ts) for name, ts in times.items()}


def growth_exponent(sizes, seconds) -> float:
    """Slope of log(time) against log(size): 1.0 is linear, 2.0 quadratic."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def spark_setting(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of a ``--conf`` option (``argparse`` type)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def write_result(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, default=float))
    return path


def table(rows: list[dict], columns: list[str]) -> str:
    widths = [max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in columns]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(_fmt(r.get(c)).rjust(w) for c, w in zip(columns, widths)) for r in rows]
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def process_tree() -> set[int]:
    """This process and all its descendants (Linux ``/proc``): the Spark JVM and its Python workers."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in tree:
                tree.add(child)
                frontier.append(child)
    return tree


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and its descendants (reaped children included)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in process_tree():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            continue
    return total
