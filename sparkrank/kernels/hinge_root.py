"""The end of a sign interval of a piecewise-linear function, in expected linear time, sort-free.

``G(x) = K + S·x + Σ_t σ_t·r_t(x)`` with ramps ``r_t(x) = [x − p_t]₊`` (a *right* ramp) or
``[p_t − x]₊`` (a *left* ramp) and signs ``σ_t = ±1``.  :func:`sup_nonnegative` returns
``x* = sup{x ≥ lower : G(x) ≥ 0}`` for a ``G`` whose set ``{x ≥ lower : G(x) ≥ 0}`` is an
interval starting at ``lower`` (true for every non-increasing ``G``, and for a concave ``G``
with ``G(lower) ≥ 0``).  It is li2014 Algorithm 2's randomized median scheme written once
for any such sum of ramps: pick a random breakpoint ``v``, evaluate ``G(v)`` over the breakpoints
still unresolved (the resolved ones are kept as the running ``K`` and ``S``), and resolve the
half that lies on the known side of ``x*``: when ``G(v) ≥ 0`` then ``x* ≥ v`` and every ramp
with ``p_t ≤ v`` is linear on ``[v, x*]`` (a right ramp is ``x − p_t``, a left ramp 0);
otherwise ``x* < v`` and every ramp with ``p_t ≥ v`` is linear on ``[x*, v]`` (a right ramp 0,
a left ramp ``p_t − x``).  When no breakpoint is left, ``G = K + S·x`` on the remaining
interval and ``x* = −K/S`` (or the interval's right end when ``S ≥ 0``).

The capped-simplex projection (:mod:`sparkrank.kernels.capped_projection`) calls it for each of
its one-dimensional sub-problems.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Ramp kinds: the term is ``σ·[x − p]₊`` (RIGHT) or ``σ·[p − x]₊`` (LEFT) with ``σ = ±1``.
RIGHT_PLUS = np.int8(0)
RIGHT_MINUS = np.int8(1)
LEFT_PLUS = np.int8(2)
LEFT_MINUS = np.int8(3)


@njit(cache=True)
def xorshift(s):
    """A tiny deterministic PRNG for pivots: the result does not depend on the pivots (only the
    order of the final partial sums does), and a fixed seed keeps every engine bit-identical."""
    s ^= (s << np.uint64(13)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    s ^= s >> np.uint64(7)
    s ^= (s << np.uint64(17)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    return s


@njit(cache=True)
def _ramp(kind, p, x):
    if kind == 0:
        return max(x - p, 0.0)
    if kind == 1:
        return -max(x - p, 0.0)
    if kind == 2:
        return max(p - x, 0.0)
    return -max(p - x, 0.0)


@njit(cache=True)
def _resolve_below(p, kind, end, v, K, S):
    """Fold the ramps with ``p ≤ v`` into ``K + S·x`` (valid for ``x ≥ v``: a right ramp is ``x − p``,
    a left ramp 0) and keep the others in ``p[:keep]``; returns ``(keep, K, S)``."""
    keep = 0
    for t in range(end):
        if p[t] <= v:
            if kind[t] == 0:
                K -= p[t]
                S += 1.0
            elif kind[t] == 1:
                K += p[t]
                S -= 1.0
        else:
            p[keep] = p[t]
            kind[keep] = kind[t]
            keep += 1
    return keep, K, S


@njit(cache=True)
def sup_nonnegative(p, kind, n, K, S, lower, seed):
    """``sup{x ≥ lower : G(x) ≥ 0}`` for ``G(x) = K + S·x + Σ_{t<n} ramp(kind[t], p[t], x)``.

    ``p``/``kind`` (work arrays, reordered in place) hold the ``n`` breakpoints and their ramp
    kinds (:data:`RIGHT_PLUS` …).  ``lower`` may be ``-inf``.  Returns ``(x*, seed)``: ``x*`` may
    be ``+inf`` (``G ≥ 0`` on all of ``[lower, ∞)``); ``seed`` is the PRNG state to pass on.
    """
    lo = lower
    hi = np.inf
    end = n
    if np.isfinite(lower):
        # breakpoints at or below `lower` are on the known side already (pivots must exceed lower)
        end, K, S = _resolve_below(p, kind, end, lower, K, S)
    while end > 0:
        seed = xorshift(seed)
        v = p[np.int64(seed % np.uint64(end))]
        g = K + S * v
        for t in range(end):
            g += _ramp(kind[t], p[t], v)
        if g >= 0.0:  # x* ≥ v: ramps with p ≤ v are linear from v on
            lo = v
            end, K, S = _resolve_below(p, kind, end, v, K, S)
            continue
        hi = v  # x* < v: ramps with p ≥ v are linear up to v (a right ramp 0, a left ramp p − x)
        keep = 0
        for t in range(end):
            if p[t] >= v:
                if kind[t] == 2:
                    K += p[t]
                    S -= 1.0
                elif kind[t] == 3:
                    K -= p[t]
                    S += 1.0
            else:
                p[keep] = p[t]
                kind[keep] = kind[t]
                keep += 1
        end = keep
    if S < 0.0:
        x = -K / S
        return min(max(x, lo), hi), seed
    return hi, seed
