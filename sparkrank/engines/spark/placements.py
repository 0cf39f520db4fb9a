"""Which placement a Spark engine runs in (docs/design.md §2): ``auto`` resolved, and the
combinations of placement and columns that cannot run refused in one sentence."""

from __future__ import annotations

from ...choices import PLACEMENTS


def checked_placement(placement: str, qid_col: str | None, weights) -> str:
    """``placement`` with ``auto`` resolved (executor with query ids, else driver), or the
    ``ValueError`` that says why it cannot run on these columns."""
    if placement == "auto":
        placement = "executor" if qid_col else "driver"
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    if placement == "executor" and qid_col is None:
        raise ValueError("executor placement needs query ids; one global ranking runs in driver placement")
    if placement == "range" and qid_col is not None:
        raise ValueError("range placement needs one global ranking (no query ids); use executor placement")
    if placement == "range" and weights:
        raise ValueError("placement 'range' does not take row or group weights yet; use placement 'driver'")
    return placement
