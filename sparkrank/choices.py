"""The one check for a named option (solver, counting method, scope, ...)."""

from __future__ import annotations

from typing import Iterable


def check_choice(value: str, choices: Iterable[str], what: str) -> str:
    """``value`` if it is one of ``choices``, else a ``ValueError`` naming ``what`` and the choices."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(map(str, choices))}")
    return value
