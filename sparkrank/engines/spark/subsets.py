"""Executor side of fold views: some folds' query groups of a block, kept as a block of its own.

Why: group-wise k-fold (``sparkrank tune --folds k``) trains on k training parts and scores k
held-out parts, then refits on everything.  Built as engines of their own, those are 2k + 1
reads of the source (from the lake, a decode and a shuffle each).  A fold view instead derives
its blocks from the blocks of the engine over all rows, task by task on the executor that holds
them (the parent's cached references keep their locality): the groups of the wanted folds are
copied out of the memory-mapped block into a new one, and the source is read once.

Which groups: the one fold rule of :mod:`sparkrank.data.folds` (a seeded hash of the group id
text), evaluated on the group ids the block keeps, so a view holds exactly the rows a filter
on :func:`~sparkrank.data.folds.spark_group_fold` or :func:`~sparkrank.data.folds.group_folds`
would give.  Rows keep their order in the block (a group is never split), so a model trained on
a view has the bits of one trained on those rows by any engine.
"""

from __future__ import annotations

import os
import socket

import numpy as np

from ...data.block import RankingData
from ...data.folds import check_fold_count, group_hash, take_groups
from . import store
from ...io.spark.worker import worker_task


def block_data(block: store.Block) -> RankingData:
    """A memory-mapped block as :class:`RankingData` (no copy of its arrays)."""
    import scipy.sparse as sp

    X = block.X
    if not isinstance(X, np.ndarray):
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape, copy=False)
    return RankingData(X, block.groups, block.qids)


def group_fold_numbers(block: store.Block, k: int, seed: int) -> np.ndarray:
    """The fold of each of the block's groups (:func:`~sparkrank.data.folds.group_hash` mod ``k``)."""
    if block.qids is None:
        raise ValueError("a fold view needs group ids; this block is one global ranking")
    return (group_hash(block.qids, seed) % np.uint64(k)).astype(np.int64)


def fold_sizes_task(k: int, seed: int):
    """Each block's number of query groups per fold (an int64 array of ``k``), for the driver's
    check that every fold gets one (:func:`~sparkrank.data.folds.check_fold_sizes`)."""
    k = check_fold_count(k)

    def task(refs):
        counts = np.zeros(k, dtype=np.int64)
        for ref in refs:
            if ref.n_rows:
                counts += np.bincount(group_fold_numbers(store.open_block(ref.path, ref.width), k, seed),
                                      minlength=k)
        yield counts

    return worker_task(task)


def fold_subset_task(owner: store.Owner, store_id: str, k: int, seed: int, folds: tuple[int, ...]):
    """A ``mapPartitions`` function over a parent engine's block references: each block's groups
    of ``folds`` written as the block of the same partition in store ``store_id``, and its
    reference (a :class:`pyspark.sql.Row` of :data:`~sparkrank.engines.spark.store.REF_SCHEMA`'s fields).
    A parent block missing on this host raises :class:`~sparkrank.engines.spark.store.BlockMissingError`
    (the driver rebuilds the parent, then the view)."""
    k = check_fold_count(k)
    wanted = np.asarray(sorted(set(folds)), dtype=np.int64)

    def task(refs):
        from pyspark.sql import Row

        for ref in refs:
            out = {"partition": ref.partition, "path": "", "host": socket.gethostname(), "n_rows": 0,
                   "n_groups": 0, "n_pairs": 0, "n_groups_without_pairs": 0, "width": ref.width, "nnz": 0, "nbytes": 0,
                   "error": None}
            block = store.open_block(ref.path, ref.width) if ref.n_rows else None
            keep = np.zeros(0, dtype=np.int64) if block is None else \
                np.flatnonzero(np.isin(group_fold_numbers(block, k, seed), wanted))
            if keep.size:  # (a block without rows needs no files: passes skip it)
                part = take_groups(block_data(block), keep)
                # a view is as wide as its parent (take_groups keeps the width), as the local
                # engine's folds are: every fold's weights then have the same length
                path = os.path.join(store.app_dir(owner), store_id, f"part-{ref.partition:05d}")
                out.update(store._write_block(path, RankingData(part.X, part.groups, part.qids)))
            yield Row(**out)

    return worker_task(task)
