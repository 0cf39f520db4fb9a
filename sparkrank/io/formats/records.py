"""CSV/TSV records as RFC 4180 reads them: where the first record ends (:func:`first_record_end`)
and on which line a data record starts (:func:`record_start_line`).

A field in double quotes may hold the delimiter, line breaks (CR, LF or CR LF) and doubled
quotes, so a record may span several lines and its row (a record number) is not its line.
"""

from __future__ import annotations

import bz2
import gzip
import re

_RECORD_BYTES = re.compile(rb'["\r\n]')


def first_record_end(head: bytes) -> tuple[int, str] | None:
    """``(offset, terminator)`` of the end of the first record of CSV text ``head``: the first
    CR, LF or CR LF outside double quotes (RFC 4180: a doubled quote inside a quoted field
    toggles twice); ``None`` when ``head`` holds no complete record."""
    quoted = False
    for m in _RECORD_BYTES.finditer(head):
        byte = m.group()
        if byte == b'"':
            quoted = not quoted
        elif not quoted:
            end = m.start()
            if byte == b"\n":
                return end, "\n"
            if end + 1 >= len(head):
                return None  # a CR at the end of what was read: CR or CR LF is unknown
            return end, "\r\n" if head[end + 1:end + 2] == b"\n" else "\r"
    return None


def record_start_line(path: str, delimiter: str, record: int) -> int | None:
    """The 1-based line of a local CSV/TSV file (``.gz``/``.bz2`` decompressed) where data
    record ``record`` (0-based, after the header row) starts, lines ending at LF, CR LF or CR
    as records do; ``None`` when the file has fewer records.  Read again on an error path only
    (Python's csv module, whose RFC 4180 records are pyarrow's and Spark's: blank lines are no
    record)."""
    import csv

    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path[path.rfind("."):].lower(), open)
    limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)  # a quoted field may be long
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
            reader = csv.reader(f, delimiter=delimiter, quotechar='"', doublequote=True, strict=False)
            ended, index = 0, -1  # the line the last record ended on; the header is record -1
            for fields in reader:
                if fields:
                    if index == record:
                        return ended + 1
                    index += 1
                ended = reader.line_num
            return None
    finally:
        csv.field_size_limit(limit)
