"""Both cores for the in-process engine: contiguous runs of work and a fixed-order merge.

The local engine splits its one block the way the Spark engine splits data into
partitions, only with threads instead of executors:

* a pass runs over **tiles** of whole query groups (a group never splits, exactly as in
  the Spark engine's executor placement), one contiguous run of tiles per thread of about
  equal bytes; each tile computes its ``X·v``, its score-space kernel (with its own state)
  and its ``Xᵀ·c``; the numba kernels are compiled ``nogil`` so threads run them truly in
  parallel;
* a kernel that needs every group at once gets all scores, computed over contiguous
  **row chunks** of about equal non-zeros, and its ``Xᵀ·c`` over the same chunks.

Why the model stays bit for bit the same for any thread count and tile size (and equal to
Spark's): a row's score is computed by one thread from the same operands; ``Xᵀc`` and the
kernels' statistics are double-double sums (:mod:`sparkrank.numerics.exact_sum`) merged in
order and rounded once, so how the rows are cut does not change the rounded result; and a
group's kernel output depends only on that group.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

import numpy as np

from ..defaults import available_cores, threads_or_default

T = TypeVar("T")


def default_threads() -> int:
    """The cores this process may use (:func:`sparkrank.defaults.available_cores`)."""
    return available_cores()


def check_threads(threads: int | None) -> int:
    """``threads`` as a positive int (``None``: :func:`default_threads`)."""
    return threads_or_default(threads)


def balanced_cuts(weights_cumsum: np.ndarray, parts: int) -> np.ndarray:
    """Boundaries ``0 = b0 < b1 < … < bk = len`` splitting items into at most ``parts`` runs of
    about equal weight.

    ``weights_cumsum`` is the running total *including* a leading 0 (length ``len + 1``),
    e.g. a CSR ``indptr`` (weights = non-zeros per row) or group offsets (weights = rows).
    """
    n = weights_cumsum.shape[0] - 1
    parts = max(1, min(parts, n))
    total = weights_cumsum[-1]
    if parts == 1 or total == 0:
        return np.array([0, n], dtype=np.int64)
    targets = total * np.arange(1, parts, dtype=np.float64) / parts
    inner = np.searchsorted(weights_cumsum, targets, side="left")
    return np.unique(np.concatenate(([0], np.clip(inner, 1, n - 1), [n]))).astype(np.int64)


class ThreadRunner:
    """A small pool that maps a function over chunks and returns results in chunk order."""

    def __init__(self, threads: int):
        self.threads = threads
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sparkrank") if threads > 1 else None

    def map(self, fn: Callable[..., T], *args: Sequence) -> list[T]:
        """``[fn(*a) for a in zip(*args)]``, in parallel when there is more than one item and thread."""
        if self._pool is None or len(args[0]) < 2:
            return [fn(*a) for a in zip(*args)]
        return list(self._pool.map(fn, *args))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
