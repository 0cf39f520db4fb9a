"""What every sparkrank task does first on a Python worker: freeze the worker's heap (and,
in a worker's first task, skip numba's import-time BLAS probe: :mod:`sparkrank.kernels.startup`).

PySpark's daemon runs a full ``gc.collect()`` after every task of a reused Python worker
(``pyspark/daemon.py``).  A full collection walks every tracked object, and a worker that
has imported numba and loaded sparkrank's kernels holds ~130k of them (llvmlite and numba's
type system): 60–90 ms of CPU after each task, as much as the rest of a small pass's Spark
overhead.  ``gc.freeze()`` at the start of a task moves what is alive then (the imported
modules, the compiled kernels, the open memory-mapped blocks, all long-lived) into the
permanent generation, so the collection after the task only walks what the task created.
Nothing is kept alive by freezing: reference counting still frees frozen objects; only
reference *cycles* among them wait until the worker exits, and objects alive at a task's
start are the worker's own caches, not a task's temporaries (those were collected after the
previous task, before this freeze).
"""

from __future__ import annotations

import functools
import gc
from typing import Callable, TypeVar

from ...kernels.startup import defer_numba_blas_probe

F = TypeVar("F", bound=Callable)


def worker_task(task: F) -> F:
    """``task`` (a function Spark calls once per partition on a Python worker) that first
    freezes the worker's heap (see the module docstring)."""

    @functools.wraps(task)
    def run(*args, **kwargs):
        defer_numba_blas_probe()  # a dictionary lookup after the worker's first task
        gc.freeze()
        return task(*args, **kwargs)

    return run  # type: ignore[return-value]
