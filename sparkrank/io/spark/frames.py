"""A ranking DataFrame made ready for the Spark engine: filtered by ``--where`` (the filter grammar
as a Spark Column, or ``--where-sql``'s Spark SQL), its named columns checked as in-process (:meth:`~sparkrank.io.sources.ColumnSpec.check`),
named feature columns assembled into one array column, a multi-column group id combined
(:func:`group_expression`), and the in-process reader's messages for what Spark would only find
in a job (a label column of text)."""

from __future__ import annotations

from typing import Callable, Sequence

from ...data.block import DataError
from ..formats.numbers import TEXT_NUMBER


#: The array column assembled from ``feature_cols`` (a name no user column has).
FEATURES_FROM_COLUMNS = "__sparkrank_features"


def features_name(columns) -> str:
    """The frame's features column to train on: the assembled one for named feature columns."""
    return FEATURES_FROM_COLUMNS if columns.feature_cols else columns.features


def text_columns_not_numeric(df, names: list[str]) -> set[str]:
    """Which of ``df``'s string columns ``names`` (CSV fields Spark's schema inference did not
    take for numbers) hold a value that is not a number to the in-process reader
    (:data:`TEXT_NUMBER`: ``nan`` and ``inf`` in any spelling, blanks around them; no value at
    all is a null, not text).  One aggregation over all of them, on this rare path only."""
    from pyspark.sql import functions as F

    if not names:
        return set()
    flags = df.select([F.max(F.when(F.col(f"`{name}`").isNotNull() & ~F.col(f"`{name}`").rlike(TEXT_NUMBER), 1)
                             .otherwise(0)).alias(f"c{k}") for k, name in enumerate(names)]).first()
    return {name for k, name in enumerate(names) if flags[f"c{k}"]}


def text_number(name: str):
    """The Spark column of CSV string field ``name`` as the in-process reader reads it, when
    every value is a number to it (:func:`text_columns_not_numeric` says which are not):
    doubles, so that a bad value (``nan``) is then found and named by its row as in-process."""
    from pyspark.sql import functions as F

    trimmed = F.trim(F.col(f"`{name}`"))
    # Spark's cast takes every such number but a signed nan (a Column, not SQL text: a column
    # name from a file's header never reaches Spark's SQL parser)
    return F.when(F.lower(trimmed).rlike("^[+-]nan$"), F.lit(float("nan"))).otherwise(trimmed.try_cast("double"))


def prepare_frame(df, columns, where_filter: str | None, *, where: str = "", where_sql: bool = False,
                  text_types: bool = False, numeric_labels: bool = True, check: Callable | None = None):
    """``df`` filtered by ``where_filter`` (the ``--where`` grammar, or Spark SQL when
    ``where_sql``), checked against ``columns``, with ``feature_cols`` assembled into one array
    column and several group columns combined.

    ``text_types``: the column types were inferred from text (CSV), where a string feature column
    may still hold numbers to the in-process reader (:func:`text_number`).  ``numeric_labels``:
    check that the label column holds numbers (a format whose reader makes them needs not).
    ``check``: the column roles to check, from the frame's column names (default ``columns``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, NumericType, StringType

    if where_filter:
        df = _filtered(df, where_filter, where, where_sql)
    names = df.columns
    check = columns if check is None else check(names)
    check.check(names, where)
    types = {f.name: f.dataType for f in df.schema.fields}
    text = []  # CSV string columns that may still be numbers to the in-process reader
    if text_types:
        wanted = ([columns.label] if columns.labels else []) + list(columns.feature_cols)
        text = text_columns_not_numeric(df, [n for n in dict.fromkeys(wanted) if isinstance(types[n], StringType)])
    if columns.labels and numeric_labels:
        df = _numeric_labels(df, columns.label, where, text_types and columns.label not in text)
    if columns.feature_cols:
        from ...data.arrow import FEATURE_NAMES_KEY  # here: the in-process path never needs pyarrow's import

        values = []
        for name in columns.feature_cols:  # as data/table.py says it in-process, before any cast fails a job
            if text_types and isinstance(types[name], StringType):
                if name in text:
                    raise DataError(f"{where}feature column {name!r} is not numeric (string)")
                values.append(text_number(name))
            elif isinstance(types[name], (NumericType, BooleanType)):
                values.append(F.col(f"`{name}`").cast("double"))
            else:
                raise DataError(f"{where}feature column {name!r} is not numeric ({types[name].simpleString()})")
        # the names ride in the column's metadata (as Spark ML's VectorAssembler keeps its
        # attributes there), so a bad value's message names its column (columns.feature_spec)
        df = df.withColumn(FEATURES_FROM_COLUMNS,
                           F.array(*values).alias(
                               FEATURES_FROM_COLUMNS, metadata={FEATURE_NAMES_KEY: list(columns.feature_cols)}))
    if len(check.group) > 1:
        df = df.withColumn(check.group_name, group_expression(check.group))
    return df


def _numeric_labels(df, name: str, where: str, text_numbers: bool):
    """``df`` with a label column of numbers, or the in-process reader's error
    (:func:`~sparkrank.data.arrow.label_array`, the type named as Arrow names it) before any job:
    on the executors every block said it, without the file.  ``text_numbers``: a CSV label
    column of strings holds numbers to the in-process reader (``nan`` or ``inf`` tokens,
    :func:`_text_columns_not_numeric`), which are numbers here too (:func:`_text_number`), so the
    bad row is named."""
    from pyspark.sql.types import NumericType, StringType

    spark_type = df.schema[name].dataType
    if isinstance(spark_type, NumericType):
        return df
    from pyspark.sql.pandas.types import to_arrow_type

    try:
        arrow_name = str(to_arrow_type(spark_type))
    except Exception:  # noqa: BLE001 - a type Arrow cannot hold: Spark's own name
        arrow_name = spark_type.simpleString()
    message = f"{where}column {name!r} has type {arrow_name}: labels must be numbers"
    if text_numbers and isinstance(spark_type, StringType):
        return df.withColumn(name, text_number(name))
    raise DataError(message)


def group_expression(group: Sequence[str]):
    """The Spark column of a group id: the column itself, or for several columns the JSON
    text of their values (null when any part is null; see the module docstring)."""
    from pyspark.sql import functions as F

    parts = [F.col(f"`{g}`") for g in group]
    if len(parts) == 1:
        return parts[0]
    any_null = parts[0].isNull()
    for p in parts[1:]:
        any_null = any_null | p.isNull()
    return F.when(any_null, F.lit(None).cast("string")).otherwise(
        F.to_json(F.struct(*[p.alias(g) for p, g in zip(parts, group)])))


def _filtered(df, text: str, where: str, sql: bool):
    """``df`` filtered by a ``--where`` (a Column from the grammar: no SQL text reaches Spark)
    or, when ``sql``, a ``--where-sql``."""
    from pyspark.errors import AnalysisException

    from ..where import spark_sql_filter, to_spark_filter

    if sql:
        return spark_sql_filter(df, text, where)
    condition = to_spark_filter(text, df, where)
    try:
        return df.filter(condition)
    except AnalysisException as exc:  # types Spark cannot compare (a vector with a number ...)
        raise DataError(f"{where}--where {text!r}: {str(exc).splitlines()[0]}") from None
