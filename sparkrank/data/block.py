"""The in-memory block: CSR features + labels + contiguous query groups.

A :class:`RankingData` is what the local engine trains on and what a Spark partition
holds.  Rows are stored group-contiguous; ``row_order[i]`` is the position the stored row
``i`` had in the caller's input, so predictions can be returned in input order.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from ..choices import FEATURE_LAYOUTS, check_choice
from ..numerics.linalg import is_sparse
from .errors import DataError
from .groups import QueryGroups

if TYPE_CHECKING:
    import scipy.sparse as sp


#: The one rule for rows that may be dropped on request (``drop_invalid_rows=True``,
#: ``--drop-invalid-rows``): a null or non-finite label, or a null group id.  Anything
#: else wrong in a row (NaN features, bad indices) is always an error.
INVALID_ROWS = "rows with a null or non-finite label or a null group id"
DROP_HINT = "; pass --drop-invalid-rows (drop_invalid_rows=True) to drop " + INVALID_ROWS


#: Largest feature dimension accepted unless raised (``--max-features`` / ``max_features``):
#: 2²⁴, enough for hashed feature ids (ads and recommendation data hash into 2²⁰–2²⁴).
#: Data memory is proportional to the non-zeros (a pass over CSR rows this wide sums only the
#: columns each tile touches: ``numerics/sparse_sums.py``), but every solver keeps about ten
#: dense float64 vectors of the full dimension: 134 MB each at 2²⁴ features.  The memory model
#: counts them before the rows are read (``data/memory.py``: ``check_local``; on Spark
#: ``check_worker`` and ``check_driver_results``), and a single stray index such as 200,000,000,
#: which would need tens of GB, is refused here.
DEFAULT_MAX_FEATURES = 2**24
_max_features = [DEFAULT_MAX_FEATURES]


def max_features_limit(max_features: int | None = None) -> int:
    """``max_features`` itself, or (``None``) the limit in force in this process.

    Readers and block builders resolve their limit here *on the driver*, when they are
    called, so Spark tasks carry the value in their closures.
    """
    return _max_features[0] if max_features is None else int(max_features)


@contextlib.contextmanager
def feature_limit(max_features: int | None) -> Iterator[None]:
    """Within the block, readers accept at most ``max_features`` columns (``None``: unchanged);
    the CLI's ``--max-features``."""
    old = _max_features[0]
    if max_features is not None:
        if max_features < 1:
            raise ValueError(f"--max-features must be positive, got {max_features}")
        _max_features[0] = int(max_features)
    try:
        yield
    finally:
        _max_features[0] = old


def check_max_features(width: int, max_features: int | None, what: str) -> None:
    """Raise :class:`DataError` when ``width`` columns exceed the limit (``None``: the one in force).

    ``what`` names where the widest column was seen (file, line or row, index), so the
    message is the same wherever the check runs.
    """
    limit = max_features_limit(max_features)
    if width > limit:
        raise DataError(max_features_message(what, width, limit))


def max_features_message(what: str, width: int, max_features: int) -> str:
    """The one text of the feature-dimension guard (see :data:`DEFAULT_MAX_FEATURES`)."""
    return (f"{what} needs {width} feature columns, more than --max-features={max_features} (each dense "
            f"weight vector would take {8 * width / 1e6:,.0f} MB); raise --max-features (max_features=) "
            "if the data really is that wide")


def check_model_width(n_columns: int, n_weights: int, source: str, data: str = "the data") -> None:
    """A ``DataError`` naming the model ``source`` (and the input, ``data``) when the data has more
    feature columns than the model has weights: the one message of predict and evaluate on
    both engines.

    Fewer columns are fine (absent trailing features are zeros).  Plain arguments, so a
    Spark task can check without shipping the model.
    """
    if n_columns > n_weights:
        raise DataError(f"{data} has {n_columns} feature columns but the model {source} has only "
                        f"{n_weights} weights (it never saw the features beyond)")


def check_fixed_width(n_columns: int, n_weights: int, source: str, data: str = "the data") -> None:
    """A ``DataError`` with both counts when rows of a fixed width (a vector or list column, CSV/TSV
    or named columns) have fewer feature columns than the model ``source`` has weights: such rows
    say every feature they have, so a narrower width is data the model was not trained for.
    (Sparse rows, SVMlight's or an ``indices``/``values`` pair, leave out zeros and are not
    checked.)  Plain arguments, so a Spark task can check without shipping the model."""
    if n_columns < n_weights:
        raise DataError(f"{data} has {n_columns} feature columns but the model {source} has {n_weights} weights: "
                        "its rows are of a fixed width (a vector or list column, or named columns), so it is not "
                        "data of the model's features")


