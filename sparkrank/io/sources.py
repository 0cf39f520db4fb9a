"""One place that turns "an input and its columns" into data: :func:`open_source`.

A :class:`Source` is URIs + a resolved format + the column roles (:class:`ColumnSpec`) + an
optional row filter.  It gives

* :meth:`Source.dataframe` — a Spark DataFrame (read on the executors, ``--where`` pushed
  into the scan, named feature columns assembled, a multi-column group id combined) and
  the :class:`~sparkrank.spark.io.Columns` to train on;
* :meth:`Source.ranking_data` — a local :class:`~sparkrank.data.block.RankingData`;
* :meth:`Source.engine` — an engine of either kind, through
  :func:`sparkrank.engines.registry.make_engine`.

Column rules (the same on both engines and in pyspark.ml)
---------------------------------------------------------
* A named column that does not exist is an error listing the columns: label, features,
  ``feature_cols`` and the group id.
* The group id defaults to ``qid``.  For Parquet/CSV/Delta that column must exist; one
  global ranking is asked for explicitly with an empty group (``--qid-col ''``).
  SVMlight keeps its group in ``qid:`` tokens: files with them are grouped, files without
  are one ranking, and ``--qid-col ''`` ignores them.
* Several group columns (``--qid-col user_id,session_id``) are one group id, the JSON text
  of the values (``{"user_id":7,"session_id":"a"}``), in a column named
  ``user_id+session_id``; a null in any part makes the row's group null (an invalid row).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from ..data.block import DataError, RankingData
from . import uri as U
from .formats import (FORMATS, TEXT_NUMBER, decompressed, decompressed_head, first_record_end, format_by_magic,
                      format_by_suffix, get_format, record_start_line)
from .fs import LOCAL, FileEntry, FileSystem, FileUriFileSystem, HadoopFileSystem

log = logging.getLogger("sparkrank")


@dataclass(frozen=True)
class ColumnSpec:
    """Which columns play which role.

    Attributes
    ----------
    label : str
    group : tuple of str
        Group-id column(s); ``()`` = one global ranking.
    features : str
        A Spark ML vector or array column, else ``indices``/``values`` list columns are used.
    feature_cols : tuple of str
        Named numeric columns to use as dense features instead (in this order).
    labels : bool
        Whether the rows' labels are read (and their column required).  ``predict`` scores rows
        without reading them: unlabelled rows are what a model is for (nor does it read the
        group ids in-process: one score per row, a null id included).
    """

    label: str = "label"
    group: tuple[str, ...] = ("qid",)
    features: str = "features"
    feature_cols: tuple[str, ...] = ()
    labels: bool = True

    @staticmethod
    def parse_group(text: str | Sequence[str] | None) -> tuple[str, ...]:
        """``"a,b"`` -> ``("a", "b")``; ``""``/``None`` -> ``()`` (one global ranking)."""
        if text is None:
            return ()
        parts = text.split(",") if isinstance(text, str) else list(text)
        parts = tuple(p.strip() for p in parts if p.strip())
        return parts

    @property
    def group_name(self) -> str | None:
        """The group column to train on (the combined column's name for several)."""
        if not self.group:
            return None
        return self.group[0] if len(self.group) == 1 else "+".join(self.group)

    def check(self, names: Sequence[str], where: str) -> None:
        """Every named column exists in ``names`` (else a DataError listing them)."""
        wanted = [("label", self.label)] if self.labels else []
        wanted += [("group", g) for g in self.group]
        wanted += [("feature", c) for c in self.feature_cols]
        missing = [f"{role} column {col!r}" for role, col in wanted if col not in names]
        if missing:
            hint = (" (give --qid-col '' / groupCol='' to rank all rows as one global ranking)"
                    if any(m.startswith("group") for m in missing) else "")
            raise DataError(f"{where}no {', no '.join(missing)}; columns are {', '.join(names)}{hint}")
        if not self.feature_cols and self.features not in names and not {"indices", "values"} <= set(names):
            raise DataError(f"{where}no feature column: expected {self.features!r} (vector or array), "
                            f"'indices'+'values' lists, or --feature-cols; columns are {', '.join(names)}")


@dataclass(frozen=True)
class Source:
    """URIs of one input, their format, column roles and filter (see :func:`open_source`).

    Attributes
    ----------
    uris : tuple of str
        As given (``sample:`` resolved); files, directories or globs.
    format : str
        A name in :data:`~sparkrank.io.formats.FORMATS`.
    columns : ColumnSpec
    where : str or None
        Row filter: the grammar of :mod:`sparkrank.io.where` (both engines), or Spark SQL when
        ``where_sql``.
    files : tuple of FileEntry
        The data files found (empty for Delta tables).
    where_sql : bool
        ``where`` is Spark SQL (``--where-sql``): evaluated by Spark as it is, refused in-process.
    line_separator : str or None
        CSV/TSV: the record terminator all files share (``"\\r\\n"``, ``"\\n"`` or ``"\\r"``), for
        Spark's reader; ``None`` when unknown or mixed.
    """

    uris: tuple[str, ...]
    format: str
    columns: ColumnSpec = ColumnSpec()
    where: str | None = None
    files: tuple[FileEntry, ...] = field(default=(), repr=False)
    where_sql: bool = False
    line_separator: str | None = None

    @property
    def filter_option(self) -> str:
        """The option the filter came from, for messages."""
        return "--where-sql" if self.where_sql else "--where"

    @property
    def name(self) -> str:
        """The URIs, for messages, each spelled as messages name a file whichever way it was
        given (:func:`~sparkrank.io.uri.display_name`: a local path absolute; a glob with a
        scheme as given, since ``?`` would read as a URI query)."""
        return ", ".join(u if U.has_scheme(u) and U.has_glob(u) else U.display_name(u) for u in self.uris)

    # -- Spark ------------------------------------------------------------------------------
    def dataframe(self, spark):
        """``(DataFrame, Columns)`` ready for a :class:`~sparkrank.engines.spark.SparkEngine`."""
        from ..spark.io import Columns

        options = {"line_separator": self.line_separator} if self.line_separator else {}
        df = get_format(self.format).read_spark(spark, [U.for_spark(u) for u in self.uris], **options)
        return prepare_frame(df, self.columns, self.where, where=f"{self.name}: ", where_sql=self.where_sql,
                             svmlight=self.format == "svmlight", text_types=self.format in ("csv", "tsv")), Columns(
            self.columns.label, self._group_name(df.columns), _features_name(self.columns))

    def local_parquet_files(self) -> list[str] | None:
        """The local paths of this Parquet input's files when Spark would read them as they
        are (no ``--where``, no assembled features or combined group columns), for blocks
        read straight from the files (:mod:`sparkrank.spark.parquet_blocks`); else ``None``."""
        if self.format != "parquet" or self.where or self.columns.feature_cols or len(self.columns.group) != 1:
            return None
        paths = [U.local_path(entry.path) for entry in self.files]
        return None if not paths or None in paths else paths

    def _group_name(self, names) -> str | None:
        if self.format == "svmlight" and self.columns.group == ("qid",) and "qid" not in names:
            return None
        return self.columns.group_name

    # -- in-process ---------------------------------------------------------------------------
    def ranking_data(self, *, n_features: int | None = None, dtype: type = np.float64,
                     drop_invalid_rows: bool = False, threads: int = 1) -> RankingData:
        """The rows as a :class:`RankingData` (read in this process; local paths only; SVMlight
        text is parsed on ``threads`` threads)."""
        paths = [self._local_path(u) for u in self.uris]
        fmt = get_format(self.format)
        if not fmt.local:
            raise ValueError(f"{self.name}: {self.format} input needs the Spark engine (--engine spark)")
        if self.where_sql:
            raise ValueError(refuse_where_sql_locally(self.where))
        if self.format == "svmlight":
            return self._svmlight_data(n_features, dtype, threads)
        from ..data.arrow import RowError
        from ..data.table import ranking_data_from_table
        from .where import cannot_read, read_arrow, to_arrow_filter

        dataset = fmt.local_dataset(paths)
        names = dataset.schema.names
        where = f"{self.name}: "
        self.columns.check(names, where)
        meta = dataset.schema.metadata or {}
        stored_n = int(meta[b"sparkrank.n_features"]) if b"sparkrank.n_features" in meta else None
        read = dict(n_features=n_features, stored_n_features=stored_n, dtype=dtype,
                    drop_invalid_rows=drop_invalid_rows)
        if self.format == "parquet":
            flt = None if not self.where else to_arrow_filter(self.where, dataset.schema, where)
            data = _parquet_batch_by_batch(dataset, self.columns, flt, self.where, where, read)
            if data is not None:
                return data
        try:
            table, flt = read_arrow(dataset, self.where, where)
        except Exception as exc:  # pyarrow's errors: a filter's types, a CSV value its column's type cannot hold
            if type(exc).__module__.startswith("pyarrow"):
                raise DataError(cannot_read(self.name, self.where, exc)) from None
            raise
        try:
            return ranking_data_from_table(table, self.columns, where=where, **read)
        except RowError as exc:
            raise DataError(_row_in_its_file(dataset, flt, self.columns, read) or str(exc)) from None

    #: The largest file (all files, for SVMlight, whose reader takes them together) that the Spark
    #: engine's error path reads again in this process to name a bad row as the local engine
    #: does; beyond it the driver's memory is at risk, and a Spark job looks instead (Parquet) or
    #: the blocks' own wording stays (:mod:`sparkrank.spark.locate`).
    LOCATE_IN_PROCESS_BYTES = 1 << 30

    def locate_row(self, dtype: type = np.float64, drop_invalid_rows: bool = False) -> str | None:
        """The local engine's message for this source's bad rows: ``"{file}: row {n}: {detail}"``
        for the first file (in the local reader's order) with a bad row, read in-process and
        checked as a whole, rows counted in their own file before ``--where``, as the local
        engine counts them; ``None`` when it cannot tell.  For the Spark engine's error path
        (:mod:`sparkrank.spark.locate`), in the local reader's order of the files (as given, then
        as found in a directory); local files of up to :attr:`LOCATE_IN_PROCESS_BYTES` only."""
        from .where import to_arrow_filter

        sizes = [entry.size for entry in self.files] or [0]
        if (sum(sizes) if self.format == "svmlight" else max(sizes)) > self.LOCATE_IN_PROCESS_BYTES:
            return None
        if self.format == "svmlight":
            return self._svmlight_error(dtype)
        fmt = get_format(self.format)
        paths = [U.local_path(entry.path) for entry in self.files]
        if not fmt.local or not paths or None in paths:
            return None
        if self.where_sql:
            return None  # Spark SQL: which rows it kept is unknown here
        dataset = fmt.local_dataset(paths)
        try:
            flt = to_arrow_filter(self.where, dataset.schema, "") if self.where else None
        except DataError:
            return None  # a number against a string column, which only Spark evaluates
        read = dict(n_features=None, stored_n_features=None, dtype=dtype, drop_invalid_rows=drop_invalid_rows)
        try:
            return _row_in_its_file(dataset, flt, self.columns, read)
        except Exception:  # noqa: BLE001 - the error being located stays the one reported
            return None

    def _svmlight_error(self, dtype: type) -> str | None:
        """The local reader's message for this SVMlight input read as ``dtype`` (its first bad
        line in file order, named by file and line), or ``None``.  On Spark the text is parsed as
        float64 and a value float32 cannot hold only turns up in a block, among shuffled rows;
        the local reader names its line (``--where``: ``None``, the filtered rows are unknown)."""
        if self.where or any(U.local_path(entry.path) is None for entry in self.files):
            return None
        try:
            self._svmlight_data(None, dtype, threads=1)
        except DataError as exc:
            return str(exc)
        except Exception:  # noqa: BLE001 - the error being located stays the one reported
            return None
        return None

    def _local_path(self, uri: str) -> str:
        path = U.local_path(uri)
        if path is None:
            raise ValueError(f"{uri} is not on this machine: the local engine reads local paths and file: URIs; "
                             "use --engine spark (or auto) for Hadoop URIs")
        return path

    def _svmlight_data(self, n_features, dtype, threads: int) -> RankingData:
        from ..data.svmlight import parse_svmlight_bytes, read_svmlight

        group = self.columns.group
        _check_svmlight_group(group, f"{self.name}: ")
        parts, layout = [], None
        for entry in self.files:
            path = self._local_path(entry.path)
            # dense rows when they are smaller than CSR (LETOR text), so memory stays low
            read = dict(n_features=n_features, dtype=dtype, threads=threads, qid_layout=layout, layout="auto")
            if path.lower().endswith(".bz2"):
                part = parse_svmlight_bytes(decompressed(LOCAL.read_bytes(path)), name=U.display_name(path), **read)
            else:
                part = read_svmlight(path, name=U.display_name(path), **read)
            # The first data line of the first file fixes the qid rule of every file, as on
            # Spark (spark/svmlight.py): a later file breaking it fails on its own line.
            layout = layout or part.qid_layout
            parts.append(part)
        X, labels, qid = _stack_svmlight(parts)
        names = svmlight_columns(qid is not None)  # checked as on Spark, e.g. --feature-cols: there are none
        _svmlight_column_spec(self.columns, names, f"{self.name}: ").check(names, f"{self.name}: ")
        if not group:
            qid = None
        if self.where:
            X, labels, qid = _filter_arrays(X, labels, qid, self.where, f"{self.name}: ")
        return RankingData.from_arrays(X, labels, qid, dtype=dtype, n_features=n_features, layout="auto")


def _parquet_batch_by_batch(dataset, columns: ColumnSpec, flt, where_filter: str | None, where: str,
                            read: dict) -> RankingData | None:
    """Local Parquet read batch by batch into the final arrays (:mod:`sparkrank.data.parquet_rows`),
    or ``None`` when that reader leaves the input to the whole-table path (bad data: that path
    names the file and row; or a case it does not handle).  The caller reads the table only
    after this returned, when the batch reader's arrays are gone."""
    from ..data.parquet_rows import CannotStream, read_parquet_rows
    from .where import filter_columns

    try:
        return read_parquet_rows(dataset, columns, flt=flt, where=where, **read,
                                 filter_columns=filter_columns(where_filter, dataset.schema.names) if where_filter else ())
    except CannotStream as exc:
        log.debug("%sread as one table: %s", where, exc)
        return None


def _row_in_its_file(dataset, flt, columns: ColumnSpec, read: dict) -> str | None:
    """``"{file}: row {n}: {detail}"`` for the first bad row of a local Arrow dataset, ``n``
    counted in its own file before ``--where`` (as Spark's ``_metadata.row_index``, so both
    engines name the same file and row; see :mod:`sparkrank.spark.locate`).  Runs only on
    the error path: each file is read again, in the order the dataset concatenated them."""
    import pyarrow.dataset as ds

    children = dataset.children if isinstance(dataset, ds.UnionDataset) else [dataset]
    # the rows --drop-invalid-rows drops were counted in the log already: not again per file
    with _log_held_back():
        return _first_bad_row(children, flt, columns, read)


@contextmanager
def _log_held_back():
    """sparkrank's log off for the block (a second reading's messages said already)."""
    logger = logging.getLogger("sparkrank")
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


def _first_bad_row(children, flt, columns: ColumnSpec, read: dict) -> str | None:
    """:func:`_row_in_its_file` over the datasets ``children`` (their files in order)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from ..data.arrow import RowError
    from ..data.table import ranking_data_from_table

    for child in children:
        for fragment in child.get_fragments(filter=flt):
            table = fragment.to_table(schema=child.schema)
            table = table.append_column("__sparkrank_row", pa.array(np.arange(table.num_rows)))
            if flt is not None:
                table = ds.dataset(table).to_table(filter=flt)
            name = U.display_name(fragment.path)
            try:
                ranking_data_from_table(table, columns, where=f"{name}: ", **read)
            except RowError as exc:
                row = table.column('__sparkrank_row')[exc.row].as_py()
                return f"{name}: row {row}{_line_of_record(child, fragment.path, row)}: {exc.detail}"
            except DataError:
                return None
    return None


def _line_of_record(dataset, path: str, row: int) -> str:
    """`` (line L)`` for data record ``row`` of a CSV/TSV file (a quoted field may span lines,
    so its row, a record number, is not its line), else ``""``."""
    import pyarrow.dataset as ds

    if not isinstance(dataset.format, ds.CsvFileFormat):
        return ""
    line = record_start_line(path, dataset.format.parse_options.delimiter, row)
    return "" if line is None else f" (line {line})"


def _features_name(columns: ColumnSpec) -> str:
    return FEATURES_FROM_COLUMNS if columns.feature_cols else columns.features


#: The array column assembled from ``feature_cols`` (a name no user column has).
FEATURES_FROM_COLUMNS = "__sparkrank_features"


def _text_columns_not_numeric(df, names: list[str]) -> set[str]:
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


def _text_number(name: str):
    """The Spark column of CSV string field ``name`` as the in-process reader reads it, when
    every value is a number to it (:func:`_text_columns_not_numeric` says which are not):
    doubles, so that a bad value (``nan``) is then found and named by its row as in-process."""
    from pyspark.sql import functions as F

    trimmed = F.trim(F.col(f"`{name}`"))
    # Spark's cast takes every such number but a signed nan (a Column, not SQL text: a column
    # name from a file's header never reaches Spark's SQL parser)
    return F.when(F.lower(trimmed).rlike("^[+-]nan$"), F.lit(float("nan"))).otherwise(trimmed.try_cast("double"))


def prepare_frame(df, columns: ColumnSpec, where_filter: str | None, *, where: str = "", where_sql: bool = False,
                  svmlight: bool = False, text_types: bool = False):
    """``df`` filtered by ``where_filter`` (the ``--where`` grammar, or Spark SQL when
    ``where_sql``), checked against ``columns``, with ``feature_cols`` assembled into one array
    column and several group columns combined.  ``text_types``: the column types were inferred
    from text (CSV), where a string feature column may still hold numbers to the in-process
    reader (:func:`_text_number`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, NumericType, StringType

    if where_filter:
        df = _filtered(df, where_filter, where, where_sql)
    names = df.columns
    check = _svmlight_column_spec(columns, names, where) if svmlight else columns
    check.check(names, where)
    types = {f.name: f.dataType for f in df.schema.fields}
    text = []  # CSV string columns that may still be numbers to the in-process reader
    if text_types:
        wanted = ([columns.label] if columns.labels else []) + list(columns.feature_cols)
        text = _text_columns_not_numeric(df, [n for n in dict.fromkeys(wanted) if isinstance(types[n], StringType)])
    if columns.labels and not svmlight:
        df = _numeric_labels(df, columns.label, where, text_types and columns.label not in text)
    if columns.feature_cols:
        from ..data.arrow import FEATURE_NAMES_KEY  # here: the in-process path never needs pyarrow's import

        values = []
        for name in columns.feature_cols:  # as data/table.py says it in-process, before any cast fails a job
            if text_types and isinstance(types[name], StringType):
                if name in text:
                    raise DataError(f"{where}feature column {name!r} is not numeric (string)")
                values.append(_text_number(name))
            elif isinstance(types[name], (NumericType, BooleanType)):
                values.append(F.col(f"`{name}`").cast("double"))
            else:
                raise DataError(f"{where}feature column {name!r} is not numeric ({types[name].simpleString()})")
        # the names ride in the column's metadata (as Spark ML's VectorAssembler keeps its
        # attributes there), so a bad value's message names its column (spark.io.feature_spec)
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
        return df.withColumn(name, _text_number(name))
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


def svmlight_columns(has_qid: bool) -> list[str]:
    """The columns of SVMlight rows (as :func:`~sparkrank.spark.svmlight.read_svmlight_dataframe`
    reads them on Spark), for the column messages in-process."""
    return ["label", *(["qid"] if has_qid else []), "indices", "values"]


def _svmlight_column_spec(columns: ColumnSpec, names: Sequence[str], where: str) -> ColumnSpec:
    """The column roles to check against SVMlight rows' column ``names``, on both engines:
    ``columns``, without the group when the rows have no ``qid:`` tokens."""
    _check_svmlight_group(columns.group, where)
    return columns if "qid" in names else replace(columns, group=())


def _check_svmlight_group(group: tuple[str, ...], where: str) -> None:
    """SVMlight's group id is its ``qid:`` tokens: only the default or no group applies."""
    if group not in ((), ("qid",)):
        raise DataError(f"{where}SVMlight data keeps its group id in qid: tokens; --qid-col {','.join(group)!r} "
                        "does not apply (use the default, or '' to ignore the qids)")


def _filtered(df, text: str, where: str, sql: bool):
    """``df`` filtered by a ``--where`` (a Column from the grammar: no SQL text reaches Spark)
    or, when ``sql``, a ``--where-sql``."""
    from pyspark.errors import AnalysisException

    from .where import spark_sql_filter, to_spark_filter

    if sql:
        return spark_sql_filter(df, text, where)
    condition = to_spark_filter(text, df, where)
    try:
        return df.filter(condition)
    except AnalysisException as exc:  # types Spark cannot compare (a vector with a number ...)
        raise DataError(f"{where}--where {text!r}: {str(exc).splitlines()[0]}") from None


def refuse_where_sql_locally(text: str | None) -> str:
    """The message of a ``--where-sql`` given to the local engine."""
    return (f"--where-sql {text!r} is Spark SQL, which only the Spark engine evaluates (--engine spark); "
            "--where takes the filter grammar both engines share")


def _stack_svmlight(parts):
    """One ``(X, labels, qid)`` from several parsed SVMlight files (widths padded)."""
    if len(parts) == 1:
        return parts[0].X, parts[0].labels, parts[0].qid
    # All files followed one qid rule (the first file's), so the qid arrays are all present
    # or all absent and of one kind; files without data lines add nothing.
    rows = [p for p in parts if p.labels.shape[0]] or parts[:1]
    width = max(p.X.shape[1] for p in parts)
    if all(isinstance(p.X, np.ndarray) for p in rows):
        X = np.concatenate([np.pad(p.X, ((0, 0), (0, width - p.X.shape[1]))) for p in rows])
    else:
        import scipy.sparse as sp

        X = sp.vstack([sp.csr_matrix(p.X, shape=(p.X.shape[0], width)) if sp.issparse(p.X) else
                       sp.csr_matrix(np.pad(p.X, ((0, 0), (0, width - p.X.shape[1])))) for p in rows], format="csr")
    labels = np.concatenate([p.labels for p in rows])
    qid = None if rows[0].qid is None else np.concatenate([p.qid for p in rows])
    return X, labels, qid


def _filter_arrays(X, labels, qid, text: str, where: str):
    """Rows of SVMlight arrays kept by a local ``--where`` over ``label`` and ``qid``."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from .where import to_arrow_filter

    columns = {"label": pa.array(labels)}
    if qid is not None:
        columns["qid"] = pa.array(qid)
    columns["__row"] = pa.array(np.arange(labels.shape[0]))
    table = pa.table(columns)
    flt = to_arrow_filter(text, pa.schema([f for f in table.schema if f.name != "__row"]), where)
    rows = ds.dataset(table).to_table(filter=flt, columns=["__row"]).column(0).to_numpy()
    return X[rows], labels[rows], None if qid is None else qid[rows]


# ----------------------------------------------------------------------------- opening


def open_source(
    uris: str | Sequence[str],
    *,
    format: str = "auto",
    columns: ColumnSpec = ColumnSpec(),
    where: str | None = None,
    where_sql: bool = False,
    spark=None,
) -> Source:
    """Find the data files of ``uris`` and their format.

    Parameters
    ----------
    uris : str or sequence of str
        Local paths, ``sample:NAME``, or Hadoop URIs (``file:``, ``hdfs:``, ``s3a:`` …);
        files, directories (Hive partitions are columns) or glob patterns.
    format : str
        ``auto`` (by file names, else the first bytes: ``PAR1`` is Parquet, anything else
        SVMlight text) or a name in :data:`~sparkrank.io.formats.FORMATS`.
    columns : ColumnSpec
    where : str, optional
        Row filter (see :class:`Source`).
    where_sql : bool
        ``where`` is Spark SQL (``--where-sql``; Spark engine only).
    spark : SparkSession, optional
        The session whose Hadoop ``FileSystem`` serves URIs with a scheme (default: the
        active one, else a new one).  Without it ``file:`` URIs are read as local paths.

    Raises
    ------
    FileNotFoundError
        A path or pattern that matches nothing (the message names it).
    DataError
        An empty directory, or files of different formats in one input.
    ValueError
        An unknown or unavailable ``format``.
    """
    if isinstance(uris, str):
        uris = [uris]
    uris = tuple(U.resolve_sample(u) for u in uris)
    if not uris:
        raise ValueError("no input given")
    if format != "auto":
        get_format(format)
    files: list[FileEntry] = []
    found: dict[str, FileEntry] = {}
    for uri in uris:
        fs = _fs_for(uri, spark)
        entries, fmt = _detect(fs, uri, format)
        for entry in entries:
            found.setdefault(fmt, entry)
        files += entries
    if len(found) > 1:
        kinds = ", ".join(f"{fmt} ({entry.path})" for fmt, entry in found.items())
        raise DataError(f"inputs {', '.join(uris)} are of different formats: {kinds}; give one format per command")
    fmt = format if format != "auto" else next(iter(found))
    line_separator = None
    if fmt in DELIMITED and files:
        names = header_names(_fs_for(uris[0], spark), files[0].path, fmt)
        if not columns.feature_cols:
            columns = _default_feature_cols(names, files[0].path, columns)
        line_separator = _line_separator(files, spark)
    return Source(uris, fmt, columns, where or None, tuple(files), where_sql=bool(where) and where_sql,
                  line_separator=line_separator)


#: Text formats with a header row of column names, and their delimiters.
DELIMITED = {"csv": ",", "tsv": "\t"}
#: The most of a file's first bytes read for its header row.
HEADER_BYTES = 1 << 20


def header_names(fs: FileSystem, path: str, fmt: str) -> list[str] | None:
    """The column names of a CSV/TSV file's header row (``None`` when it is not text).

    A name given twice is a :class:`DataError` here, for both engines alike: pyarrow refuses
    the file in its own words, and Spark renames each of the duplicates after its position
    (``f1`` at positions 2 and 3 become ``f12`` and ``f13``), which can collide with a real
    ``f12`` or train on other columns than asked."""
    import csv
    import io

    head = decompressed_head(fs.read_bytes(path, HEADER_BYTES))
    end = first_record_end(head)  # a quoted name may hold a line break; records may end in CR only
    first = head[:end[0] if end else len(head)]
    try:
        names = next(csv.reader(io.StringIO(first.decode("utf-8-sig")), delimiter=DELIMITED[fmt]), [])
    except UnicodeDecodeError:
        return None  # not text: the column check names what is missing
    if not names:
        raise DataError(f"{U.display_name(path)}: the file is empty: no header row")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataError(f"{U.display_name(path)}: the header row names column {name!r} twice")
        seen.add(name)
    return names


#: At most this many CSV/TSV files have their record terminator read (the first
#: :data:`TERMINATOR_BYTES` of each), for :func:`_line_separator`.
TERMINATOR_FILES, TERMINATOR_BYTES = 100, 1 << 16


def _line_separator(files, spark) -> str | None:
    """The record terminator every CSV/TSV file of an input ends its first record with, for
    Spark's reader (:meth:`~sparkrank.io.formats.DelimitedFormat.read_spark`); ``None`` (Spark
    detects it per file) when they differ, cannot be told, or there are more than
    :data:`TERMINATOR_FILES` files."""
    if len(files) > TERMINATOR_FILES:
        log.info("%d CSV/TSV files: Spark detects each file's line ends (a quoted CR LF in a file of CR LF lines "
                 "reads as LF there)", len(files))
        return None
    found = set()
    for entry in files:
        end = first_record_end(decompressed_head(_fs_for(entry.path, spark).read_bytes(entry.path, TERMINATOR_BYTES)))
        found.add(end[1] if end else None)
    return found.pop() if len(found) == 1 else None


def _default_feature_cols(names: list[str] | None, path: str, columns: ColumnSpec) -> ColumnSpec:
    """CSV/TSV without ``feature_cols``: every column of the first file's header row ``names``
    other than the label and the group columns, in header order (Hive partition columns come
    from the directory names, not the header, so they are never features).  Decided here, once,
    so both engines read the same columns and a model trained on them remembers them."""
    roles = {columns.label, *columns.group}
    features = tuple(n for n in names or () if n not in roles)
    if not features:
        return columns
    shown = ", ".join(features[:8]) + (f", … ({len(features)} columns)" if len(features) > 8 else "")
    log.info("%s: the features are every column but the label and the group id: %s (--feature-cols chooses)",
             U.display_name(path), shown)
    return replace(columns, feature_cols=features)


def _fs_for(uri: str, spark) -> FileSystem:
    if not U.has_scheme(uri):
        return LOCAL
    if spark is None and U.scheme(uri) == "file":
        return FileUriFileSystem()
    from .fs import active_or_new_session

    return HadoopFileSystem(spark if spark is not None else active_or_new_session())


def _detect(fs: FileSystem, uri: str, requested: str) -> tuple[list[FileEntry], str]:
    """The data files of one URI and their format (``requested`` unless ``auto``)."""
    if U.has_glob(uri):
        matches = fs.glob(uri)
        if not matches:
            raise FileNotFoundError(f"input {uri} matches no files")
    else:
        if not fs.exists(uri):
            raise FileNotFoundError(f"input {uri} does not exist")
        matches = [uri]
    if requested == "delta" or (requested == "auto" and _is_delta(fs, matches)):
        if "delta" not in FORMATS:
            get_format("delta")
        return [], "delta"
    entries = [e for m in matches for e in fs.list_files(m)]
    if not entries:
        raise DataError(f"input {uri} is an empty directory (no data files; names starting with _ or . are skipped)")
    if requested != "auto":
        return entries, requested
    kinds: dict[str, FileEntry] = {}
    for e in entries:
        fmt = format_by_suffix(U.basename(e.path)) or format_by_magic(fs.read_bytes(e.path, 4))
        kinds.setdefault(fmt, e)
    if len(kinds) > 1:
        listing = "; ".join(f"{fmt}: {e.path}" for fmt, e in kinds.items())
        raise DataError(f"input {uri} mixes formats ({listing}); give a directory of one format or --format")
    return entries, next(iter(kinds))


def _is_delta(fs: FileSystem, matches: list[str]) -> bool:
    return len(matches) == 1 and fs.is_dir(matches[0]) and fs.exists(U.join(matches[0], "_delta_log"))


@dataclass(frozen=True)
class FrameSource:
    """An existing Spark DataFrame as a source (``LinearRanker.fit``, ``tune`` on DataFrames):
    the same column checks and preparation as :meth:`Source.dataframe`."""

    df: object
    columns: ColumnSpec = ColumnSpec()
    where: str | None = None

    @property
    def name(self) -> str:
        return "DataFrame"

    def dataframe(self, spark=None):
        from ..spark.io import Columns

        df = prepare_frame(self.df, self.columns, self.where)
        return df, Columns(self.columns.label, self.columns.group_name, _features_name(self.columns))
