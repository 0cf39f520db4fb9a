"""``--where`` on the local engine: a subset of Spark SQL, translated to a pyarrow filter.

On Spark the string goes to ``DataFrame.filter`` unchanged (all of Spark SQL, pushed into the
scan before the blocks are built).  In-process, :func:`to_arrow_filter` understands what
partition pruning needs and nothing more, and says so for anything else:

* comparisons ``= == != <> < <= > >=`` between a column and a literal (or two columns);
* ``col [NOT] IN (lit, …)``, ``col [NOT] BETWEEN lit AND lit``, ``col IS [NOT] NULL``;
* ``AND``, ``OR``, ``NOT`` and parentheses;
* literals: numbers, ``'strings'`` (``''`` escapes a quote), ``TRUE``/``FALSE``;
  column names bare or in backquotes, matched case-insensitively as Spark does.

Anything else (functions, arithmetic, ``LIKE`` …) raises :class:`UnsupportedFilter`, whose
message tells the user to run on Spark; :func:`sparkrank.engines.registry.choose_engine`
uses the same check to send such filters to Spark under ``--engine auto``.
"""

from __future__ import annotations

import re
from typing import Any

from ..data.block import DataError

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
    """A column reference (vs. a string literal)."""


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
    def __init__(self, text: str, names: list[str], where: str):
        self.text, self.where = text, where
        self.tokens = _tokens(text)
        self.i = 0
        self.names = {n.lower(): n for n in names}
        self.all_names = names

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
        import pyarrow.dataset as ds

        if self.peek("col"):
            name = self.take("col")
            actual = self.names.get(name.lower())
            if actual is None:
                raise DataError(f"{self.where}--where names a column {name!r} that does not exist; "
                                f"columns are {', '.join(self.all_names)}")
            return ds.field(actual)
        return ds.scalar(self.take("lit"))

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
            expr = left.isin(values)
        elif self.peek("kw", "between"):
            self.i += 1
            low = self.operand()
            self.take("kw", "and")
            high = self.operand()
            expr = (left >= low) & (left <= high)
        elif self.peek("kw", "is") and not negate:
            self.i += 1
            is_not = self.peek("kw", "not")
            self.i += is_not
            self.take("kw", "null")
            expr = left.is_valid() if is_not else left.is_null()
        elif not negate and self.peek("op"):
            op = self.take("op")
            right = self.operand()
            ops = {"=": left.__eq__, "==": left.__eq__, "!=": left.__ne__, "<>": left.__ne__,
                   "<": left.__lt__, "<=": left.__le__, ">": left.__gt__, ">=": left.__ge__}
            if op not in ops:
                raise UnsupportedFilter(f"--where {self.text!r}: unexpected {op!r}")
            expr = ops[op](right)
        else:
            self.take("op")  # raises the "expected" message
        return ~expr if negate else expr


def to_arrow_filter(text: str, names: list[str], where: str = ""):
    """The ``pyarrow.dataset`` expression of a ``--where`` string over columns ``names``.

    Raises
    ------
    UnsupportedFilter
        Outside the subset (message suggests ``--engine spark``).
    DataError
        A column that is not in ``names`` (the message lists them).
    """
    return _Parser(text, names, where).parse()


def locally_supported(text: str) -> bool:
    """Whether the local engine can evaluate ``text`` (syntax only; columns are checked later)."""
    try:
        names = [v for k, v in _tokens(text) if k == "col"]
        _Parser(text, names, "").parse()
    except UnsupportedFilter:
        return False
    return True