def beyond_float32(what: str, value) -> str:
    """The one text for a finite feature value that float32 cannot hold (``--dtype float32``
    turns it into inf): ``what`` names the feature (and line or row), ``value`` is as read."""
    return f"{what} is {value}, beyond float32's range (--dtype float64 reads it)"


@dataclass(frozen=True)
class RankingData:
    """Training or evaluation data for a linear ranker.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix or C-contiguous ndarray (m, n), float64 or float32
        Feature rows, stored in group-contiguous order: CSR, or dense rows when they were
        asked for (``layout``) -- for nearly dense data (LETOR) they need no index array.
        Every engine and kernel gives the same numbers for both.
    groups : QueryGroups
        Labels and group structure of the stored rows.
    qids : ndarray (G,) or None
        The group id of each group (``None`` for one global ranking).
    input_order : int64 ndarray (m,) or None
        Input position of each stored row; ``None`` when the rows kept their input order
        (the common case of group-contiguous input: no O(m) array is held for it).
    row_order : int64 ndarray (m,)
        Input position of each stored row, always as an array (made on demand).
    """

    X: "sp.csr_matrix | np.ndarray"
    groups: QueryGroups
    qids: np.ndarray | None
    input_order: np.ndarray | None = None

    @classmethod
    def from_arrays(
        cls,
        X,
        labels: Sequence[float] | np.ndarray,
        qid: Sequence | np.ndarray | None = None,
        *,
        dtype: type = np.float64,
        n_features: int | None = None,
        layout: str = "sparse",
        row_weights: Sequence[float] | np.ndarray | None = None,
        group_weights: Sequence[float] | np.ndarray | None = None,
    ) -> "RankingData":
        """Validate and group rows.

        Parameters
        ----------
        X : array-like or sparse matrix (m, n)
            Features; converted to ``dtype`` (float64 or float32) in the ``layout``.
        labels : array-like (m,)
            Real-valued utilities; must be finite.
        qid : array-like (m,), optional
            Group id per row (any sortable type: ints or strings).  Rows of a group need
            not be contiguous; they are gathered stably.  ``None``: one global ranking.
        n_features : int, optional
            Pad the matrix to this many columns (it must not have more).
        layout : {"sparse", "auto", "dense"}
            Store ``X`` as CSR (default), as given (a 2-D ndarray stays dense rows, anything
            else CSR), or as dense rows.
        row_weights : array-like (m,), optional
            Weight ``a_i ≥ 0`` of each row (:mod:`sparkrank.data.weights`: the model of the
            data with row ``i`` repeated ``a_i`` times).
        group_weights : array-like (m,), optional
            Weight ``b_q ≥ 0`` of each row's group, the same on every row of a group.
        """
        if dtype not in (np.float64, np.float32):
            raise DataError(f"dtype must be float64 or float32, got {dtype!r}")
        check_choice(layout, FEATURE_LAYOUTS, "layout")
        dense = layout == "dense" or (layout == "auto" and isinstance(X, np.ndarray) and X.ndim == 2)
        if dense:
            X = np.ascontiguousarray(X.toarray() if is_sparse(X) else np.atleast_2d(X), dtype=dtype)
        else:
            import scipy.sparse as sp

            X = sp.csr_matrix(X, dtype=dtype) if not (sp.issparse(X) and X.format == "csr" and X.dtype == dtype) else X
            X.sum_duplicates()
        y = np.asarray(labels, dtype=np.float64).ravel()
        m = X.shape[0]
        if y.shape[0] != m:
            raise DataError(f"{m} feature rows but {y.shape[0]} labels")
        if n_features is not None:
            check_max_features(n_features, None, "n_features")
            if X.shape[1] > n_features:
                raise DataError(f"data has {X.shape[1]} feature columns, more than n_features={n_features}")
            X = _with_width(X, n_features)
        _check_finite(X, y)
        if qid is None:
            order = None
            offsets = np.array([0, m], dtype=np.int64)
            qids = None
        else:
            q = np.asarray(qid)
            if q.shape[0] != m:
                raise DataError(f"{m} feature rows but {q.shape[0]} qids")
            if q.dtype.kind == "f" and not np.all(np.isfinite(q)):
                bad = int(np.flatnonzero(~np.isfinite(q))[0])
                raise DataError(f"qid of row {bad} is not finite")
            if q.dtype.kind == "O":
                q = q.astype(str)
            order, offsets, qids = _group_rows(q)
        if order is not None:
            X = X[order]
            y = y[order]
        groups = QueryGroups.from_offsets(y, offsets)
        if row_weights is not None or group_weights is not None:
            groups = _weighted(groups, row_weights, group_weights, order, qids)
        return cls(X, groups, qids, order)

    @property
    def row_order(self) -> np.ndarray:
        if self.input_order is None:
            return np.arange(self.n_rows, dtype=np.int64)
        return self.input_order

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def labels(self) -> np.ndarray:
        return self.groups.labels

    def with_features(self, n_features: int) -> "RankingData":
        """The same data with the feature dimension padded to ``n_features``."""
        if n_features == self.n_features:
            return self
        if n_features < self.n_features:
            raise DataError(f"data has {self.n_features} feature columns, more than the model's {n_features}")
        return RankingData(_with_width(self.X, n_features), self.groups, self.qids, self.input_order)

    def to_input_order(self, values: np.ndarray) -> np.ndarray:
        """Reorder a per-row array from stored order back to input order."""
        if self.input_order is None:
            return np.array(values)
        out = np.empty_like(values)
        out[self.row_order] = values
        return out


