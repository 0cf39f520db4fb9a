"""``--where``: one grammar (:mod:`sparkrank.io.filter_grammar`), two translations.

The filter is parsed once into a syntax tree; :func:`to_arrow_filter` turns the tree into a
``pyarrow.dataset`` expression (the local engine's scan) and :func:`to_spark_filter` into a
PySpark ``Column`` built with ``F.col``, ``F.lit`` and operators (in Spark's plan before the
blocks are built).  The user's text never reaches Spark's SQL parser; full Spark
SQL is ``--where-sql`` (Spark engine only, :func:`spark_sql_filter`).

Meaning, the same on both engines:

* column names match case-insensitively (as Spark matches them); a name that is not a
  column is an error listing the columns;
* a ``'string'`` compared with a number column is that number, cast here once for both
  engines as Spark (ANSI) casts it: a whole number for an integer column (``part = '3'``;
  digits only, blanks around), a number for a floating one (``inf``, ``nan`` included);
  anything else is an error naming the column and the string;
* ``TRUE``/``FALSE`` compare with boolean columns only, and a boolean column with them only;
* SQL's three-valued logic: a comparison with a null is null and the row is dropped, also
  under ``NOT`` and ``NOT IN``;
* NaN as Spark orders it: NaN equals NaN and is larger than every other number, on both
  engines: pyarrow's IEEE comparisons get explicit ``isnan`` terms, and neither engine lets
  Parquet statistics (which leave NaN out) skip rows for a floating column's comparison
  (:func:`read_arrow`, ``_SparkBackend.floating``);
* a number compared with a string column: Spark casts each value of the column to a number
  (and fails on the first that is not one); the local engine has no such comparison and
  says how to write it instead.
"""

from __future__ import annotations

import re

from ..data.block import DataError
from .filter_grammar import (And, Between, Column, Comparison, InList, IsNull, Literal, Not, Or,
                             UnsupportedFilter, columns_of, parse_filter)
from .formats.numbers import TEXT_NUMBER

__all__ = ["UnsupportedFilter", "cannot_read", "locally_supported", "parse_filter", "read_arrow",
           "spark_sql_filter", "to_arrow_filter", "to_spark_filter"]

#: The strings Spark's ANSI cast reads as a bigint (a floating column's are :data:`TEXT_NUMBER`).
_INTEGER_TEXT = r"^\s*[+-]?[0-9]+\s*$"


def _kind(arrow_type) -> str:
    """``integer``, ``floating``, ``string``, ``boolean`` or ``other`` for an Arrow type."""
    import pyarrow as pa

    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type):
        return "floating"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    return "boolean" if pa.types.is_boolean(arrow_type) else "other"


