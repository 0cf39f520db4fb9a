"""Euclidean projection onto TopPush's dual feasible set (li2014 Algorithm 2).

``Ω = {α ≥ 0, β ≥ 0, Σα = Σβ}``.  The KKT conditions of ``min ½‖α − α₀‖² + ½‖β − β₀‖²``
over ``Ω`` with multiplier ``γ`` of ``Σα = Σβ`` give

    ``α = [α₀ − γ]₊``,  ``β = [β₀ + γ]₊``,

where ``γ`` is a root of the non-increasing, piecewise-linear

    ``ψ(γ) = Σ_i [α₀_i − γ]₊ − Σ_j [β₀_j + γ]₊``

whose breakpoints are ``α₀_i`` and ``−β₀_j``.  li2014 finds the root exactly in expected
linear time: pick a random breakpoint ``v``, evaluate ``ψ(v)`` over the still-unresolved
breakpoints only (the resolved ones are kept as running partial sums and counts), and
discard the half of the breakpoints that lies on the wrong side of the root — like
quickselect.  When no breakpoint is left, ``ψ`` is linear on the remaining interval and its
root is ``γ = (ΣA − ΣB)/(|A| + |B|)`` over the active sets ``A`` (``α₀_i > γ``) and ``B``
(``β₀_j + γ > 0``).  If both active sets are empty, every ``γ`` of the interval is a root
and the projection is ``α = β = 0``.

One vector ``z`` holds both blocks row by row (``α`` on rows with ``is_pos``, ``β`` on the
others); :func:`project_groups` projects every group ``offsets[g]:offsets[g+1]`` onto its
own ``Ω`` (TopPush's per-query constraint), one group per call of the single-group routine.
:func:`project_groups_sorted` is the ``O(n log n)`` sort-based exact reference.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .hinge_root import xorshift

__all__ = ["project_groups", "project_groups_sorted", "project_pair"]


@njit(cache=True)
def root_partition(z, is_pos, lo_row, hi_row, bp, kind):
    """γ for rows ``lo_row:hi_row`` by randomized partition (li2014 Algorithm 2).

    ``bp``/``kind`` are work arrays (length ≥ group size): breakpoints and 1 for an α
    breakpoint (``α₀_i``), 0 for a β breakpoint (``−β₀_j``).
    Returns ``(γ, has_active)``; ``has_active`` False means the projection is zero.
    """
    n = 0
    for r in range(lo_row, hi_row):
        if is_pos[r]:
            bp[n] = z[r]
            kind[n] = 1
        else:
            bp[n] = -z[r]
            kind[n] = 0
        n += 1
    # resolved active sets: sA = Σ α₀ over A, nA = |A|; sB = Σ β₀ over B, nB = |B|
    sA = 0.0
    nA = 0
    sB = 0.0
    nB = 0
    lo = -np.inf
    hi = np.inf
    start = 0
    end = n  # unresolved breakpoints are bp[start:end]
    seed = np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(n + 1)
    while end > start:
        seed = xorshift(seed)
        v = bp[start + np.int64(seed % np.uint64(end - start))]
        # ψ(v) = resolved part + unresolved part (li2014: partial sums, no sort)
        psi = sA - nA * v - sB - nB * v
        for t in range(start, end):
            b = bp[t]
            if kind[t] == 1:
                if b > v:
                    psi += b - v
            else:
                if b < v:
                    psi -= v - b
        if psi == 0.0:
            return v, True
        if psi > 0.0:
            # root above v: α breakpoints ≤ v are inactive, β breakpoints ≤ v are active
            lo = v
            keep = start
            for t in range(start, end):
                b = bp[t]
                if b <= v:
                    if kind[t] == 0:
                        sB -= b  # β₀ = −b
                        nB += 1
                else:
                    bp[keep] = b
                    kind[keep] = kind[t]
                    keep += 1
            end = keep
        else:
            # root below v: α breakpoints ≥ v are active, β breakpoints ≥ v are inactive
            hi = v
            keep = start
            for t in range(start, end):
                b = bp[t]
                if b >= v:
                    if kind[t] == 1:
                        sA += b
                        nA += 1
                else:
                    bp[keep] = b
                    kind[keep] = kind[t]
                    keep += 1
            end = keep
    if nA + nB == 0:
        return 0.0 if not (np.isfinite(lo) or np.isfinite(hi)) else (lo if np.isfinite(lo) else hi), False
    return (sA - sB) / (nA + nB), True


@njit(cache=True)
def apply_root(z, is_pos, lo_row, hi_row, gamma, has_active, out):
    for r in range(lo_row, hi_row):
        if not has_active:
            out[r] = 0.0
        elif is_pos[r]:
            out[r] = max(z[r] - gamma, 0.0)
        else:
            out[r] = max(z[r] + gamma, 0.0)


@njit(cache=True)
def _project_groups(z, is_pos, offsets, active, out):
    G = offsets.shape[0] - 1
    width = 0
    for g in range(G):
        width = max(width, offsets[g + 1] - offsets[g])
    bp = np.empty(width, dtype=np.float64)
    kind = np.empty(width, dtype=np.int8)
    for g in range(G):
        lo_row, hi_row = offsets[g], offsets[g + 1]
        if not active[g]:
            for r in range(lo_row, hi_row):
                out[r] = 0.0
            continue
        gamma, has = root_partition(z, is_pos, lo_row, hi_row, bp, kind)
        apply_root(z, is_pos, lo_row, hi_row, gamma, has, out)


def check_groups_input(z, is_pos, offsets, active):
    z = np.ascontiguousarray(z, dtype=np.float64)
    is_pos = np.ascontiguousarray(is_pos, dtype=np.bool_)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if z.ndim != 1 or is_pos.shape != z.shape:
        raise ValueError(f"z and is_pos must be 1-d of the same length, got {z.shape} and {is_pos.shape}")
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != z.shape[0] or np.any(np.diff(offsets) < 0):
        raise ValueError(f"group offsets must be non-decreasing from 0 to {z.shape[0]}")
    if not np.all(np.isfinite(z)):
        raise ValueError("the point to project has non-finite entries")
    G = offsets.size - 1
    active = np.ones(G, dtype=np.bool_) if active is None else np.ascontiguousarray(active, dtype=np.bool_)
    if active.shape != (G,):
        raise ValueError(f"active must have one flag per group ({G}), got shape {active.shape}")
    return z, is_pos, offsets, active


def project_groups(z: np.ndarray, is_pos: np.ndarray, offsets: np.ndarray,
                   active: np.ndarray | None = None) -> np.ndarray:
    """Project each group of ``z`` onto ``{α ≥ 0, β ≥ 0, Σα = Σβ}`` in expected linear time.

    Parameters
    ----------
    z : float64 array (m,)
        The point: ``α₀`` on rows where ``is_pos``, ``β₀`` on the others.
    is_pos : bool array (m,)
    offsets : int64 array (G+1,)
        Group ``g`` is ``offsets[g]:offsets[g+1]``; each group has its own constraint.
    active : bool array (G,), optional
        Groups to project; the rows of the other groups are set to 0.

    Returns
    -------
    float64 array (m,)
        The projection (``α`` on positives, ``β`` on negatives).
    """
    z, is_pos, offsets, active = check_groups_input(z, is_pos, offsets, active)
    out = np.empty_like(z)
    _project_groups(z, is_pos, offsets, active, out)
    return out


def project_pair(alpha0: np.ndarray, beta0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project one ``(α₀, β₀)`` onto ``Ω`` (convenience wrapper of :func:`project_groups`)."""
    alpha0 = np.asarray(alpha0, dtype=np.float64)
    beta0 = np.asarray(beta0, dtype=np.float64)
    z = np.concatenate([alpha0, beta0])
    pos = np.concatenate([np.ones(alpha0.size, bool), np.zeros(beta0.size, bool)])
    out = project_groups(z, pos, np.array([0, z.size]))
    return out[: alpha0.size], out[alpha0.size:]


