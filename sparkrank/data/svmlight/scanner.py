"""The numba byte scanner of SVMlight text: a counting pass and a filling pass over whole lines.

Pass 1 (:func:`count_line_ends`) counts line ends and ``:`` bytes, upper bounds on the rows
and non-zeros of a piece of text, so every output array is allocated once.  Pass 2
(:func:`scan`) fills labels, CSR ``indptr`` / ``indices`` / ``values``, qids and the
``cost:`` tokens (SVMlight's per-example cost factor, sparkrank's row weight).  Both run
on any piece that holds whole lines, so the reader cuts a file at line ends and runs the
pieces on several threads (the functions are ``nogil``), each into its own stretch of the
output arrays; :func:`move_rows` then closes the gaps the loose bounds left.

The scanner never raises: it returns an error code, the line number and the byte span of
the offending token, and the reader builds the message.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .parse_decimal import MALFORMED, SLOW, after_eol, is_blank, is_eol, parse_number, token_end

# Error codes returned by the scanner.
E_NONE = 0
E_LABEL = 1  # malformed label
E_VALUE = 2  # malformed feature value
E_COLON = 3  # feature token without ':'
E_INDEX = 4  # malformed feature index
E_INDEX_LOW = 5  # index <= 0 (1-based) or < 0 (0-based): aux1 = index
E_ORDER = 6  # indices not strictly increasing: aux1 = index, aux2 = previous index
E_LABEL_NONFINITE = 7  # aux2 = NAN / INF, aux1 = sign
E_FEAT_NONFINITE = 8  # aux1 = index, aux2 = kind * sign
E_QID_EMPTY = 9
E_QID_POS = 10
E_NFEAT = 11  # aux1 = index
E_INDEX_BIG = 12
E_MAX_FEATURES = 13  # aux1 = index
E_WIDER = 14  # dense layout only: a column at or beyond the width chosen up front (not a data error)
E_FEAT_RANGE = 15  # a finite value the values array's float32 cannot hold: aux1 = index
E_COST = 16  # a cost that is malformed, not finite or negative
E_COST_POS = 17  # a cost after a feature, or a second one


@njit(cache=True, nogil=True)
def count_line_ends(buf, lo, hi):
    """Pass 1 over ``buf[lo:hi]``: the number of line ends (LF, CR and CRLF, each one line end,
    as the scanner counts them) and of ``:`` bytes, bounds on the rows and non-zeros.

    ``lo`` is 0 or right after a LF, so a CRLF never straddles ``lo``."""
    lf = 0
    cr = 0
    colons = 0
    for start in range(lo, hi, 255):
        # uint8 counters over at most 255 bytes: narrow lanes that LLVM vectorises well
        # (2.3x faster than int64 counters)
        a, b, c = np.uint8(0), np.uint8(0), np.uint8(0)
        for i in range(start, min(start + 255, hi)):
            x = buf[i]
            a += np.uint8(x == 10)
            b += np.uint8(x == 13)
            c += np.uint8(x == 58)
        lf += a
        cr += b
        colons += c
    ends = lf + cr
    if cr:  # a CRLF was counted twice above
        for i in range(lo + 1, hi):
            ends -= np.int64(buf[i] == 10) & np.int64(buf[i - 1] == 13)
    return ends, colons


@njit(cache=True, nogil=True)
def move_rows(width, dst_row, src_row, n_rows, dst_nnz, src_nnz, n_nnz, labels, indptr, indices, values, qid_int,
              qid_start, qid_end, qid_kind, row_line, cost, cost_start, cost_end):
    """Move ``n_rows`` parsed rows (and their ``n_nnz`` non-zeros) down from ``src_row`` /
    ``src_nnz`` to ``dst_row`` / ``dst_nnz`` of the same arrays, in place.

    The pieces of a file are scanned into stretches sized by their pass-1 bounds; moving
    them down in file order (``dst <= src``, so a forward copy never overwrites what is still
    to be read) leaves every array contiguous, with no second copy of the data.  With
    ``width >= 0`` the values are dense rows of that width (``values[row * width + col]``,
    no ``indices``), moved whole.
    """
    shift = dst_nnz - src_nnz
    if width >= 0:
        for k in range(n_rows * width):
            values[dst_row * width + k] = values[src_row * width + k]
    else:
        for k in range(n_nnz):
            indices[dst_nnz + k] = indices[src_nnz + k]
            values[dst_nnz + k] = values[src_nnz + k]
    for r in range(n_rows):
        labels[dst_row + r] = labels[src_row + r]
        qid_int[dst_row + r] = qid_int[src_row + r]
        qid_start[dst_row + r] = qid_start[src_row + r]
        qid_end[dst_row + r] = qid_end[src_row + r]
        qid_kind[dst_row + r] = qid_kind[src_row + r]
        row_line[dst_row + r] = row_line[src_row + r]
        cost[dst_row + r] = cost[src_row + r]
        cost_start[dst_row + r] = cost_start[src_row + r]
        cost_end[dst_row + r] = cost_end[src_row + r]
    if width < 0:
        for r in range(n_rows + 1):
            indptr[dst_row + r] = indptr[src_row + r] + shift


# Explicit signatures: called with literal and variable arguments, these would otherwise
# be compiled once per argument-type combination.
@njit("void(int64[:], int64, int64, int64, int64, int64)", cache=True)
def _record_slow(slow, n_slow, target, s, e, line):
    """Record token ``n_slow`` for Python's float(), if ``slow`` has room for it: ``slow`` is
    flat, 4 entries per token, (target, start, end, line).  The array is never replaced
    inside the scan loop: a loop-carried array that may be reallocated made numba keep its
    reference count on every token, which cost half the scan's time; when it overflows
    (more than a piece's share of > 18-digit tokens, rare) the reader scans the piece again
    with room for all of them."""
    k = 4 * n_slow
    if k + 4 <= slow.shape[0]:
        slow[k] = target
        slow[k + 1] = s
        slow[k + 2] = e
        slow[k + 3] = line


@njit("void(int64[:], int64, int64, int64, int64, int64, int64)", cache=True)
def _set_err(err, code, line, s, e, aux1, aux2):
    err[0] = code
    err[1] = line
    err[2] = s
    err[3] = e
    err[4] = aux1
    err[5] = aux2


@njit(cache=True)
def _bad_token_code(buf, tok):
    """Error code and end of a token that is neither ``index:value`` nor ``qid:``."""
    te = token_end(buf, tok)
    for k in range(tok, te):
        if buf[k] == 58:
            return E_INDEX, te
    return E_COLON, te


@njit(cache=True)
def _parse_qid(buf, s, te):
    """``(is_int, value)`` of the qid token ``buf[s:te]`` (integers of at most 18 digits)."""
    k = s
    neg = False
    if buf[k] == 45 or buf[k] == 43:
        neg = buf[k] == 45
        k += 1
    if k >= te or te - k > 18:
        return False, 0
    v = 0
    while k < te:
        ch = buf[k]
        if ch < 48 or ch > 57:
            return False, 0
        v = v * 10 + (np.int64(ch) - 48)
        k += 1
    return True, -v if neg else v


@njit(cache=True, nogil=True)
def _past_blanks(buf, p, n):
    """The first byte at or after ``p`` that is not a space or tab (``n`` at the end)."""
    while p < n and is_blank(buf[p]):
        p += 1
    return p


@njit(cache=True, nogil=True)
def _comment_end(buf, p, n):
    """The line end after the comment at ``buf[p]`` (``n`` at the end of the text)."""
    while p < n and not is_eol(buf[p]):
        p += 1
    return p


@njit(cache=True, nogil=True)
def _line_start(buf, p, n):
    """Past the blanks at the start of a line: ``(p, True)`` at its label, or ``(p, False)``
    past a blank or comment-only line (or at the end of the text)."""
    p = _past_blanks(buf, p, n)
    if p >= n:
        return p, False
    c = buf[p]
    if is_eol(c):
        return after_eol(buf, p), False
    if c == 35:
        p = _comment_end(buf, p, n)
        if p < n:
            p = after_eol(buf, p)
        return p, False
    return p, True


@njit(cache=True, nogil=True)
def _store_label(labels, row_line, qid_kind, cost_start, slow, n_slow, row, kind, v, p, e, line):
    """Store ``row``'s label ``v`` (a slow token recorded for Python's ``float``) and its line;
    the row has no qid and no cost yet.  Returns the slow-token count after it."""
    if kind == SLOW:
        _record_slow(slow, n_slow, -row - 1, p, e, line)
        n_slow += 1
    labels[row] = v
    row_line[row] = line
    qid_kind[row] = 0
    cost_start[row] = -1
    return n_slow


@njit(cache=True, nogil=True)
def _store_value(values, indices, slow, n_slow, nnz, row, col, width, kind, v, p, e, line, tok, idx, err):
    """Store feature ``col``'s value ``v`` of ``row`` (the CSR slot ``nnz`` or its dense cell; a
    slow token recorded for Python's ``float`` and stored as 0 until then): ``(nnz, n_slow)``
    after it, ``err`` set when a finite value is beyond the values' dtype."""
    pos = nnz if width < 0 else row * width + col  # CSR slot or dense cell
    if kind == SLOW:  # Python's float() fills it in later
        _record_slow(slow, n_slow, pos, p, e, line)
        n_slow += 1
        v = 0.0
    values[pos] = v
    if values[pos] - values[pos] != 0.0:  # finite v stored as inf: beyond float32's range
        _set_err(err, E_FEAT_RANGE, line, tok, e, idx, 0)
        return nnz, n_slow
    if width < 0:
        indices[nnz] = col
    return nnz + 1, n_slow


