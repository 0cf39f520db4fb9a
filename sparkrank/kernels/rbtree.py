"""Order-statistic red-black tree keyed by real-valued labels, pointer-free, in numba.

airola2011 §4.2 (Definition 1, Algorithm 2 and the ``nodesize`` variant for duplicate
keys): a red-black tree whose nodes hold *distinct* keys with a multiplicity ``cnt``;
inserting an existing key increments that node's ``cnt``.  As in lee-lin2014 §2.3 every
node also carries the sum of a second per-row value (``x_jᵀv``) so one descent answers
both "how many" and "what sum" over the keys strictly above / below a query key.

The tree is a tuple of numpy arrays (a "struct of arrays", no jitclass, no pointers):

========  =========  ==========================================================
index     dtype      meaning (per node)
========  =========  ==========================================================
0 key     float64    the key (label value)
1 left    int64      left child, 0 = NIL
2 right   int64      right child, 0 = NIL
3 parent  int64      parent, 0 = NIL (the root's parent)
4 red     uint8      1 red, 0 black
5 cnt     int64      multiplicity of ``key``
6 size    int64      total multiplicity in the subtree (size[l] + size[r] + cnt)
7 vsum    float64    sum of the values inserted with ``key``
8 ssum    float64    total ``vsum`` in the subtree (ssum[l] + ssum[r] + vsum)
9 meta    int64 (2)  meta[0] = root, meta[1] = number of nodes in use
========  =========  ==========================================================

Node 0 is the NIL sentinel: black, size 0, sums 0, and never written to, so children
and parents can be read without any test.  Nodes ``1..meta[1]`` are in use; a reset only
sets ``meta`` (O(1)) and fresh nodes are fully initialised when they are allocated.

The four operations follow the interface shared by every tree in :mod:`.trees`
(``key_rank`` is ignored here: this tree keys by the real label).  Insertion is CLRS
RB-INSERT with RB-INSERT-FIXUP; the descent adds the new element to the ``size`` /
``ssum`` of every node on the path, and each rotation recomputes the aggregates of its
two nodes.  Height is at most ``2·log2(r + 1)`` for ``r`` distinct keys, so every
operation is O(log r).
"""

from __future__ import annotations

import numpy as np
from numba import njit

KEY, LEFT, RIGHT, PARENT, RED, CNT, SIZE, VSUM, SSUM, META = range(10)


@njit(cache=True)
def rbtree_new(capacity, max_levels):
    """Empty tree for up to ``capacity`` distinct keys (``max_levels`` is unused)."""
    n = max(capacity, 1) + 1  # node 0 is NIL
    meta = np.zeros(2, dtype=np.int64)
    return (
        np.zeros(n, dtype=np.float64),  # key
        np.zeros(n, dtype=np.int64),  # left
        np.zeros(n, dtype=np.int64),  # right
        np.zeros(n, dtype=np.int64),  # parent
        np.zeros(n, dtype=np.uint8),  # red
        np.zeros(n, dtype=np.int64),  # cnt
        np.zeros(n, dtype=np.int64),  # size
        np.zeros(n, dtype=np.float64),  # vsum
        np.zeros(n, dtype=np.float64),  # ssum
        meta,
    )


def rbtree_new_weights(capacity: int, max_levels: int):
    """:func:`rbtree_new` whose multiplicities ``cnt`` and ``size`` are float64 sums of the
    inserted rows' weights (weighted rows: :func:`rbtree_insert` with ``weight``)."""
    tree = list(rbtree_new(capacity, max_levels))
    tree[CNT] = tree[CNT].astype(np.float64)
    tree[SIZE] = tree[SIZE].astype(np.float64)
    return tuple(tree)


@njit(cache=True)
def rbtree_reset(state, n_levels):
    """Make the tree empty (O(1)); ``n_levels`` is unused."""
    meta = state[9]
    meta[0] = 0
    meta[1] = 0


@njit(cache=True)
def _update(state, x):
    # recompute x's subtree aggregates from its children
    left, right, cnt, size, vsum, ssum = state[1], state[2], state[5], state[6], state[7], state[8]
    l = left[x]
    r = right[x]
    size[x] = size[l] + size[r] + cnt[x]
    ssum[x] = ssum[l] + ssum[r] + vsum[x]


@njit(cache=True)
def _rotate_left(state, x):
    left, right, parent, meta = state[1], state[2], state[3], state[9]
    y = right[x]
    b = left[y]
    right[x] = b
    if b != 0:
        parent[b] = x
    p = parent[x]
    parent[y] = p
    if p == 0:
        meta[0] = y
    elif left[p] == x:
        left[p] = y
    else:
        right[p] = y
    left[y] = x
    parent[x] = y
    _update(state, x)  # x is now y's child: recompute it first
    _update(state, y)


