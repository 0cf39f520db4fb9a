"""The error of bad input data (re-exported by :mod:`sparkrank.data.block`, where callers import it)."""

from __future__ import annotations


class DataError(ValueError):
    """Bad input data; the message names the row and/or column."""
