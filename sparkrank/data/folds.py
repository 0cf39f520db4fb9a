"""The one rule that puts a query group into a fold, computed identically on every engine.

Model selection must never cut a query group (a ranking loss only compares rows of one
group), so folds and train/validation splits assign whole *groups*.  The rule: the fold of
a group is a seeded hash of the *text* of its id,

    h = first 32 bits of MD5("<seed>:<id text>"),   fold = h mod k,

where the id text is what Spark's ``cast(id as string)`` gives (integers in decimal, strings
as they are, several group columns as the JSON text of
:func:`sparkrank.io.spark.frames.group_expression`).  Spark evaluates it as a column expression
(``md5``, ``conv``, ``pmod``: a filter pushed into the scan, nothing collected), the local
engine with :mod:`hashlib` over its group ids, and both give every group the same fold, so
``tune --folds`` picks from the same splits whichever engine runs it.  Unlike dealing
shuffled groups round-robin, fold sizes vary (binomially) with the hash; a fold without
any group is an error (:func:`group_folds`).
"""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
from typing import Iterable

import numpy as np

from .block import DataError, RankingData
from .groups import QueryGroups

#: Hash values are in ``[0, 2**HASH_BITS)``.
HASH_BITS = 32
_HEX_DIGITS = HASH_BITS // 4


def group_id_text(value) -> str:
    """The text Spark's ``cast(value as string)`` gives for a group id (long, int, string, double)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _java_double_text(float(value))
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def _java_double_text(x: float) -> str:
    """``java.lang.Double.toString``: plain decimals in ``[1e-3, 1e7)``, else ``d.dddE±n``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    a = abs(x)
    if 1e-3 <= a < 1e7:
        return sign + repr(a)  # Python's repr is plain (with ".0") in this range too
    _, digits, exponent = Decimal(repr(a)).normalize().as_tuple()
    text = "".join(map(str, digits))
    return f"{sign}{text[0]}.{text[1:] or '0'}E{len(digits) + exponent - 1}"


def group_hash(ids: Iterable, seed: int = 0) -> np.ndarray:
    """The rule's hash of each group id, uint64 in ``[0, 2**32)``."""
    prefix = f"{int(seed)}:"
    return np.array([int(hashlib.md5((prefix + group_id_text(v)).encode("utf-8")).hexdigest()[:_HEX_DIGITS], 16)
                     for v in ids], dtype=np.uint64)


def check_fold_count(k: int) -> int:
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise ValueError(f"k-fold needs at least 2 folds, got {k}")
    return int(k)


def group_folds(ids: Iterable, k: int, seed: int = 0) -> np.ndarray:
    """Fold number (``0..k-1``) of each group id; a :class:`DataError` when a fold gets no group."""
    k = check_fold_count(k)
    fold = (group_hash(ids, seed) % np.uint64(k)).astype(np.int64)
    check_fold_sizes(np.bincount(fold, minlength=k), seed)
    return fold


def check_fold_sizes(groups_per_fold: np.ndarray, seed: int) -> None:
    """A :class:`DataError` unless every fold got a query group (``groups_per_fold[i]``: the
    groups of fold ``i``, however an engine counted them)."""
    counts = np.asarray(groups_per_fold, dtype=np.int64)
    k, total = counts.shape[0], int(counts.sum())
    if total < k:
        raise DataError(f"group-wise {k}-fold needs at least {k} query groups, the data has {total}")
    if not counts.all():
        raise DataError(f"group-wise {k}-fold: fold {int(np.argmin(counts)) + 1} gets none of the "
                        f"{total} query groups (folds are a hash of the group id, seed {seed}); "
                        "use fewer folds or another seed")


def take_groups(data: RankingData, group_index: np.ndarray) -> RankingData:
    """The rows of the given groups (in the given order) as a new :class:`RankingData`, as wide
    as ``data``: what every engine trains and scores a fold on."""
    group_index = np.asarray(group_index, dtype=np.int64)
    offsets = data.groups.offsets
    sizes = np.diff(offsets)[group_index]
    new_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # row r of new group j is old row offsets[g_j] + (r - new_offsets[j])
    rows = np.repeat(offsets[group_index] - new_offsets[:-1], sizes) + np.arange(new_offsets[-1], dtype=np.int64)
    groups = QueryGroups.from_offsets(data.labels[rows], new_offsets)
    if data.groups.weighted:  # each kept row and group keeps its weight
        groups = groups.with_weights(data.groups.row_weights[rows], data.groups.group_weights[group_index])
    qids = None if data.qids is None else data.qids[group_index]
    # the subset's own input order: the rank of each kept row's original position
    return RankingData(data.X[rows], groups, qids, np.argsort(np.argsort(data.row_order[rows])))


def local_split(data: RankingData, k: int, seed: int) -> list[tuple[RankingData, RankingData]]:
    """``(training part, held-out part)`` of each of the ``k`` folds of ``data`` (whole groups)."""
    if data.qids is None:
        raise DataError("group-wise k-fold needs query ids; this data is one global ranking")
    fold = group_folds(data.qids, k, seed)
    return [(take_groups(data, np.flatnonzero(fold != i)), take_groups(data, np.flatnonzero(fold == i)))
            for i in range(k)]
