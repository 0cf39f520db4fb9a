"""The ``--where`` grammar: one parser, one syntax tree, the same on both engines.

A filter is read once into the nodes below; :mod:`sparkrank.io.where` turns the tree into a
``pyarrow.dataset`` expression (in-process) or a PySpark ``Column`` built with ``F.col`` /
``F.lit`` and operators (Spark).  No part of the text ever reaches Spark's SQL parser, so a
function call, a subquery or a second statement cannot run anywhere: the grammar has none.

Grammar (keywords in any case)::

    filter     := disjunct (OR disjunct)*
    disjunct   := negation (AND negation)*
    negation   := NOT negation | '(' filter ')' | predicate
    predicate  := operand op operand                    op: = == != <> < <= > >=
                | operand [NOT] IN '(' literal (',' literal)* ')'
                | operand [NOT] BETWEEN operand AND operand
                | operand IS [NOT] NULL
    operand    := column | literal
    column     := name | `any text` (`` is a backquote)   name: [A-Za-z_][A-Za-z0-9_.]*
    literal    := number | 'text' ('' is a quote; a backslash is itself) | TRUE | FALSE

Numbers with a point or an exponent are doubles, others integers; a sign belongs to the
number (``-5``).  Anything else is refused with the position (1-based character) where the
grammar stops: a function call, a subquery, ``;``, arithmetic, ``LIKE``, a double-quoted string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from ..data.block import DataError

#: What the grammar takes, for messages.
GRAMMAR = "comparisons, [NOT] IN, [NOT] BETWEEN, IS [NOT] NULL, AND/OR/NOT, parentheses, columns and literals"
#: How to reach full Spark SQL instead, for messages.
SQL_HINT = "--where-sql passes Spark SQL to the Spark engine"

_TOKEN = re.compile(r"""
    (?P<number>[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)
  | '(?P<string>(?:[^']|'')*)'
  | `(?P<quoted>(?:[^`]|``)+)`
  | (?P<op><=>|<=|>=|<>|!=|==|=|<|>|\(|\)|,)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "between", "true", "false"}
#: Spark SQL words that start something the grammar does not have, and what to call it.
_SPARK_SQL_WORDS = {"select": "a subquery ({} ...)", "exists": "a subquery ({} ...)",
                    "case": "a CASE expression ({} ...)", "cast": "a function call {}(...)",
                    "interval": "an INTERVAL literal ({} ...)", "like": "the operator {}", "rlike": "the operator {}",
                    "ilike": "the operator {}", "regexp": "the operator {}", "div": "arithmetic ({})"}
COMPARISONS = ("=", "==", "!=", "<>", "<", "<=", ">", ">=")


class UnsupportedFilter(DataError):
    """A ``--where`` outside the grammar (the message names the filter and the position), or
    one the in-process engine cannot evaluate (a number compared with a string column)."""


# ----------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Column:
    name: str
    pos: int


@dataclass(frozen=True)
class Literal:
    value: Union[bool, int, float, str]
    pos: int


Operand = Union[Column, Literal]


@dataclass(frozen=True)
class Comparison:
    op: str
    left: Operand
    right: Operand


@dataclass(frozen=True)
class InList:
    operand: Operand
    values: tuple
    negated: bool


@dataclass(frozen=True)
class Between:
    operand: Operand
    low: Operand
    high: Operand
    negated: bool


@dataclass(frozen=True)
class IsNull:
    operand: Operand
    negated: bool


@dataclass(frozen=True)
class And:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Or:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Not:
    operand: "Node"


Node = Union[Comparison, InList, Between, IsNull, And, Or, Not]


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, col, op, kw, word (a name), end
    value: object
    pos: int  # 0-based offset in the text
    text: str


def refusal(text: str, what: str, pos: int) -> UnsupportedFilter:
    """The one-line error of ``text`` stopping at 0-based offset ``pos``: ``what`` is there."""
    return UnsupportedFilter(f"--where {text!r}: {what} at character {pos + 1}; the --where grammar has {GRAMMAR} "
                             f"({SQL_HINT})")


def _tokens(text: str) -> list[_Token]:
    out, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            out.append(_Token("end", None, pos, ""))
            return out
        m = _TOKEN.match(text, pos)
        if m is None:  # refused when the parser reaches it, so an earlier problem is named first
            return out + [_Token("bad", _unreadable(text, pos), pos, text[pos]), _Token("end", None, len(text), "")]
        kind, value = m.lastgroup, m.group(m.lastgroup)
        if kind == "number":
            value = float(value) if any(c in value for c in ".eE") else int(value)
            if isinstance(value, int) and not -(1 << 63) <= value < (1 << 63):
                return out + [_Token("bad", "an integer beyond 64 bits", pos, m.group(0)),
                              _Token("end", None, len(text), "")]
        elif kind == "string":
            value = value.replace("''", "'")
        elif kind == "quoted":
            kind, value = "col", value.replace("``", "`")
        elif kind == "word" and value.lower() in _KEYWORDS:
            kind, value = "kw", value.lower()
        out.append(_Token(kind, value, pos, m.group(0)))
        pos = m.end()


