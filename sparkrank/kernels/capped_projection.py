"""Euclidean projection onto the dual feasible set of the top-k push.

The constraint set
------------------
The top-k push replaces li2014's ``max_j w·x⁻_j`` by the mean of the ``k`` highest negative
scores, ``T_k(p⁻) = max{Σ_j β̃_j p⁻_j : β̃ ∈ Δ_k}`` over the capped simplex
``Δ_k = {0 ≤ β̃_j ≤ 1/k, Σ_j β̃_j = 1}`` (its vertices put ``1/k`` on ``k`` negatives).  Redo
li2014's proof of Theorem 1 (§4.2) with ``Δ_k`` in place of the simplex: ``ℓ`` is convex and
non-decreasing, so ``ℓ(T_k − p_i) = max_{α_i ≥ 0} α_i (T_k − p_i) − ℓ*(α_i)`` and, as
``α_i ≥ 0``, the inner max over ``β̃⁽ⁱ⁾ ∈ Δ_k`` moves out:

    ``Σ_i ℓ(T_k − p_i) = max_{α ≥ 0, β̃⁽ⁱ⁾ ∈ Δ_k} Σ_i α_i (Σ_j β̃⁽ⁱ⁾_j p⁻_j − p_i) − ℓ*(α_i)``.

li2014's substitution ``β_j = Σ_i α_i β̃⁽ⁱ⁾_j`` makes the objective depend on ``(α, β)`` only
(``Σ_j β_j p⁻_j − Σ_i α_i p_i − Σ_i ℓ*(α_i)``).  The set of such ``β`` is the Minkowski sum
``Σ_i α_i Δ_k``; for a convex set ``D`` and weights ``α_i ≥ 0`` it is ``(Σ_i α_i)·D``, so

    ``Ω_k = {α ≥ 0,  0 ≤ β_j ≤ (Σ_i α_i)/k,  Σ_j β_j = Σ_i α_i}``

and everything after the substitution (the min over ``w``, ``w = (X⁺ᵀα − X⁻ᵀβ)/(λm)``, the
dual ``F``, its gradient) is li2014's, unchanged.  For ``k = 1`` the cap ``β_j ≤ Σα`` follows
from ``β ≥ 0, Σβ = Σα``, so ``Ω_1`` is li2014's ``Ω``: :func:`project_top_k_groups` then calls
li2014's routine (:mod:`sparkrank.kernels.simplex_projection`), bit for bit the exact TopPush.

The projection's KKT form
-------------------------
Project ``(a, b)`` (``a`` on the positives, ``b`` on the negatives of one unit) onto ``Ω_k``.
Fix the mass ``s = Σα``: the two blocks separate into the projection of ``a`` onto the simplex
of size ``s``, ``α = [a − θ]₊`` with ``Σ[a − θ]₊ = s``, and of ``b`` onto ``s·Δ_k``,
``β = clip(b + γ, 0, c)`` with cap ``c = s/k`` and ``Σ clip(b + γ, 0, c) = s``.  The squared
distance ``h(s) = f_α(s) + f_β(s)`` is convex; by the envelope theorem
``f_α'(s) = −θ`` and ``f_β'(s) = γ − R/k`` with ``R = Σ_j [b_j + γ − c]₊`` (the multipliers
of the caps), so the KKT point is the ``s* ≥ 0`` with

    ``h'(s*) = δ(s*) − θ(s*) = 0``,  ``δ = γ − R/k``

(the Lagrangian's stationarity in ``α`` reads ``α = [a − γ + R/k]₊``: ``θ = δ``).  ``s* = 0``
(the projection is 0) exactly when ``h'(0⁺) = −T_k(b) − max a ≥ 0``: ``(a, b)`` lies in the
polar cone ``{max a + T_k(b) ≤ 0}``.

Sort-free, expected linear time
-------------------------------
On an interval of ``s`` where the sets ``A = {α_i > 0}``, ``U = {β_j = c}``, ``M = {0 < β_j < c}``
do not change, everything is linear in ``s``; the breakpoints ("events") are where an element
changes set.  As ``s`` grows, ``θ`` falls (positives only enter ``A``), and on every piece
``dγ/ds = (k − |U|)/(k|M|) ≥ 0`` and ``d(c − γ)/ds = (|M| + |U| − k)/(k|M|) ≥ 0`` (``|U| ≤ k ≤ |U| + |M|``
since ``Σβ = kc``), so a negative only leaves ``U`` for ``M`` or leaves ``L = {β_j = 0}`` for
``M``: every element has at most one event.  Below ``s_gap = k·(b₍ₖ₎ − b₍ₖ₊₁₎)`` (the gap between
the k-th and (k+1)-th largest ``b``) nothing moves but ``A``: ``β`` is ``c`` on the top ``k``.

The search is li2014's randomized median scheme over the events: pick an unresolved element at
random, find the ``s`` of its event (for a positive ``a_p``: ``s = Σ[a − a_p]₊``; for a negative
leaving ``L``: the ``c`` at which it does with ``γ = −b_p``; for one leaving ``U``: the ``c`` with
``γ = c − b_p``), evaluate the sign of ``h'`` there, and resolve every element whose event lies on
the far side (kept as partial sums and counts, as li2014 keeps ``ΣA``, ``|A|``).  Each of those
one-dimensional solves is :func:`~sparkrank.kernels.hinge_root.sup_nonnegative` over the
unresolved elements only, so an iteration costs ``O(#unresolved)`` expected and, the pivot
being a uniformly random event, the unresolved set shrinks geometrically: ``O(n)`` expected in
all, no sort.  With no event left, ``(c, γ)`` solve the two linear equations
``Σβ = kc`` and ``Σα = kc`` of the final sets:

    ``(k − |U|)·c − |M|·γ = ΣM``,   ``(k + |A||U|/k)·c + |A|(1 − |U|/k)·γ = ΣA + |A|·ΣU/k``

(``ΣA = Σ_A a``, ``ΣU = Σ_U b``, ``ΣM = Σ_M b``); with ``M`` empty (the root below ``s_gap``, or
``k = n⁻``) ``|U| = k`` and ``c = (ΣA + |A|·ΣU/k)/(k + |A|)``.  Then ``θ = γ − (ΣU + |U|(γ − c))/k``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .hinge_root import LEFT_PLUS, RIGHT_MINUS, sup_nonnegative, xorshift
from .simplex_projection import apply_root, check_groups_input, root_partition

__all__ = ["project_top_k_groups", "project_top_k_unit"]

_LO = np.int8(0)  # a negative that starts in L (β = 0) and may enter M
_HI = np.int8(1)  # a negative that starts in U (β = c) and may enter M


@njit(cache=True)
def _theta(s, UA, na, SA, nA, p, kind, seed):
    """``θ`` with ``ΣA − |A|θ + Σ_{unresolved}[a − θ]₊ = s`` (the positives' simplex of size s)."""
    for t in range(na):
        p[t] = UA[t]
        kind[t] = LEFT_PLUS
    return sup_nonnegative(p, kind, na, SA - s, -float(nA), -np.inf, seed)


@njit(cache=True)
def _gamma(c, k, UB, TB, nb, SU, nU, SM, nM, p, kind, seed):
    """``γ`` with ``Σ clip(b + γ, 0, c) = kc`` over resolved and unresolved negatives (unique above s_gap)."""
    n_hi = 0
    for t in range(nb):
        if TB[t] == _HI:  # min(b + γ, c) = c − [(c − b) − γ]₊
            p[t] = c - UB[t]
            kind[t] = LEFT_PLUS
            n_hi += 1
        else:  # [b + γ]₊ = [γ − (−b)]₊
            p[t] = -UB[t]
            kind[t] = RIGHT_MINUS
    # sup{γ : kc − F(γ) ≥ 0}, F non-decreasing
    return sup_nonnegative(p, kind, nb, k * c - (nU + n_hi) * c - SM, -float(nM), -np.inf, seed)


@njit(cache=True)
def _cap_leaving_l(bp, k, UB, TB, nb, SU, nU, SM, nM, p, kind, seed):
    """The cap ``c`` at which a negative ``b_p`` leaves L: ``γ = −b_p`` and the largest ``c ≥ 0`` with
    ``Σ clip(b + γ, 0, c) ≥ kc`` (concave in c, ≥ 0 at 0)."""
    gamma = -bp
    K = SM + nM * gamma
    S = float(nU - k)
    n = 0
    for t in range(nb):
        if TB[t] == _HI:  # min(b + γ, c) = c − [c − (b + γ)]₊
            p[n] = UB[t] + gamma
            kind[n] = RIGHT_MINUS
            S += 1.0
            n += 1
        else:
            K += max(UB[t] + gamma, 0.0)
    return sup_nonnegative(p, kind, n, K, S, 0.0, seed)


@njit(cache=True)
def _cap_leaving_u(bp, k, UB, TB, nb, SU, nU, SM, nM, p, kind, seed):
    """The cap ``c`` at which a negative ``b_p`` leaves U: ``γ = c − b_p`` and the largest ``c ≥ 0``
    with ``Σ clip(b + γ, 0, c) ≤ kc`` (convex in c, ≤ 0 at 0)."""
    K = SM - nM * bp  # the M negatives: b + c − b_p
    S = float(nU + nM - k)
    n = 0
    for t in range(nb):
        if TB[t] == _HI:  # min(b − b_p + c, c) = c + min(b − b_p, 0)
            S += 1.0
            K += min(UB[t] - bp, 0.0)
        else:  # [c − (b_p − b)]₊
            p[n] = bp - UB[t]
            kind[n] = RIGHT_MINUS  # of −g
            n += 1
    return sup_nonnegative(p, kind, n, -K, -S, 0.0, seed)


@njit(cache=True)
def _delta(c, gamma, k, UB, TB, nb, SU, nU, nM):
    """``δ = f_β'(s) = γ − R/k`` with ``R = Σ_U (b + γ − c)``; ``c − ΣU/k`` when M is empty (γ free)."""
    if nb == 0 and nM == 0:
        return c - SU / k
    R = SU + nU * (gamma - c)
    for t in range(nb):
        if TB[t] == _HI:
            R += max(UB[t] + gamma - c, 0.0)
    return gamma - R / k


@njit(cache=True)
def _top_k_mean(b, k):
    """``T_k(b)`` and the k-th largest value ``v``, by selection (``np.partition``, no sort)."""
    n = b.shape[0]
    v = np.partition(b, n - k)[n - k]  # (a partitioned copy)
    above = 0.0
    n_gt = 0
    for j in range(n):
        if b[j] > v:
            above += b[j]
            n_gt += 1
    return (above + (k - n_gt) * v) / k, v


@njit(cache=True)
def project_top_k_unit(a, b, k, seed):
    """Project one unit's ``(a, b)`` onto ``Ω_k`` (module docstring); returns ``(α, β, seed)``."""
    width = a.shape[0] + b.shape[0]
    alpha = np.zeros(a.shape[0])
    beta = np.zeros(b.shape[0])
    seed = _project_unit(a, b, k, seed, alpha, beta, np.empty(width), np.empty(width, dtype=np.int8),
                         np.empty(width), np.empty(width), np.empty(width, dtype=np.int8))
    return alpha, beta, seed


@njit(cache=True)
def _project_unit(a, b, k, seed, alpha, beta, p, kind, UA, UB, TB):
    """:func:`project_top_k_unit` into ``alpha``/``beta`` with work arrays at least ``|a| + |b|`` long."""
    na_all, nb_all = a.shape[0], b.shape[0]
    alpha[:] = 0.0
    beta[:] = 0.0
    if na_all == 0 or nb_all == 0:
        return seed
    Tk, v = _top_k_mean(b, k)
    if a.max() + Tk <= 0.0:  # (a, b) in the polar cone: the projection is 0
        return seed
    UA[:na_all] = a
    na = na_all
    nb = 0
    SA = SU = SM = 0.0
    nA = nU = nM = 0
    min_hi = np.inf
    s_lo, s_hi = 0.0, np.inf
    n_ge = 0
    for j in range(nb_all):
        if b[j] >= v:
            n_ge += 1
    if k == nb_all:  # every negative at the cap: β = (s/k)·1
        for j in range(nb_all):
            SU += b[j]
            min_hi = min(min_hi, b[j])
        nU = nb_all
    elif n_ge == k:  # the top k are separated from the rest by a gap: a flat phase first
        top_sum = 0.0
        below = -np.inf
        for j in range(nb_all):
            if b[j] >= v:
                top_sum += b[j]
            else:
                below = max(below, b[j])
        s_gap = k * (v - below)
        theta, seed = _theta(s_gap, UA, na, SA, nA, p, kind, seed)
        if (v - below) - top_sum / k - theta >= 0.0:
            # the root is in the flat phase: β = c on the top k, 0 elsewhere; positives at or
            # below θ(s_gap) stay inactive
            SU, nU, min_hi = top_sum, k, v
            keep = 0
            for i in range(na):
                if UA[i] > theta:
                    UA[keep] = UA[i]
                    keep += 1
            na = keep
            s_hi = s_gap
        else:
            s_lo = s_gap
            keep = 0
            for i in range(na):
                if UA[i] >= theta:
                    SA += UA[i]
                    nA += 1
                else:
                    UA[keep] = UA[i]
                    keep += 1
            na = keep
            for j in range(nb_all):
                if b[j] == v or b[j] == below:  # the k-th and (k+1)-th leave U and L at s_gap
                    SM += b[j]
                    nM += 1
                else:
                    UB[nb] = b[j]
                    TB[nb] = _HI if b[j] > v else _LO
                    nb += 1
    else:  # ties straddle the k-th place: the tied negatives share the rest of the mass from s = 0
        for j in range(nb_all):
            if b[j] == v:
                SM += b[j]
                nM += 1
            else:
                UB[nb] = b[j]
                TB[nb] = _HI if b[j] > v else _LO
                nb += 1
    return _search(k, UA, na, SA, nA, UB, TB, nb, SU, nU, SM, nM, min_hi, s_lo, s_hi, p, kind, seed, a, b,
                   alpha, beta)


@njit(cache=True)
def _search(k, UA, na, SA, nA, UB, TB, nb, SU, nU, SM, nM, min_hi, s_lo, s_hi, p, kind, seed, a, b, alpha, beta):
    """Resolve every event by randomized pivots (module docstring), then solve the final sets."""
    while na + nb > 0:
        seed = xorshift(seed)
        r = np.int64(seed % np.uint64(na + nb))
        pa = r if r < na else -1  # the pivot: a positive, or negative number pb
        pb = r - na if r >= na else -1
        gamma = 0.0
        if pa >= 0:
            ap = UA[pa]
            s = SA - nA * ap
            for i in range(na):
                s += max(UA[i] - ap, 0.0)
        elif TB[pb] == _LO:
            c, seed = _cap_leaving_l(UB[pb], k, UB, TB, nb, SU, nU, SM, nM, p, kind, seed)
            gamma = -UB[pb]
            s = k * c
        else:
            c, seed = _cap_leaving_u(UB[pb], k, UB, TB, nb, SU, nU, SM, nM, p, kind, seed)
            gamma = c - UB[pb]
            s = k * c
        if s <= s_lo or s >= s_hi:
            # rounding put the event outside the interval: only the pivot is resolved
            # (NaN thresholds: every comparison below is false but the pivot's own)
            left = s >= s_hi
            theta = c = gamma = np.nan
        else:
            c = s / k
            theta, seed = _theta(s, UA, na, SA, nA, p, kind, seed)
            if pa >= 0 and (nb > 0 or nM > 0):
                gamma, seed = _gamma(c, k, UB, TB, nb, SU, nU, SM, nM, p, kind, seed)
            left = _delta(c, gamma, k, UB, TB, nb, SU, nU, nM) - theta >= 0.0  # h'(s) ≥ 0: s* ≤ s
            if left:
                s_hi = s
            else:
                s_lo = s
        # with s* ≤ s every event at or after s has not happened (initial sets); with s* > s every
        # event at or before s has (final sets); the pivot is resolved either way
        keep = 0
        for i in range(na):
            if left and (UA[i] <= theta or i == pa):
                continue  # inactive
            if not left and (UA[i] >= theta or i == pa):
                SA += UA[i]
                nA += 1
                continue
            UA[keep] = UA[i]
            keep += 1
        na = keep
        keep = 0
        for j in range(nb):
            x = UB[j] + gamma
            if TB[j] == _LO:
                if left and (x <= 0.0 or j == pb):
                    continue  # stays in L
                if not left and (x >= 0.0 or j == pb):
                    SM += UB[j]
                    nM += 1
                    continue
            else:
                if left and (x >= c or j == pb):
                    SU += UB[j]
                    nU += 1
                    min_hi = min(min_hi, UB[j])
                    continue
                if not left and (x <= c or j == pb):
                    SM += UB[j]
                    nM += 1
                    continue
            UB[keep] = UB[j]
            TB[keep] = TB[j]
            keep += 1
        nb = keep
    solve_final_sets(k, SA, nA, SU, nU, SM, nM, min_hi, a, b, alpha, beta)
    return seed


@njit(cache=True)
def solve_final_sets(k, SA, nA, SU, nU, SM, nM, min_hi, a, b, alpha, beta):
    """``(c, γ, θ)`` from the final sets' two linear equations (module docstring); ``α``, ``β``."""
    if nM == 0:  # |U| = k: β = c on U (γ chosen so that clip(b + γ, 0, c) = c there)
        c = (SA + nA * SU / k) / (k + nA)
        gamma = c - min_hi
        theta = c - SU / k
    else:
        c = (k * nM * SA + nA * nM * SU + nA * (k - nU) * SM) / (k * k * nM + nA * nU * nM + nA * (k - nU) ** 2)
        gamma = ((k - nU) * c - SM) / nM
        theta = gamma - (SU + nU * (gamma - c)) / k
    for i in range(a.shape[0]):
        alpha[i] = max(a[i] - theta, 0.0)
    for j in range(b.shape[0]):
        beta[j] = min(max(b[j] + gamma, 0.0), c)


@njit(cache=True)
def _project_top_k_groups(z, is_pos, offsets, k, active, out):
    G = offsets.shape[0] - 1
    width = 0
    for g in range(G):
        width = max(width, offsets[g + 1] - offsets[g])
    bp = np.empty(width, dtype=np.float64)
    kinds = np.empty(width, dtype=np.int8)
    a = np.empty(width)
    b = np.empty(width)
    alpha = np.empty(width)
    beta = np.empty(width)
    UA = np.empty(width)
    UB = np.empty(width)
    TB = np.empty(width, dtype=np.int8)
    seed = np.uint64(0x9E3779B97F4A7C15)
    for g in range(G):
        lo_row, hi_row = offsets[g], offsets[g + 1]
        if not active[g]:
            for r in range(lo_row, hi_row):
                out[r] = 0.0
            continue
        if k[g] == 1:  # Ω_1 = li2014's Ω: its own routine, bit for bit
            gamma, has = root_partition(z, is_pos, lo_row, hi_row, bp, kinds)
            apply_root(z, is_pos, lo_row, hi_row, gamma, has, out)
            continue
        ia = ib = 0
        for r in range(lo_row, hi_row):
            if is_pos[r]:
                a[ia] = z[r]
                ia += 1
            else:
                b[ib] = z[r]
                ib += 1
        # a per-unit seed: the projection of a unit does not depend on the other units
        _project_unit(a[:ia], b[:ib], k[g], seed ^ np.uint64(hi_row - lo_row + 1), alpha[:ia], beta[:ib],
                      bp, kinds, UA, UB, TB)
        ia = ib = 0
        for r in range(lo_row, hi_row):
            if is_pos[r]:
                out[r] = alpha[ia]
                ia += 1
            else:
                out[r] = beta[ib]
                ib += 1


def project_top_k_groups(z: np.ndarray, is_pos: np.ndarray, offsets: np.ndarray, k: np.ndarray,
                         active: np.ndarray | None = None) -> np.ndarray:
    """Project each group of ``z`` onto its ``Ω_k = {α ≥ 0, 0 ≤ β_j ≤ Σα/k, Σβ = Σα}``.

    Parameters
    ----------
    z : float64 array (m,)
        The point: ``α₀`` on rows where ``is_pos``, ``β₀`` on the others.
    is_pos : bool array (m,)
    offsets : int64 array (G+1,)
        Group ``g`` is ``offsets[g]:offsets[g+1]``; each group has its own constraint.
    k : int array (G,)
        Each group's ``k`` (``1 ≤ k_g ≤`` its negatives when active); ``k_g = 1`` is li2014's ``Ω``.
    active : bool array (G,), optional
        Groups to project; the rows of the other groups are set to 0.

    Returns
    -------
    float64 array (m,)
        The projection (``α`` on positives, ``β`` on negatives), in expected linear time.
    """
    z, is_pos, offsets, active = check_groups_input(z, is_pos, offsets, active)
    k = np.ascontiguousarray(k, dtype=np.int64)
    if k.shape != active.shape:
        raise ValueError(f"k must have one entry per group ({active.size}), got shape {k.shape}")
    # per group by prefix sums: groups may be empty, at the end too (TopPush's weighted rows)
    csum = np.concatenate([[0], np.cumsum(~is_pos, dtype=np.int64)])
    n_neg = csum[offsets[1:]] - csum[offsets[:-1]]
    bad = active & ((k < 1) | (k > np.maximum(n_neg, 1)))
    if np.any(bad):
        g = int(np.flatnonzero(bad)[0])
        raise ValueError(f"group {g}: k = {int(k[g])} must be between 1 and its {int(n_neg[g])} negatives")
    out = np.empty_like(z)
    _project_top_k_groups(z, is_pos, offsets, k, active, out)
    return out
