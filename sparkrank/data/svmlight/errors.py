"""What the SVMlight reader reports, and the qid rule it checks: :class:`SVMLightFormatError`
(file, line, what is wrong), the scanner's error codes as messages (:func:`raise_scan_error`),
and :class:`QidLayout` with the check of every row's qid against it (:func:`qids_by_layout`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..block import DataError, beyond_float32, max_features_message
from ..weights import WEIGHT_RULE
from . import scanner as S
from .parse_decimal import INF, NAN


class SVMLightFormatError(DataError):
    """Malformed SVMlight/LETOR text.

    The message names the file, the 1-based line number and what is wrong.

    Attributes
    ----------
    path : str
        The file being read.
    line : int
        1-based line number of the problem (0 when it is not tied to one line).
    """

    def __init__(self, message: str, *, path: str = "", line: int = 0):
        super().__init__(message)
        self.path = path
        self.line = line


def cost_message(name: str, token: str, line: int) -> str:
    """The one error line of a bad ``cost:`` token (:mod:`.costs`)."""
    return f"{name}: {token!r} on line {line}: a cost is a row weight and {WEIGHT_RULE}"


def token_text(raw: bytes, s: int, e: int, limit: int = 60) -> str:
    t = raw[s:e].decode("utf-8", errors="replace")
    return t if len(t) <= limit else t[:limit] + "..."


def nonfinite_word(kind: int) -> str:
    if kind == NAN:
        return "nan"
    return "-inf" if kind < 0 else "inf"


def raise_scan_error(err: np.ndarray, raw: bytes, name: str, zero_based: bool, n_features: int | None,
                      max_features: int | None) -> None:
    code, line, s, e, aux1, aux2 = (int(v) for v in err)
    tok = token_text(raw, s, e)
    if code == S.E_LABEL:
        msg = f"malformed label {tok!r} on line {line}"
    elif code == S.E_LABEL_NONFINITE:
        msg = f"label on line {line} is {nonfinite_word(aux2 if aux2 == NAN else aux1 * INF)}"
    elif code == S.E_VALUE:
        tail = tok.split(":", 1)[1] if ":" in tok else tok
        msg = f"malformed value {tail!r} of feature {aux1} on line {line}"
    elif code == S.E_FEAT_NONFINITE:
        msg = f"feature {aux1} on line {line} is {nonfinite_word(aux2)}"
    elif code == S.E_FEAT_RANGE:
        msg = beyond_float32(f"feature {aux1} on line {line}", tok.split(":", 1)[1] if ":" in tok else tok)
    elif code == S.E_COLON:
        msg = f"token {tok!r} on line {line} is not index:value (missing ':')"
    elif code == S.E_INDEX:
        msg = f"malformed feature index in {tok!r} on line {line}"
    elif code == S.E_INDEX_LOW:
        if zero_based:
            msg = f"negative feature index {aux1} on line {line}"
        else:
            msg = (
                f"feature index {aux1} on line {line}: indices are 1-based "
                "(pass zero_based=True to read a 0-based file)"
            )
    elif code == S.E_INDEX_BIG:
        msg = f"feature index in {tok!r} on line {line} is too large (limit 2**31 - 1)"
    elif code == S.E_ORDER:
        msg = f"feature indices on line {line} are not strictly increasing: {aux1} after {aux2}"
    elif code == S.E_NFEAT:
        msg = f"feature index {aux1} on line {line} exceeds n_features={n_features}"
    elif code == S.E_MAX_FEATURES:
        width = aux1 + (1 if zero_based else 0)
        msg = max_features_message(f"feature index {aux1} on line {line}", width, int(max_features))
    elif code == S.E_QID_EMPTY:
        msg = f"'qid:' without value on line {line}"
    elif code == S.E_QID_POS:
        msg = f"{tok!r} on line {line}: a qid must come once, directly after the label"
    elif code == S.E_COST:
        raise SVMLightFormatError(cost_message(name, tok, line), path=name, line=line)
    elif code == S.E_COST_POS:
        msg = f"{tok!r} on line {line}: a cost must come once, after the label (and qid) and before the features"
    else:  # pragma: no cover - every code is handled above
        msg = f"parse error {code} on line {line} near {tok!r}"
    raise SVMLightFormatError(f"{name}: {msg}", path=name, line=line)


@dataclass(frozen=True)
class QidLayout:
    """The qid rule of one input, fixed by its first data line; every other line must agree.

    Either every line has a ``qid:`` or none has.  When the first qid is an integer every
    qid must be one (a ``qid:abc`` later is an error, not a silent switch of all groups to
    strings); when it is not, every qid is read as a string token (``qid:7`` too).  Both
    engines apply this same rule, the Spark reader with the layout of the first line of the
    first file handed to every task.

    Attributes
    ----------
    present : bool
        The first data line has a qid.
    integer : bool
        ... and it is an integer.
    line : int
        The 1-based line of that first data line.
    path : str
        Its file.
    """

    present: bool
    integer: bool
    line: int
    path: str

    def where(self, name: str) -> str:
        return f"line {self.line}" if name == self.path else f"line {self.line} of {self.path}"


def qids_by_layout(raw, name: str, layout: QidLayout, qid_kind, qid_int, qid_start, qid_end,
                    row_line) -> np.ndarray | None:
    """The qid array of the parsed rows, checked against ``layout``."""
    def fail(row: int, text: str):
        line = int(row_line[row])
        raise SVMLightFormatError(f"{name}: {text.format(line=line)}", path=name, line=line)

    if not layout.present:
        bad = np.flatnonzero(qid_kind != 0)
        if bad.size:
            fail(int(bad[0]), f"line {{line}} has a qid but {layout.where(name)} has none "
                              "(either every line or none must have a qid)")
        return None
    bad = np.flatnonzero(qid_kind == 0)
    if bad.size:
        fail(int(bad[0]), f"line {{line}} has no qid but {layout.where(name)} has one "
                          "(either every line or none must have a qid)")
    if layout.integer:
        bad = np.flatnonzero(qid_kind == 2)
        if bad.size:
            r = int(bad[0])
            tok = token_text(raw, int(qid_start[r]), int(qid_end[r]))
            fail(r, f"qid {tok!r} on line {{line}} is not an integer, but the first qid ({layout.where(name)}) "
                    "is: either every qid is an integer, or the first one is not (then all are read as strings)")
        return qid_int.copy()
    st = qid_start.tolist()
    en = qid_end.tolist()
    try:
        return np.array([raw[s:e].decode("utf-8") for s, e in zip(st, en)])
    except UnicodeDecodeError:
        r = next(i for i, (s, e) in enumerate(zip(st, en)) if not utf8_ok(raw[s:e]))
        fail(r, "qid on line {line} is not valid UTF-8")


def utf8_ok(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
