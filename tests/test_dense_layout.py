"""Dense feature rows (``layout="dense"`` / ``"auto"``): the reader fills them straight from the
text, and every kernel, engine, solver and prediction gives the CSR layout's numbers bit for
bit, so the layout is a memory choice only (issue 12: LETOR text needs no index array)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparkrank.data.svmlight as svm
from sparkrank.cli import main
from sparkrank.data.block import DataError, RankingData
from sparkrank.data.svmlight import SVMLightFormatError, read_svmlight
from sparkrank.engines.base import FeatureStatistics
from sparkrank.engines.local import LocalEngine
from sparkrank.numerics.cut_steps import CutSteps, add_cut_steps, cut_terms
from sparkrank.numerics.exact_sum import (csr_tdot_dd, dd_add, dd_round, rmatvec_dd, rmatvec_dd_powers,
                                         rmatvec_dd_products, split_steps, step_boundary, step_starts)
from sparkrank.numerics.simd import SCORE_LANES
from sparkrank.numerics.linalg import GATHER_ROWS, csr_dot, matvec
from sparkrank.training import train

from test_svmlight_threads import bits, letor_lines, write


def dense_of(f) -> np.ndarray:
    return f.X.toarray() if sp.issparse(f.X) else f.X


def same_file(a, b) -> None:
    """Two reads of one file hold the same rows, whatever their layouts."""
    assert a.X.shape == b.X.shape and a.X.dtype == b.X.dtype
    assert np.array_equal(bits(dense_of(a)), bits(dense_of(b)))
    assert np.array_equal(bits(a.labels), bits(b.labels))
    assert (a.qid is None and b.qid is None) or np.array_equal(a.qid, b.qid)
    assert a.qid_layout == b.qid_layout and a.n_bytes == b.n_bytes


def random_matrix(rng, m: int, n: int, density: float, dtype) -> np.ndarray:
    """Rows with ties, zeros, negative and tiny values."""
    x = rng.choice([0.0, 1.0, -2.5, 0.1, 3e-300, 7.25], size=(m, n)) * rng.integers(1, 3, size=(m, n))
    x[rng.random((m, n)) > density] = 0.0
    return x.astype(dtype)


# ----------------------------------------------------------------------------- reader


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_rows_hold_the_csr_rows_across_pieces(tmp_path, monkeypatch, threads, dtype):
    # comments, blank lines, CR line ends, explicit zeros, slow (> 18 digit) values and labels,
    # an underflow to zero, spread over many small pieces
    monkeypatch.setattr(svm, "CHUNK_BYTES", 120)
    path = write(tmp_path, letor_lines(80))
    sparse = read_svmlight(path, dtype=dtype, threads=threads)
    dense = read_svmlight(path, dtype=dtype, threads=threads, layout="dense")
    assert isinstance(dense.X, np.ndarray) and dense.X.flags.c_contiguous
    same_file(sparse, dense)


@pytest.mark.parametrize("head, sep, tail", [("", "\n", ""), ("", "\r\n", "\r\n"), ("\n\n# c\n", "\n", "\n\n")])
def test_dense_rows_without_a_final_newline_or_with_crlf_and_blank_lines(tmp_path, monkeypatch, head, sep, tail):
    # dense stretches hold one row per line end (plus one for a last line without one);
    # blank and comment lines leave gaps that are closed by moving rows down
    monkeypatch.setattr(svm, "CHUNK_BYTES", 50)
    path = tmp_path / "f.txt"
    path.write_bytes((head + sep.join(f"{i % 3} qid:{i // 4} 1:{i} 3:{i * 0.25}" for i in range(40)) + tail).encode())
    for threads in (1, 3):
        same_file(read_svmlight(path, threads=threads), read_svmlight(path, threads=threads, layout="dense"))


def test_auto_chooses_dense_for_letor_text_and_csr_for_sparse_text(tmp_path):
    rng = np.random.default_rng(0)
    full = [f"{i % 3} qid:{i // 4} " + " ".join(f"{j}:{rng.random():.4f}" for j in range(1, 31)) for i in range(60)]
    few = [f"{i % 3} qid:{i // 4} {1 + i % 200}:1.5 {300 + i}:2" for i in range(60)]
    assert isinstance(read_svmlight(write(tmp_path, full, "full.txt"), layout="auto").X, np.ndarray)
    assert sp.issparse(read_svmlight(write(tmp_path, few, "few.txt"), layout="auto").X)
    assert sp.issparse(read_svmlight(write(tmp_path, full, "full.txt")).X)  # the default stays CSR


@pytest.mark.parametrize("layout", ["sparse", "auto", "dense"])
def test_load_svmlight_keeps_the_layout_it_read(tmp_path, layout):
    """``load_svmlight(layout=...)`` hands back the rows as read (it once re-packed dense rows into CSR)."""
    rng = np.random.default_rng(1)
    lines = [f"{i % 3} qid:{i // 4} " + " ".join(f"{j}:{rng.random():.4f}" for j in range(1, 21)) for i in range(40)]
    path = write(tmp_path, lines, "letor.txt")
    data = svm.load_svmlight(path, layout=layout)
    assert isinstance(data.X, np.ndarray) == (layout != "sparse")
    csr = svm.load_svmlight(path)
    assert np.array_equal(bits(dense_of(data)), bits(csr.X.toarray()))


@pytest.mark.parametrize("layout", ["auto", "dense"])
def test_a_line_wider_than_the_probe_reads_again_as_csr(tmp_path, monkeypatch, layout):
    monkeypatch.setattr(svm, "PROBE_BYTES", 64)  # the probe sees only the first lines
    lines = [f"1 qid:{i // 3} 1:0.5 2:0.25 3:{i}" for i in range(40)]
    lines[30] += " 9:4"
    f = read_svmlight(write(tmp_path, lines), layout=layout)
    assert f.X.shape == (40, 9) and sp.issparse(f.X) == (layout == "auto")
    same_file(f, read_svmlight(write(tmp_path, lines)))


def test_auto_reads_csr_when_only_the_start_of_the_file_is_dense(tmp_path, monkeypatch):
    monkeypatch.setattr(svm, "PROBE_BYTES", 64)  # the probe sees only the dense first lines
    dense_head = ["1 qid:0 " + " ".join(f"{j}:0.5" for j in range(1, 41)) for _ in range(3)]
    sparse_tail = [f"{i % 2} qid:{1 + i // 4} {1 + i % 40}:1.5" for i in range(200)]
    f = read_svmlight(write(tmp_path, dense_head + sparse_tail), layout="auto")
    assert sp.issparse(f.X) and f.X.shape == (203, 40)
    same_file(f, read_svmlight(write(tmp_path, dense_head + sparse_tail), layout="dense"))


@pytest.mark.parametrize("n_features, zero_based", [(12, False), (None, True)])
def test_fixed_width_and_zero_based_dense_rows(tmp_path, n_features, zero_based):
    lines = [f"{i % 2} qid:{i // 4} 1:{i} 2:0.5 5:-1" for i in range(30)]
    read = dict(n_features=n_features, zero_based=zero_based)
    same_file(read_svmlight(write(tmp_path, lines), **read), read_svmlight(write(tmp_path, lines), layout="dense", **read))


@pytest.mark.parametrize("bad, expected", [
    ("1 qid:9 1:0.5 2:abc", "malformed value 'abc' of feature 2 on line {line}"),
    ("1 qid:9 1:0.5 2:1" + "0" * 400, "feature 2 on line {line} is inf"),  # a slow token
    ("1 qid:9 2:1 1:0.5", "not strictly increasing: 1 after 2"),
])
def test_dense_errors_are_the_csr_errors(tmp_path, monkeypatch, bad, expected):
    monkeypatch.setattr(svm, "CHUNK_BYTES", 120)
    lines = [f"1 qid:{i // 3} 1:0.5 2:0.25 3:{i}" for i in range(60)]
    lines[50] = bad
    path = write(tmp_path, lines)
    messages = []
    for layout in ("sparse", "dense"):
        with pytest.raises(SVMLightFormatError) as e:
            read_svmlight(path, layout=layout, threads=2)
        messages.append(str(e.value))
    assert messages[0] == messages[1] and expected.format(line=51) in messages[0] and str(path) in messages[0]


@pytest.mark.parametrize("layout", ["sparse", "dense"])
def test_pieces_with_more_slow_tokens_than_the_first_scan_records(tmp_path, layout):
    # > 18 significant digits: Python's float() converts them after the numba pass, which
    # records a fixed number per piece and scans a piece again when it holds more
    rng = np.random.default_rng(4)
    text = [f"{v:.25f}" for v in rng.random(900)]
    lines = [f"{text[i]} qid:{i // 6} 1:{text[(i + 1) % 900]} 2:{text[(i + 2) % 900]} 3:1" for i in range(900)]
    f = read_svmlight(write(tmp_path, lines), layout=layout, threads=2)
    assert np.array_equal(f.labels, [float(t) for t in text])
    X = dense_of(f)
    assert np.array_equal(X[:, 0], [float(text[(i + 1) % 900]) for i in range(900)])
    assert np.array_equal(X[:, 1], [float(text[(i + 2) % 900]) for i in range(900)]) and np.all(X[:, 2] == 1)


def test_an_unknown_layout_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="layout 'columns'; choose one of auto, sparse, dense"):
        read_svmlight(write(tmp_path, letor_lines(60)), layout="columns")


# ----------------------------------------------------------------------------- kernels


@st.composite
def dense_matrices(draw, max_rows: int, max_cols: int):
    """``(rng, X)``: a random float32 or float64 matrix with some zeros (:func:`random_matrix`) and
    the generator that made it, for the test's further draws."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    m, n, density = draw(st.integers(0, max_rows)), draw(st.integers(1, max_cols)), draw(st.floats(0.0, 1.0))
    return rng, random_matrix(rng, m, n, density, np.float32 if draw(st.booleans()) else np.float64)


