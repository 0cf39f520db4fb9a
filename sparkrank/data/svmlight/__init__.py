"""Fast, exact SVMlight / LETOR text: the reader (this module) and its parts.

Format, one example per line::

    label [qid:Q] [cost:C] index:value index:value ... [# comment]

Indices are 1-based (``zero_based=True`` accepts 0-based files), strictly increasing within
a line; tokens are separated by spaces or tabs; LF, CRLF or lone CR line endings (as Hadoop
splits lines); blank lines and comment-only lines are skipped.  ``Q`` is an integer or any
other token without blanks; the first qid decides (see :class:`QidLayout`).  A file without
any ``qid:`` is one global ranking.  gzip-compressed files are recognised by their magic
bytes (not their name) and decompressed in memory.

The package:

* :mod:`.parse_decimal` -- decimal text to the correctly rounded double (numba);
* :mod:`.scanner` -- the numba byte scanner: counting pass, filling pass, row moves;
* this module -- files, pieces and threads, the qid rule and the error messages;
* :mod:`.writer` -- :func:`write_svmlight`.

How the reader is fast and small
--------------------------------
The whole file is memory-mapped (or read into one ``bytes`` object) and cut at line ends
into pieces of at most :data:`CHUNK_BYTES`.  Pass 1 counts the line ends and ``:`` bytes
of every piece (upper bounds on its rows and non-zeros), so every output array --
labels, CSR ``indptr`` / ``indices`` / ``values`` in the requested dtype, qids -- is
allocated once, and each piece gets its own stretch of them.  Pass 2 scans the pieces
into their stretches, on ``threads`` threads (the numba passes release the GIL); the
stretches are then moved down in file order to close the gaps and the arrays are shrunk
in place (``realloc``), so the arrays returned are the ones filled, with no second copy.
After each piece the pages of a memory-mapped file are handed back.  The result, and the
error raised for bad text (the first bad line of the file), do not depend on ``threads``.
"""

from __future__ import annotations

import contextlib
import gzip
import mmap
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Union

import numpy as np

from ...choices import FEATURE_LAYOUTS, check_choice
from ...defaults import DTYPE, THREADS, threads_or_default
from ..compression import UTF8_BOM, is_gzip
from ..block import DataError, RankingData, beyond_float32, max_features_limit, max_features_message
from . import scanner as S
from .costs import row_costs
from .errors import QidLayout, SVMLightFormatError, qids_by_layout, raise_scan_error
from .stretches import close_gaps, set_slow_tokens
from .writer import write_svmlight

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["SVMLightFormatError", "SVMLightFile", "read_svmlight", "load_svmlight", "write_svmlight"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class SVMLightFile:
    """Contents of an SVMlight/LETOR file, in file order.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix or ndarray (m, n)
        Feature rows, of the requested dtype; ``n`` is ``n_features`` when given, else the
        largest index in the file (plus one for 0-based files).  CSR (explicit zeros in the
        file are not stored) unless the reader was asked for dense rows (``layout``): then a
        C-contiguous 2-D array.
    labels : float64 ndarray (m,)
        The label of every row.
    qid : ndarray (m,) or None
        int64 when the first qid is an integer (then every one is), a numpy ``str`` array
        (the tokens as written) otherwise; ``None`` when the file has no ``qid:`` at all.
    n_bytes : int
        Number of (uncompressed) text bytes parsed.
    qid_layout : QidLayout or None
        The qid rule the rows followed (``None`` for text without data lines).
    cost : float64 ndarray (m,) or None
        The ``cost:`` tokens (SVMlight's cost factor, finite and ``>= 0``; 1 on a line without
        one), ``None`` when no line has one (:mod:`.costs`).
    """

    X: "sp.csr_matrix | np.ndarray"
    labels: np.ndarray
    qid: np.ndarray | None
    n_bytes: int
    qid_layout: "QidLayout | None" = None
    cost: np.ndarray | None = None

# --------------------------------------------------------------------------------------
# Python side of the reader
# --------------------------------------------------------------------------------------


def gunzip(raw: bytes, name: str) -> bytes:
    """Decompress gzip data, or raise :class:`SVMLightFormatError` naming the file when it is
    truncated or corrupt (the one place both engines decompress SVMlight text)."""
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error):
        raise SVMLightFormatError(truncated_gzip_message(name), path=name) from None