class _Translator:
    """The tree of ``text`` over columns of the given Arrow ``types`` (a name -> type dict),
    made an expression by a backend (:class:`_ArrowBackend`, :class:`_SparkBackend`)."""

    def __init__(self, text: str, types: dict, where: str, backend):
        self.text, self.where, self.backend = text, where, backend
        self.types = types
        self.names = {n.lower(): n for n in types}
        self.nan_terms = False  # whether an isnan term was written (see read_arrow)

    def translate(self, node):
        out = self.node(node)
        return self.backend.literal(out) if isinstance(out, bool) else out

    def node(self, node):
        if isinstance(node, And):
            return _and(self.node(node.left), self.node(node.right))
        if isinstance(node, Or):
            return _or(self.node(node.left), self.node(node.right))
        if isinstance(node, Not):
            return _not(self.node(node.operand))
        if isinstance(node, Comparison):
            return self.compare(node.op, node.left, node.right)
        if isinstance(node, Between):  # as Spark defines it: low <= x AND x <= high
            both = _and(self.compare(">=", node.operand, node.low), self.compare("<=", node.operand, node.high))
            return _not(both) if node.negated else both
        if isinstance(node, InList):
            found = self.isin(node.operand, node.values)
            return _not(found) if node.negated else found
        if isinstance(node, IsNull):
            return self.backend.is_null(self.operand(node.operand), node.negated)
        raise TypeError(f"not a filter node: {node!r}")

    def column(self, column: Column) -> str:
        actual = self.names.get(column.name.lower())
        if actual is None:
            raise DataError(f"{self.where}--where names a column {column.name!r} that does not exist; "
                            f"columns are {', '.join(self.types)}")
        return actual

    def operand(self, operand):
        if isinstance(operand, Column):
            return self.backend.column(self.column(operand))
        return self.backend.literal(operand.value)

    def compared(self, operand) -> tuple:
        """``(expression, is NaN)`` of an operand as comparisons see it: a floating column's
        NaN test is an expression (and its values go through :meth:`floating`), a literal's a
        constant."""
        if isinstance(operand, Column) and _kind(self.types[self.column(operand)]) == "floating":
            self.nan_terms = True
            expression = self.backend.floating(self.operand(operand))
            return expression, self.backend.is_nan(expression)
        return self.operand(operand), isinstance(operand, Literal) and _is_nan(operand.value)

    def side(self, operand, other):
        """``(expression, is NaN)`` of one side of a comparison with ``other``."""
        if isinstance(operand, Column):
            self.typed(other, operand)  # checks the pair either way round
            return self.compared(operand)
        value, nan = self.typed(operand, other)
        return self.backend.literal(value), nan

    def compare(self, op: str, left, right):
        """``left op right`` as Spark defines it, NaN equal to NaN and above every number.  The
        NaN terms are explicit (``isnan``) wherever a side can be NaN, since pyarrow compares
        by IEEE rules (false for NaN)."""
        a, nan_a = self.side(left, right)
        b, nan_b = self.side(right, left)
        plain = self.backend.compare
        if nan_a is False and nan_b is False:
            return plain(op, a, b)
        neither = _and(_not(nan_a), _not(nan_b))
        equal = _or(_and(neither, plain("=", a, b)), _and(nan_a, nan_b))
        if op in ("=", "=="):
            return equal
        if op in ("!=", "<>"):
            return _not(equal)
        below = _or(_and(neither, plain("<", a, b)), _and(_not(nan_a), nan_b))
        above = _or(_and(neither, plain(">", a, b)), _and(nan_a, _not(nan_b)))
        return {"<": below, ">": above, "<=": _or(below, equal), ">=": _or(above, equal)}[op]

    def isin(self, operand, literals):
        """SQL's ``IN`` (null for a null value), NaN in a list that has NaN."""
        values = [self.typed(v, operand) for v in literals]
        expression, nan = self.compared(operand)
        if nan is False:
            return self.backend.isin(expression, [v for v, _ in values])
        numbers = [v for v, is_nan in values if not is_nan]
        found = _and(_not(nan), self.backend.isin(expression, numbers)) if numbers else False
        return _or(found, nan if any(is_nan for _, is_nan in values) else False)

    def typed(self, literal, other) -> tuple:
        """``(value, is NaN)`` of a literal as compared with ``other``: a string against a number
        column is cast to the column's kind of number; other pairs are checked (see module)."""
        if not isinstance(literal, Literal) or not isinstance(other, Column):
            return (None, False) if not isinstance(literal, Literal) else (literal.value, False)
        name = self.column(other)
        kind, value = _kind(self.types[name]), literal.value
        if (kind == "boolean") != isinstance(value, bool) and kind != "other":
            shown = "TRUE" if value is True else "FALSE" if value is False else repr(value)
            raise DataError(f"{self.where}--where {self.text!r}: column {name!r} is {self.types[name]} and {shown} "
                            "is not (TRUE and FALSE compare with boolean columns, and boolean columns with them)")
        if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
            self.backend.number_against_text(self, name, value)
        if kind in ("integer", "floating") and isinstance(value, str):
            integer = kind == "integer"
            if not re.match(_INTEGER_TEXT if integer else TEXT_NUMBER, value, re.ASCII):
                raise DataError(f"{self.where}--where {self.text!r}: column {name!r} is {self.types[name]} and "
                                f"{value!r} is not {'an integer' if integer else 'a number'} (a string compared "
                                "with a number column is read as the column's kind of number)")
            value = int(value) if integer else float(value)
        return value, _is_nan(value)