def step_sums_oracle(X: np.ndarray, c: np.ndarray, power: int, starts) -> tuple[np.ndarray, np.ndarray]:
    """exact_sum's convention in plain Python floats: steps of four rows from each origin of
    ``starts``, a step's terms summed per column from +0.0 in row order (a zero entry or
    coefficient is no term), each step sum added to the column's (hi, lo) by TwoSum."""
    m, n = X.shape
    hi, lo = np.zeros(n), np.zeros(n)
    for j in range(n):
        h, low = 0.0, 0.0
        for a, b in zip(starts[:-1], starts[1:]):
            for i in range(a, b, 4):
                p = 0.0
                for r in range(i, min(i + 4, b)):
                    x, ci = float(X[r, j]), float(c[r])
                    if x != 0.0 and ci != 0.0:
                        p += x * ci if power == 1 else (x * x) * ci
                s_ = h + p
                bb = s_ - h
                h, low = s_, low + ((h - (s_ - bb)) + (p - bb))
        hi[j], lo[j] = h, low
    return hi, lo


@st.composite
def query_starts(draw, m: int):
    """Step origins of ``m`` rows: 0, some query starts, ``m``."""
    inner = sorted(set(draw(st.lists(st.integers(1, max(m - 1, 1)), max_size=6)))) if m > 1 else []
    return np.array([0, *inner, m], dtype=np.int64)