@njit(cache=True, nogil=True)
def _index_digits(buf, p, n):
    """The decimal digits of a feature index at ``buf[p]``: ``(index, end)``, the index no
    longer growing past 10**10 (any such index is too large)."""
    idx = 0
    while p < n and buf[p] >= 48 and buf[p] <= 57:
        if idx < 10000000000:
            idx = idx * 10 + (np.int64(buf[p]) - 48)
        p += 1
    return idx, p


@njit(cache=True, nogil=True)
def _qid_token(buf, p, line, row, prev, qid_int, qid_start, qid_end, qid_kind, err):
    """The ``qid:`` token at ``buf[p]`` of ``row`` stored (allowed once, directly after the
    label, with a value): the byte after it, or -1 with ``err`` set."""
    te = token_end(buf, p)
    if qid_kind[row] != 0 or prev >= 0:
        _set_err(err, E_QID_POS, line, p, te, 0, 0)
        return -1
    if p + 4 == te:
        _set_err(err, E_QID_EMPTY, line, p, te, 0, 0)
        return -1
    is_int, qv = _parse_qid(buf, p + 4, te)
    qid_kind[row] = 1 if is_int else 2
    qid_int[row] = qv
    qid_start[row] = p + 4
    qid_end[row] = te
    return te


@njit(cache=True, nogil=True)
def _cost_token(buf, p, line, row, prev, cost, cost_start, cost_end, err):
    """The ``cost:`` token at ``buf[p]`` of ``row`` stored (once, before the features; SVMlight's
    cost factor, a row weight): the byte after it, or -1 with ``err`` set.  A value of more than
    18 digits is stored as NaN, and the reader converts its text (``cost_start:cost_end``)."""
    te = token_end(buf, p)
    if cost_start[row] >= 0 or prev >= 0:
        _set_err(err, E_COST_POS, line, p, te, 0, 0)
        return -1
    kind, v, e = parse_number(buf, p + 5)
    if kind >= MALFORMED or e != te or p + 5 == te or v < 0:
        _set_err(err, E_COST, line, p, te, 0, 0)
        return -1
    cost[row] = np.nan if kind == SLOW else v
    cost_start[row] = p + 5
    cost_end[row] = te
    return te


