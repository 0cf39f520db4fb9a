"""Pointer-free label trees for the counting sweeps (lee-lin2014 §2.3-2.5).

A sweep (``counting.py``) inserts rows into a tree keyed by their label and asks "how many
inserted rows (and what sum of their values) have a larger / a smaller label".  Keys are
given as ``key_rank``, the dense rank of the label inside its group (``0 .. n_levels-1``),
and, for the red-black tree (``rbtree.py``), as the real label ``key``.

Selection tree (the default counting structure)
-----------------------------------------------
lee-lin2014 §2.5's selection tree is a complete binary tree over the ``k`` label levels,
stored in an array without pointers: the leaves are the levels in label order and an
internal node holds the count and the value sum of its subtree, so an insert updates the
``log2 k`` nodes on a leaf-to-root path and a query adds up the siblings on one side of
that path.  Here it is generalised to a complete **B-ary** tree (``B = SELECTION_FANOUT =
16``), still array-indexed level by level and without pointers:

* level ``L`` (``L = 0`` just above the leaves) has one *item* per subtree of ``B**L``
  consecutive label levels: item ``q = key_rank >> (4 L)``; ``B`` consecutive items form
  one node, and the top level is a single node;
* instead of the subtree total of each child, a node keeps, per child, the total over its
  siblings on one side: ``count[L][q]`` = number (and ``total[L][q]`` = value sum) of the
  inserted rows that lie in the same node as ``q`` at level ``L`` but in a child to the
  *right* of ``q`` (an "above" tree) or to the *left* of ``q`` (a "below" tree).

A query then reads one entry per level, ``above(r) = Σ_L count[L][r >> 4L]``, and an insert
adds ``(1, value)`` to the entries on the other side of ``r``'s child in each of the
``⌈log16 k⌉`` nodes on its path (one 64-byte line of counts and two of sums per level,
updated with one masked vector add).  With ``B = 2`` the stored entries are exactly the
sibling subtree totals the binary selection tree's query reads, so this is the same
structure with a wider fan-out: ``log16 k`` instead of ``log2 k`` cache lines per operation
(k = 10⁶: 5 levels instead of 20, of which only the bottom one or two miss the cache, and
the sweep prefetches those ahead).  Since each sweep direction asks only one kind of
question, the ascending sweep builds an "above" tree and the descending sweep a "below"
tree.  Counts are int32 (int64 when a group could overflow it) and sums float64 in separate
arrays, so count-only sweeps (``with_sums=False``) never touch the sums.

Direct count
------------
One counter per label level, O(1) insert and O(k) query (lee-lin2014 §2.3); best for 2-3
levels.  Operations: ``direct_new / reset / insert / above / below``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

SELECTION_FANOUT_BITS = 4
SELECTION_FANOUT = 1 << SELECTION_FANOUT_BITS  # B: children per node (16 int32 = one cache line)
_MAX_HEIGHT = 16  # 16**16 = 2**64 levels
_ALIGN = 64  # bytes: every node starts on a cache line
#: Groups with more label levels than this prefetch the bottom ``PREFETCH_LEVELS`` tree
#: levels during a sweep (a smaller tree sits in L1/L2, and prefetching only costs
#: instructions).  Must be at least ``SELECTION_FANOUT ** PREFETCH_LEVELS``.
PREFETCH_MIN_LEVELS = 1 << 15
PREFETCH_LEVELS = 2
#: How many insertions / queries ahead a sweep prefetches.
PREFETCH_DISTANCE = 32


# --- LLVM intrinsics: software prefetch and a masked vector add over one node ---------------


def _make_prefetch(locality: int, where: str):
    """An intrinsic ``f(array, index)`` that hints the CPU to load the cache line of
    ``array[index]`` (no bounds check, no effect on results) with LLVM's ``locality`` (3: every
    cache level, ``prefetcht0``; 2: not the first level, ``prefetcht1``)."""

    @intrinsic
    def prefetch_line(typingctx, array, index):
        sig = types.void(array, index)

        def codegen(context, builder, signature, args):
            array_type, index_type = signature.args
            ary = context.make_array(array_type)(context, builder, args[0])
            idx = context.cast(builder, args[1], index_type, types.int64)
            byte_ptr = builder.bitcast(builder.gep(ary.data, [idx]), ir.IntType(8).as_pointer())
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr.type, i32, i32, i32]), "llvm.prefetch.p0")
            # read access, the locality, data cache
            builder.call(fn, [byte_ptr, ir.Constant(i32, 0), ir.Constant(i32, locality), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return sig, codegen

    prefetch_line.__doc__ = f"Hint the CPU to load the cache line of ``array[index]`` into {where}."
    return prefetch_line


#: A tree node about to be visited: into every cache level.
prefetch = _make_prefetch(3, "every cache level (a tree node about to be visited)")
#: Rows a loop reads after the current ones (``engines/group_passes.py``): not into the first-level
#: cache, where they would evict the rows in use (1M x 136 float32, a Hessian group pass in one
#: thread: 0.084 s with ``prefetcht0``, 0.079 s with ``prefetcht1``).
prefetch_l2 = _make_prefetch(2, "the second-level cache and beyond (rows read after the current ones)")


def _make_masked_add(width: int, side: str):
    """``array[base + u] += value`` for ``u in range(width)`` with ``u < pos`` (side "left")
    or ``u > pos`` (side "right"), as one vector load / select / add / store.

    Adding ``0`` to the other lanes would not be exact for every float (``-0.0``) and would
    turn into NaN for an infinite value, so the increment is selected, not multiplied."""
    predicate = "<" if side == "left" else ">"

    @intrinsic
    def masked_add(typingctx, array, base, pos, value):
        sig = types.void(array, base, pos, value)

        def codegen(context, builder, signature, args):
            array_type = signature.args[0]
            dtype = array_type.dtype
            ary = context.make_array(array_type)(context, builder, args[0])
            base_ = context.cast(builder, args[1], signature.args[1], types.int64)
            value_ = context.cast(builder, args[3], signature.args[3], dtype)
            elem = context.get_data_type(dtype)
            lane = ir.IntType(dtype.bitwidth)  # compare in the element's width: no packing
            pos_ = context.cast(builder, args[2], signature.args[2], types.int64)
            if dtype.bitwidth != 64:
                pos_ = builder.trunc(pos_, lane)
            vec = ir.VectorType(elem, width)
            lanes = ir.VectorType(lane, width)
            i32 = ir.IntType(32)
            splat_mask = ir.Constant(ir.VectorType(i32, width), [0] * width)

            def splat(scalar, vector_type):
                undef = ir.Constant(vector_type, ir.Undefined)
                one = builder.insert_element(undef, scalar, ir.Constant(i32, 0))
                return builder.shuffle_vector(one, undef, splat_mask)

            ptr = builder.bitcast(builder.gep(ary.data, [base_]), vec.as_pointer())
            old = builder.load(ptr, align=dtype.bitwidth // 8)
            iota = ir.Constant(lanes, [ir.Constant(lane, u) for u in range(width)])
            mask = builder.icmp_signed(predicate, iota, splat(pos_, lanes))
            zero = ir.Constant(vec, [ir.Constant(elem, 0.0 if isinstance(dtype, types.Float) else 0)] * width)
            step = builder.select(mask, splat(value_, vec), zero)
            new = builder.fadd(old, step) if isinstance(dtype, types.Float) else builder.add(old, step)
            builder.store(new, ptr, align=dtype.bitwidth // 8)
            return context.get_dummy_value()

        return sig, codegen

    return masked_add


_add_left_of = _make_masked_add(SELECTION_FANOUT, "left")
_add_right_of = _make_masked_add(SELECTION_FANOUT, "right")


# --- selection tree: a complete B-ary tree over the label levels, array-indexed -------------


@njit(cache=True)
def selection_layout(n_levels, level_start):
    """Fill ``level_start[0..height]`` (entry offsets of each level) and return the height."""
    e = max(n_levels, 1)
    total = 0
    height = 0
    while True:
        level_start[height] = total
        total += ((e + SELECTION_FANOUT - 1) >> SELECTION_FANOUT_BITS) << SELECTION_FANOUT_BITS
        height += 1
        if e <= SELECTION_FANOUT:
            break
        e = (e + SELECTION_FANOUT - 1) >> SELECTION_FANOUT_BITS
    level_start[height] = total
    return height


def _aligned_zeros(n: int, dtype) -> np.ndarray:
    itemsize = np.dtype(dtype).itemsize
    buf = np.zeros(n + _ALIGN // itemsize, dtype=dtype)
    skip = (-buf.ctypes.data % _ALIGN) // itemsize
    return buf[skip:skip + n]


def selection_new(max_levels: int, max_count: int, with_sums: bool, weight_sums: bool = False):
    """An empty selection tree for groups of up to ``max_levels`` label levels and
    ``max_count`` rows: ``(count, total, level_start)``.

    ``count`` is int32 unless ``max_count`` could overflow it, float64 sums of the inserted
    rows' weights when ``weight_sums`` (weighted rows); ``total`` is a dummy of one
    node when ``with_sums`` is false.  Node bases are aligned to cache lines."""
    level_start = np.zeros(_MAX_HEIGHT + 1, dtype=np.int64)
    height = selection_layout(int(max_levels), level_start)
    size = int(level_start[height])
    count_dtype = np.float64 if weight_sums else np.int32 if max_count < 2**31 else np.int64
    count = _aligned_zeros(size, count_dtype)
    total = _aligned_zeros(size if with_sums else SELECTION_FANOUT, np.float64)
    return count, total, level_start


@njit(cache=True)
def selection_reset(tree, n_levels, with_sums):
    """Empty the tree for a group of ``n_levels`` levels (O(n_levels)); returns its height."""
    count, total, level_start = tree
    height = selection_layout(n_levels, level_start)
    size = level_start[height]
    count[:size] = 0
    if with_sums:
        total[:size] = 0.0
    return height


@njit(cache=True)
def selection_insert_above_tree(tree, height, key_rank, weight, value, with_sums):
    """Insert into an "above" tree: every level's node counts the row for its items left of it."""
    count, total, level_start = tree
    for level in range(height):
        q = key_rank >> (SELECTION_FANOUT_BITS * level)
        base = level_start[level] + (q & ~(SELECTION_FANOUT - 1))
        pos = q & (SELECTION_FANOUT - 1)
        _add_left_of(count, base, pos, weight)
        if with_sums:
            _add_left_of(total, base, pos, value)


