"""How much address space numba needs to compile (cold cache) or load (warm cache) a fit's kernels.

Why: under ``ulimit -v`` LLVM's allocations are C++ ``new``; when one fails the process aborts
(``LLVM ERROR: out of memory``, exit 134), which Python cannot catch.  ``sparkrank/data/jit_room.py``
keeps this much address space free for the compiler; this script measures it.

How: each probe is a child process that builds 2,000 rows x 136 float32 features in memory
(``make_ranking_data``, no numba call yet), reads its own ``VmSize`` and trains (``--threads 1``:
no thread stacks counted) for two iterations: every kernel of that solver is compiled (empty
``NUMBA_CACHE_DIR``) or loaded (a filled one).  Unlimited, it reports how far ``VmPeak`` rose
above that start (the rows and the solver's vectors are a few MiB of it); then the same fit
under ``RLIMIT_AS = VmSize + rise + 8 MiB`` must end, and is tried at ``rise - 32 MiB`` too (an
abort there shows the rise is what the compiler needs, not slack).  Per solver and cache state.

Run: ``python bench/jit_address_space.py [SOLVER ...]`` (default: every solver).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

CHILD = """
import resource, sys
from sparkrank.datasets import make_ranking_data
from sparkrank.engines.local import LocalEngine
from sparkrank.training import train
import numpy as np
data, _ = make_ranking_data(2000, 136, dtype=np.float32, seed=1)
engine = LocalEngine(data, threads=1)
with open("/proc/self/status") as f:
    size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
if int(sys.argv[2]):
    resource.setrlimit(resource.RLIMIT_AS, (size + int(sys.argv[2]), resource.getrlimit(resource.RLIMIT_AS)[1]))
train(engine, solver=sys.argv[1], max_iter=2)
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmPeak:"))
print(peak - size)
"""

MIB = 1 << 20


def probe(solver: str, room: int, cache: str, cold: bool) -> tuple[int, int | None]:
    """Exit status of a fit with ``room`` bytes above its start (0: no limit), and, when it ended,
    how far its ``VmPeak`` rose; ``cold``: with the cache emptied first."""
    if cold:
        for name in os.listdir(cache):
            subprocess.run(["rm", "-rf", os.path.join(cache, name)], check=True)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    proc = subprocess.run([sys.executable, "-c", CHILD, solver, str(room)], env=env, capture_output=True, text=True)
    return proc.returncode, int(proc.stdout.split()[-1]) if proc.returncode == 0 else None


def main(argv: list[str]) -> int:
    solvers = argv or ["tron", "bmrm", "ncg", "toppush"]
    for solver in solvers:
        with tempfile.TemporaryDirectory() as cache:
            for state, cold in (("compile", True), ("load from the cache", False)):
                _, rise = probe(solver, 0, cache, cold)
                above = probe(solver, rise + 8 * MIB, cache, cold)[0]
                below = probe(solver, max(rise - 32 * MIB, MIB), cache, cold)[0]
                print(f"{solver} {state}: VmPeak rose {rise / MIB:.0f} MiB; exit {above} at +8 MiB, "
                      f"exit {below} at -32 MiB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