@njit(cache=True, nogil=True)
def _tag_token(buf, p, n, line, row, prev, qid_int, qid_start, qid_end, qid_kind, cost, cost_start, cost_end, err):
    """A ``qid:`` or ``cost:`` token at ``buf[p]`` (a token that is not a feature) stored: the
    byte after it, or -1 with ``err`` set (a bad one, or neither)."""
    if buf[p] == 113 and p + 3 < n and buf[p + 1] == 105 and buf[p + 2] == 100 and buf[p + 3] == 58:
        return _qid_token(buf, p, line, row, prev, qid_int, qid_start, qid_end, qid_kind, err)
    if p + 4 < n and buf[p] == 99 and buf[p + 1] == 111 and buf[p + 2] == 115 and buf[p + 3] == 116 \
            and buf[p + 4] == 58:
        return _cost_token(buf, p, line, row, prev, cost, cost_start, cost_end, err)
    code, te = _bad_token_code(buf, p)
    _set_err(err, code, line, p, te, 0, 0)
    return -1


@njit(cache=True, nogil=True)
def _column_error(col, prev, n_features_limit, max_features, width):
    """The error code of feature column ``col`` after column ``prev`` of its row, or
    :data:`E_NONE` (the checks in order: range, order, the fixed width, the limit, dense rows)."""
    if col < 0:
        return E_INDEX_LOW
    if col > 2147483646:
        return E_INDEX_BIG
    if col <= prev:
        return E_ORDER
    if n_features_limit >= 0 and col >= n_features_limit:
        return E_NFEAT
    if max_features >= 0 and col >= max_features:
        return E_MAX_FEATURES
    if width >= 0 and col >= width:
        return E_WIDER
    return E_NONE


@njit(cache=True, nogil=True)
def _number_error(err, in_row, kind, v, line, p, tok, e, idx):
    """Set ``err`` for a label (``in_row`` false) or feature value that is malformed or not finite."""
    if not in_row:
        code = E_LABEL if kind == MALFORMED else E_LABEL_NONFINITE
        _set_err(err, code, line, p, e, -1 if v < 0 else 1, kind)
    else:
        code = E_VALUE if kind == MALFORMED else E_FEAT_NONFINITE
        _set_err(err, code, line, tok, e, idx, -kind if v < 0 else kind)


