"""The steps of ``Xᵀc`` that a cut of the rows splits: their terms, summed where the parts meet.

Why: ``Xᵀc`` is summed in steps of :data:`~sparkrank.numerics.simd.DD_ROWS` rows from each
query's first row (:mod:`sparkrank.numerics.exact_sum`), and Spark's driver and range
placements cut one ranking into blocks anywhere, so a block's first and last rows may share a
step with its neighbour's.  Each block sums its whole steps and hands over the terms of the
rows of the steps it cuts (fewer than ``DD_ROWS`` at each end, :func:`cut_terms`); where the
parts meet (the driver, or the slice of the column-sliced merge that holds their columns) a cut
step's terms are summed per column in row order from ``+0.0`` and the step sum added by TwoSum,
as one sweep would have (:func:`add_cut_steps`).

Sparse, because hashed rows are 2²⁴ wide and a dense row of terms per product and cut row made
even 200 rows of one global ranking send gigabytes to the driver: a row's terms are its stored
entries' (a zero entry or coefficient is no term).  The bits are the dense sweep's: a column a
row does not touch adds ``+0.0`` to a step's partial there, which changes no bit (a partial
started from ``+0.0`` is never ``-0.0``), and a column no cut step touches gets no addition at all
where the dense sweep added ``(0, 0)``, which changes no bit of a finite double-double
(:mod:`sparkrank.numerics.sparse_sums`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .exact_sum import dd_add


@dataclass(frozen=True)
class CutSteps:
    """The terms of one product over some rows of cut steps.

    ``keys[i]``: the first (global) row of row ``i``'s step; ``rows[i]``: its global row; its terms
    are ``terms[indptr[i]:indptr[i + 1]]`` at columns ``columns[...]`` (ascending per row)."""

    keys: np.ndarray
    rows: np.ndarray
    indptr: np.ndarray
    columns: np.ndarray
    terms: np.ndarray

    @staticmethod
    def empty() -> "CutSteps":
        none = np.zeros(0, dtype=np.int64)
        return CutSteps(none, none, np.zeros(1, dtype=np.int64), none, np.zeros(0))

    @property
    def n_rows(self) -> int:
        return int(self.rows.shape[0])

    def joined(self, other: "CutSteps") -> "CutSteps":
        """These rows and ``other``'s (from another block: no row is in both)."""
        if other.n_rows == 0:
            return self
        if self.n_rows == 0:
            return other
        indptr = np.concatenate([self.indptr, other.indptr[1:] + self.indptr[-1]])
        return CutSteps(np.concatenate([self.keys, other.keys]), np.concatenate([self.rows, other.rows]), indptr,
                        np.concatenate([self.columns, other.columns]), np.concatenate([self.terms, other.terms]))

    def columns_in(self, first: int, end: int) -> "CutSteps":
        """The terms at columns ``first:end``, those columns counted from ``first`` (a slice of a
        column-sliced merge); every row stays, with no term where it has none there."""
        if self.n_rows == 0:
            return self
        inside = (self.columns >= first) & (self.columns < end)
        kept = np.concatenate([[0], np.cumsum(inside)]).astype(np.int64)
        return CutSteps(self.keys, self.rows, kept[self.indptr], self.columns[inside] - first, self.terms[inside])

    def touched(self) -> np.ndarray:
        """The columns with a term, ascending."""
        return np.unique(self.columns)

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.keys, self.rows, self.indptr, self.columns, self.terms))


def cut_terms(X, rows: Sequence[int], keys: Sequence[int], global_rows: Sequence[int], c: np.ndarray,
              power: int) -> CutSteps:
    """The terms ``x_rj·c_r`` (``power`` 1) or ``(x_rj·x_rj)·c_r`` (2) of ``rows`` of ``X`` (CSR with
    ``indptr``/``indices``/``data``, or dense rows; ``c`` of every row of ``X``), as a step adds
    them, for rows whose steps begin at global rows ``keys`` and who are ``global_rows``."""
    rows = np.asarray(rows, dtype=np.int64)
    cols, vals, counts = [], [], []
    for r in rows.tolist():
        if isinstance(X, np.ndarray):
            j = np.flatnonzero(X[r])
            x = np.asarray(X[r, j], dtype=np.float64)
        else:
            a, b = int(X.indptr[r]), int(X.indptr[r + 1])
            j = np.asarray(X.indices[a:b], dtype=np.int64)
            x = np.asarray(X.data[a:b], dtype=np.float64)
        ci = float(c[r])
        keep = (x != 0.0) & (ci != 0.0)
        j, x = j[keep], x[keep]
        order = np.argsort(j, kind="stable")
        cols.append(j[order])
        vals.append((x * ci if power == 1 else (x * x) * ci)[order])
        counts.append(j.shape[0])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    as_int = lambda v: np.asarray(v, dtype=np.int64).reshape(-1)  # noqa: E731
    return CutSteps(as_int(keys), as_int(global_rows), indptr,
                    np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, dtype=np.int64),
                    np.concatenate(vals) if vals else np.zeros(0))


def add_cut_steps(hi: np.ndarray, lo: np.ndarray, positions: np.ndarray, cut: CutSteps) -> None:
    """Add ``cut``'s steps, in place, to the double-double ``(hi, lo)``: column ``cut.columns[e]``
    is at ``positions[e]`` of them.  Each step's terms (every part's, whatever order they came
    in) summed per column in row order from ``+0.0``, the step sum added by TwoSum, steps in the
    order of their first rows (the module docstring)."""
    if cut.n_rows == 0:
        return
    positions = np.asarray(positions, dtype=np.int64)
    order = np.lexsort((cut.rows, cut.keys))
    keys = cut.keys[order]
    for lo_i, hi_i in _runs(keys):
        rows_in_step = order[lo_i:hi_i]
        where = np.concatenate([positions[cut.indptr[i]:cut.indptr[i + 1]] for i in rows_in_step])
        touched, inverse = np.unique(where, return_inverse=True)
        partial = np.zeros(touched.shape[0])
        at = 0
        for i in rows_in_step:  # row order; a row's columns are distinct
            k = int(cut.indptr[i + 1] - cut.indptr[i])
            idx = inverse[at: at + k]
            partial[idx] = partial[idx] + cut.terms[cut.indptr[i]: cut.indptr[i + 1]]
            at += k
        hi[touched], lo[touched] = dd_add((hi[touched], lo[touched]), (partial, np.zeros_like(partial)))


def _runs(sorted_keys: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of equal values in ``sorted_keys``."""
    edges = np.flatnonzero(np.diff(sorted_keys)) + 1
    bounds = np.concatenate([[0], edges, [sorted_keys.shape[0]]]).astype(np.int64).tolist()
    return list(zip(bounds[:-1], bounds[1:]))
