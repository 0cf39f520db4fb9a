"""Peak memory of a command's whole process tree (driver, JVM, Python workers), each and summed.

    python bench/tree_peak.py [--name NAME] [--interval 0.2] -- sparkrank train --engine spark ...

Runs the command, samples ``/proc`` every ``--interval`` seconds (``bench/_tree_memory.py``),
prints one row per process (its role, its own peaks of resident set, anonymous and file-backed
memory, and its resident set at the moment the tree's sum peaked) and the tree's summed peak,
and writes bench/results/tree_peak_NAME.json.  The command's own exit status is returned.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table, write_result  # noqa: E402
from _tree_memory import TreeMemorySampler  # noqa: E402

COLUMNS = ["process", "pid", "peak_rss_gib", "peak_anon_gib", "peak_file_gib", "peak_pss_gib", "rss_at_tree_peak_gib"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="run", help="result file: bench/results/tree_peak_NAME.json")
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--timeline", action="store_true", help="also write every sample (seconds, pid -> bytes)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given (put it after --)")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    with TreeMemorySampler(proc.pid, args.interval, timeline=args.timeline) as sampler:
        proc.wait()
    wall = time.perf_counter() - t0
    peaks = sampler.peaks
    print(table(peaks.rows(), COLUMNS))
    print(f"exit {proc.returncode}, {wall:.1f}s wall, {peaks.samples} samples")
    path = write_result(f"tree_peak_{args.name}", {"command": cmd, "exit": proc.returncode, "wall_s": wall,
                                                   **peaks.as_json(),
                                                   "timeline": sampler.timeline})
    print(f"wrote {path}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