@njit(cache=True)
def _rotate_right(state, x):
    left, right, parent, meta = state[1], state[2], state[3], state[9]
    y = left[x]
    b = right[y]
    left[x] = b
    if b != 0:
        parent[b] = x
    p = parent[x]
    parent[y] = p
    if p == 0:
        meta[0] = y
    elif right[p] == x:
        right[p] = y
    else:
        left[p] = y
    right[y] = x
    parent[x] = y
    _update(state, x)
    _update(state, y)


@njit(cache=True)
def _insert_fixup(state, z):
    # CLRS RB-INSERT-FIXUP; NIL (0) is black, so uncle / grandparent reads need no tests
    left, right, parent, red, meta = state[1], state[2], state[3], state[4], state[9]
    while red[parent[z]] == 1:
        p = parent[z]
        g = parent[p]  # p is red, so it is not the root and g != NIL
        if p == left[g]:
            u = right[g]
            if red[u] == 1:
                red[p] = 0
                red[u] = 0
                red[g] = 1
                z = g
            else:
                if z == right[p]:
                    z = p
                    _rotate_left(state, z)
                    p = parent[z]
                    g = parent[p]
                red[p] = 0
                red[g] = 1
                _rotate_right(state, g)
        else:
            u = left[g]
            if red[u] == 1:
                red[p] = 0
                red[u] = 0
                red[g] = 1
                z = g
            else:
                if z == left[p]:
                    z = p
                    _rotate_right(state, z)
                    p = parent[z]
                    g = parent[p]
                red[p] = 0
                red[g] = 1
                _rotate_left(state, g)
    red[meta[0]] = 0


@njit(cache=True)
def rbtree_insert(state, key_rank, key, value, weight=1):
    """Insert ``key`` with weight ``weight`` (1: one more occurrence; a float into a tree of
    :func:`rbtree_new_weights`) and add ``value`` to its sums (``key_rank`` unused).

    Raises ``ValueError`` when a new distinct key would exceed the capacity; the tree is
    then inconsistent and must be reset.
    """
    keys, left, right, parent, red, cnt, size, vsum, ssum, meta = state
    # descend, adding the new element to every subtree on the path
    y = 0
    x = meta[0]
    go_left = False
    while x != 0:
        size[x] += weight
        ssum[x] += value
        kx = keys[x]
        if key < kx:
            y = x
            x = left[x]
            go_left = True
        elif key > kx:
            y = x
            x = right[x]
            go_left = False
        else:  # existing key: one more occurrence, no new node
            cnt[x] += weight
            vsum[x] += value
            return
    z = meta[1] + 1
    if z >= keys.shape[0]:
        raise ValueError("rbtree: more distinct keys than the capacity given to rbtree_new")
    meta[1] = z
    keys[z] = key
    left[z] = 0
    right[z] = 0
    parent[z] = y
    red[z] = 1
    cnt[z] = weight
    size[z] = weight
    vsum[z] = value
    ssum[z] = value
    if y == 0:
        meta[0] = z
    elif go_left:
        left[y] = z
    else:
        right[y] = z
    _insert_fixup(state, z)


@njit(cache=True)
def rbtree_above(state, key_rank, key):
    """``(count, value sum)`` over inserted elements with key strictly greater than ``key``.

    airola2011 Algorithm 2 mirrored (Count-Larger), with multiplicities.
    """
    keys, left, right, cnt, size, vsum, ssum, meta = (
        state[0], state[1], state[2], state[5], state[6], state[7], state[8], state[9])
    n = cnt[0]  # NIL's: 0, of the multiplicities' type (int64, or float64 weight sums)
    s = 0.0
    x = meta[0]
    while x != 0:
        kx = keys[x]
        if key < kx:  # x and its right subtree are larger
            r = right[x]
            n += size[r] + cnt[x]
            s += ssum[r] + vsum[x]
            x = left[x]
        elif key > kx:
            x = right[x]
        else:  # key found: exactly its right subtree is larger
            r = right[x]
            n += size[r]
            s += ssum[r]
            break
    return n, s


@njit(cache=True)
def rbtree_below(state, key_rank, key):
    """``(count, value sum)`` over inserted elements with key strictly smaller than ``key``.

    airola2011 Algorithm 2 (Count-Smaller), with multiplicities.
    """
    keys, left, right, cnt, size, vsum, ssum, meta = (
        state[0], state[1], state[2], state[5], state[6], state[7], state[8], state[9])
    n = cnt[0]  # NIL's: 0, of the multiplicities' type (int64, or float64 weight sums)
    s = 0.0
    x = meta[0]
    while x != 0:
        kx = keys[x]
        if key > kx:  # x and its left subtree are smaller
            l = left[x]
            n += size[l] + cnt[x]
            s += ssum[l] + vsum[x]
            x = right[x]
        elif key < kx:
            x = left[x]
        else:
            l = left[x]
            n += size[l]
            s += ssum[l]
            break
    return n, s
