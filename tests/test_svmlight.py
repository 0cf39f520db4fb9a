"""Tests of the SVMlight / LETOR reader and writer (sparkrank.data.svmlight)."""

from __future__ import annotations

import gzip
import math
import struct
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkrank.data.block import DataError, RankingData
from sparkrank.data.svmlight import (
    SVMLightFile,
    SVMLightFormatError,
    load_svmlight,
    read_svmlight,
    write_svmlight,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


def write_text(tmp_path: Path, text: str | bytes, name: str = "f.txt") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def random_sparse(rng: np.random.Generator, m: int, n: int, density: float = 0.3, max_exp: int = 300) -> sp.csr_matrix:
    """Sparse matrix whose values mix the styles seen in practice."""
    X = sp.random(m, n, density=density, format="csr", random_state=np.random.RandomState(int(rng.integers(2**31))))
    k = X.nnz
    kind = rng.integers(0, 5, k)
    v = np.empty(k)
    v[kind == 0] = np.round(rng.random(np.sum(kind == 0)), 6)  # LETOR style 0.123456
    v[kind == 1] = rng.standard_normal(np.sum(kind == 1))  # full 17-digit doubles
    v[kind == 2] = rng.integers(-50, 50, np.sum(kind == 2)).astype(float)  # counts
    v[kind == 3] = rng.standard_normal(np.sum(kind == 3)) * 10.0 ** rng.integers(-max_exp, max_exp, np.sum(kind == 3))
    v[kind == 4] = rng.standard_normal(np.sum(kind == 4)) * 1e-7  # exponent form
    v[v == 0] = 0.5
    X.data = v
    return X


# ----------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("qid_kind", ["int", "str", "none"])
def test_round_trip(tmp_path, dtype, qid_kind):
    rng = np.random.default_rng(7)
    m, n = 400, 30
    # float32: keep magnitudes inside its range (no overflow to inf or underflow to 0)
    X = random_sparse(rng, m, n, max_exp=300 if dtype == np.float64 else 30).astype(dtype)
    labels = rng.integers(0, 5, m).astype(float)
    labels[::7] = rng.standard_normal(labels[::7].size)  # some non-integral labels
    if qid_kind == "int":
        qid = np.repeat(rng.integers(-5, 10**12, 20), 20)
    elif qid_kind == "str":
        qid = np.repeat(np.array([f"q{i}-é" for i in rng.integers(0, 1000, 20)]), 20)
    else:
        qid = None
    comments = [f"doc {i} = x:y" for i in range(m)]
    p = tmp_path / "rt.txt"
    write_svmlight(p, X, labels, qid, comments=comments)
    f = read_svmlight(p, dtype=dtype, n_features=n)
    assert isinstance(f, SVMLightFile)
    assert f.X.dtype == dtype and f.X.shape == (m, n)
    assert f.n_bytes == p.stat().st_size
    assert np.array_equal(bits(f.labels), bits(labels))
    Xc = sp.csr_matrix(X)
    assert np.array_equal(f.X.indptr, Xc.indptr)
    assert np.array_equal(f.X.indices, Xc.indices)
    assert np.array_equal(f.X.data.view(np.uint8), Xc.data.view(np.uint8))  # bit-identical
    if qid is None:
        assert f.qid is None
    else:
        assert f.qid.dtype.kind == ("i" if qid_kind == "int" else "U")
        assert np.array_equal(f.qid, qid)


def test_round_trip_zero_based_and_gz(tmp_path):
    rng = np.random.default_rng(3)
    X = random_sparse(rng, 50, 8, density=0.5).tolil()
    X[0, 0] = 1.0  # column 0 is used, so the file has index 0
    X = X.tocsr()
    y = rng.integers(0, 3, 50)
    p = tmp_path / "z.txt.gz"
    write_svmlight(p, X, y, np.arange(50) // 5, zero_based=True)
    assert p.read_bytes()[:2] == b"\x1f\x8b"
    f = read_svmlight(p, zero_based=True, n_features=8)
    assert (f.X != X).nnz == 0
    with pytest.raises(SVMLightFormatError, match="1-based"):
        read_svmlight(p)


def test_writer_format(tmp_path):
    X = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 1e-5], [0.0, 0.0, 0.0]])
    p = tmp_path / "w.txt"
    write_svmlight(p, X, [2.0, 0.5, -1.0], [1, 1, 3], comments=["a", "b", "c"])
    assert p.read_text() == "2 qid:1 2:1.5 # a\n0.5 qid:1 1:2.0 3:1e-05 # b\n-1 qid:3 # c\n"
    write_svmlight(p, sp.csr_matrix(X), [0, 1, 2])
    assert p.read_text() == "0 2:1.5\n1 1:2.0 3:1e-05\n2\n"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64).filter(lambda v: v != 0), min_size=1, max_size=60))
