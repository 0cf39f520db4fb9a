"""LIBLINEAR-ranksvm beside sparkrank in the benches: the same synthetic set as SVMlight text,
and ``train -s 8`` (L2-loss RankSVM by TRON, lee-lin2014) timed per iteration.

LIBLINEAR-ranksvm is not a dependency: pass the path of its ``train`` binary (built from
liblinear-ranksvm's sources with ``make``).  Its TRON prints one ``iter N ...`` line per
iteration and flushes it, so the time of each line, read as it comes, gives the time per
iteration; with ``max_iter`` the run is stopped after that many iterations (LIBLINEAR has no
such option), so that it does the same TRON iterations as a ``--max-iter`` fit of sparkrank.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from _synthetic import svmlight_from_parquet
from _tree_memory import TreeMemorySampler

_ITER_LINE = re.compile(rb"^iter\s+(\d+)\s.*\sf\s+(\S+)")


def svmlight_copy(parquet: Path, n_features: int, chunk: int = 50_000) -> Path:
    """``parquet`` (a :func:`_synthetic.synthetic_parquet` set, dense or sparse) as SVMlight text
    with ``qid`` beside it (``.svm``, written once: the shortest text that reads back to each
    float32 value's double)."""

    def features(batch):
        if "indices" not in batch.schema.names:
            return np.asarray(batch.column("features").flatten(), dtype=np.float64).reshape(-1, n_features)
        indices, values = batch.column("indices"), batch.column("values")
        indptr = np.asarray(indices.offsets, dtype=np.int64)
        return sp.csr_matrix((np.asarray(values.flatten(), dtype=np.float64),
                              np.asarray(indices.flatten(), dtype=np.int64), indptr - indptr[0]),
                             shape=(batch.num_rows, n_features))

    return svmlight_from_parquet(parquet, parquet.with_suffix(".svm"), features, chunk)


def run_liblinear(binary: str, svm: Path, C: float, max_iter: int | None = None) -> dict:
    """``binary -s 8 -c C svm`` to its own tolerance (``-e 0.001``, sparkrank's default ``tol``) or
    stopped after ``max_iter`` iterations: wall seconds (to the exit, or to the last iteration's
    line when stopped), iterations, seconds to the first iteration's line (reading the text,
    setting up, one iteration), the median seconds between iteration lines, the objective its
    last line prints (4 digits) and the peak resident memory of its process (sampled every
    0.1 s)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "-s", "8", "-c", repr(C), "-e", "0.001", str(svm), str(Path(tmp) / "model")]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        stamps, stopped, tail, objective = [], False, deque(maxlen=20), None
        with TreeMemorySampler(proc.pid, 0.1) as mem:
            for line in proc.stdout:
                tail.append(line)
                match = _ITER_LINE.match(line)
                if match:
                    stamps.append(time.perf_counter() - t0)
                    objective = float(match.group(2))  # before the iteration's step: f at its start
                    if max_iter is not None and len(stamps) >= max_iter:
                        stopped = True
                        proc.kill()
                        break
            proc.wait()
        wall = stamps[-1] if stopped else time.perf_counter() - t0
        if proc.returncode and not stopped:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {b''.join(tail).decode(errors='replace')}")
    gaps = np.diff(stamps)
    return {"liblinear_s": wall, "liblinear_iterations": len(stamps), "liblinear_stopped": stopped,
            "liblinear_first_iter_s": stamps[0] if stamps else None,
            "liblinear_s_per_iter": float(np.median(gaps)) if gaps.size else None,
            "liblinear_objective": objective, "liblinear_peak_rss_gb": mem.peak_rss / 1e9}
