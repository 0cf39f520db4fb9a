"""SVMlight's ``cost:`` tokens: each line's cost factor, read as sparkrank's row weight.

SVMlight's own format allows ``<label> qid:<q> cost:<c> <index>:<value> ...``: ``c`` is the
example's cost factor (1 when the line has none).  sparkrank reads it on both engines with the
numba scanner (:func:`sparkrank.data.svmlight.scanner.scan`), which rejects a malformed,
non-finite or negative cost, or a cost after the features, naming the file and line; it becomes
the row weight (or the group weight) when ``--weight-col cost`` (``--group-weight-col cost``)
asks for the column :data:`COST_COLUMN` (:mod:`sparkrank.data.weights`).
"""

from __future__ import annotations

import numpy as np

from ..weights import COST_COLUMN  # noqa: F401 - the column the cost tokens are read into
from .errors import SVMLightFormatError, cost_message


def row_costs(raw, name: str, cost: np.ndarray, cost_start: np.ndarray, cost_end: np.ndarray,
              row_line: np.ndarray) -> np.ndarray | None:
    """The scanned rows' costs (1 where a line has none), or ``None`` when no line has one; a
    value the scanner left to Python (more than 18 digits, stored as NaN) is converted from its
    text, and a negative one is an :class:`SVMLightFormatError` naming its line."""
    present = cost_start >= 0
    if not present.any():
        return None
    out = np.where(present, cost, 1.0)
    for r in np.flatnonzero(present & np.isnan(cost)).tolist():
        text = bytes(raw[int(cost_start[r]):int(cost_end[r])])
        out[r] = float(text)
        if not out[r] >= 0:
            raise SVMLightFormatError(cost_message(name, f"cost:{text.decode()}", int(row_line[r])),
                                      path=name, line=int(row_line[r]))
    return out


def costs_of(parts, n_rows: int) -> np.ndarray:
    """The costs of the ``n_rows`` lines of several parsed files in order (1 on a line without
    one, SVMlight's default cost factor)."""
    if all(p.cost is None for p in parts):
        return np.ones(n_rows)
    return np.concatenate([np.ones(p.labels.shape[0]) if p.cost is None else p.cost for p in parts])
