"""Fold views of one collected source: ``CrossValidator``'s fold frames from one Spark job.

``CrossValidator(foldCol=...)`` (pyspark 4.x ``_kFold``) cuts each fold from the dataset it is
given, ``checked = dataset.withColumn(foldCol, <foldCol, or an error when out of range>)``, as
``checked.filter(foldCol != i)`` (training) and ``checked.filter(foldCol == i)`` (validation),
persists both and hands them to the estimator and the evaluator; its refit gets the dataset
itself.  Collected one by one, that is one Spark job per fold frame -- ``2k + 1`` for ``k``
folds -- where ``sparkrank tune`` reads its data once and cuts the folds in memory.

A frame made by :func:`~sparkrank.ml.with_group_folds` is remembered here (:func:`register`).
When the in-process engines collect a frame (:func:`sparkrank.ml.local_fit.collect_table`) that
Spark calls semantically equal (``sameSemantics``: the same canonical plan) to such a frame, to
one of its ``CrossValidator`` fold frames or to a plain ``filter`` of it by one fold value, the
remembered frame is collected once, with the fold column, and the fold's rows are taken from
that table in memory.  A filter keeps the order of the rows within the scan it filters, so the
rows come in the order a collection of the fold frame itself gives: the same data, the same
model, bit for bit.  A fold column with a null or a value outside ``[0, k)`` (where
``CrossValidator`` raises) is not viewed: such a frame is collected itself.

The table stays until the next remembered frame is collected or
:func:`~sparkrank.ml.release_blocks`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

#: Frames of :func:`register` kept (the newest): a session rarely cross-validates more at once.
KEPT = 4


@dataclass
class Folded:
    """A frame with a fold column in ``[0, folds)``, and its fold frames' semantic hashes."""

    frame: Any
    fold_col: str
    folds: int
    views: dict[int, list[tuple[Any, str, int]]] | None = field(default=None)

    def match(self, df) -> tuple[str, int] | None:
        """``("all", -1)``, ``("train", i)`` or ``("validation", i)`` when ``df`` is that view of
        :attr:`frame` by Spark's semantics, else ``None``."""
        if df is self.frame:
            return "all", -1
        if self.fold_col not in df.columns:
            return None
        if self.views is None:
            self.views = {}
            for view, kind, i in self._candidates():
                self.views.setdefault(view.semanticHash(), []).append((view, kind, i))
        for view, kind, i in self.views.get(df.semanticHash(), ()):
            if df.sameSemantics(view):
                return kind, i
        return None

    def _candidates(self):
        """``(frame, kind, fold)`` of every view: the frame, ``CrossValidator``'s fold frames and
        plain filters by fold value."""
        from pyspark.sql import functions as F

        col, k = self.fold_col, self.folds
        # pyspark 4.x CrossValidator._kFold's range check, expression for expression
        checked = self.frame.withColumn(col, F.when((F.lit(0) <= F.col(col)) & (F.col(col) < F.lit(k)), F.col(col))
                                        .otherwise(F.raise_error(F.printf(
                                            F.lit(f"Fold number must be in range [0, {k}), but got %s"), F.col(col)))))
        yield self.frame, "all", -1
        for i in range(k):
            for base in (checked, self.frame):
                yield base.filter(F.col(col) != F.lit(i)), "train", i
                yield base.filter(F.col(col) == F.lit(i)), "validation", i


class FoldViews:
    """The remembered frames and the one collected table (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._folded: list[Folded] = []
        self._table: tuple[Any, tuple[str, ...], Any] | None = None  # (frame, columns, Arrow table)

    def register(self, frame, fold_col: str, folds: int) -> None:
        with self._lock:
            self._folded = [Folded(frame, fold_col, int(folds)), *self._folded][:KEPT]

    def table(self, df, names: list[str], collect):
        """The columns ``names`` of ``df`` from a remembered frame's table, or ``None`` (``df`` is
        no view, or its fold values are not all in range); ``collect(frame, names)`` collects."""
        with self._lock:
            for folded in self._folded:
                found = folded.match(df)
                if found is not None:
                    return self._view(folded, found, names, collect)
        return None

    def _view(self, folded: Folded, found: tuple[str, int], names: list[str], collect):
        import pyarrow.compute as pc

        wanted = tuple(dict.fromkeys([*names, folded.fold_col]))
        if self._table is None or self._table[0] is not folded.frame or not set(wanted) <= set(self._table[1]):
            self._table = None  # the old table goes before the new one is collected
            self._table = (folded.frame, wanted, collect(folded.frame, list(wanted)))
        table = self._table[2]
        fold = table.column(folded.fold_col)
        if fold.null_count or (len(table) and not 0 <= pc.min(fold).as_py() <= pc.max(fold).as_py() < folded.folds):
            return None
        kind, i = found
        if kind == "train":
            table = table.filter(pc.not_equal(fold, i))
        elif kind == "validation":
            table = table.filter(pc.equal(fold, i))
        return table.select(list(names))

    def release(self) -> None:
        with self._lock:
            self._table = None


VIEWS = FoldViews()