@njit(cache=True)
def selection_insert_below_tree(tree, height, key_rank, weight, value, with_sums):
    """Insert into a "below" tree: every level's node counts the row for its items right of it."""
    count, total, level_start = tree
    for level in range(height):
        q = key_rank >> (SELECTION_FANOUT_BITS * level)
        base = level_start[level] + (q & ~(SELECTION_FANOUT - 1))
        pos = q & (SELECTION_FANOUT - 1)
        _add_right_of(count, base, pos, weight)
        if with_sums:
            _add_right_of(total, base, pos, value)


@njit(cache=True)
def selection_query(tree, height, key_rank, with_sums):
    """``(count, value sum)`` of the inserted rows strictly above (in an "above" tree) or
    strictly below (in a "below" tree) ``key_rank``: one entry per level."""
    count, total, level_start = tree
    n = 0
    s = 0.0
    for level in range(height):
        entry = level_start[level] + (key_rank >> (SELECTION_FANOUT_BITS * level))
        n += count[entry]
        if with_sums:
            s += total[entry]
    return np.int64(n), s


@njit(cache=True)
def selection_query_weights(tree, height, key_rank, with_sums):
    """:func:`selection_query` of a tree of weight sums (``count`` float64, :func:`selection_new`
    with ``weight_sums``): ``(weight sum, value sum)``, both float64."""
    count, total, level_start = tree
    n = 0.0
    s = 0.0
    for level in range(height):
        entry = level_start[level] + (key_rank >> (SELECTION_FANOUT_BITS * level))
        n += count[entry]
        if with_sums:
            s += total[entry]
    return n, s


