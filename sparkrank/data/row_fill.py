"""numba kernels that copy a batch of sparse feature rows into the final arrays, checking as they go.

The streaming Parquet reader (:mod:`sparkrank.data.parquet_rows`) hands each record batch's
Arrow buffers here as they are -- list offsets, the flat indices and values -- and
:func:`fill_sparse_rows` writes the rows straight into the block being built: dense rows (a
2-D array zeroed up front) or a stretch of CSR ``indptr`` / ``indices`` / ``values``.  One
pass, no per-batch CSR, no flattened copies.

The kernels never raise: a row that breaks a rule the whole-table converter
(:func:`sparkrank.data.arrow.table_to_csr`) enforces -- indices and values of different
lengths, a negative or repeated or decreasing index, an index at or beyond the columns
allowed, a value that is not finite in the output dtype, a vector of another width -- is
reported as the batch's first bad row, and the reader leaves the input to the whole-table
path, which words the error.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: ``result`` slots of :func:`fill_sparse_rows`.
BAD_ROW, MAX_COLUMN, NNZ = 0, 1, 2


@njit(cache=True, nogil=True)
def fill_sparse_rows(kinds, sizes, i_off, indices, v_off, values, width, limit, dense, out_dense,
                     indptr, out_indices, out_values, row0, result):
    """Rows ``r`` of one batch into row ``row0 + r`` of the block.

    Parameters
    ----------
    kinds : int8 array
        Per row, 1 for a Spark ML dense vector (its values are the whole row, the column of a
        value is its position), anything else a sparse row; empty when every row is sparse
        (indices+values lists).
    sizes : int32 array
        A sparse vector row's declared size, which must be ``width`` (``kinds`` not empty).
    i_off, indices, v_off, values :
        The Arrow offsets and flat child arrays of the indices and values lists (offsets index
        the children directly, so a sliced list array needs no copy).
    width : int
        The vectors' width (``kinds`` not empty), else ignored.
    limit : int
        Columns allowed: an index must be below it.
    dense : bool
        Write ``out_dense[row0 + r, j]`` (zeroed beforehand), else the CSR stretch starting at
        non-zero ``result[NNZ]`` (``indptr[row0 + r + 1]`` set for each row).
    result : int64 array of 3
        In: ``MAX_COLUMN`` so far (-1 at first) and ``NNZ`` so far.  Out: ``BAD_ROW`` (-1 when
        every row was good), the largest column written, and the non-zeros written in all.
    """
    n = v_off.shape[0] - 1
    k_out = result[NNZ]
    max_col = result[MAX_COLUMN]
    result[BAD_ROW] = -1
    for r in range(n):
        vs, ve = v_off[r], v_off[r + 1]
        dense_vector = kinds.shape[0] > 0 and kinds[r] == 1
        ib = 0
        if dense_vector:
            if ve - vs != width:
                result[BAD_ROW] = r
                break
        else:
            ib = i_off[r]
            if i_off[r + 1] - ib != ve - vs or (kinds.shape[0] > 0 and sizes[r] != width):
                result[BAD_ROW] = r
                break
        previous = -1
        good = True
        for p in range(ve - vs):
            j = p if dense_vector else indices[ib + p]
            if j < 0 or j <= previous or j >= limit:
                good = False
                break
            previous = j
            if dense:
                out_dense[row0 + r, j] = values[vs + p]
                good = np.isfinite(out_dense[row0 + r, j])
            else:
                out_indices[k_out] = j
                out_values[k_out] = values[vs + p]
                good = np.isfinite(out_values[k_out])
                k_out += 1
            if not good:
                break
        if not good:
            result[BAD_ROW] = r
            break
        if previous > max_col:
            max_col = previous
        if not dense:
            indptr[row0 + r + 1] = k_out
    result[MAX_COLUMN] = max_col
    result[NNZ] = k_out


@njit(cache=True, nogil=True)
def narrow_rows(flat, m, width, new_width):
    """Dense rows of ``width`` in ``flat`` (C order) rewritten in place as rows of ``new_width``
    (< ``width``: the columns beyond are dropped).  Row ``r`` moves down from ``r * width`` to
    ``r * new_width``, never past a row not yet moved, so ascending order is safe."""
    for r in range(1, m):
        src = r * width
        dst = r * new_width
        for c in range(new_width):
            flat[dst + c] = flat[src + c]
