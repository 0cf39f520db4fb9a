"""The projection onto the top-k push's dual set by sorting: the ``O(n log n)`` reference.

:mod:`sparkrank.kernels.capped_projection` projects ``(a, b)`` onto
``Ω_k = {α ≥ 0, 0 ≤ β_j ≤ Σα/k, Σβ = Σα}`` without sorting, by randomized pivots over the
events of the mass ``s = Σα``.  Here the same KKT system (derived there: the root ``s*`` of the
increasing, piecewise-linear ``h'(s) = δ(s) − θ(s)``) is solved by sorting ``a`` and ``b``
once and walking the events in order of ``s``, as li2014's sort-based projection walks its
breakpoints.  Sorted, every event is the next element of one of three queues:

* a positive enters ``A = {α_i > 0}`` when ``θ(s) = (ΣA − s)/|A|`` falls to it: in
  decreasing ``a``, at ``s = ΣA − |A|·a_next``;
* a negative leaves ``L = {β_j = 0}`` when ``γ`` rises to ``−b_j``: in decreasing ``b``;
* a negative leaves ``U = {β_j = c}`` when ``c − γ`` rises to ``b_j``: in increasing ``b``,

with ``c = s/k`` and ``γ = ((k − |U|)c − ΣM)/|M|`` on a piece (``M = {0 < β_j < c}``;
``γ`` and ``c − γ`` are non-decreasing in ``s``, capped_projection's docstring).  With ``M``
empty (the flat phase: ``β = c`` on the top ``k``) the ``k``-th and ``(k+1)``-th largest ``b``
enter ``M`` together at ``s_gap = k·(b₍ₖ₎ − b₍ₖ₊₁₎)``.  The walk stops at the first event
where ``h' ≥ 0``; ``s*`` lies on the piece just walked, whose sets give ``(c, γ, θ)`` by the
same two linear equations.  The walk is ``O(n)``; the sorts make it ``O(n log n)``.

It is the baseline of ``bench/toppush.py --part projection`` and an independent check of the
sort-free routine in the tests.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .capped_projection import solve_final_sets

__all__ = ["project_top_k_unit_sorted"]


@njit(cache=True)
def _slope_test(s, k, SA, nA, SU, nU, SM, nM):
    """``h'(s) = δ(s) − θ(s)`` on the piece with the given sets (``nA ≥ 1``)."""
    c = s / k
    theta = (SA - s) / nA
    if nM == 0:
        return c - SU / k - theta
    gamma = ((k - nU) * c - SM) / nM
    return gamma - (SU + nU * (gamma - c)) / k - theta


@njit(cache=True)
def _initial_sets(B, k):
    """``(iu, il)``: ``U = B[:iu]``, ``M = B[iu:il]``, ``L = B[il:]`` at ``s = 0⁺`` (``B`` descending)."""
    nb = B.shape[0]
    if k == nb:
        return nb, nb
    v = B[k - 1]
    if v > B[k]:
        return k, k  # the flat phase: M empty until s_gap
    iu = k - 1  # negatives tied with the k-th largest share the rest of the mass from s = 0
    while iu > 0 and B[iu - 1] == v:
        iu -= 1
    il = k
    while il < nb and B[il] == v:
        il += 1
    return iu, il


@njit(cache=True)
def project_top_k_unit_sorted(a, b, k):
    """Project one unit's ``(a, b)`` onto ``Ω_k`` by sorting (module docstring); returns ``(α, β)``."""
    na_all, nb = a.shape[0], b.shape[0]
    alpha = np.zeros(na_all)
    beta = np.zeros(nb)
    if na_all == 0 or nb == 0:
        return alpha, beta
    A = -np.sort(-a)
    B = -np.sort(-b)
    if A[0] + B[:k].sum() / k <= 0.0:  # (a, b) in the polar cone: the projection is 0
        return alpha, beta
    iu, il = _initial_sets(B, k)
    SU = B[:iu].sum()
    SM = B[iu:il].sum()
    SA = A[0]  # the top positive enters A at s = 0
    nA = 1
    while True:
        nU, nM = iu, il - iu
        s_pos = SA - nA * A[nA] if nA < na_all else np.inf
        s_l = s_u = np.inf
        if nM == 0:
            if il < nb:  # the flat phase ends: B[k−1] leaves U and B[k] leaves L together
                s_l = k * (B[iu - 1] - B[il])
        else:
            if il < nb and k > nU:
                s_l = k * (SM - nM * B[il]) / (k - nU)
            if iu > 0 and nM + nU > k:
                s_u = k * (nM * B[iu - 1] - SM) / (nM + nU - k)
        s = min(s_pos, s_l, s_u)
        if s == np.inf or _slope_test(s, k, SA, nA, SU, nU, SM, nM) >= 0.0:
            break  # s* is on this piece
        if s == s_pos:
            SA += A[nA]
            nA += 1
        elif nM == 0:
            iu -= 1
            SU -= B[iu]
            SM += B[iu] + B[il]
            il += 1
        elif s == s_l:
            SM += B[il]
            il += 1
        else:
            iu -= 1
            SU -= B[iu]
            SM += B[iu]
    min_hi = B[iu - 1] if iu > 0 else np.inf
    solve_final_sets(k, SA, nA, SU, iu, SM, il - iu, min_hi, a, b, alpha, beta)
    return alpha, beta
