"""A digest of every number a fit sees: group ids and sizes, labels, feature values and indices,
and row and group weights when the rows have them.

What a checkpoint is resumed against (:mod:`sparkrank.checkpoints`): a resumed fit must see the
rows the checkpoint's fit saw, or it would continue the old data's fit and write its model.

The same rows give the same digest on every engine and any partitioning.  Engines keep a
query's rows together and in input order (the order decides the sums of ``Xᵀc``), but order the
queries differently (the local engine in input or id order, Spark by partition), and Spark's
driver placement may cut a query between blocks.  So the digest is built from pieces that
do not depend on where a block starts:

* a query's rows are hashed in *chunks* of :data:`CHUNK_ROWS` rows counted from its first row
  (one chunk for most queries), each chunk with BLAKE2b over the query's id, the chunk's number
  and the raw bytes of its labels (float64) and of its feature rows (dense rows as stored; CSR
  as row lengths, int32 column indices and values), and, for weighted rows, a third BLAKE2b
  over the chunk's row weights (float64);
* a query's id and size are hashed once per query, and so is its group weight (weighted rows);
* the digests are added as 256-bit integers (mod 2²⁵⁶): the sum does not depend on the order
  the queries or blocks come in, and a block's sums add to another's.

A block that cuts a chunk (driver placement) hands the rows of its cut chunks back as
:class:`Piece` s, and whoever gathers the blocks joins the pieces of each chunk in row order and
hashes them as one (:func:`digest_pieces`).  Feature storage (dtype and layout) is part of the
feature bytes and is also recorded by name, so a changed ``--dtype`` is named as such.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

#: Rows per chunk of a query's rows (a few MB of LETOR rows: the per-chunk cost is noise).
CHUNK_ROWS = 4096
_MODULUS = 1 << 256
_DIGEST_BYTES = 32


@dataclass(frozen=True)
class DataDigest:
    """Order-free sums of the digests of some rows' queries (``groups``) and chunks (``labels``,
    ``features``), and the names of their feature storage.  :meth:`add` joins disjoint rows."""

    groups: int = 0
    labels: int = 0
    features: int = 0
    storage: frozenset = field(default_factory=frozenset)
    weights: int = 0  # 0: rows without weights (``weights`` is then not recorded)

    def add(self, other: "DataDigest | None") -> "DataDigest":
        if other is None:
            return self
        return DataDigest((self.groups + other.groups) % _MODULUS, (self.labels + other.labels) % _MODULUS,
                          (self.features + other.features) % _MODULUS, self.storage | other.storage,
                          (self.weights + other.weights) % _MODULUS)

    def as_dict(self) -> dict[str, str]:
        """The digest as a checkpoint records it (hex strings of 128 bits of each sum; ``weights``
        only for weighted rows, so that a checkpoint of unweighted rows reads as it always did)."""
        out = {"feature_storage": ", ".join(sorted(self.storage)), "groups": _hex(self.groups),
               "labels": _hex(self.labels), "features": _hex(self.features)}
        return {**out, "weights": _hex(self.weights)} if self.weights else out


@dataclass(frozen=True)
class Piece:
    """Rows of a chunk that a block boundary cut: the chunk (its query's key and number), where
    the rows start in the query, and the bytes of their labels and feature rows (:class:`_RowBytes`)
    and of their row weights (``b""``: rows without weights)."""

    key: bytes
    chunk: int
    start: int
    labels: bytes
    rows: tuple
    weights: bytes = b""


def _hex(value: int) -> str:
    return value.to_bytes(_DIGEST_BYTES, "little")[:16].hex()


def _number(h) -> int:
    return int.from_bytes(h.digest(), "little")


_LENGTH = struct.Struct("<Q")
_NUMBER = struct.Struct("<q")
_WEIGHT = struct.Struct("<d")


def group_keys(qids: np.ndarray | None, n_groups: int) -> list[bytes]:
    """Each query's id as bytes that are the same whichever engine read it (integers as int64,
    floats as float64, anything else as UTF-8 text, each tagged with its kind); ``b""`` for the
    one query of rows without ids."""
    if qids is None:
        return [b""] * n_groups
    q = np.asarray(qids)
    if q.dtype.kind in "biu":
        raw = q.astype("<i8").tobytes()
        return [b"i" + raw[8 * i: 8 * i + 8] for i in range(q.shape[0])]
    if q.dtype.kind == "f":
        raw = q.astype("<f8").tobytes()
        return [b"f" + raw[8 * i: 8 * i + 8] for i in range(q.shape[0])]
    return [b"s" + str(v).encode("utf-8") for v in q.tolist()]


def _key_prefix(key: bytes) -> bytes:
    """What every digest of a query starts with: its key, length first (no key is the start of
    another), then a number (its size, or a chunk's number)."""
    return _LENGTH.pack(len(key)) + key


def storage_name(X) -> str:
    """``"float64 dense rows"`` or ``"float32 CSR"``: how ``X`` holds the feature values."""
    dense = isinstance(X, np.ndarray)
    values = X if dense else X.data
    return f"{np.dtype(values.dtype).name} {'dense rows' if dense else 'CSR'}"


def _bytes(array: np.ndarray, dtype=None) -> memoryview:
    return memoryview(np.ascontiguousarray(array, dtype=dtype)).cast("B")


class _RowBytes:
    """The bytes a chunk's digest covers, for any rows ``a:b`` of a block, as slices of views of
    the block's arrays made once (a chunk then costs no numpy call: most queries are one chunk
    of a few rows)."""

    def __init__(self, X, labels: np.ndarray, row_weights: np.ndarray | None = None):
        self.labels = _bytes(labels, np.float64)
        self.weights = None if row_weights is None else _bytes(row_weights, np.float64)
        if isinstance(X, np.ndarray):
            self.dense = _bytes(X)
            self.row_bytes = X.shape[1] * X.itemsize if X.ndim == 2 else 0
            self.indptr = None
        else:
            indptr = np.asarray(X.indptr, dtype=np.int64)
            self.indptr = indptr.tolist()
            self.lengths = _bytes(np.diff(indptr), "<i8")
            self.indices = _bytes(X.indices, "<i4")
            self.values = _bytes(X.data)
            self.value_bytes = X.data.itemsize

    def rows(self, a: int, b: int) -> tuple:
        """Rows ``a:b`` as ``(dense rows,)`` or ``(row lengths as int64, int32 column indices, values)``."""
        if self.indptr is None:
            return (self.dense[a * self.row_bytes: b * self.row_bytes],)
        lo, hi = self.indptr[a], self.indptr[b]
        return (self.lengths[8 * a: 8 * b], self.indices[4 * lo: 4 * hi],
                self.values[self.value_bytes * lo: self.value_bytes * hi])


def _chunk_digest(key_prefix: bytes, chunk: int, labels, rows: tuple, weights=None) -> tuple[int, int, int]:
    """The labels', the features' and the row weights' digests of one chunk (its bytes as
    :class:`_RowBytes` gives them; weights 0 for rows without weights)."""
    prefix = key_prefix + _NUMBER.pack(chunk)
    h = hashlib.blake2b(prefix, digest_size=_DIGEST_BYTES)
    h.update(labels)
    f = hashlib.blake2b(prefix, digest_size=_DIGEST_BYTES)
    for part in rows:
        f.update(part)
    if weights is None:
        return _number(h), _number(f), 0
    return _number(h), _number(f), _number(hashlib.blake2b(prefix + b"row weights" + weights,
                                                           digest_size=_DIGEST_BYTES))


def _group_weight_digest(key_prefix: bytes, weight: float) -> int:
    return _number(hashlib.blake2b(key_prefix + b"group weight" + _WEIGHT.pack(weight), digest_size=_DIGEST_BYTES))


def block_digest(X, labels: np.ndarray, offsets: np.ndarray, keys: Sequence[bytes], *, lead: int = 0,
                 continues: bool = False, last_size: int = 0, row_weights: np.ndarray | None = None,
                 group_weights: np.ndarray | None = None) -> tuple[DataDigest, list[Piece]]:
    """The digest of a block of whole or cut queries, and the pieces of the chunks it cut.

    Parameters
    ----------
    X : dense rows or CSR (scipy's, or arrays with ``indptr``/``indices``/``data``)
    labels : float64 array (rows,)
    offsets : int array (queries + 1,)
        The block's queries (block rows).
    keys : list of bytes
        Each query's :func:`group_keys` key.
    lead : int
        Rows of the block's first query in earlier blocks (driver placement; else 0).  A query
        is counted (its key and size) by the block where it starts.
    continues : bool
        Whether the block's last query goes on in the next block; then ``last_size`` is its size.
    row_weights, group_weights : float64 arrays (rows,) and (queries,), or None
        The rows' weights (:class:`~sparkrank.data.groups.QueryGroups`: both or neither).
    """
    view = _RowBytes(X, labels, row_weights)
    labels_sum = features_sum = weights_sum = 0
    pieces: list[Piece] = []
    offsets = np.asarray(offsets, dtype=np.int64).tolist()
    n_rows = offsets[-1] if offsets else 0
    groups_sum = 0
    for j, key in enumerate(keys):
        row, stop = offsets[j], offsets[j + 1]
        position = lead if j == 0 else 0
        key_prefix = _key_prefix(key)
        if position == 0:
            size = last_size if continues and stop == n_rows else stop - row
            groups_sum += _number(hashlib.blake2b(key_prefix + _NUMBER.pack(size), digest_size=_DIGEST_BYTES))
            if group_weights is not None:
                weights_sum += _group_weight_digest(key_prefix, float(group_weights[j]))
        while row < stop:
            end = min(stop, row + CHUNK_ROWS - position % CHUNK_ROWS)
            rows, chunk_labels = view.rows(row, end), view.labels[8 * row: 8 * end]
            chunk_weights = None if view.weights is None else view.weights[8 * row: 8 * end]
            if (row == 0 and position % CHUNK_ROWS) or \
                    (continues and end == n_rows and (position + end - row) % CHUNK_ROWS):
                pieces.append(Piece(key, position // CHUNK_ROWS, position, bytes(chunk_labels),
                                    tuple(bytes(r) for r in rows), b"" if chunk_weights is None else bytes(chunk_weights)))
            else:
                lab, feat, wt = _chunk_digest(key_prefix, position // CHUNK_ROWS, chunk_labels, rows, chunk_weights)
                labels_sum += lab
                features_sum += feat
                weights_sum += wt
            position += end - row
            row = end
    storage = frozenset([storage_name(X)]) if n_rows else frozenset()
    return DataDigest(groups_sum % _MODULUS, labels_sum % _MODULUS, features_sum % _MODULUS, storage,
                      weights_sum % _MODULUS), pieces


def digest_pieces(pieces: Sequence[Piece]) -> DataDigest:
    """The digest of the chunks that ``pieces`` (from every block) make up, each chunk's pieces
    joined in row order."""
    chunks: dict[tuple[bytes, int], list[Piece]] = {}
    for p in pieces:
        chunks.setdefault((p.key, p.chunk), []).append(p)
    labels_sum = features_sum = weights_sum = 0
    for (key, chunk), parts in chunks.items():
        parts.sort(key=lambda p: p.start)
        rows = tuple(b"".join(p.rows[k] for p in parts) for k in range(len(parts[0].rows)))
        weights = b"".join(p.weights for p in parts) or None
        lab, feat, wt = _chunk_digest(_key_prefix(key), chunk, b"".join(p.labels for p in parts), rows, weights)
        labels_sum += lab
        features_sum += feat
        weights_sum += wt
    return DataDigest(0, labels_sum % _MODULUS, features_sum % _MODULUS, weights=weights_sum % _MODULUS)


def cut_plan(offsets: np.ndarray, a: int, b: int) -> dict[str, Any]:
    """For a block of rows ``a:b`` (``a < b``) of all rows (queries at ``offsets``): the
    ``lead``, ``continues`` and ``last_size`` arguments of :func:`block_digest`."""
    offsets = np.asarray(offsets, dtype=np.int64)
    first = int(np.searchsorted(offsets, a, side="right")) - 1
    last = int(np.searchsorted(offsets, b - 1, side="right")) - 1
    return {"lead": a - int(offsets[first]), "continues": bool(offsets[last + 1] > b),
            "last_size": int(offsets[last + 1] - offsets[last])}


def digest_of(data: Any, rows: tuple[int, int] | None = None) -> DataDigest:
    """The digest of a :class:`~sparkrank.data.block.RankingData` (every query whole), or of its
    ``rows`` ``a:b`` (whole queries: ``a`` and ``b`` are query boundaries)."""
    g = data.groups
    if rows is None:
        return block_digest(data.X, g.labels, g.offsets, group_keys(data.qids, g.n_groups),
                            row_weights=g.row_weights, group_weights=g.group_weights)[0]
    a, b = rows
    first, last = (int(i) for i in np.searchsorted(g.offsets, [a, b]))
    X = data.X
    # rows a:b without copying: a slice of dense rows, or CSR's row pointers over all entries
    view = X[a:b] if isinstance(X, np.ndarray) else SimpleNamespace(indptr=X.indptr[a:b + 1], indices=X.indices,
                                                                      data=X.data)
    keys = group_keys(None if data.qids is None else data.qids[first:last], last - first)
    weighted = g.row_weights is not None
    return block_digest(view, g.labels[a:b], g.offsets[first:last + 1] - a, keys,
                        row_weights=g.row_weights[a:b] if weighted else None,
                        group_weights=g.group_weights[first:last] if weighted else None)[0]
