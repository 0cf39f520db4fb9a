"""One log line every few seconds while a long Spark job runs (block building, first pass).

Why: building the blocks shuffles and decodes every row, and the first pass compiles the
numba kernels in every Python worker (numba caches them afterwards, beside the package or
under ``NUMBA_CACHE_DIR``); both can take a minute on a small machine, and a silent minute
looks like a hang.  A daemon thread polls Spark's status tracker (no extra job) and logs
the active stages' finished/total tasks.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Iterator

log = logging.getLogger("sparkrank.spark")

#: Seconds between progress lines.
PROGRESS_EVERY = 5.0


@contextmanager
def job_progress(sc, what: str, every: float = PROGRESS_EVERY) -> Iterator[None]:
    """Log ``what: stage S k/n tasks done, t s`` every ``every`` seconds until the block exits.

    Nothing is logged for work that ends within ``every`` seconds.
    """
    done = threading.Event()
    t0 = time.perf_counter()

    def report() -> None:
        tracker = sc.statusTracker()
        while not done.wait(every):
            try:
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:  # noqa: BLE001 - the context is stopping; progress is best effort
                return
            parts = [f"stage {s.stageId} {s.numCompletedTasks}/{s.numTasks} tasks done"
                     for s in stages if s is not None]
            log.info("%s: %s, %.0fs", what, "; ".join(parts) or "waiting for executors", time.perf_counter() - t0)

    thread = threading.Thread(target=report, name="sparkrank-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