def truncated_gzip_message(name: str) -> str:
    """The one text for a gzip file that ends early or is corrupt (Python's and Hadoop's
    decoders word it differently, the engines must not)."""
    return f"{name}: truncated or corrupt gzip data"


@contextlib.contextmanager
def _file_bytes(path: PathLike, name: str) -> Iterator[bytes | mmap.mmap]:
    """The text of ``path`` as one buffer: a read-only memory map when the file is plain
    text (no copy, the page cache is scanned in place), else the decompressed bytes."""
    with open(path, "rb") as f:
        head = f.read(3)
        size = os.fstat(f.fileno()).st_size
        mm = None
        if not is_gzip(head) and head != UTF8_BOM and size > 0:
            try:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # e.g. a pipe or a file system without mmap
                mm = None
        if mm is None:
            f.seek(0)
            raw = f.read()
    if mm is None:
        if is_gzip(raw):
            # gzip is recognised by its magic bytes, whatever the file name (the Spark
            # reader does the same); decompressed into memory (the parser needs one buffer)
            raw = gunzip(raw, name)
        if raw[:3] == UTF8_BOM:
            raw = raw[3:]  # a UTF-8 byte-order mark (some Windows editors write one)
        yield raw
        return
    try:
        yield mm
    finally:
        try:
            mm.close()
        except BufferError:  # a traceback still holds an array view; the GC closes it
            pass


#: Bytes of text per piece: the unit of both numba passes and of the threads.  After each
#: piece the pages of a memory-mapped file are handed back, so the reader's resident memory
#: is its output arrays plus one piece per thread, not the whole file on top of them.  4 MB
#: parses as fast as 16 MB did (497 MB of LETOR text on 2 threads: 0.79-0.85 s either way)
#: with a quarter of the text resident: 8 MB instead of 32 MB on 2 threads, more with more.
CHUNK_BYTES = 4 << 20