@settings(max_examples=40, deadline=None)
@given(drawn=dense_matrices(30, 12), data=st.data())
def test_dense_products_and_statistics_equal_csr_bit_for_bit(drawn, data):
    rng, dense = drawn
    m, n = dense.shape
    csr = sp.csr_matrix(dense)
    v = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4, size=n)
    c = rng.normal(size=m)
    c[rng.random(m) < 0.3] = 0.0
    rows = (m // 3, m - m // 4)
    assert np.array_equal(bits(matvec(dense, v)), bits(csr_dot(csr, v)))
    assert np.array_equal(bits(matvec(dense, v, rows)), bits(csr_dot(csr, v, rows)))
    queries = data.draw(query_starts(rows[1] - rows[0]))
    for power in (1, 2):
        for r, starts in ((None, None), (rows, None), (rows, queries)):
            a, b = rmatvec_dd(dense, c, power, r, starts), csr_tdot_dd(csr, c, power, r, starts)
            assert np.array_equal(bits(a[0]), bits(b[0])) and np.array_equal(bits(a[1]), bits(b[1]))
            # the convention's oracle, operation for operation
            lo_row, hi_row = (0, m) if r is None else r
            origins = np.array([0, hi_row - lo_row]) if starts is None else starts
            want = step_sums_oracle(dense[lo_row:hi_row], c[lo_row:hi_row], power, origins)
            assert np.array_equal(bits(a[0]), bits(want[0])) and np.array_equal(bits(a[1]), bits(want[1]))
            # and within a few roundings of the exact column sums of the float64 terms
            terms = dense[lo_row:hi_row].astype(np.float64) ** power * c[lo_row:hi_row, None]
            exact = np.array([math.fsum(terms[:, j]) for j in range(n)])
            scale = np.abs(terms).sum(axis=0)
            assert np.all(np.abs(dd_round(a) - exact) <= 4 * np.finfo(float).eps * scale + 1e-300)
    # several products from one sweep (both powers; other coefficients, as the value pass's
    # Xᵀc and the preconditioner's moments): the same bits as each alone, on both layouts
    other = np.abs(rng.normal(size=m)) * (rng.random(m) < 0.6)
    for X in (dense, csr):
        for r in (None, rows):
            both = rmatvec_dd_powers(X, c, (2, 1), r)
            for got, power in zip(both, (2, 1)):
                alone = rmatvec_dd(X, c, power, r)
                assert np.array_equal(bits(got[0]), bits(alone[0])) and np.array_equal(bits(got[1]), bits(alone[1]))
            products = [(c, 1), (other, 1), (other, 2)]
            for got, (coef, power) in zip(rmatvec_dd_products(X, products, r), products):
                alone = rmatvec_dd(X, coef, power, r)
                assert np.array_equal(bits(got[0]), bits(alone[0])) and np.array_equal(bits(got[1]), bits(alone[1]))
    fd, fc = FeatureStatistics.from_dense(dense), FeatureStatistics.from_csr(csr.indptr, csr.indices, csr.data, m, n)
    assert fd.count == fc.count
    for name in ("mean", "m2", "min", "max"):
        assert np.array_equal(bits(getattr(fd, name)), bits(getattr(fc, name))), name


@settings(max_examples=40, deadline=None)
@given(drawn=dense_matrices(60, 6), data=st.data())
def test_feature_statistics_are_the_same_bits_for_any_split_of_the_rows(drawn, data):
    """The standardization's statistics from blocks (ColumnTotals added in any order, then the
    blocks' squared deviations from the common mean) equal the one-block statistics bit for bit,
    on dense and CSR rows, and m2 is the exact sum of squared deviations to a few ulps (each term rounds
    once or twice) even for
    a feature far from 0 (Σx² − (Σx)²/n would cancel)."""
    from fractions import Fraction

    from sparkrank.engines.base import ColumnTotals
    from sparkrank.numerics.exact_sum import column_sums_dd

    rng, dense = drawn
    m, n = dense.shape
    dense = dense.copy()
    if m:
        dense[:, 0] = np.where(dense[:, 0] != 0, dense[:, 0] + 1e6, 0)  # an offset feature
    whole = FeatureStatistics.of_rows(dense)
    cuts = sorted(data.draw(st.lists(st.integers(0, m), max_size=4)))
    parts = [dense[a:b] for a, b in zip([0, *cuts], [*cuts, m])]
    order = data.draw(st.permutations(range(len(parts))))
    for layout in ("dense", "csr"):
        blocks = parts if layout == "dense" else [sp.csr_matrix(p) for p in parts]
        totals = None
        for k in order:
            t = ColumnTotals.of_rows(blocks[k], n)
            totals = t if totals is None else totals.add(t)
        squares = (np.zeros(n), np.zeros(n))
        for k in order:
            squares = dd_add(squares, column_sums_dd(blocks[k], n, totals.mean())[0])
        split = FeatureStatistics.from_totals(totals, squares)
        for name in ("mean", "m2", "min", "max"):
            assert np.array_equal(bits(getattr(split, name)), bits(getattr(whole, name))), (layout, name)
    for j in range(n):  # m2 against exact rational arithmetic around the computed mean
        mean = Fraction(float(whole.mean[j]))
        exact = sum(((Fraction(float(x)) - mean) ** 2 for x in dense[:, j]), Fraction(0))
        assert abs(float(whole.m2[j]) - float(exact)) <= 8 * np.finfo(float).eps * float(exact) + 1e-300, j


def sums_of_parts(X, products, offsets, cuts, reverse: bool = False):
    """Rows of ``X`` cut at ``cuts`` as Spark's driver placement cuts them: each part sums its whole
    steps (split_steps, step_starts) and gives its cut steps' terms (cut_terms), which are added
    where the parts meet (add_cut_steps); rounded.  ``reverse``: the parts in reverse order."""
    n = X.shape[1]
    totals = [(np.zeros(n), np.zeros(n)) for _ in products]
    cut = [CutSteps.empty() for _ in products]
    parts = list(zip(cuts[:-1], cuts[1:]))
    for a, b in parts[::-1] if reverse else parts:
        head, tail = split_steps(offsets, a, b)
        assert a <= head <= tail <= b
        part = rmatvec_dd_products(X, products, (head, tail), step_starts(offsets, head, tail))
        totals = [dd_add(t, p) for t, p in zip(totals, part)]
        rows = [*range(a, head), *range(tail, b)]
        keys = [step_boundary(offsets, r) for r in rows]
        cut = [k.joined(cut_terms(X, rows, keys, rows, c, power)) for k, (c, power) in zip(cut, products)]
    out = []
    for (hi, lo), k in zip(totals, cut):
        hi, lo = np.array(hi), np.array(lo)
        add_cut_steps(hi, lo, k.columns, k)
        out.append(dd_round((hi, lo)))
    return out


@settings(max_examples=40, deadline=None)
@given(drawn=dense_matrices(60, 9), data=st.data())
def test_partitions_that_cut_steps_sum_like_one_sweep(drawn, data):
    """Spark's driver placement cuts a query's rows anywhere; its parts' whole steps and cut
    steps' terms (sparse: a row's stored entries) give the one sweep's sums, on both layouts."""
    rng, dense = drawn
    m, n = dense.shape
    c = rng.normal(size=m)
    c[rng.random(m) < 0.3] = 0.0
    offsets = None if data.draw(st.booleans()) else data.draw(query_starts(m))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, m), max_size=8))) | {0, m})
    products = [(c, 1), (np.abs(c), 2)]
    reverse = data.draw(st.booleans())
    for X in (dense, sp.csr_matrix(dense)):
        whole = rmatvec_dd_products(X, products, None, step_starts(offsets, 0, m))
        for got, want in zip(sums_of_parts(X, products, offsets, cuts, reverse), whole):
            assert np.array_equal(bits(got), bits(dd_round(want)))


