"""The stretches of the reader's output arrays, put together: the gaps between the pieces'
stretches closed in file order (:func:`close_gaps`), then the tokens the numba pass left to
Python parsed and stored (:func:`set_slow_tokens`)."""

from __future__ import annotations

import numpy as np

from ..block import beyond_float32
from . import scanner as S
from .errors import SVMLightFormatError


def close_gaps(scanned, row0: np.ndarray, nnz0: np.ndarray, width: int, out):
    """Move each piece's stretch of ``out`` (the reader's arrays) down to where the previous one
    ended; ``scanned``: per piece its scan state and slow tokens, ``row0``/``nnz0``: where its
    stretch began.  Returns ``(rows, values slots, largest column, slow tokens)``, each piece's
    slow-token targets moved along (a label's target is ``-row - 1``)."""
    m, nnz, max_col = 0, 0, -1
    slow_parts = []
    for k, (state, slow, _) in enumerate(scanned):
        rows = int(state[1] - row0[k])
        k_nnz = rows * width if width >= 0 else int(state[2] - nnz0[k])  # values slots
        if m != row0[k] or nnz != nnz0[k]:
            S.move_rows(width, m, int(row0[k]), rows, nnz, int(nnz0[k]), k_nnz, *out.arrays())
        if slow.shape[0]:
            slow = slow.copy()
            is_label = slow[:, 0] < 0
            slow[is_label, 0] -= m - int(row0[k])  # target -row - 1
            slow[~is_label, 0] += nnz - int(nnz0[k])
            slow_parts.append(slow)
        m, nnz, max_col = m + rows, nnz + k_nnz, max(max_col, int(state[3]))
    return m, nnz, max_col, slow_parts


def set_slow_tokens(raw, name: str, slow: np.ndarray, labels: np.ndarray, values: np.ndarray, indices: np.ndarray,
                    width: int, zero_based: bool) -> None:
    """Parse the tokens of ``slow`` (rows: target, start, end, line) with ``float`` and store them
    in ``labels``/``values``; a non-finite one, or a feature beyond ``values``' dtype, is an
    :class:`SVMLightFormatError` naming its line."""
    slow_vals = np.array([float(raw[s:e]) for s, e in slow[:, 1:3].tolist()], dtype=np.float64)
    tgt = slow[:, 0]
    bad = np.flatnonzero(~np.isfinite(slow_vals))
    if bad.size:
        k = int(bad[0])
        line = int(slow[k, 3])
        word = "nan" if np.isnan(slow_vals[k]) else ("-inf" if slow_vals[k] < 0 else "inf")
        if tgt[k] < 0:
            msg = f"label on line {line} is {word}"
        else:
            col = int(tgt[k] % width if width >= 0 else indices[tgt[k]])
            msg = f"feature {col + (0 if zero_based else 1)} on line {line} is {word}"
        raise SVMLightFormatError(f"{name}: {msg}", path=name, line=line)
    is_label = tgt < 0
    with np.errstate(over="ignore"):
        cast = slow_vals.astype(values.dtype)
    over = np.flatnonzero(~is_label & ~np.isfinite(cast))
    if over.size:  # as the scanner's E_FEAT_RANGE
        k = int(over[0])
        line = int(slow[k, 3])
        col = int(tgt[k] % width if width >= 0 else indices[tgt[k]])
        msg = beyond_float32(f"feature {col + (0 if zero_based else 1)} on line {line}",
                             raw[int(slow[k, 1]):int(slow[k, 2])].decode())
        raise SVMLightFormatError(f"{name}: {msg}", path=name, line=line)
    labels[-tgt[is_label] - 1] = slow_vals[is_label]
    values[tgt[~is_label]] = cast[~is_label]