def _chunks(raw, threads: int = 1) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of at most about :data:`CHUNK_BYTES`, each ending right after a LF,
    aimed at a multiple of ``threads`` of about equal size, so no thread idles at the end."""
    n = len(raw)
    count = threads * max(1, -(-n // (threads * CHUNK_BYTES)))
    size = max(1, -(-n // count))
    out, lo = [], 0
    while lo < n:
        hi = raw.find(b"\n", min(lo + size, n) - 1) + 1 if lo + size < n else n
        hi = n if hi <= 0 else hi
        out.append((lo, hi))
        lo = hi
    return out


@contextlib.contextmanager
def _mapper(threads: int, n_items: int) -> Iterator[Callable]:
    """``map`` over the pieces, in order, on ``threads`` threads (the numba passes are ``nogil``)."""
    if threads <= 1 or n_items <= 1:
        yield lambda fn, items: [fn(*item) for item in items]
        return
    with ThreadPoolExecutor(max_workers=min(threads, n_items), thread_name_prefix="sparkrank-parse") as pool:
        yield lambda fn, items: list(pool.map(lambda item: fn(*item), items))


def _page_release(raw):
    """``release(lo, hi)``: drop the scanned pages of a memory map from this process (they
    stay in the page cache and are read again on access); a no-op for ``bytes``."""
    if not (isinstance(raw, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED")):
        return lambda lo, hi: None
    page = mmap.PAGESIZE

    def release(lo: int, hi: int) -> None:
        start = lo - lo % page
        raw.madvise(mmap.MADV_DONTNEED, start, hi - start)

    return release


def read_svmlight(
    path: PathLike,
    *,
    n_features: int | None = None,
    dtype: type = DTYPE,
    zero_based: bool = False,
    max_features: int | None = None,
    threads: int | None = THREADS,
    qid_layout: QidLayout | None = None,
    layout: str = "sparse",
    name: str | None = None,
) -> SVMLightFile:
    """Read an SVMlight / LETOR file (plain or gzip-compressed).

    Parameters
    ----------
    path : str or path-like
        The file.  gzip content is detected from its magic bytes (and decompressed in
        memory); plain text is memory-mapped, so it must not be truncated while it is
        being read.
    n_features : int, optional
        Number of feature columns; an index beyond it is an error.  Default: the largest
        index in the file.
    dtype : numpy float type
        ``np.float64`` (default) or ``np.float32``; values are parsed as float64 exactly
        as ``float(token)`` does, then stored in ``dtype``.
    zero_based : bool
        Accept 0-based feature indices (index ``i`` -> column ``i``).  Default: indices are
        1-based (index ``i`` -> column ``i - 1``) and an index ``0`` is an error.
    max_features : int, optional
        An index needing more columns than this is an error naming its line (default:
        the limit in force, :func:`~sparkrank.data.block.max_features_limit`).
    threads : int, optional
        Threads parsing pieces of the file at once (default: every core); the result and the
        errors are the same for any value.
    qid_layout : QidLayout, optional
        The qid rule the lines must follow (default: that of the file's first data line);
        an input of several files passes the first file's, as the Spark reader does.
    layout : {"sparse", "auto", "dense"}
        ``X`` as CSR (default; ``sparkrank.load_svmlight``'s is ``"auto"``, the CLI's);
        ``"auto"``: dense rows when they take no more memory than CSR would (judged on the
        file's first MB: LETOR files, which list nearly every feature on every line, then need
        no index array); ``"dense"``: always dense rows.  The numbers are the same either way.
    name : str, optional
        The file's name in error messages (default: ``path``; sparkrank's sources pass the
        name both engines give a file, :func:`sparkrank.io.uri.display_name`).

    Returns
    -------
    SVMLightFile

    Raises
    ------
    SVMLightFormatError
        Malformed input; the message names the file and the 1-based line number.
    """
    dtype = np.dtype(dtype).type
    if dtype not in (np.float64, np.float32):
        raise DataError(f"dtype must be float64 or float32, got {dtype!r}")
    if n_features is not None and n_features < 0:
        raise DataError(f"n_features must be >= 0, got {n_features}")
    name = os.fspath(path) if name is None else name
    threads = threads_or_default(threads)
    with _file_bytes(path, name) as raw:
        return _parse_text(raw, name, n_features, dtype, zero_based, max_features=max_features, threads=threads,
                           qid_layout=qid_layout, layout=layout)


def parse_svmlight_bytes(raw: bytes, *, name: str = "<bytes>", n_features: int | None = None,
                         dtype: type = np.float64, zero_based: bool = False,
                         max_features: int | None = None, first_line: int = 0,
                         qid_layout: QidLayout | None = None, threads: int = 1,
                         layout: str = "sparse") -> SVMLightFile:
    """:func:`read_svmlight` on SVMlight text already in memory (e.g. a piece of a file on
    a Spark executor); ``name`` is used in error messages, lines are numbered from
    ``first_line + 1``, and ``qid_layout`` (default: that of the first data line of
    ``raw``) is the qid rule the rows must follow."""
    return _parse_text(raw, name, n_features, np.dtype(dtype).type, zero_based, max_features=max_features,
                       first_line=first_line, qid_layout=qid_layout, threads=threads, layout=layout)


@dataclass
class _Rows:
    """The output arrays of the scanner, sized by the bounds of pass 1 (see :mod:`.scanner`)."""

    labels: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    qid_int: np.ndarray
    qid_start: np.ndarray
    qid_end: np.ndarray
    qid_kind: np.ndarray  # 0 none, 1 integer, 2 string
    row_line: np.ndarray
    cost: np.ndarray  # a cost: token's value, its text at cost_start:cost_end (-1: none)
    cost_start: np.ndarray
    cost_end: np.ndarray

    @classmethod
    def allocate(cls, max_rows: int, max_nnz: int, dtype, width: int = -1) -> "_Rows":
        """CSR arrays for ``max_nnz`` non-zeros, or (``width >= 0``) zeroed dense rows and no indices."""
        # np.empty / np.zeros (calloc): pages are only resident once written, so loose bounds cost no memory
        if width >= 0:
            indices, values = np.empty(1, np.int32), np.zeros(max_rows * width, dtype)
        else:
            indices, values = np.empty(max_nnz, np.int32), np.empty(max_nnz, dtype)
        return cls(np.empty(max_rows, np.float64), np.empty(max_rows + 1, np.int64), indices, values,
                   *(np.empty(max_rows, np.int64) for _ in range(3)), np.empty(max_rows, np.int8),
                   np.empty(max_rows, np.int64), np.empty(max_rows), *(np.empty(max_rows, np.int64) for _ in range(2)))

    def arrays(self) -> tuple:
        return (self.labels, self.indptr, self.indices, self.values, self.qid_int, self.qid_start, self.qid_end,
                self.qid_kind, self.row_line, self.cost, self.cost_start, self.cost_end)


#: Bytes at the start of a file parsed once to choose the layout (``layout="auto"``).
PROBE_BYTES = 1 << 20


def _probe_width(buf, raw, zero_based: bool, n_features: int | None, max_features: int, dtype,
                 layout: str) -> int:
    """The dense row width to parse into, or -1 for CSR.

    ``"auto"`` parses the first :data:`PROBE_BYTES` (whole lines) as CSR and goes dense when
    dense rows of the width seen there take no more memory than its non-zeros with their
    int32 indices would (for LETOR files, which list nearly every feature on every line,
    that saves the index array: a third of the CSR in float64, half in float32).  A column
    wider than the probe saw later in the file makes the reader start again as CSR.
    """
    if layout == "sparse":
        return -1
    hi = raw.find(b"\n", min(len(raw), PROBE_BYTES) - 1) + 1 or len(raw)
    ends, colons = S.count_line_ends(buf, 0, hi)
    probe = _Rows.allocate(int(ends) + 1, int(colons), dtype)
    state = np.array([0, 0, 0, -1, 0], dtype=np.int64)
    err = np.zeros(6, np.int64)
    S.scan(buf, 0, hi, zero_based, -1 if n_features is None else int(n_features), max_features, -1, state,
           *probe.arrays(), np.empty(0, np.int64), err)
    rows, nnz = int(state[1]), int(state[2])
    width = int(n_features) if n_features is not None else int(state[3]) + 1
    if err[0] != S.E_NONE or rows == 0 or width <= 0:
        return -1  # bad or empty text: the CSR pass reports it
    if layout == "dense":
        return width
    itemsize = np.dtype(dtype).itemsize
    return width if width * itemsize * rows <= nnz * (itemsize + 4) else -1


def _parse_text(raw, name: str, n_features: int | None, dtype: type, zero_based: bool, *,
                max_features: int | None = None, first_line: int = 0,
                qid_layout: QidLayout | None = None, threads: int = 1, layout: str = "sparse") -> SVMLightFile:
    """:func:`read_svmlight` on the file's bytes (``bytes`` or a memory map)."""
    if int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    check_choice(layout, FEATURE_LAYOUTS, "layout")
    max_features = max_features_limit(max_features)
    buf = np.frombuffer(raw, dtype=np.uint8)
    width = _probe_width(buf, raw, bool(zero_based), n_features, int(max_features), dtype, layout)
    read = dict(max_features=max_features, first_line=first_line, qid_layout=qid_layout, threads=threads)
    try:
        try:
            return _scan_text(raw, buf, name, n_features, dtype, zero_based, width, recheck=layout == "auto", **read)
        except _WiderThanProbe:
            pass  # leaving the handler frees the dense rows (the traceback held them)
        # a later line is wider than the probe saw: parse again as CSR (rare for LETOR text)
        f = _scan_text(raw, buf, name, n_features, dtype, zero_based, -1, **read)
        if layout == "dense":
            f.X = f.X.toarray()
        return f
    finally:
        del buf  # release the view of the memory map before it is closed


