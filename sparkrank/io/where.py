"""``--where`` on the local engine: a subset of Spark SQL, translated to a pyarrow filter.

On Spark the string goes to ``DataFrame.filter`` unchanged (all of Spark SQL, pushed into the
scan before the blocks are built).  In-process, :func:`to_arrow_filter` understands what
partition pruning needs and nothing more, and says so for anything else:

* comparisons ``= == != <> < <= > >=`` between a column and a literal (or two columns);
* ``col [NOT] IN (lit, …)``, ``col [NOT] BETWEEN lit AND lit``, ``col IS [NOT] NULL``;
* ``AND``, ``OR``, ``NOT`` and parentheses;
* literals: numbers, ``'strings'`` (``''`` escapes a quote), ``TRUE``/``FALSE``;
  column names bare or in backquotes, matched case-insensitively as Spark does.
* a string literal compared with a number column is that number, as Spark (ANSI mode)
  casts it: a bigint for an integer column (``part = '3'``; digits only, blanks around),
  a double for a floating one; any other string is an error, as Spark's failed cast.

Anything else (functions, arithmetic, ``LIKE`` …) raises :class:`UnsupportedFilter`, whose
message tells the user to run on Spark; :func:`sparkrank.engines.registry.choose_engine`
uses the same check to send such filters to Spark under ``--engine auto``.
"""

from __future__ import annotations

import re
from typing import Any

from ..data.block import DataError
from .formats.numbers import TEXT_NUMBER

#: The strings Spark's ANSI cast reads as a bigint (a floating column's are :data:`TEXT_NUMBER`).
_INTEGER_TEXT = r"^\s*[+-]?\d+\s*$"