def test_writer_uses_repr(tmp_path_factory, vals):
    """Every written value is exactly Python's repr (the shortest round-trip string)."""
    p = tmp_path_factory.mktemp("w") / "v.txt"
    write_svmlight(p, np.array([vals]), [1.0])
    toks = p.read_text().split()[1:]
    assert [t.split(":", 1)[1] for t in toks] == [repr(float(v)) for v in vals]


def test_writer_repr_letor_values(tmp_path):
    rng = np.random.default_rng(11)
    v = np.concatenate([
        np.round(rng.random(5000), 6),
        np.round(rng.standard_normal(5000) * 1000, 3),
        rng.integers(1, 10**6, 2000).astype(float),
        rng.standard_normal(2000),  # full 17-digit doubles
        rng.standard_normal(2000) * 1e-7,  # exponent notation, "1.234e-07"
        rng.standard_normal(2000) * 1e15,  # binary fractions: decimal halfway cases
        np.ldexp(1.0, rng.integers(-40, 53, 500)),  # powers of two (lopsided intervals)
        np.array([1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0, 0.1, 0.7, 123456.789,
                  199781669244972.12, 2.5, 1e-10, 9.99e-11, 5e-324, 1.7976931348623157e308]),
    ])
    p = tmp_path / "v.txt"
    write_svmlight(p, v[None, :], [0])
    toks = p.read_text().split()[1:]
    assert [t.split(":", 1)[1] for t in toks] == [repr(float(x)) for x in v]


def test_writer_rejects_bad_input(tmp_path):
    p = tmp_path / "bad.txt"
    with pytest.raises(DataError, match="finite"):
        write_svmlight(p, np.array([[np.nan]]), [1.0])
    with pytest.raises(DataError, match="finite"):
        write_svmlight(p, np.array([[1.0]]), [np.inf])
    with pytest.raises(DataError, match="qid"):
        write_svmlight(p, np.array([[1.0]]), [1.0], ["a b"])
    with pytest.raises(DataError, match="labels"):
        write_svmlight(p, np.array([[1.0]]), [1.0, 2.0])


# ----------------------------------------------------------------------------- exactness


HARD = [
    "0.123456", "-1e-5", "4.5260000000000000e+005", "3", "+2.5", ".5", "1.", "1E3", "-0", "-0.0e5",
    "0e999", "1e-400", "9007199254740993", "9007199254740995", "2.2250738585072013e-308",
    "2.2250738585072011e-308", "4.9406564584124654e-324", "2.4703282292062327e-324",
    "2.4703282292062328e-324", "5e-324", "1.7976931348623157e308", "1.7976931348623158e308",
    "1e22", "1e23", "1e-22", "123456789012345678", "1234567890123456789", "12345678901234567890123",
    "0.30000000000000004", "7.2057594037927933e+16", "6.103515625e-05", "00012.5000", "1.5e+0010",
    "0." + "0" * 30 + "1", "1" + "0" * 30, "3." + "3" * 40,
]