def _unreadable(text: str, pos: int) -> str:
    """What stops the tokenizer at ``pos``, in words."""
    c = text[pos]
    if c == ";":
        return "';' (a second statement)"
    if c == '"':
        return "a double-quoted string (text takes single quotes, 'like this'; column names backquotes)"
    if c == "'":
        return "a string without its closing quote"
    if c == "`":
        return "a column name without its closing backquote"
    if c in "+-*/%|&^~":
        return f"{c!r} (arithmetic or a bit operation)"
    return f"{c!r}"


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.i]

    def at(self, kind: str, value=None) -> bool:
        return self.token.kind == kind and (value is None or self.token.value == value)

    def advance(self) -> _Token:
        token = self.token
        self.i += 1
        return token

    def expect(self, kind: str, value, wanted: str) -> _Token:
        if not self.at(kind, value):
            raise self.refuse(wanted)
        return self.advance()

    def refuse(self, wanted: str) -> UnsupportedFilter:
        """The error for the current token, where ``wanted`` was expected."""
        token = self.token
        if token.kind == "bad":
            return refusal(self.text, token.value, token.pos)
        if token.kind == "end":
            return refusal(self.text, f"the filter ends early (expected {wanted})", token.pos)
        if token.kind == "word" and self.tokens[self.i + 1].text == "(":
            what = f"a subquery ({token.text} ...)" if token.value.lower() in ("select", "exists") else (
                f"a function call {token.text}(...)")
            return refusal(self.text, what, token.pos)
        if token.kind == "word" and token.value.lower() in _SPARK_SQL_WORDS:
            return refusal(self.text, _SPARK_SQL_WORDS[token.value.lower()].format(token.text), token.pos)
        return refusal(self.text, f"{token.text!r} (expected {wanted})", token.pos)

    def parse(self) -> Node:
        node = self.disjunction()
        if not self.at("end"):
            raise self.refuse("AND, OR or the end")
        return node

    def disjunction(self) -> Node:
        node = self.conjunction()
        while self.at("kw", "or"):
            self.advance()
            node = Or(node, self.conjunction())
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.at("kw", "and"):
            self.advance()
            node = And(node, self.negation())
        return node

    def negation(self) -> Node:
        if self.at("kw", "not"):
            self.advance()
            return Not(self.negation())
        if self.at("op", "("):
            self.advance()
            node = self.disjunction()
            self.expect("op", ")", "')'")
            return node
        return self.predicate()

    def operand(self) -> Operand:
        token = self.token
        if token.kind == "word" and self.tokens[self.i + 1].text == "(" or token.kind == "word" and (
                token.value.lower() in _SPARK_SQL_WORDS):
            raise self.refuse("a column or a literal")
        if token.kind in ("word", "col"):
            self.advance()
            return Column(token.value, token.pos)
        return self.literal()

    def literal(self) -> Literal:
        token = self.token
        if token.kind in ("number", "string") or (token.kind == "kw" and token.value in ("true", "false")):
            self.advance()
            value = token.value == "true" if token.kind == "kw" else token.value
            return Literal(value, token.pos)
        raise self.refuse("a literal" if self.tokens[self.i - 1].text in ("(", ",") else "a column or a literal")

    def predicate(self) -> Node:
        left = self.operand()
        negated = self.at("kw", "not")
        if negated:
            self.advance()
        if self.at("kw", "in"):
            self.advance()
            self.expect("op", "(", "'(' and a list of literals")
            values = [self.literal()]
            while self.at("op", ","):
                self.advance()
                values.append(self.literal())
            self.expect("op", ")", "',' or ')'")
            return InList(left, tuple(values), negated)
        if self.at("kw", "between"):
            self.advance()
            low = self.operand()
            self.expect("kw", "and", "AND")
            return Between(left, low, self.operand(), negated)
        if negated:
            raise self.refuse("IN or BETWEEN after NOT")
        if self.at("kw", "is"):
            self.advance()
            is_not = self.at("kw", "not")
            if is_not:
                self.advance()
            self.expect("kw", "null", "NULL")
            return IsNull(left, is_not)
        if self.at("op") and self.token.value in COMPARISONS:
            op = self.advance().value
            return Comparison(op, left, self.operand())
        raise self.refuse("a comparison, [NOT] IN, [NOT] BETWEEN or IS [NOT] NULL")


def parse_filter(text: str) -> Node:
    """The syntax tree of a ``--where`` filter.

    Raises
    ------
    UnsupportedFilter
        ``text`` is outside the grammar: the message names the filter, what stopped the
        reading and its position (1-based character), e.g. ``reflect(...)``, ``;``.
    """
    return _Parser(text).parse()


def columns_of(node) -> list[Column]:
    """The column references of a tree, in the order they appear."""
    if isinstance(node, Column):
        return [node]
    if isinstance(node, Literal):
        return []
    parts = {Comparison: ("left", "right"), InList: ("operand",), Between: ("operand", "low", "high"),
             IsNull: ("operand",), And: ("left", "right"), Or: ("left", "right"), Not: ("operand",)}[type(node)]
    return [c for part in parts for c in columns_of(getattr(node, part))]
