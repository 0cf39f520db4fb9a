"""One interface over the label trees, so a counting sweep is written once (``counting.sweep_group``).

A sweep (airola2011 Algorithm 3 / lee-lin2014 Algorithm 2) resets a tree per group, inserts
rows and asks "how many (and what sum) with a larger / a smaller label".  The three trees
answer it with different calls: the selection tree (:mod:`.trees`, the default) keeps one tree
per direction and a height, the direct count and the red-black tree (:mod:`.rbtree`, keyed by the
real label) one structure for both.  The functions here take the tree's *kind* as a compile-time
constant (:data:`SELECTION`, :data:`DIRECT`, :data:`RBTREE`, a literal integer: the caller
compiles with ``numba.literally(kind)``) and compile to that tree's call alone, inlined: no
first-class functions (which numba's cache cannot index) and no branch at run time.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from . import rbtree, trees

#: Tree kinds (compile-time constants of :func:`tree_reset` and the other functions here).
SELECTION, DIRECT, RBTREE = 0, 1, 2


def _compiled_only(name: str):
    return TypeError(f"tree_kinds.{name} runs in numba-compiled code only: its implementations are the "
                     "@overload functions of this module, chosen by the tree kind at compile time")


def _literal(value, kind):
    """The value of a literal numba type of ``kind``, or ``None`` (numba then types the call with
    literal arguments, or reports that nothing matched)."""
    return value.literal_value if isinstance(value, kind) else None


def tree_reset(kind, tree, n_levels, with_sums):
    """Empty ``tree`` for a group of ``n_levels`` label levels; returns the height the other
    calls take (the selection tree's; 0 for the others)."""
    raise _compiled_only("tree_reset")


def tree_insert(kind, tree, height, descending, key_rank, key, weight, value, with_sums):
    """Insert a row of label rank ``key_rank`` (label ``key``), weight ``weight`` (the integer 1
    unweighted; a float into a tree of weight sums, :func:`sparkrank.kernels.counting.new_tree`)
    and value ``value``: into an "above" tree when ``descending`` is false (rows that are the
    upper row of the query's pairs), a "below" tree when it is true.  ``descending``: a
    compile-time constant."""
    raise _compiled_only("tree_insert")


def tree_query(kind, tree, height, descending, key_rank, key, with_sums):
    """``(count, value sum)`` of the inserted rows with a larger label (``descending`` false) or
    a smaller one (true): an int64 count, or a float64 weight sum from a tree of weight sums.
    ``descending``: a compile-time constant."""
    raise _compiled_only("tree_query")


def insert_weight(weights, position):
    """The weight a sweep inserts the row at ``position`` of the score-sorted rows with: the
    integer 1 when ``weights`` is ``None`` (unweighted: the compiled sweep is the unweighted one),
    else ``weights[position]``."""
    raise _compiled_only("insert_weight")


def tree_key(kind, sorted_labels, position):
    """The label a tree of ``kind`` is keyed by at ``position`` of the score-sorted rows: the
    real label for the red-black tree, else ``0.0`` (the others key by label rank, and a sweep
    for them need not gather the labels)."""
    raise _compiled_only("tree_key")


def tree_should_prefetch(kind, n_levels):
    """Whether a sweep over a group of ``n_levels`` levels should call :func:`tree_prefetch`
    (the selection tree of a group of many levels, :func:`trees.selection_should_prefetch`)."""
    raise _compiled_only("tree_should_prefetch")


def tree_prefetch(kind, tree, key_rank, with_sums):
    """Prefetch what an operation on ``key_rank`` will touch (the selection tree; else nothing)."""
    raise _compiled_only("tree_prefetch")


@overload(tree_reset, inline="always", prefer_literal=True)
def _tree_reset(kind, tree, n_levels, with_sums):
    k = _literal(kind, types.IntegerLiteral)
    if k is None:
        return None
    if k == SELECTION:
        return lambda kind, tree, n_levels, with_sums: trees.selection_reset(tree, n_levels, with_sums)
    reset = trees.direct_reset if k == DIRECT else rbtree.rbtree_reset

    def one_structure(kind, tree, n_levels, with_sums):  # for both directions: no height
        reset(tree, n_levels)
        return 0
    return one_structure


@overload(tree_insert, inline="always", prefer_literal=True)
def _tree_insert(kind, tree, height, descending, key_rank, key, weight, value, with_sums):
    k, below = _literal(kind, types.IntegerLiteral), _literal(descending, types.BooleanLiteral)
    if k is None or below is None:
        return None
    if k == SELECTION and below:
        return lambda kind, tree, height, descending, key_rank, key, weight, value, with_sums: \
            trees.selection_insert_below_tree(tree, height, key_rank, weight, value, with_sums)
    if k == SELECTION:
        return lambda kind, tree, height, descending, key_rank, key, weight, value, with_sums: \
            trees.selection_insert_above_tree(tree, height, key_rank, weight, value, with_sums)
    if k == DIRECT:
        return lambda kind, tree, height, descending, key_rank, key, weight, value, with_sums: \
            trees.direct_insert(tree, key_rank, key, value, weight)
    return lambda kind, tree, height, descending, key_rank, key, weight, value, with_sums: \
        rbtree.rbtree_insert(tree, key_rank, key, value, weight)


@overload(tree_query, inline="always", prefer_literal=True)
def _tree_query(kind, tree, height, descending, key_rank, key, with_sums):
    k, below = _literal(kind, types.IntegerLiteral), _literal(descending, types.BooleanLiteral)
    if k is None or below is None:
        return None
    weight_sums = isinstance(tree[rbtree.CNT if k == RBTREE else 0].dtype, types.Float)
    if k == SELECTION:  # each direction has its own tree: the same query
        query = trees.selection_query_weights if weight_sums else trees.selection_query
        return lambda kind, tree, height, descending, key_rank, key, with_sums: \
            query(tree, height, key_rank, with_sums)
    query = {(DIRECT, False): trees.direct_above, (DIRECT, True): trees.direct_below,
             (RBTREE, False): rbtree.rbtree_above, (RBTREE, True): rbtree.rbtree_below}[k, below]

    if weight_sums:  # a tree of weight sums: a float64 sum, not a count
        return lambda kind, tree, height, descending, key_rank, key, with_sums: query(tree, key_rank, key)

    def other(kind, tree, height, descending, key_rank, key, with_sums):
        n, s = query(tree, key_rank, key)
        return np.int64(n), s
    return other


@overload(insert_weight, inline="always")
def _insert_weight(weights, position):
    if isinstance(weights, (types.NoneType, types.Omitted)):
        return lambda weights, position: 1
    return lambda weights, position: weights[position]


@overload(tree_key, inline="always", prefer_literal=True)
def _tree_key(kind, sorted_labels, position):
    k = _literal(kind, types.IntegerLiteral)
    if k == RBTREE:
        return lambda kind, sorted_labels, position: sorted_labels[position]
    return None if k is None else lambda kind, sorted_labels, position: 0.0


@overload(tree_should_prefetch, inline="always", prefer_literal=True)
def _tree_should_prefetch(kind, n_levels):
    k = _literal(kind, types.IntegerLiteral)
    if k == SELECTION:
        return lambda kind, n_levels: trees.selection_should_prefetch(n_levels)
    return None if k is None else lambda kind, n_levels: False


@overload(tree_prefetch, inline="always", prefer_literal=True)
def _tree_prefetch(kind, tree, key_rank, with_sums):
    k = _literal(kind, types.IntegerLiteral)
    if k == SELECTION:
        return lambda kind, tree, key_rank, with_sums: trees.selection_prefetch(tree, key_rank, with_sums)
    return None if k is None else lambda kind, tree, key_rank, with_sums: None