def _is_nan(value) -> bool:
    return isinstance(value, float) and value != value


def _and(a, b):
    """Kleene AND of expressions or Python booleans (``x AND FALSE`` is false even for null)."""
    if a is False or b is False:
        return False
    return b if a is True else a if b is True else a & b


def _or(a, b):
    if a is True or b is True:
        return True
    return b if a is False else a if b is False else a | b


def _not(a):
    return (not a) if isinstance(a, bool) else ~a


def _comparison(op: str, a, b):
    """``a op b`` with the operators both expression kinds overload."""
    return {"=": a.__eq__, "==": a.__eq__, "!=": a.__ne__, "<>": a.__ne__, "<": a.__lt__, "<=": a.__le__,
            ">": a.__gt__, ">=": a.__ge__}[op](b)


class _ArrowBackend:
    """pyarrow ``dataset`` expressions."""

    compare = staticmethod(_comparison)

    @staticmethod
    def column(name):
        import pyarrow.dataset as ds

        return ds.field(name)

    @staticmethod
    def literal(value):
        import pyarrow.dataset as ds

        return ds.scalar(value)

    @staticmethod
    def floating(a):
        return a

    @staticmethod
    def is_nan(a):
        import pyarrow.compute as pc

        return pc.is_nan(a)  # null for null, as SQL wants

    @staticmethod
    def number_against_text(translator: _Translator, name: str, value) -> None:
        """A string column compared with a number: Spark casts each of the column's values to
        the number's type (and fails on the first that is not one); pyarrow has no such
        comparison, so say what to do instead of its kernel error."""
        raise UnsupportedFilter(f"{translator.where}--where {translator.text!r} compares the string column {name!r} "
                                f"with the number {value!r}: quote the number to compare text ('{value}'), or run "
                                "on Spark (--engine spark), which casts each value of the column to a number")

    @staticmethod
    def isin(a, values: list):
        """Null for a null value (pyarrow's ``is_in`` says false, so ``NOT IN`` kept it)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        return pc.if_else(a.is_null(), pa.scalar(None, pa.bool_()), a.isin(values))

    @staticmethod
    def is_null(a, negated: bool):
        return a.is_valid() if negated else a.is_null()


class _SparkBackend:
    """PySpark ``Column`` objects built with ``F.col``, ``F.lit`` and operators."""

    compare = staticmethod(_comparison)

    @staticmethod
    def column(name):
        from pyspark.sql import functions as F

        return F.col("`" + name.replace("`", "``") + "`")

    @staticmethod
    def literal(value):
        from pyspark.sql import functions as F

        return F.lit(value)

    @staticmethod
    def floating(a):
        """``a + 0.0``: the same value (-0.0 becomes 0.0, which compares equal to it), and a
        comparison Spark cannot push into a Parquet scan, whose statistics leave NaN out and
        whose dictionary test took -0.0 for no match of ``x = 0`` (rows lost on both counts)."""
        from pyspark.sql import functions as F

        return a + F.lit(0.0)

    @staticmethod
    def is_nan(a):
        from pyspark.sql import functions as F

        return F.when(a.isNotNull(), F.isnan(a))  # Spark's isnan(NULL) is false; SQL's answer is null

    @staticmethod
    def number_against_text(translator, name, value) -> None:
        """Spark casts each value of the string column to the number's type (a value that is
        none fails the job; :func:`sparkrank.engines.registry` names the input and filter)."""

    @staticmethod
    def isin(a, values):
        return a.isin(values)

    @staticmethod
    def is_null(a, negated):
        return a.isNotNull() if negated else a.isNull()


def to_arrow_filter(text: str, schema, where: str = ""):
    """The ``pyarrow.dataset`` expression of a ``--where`` filter over the columns of ``schema``
    (a ``pyarrow.Schema``, whose types decide how a string literal compares).

    Raises
    ------
    UnsupportedFilter
        Outside the grammar (the message names the position), or a number compared with a
        string column (the message says what to write instead).
    DataError
        A column that is not in ``schema`` (the message lists them), or a literal that does
        not compare with its column (see the module docstring).
    """
    types = dict(zip(schema.names, schema.types))
    return _Translator(text, types, where, _ArrowBackend()).translate(parse_filter(text))


def read_arrow(dataset, text: str | None, where: str = ""):
    """``(table, expression)``: the rows of a ``pyarrow.dataset`` that the ``--where`` filter
    ``text`` keeps (all rows without one), and the filter's expression.

    A filter with NaN terms (a floating column compared) is not given to the scan, which would
    skip Parquet row groups by their statistics: those leave NaN out, and a group whose other
    values are all 0.5 is taken for ``x == 0.5``, so ``isnan(x)`` was false for its NaN rows
    too.  Such a filter prunes Hive partitions only (by their paths) and then runs on the rows.
    """
    if not text:
        return dataset.to_table(), None
    import pyarrow as pa

    translator = _Translator(text, dict(zip(dataset.schema.names, dataset.schema.types)), where, _ArrowBackend())
    expression = translator.translate(parse_filter(text))
    if not translator.nan_terms:
        return dataset.to_table(filter=expression), expression
    tables = [fragment.to_table(schema=dataset.schema) for fragment in dataset.get_fragments(filter=expression)]
    table = pa.concat_tables(tables) if tables else dataset.schema.empty_table()
    return table.filter(expression), expression


def to_spark_filter(text: str, df, where: str = ""):
    """The PySpark ``Column`` of a ``--where`` filter over the columns of DataFrame ``df``:
    built with ``F.col``/``F.lit``, never Spark SQL.  Raises as :func:`to_arrow_filter` does,
    but for a number compared with a string column, which Spark evaluates (see module)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    def arrow_type(spark_type):
        try:
            return to_arrow_type(spark_type)
        except Exception:  # noqa: BLE001 - a type with no Arrow twin (an ML vector): never a number column
            return pa.null()

    types = {f.name: arrow_type(f.dataType) for f in df.schema.fields}
    return _Translator(text, types, where, _SparkBackend()).translate(parse_filter(text))