def test_a_cut_step_is_summed_in_row_order_from_its_parts():
    # one step of four rows whose sum depends on the order: ((1 + 1e16) - 1e16) + 5 = 5 in
    # float64 (the exact sum is 6); cut after each of its first three rows, it still sums to 5,
    # the parts given in either order
    X = np.array([[1.0], [1e16], [-1e16], [5.0]])
    c = np.ones(4)
    assert dd_round(rmatvec_dd(X, c))[0] == 5.0
    for cut in (1, 2, 3):
        for X_ in (X, sp.csr_matrix(X)):
            for reverse in (False, True):
                assert sums_of_parts(X_, [(c, 1)], None, [0, cut, 4], reverse)[0][0] == 5.0


def test_cut_steps_keep_their_columns_slice_by_slice():
    # a slice of the column-sliced merge gets its columns of the cut steps: added slice by
    # slice, they give the whole width's sums
    rng = np.random.default_rng(3)
    X = sp.random(12, 40, density=0.3, random_state=4, format="csr")
    c = rng.normal(size=12)
    rows = [0, 1, 2, 9, 10, 11]
    cut = cut_terms(X, rows, [0, 0, 0, 8, 8, 8], rows, c, 1)
    hi, lo = rng.normal(size=40), np.zeros(40)
    whole_hi, whole_lo = hi.copy(), lo.copy()
    add_cut_steps(whole_hi, whole_lo, cut.columns, cut)
    for first, end in ((0, 7), (7, 25), (25, 40)):
        piece = cut.columns_in(first, end)
        assert piece.n_rows == cut.n_rows and np.all((piece.columns >= 0) & (piece.columns < end - first))
        h, l_ = hi[first:end].copy(), lo[first:end].copy()
        add_cut_steps(h, l_, piece.columns, piece)
        assert np.array_equal(bits(h + l_), bits((whole_hi + whole_lo)[first:end]))