def project_groups_sorted(z: np.ndarray, is_pos: np.ndarray, offsets: np.ndarray,
                          active: np.ndarray | None = None) -> np.ndarray:
    """The same projection by sorting each group's breakpoints (``O(n log n)``, test reference).

    ``ψ`` is evaluated at every sorted breakpoint with cumulative sums; the root lies in the
    first interval where ``ψ`` turns non-positive, on which ``ψ`` is linear.
    """
    z, is_pos, offsets, active = check_groups_input(z, is_pos, offsets, active)
    out = np.zeros_like(z)
    for g in np.flatnonzero(active):
        lo, hi = offsets[g], offsets[g + 1]
        a0 = z[lo:hi][is_pos[lo:hi]]
        b0 = z[lo:hi][~is_pos[lo:hi]]
        bps = np.unique(np.concatenate([a0, -b0]))
        if bps.size == 0:
            continue

        # ψ at every breakpoint from sorted prefix sums: O(n log n)
        a_sorted = np.sort(a0)
        t_sorted = np.sort(-b0)
        a_suffix = np.concatenate([np.cumsum(a_sorted[::-1])[::-1], [0.0]])
        t_prefix = np.concatenate([[0.0], np.cumsum(t_sorted)])
        ia = np.searchsorted(a_sorted, bps, side="right")  # a0 > v from here
        it = np.searchsorted(t_sorted, bps, side="left")  # t = −β₀ < v before here
        vals = (a_suffix[ia] - (a0.size - ia) * bps) - (it * bps - t_prefix[it])  # non-increasing
        zero = np.flatnonzero(vals == 0)
        if zero.size:
            gamma = bps[zero[0]]
        else:
            k = int(np.searchsorted(-vals, 0.0))  # first breakpoint with ψ < 0
            left = bps[k - 1] if k > 0 else -np.inf
            right = bps[k] if k < bps.size else np.inf
            # active sets on the open interval (left, right), where ψ is linear
            A = a0 >= right
            B = -b0 <= left
            n = int(A.sum() + B.sum())
            if n == 0:
                continue
            gamma = (a0[A].sum() - b0[B].sum()) / n
        sel = z[lo:hi]
        pos = is_pos[lo:hi]
        out[lo:hi] = np.where(pos, np.maximum(sel - gamma, 0), np.maximum(sel + gamma, 0))
    return out
