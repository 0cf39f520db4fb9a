"""Benchmark of the SVMlight/LETOR reader (sparkrank.data.svmlight.read_svmlight).

Generates (once, cached in a temporary directory) LETOR-style files of 30k, 100k and
300k rows (by default) x 136 dense features, about 120 rows per qid, values printed with
6 decimals (``0.123456``), times ``read_svmlight`` (best of 3 after a warm-up that also
compiles the numba code), prints a table and the growth exponent of time vs file size
(1.0 = linear), and writes JSON.  If scikit-learn is installed its loader is timed on the
smallest file too (it is never installed by this script).

Usage::

    python bench/parse_svmlight.py [--rows 300000] [--out bench/results/parse_svmlight.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sparkrank.data.svmlight import read_svmlight  # noqa: E402

N_FEATURES = 136
ROWS_PER_QID = 120


def _row_template(qid_width: int) -> tuple[bytes, list[int]]:
    """One line with placeholder digits, and the byte offsets of each value's 6 decimals.

    Every row has the same length (label is one digit, qids have a fixed number of digits,
    every value is ``0.dddddd``), so a whole chunk of rows is a 2-D byte array filled with
    vectorised numpy operations.
    """
    parts = ["0", " qid:" + "0" * qid_width]
    offsets = []
    pos = len(parts[0]) + len(parts[1])
    for j in range(1, N_FEATURES + 1):
        tok = f" {j}:0."
        offsets.append(pos + len(tok))
        parts.append(tok + "000000")
        pos += len(tok) + 6
    parts.append("\n")
    return "".join(parts).encode(), offsets


def generate(path: Path, rows: int, seed: int = 0) -> None:
    """Write a LETOR-style file of ``rows`` rows (136 features, ~120 rows per qid)."""
    rng = np.random.default_rng(seed)
    qid_width = 6
    template, offsets = _row_template(qid_width)
    width = len(template)
    off = np.array(offsets)
    tmp = path.with_suffix(".part")
    chunk = 20000
    with open(tmp, "wb") as f:
        for r0 in range(0, rows, chunk):
            r1 = min(rows, r0 + chunk)
            k = r1 - r0
            block = np.tile(np.frombuffer(template, np.uint8), (k, 1))
            block[:, 0] = 48 + rng.integers(0, 5, k)  # label 0..4
            qid = 100000 + np.arange(r0, r1) // ROWS_PER_QID
            for d in range(qid_width):
                block[:, 6 + d] = 48 + (qid // 10 ** (qid_width - 1 - d)) % 10
            vals = rng.integers(0, 1_000_000, (k, N_FEATURES))  # 0.000000 .. 0.999999
            for d in range(6):
                block[:, off + d] = 48 + (vals // 10 ** (5 - d)) % 10
            f.write(block.tobytes())
    assert width * rows == tmp.stat().st_size
    os.replace(tmp, path)


def best_of(fn, repeat: int = 3) -> tuple[float, float]:
    """Best wall-clock and best CPU (process) time of ``repeat`` calls.

    CPU time is reported too because on a shared machine the wall clock also counts the
    time the process waits for a core; the parser is single-threaded, so on an idle
    machine the two agree.
    """
    wall, cpu = [], []
    for _ in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=300_000, help="rows of the largest file (default 300000)")
    ap.add_argument("--out", default="bench/results/parse_svmlight.json", help="JSON output path")
    ap.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "sparkrank_bench"),
                    help="where the generated files are cached")
    args = ap.parse_args(argv)

    if args.rows > 100_000:
        sizes = [30_000, 100_000, args.rows]
    else:  # a smaller run keeps the same 1 : 3.3 : 10 spread
        sizes = sorted({max(100, args.rows // 10), max(300, args.rows * 3 // 10), args.rows})
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for n in sizes:
        p = data_dir / f"letor_{n}x{N_FEATURES}.txt"
        if not p.exists():
            print(f"generating {p} ...", flush=True)
            generate(p, n, seed=n)
        files[n] = p

    # warm-up: loads (or compiles) the numba code and touches the smallest file
    read_svmlight(files[sizes[0]])

    results = []
    print(f"{'rows':>9} {'MB':>9} {'seconds':>9} {'MB/s':>9} {'cpu s':>9} {'cpu MB/s':>9}  reader")
    for n in sizes:
        p = files[n]
        mb = p.stat().st_size / 1e6
        f = read_svmlight(p)
        assert f.X.shape == (n, N_FEATURES) and f.qid is not None
        assert np.unique(f.qid).size == -(-n // ROWS_PER_QID)
        del f
        t, c = best_of(lambda: read_svmlight(p))
        results.append({"reader": "sparkrank", "rows": n, "mb": mb, "seconds": t, "mb_per_s": mb / t,
                        "cpu_seconds": c, "cpu_mb_per_s": mb / c})
        print(f"{n:>9} {mb:>9.1f} {t:>9.3f} {mb / t:>9.1f} {c:>9.3f} {mb / c:>9.1f}  sparkrank.read_svmlight",
              flush=True)

    x = np.log([r["mb"] for r in results])
    exponent = float(np.polyfit(x, np.log([r["seconds"] for r in results]), 1)[0])
    cpu_exponent = float(np.polyfit(x, np.log([r["cpu_seconds"] for r in results]), 1)[0])
    print(f"growth exponent of time vs size: wall {exponent:.3f}, cpu {cpu_exponent:.3f} (1.0 = linear)")
    steps = [
        float(np.log(b["seconds"] / a["seconds"]) / np.log(b["mb"] / a["mb"])) for a, b in zip(results, results[1:])
    ]
    print("exponent between consecutive sizes (wall): " + ", ".join(f"{e:.3f}" for e in steps))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average during the run: {load:.2f} on {os.cpu_count()} cores")

    sklearn_result = None
    try:
        from sklearn.datasets import load_svmlight_file  # optional, never installed here
    except ImportError:
        print("scikit-learn not installed: skipped")
    else:
        p = files[sizes[0]]
        mb = p.stat().st_size / 1e6
        t, c = best_of(lambda: load_svmlight_file(str(p), query_id=True), repeat=1)
        sklearn_result = {"reader": "sklearn", "rows": sizes[0], "mb": mb, "seconds": t, "mb_per_s": mb / t,
                          "cpu_seconds": c, "cpu_mb_per_s": mb / c}
        print(f"{sizes[0]:>9} {mb:>9.1f} {t:>9.3f} {mb / t:>9.1f} {c:>9.3f} {mb / c:>9.1f}  sklearn.load_svmlight_file")

    report = {
        "benchmark": "parse_svmlight",
        "n_features": N_FEATURES,
        "rows_per_qid": ROWS_PER_QID,
        "value_format": "%.6f in [0, 1)",
        "repeat": "best of 3 after warm-up",
        "results": results,
        "growth_exponent": exponent,
        "growth_exponent_cpu": cpu_exponent,
        "growth_exponent_steps": steps,
        "load_average_1min": load,
        "sklearn": sklearn_result,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


if __name__ == "__main__":
    main()
