"""Arrow feature columns -> CSR: the direct dense path gives scipy's matrix exactly."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

from sparkrank.data.arrow import RowError, dense_lists_to_csr, dense_to_csr


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zeros", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("n_features", [7, 10])
def test_dense_to_csr_is_scipys_csr(dtype, zeros, n_features):
    rng = np.random.default_rng(1)
    dense = rng.normal(size=(40, 7)).astype(dtype)
    dense[rng.random(dense.shape) < zeros] = 0.0
    dense[0, 0] = -0.0  # a negative zero is a zero, as for scipy
    expected = sp.csr_matrix(dense)
    got = dense_to_csr(dense, n_features)
    assert got.shape == (40, n_features) and got.dtype == dtype and got.has_canonical_format
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(got.indices, expected.indices)
    assert got.data.tobytes() == expected.data.tobytes()


def test_dense_lists_keep_the_row_of_a_bad_value():
    col = pa.array([[1.0, 0.0], [0.0, float("inf")]], pa.list_(pa.float32()))
    with pytest.raises(RowError, match="row 1: feature column 1 is inf"):
        dense_lists_to_csr(col, None, np.float32)
    ok = pa.array([[1.0, 0.0], [0.0, 0.0], [2.0, 3.0]], pa.list_(pa.float32()))
    np.testing.assert_array_equal(dense_lists_to_csr(ok, 4, np.float32).toarray(),
                                  [[1, 0, 0, 0], [0, 0, 0, 0], [2, 3, 0, 0]])