@njit(cache=True, nogil=True)
def scan(buf, lo, hi, zero_based, n_features_limit, max_features, width, state, labels, indptr, indices, values,
          qid_int, qid_start, qid_end, qid_kind, row_line, cost, cost_start, cost_end, slow, err):
    """Pass 2 over ``buf[lo:hi]``: fill the output arrays; never raises (errors come back in ``err``).

    ``hi`` is right after a LF (or the end of the text), so a chunk holds whole lines and
    the file can be scanned chunk by chunk.  ``state`` = [line, row, nnz, max_col, n_slow]
    carries the counters from one chunk to the next (lines are numbered from ``line + 1``;
    the text may be a piece of a file).  ``n_features_limit`` and ``max_features`` (-1:
    none) bound the column indices: the first is the caller's fixed width, the second the
    guard against a huge dimension.  ``width`` -1 fills CSR ``indices`` / ``values``; ``width
    >= 0`` fills dense rows, ``values[row * width + col]`` (``values`` zeroed beforehand, no
    ``indices``), and stops with :data:`E_WIDER` at a column beyond it.

    ``cost`` gets a row's ``cost:`` value and ``cost_start``/``cost_end`` its text (-1: the row
    has none; :func:`_cost_token`).

    ``err`` = [code, line, token start, token end, aux1, aux2]; ``slow`` holds 4 entries
    per token, (target, start, end, line), with target >= 0 an index into ``values`` and
    target < 0 the label of row ``-target - 1``; ``state[4]`` counts them all, and when
    that exceeds ``slow``'s room only the first ones are recorded (see :func:`_record_slow`).
    """
    n = hi
    line, row, nnz, max_col, n_slow = state[0], state[1], state[2], state[3], state[4]
    base = 0 if zero_based else 1
    p = lo
    csr = width < 0  # dense rows need no indptr (and pieces may share a boundary row)
    if csr:
        indptr[row] = nnz
    # One loop over tokens with a single parse_number call site (label or feature
    # value): numba/LLVM inline the parser at every call site, and compile time matters.
    in_row = False  # inside a data line, after its label
    prev = -1  # previous column of this row
    while p < n:
        if not in_row:
            line += 1
            p, data = _line_start(buf, p, n)
            if not data:  # a blank or comment line (or the end of the text)
                continue
            tok = p
            col = -1
            idx = 0
        else:
            p = _past_blanks(buf, p, n)
            if p >= n:
                break
            c = buf[p]
            tok = p
            if c < 48 or c > 57:  # not a feature (the common case is tested first)
                if is_eol(c):
                    p = after_eol(buf, p)
                    in_row = False
                    row += 1
                    if csr:
                        indptr[row] = nnz
                    continue
                if c == 35:
                    p = _comment_end(buf, p, n)
                    continue
                p = _tag_token(buf, p, n, line, row, prev, qid_int, qid_start, qid_end, qid_kind, cost, cost_start,
                               cost_end, err)
                if p < 0:  # a bad qid: or cost: token, or neither
                    break
                continue
            idx, p = _index_digits(buf, p, n)
            if p >= n or buf[p] != 58:
                code, te = _bad_token_code(buf, tok)
                _set_err(err, code, line, tok, te, 0, 0)
                break
            p += 1
            col = idx - base
            code = _column_error(col, prev, n_features_limit, max_features, width)
            if code != E_NONE:
                _set_err(err, code, line, tok, token_end(buf, tok), idx, prev + base)
                break
        # ---- the number: a label (not in_row) or the value of column col
        kind, v, e = parse_number(buf, p)
        if kind >= MALFORMED:
            _number_error(err, in_row, kind, v, line, p, tok, e, idx)
            break
        if not in_row:
            n_slow = _store_label(labels, row_line, qid_kind, cost_start, slow, n_slow, row, kind, v, p, e, line)
            in_row = True
            prev = -1
        else:
            if kind == SLOW or v != 0.0:  # explicit zeros are not stored
                nnz, n_slow = _store_value(values, indices, slow, n_slow, nnz, row, col, width, kind, v, p, e, line,
                                           tok, idx, err)
                if err[0] != E_NONE:
                    break
            if col > max_col:
                max_col = col
            prev = col
        p = e
    if in_row and err[0] == E_NONE:  # last line without a newline
        row += 1
        if csr:
            indptr[row] = nnz
    state[0], state[1], state[2], state[3], state[4] = line, row, nnz, max_col, n_slow

