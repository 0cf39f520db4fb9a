"""The SVMlight reader on several threads: pieces cut at line ends, scanned in parallel into
one set of arrays, give exactly the one-thread result and the one-thread errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sparkrank.data.svmlight as svm
from sparkrank.data.svmlight import SVMLightFormatError, read_svmlight

PIECE = 120  # bytes: many pieces per file, so every rule is tested across piece boundaries


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(svm, "CHUNK_BYTES", PIECE)


def bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


def letor_lines(n: int, seed: int = 3) -> list[str]:
    """LETOR-style lines with everything the scanner treats specially, spread over the file."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        feats = " ".join(f"{j}:{rng.random()!r}" for j in sorted(rng.choice(np.arange(1, 9), 3, replace=False)))
        lines.append(f"{int(rng.integers(0, 3))} qid:{i // 5} {feats}")
    lines[7] = "# a comment line\r\n\r\n" + lines[7] + " # tail comment"
    lines[20] = lines[20] + " 9:0 10:0.0"  # explicit zeros are not stored
    lines[33] = "2 qid:6 1:0.12345678901234567890123 4:-1e-400"  # slow (> 18 digits) token and an underflow
    lines[41] = lines[41] + "\r0 qid:8 1:1"  # a lone CR ends a line too
    lines[55] = "1.000000000000000000000001 qid:11 2:3"  # a slow label
    return lines


def line_of(i: int) -> int:
    """The 1-based line of ``letor_lines()[i]``, for ``i > 41``: three line ends were added before it."""
    return i + 1 + 3


def write(tmp_path: Path, lines: list[str], name: str = "f.txt") -> Path:
    p = tmp_path / name
    p.write_bytes(("\n".join(lines) + "\n").encode())
    return p


def same(a, b) -> None:
    assert a.X.shape == b.X.shape and a.X.dtype == b.X.dtype
    for name in ("indptr", "indices"):
        x, y = getattr(a.X, name), getattr(b.X, name)
        assert x.dtype == y.dtype and np.array_equal(x, y)
    assert np.array_equal(bits(a.X.data), bits(b.X.data))
    assert np.array_equal(bits(a.labels), bits(b.labels))
    assert a.qid.dtype == b.qid.dtype and np.array_equal(a.qid, b.qid)
    assert a.qid_layout == b.qid_layout and a.n_bytes == b.n_bytes


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_threads_give_the_one_thread_arrays(tmp_path, small_pieces, dtype):
    p = write(tmp_path, letor_lines(90))
    assert len(svm._chunks(p.read_bytes(), 3)) >= 30
    one = read_svmlight(p, dtype=dtype, threads=1)
    assert one.X.shape[0] == 91 and one.X.dtype == dtype  # 90 lines + one after the lone CR
    for threads in (2, 3, 8):
        same(one, read_svmlight(p, dtype=dtype, threads=threads))


def test_float32_is_the_float64_parse_rounded(tmp_path, small_pieces):
    p = write(tmp_path, letor_lines(60))
    f64, f32 = read_svmlight(p, threads=2), read_svmlight(p, dtype=np.float32, threads=2)
    assert np.array_equal(f64.X.indptr, f32.X.indptr) and np.array_equal(f64.X.indices, f32.X.indices)
    assert np.array_equal(f64.X.data.astype(np.float32), f32.X.data)


def test_pieces_cover_the_text_at_line_ends(small_pieces):
    raw = ("\n".join(letor_lines(70)) + "\n").encode()
    for threads in (1, 2, 3):
        pieces = svm._chunks(raw, threads)
        assert len(pieces) >= threads
        assert pieces[0][0] == 0 and pieces[-1][1] == len(raw)
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
        assert all(raw[hi - 1: hi] == b"\n" for _, hi in pieces[:-1])


def error_of(path: Path, threads: int) -> SVMLightFormatError:
    with pytest.raises(SVMLightFormatError) as ei:
        read_svmlight(path, threads=threads)
    return ei.value


@pytest.mark.parametrize("bad_line, expected", [
    ("1 qid:3 2:x", "malformed value 'x' of feature 2 on line {line}"),
    ("1 qid:3 4:1 2:1", "feature indices on line {line} are not strictly increasing: 2 after 4"),
    ("1 qid:abc 1:1", "qid 'abc' on line {line} is not an integer, but the first qid (line 1) is"),
    ("1 1:1", "line {line} has no qid but line 1 has one"),
    ("1 qid:3 2:1" + "0" * 30 + "e400", "feature 2 on line {line} is inf"),  # a slow token, converted by Python
])
def test_an_error_late_in_the_file_names_its_line_on_any_thread_count(tmp_path, small_pieces, bad_line, expected):
    lines = letor_lines(80)
    lines.insert(70, bad_line)
    p = write(tmp_path, lines)
    line = line_of(70)
    errors = [error_of(p, threads) for threads in (1, 2, 3)]
    assert expected.format(line=line) in str(errors[0])
    assert len({str(e) for e in errors}) == 1 and {e.line for e in errors} == {line}


def test_the_first_bad_line_wins_when_several_pieces_fail(tmp_path, small_pieces):
    lines = letor_lines(80)
    lines[60] = "1 qid:12 0:1"
    lines[75] = "x qid:15 1:1"
    p = write(tmp_path, lines)
    for threads in (1, 2, 4):
        err = error_of(p, threads)
        assert err.line == line_of(60) and f"feature index 0 on line {line_of(60)}: indices are 1-based" in str(err)


def test_string_qids_decided_by_the_first_line_hold_across_pieces(tmp_path, small_pieces):
    lines = letor_lines(60)
    lines[0] = lines[0].replace("qid:0", "qid:q0")
    p = write(tmp_path, lines)
    one = read_svmlight(p, threads=1)
    assert one.qid.dtype.kind == "U" and one.qid[10] == "2" and not one.qid_layout.integer
    same(one, read_svmlight(p, threads=3))
    lines[0] = lines[0].replace(" qid:q0", "")  # no qid on the first line, qids later
    err = error_of(write(tmp_path, lines, "g.txt"), 2)
    assert err.line == 2 and "line 2 has a qid but line 1 has none" in str(err)


def test_cli_threads_parse_and_train_the_same_model(tmp_path, small_pieces, capsys):
    """``--threads`` reaches the parser through the local engine: same model, same error line."""
    import json

    from sparkrank.cli import main

    p = write(tmp_path, letor_lines(90))
    weights = []
    for threads in ("1", "2"):
        model = tmp_path / f"m{threads}.json"
        assert main(["train", "--engine", "local", "--input", str(p), "--model", str(model), "--threads", threads,
                     "-q"]) == 0
        weights.append(json.loads(model.read_text())["weights"])
    assert weights[0] == weights[1]
    lines = letor_lines(90)
    lines[80] = "1 qid:16 3:1 3:2"
    bad = write(tmp_path, lines, "bad.txt")
    capsys.readouterr()
    assert main(["train", "--engine", "local", "--input", str(bad), "--model", str(tmp_path / "x.json"),
                 "--threads", "2", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"sparkrank train: error: {bad}: feature indices on line {line_of(80)} are not strictly increasing" in err
