"""Vector code for the two sweeps over dense rows, and the order in which a row's score is summed.

**The score's summation order** (the one place it is defined; :mod:`sparkrank.numerics.linalg`
uses it for dense rows and CSR alike): a row's terms ``x_j·v_j`` (each product rounded to
float64, the entry read exactly as float64; a zero entry is no term) go to
:data:`SCORE_LANES` partial sums, term ``j`` to lane ``j mod 8``, each lane adding its terms
in ascending ``j`` from ``+0.0``; the score is ``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))``.
Every layout and every partitioning of the rows gives the same bits, because the lanes and
their order depend on the column index only.  A zero entry of a dense row adds ``-0.0`` to
its lane, which changes no bit of any float64 (``s + -0.0 == s``, signs of zero included),
so dense rows equal CSR rows that leave it out.

Why lanes and not one sum in index order: one sum is one dependent chain of additions per
row, which leaves the adders idle (136 features: 0.2 s per 1M rows, five times the time to
read them), and interleaving rows instead needs the rows transposed first (half of that time
again).  Eight lanes are one 512-bit vector of float64 per step, so a row is summed with
contiguous vector loads at about the speed memory delivers it (1M x 136 float32: 0.047 s,
reading them once 0.037 s).

**``Xᵀc`` in steps of four rows** (:mod:`sparkrank.numerics.exact_sum` defines the sums):
:func:`add_rows_dd` sums one step's four terms of eight columns in float64, in row order, and
adds each column's step sum to its double-double ``(hi, lo)`` by one TwoSum (1M x 136 float32:
0.019 s per power with the data in cache; one TwoSum per term took 0.034 s).

Why intrinsics (LLVM IR on ``<8 x double>``): numba disables LLVM's SLP vectoriser (a
miscompilation, numba #8705), its loop vectoriser does not see eight scalar lanes as one
vector, and on these processors it prefers 256-bit vectors.  The IR has no fast-math flags,
so every operation is rounded as written (no reassociation, no fused multiply-add).

numba's on-disk cache keys a compiled function on the contents of its own source file only, and
a cached function carries the code of every jitted function it calls (these intrinsics included):
:mod:`sparkrank.numba_cache` therefore deletes every cache file of the package when any of its
sources changes, so an edit here reaches the cached callers.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: Partial sums of a row's score (see the module docstring).
SCORE_LANES = 8
#: Rows :func:`add_rows_dd` adds per step.
DD_ROWS = 4

_I32 = ir.IntType(32)


@njit(cache=True, nogil=True, inline="always")
def lane_total(lanes):
    """The score from a float64 array of :data:`SCORE_LANES` partial sums (the tree of :func:`_combine_lanes`)."""
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))


def _combine_lanes(builder, lanes: list):
    """``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))`` of LLVM values."""
    pairs = [builder.fadd(lanes[k], lanes[k + 1]) for k in range(0, SCORE_LANES, 2)]
    return builder.fadd(builder.fadd(pairs[0], pairs[1]), builder.fadd(pairs[2], pairs[3]))


def _dense_rows(values) -> bool:
    return (isinstance(values, types.Array) and values.ndim == 2 and values.layout == "C"
            and values.dtype in (types.float32, types.float64))


def _float64_vector(array) -> bool:
    return isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C" and array.dtype == types.float64


class _Rows:
    """LLVM values of a C-contiguous 2-D float32/float64 array: row pointers and vector loads as float64."""

    def __init__(self, context, builder, array_type, value):
        self.builder = builder
        self.array = context.make_array(array_type)(context, builder, value)
        self.n = cgutils.unpack_tuple(builder, self.array.shape, 2)[1]
        self.element = context.get_value_type(array_type.dtype)
        self.single = self.element == ir.FloatType()
        self.vector = ir.VectorType(self.element, SCORE_LANES)

    def row(self, i):
        return self.builder.gep(self.array.data, [self.builder.mul(i, self.n)])

    def load(self, row_ptr, j):
        """``(x as <8 x double>, x != 0)`` of columns ``j:j+8`` (NaN counts as non-zero)."""
        b = self.builder
        x = b.load(b.bitcast(b.gep(row_ptr, [j]), self.vector.as_pointer()), align=4 if self.single else 8)
        present = b.fcmp_unordered("!=", x, ir.Constant(self.vector, [0.0] * SCORE_LANES))
        return (b.fpext(x, _VEC) if self.single else x), present

    def full_columns(self):
        """The columns in whole steps of eight: ``n - n mod 8``."""
        return self.builder.and_(self.n, ir.Constant(self.n.type, -SCORE_LANES))


_VEC = ir.VectorType(ir.DoubleType(), SCORE_LANES)


def _vector_at(builder, data, j):
    return builder.bitcast(builder.gep(data, [j]), _VEC.as_pointer())


def _splat(builder, scalar):
    one = builder.insert_element(ir.Constant(_VEC, ir.Undefined), scalar, ir.Constant(_I32, 0))
    return builder.shuffle_vector(one, ir.Constant(_VEC, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32, SCORE_LANES), [0] * SCORE_LANES))


@intrinsic
def row_dot_lanes(typingctx, values, row, v):
    """``values[row]·v`` in float64, summed in the lane order above.

    ``values``: C-contiguous 2-D float32 or float64 array; ``v``: C-contiguous float64 array
    with at least ``values.shape[1]`` entries (not checked here: the caller does).
    """
    if not (_dense_rows(values) and _float64_vector(v) and isinstance(row, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        rows = _Rows(context, builder, sig.args[0], args[0])
        weights = context.make_array(sig.args[2])(context, builder, args[2]).data
        intp = rows.n.type
        row_ptr = rows.row(context.cast(builder, args[1], sig.args[1], types.intp))
        acc = cgutils.alloca_once_value(builder, ir.Constant(_VEC, [0.0] * SCORE_LANES))
        no_term = ir.Constant(_VEC, [-0.0] * SCORE_LANES)  # s + -0.0 == s for every float64 s
        full = rows.full_columns()
        with cgutils.for_range_slice(builder, ir.Constant(intp, 0), full, ir.Constant(intp, SCORE_LANES)) as (j, _):
            x, present = rows.load(row_ptr, j)
            term = builder.select(present, builder.fmul(x, builder.load(_vector_at(builder, weights, j), align=8)),
                                  no_term)
            builder.store(builder.fadd(builder.load(acc), term), acc)
        # the last n mod 8 columns, one at a time into lanes 0, 1, ...
        with cgutils.for_range_slice(builder, full, rows.n, ir.Constant(intp, 1)) as (j, _):
            x = builder.load(builder.gep(row_ptr, [j]))
            present = builder.fcmp_unordered("!=", x, ir.Constant(rows.element, 0.0))
            x = builder.fpext(x, ir.DoubleType()) if rows.single else x
            term = builder.select(present, builder.fmul(x, builder.load(builder.gep(weights, [j]))),
                                  ir.Constant(ir.DoubleType(), -0.0))
            lane = builder.trunc(builder.sub(j, full), _I32)
            sums = builder.load(acc)
            builder.store(builder.insert_element(sums, builder.fadd(builder.extract_element(sums, lane), term), lane),
                          acc)
        sums = builder.load(acc)
        return _combine_lanes(builder, [builder.extract_element(sums, ir.Constant(_I32, k))
                                        for k in range(SCORE_LANES)])

    return types.float64(values, row, v), codegen


def _power_digits(code) -> tuple[int, ...] | None:
    """The powers of :func:`add_rows_dd`'s literal ``powers`` code (decimal digits, each 1 or 2)."""
    if not isinstance(code, types.IntegerLiteral) or code.literal_value <= 0:
        return None
    digits = tuple(int(d) for d in str(code.literal_value))
    return digits if all(d in (1, 2) for d in digits) else None


