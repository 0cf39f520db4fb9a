"""Reuse the last built engine across ``LinearRanker`` fits on the same input.

``CrossValidator`` over a ``Pipeline([VectorAssembler(...), LinearRanker(...)])`` cannot
use :meth:`LinearRanker.fitMultiple`: ``Pipeline`` hides it and calls ``fit`` once per
(fold, param map), each time on a freshly transformed DataFrame.  Building the cached
blocks is the dearest step of a small fit (a shuffle by group id, decoding every row), so
without help a 4-fold × 7-C grid builds them 28 times instead of 4.

The cache keeps **one** engine: the one built by the last fit.  A fit reuses it when its
data params (columns, partitioning, placement, feature count) are the same and its input
is the same data:

* the same DataFrame object, or one Spark calls semantically equal (``sameSemantics``);
* or one whose canonical plan prints the same (expression ids normalised) **and** whose
  rows hash the same.  This is the ``Pipeline`` case: ``VectorAssembler.transform`` makes a
  new JVM UDF object each time, so ``sameSemantics`` says no for two transforms of the same
  fold.  A plan's text cannot tell two different UDFs with the same name apart, so the
  data decide: a count and two sums of ``xxhash64(label, group, features)`` over the rows
  (one scan, no shuffle, far cheaper than building blocks; the cached input's sums are
  computed once).

Any other input replaces the cached engine, closing the old one first.  ``CrossValidator``
fits all param maps of one fold back to back, so one slot gives one build per fold.

Fits on a cached engine run one at a time (an engine holds per-fit kernel state); the
cache's lock serialises them, which also makes ``CrossValidator(parallelism>1)`` safe.
``LinearRanker(reuseBlocks=False)`` closes the engine after every fit, and
:func:`release_blocks` frees the cached one at any time (it is also freed at exit).
"""

from __future__ import annotations

import atexit
import logging
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

log = logging.getLogger("sparkrank.ml")


class BlockCache:
    """One-slot cache of ``(input DataFrame, data key) -> engine``.

    Attributes
    ----------
    builds : int
        Engines built through this cache (tests and logs read it).
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._dataset = None
        self._key: tuple | None = None
        self._engine = None
        self._fingerprint: tuple | None = None
        self.builds = 0

    @contextmanager
    def engine(self, dataset, key: tuple, build: Callable[[], Any], keep: bool,
               columns: tuple[str, ...] = ()) -> Iterator[Any]:
        """Yield an engine over ``dataset`` (cached or newly built) while holding the cache.

        Parameters
        ----------
        dataset : pyspark.sql.DataFrame
        key : tuple
            Everything besides the DataFrame that decides what the blocks hold.
        build : callable
            Builds the engine on a miss.
        keep : bool
            Keep the engine for the next fit; otherwise it is closed when the block exits.
        columns : tuple of str
            The columns the engine reads (what the data fingerprint hashes).
        """
        with self._lock:
            engine = self._lookup(dataset, key, columns)
            if engine is None:
                self.release()
                engine = build()
                self.builds += 1
            else:
                log.info("reusing the blocks built for the previous fit on the same input")
            try:
                yield engine
            except BaseException:
                # a failed fit may leave kernel state behind: never hand this engine out again
                self._forget(engine)
                engine.close()
                raise
            if not keep:
                self._forget(engine)
                engine.close()
            elif engine is not self._engine:
                self._dataset, self._key, self._engine, self._fingerprint = dataset, key, engine, None

    def release(self) -> None:
        """Close and forget the cached engine, if any."""
        with self._lock:
            engine = self._engine
            self._forget(engine)
            if engine is None:
                return
            try:
                engine.close()
            except Exception as exc:  # noqa: BLE001 - e.g. its SparkContext has stopped: nothing left to free
                log.debug("closing the cached engine failed: %s", exc)

    def _lookup(self, dataset, key: tuple, columns: tuple[str, ...]):
        if self._engine is None or key != self._key:
            return None
        if dataset is self._dataset:
            return self._engine
        try:
            if dataset.sameSemantics(self._dataset):
                return self._engine
            if _plan_text(dataset) != _plan_text(self._dataset):
                return None
            if self._fingerprint is None:
                self._fingerprint = data_fingerprint(self._dataset, columns)
            same = data_fingerprint(dataset, columns) == self._fingerprint
        except Exception as exc:  # noqa: BLE001 - e.g. the session that made the cached frame has stopped
            log.debug("cannot compare with the cached input (%s): building afresh", exc)
            return None
        return self._engine if same else None

    def _forget(self, engine) -> None:
        if engine is not None and engine is self._engine:
            self._engine, self._dataset, self._key, self._fingerprint = None, None, None, None


def _plan_text(dataset) -> str:
    """The analysed plan with expression ids normalised (``none#0``), as text."""
    return dataset._jdf.queryExecution().analyzed().canonicalized().toString()


def data_fingerprint(dataset, columns: tuple[str, ...]) -> tuple[int, int, int]:
    """``(rows, Σ low 32 bits, Σ high 32 bits)`` of ``xxhash64`` over ``columns`` of every row.

    Order-free (a sum), so it does not depend on partitioning; split in halves so the sums
    cannot overflow a long under ANSI mode for fewer than 2³¹ rows.
    """
    from pyspark.sql import functions as F

    h = F.xxhash64(*columns)
    row = dataset.select(F.count(F.lit(1)), F.sum(h.bitwiseAND(0xFFFFFFFF)), F.sum(F.shiftright(h, 32))).first()
    return int(row[0]), int(row[1] or 0), int(row[2] or 0)


#: The process-wide cache used by :class:`~sparkrank.ml.LinearRanker`.
BLOCKS = BlockCache()
atexit.register(BLOCKS.release)


def release_blocks() -> None:
    """Free the blocks ``LinearRanker`` keeps from its last fit (executor memory and files) and
    the rows ``RankingEvaluator`` keeps of the last scored input (:mod:`sparkrank.ml.scored_rows`)
    and of the last collected fold source (:mod:`sparkrank.ml.fold_views`)."""
    from .fold_views import VIEWS
    from .scored_rows import INPUTS

    BLOCKS.release()
    INPUTS.release()
    VIEWS.release()