def _weighted(groups: QueryGroups, row_weights, group_weights, order: np.ndarray | None, qids) -> QueryGroups:
    """``groups`` with the caller's per-row weight arrays (input order) checked and stored
    (``qids``: the groups' ids, ``None`` for one global ranking)."""
    from .weights import check_weights, group_weights_of_rows

    def stored(values, name):
        a = check_weights(values, name)
        if a.shape[0] != groups.n_rows:
            raise DataError(f"{groups.n_rows} rows but {a.shape[0]} {name}s")
        return a if order is None else a[order]
    a = None if row_weights is None else stored(row_weights, "row weight")
    b = None if group_weights is None else group_weights_of_rows(
        stored(group_weights, "group weight"), groups.offsets, "group weight", qids=qids)
    return groups.with_weights(a, b)


def _group_rows(q: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Stable grouping of rows by qid: ``(order, offsets, qids)``, with ``order`` ``None`` when
    the groups are already contiguous (the rows keep their input order)."""
    m = q.shape[0]
    if m == 0:
        return None, np.zeros(1, np.int64), q[:0]
    change = np.ones(m, dtype=bool)
    change[1:] = q[1:] != q[:-1]
    starts = np.flatnonzero(change)
    run_ids = q[starts]
    if np.unique(run_ids).size == run_ids.size:  # already contiguous: keep input order
        return None, np.append(starts, m).astype(np.int64), run_ids
    order = np.argsort(q, kind="stable").astype(np.int64)
    qs = q[order]
    change = np.ones(m, dtype=bool)
    change[1:] = qs[1:] != qs[:-1]
    starts = np.flatnonzero(change)
    return order, np.append(starts, m).astype(np.int64), qs[starts]


def _with_width(X, n_features: int):
    """``X`` with zero columns appended up to ``n_features`` (``X`` itself when it has them:
    dense rows are not copied)."""
    if X.shape[1] == n_features:
        return X
    if isinstance(X, np.ndarray):
        return np.pad(X, ((0, 0), (0, n_features - X.shape[1])))
    import scipy.sparse as sp

    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))


def _check_finite(X, y: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        r = int(bad[0])
        raise DataError(f"label of row {r} is {float(y[r])!r}: labels must be finite ({bad.size} bad rows)")
    # The sum is NaN or infinite when a value is (or, rarely, when finite values overflow it):
    # only then scan for the culprit, so valid data costs no mask the size of X.
    dense = isinstance(X, np.ndarray)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(X if dense else X.data, dtype=np.float64)):
            return
    if dense:
        bad = np.argwhere(~np.isfinite(X))
        if bad.size:
            row, col = (int(v) for v in bad[0])
            raise DataError(f"feature column {col} of row {row} is {float(X[row, col])!r}: features must be finite "
                            f"({bad.shape[0]} bad values)")
        return
    badnz = np.flatnonzero(~np.isfinite(X.data))
    if badnz.size:
        k = int(badnz[0])
        row = int(np.searchsorted(X.indptr, k, side="right") - 1)
        col = int(X.indices[k])
        raise DataError(
            f"feature column {col} of row {row} is {float(X.data[k])!r}: features must be finite ({badnz.size} bad values)"
        )