class _WiderThanProbe(Exception):
    """The dense pass met a column beyond the width it chose up front."""


def _scan_text(raw, buf, name: str, n_features: int | None, dtype: type, zero_based: bool, width: int, *,
               max_features: int, first_line: int, qid_layout: QidLayout | None, threads: int,
               recheck: bool = False) -> SVMLightFile:
    """Both numba passes over the pieces, into CSR arrays (``width`` -1) or dense rows.

    With ``recheck``, dense rows are kept only if the counting pass's bounds for the whole
    file (rows, and ``:`` bytes for the non-zeros) still make them no larger than CSR: a file
    whose first MB is dense and the rest sparse is read as CSR."""
    pieces = _chunks(raw, int(threads))
    release = _page_release(raw)

    def count(lo: int, hi: int) -> tuple[int, int]:
        ends, colons = S.count_line_ends(buf, lo, hi)
        release(lo, hi)
        return int(ends), int(colons)

    with _mapper(int(threads), len(pieces)) as run:
        bounds = np.array(run(count, pieces), dtype=np.int64).reshape(-1, 2)
        # piece k: its first line, and the first row and non-zero of its stretch
        line0 = first_line + np.concatenate(([0], np.cumsum(bounds[:, 0])[:-1]))
        itemsize = np.dtype(dtype).itemsize
        if recheck and width >= 0 and (int(bounds[:, 0].sum()) + 1) * width * itemsize > \
                int(bounds[:, 1].sum()) * (itemsize + 4):
            width = -1
        if width >= 0:
            # A piece holds at most one row per line end (only the last can end without one),
            # so stretches of exactly that many dense rows are usually filled with no gap
            # left to close: no row is moved unless a piece has blank or comment lines.
            row0 = np.concatenate(([0], np.cumsum(bounds[:, 0])))
            row0[-1] += 1
            nnz0 = row0 * width
        else:  # CSR stretches: one more indptr entry per piece
            row0 = np.concatenate(([0], np.cumsum(bounds[:, 0] + 1)))
            nnz0 = np.concatenate(([0], np.cumsum(bounds[:, 1])))
        out = _Rows.allocate(int(row0[-1]), int(nnz0[-1]), dtype, width)
        n_limit = -1 if n_features is None else int(n_features)

        def scan(k: int, lo: int, hi: int, room: int = 64):
            state = np.array([line0[k], row0[k], nnz0[k], -1, 0], dtype=np.int64)  # line, row, nnz, max_col, n_slow
            err = np.zeros(6, np.int64)
            slow = np.empty(4 * room, np.int64)
            S.scan(buf, lo, hi, bool(zero_based), n_limit, int(max_features), width, state, *out.arrays(), slow, err)
            if state[4] > room:  # more slow tokens than recorded: the same scan again, with room for all
                return scan(k, lo, hi, int(state[4]))
            release(lo, hi)
            return state, slow[: 4 * int(state[4])].reshape(-1, 4), err

        scanned = run(scan, [(k, lo, hi) for k, (lo, hi) in enumerate(pieces)])
    for _, _, err in scanned:  # the first bad piece holds the file's first bad line
        if err[0] == S.E_WIDER:
            raise _WiderThanProbe()
        if err[0] != S.E_NONE:
            raise_scan_error(err, raw, name, zero_based, n_features, max_features)

    # Close the gaps between the stretches, in file order; slow-token targets move along.
    m, nnz, max_col, slow_parts = close_gaps(scanned, row0, nnz0, width, out)
    labels, values, indices = out.labels, out.values, out.indices
    # Shrink in place (realloc; no views exist yet): no copy, the unused tails are freed.
    labels.resize(m, refcheck=False)
    values.resize(nnz, refcheck=False)  # for dense rows nnz is m * width
    indices.resize(nnz if width < 0 else 1, refcheck=False)

    # Tokens the numba pass left to Python (more than 18 significant digits, or an
    # Eisel-Lemire ambiguity): syntax was already validated, so float() cannot fail.
    n_slow = sum(part.shape[0] for part in slow_parts)
    if n_slow:
        set_slow_tokens(raw, name, np.concatenate(slow_parts), labels, values, indices, width, zero_based)

    if qid_layout is None and m:
        qid_layout = QidLayout(bool(out.qid_kind[0] != 0), bool(out.qid_kind[0] == 1), int(out.row_line[0]), name)
    qid = None
    if m:
        qid = qids_by_layout(raw, name, qid_layout, out.qid_kind[:m], out.qid_int[:m], out.qid_start[:m],
                              out.qid_end[:m], out.row_line[:m])
    cost = row_costs(raw, name, out.cost[:m], out.cost_start[:m], out.cost_end[:m], out.row_line[:m])

    if width >= 0:  # every column is below width, and (n_features unset) the probe saw width - 1
        del out
        return SVMLightFile(X=values.reshape(m, width), labels=labels, qid=qid, n_bytes=len(raw),
                            qid_layout=qid_layout, cost=cost)
    indptr = out.indptr[: m + 1]
    del out
    n_cols = int(n_features) if n_features is not None else int(max_col) + 1
    X = _csr(values, indices, indptr, m, nnz, n_cols, zeros_possible=bool(n_slow))
    return SVMLightFile(X=X, labels=labels, qid=qid, n_bytes=len(raw), qid_layout=qid_layout, cost=cost)