def lane_order_scores(X: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The oracle of numerics/simd.py's order, in plain Python floats: term j (a non-zero entry
    times v_j) into lane j mod 8, lanes added in ascending j from +0.0, then combined as
    ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))."""
    out = []
    for row in X:
        s = [0.0] * SCORE_LANES
        for j, x in enumerate(row.tolist()):
            if x != 0.0:
                s[j % SCORE_LANES] += x * float(v[j])
        out.append(((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])))
    return np.array(out, dtype=np.float64)


@settings(max_examples=60, deadline=None)
@given(drawn=dense_matrices(12, 40))
def test_scores_are_summed_in_lane_order_on_both_layouts(drawn):
    rng, X = drawn
    n = X.shape[1]
    v = rng.normal(size=n) * 10.0 ** rng.integers(-8, 9, size=n)  # magnitudes apart: the order shows
    expected = lane_order_scores(X, v)
    assert np.array_equal(bits(matvec(X, v)), bits(expected))
    assert np.array_equal(bits(csr_dot(sp.csr_matrix(X), v)), bits(expected))
    np.testing.assert_allclose(matvec(X, v), X.astype(np.float64) @ v, rtol=1e-12, atol=1e-12 * np.abs(v).max())


@pytest.mark.parametrize("rows", [None, (0, 700), (1, 700), (255, 513), (300, 301), (600, 600)])
def test_csr_scores_gathered_by_chunks_of_rows_are_the_lane_order_sums(rows):
    """``csr_dot`` gathers ``v`` for :data:`GATHER_ROWS` rows at a time, then sums: rows of any
    length (empty ones, one a chunk wide), explicit zeros, and row ranges that start and end
    inside a chunk give the lane-order sums bit for bit."""
    rng = np.random.default_rng(7)
    m, n = 700, 40
    X = random_matrix(rng, m, n, 0.3, np.float32)
    X[rng.random(m) < 0.1] = 0.0  # empty rows
    X[5, :] = rng.normal(size=n)  # a full row
    csr = sp.csr_matrix(X)
    csr.data[rng.random(csr.data.shape[0]) < 0.05] = 0.0  # explicit zeros: no term
    v = rng.normal(size=n) * 10.0 ** rng.integers(-8, 9, size=n)
    a, b = (0, m) if rows is None else rows
    expected = lane_order_scores(np.asarray(csr.todense())[a:b], v)
    assert GATHER_ROWS < m
    assert np.array_equal(bits(csr_dot(csr, v, rows)), bits(expected))


def test_lane_order_scores_keep_nan_and_inf_and_zero_signs():
    X = np.array([[0.0, np.nan, 1.0], [np.inf, 0.0, 0.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    v = np.array([2.0, 1.0, -0.0])
    got = matvec(X, v)
    assert np.isnan(got[0]) and got[1] == np.inf
    assert bits(got[2:]).tolist() == bits(np.array([0.0, -2.0])).tolist()  # +0.0: the empty sum
    assert np.array_equal(bits(csr_dot(sp.csr_matrix(X), v)[1:]), bits(got[1:]))
    with pytest.raises(ValueError, match="shorter than a row"):
        matvec(X, v[:2])


def test_column_sums_take_only_the_first_and_second_power():
    X = np.ones((3, 2))
    for powers in ((), (0,), (1, 3)):
        with pytest.raises(ValueError, match="powers must be 1 and/or 2"):
            rmatvec_dd_powers(X, np.ones(3), powers)


# ----------------------------------------------------------------------------- training


def ranking(seed: int = 5, m: int = 400, n: int = 9):
    """Many groups (some tiny or of one level), real-valued labels with ties, ~60% dense rows."""
    rng = np.random.default_rng(seed)
    X = random_matrix(rng, m, n, 0.6, np.float64)
    qid = np.sort(rng.integers(0, 45, size=m))
    y = np.round(X[:, 0] * 0.3 + rng.normal(size=m), 1)
    y[qid == qid[0]] = 1.0  # one group with a single level
    return X, y, qid


@pytest.mark.parametrize("solver", ["tron", "bmrm", "ncg", "toppush"])
@pytest.mark.parametrize("standardization", ["none", "standard"])
def test_every_solver_trains_the_same_model_on_dense_rows(solver, standardization):
    X, y, qid = ranking()
    models = []
    for layout, threads in (("sparse", 1), ("dense", 1), ("dense", 2)):
        data = RankingData.from_arrays(X, y, qid, layout=layout)
        assert isinstance(data.X, np.ndarray) == (layout == "dense")
        with LocalEngine(data, threads=threads) as engine:
            models.append(train(engine, solver=solver, C=0.5, max_iter=40, standardization=standardization))
    for m in models[1:]:
        assert np.array_equal(bits(m.raw_weights), bits(models[0].raw_weights))
        assert np.array_equal(bits(m.weights), bits(models[0].weights))
    dense = RankingData.from_arrays(X, y, qid, layout="dense")
    assert np.array_equal(bits(models[0].predict(dense)), bits(models[0].predict(sp.csr_matrix(X))))
    assert np.array_equal(bits(models[0].predict(X)), bits(models[0].predict(sp.csr_matrix(X))))


def test_dense_rows_group_pad_and_reject_non_finite_values():
    X, y, qid = ranking(m=40, n=4)
    shuffled = np.random.default_rng(1).permutation(40)
    a = RankingData.from_arrays(X[shuffled], y[shuffled], qid[shuffled], layout="dense", n_features=6)
    b = RankingData.from_arrays(X[shuffled], y[shuffled], qid[shuffled], n_features=6)
    assert a.X.shape == (40, 6) and np.array_equal(a.X, b.X.toarray()) and np.array_equal(a.row_order, b.row_order)
    assert np.array_equal(a.with_features(8).X, b.with_features(8).X.toarray())
    X[7, 2] = np.inf
    with pytest.raises(DataError, match=r"feature column 2 of row 7 is inf"):
        RankingData.from_arrays(X, y, None, layout="dense")


def test_the_cli_trains_letor_text_as_dense_rows_and_writes_the_csr_model(tmp_path, capsys):
    rng = np.random.default_rng(2)
    lines = [f"{int(rng.integers(0, 3))} qid:{i // 7} " + " ".join(f"{j}:{rng.random():.3f}" for j in range(1, 13))
             for i in range(140)]
    path = write(tmp_path, lines)
    model = tmp_path / "m.json"
    assert main(["train", "--input", str(path), "--model", str(model), "--engine", "local", "-q"]) == 0
    f = read_svmlight(path)
    expected = train(RankingData.from_arrays(f.X, f.labels, f.qid))
    assert json.loads(model.read_text())["weights"] == [float(w) for w in expected.raw_weights]
    assert sp.issparse(f.X) and isinstance(read_svmlight(path, layout="auto").X, np.ndarray)


@pytest.mark.parametrize("suffix", [".parquet", ".svmlight"])
def test_convert_writes_letor_text_read_as_dense_rows_like_csr(tmp_path, suffix):
    rng = np.random.default_rng(3)
    lines = [f"{int(rng.integers(0, 3))} qid:{9 - i // 5} " + " ".join(f"{j}:{rng.random():.3f}" for j in range(1, 9))
             for i in range(50)]
    path = write(tmp_path, lines)
    out = tmp_path / f"out{suffix}"
    assert main(["convert", "--engine", "local", "--input", str(path), "--output", str(out)]) == 0
    back = tmp_path / "back.svmlight"
    assert main(["convert", "--engine", "local", "--input", str(out), "--output", str(back)]) == 0
    a, b = read_svmlight(back), read_svmlight(path)
    assert np.array_equal(bits(a.X.toarray()), bits(b.X.toarray())) and np.array_equal(bits(a.labels), bits(b.labels))
    assert np.array_equal(a.qid, b.qid)