def spark_sql_filter(df, text: str, where: str = ""):
    """``df`` filtered by ``--where-sql``: Spark SQL as Spark reads it (functions included: the
    option says so), errors in one line naming the input and the filter."""
    from pyspark.errors import AnalysisException, NumberFormatException, ParseException

    try:
        filtered = df.filter(text)
        # optimized now, so a string literal that Spark's constant folding cannot cast to the
        # number column it is compared with (part = 'x') fails here, not in the first job
        filtered._jdf.queryExecution().optimizedPlan()
        return filtered
    except ParseException as exc:
        raise DataError(f"{where}--where-sql {text!r} is not a Spark SQL condition: "
                        f"{str(exc).splitlines()[0]}") from None
    except AnalysisException as exc:
        raise DataError(f"{where}--where-sql {text!r}: {str(exc).splitlines()[0]}; columns are "
                        f"{', '.join(df.columns)}") from None
    except NumberFormatException as exc:
        raise DataError(f"{where}--where-sql {text!r}: {str(exc).splitlines()[0]}") from None


def cannot_read(name: str, where_filter: str | None, detail, option: str = "--where") -> str:
    """The message of an input that could not be read (with its filter, when there is one):
    pyarrow's errors in-process, a value Spark's cast fails on (the same words)."""
    with_filter = f" with {option} {where_filter!r}" if where_filter else ""
    return f"{name}: cannot read{with_filter}: {detail}"


def locally_supported(text: str) -> bool:
    """Whether ``text`` is in the ``--where`` grammar (syntax only; columns are checked later)."""
    try:
        parse_filter(text)
    except UnsupportedFilter:
        return False
    return True


def filter_columns(text: str, names) -> list[str]:
    """The columns of ``names`` that ``--where`` ``text`` refers to (matched case-insensitively,
    as :func:`to_arrow_filter` matches them), for a reader that must read them to filter."""
    actual = {n.lower(): n for n in names}
    return list(dict.fromkeys(actual[c.name.lower()] for c in columns_of(parse_filter(text))
                              if c.name.lower() in actual))