def parse_tokens(tmp_path, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Write each token as a label and as a feature value; return (labels, values)."""
    text = "".join(f"{t} 1:{t}\n" for t in tokens)
    f = read_svmlight(write_text(tmp_path, text))
    dense = np.asarray(f.X.todense()).ravel()
    return f.labels, dense


def assert_exact(tmp_path, tokens):
    labels, vals = parse_tokens(tmp_path, tokens)
    expected = np.array([float(t) for t in tokens])
    bad = np.flatnonzero(bits(labels) != bits(expected))
    assert bad.size == 0, [(tokens[i], labels[i], expected[i]) for i in bad[:5]]
    # feature values: explicit zeros are not stored (a stored -0.0 reads back as +0.0)
    bad = np.flatnonzero(bits(vals) != bits(expected + 0.0))
    assert bad.size == 0, [(tokens[i], vals[i], expected[i]) for i in bad[:5]]


def test_exact_hard_cases(tmp_path):
    assert_exact(tmp_path, HARD)


@pytest.mark.parametrize("fmt", ["repr", "%.16e", "%.17g", "%.6f", "%g", "%.3e", "%.19g", "%.25e"])
def test_exact_random_formats(tmp_path, fmt):
    rng = np.random.default_rng(abs(hash(fmt)) % 2**32)
    raw = rng.integers(0, 2**63 - 1, 4000, dtype=np.int64).view(np.float64)  # every exponent
    scaled = rng.standard_normal(4000) * 10.0 ** rng.integers(-30, 30, 4000)
    vals = np.concatenate([raw, -raw, scaled])
    vals = vals[np.isfinite(vals)]
    toks = [repr(float(v)) if fmt == "repr" else fmt % v for v in vals]
    toks = [t for t in toks if len(t) < 400]  # %.6f of 1e300 is long but fine; keep files small
    assert_exact(tmp_path, toks)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 2**64 - 1),
    st.sampled_from(["%r", "%.16e", "%.17e", "%.15g", "%.6f", "%g", "%.18e", "%.30e", "%.40f"]),
)
def test_exact_any_double(tmp_path_factory, pattern, fmt):
    v = struct.unpack("<d", struct.pack("<Q", pattern))[0]
    if not math.isfinite(v) or (fmt == "%.40f" and abs(v) > 1e20):
        return
    tok = repr(v) if fmt == "%r" else fmt % v
    # halfway point to the next double, printed with many digits: the hardest inputs
    nxt = np.nextafter(v, np.inf)
    tokens = [tok]
    if math.isfinite(nxt) and v != 0:
        from decimal import Decimal, getcontext

        getcontext().prec = 800
        mid = (Decimal(v) + Decimal(float(nxt))) / 2
        tokens += [format(mid, ".17e"), format(mid, ".25e"), format(mid, ".18e")]
    assert_exact(tmp_path_factory.mktemp("x"), tokens)


# ----------------------------------------------------------------------------- file layout


def test_crlf_comments_blank_tabs_missing_features(tmp_path):
    text = (
        "# header comment\r\n"
        "\r\n"
        "2 qid:10 1:0.5 3:1.25 # doc a\r\n"
        "   \t  \r\n"
        "0\tqid:10\t2:-3e-2\r\n"
        "1 qid:11#no features\r\n"
        "  # indented comment\n"
        "1 qid:11 5:7 #c:1 2:3\n"
        "3 qid:12 2:0 4:1.0"  # no final newline, explicit zero
    )
    f = read_svmlight(write_text(tmp_path, text))
    assert f.labels.tolist() == [2.0, 0.0, 1.0, 1.0, 3.0]
    assert f.qid.tolist() == [10, 10, 11, 11, 12]
    assert f.qid.dtype == np.int64
    assert f.X.shape == (5, 5)
    expected = np.zeros((5, 5))
    expected[0, 0], expected[0, 2], expected[1, 1], expected[3, 4], expected[4, 3] = 0.5, 1.25, -0.03, 7, 1
    assert np.array_equal(f.X.toarray(), expected)
    assert f.X.nnz == 5  # the explicit zero is not stored


def test_no_qid_and_no_trailing_newline(tmp_path):
    f = read_svmlight(write_text(tmp_path, "1 1:1\n0 2:2\n-1.5 3:3"))
    assert f.qid is None
    assert f.labels.tolist() == [1.0, 0.0, -1.5]
    assert f.X.shape == (3, 3)


def test_byte_order_mark(tmp_path):
    f = read_svmlight(write_text(tmp_path, b"\xef\xbb\xbf1 qid:a 1:2\n"))
    assert f.labels.tolist() == [1.0] and f.qid.tolist() == ["a"]


def test_empty_file(tmp_path):
    f = read_svmlight(write_text(tmp_path, "# nothing\n\n"))
    assert f.X.shape == (0, 0) and f.labels.size == 0 and f.qid is None


def test_string_qids(tmp_path):
    f = read_svmlight(write_text(tmp_path, "1 qid:abc 1:1\n0 qid:abc 1:2\n1 qid:7 1:3\n2 qid:1.5 2:1\n"))
    assert f.qid.dtype.kind == "U"
    assert f.qid.tolist() == ["abc", "abc", "7", "1.5"]


def test_gzip(tmp_path):
    text = b"1 qid:1 1:0.5 2:0.25\r\n0 qid:1 2:1\r\n"
    p = tmp_path / "a.txt.gz"
    p.write_bytes(gzip.compress(text))
    f = read_svmlight(p)
    assert f.labels.tolist() == [1.0, 0.0]
    assert f.n_bytes == len(text)
    assert f.X.toarray().tolist() == [[0.5, 0.25], [0.0, 1.0]]


def test_n_features_and_zero_based(tmp_path):
    p = write_text(tmp_path, "1 1:1 3:2\n0 2:1\n")
    assert read_svmlight(p, n_features=10).X.shape == (2, 10)
    p0 = write_text(tmp_path, "1 0:1 3:2\n0 2:1\n", "z.txt")
    f = read_svmlight(p0, zero_based=True)
    assert f.X.shape == (2, 4) and f.X[0, 0] == 1.0 and f.X[0, 3] == 2.0


def test_load_svmlight_groups(tmp_path):
    p = write_text(tmp_path, "1 qid:2 1:1\n0 qid:1 1:2\n2 qid:2 2:1\n0 qid:1 2:3\n")
    data = load_svmlight(p, dtype=np.float32, n_features=4)
    assert isinstance(data, RankingData)
    assert data.X.dtype == np.float32 and data.X.shape == (4, 4)
    assert data.qids.tolist() == [1, 2]
    assert data.groups.offsets.tolist() == [0, 2, 4]
    assert data.labels.tolist() == [0.0, 0.0, 1.0, 2.0]


# ----------------------------------------------------------------------------- real data


@pytest.mark.skipif(not (SHARED / "MQ2008" / "Fold1" / "train.txt").exists(), reason="shared data absent")
def test_mq2008_train():
    f = read_svmlight(SHARED / "MQ2008" / "Fold1" / "train.txt")
    assert f.X.shape == (9630, 46)
    assert f.qid.dtype == np.int64 and np.unique(f.qid).size == 471
    vals, counts = np.unique(f.labels, return_counts=True)
    assert vals.tolist() == [0.0, 1.0, 2.0] and counts.tolist() == [7820, 1223, 587]
    assert f.X.data.min() >= 0.0 and f.X.data.max() <= 1.0
    data = load_svmlight(SHARED / "MQ2008" / "Fold1" / "train.txt")
    assert data.groups.offsets.size == 472


@pytest.mark.skipif(not (SHARED / "cadata" / "cadata").exists(), reason="shared data absent")
def test_cadata():
    path = SHARED / "cadata" / "cadata"
    f = read_svmlight(path)
    assert f.X.shape == (20640, 8) and f.qid is None
    assert np.unique(f.labels).size == 3842
    assert f.labels.min() == 14999.0 and f.labels.max() == 500001.0
    # bit-identical to float() on the first lines (%.16e tokens with 3-digit exponents)
    lines = path.read_text().splitlines()[:200]
    ref = np.array([[float(t.split(":")[1]) for t in ln.split()[1:]] for ln in lines])
    assert np.array_equal(bits(f.X[:200].toarray()), bits(ref))


# ----------------------------------------------------------------------------- errors

PRE = "# comment line\r\n\r\n1 qid:1 1:0.5\r\n"  # the bad line is line 4

ERRORS = [
    ("1 qid:1 1:abc", "malformed value 'abc' of feature 1"),
    ("1 qid:1 2:", "malformed value"),
    ("1 qid:1 2:1.5x", "malformed value"),
    ("1 qid:1 2:1e", "malformed value"),
    ("1 qid:1 2:0.5 5", "missing ':'"),
    ("1 qid:1 foo", "missing ':'"),
    ("1 qid:1 a:1", "malformed feature index"),
    ("1 qid:1 0:1", "feature index 0 on line 4"),
    ("1 qid:1 3:1 2:1", "not strictly increasing: 2 after 3"),
    ("1 qid:1 3:1 3:1", "not strictly increasing: 3 after 3"),
    ("nan qid:1 1:1", "label on line 4 is nan"),
    ("-inf qid:1 1:1", "label on line 4 is -inf"),
    ("1e400 qid:1 1:1", "label on line 4 is inf"),
    ("1 qid:1 7:nan", "feature 7 on line 4 is nan"),
    ("1 qid:1 7:-Infinity", "feature 7 on line 4 is -inf"),
    ("1 qid:1 7:1e999", "feature 7 on line 4 is inf"),
    ("1 qid:1 7:" + "9" * 30 + "e300", "feature 7 on line 4 is inf"),  # via the Python slow path
    ("1 qid: 1:1", "'qid:' without value on line 4"),
    ("1 1:1 qid:3", "qid must come once"),
    ("1 qid:1 qid:2 1:1", "qid must come once"),
    ("abc qid:1 1:1", "malformed label 'abc'"),
    ("1:2 qid:1", "malformed label"),
    ("1 qid:1 99999999999:1", "too large"),
]


@pytest.mark.parametrize("line, what", ERRORS)
def test_errors_name_file_and_line(tmp_path, line, what):
    p = write_text(tmp_path, PRE + line + "\r\n0 qid:1 1:1\r\n")
    with pytest.raises(SVMLightFormatError) as ei:
        read_svmlight(p)
    msg = str(ei.value)
    assert what in msg
    assert "line 4" in msg and str(p) in msg
    assert ei.value.line == 4
    assert isinstance(ei.value, DataError)


def test_error_n_features(tmp_path):
    p = write_text(tmp_path, PRE + "1 qid:1 4:1\n")
    with pytest.raises(SVMLightFormatError, match="feature index 4 on line 4 exceeds n_features=3") as ei:
        read_svmlight(p, n_features=3)
    assert ei.value.line == 4


def test_error_zero_based_negative(tmp_path):
    p = write_text(tmp_path, "1 0:1\n1 1:1\n")
    read_svmlight(p, zero_based=True)
    with pytest.raises(SVMLightFormatError, match="line 1.*zero_based=True"):
        read_svmlight(p)


def test_error_some_lines_without_qid(tmp_path):
    p = write_text(tmp_path, "1 qid:1 1:1\n# c\n0 qid:1 1:2\n1 1:3\n0 qid:2 1:1\n")
    with pytest.raises(SVMLightFormatError, match="line 4 has no qid") as ei:
        read_svmlight(p)
    assert ei.value.line == 4


def test_chunked_scan_equals_one_pass(tmp_path, monkeypatch):
    """The scanner runs chunk by chunk (handing back the pages of the memory map after
    each): tiny chunks give the same arrays and the same error line numbers."""
    import sparkrank.data.svmlight as svm

    rng = np.random.default_rng(5)
    lines = [f"{int(rng.integers(0, 3))} qid:{i // 7} 1:{rng.random()!r} 4:{rng.random()!r}" for i in range(400)]
    lines[100] = "# a comment\r\n\r\n" + lines[100] + " # tail"
    p = write_text(tmp_path, "\n".join(lines) + "\n", "c.txt")
    whole = read_svmlight(p)
    monkeypatch.setattr(svm, "CHUNK_BYTES", 97)
    assert len(svm._chunks(p.read_bytes())) > 50
    chunked = read_svmlight(p)
    assert np.array_equal(bits(whole.X.toarray()), bits(chunked.X.toarray()))
    assert np.array_equal(whole.labels, chunked.labels) and np.array_equal(whole.qid, chunked.qid)
    bad = write_text(tmp_path, "\n".join(lines[:300] + ["1 qid:1 2:x"] + lines[300:]) + "\n", "bad.txt")
    with pytest.raises(SVMLightFormatError, match="on line 303"):
        read_svmlight(bad)