def _matrix(array) -> bool:
    return isinstance(array, types.Array) and array.ndim == 2 and array.layout == "C" and array.dtype == types.float64


@intrinsic(prefer_literal=True)
def add_rows_dd(typingctx, values, rows, coefs, hi, lo, powers):
    """One step of ``Xᵀc`` (``exact_sum``'s convention) for each product ``q`` on the columns
    ``j < n - n mod 8`` (the caller adds the rest): the step's terms
    ``term(values[rows[k], j], coefs[q, k])``, ``k = 0..3``, summed in float64 in that order from
    ``+0.0``, and that step sum added to ``(hi, lo)[q, j]`` by TwoSum (its error into ``lo``):
    the operations of ``exact_sum.add_dense_steps_dd``'s other columns and ``two_sum``, so the
    same bits.  The products share each load of a row's columns (the value pass's three).

    ``term(x, c)`` is ``+0.0`` when ``x == 0`` or ``c == 0``, else ``x·c`` (power 1) or
    ``(x·x)·c`` (power 2) (``exact_sum._dense_term``).  ``rows``: int64 array of 4 row indices;
    ``coefs``: float64 ``(products, 4)``; ``hi``, ``lo``: float64 ``(products, n)``; ``powers``:
    a compile-time constant whose decimal digits are the products' powers (``112``: 1, 1, 2).
    """
    digits = _power_digits(powers)
    if not (_dense_rows(values) and _matrix(coefs) and _matrix(hi) and _matrix(lo) and digits is not None
            and isinstance(rows, types.Array) and rows.ndim == 1 and rows.dtype == types.int64):
        return None

    def codegen(context, builder, sig, args):
        matrix = _Rows(context, builder, sig.args[0], args[0])
        intp = matrix.n.type
        row_index = context.make_array(sig.args[1])(context, builder, args[1]).data
        coef_data = context.make_array(sig.args[2])(context, builder, args[2]).data
        hi_data = context.make_array(sig.args[3])(context, builder, args[3]).data
        lo_data = context.make_array(sig.args[4])(context, builder, args[4]).data
        zero = ir.Constant(_VEC, [0.0] * SCORE_LANES)
        row_ptrs = [matrix.row(builder.load(builder.gep(row_index, [ir.Constant(intp, k)]))) for k in range(DD_ROWS)]
        products = []  # per product: its four splatted coefficients, whether each is non-zero, its row of hi/lo
        for q, power in enumerate(digits):
            cs = [_splat(builder, builder.load(builder.gep(coef_data, [ir.Constant(intp, q * DD_ROWS + k)])))
                  for k in range(DD_ROWS)]
            offset = builder.mul(ir.Constant(intp, q), matrix.n)
            products.append((power == 2, [(c, builder.fcmp_unordered("!=", c, zero)) for c in cs],
                             builder.gep(hi_data, [offset]), builder.gep(lo_data, [offset])))
        with cgutils.for_range_slice(builder, ir.Constant(intp, 0), matrix.full_columns(),
                                     ir.Constant(intp, SCORE_LANES)) as (j, _):
            xs = [matrix.load(row_ptr, j) for row_ptr in row_ptrs]
            for squared, cs, hi_row, lo_row in products:
                p = zero  # the step sum, from +0.0 in row order
                for (x, present), (c, c_present) in zip(xs, cs):
                    product = builder.fmul(builder.fmul(x, x) if squared else x, c)
                    p = builder.fadd(p, builder.select(builder.and_(present, c_present), product, zero))
                hi_ptr, lo_ptr = _vector_at(builder, hi_row, j), _vector_at(builder, lo_row, j)
                h, lo = builder.load(hi_ptr, align=8), builder.load(lo_ptr, align=8)
                s = builder.fadd(h, p)  # TwoSum, then its error into lo (exact_sum.two_sum)
                bb = builder.fsub(s, h)
                error = builder.fadd(builder.fsub(h, builder.fsub(s, bb)), builder.fsub(p, bb))
                builder.store(s, hi_ptr, align=8)
                builder.store(builder.fadd(lo, error), lo_ptr, align=8)
        return context.get_dummy_value()

    return types.void(values, rows, coefs, hi, lo, powers), codegen