_TOKEN = re.compile(r"""\s*(?:
    (?P<number>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | '(?P<string>(?:[^']|'')*)'
  | `(?P<quoted>[^`]+)`
  | (?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
)""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "between", "true", "false"}


class UnsupportedFilter(DataError):
    """A ``--where`` expression outside the subset the local engine evaluates."""


class _Column(str):
    """A column reference (vs. a string literal): its actual name."""


def _tokens(text: str) -> list[tuple[str, Any]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise UnsupportedFilter(f"--where {text!r}: cannot read {text[pos:].strip()[:30]!r} "
                                    "(the local engine understands comparisons, IN, BETWEEN, IS NULL, AND/OR/NOT; "
                                    "use --engine spark for full Spark SQL)")
        pos = m.end()
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "number":
            out.append(("lit", float(value) if any(c in value for c in ".eE") else int(value)))
        elif kind == "string":
            out.append(("lit", value.replace("''", "'")))
        elif kind == "quoted":
            out.append(("col", value))
        elif kind == "word" and value.lower() in _KEYWORDS:
            word = value.lower()
            out.append(("lit", word == "true") if word in ("true", "false") else ("kw", word))
        elif kind == "word":
            out.append(("col", value))
        else:
            out.append(("op", value))
    return out


class _Parser:
    def __init__(self, text: str, schema, where: str):
        self.text, self.where = text, where
        self.tokens = _tokens(text)
        self.i = 0
        self.names = {n.lower(): n for n in schema.names}
        self.all_names = schema.names
        self.types = dict(zip(schema.names, schema.types))

    def peek(self, kind: str | None = None, value: Any = None) -> bool:
        if self.i >= len(self.tokens):
            return False
        k, v = self.tokens[self.i]
        return (kind is None or k == kind) and (value is None or v == value)

    def take(self, kind: str, value: Any = None):
        if not self.peek(kind, value):
            got = self.tokens[self.i][1] if self.i < len(self.tokens) else "the end"
            raise UnsupportedFilter(f"--where {self.text!r}: expected {value or kind} at {got!r} (the local engine "
                                    "understands comparisons, IN, BETWEEN, IS NULL, AND/OR/NOT; use --engine spark "
                                    "for full Spark SQL)")
        self.i += 1
        return self.tokens[self.i - 1][1]

    def parse(self):
        expr = self.disjunction()
        if self.i != len(self.tokens):
            self.take("end")
        return expr

    def disjunction(self):
        expr = self.conjunction()
        while self.peek("kw", "or"):
            self.i += 1
            expr = expr | self.conjunction()
        return expr

    def conjunction(self):
        expr = self.negation()
        while self.peek("kw", "and"):
            self.i += 1
            expr = expr & self.negation()
        return expr

    def negation(self):
        if self.peek("kw", "not"):
            self.i += 1
            return ~self.negation()
        return self.predicate()

    def operand(self):
        """A :class:`_Column` or a literal's value (made an expression by :meth:`expression`)."""
        if self.peek("col"):
            name = self.take("col")
            actual = self.names.get(name.lower())
            if actual is None:
                raise DataError(f"{self.where}--where names a column {name!r} that does not exist; "
                                f"columns are {', '.join(self.all_names)}")
            return _Column(actual)
        return self.take("lit")

    def expression(self, operand, other):
        """The pyarrow expression of ``operand``, compared with ``other`` (see :meth:`literal`)."""
        import pyarrow.dataset as ds

        if isinstance(operand, _Column):
            self.check_text_against_number(operand, other)
            return ds.field(operand)
        return ds.scalar(self.literal(operand, other))

    def check_text_against_number(self, column: _Column, other) -> None:
        """A string column compared with a number literal is outside the subset: Spark casts each
        of the column's values to the number's type (and fails on the first that is not one);
        pyarrow has no such comparison, so say what to do instead of its kernel error."""
        import pyarrow as pa

        kind = self.types[column]
        number = isinstance(other, (int, float)) and not isinstance(other, bool)
        if number and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise UnsupportedFilter(f"{self.where}--where {self.text!r} compares the string column {str(column)!r} with the "
                            f"number {other!r}: quote the number to compare text ('{other}'), or run on Spark "
                            "(--engine spark), which casts each value of the column to a number")

    def literal(self, value, other):
        """``value`` as Spark compares it with ``other``: a string literal against a number
        column is cast to the column's kind of number (pyarrow has no kernel comparing the two)."""
        import pyarrow as pa

        kind = self.types[other] if isinstance(other, _Column) and isinstance(value, str) else None
        if kind is None or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            return value
        integer = pa.types.is_integer(kind)
        if not re.match(_INTEGER_TEXT if integer else TEXT_NUMBER, value):
            raise DataError(f"{self.where}--where {self.text!r}: column {other!r} is {kind} and {value!r} is not "
                            f"{'an integer' if integer else 'a number'} (Spark casts the string to the column's "
                            "kind of number)")
        return int(value) if integer else float(value)

    def predicate(self):
        if self.peek("op", "("):
            self.i += 1
            expr = self.disjunction()
            self.take("op", ")")
            return expr
        left = self.operand()
        negate = False
        if self.peek("kw", "not"):
            self.i += 1
            negate = True
        if self.peek("kw", "in"):
            self.i += 1
            self.take("op", "(")
            values = [self.take("lit")]
            while self.peek("op", ","):
                self.i += 1
                values.append(self.take("lit"))
            self.take("op", ")")
            if isinstance(left, _Column):
                for value in values:
                    self.check_text_against_number(left, value)
            expr = self.expression(left, None).isin([self.literal(v, left) for v in values])
        elif self.peek("kw", "between"):
            self.i += 1
            low = self.operand()
            self.take("kw", "and")
            high = self.operand()
            column = self.expression(left, low)
            expr = (column >= self.expression(low, left)) & (column <= self.expression(high, left))
        elif self.peek("kw", "is") and not negate:
            self.i += 1
            is_not = self.peek("kw", "not")
            self.i += is_not
            self.take("kw", "null")
            column = self.expression(left, None)
            expr = column.is_valid() if is_not else column.is_null()
        elif not negate and self.peek("op"):
            op = self.take("op")
            right = self.operand()
            a, b = self.expression(left, right), self.expression(right, left)
            ops = {"=": a.__eq__, "==": a.__eq__, "!=": a.__ne__, "<>": a.__ne__,
                   "<": a.__lt__, "<=": a.__le__, ">": a.__gt__, ">=": a.__ge__}
            if op not in ops:
                raise UnsupportedFilter(f"--where {self.text!r}: unexpected {op!r}")
            expr = ops[op](b)
        else:
            self.take("op")  # raises the "expected" message
        return ~expr if negate else expr


def to_arrow_filter(text: str, schema, where: str = ""):
    """The ``pyarrow.dataset`` expression of a ``--where`` string over the columns of
    ``schema`` (a ``pyarrow.Schema``, whose types decide how a string literal compares).

    Raises
    ------
    UnsupportedFilter
        Outside the subset (message suggests ``--engine spark``), a number compared with a
        string column included.
    DataError
        A column that is not in ``schema`` (the message lists them), or a string literal that
        is not a number of the number column it is compared with.
    """
    return _Parser(text, schema, where).parse()


def cannot_read(name: str, where_filter: str | None, detail) -> str:
    """The message of an input that could not be read (with its ``--where``, when there is one):
    pyarrow's errors in-process, a value Spark's ``--where`` cast fails on (the same words)."""
    with_filter = f" with --where {where_filter!r}" if where_filter else ""
    return f"{name}: cannot read{with_filter}: {detail}"


def locally_supported(text: str) -> bool:
    """Whether the local engine can evaluate ``text`` (syntax only; columns are checked later)."""
    import pyarrow as pa

    try:
        untyped = pa.schema([(v, pa.null()) for k, v in _tokens(text) if k == "col"])
        _Parser(text, untyped, "").parse()
    except UnsupportedFilter:
        return False
    return True