@njit(cache=True)
def selection_should_prefetch(n_levels):
    """Whether a sweep over a group of ``n_levels`` levels should call :func:`selection_prefetch`."""
    return n_levels > PREFETCH_MIN_LEVELS


@njit(cache=True)
def selection_prefetch(tree, key_rank, with_sums):
    """Prefetch what ``key_rank`` reads or writes in the bottom ``PREFETCH_LEVELS`` levels.

    (A fixed number of levels: a loop of unknown length here costs more than it saves.)"""
    count, total, level_start = tree
    for level in range(PREFETCH_LEVELS):
        q = key_rank >> (SELECTION_FANOUT_BITS * level)
        prefetch(count, level_start[level] + q)
        if with_sums:
            prefetch(total, level_start[level] + q)


# --- direct count: one counter per label level, O(k) per query (lee-lin2014 §2.3) ----------
# Best when k is 2-3: no tree walk at all.


@njit(cache=True)
def direct_new(capacity, max_levels):
    meta = np.zeros(1, dtype=np.int64)
    size = max(max_levels, 1)
    return (np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.float64), meta)


@njit(cache=True)
def direct_new_weights(capacity, max_levels):
    """:func:`direct_new` with float64 counters: sums of the inserted rows' weights."""
    meta = np.zeros(1, dtype=np.int64)
    size = max(max_levels, 1)
    return (np.zeros(size, dtype=np.float64), np.zeros(size, dtype=np.float64), meta)


@njit(cache=True)
def direct_reset(state, n_levels):
    count, total, meta = state
    meta[0] = n_levels
    count[:n_levels] = 0
    total[:n_levels] = 0.0


@njit(cache=True)
def direct_insert(state, key_rank, key, value, weight=1):
    count, total, meta = state
    count[key_rank] += weight
    total[key_rank] += value


@njit(cache=True)
def direct_above(state, key_rank, key):
    count, total, meta = state
    n = 0
    s = 0.0
    for level in range(key_rank + 1, meta[0]):
        n += count[level]
        s += total[level]
    return n, s


@njit(cache=True)
def direct_below(state, key_rank, key):
    count, total, meta = state
    n = 0
    s = 0.0
    for level in range(key_rank):
        n += count[level]
        s += total[level]
    return n, s
