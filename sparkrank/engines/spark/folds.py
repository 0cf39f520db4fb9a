"""Fold views: the parts of group-wise k-fold as engines derived from one :class:`SparkEngine`.

``tune --folds k`` on Spark trains on k training parts, scores k held-out parts and refits on
all rows.  Each part is a :class:`FoldView` of the engine over all rows: its blocks are made
from that engine's blocks on the executors (:mod:`sparkrank.engines.spark.subsets`), so the source is
read, decoded and shuffled once instead of 2k + 1 times, and the engine over all rows serves the
refit.  A view is a full :class:`SparkEngine` (passes, kept states, recovery); it holds the
rows of its folds in the parent's order and is as wide as the parent, as the local engine's
folds (:func:`~sparkrank.data.folds.take_groups`) are, so models and metrics are the same.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from ...data.folds import HASH_BITS, check_fold_count, check_fold_sizes
from . import subsets
from .progress import job_progress
from .engine import SparkEngine

log = logging.getLogger("sparkrank.spark")


class FoldView(SparkEngine):
    """The query groups of ``folds`` (of ``k``, by the hash rule with ``seed``) of ``parent``'s rows.

    Parameters
    ----------
    parent : SparkEngine
        The engine over all rows (with group ids).  It must stay open while the view is used:
        a rebuild of the view (a lost executor) derives its blocks from the parent's again,
        rebuilding the parent's first when they are gone too.
    k, seed : int
        The fold rule (:mod:`sparkrank.data.folds`).
    folds : tuple of int
        The folds (``0..k-1``) whose groups the view holds.
    """

    def __init__(self, parent: SparkEngine, k: int, seed: int, folds: tuple[int, ...]):
        if parent.qid_col is None:
            raise ValueError("a fold view needs query ids; this engine is one global ranking")
        self._parent, self._k, self._seed = parent, check_fold_count(k), int(seed)
        self._folds = tuple(sorted(set(int(f) for f in folds)))
        for name in SparkEngine.SHARED_SETTINGS:
            setattr(self, name, getattr(parent, name))
        self._reset_store_state()
        self._requested_features = parent.n_features  # as wide as the parent (module docstring)
        self._open()

    def _build(self) -> None:
        t0 = time.perf_counter()
        try:
            refs = self._derive()
        except Exception as exc:  # the parent's block files are gone from a host: rebuild them first
            if "BlockMissingError" not in str(exc):
                raise
            log.warning("the blocks of all rows are missing on an executor; rebuilding them, then the fold's")
            self._parent._drop_refs()
            self._parent._build()
            refs = self._derive()
        self._check_built(refs, t0)

    def _derive(self) -> list:
        task = subsets.fold_subset_task(self.owner, self._new_store(), self._k, self._seed, self._folds)
        self._refs_rdd = self._parent._refs_rdd.mapPartitions(task).persist()
        try:
            with job_progress(self.sc, "deriving fold blocks"):
                return sorted(self._refs_rdd.collect(), key=lambda r: r.partition)
        except Exception:
            self._drop_refs()
            raise


def fold_sizes(engine: SparkEngine, k: int, seed: int) -> np.ndarray:
    """The number of ``engine``'s query groups in each of the ``k`` folds (one job over its blocks)."""
    task = subsets.fold_sizes_task(k, seed)
    return engine._with_recovery(
        lambda replay: engine._refs_rdd.mapPartitions(task).fold(np.zeros(check_fold_count(k), dtype=np.int64),
                                                                  lambda a, b: a + b))


def fold_views(engine: SparkEngine, k: int, fold: int, seed: int) -> tuple[FoldView, FoldView]:
    """``(training part, held-out part)`` of fold ``fold`` (``0..k-1``) of ``engine``'s rows."""
    held_out = (fold,)
    training = tuple(f for f in range(check_fold_count(k)) if f != fold)
    train_view = FoldView(engine, k, seed, training)
    try:
        return train_view, FoldView(engine, k, seed, held_out)
    except BaseException:
        train_view.close()
        raise


def check_spark_folds(engine: SparkEngine, k: int, seed: int) -> None:
    """A ``DataError`` before any fit when a fold would get no query group (the local rule's message)."""
    check_fold_sizes(fold_sizes(engine, k, seed), seed)


def spark_group_hash(group, seed: int = 0):
    """The rule's hash as a Spark column of ``group`` (a column or column name), long in ``[0, 2**32)``."""
    from pyspark.sql import functions as F

    column = F.col(group) if isinstance(group, str) else group
    digest = F.md5(F.concat(F.lit(f"{int(seed)}:"), column.cast("string")))
    return F.conv(F.substring(digest, 1, HASH_BITS // 4), 16, 10).cast("long")


def spark_group_fold(group, k: int, seed: int = 0):
    """The fold (``0..k-1``) of each row's group as a Spark column: :func:`group_folds` row by row."""
    from pyspark.sql import functions as F

    return F.pmod(spark_group_hash(group, seed), F.lit(check_fold_count(k)))
