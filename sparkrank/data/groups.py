"""Query-group structure of labels: what every score-space kernel needs besides scores.

Rows of one group are contiguous: group ``g`` is ``offsets[g]:offsets[g+1]``.  Per row we
keep the label, and its *dense rank* among the distinct labels of its own group
(``0 .. n_levels[g]-1``), which the selection tree and the direct count index by.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numba import njit


@dataclass(frozen=True)
class QueryGroups:
    """Labels of contiguous query groups, with per-group label ranks and pair counts.

    Attributes
    ----------
    labels : float64 array (m,)
        Utility of each row.
    offsets : int64 array (G+1,)
        Group ``g`` holds rows ``offsets[g]:offsets[g+1]``.
    label_rank : int32 array (m,)
        Dense rank of each row's label among the distinct labels of its group.
    n_levels : int32 array (G,)
        Number of distinct labels in each group.
    pairs_per_group : int64 array (G,)
        ``|{(u, l): y_u > y_l}|`` inside each group.
    row_weights : float64 array (m,) or None
        Weight ``a_i ≥ 0`` of each row (:mod:`sparkrank.data.weights`); ``None``: unweighted.
    group_weights : float64 array (G,) or None
        Weight ``b_q ≥ 0`` of each group; ``None``: unweighted.  A pair ``(u, l)`` of group
        ``q`` weighs ``b_q·a_u·a_l`` (the data with integer weights repeated that often).
    """

    labels: np.ndarray
    offsets: np.ndarray
    label_rank: np.ndarray
    n_levels: np.ndarray
    pairs_per_group: np.ndarray
    row_weights: np.ndarray | None = None
    group_weights: np.ndarray | None = None

    @classmethod
    def from_offsets(cls, labels: np.ndarray, offsets: np.ndarray) -> "QueryGroups":
        """Build from labels and contiguous group offsets (validated)."""
        labels = np.ascontiguousarray(labels, dtype=np.float64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        m = labels.shape[0]
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != m:
            raise ValueError(f"group offsets must start at 0 and end at the row count {m}")
        if np.any(np.diff(offsets) < 0):
            raise ValueError("group offsets must be non-decreasing")
        bad = np.flatnonzero(~np.isfinite(labels))
        if bad.size:
            raise ValueError(f"label of row {int(bad[0])} is not finite ({float(labels[bad[0]])!r}); {bad.size} such rows")
        sizes = np.diff(offsets)
        group_of_row = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
        order = np.lexsort((labels, group_of_row))
        sorted_labels = labels[order]
        sorted_groups = group_of_row[order]
        new_level = np.ones(m, dtype=bool)
        if m:
            new_level[1:] = (sorted_labels[1:] != sorted_labels[:-1]) | (sorted_groups[1:] != sorted_groups[:-1])
        level_id = np.cumsum(new_level) - 1  # global level index, increasing
        level_starts = np.flatnonzero(new_level)
        level_group = sorted_groups[level_starts]
        n_levels = np.bincount(level_group, minlength=sizes.size).astype(np.int32)
        # first global level of each group = number of levels in the groups before it
        first_level_of_group = np.concatenate([[0], np.cumsum(n_levels, dtype=np.int64)[:-1]])
        label_rank = np.empty(m, dtype=np.int32)
        label_rank[order] = (level_id - first_level_of_group[sorted_groups]).astype(np.int32)
        # pairs in a group = (n_g^2 - sum over its levels of n_level^2) / 2
        level_sizes = np.diff(np.append(level_starts, m)).astype(np.float64)
        sq = np.bincount(level_group, weights=level_sizes**2, minlength=sizes.size)
        pairs = ((sizes.astype(np.float64) ** 2 - sq) / 2).round().astype(np.int64)
        return cls(labels, offsets, label_rank, n_levels, pairs)

    @classmethod
    def single(cls, labels: np.ndarray) -> "QueryGroups":
        """All rows in one global ranking."""
        labels = np.asarray(labels, dtype=np.float64)
        return cls.from_offsets(labels, np.array([0, labels.shape[0]], dtype=np.int64))

    def with_weights(self, row_weights: np.ndarray | None, group_weights: np.ndarray | None) -> "QueryGroups":
        """These groups with row and/or group weights (either may be ``None``; both ``None``:
        unweighted).  A weighted structure always holds both arrays (ones where not given), so
        kernels test :attr:`weighted` once; the weights must be checked already
        (:func:`sparkrank.data.weights.check_weights`)."""
        if row_weights is None and group_weights is None:
            return replace(self, row_weights=None, group_weights=None)
        a = np.ones(self.n_rows) if row_weights is None else np.ascontiguousarray(row_weights, dtype=np.float64)
        b = np.ones(self.n_groups) if group_weights is None else np.ascontiguousarray(group_weights, dtype=np.float64)
        if a.shape != (self.n_rows,) or b.shape != (self.n_groups,):
            raise ValueError(f"{a.shape[0]} row weights and {b.shape[0]} group weights for "
                             f"{self.n_rows} rows in {self.n_groups} groups")
        return replace(self, row_weights=a, group_weights=b)

    @property
    def weighted(self) -> bool:
        """Whether rows or groups carry weights (:meth:`with_weights`)."""
        return self.row_weights is not None

    def row_factors(self) -> np.ndarray:
        """``b_q·a_i`` of every row: what a row's own terms are multiplied by (its partners'
        terms carry their ``a_j``).  Ones when unweighted."""
        if not self.weighted:
            return np.ones(self.n_rows)
        return np.repeat(self.group_weights, self.group_sizes) * self.row_weights

    def pair_weights_per_group(self) -> np.ndarray:
        """``Σ_{(u,l)∈P_q} b_q a_u a_l`` of each group, the weighted :attr:`pairs_per_group`:
        per level ``r`` of a group, its rows' weight ``A_r`` times the weight of the rows of the
        levels below it, summed in level order (float64; the counts themselves when unweighted)."""
        if not self.weighted:
            return self.pairs_per_group.astype(np.float64)
        return level_pair_weights(self.row_weights, self.label_rank, self.offsets, self.n_levels, False) \
            * self.group_weights

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_groups(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_pairs(self) -> int:
        """``N = |P|``, the number of preference pairs."""
        return int(self.pairs_per_group.sum())

    @property
    def n_groups_without_pairs(self) -> int:
        """Groups with a single label level (they contribute no pairs and are skipped)."""
        return int(np.count_nonzero(self.pairs_per_group == 0))

    @property
    def group_sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def group_of_row(self) -> np.ndarray:
        """Group index of every row."""
        return np.repeat(np.arange(self.n_groups, dtype=np.int64), self.group_sizes)

    def slice(self, first_group: int, last_group: int) -> "QueryGroups":
        """Groups ``first_group .. last_group-1`` as a self-contained structure."""
        lo, hi = int(self.offsets[first_group]), int(self.offsets[last_group])
        return QueryGroups(
            self.labels[lo:hi],
            self.offsets[first_group : last_group + 1] - lo,
            self.label_rank[lo:hi],
            self.n_levels[first_group:last_group],
            self.pairs_per_group[first_group:last_group],
            None if self.row_weights is None else self.row_weights[lo:hi],
            None if self.group_weights is None else self.group_weights[first_group:last_group],
        )


@njit(cache=True)
def level_pair_weights(row_weights, label_rank, offsets, n_levels, adjacent):
    """Per group, from its level sums ``A_r`` (rows in order): ``Σ_r A_r · Σ_{s<r} A_s`` (every
    pair), or with ``adjacent`` ``Σ_r A_r · A_{r-1}`` (pairs of adjacent levels), levels ascending."""
    out = np.zeros(offsets.shape[0] - 1)
    level_sum = np.zeros(max(1, n_levels.max()) if n_levels.shape[0] else 1)
    for g in range(offsets.shape[0] - 1):
        k = n_levels[g]
        level_sum[:k] = 0.0
        for i in range(offsets[g], offsets[g + 1]):
            level_sum[label_rank[i]] += row_weights[i]
        below = 0.0
        total = 0.0
        for r in range(k):
            total += level_sum[r] * ((level_sum[r - 1] if r else 0.0) if adjacent else below)
            below += level_sum[r]
        out[g] = total
    return out