def _csr(values: np.ndarray, indices: np.ndarray, indptr: np.ndarray, m: int, nnz: int, n_cols: int,
         zeros_possible: bool) -> "sp.csr_matrix":
    """The filled CSR arrays as a matrix without a copy (32-bit row pointers while the non-zeros
    allow; else 64-bit indices); ``zeros_possible``: a slow token may have been zero."""
    if nnz < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    else:
        indices = indices.astype(np.int64)
    import scipy.sparse as sp  # not needed (nor loaded) for dense rows

    X = sp.csr_matrix((values, indices, indptr), shape=(m, n_cols), copy=False)
    if zeros_possible and np.any(values == 0):
        X.eliminate_zeros()  # a slow token that was zero (e.g. 0e-400); rare
    X.has_sorted_indices = True  # strictly increasing per row, checked by the scanner
    return X


def load_svmlight(
    path: PathLike,
    *,
    n_features: int | None = None,
    dtype: type = DTYPE,
    zero_based: bool = False,
    max_features: int | None = None,
    threads: int | None = THREADS,
    layout: str = "sparse",
) -> RankingData:
    """Read an SVMlight / LETOR file into a :class:`~sparkrank.data.block.RankingData`.

    Parameters are those of :func:`read_svmlight` (``sparkrank.load_svmlight``: the CLI's
    defaults).  Rows are grouped by qid (stably); a file without qids is one global ranking.
    """
    dtype = np.dtype(dtype).type
    f = read_svmlight(path, n_features=n_features, dtype=dtype, zero_based=zero_based, max_features=max_features,
                      threads=threads, layout=layout)
    return RankingData.from_arrays(f.X, f.labels, f.qid, dtype=dtype, n_features=n_features, layout=layout)


