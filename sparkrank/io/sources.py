"""One place that turns "an input and its columns" into data: :func:`open_source`.

A :class:`Source` is URIs + a resolved format + the column roles (:class:`ColumnSpec`) + an
optional row filter.  It gives

* :meth:`Source.dataframe` — a Spark DataFrame (read on the executors, ``--where`` pushed
  into the scan, named feature columns assembled, a multi-column group id combined) and
  the :class:`~sparkrank.io.spark.columns.Columns` to train on;
* :meth:`Source.ranking_data` — a local :class:`~sparkrank.data.block.RankingData`.

Every decision that depends on the format is the format's
(:class:`~sparkrank.io.formats.base.Format`): a source only holds one and asks it.

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
from dataclasses import dataclass, field, replace
from typing import Sequence

from ..data.block import DataError, RankingData
from ..data.weights import WeightColumns
from ..defaults import DTYPE, THREADS
from . import uri as U
from .formats.base import Format
from .formats.registry import FORMATS, get_format, format_by_magic, format_by_suffix
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
    weights : WeightColumns
        The row-weight and group-weight columns, if any (:mod:`sparkrank.data.weights`).
    """

    label: str = "label"
    group: tuple[str, ...] = ("qid",)
    features: str = "features"
    feature_cols: tuple[str, ...] = ()
    labels: bool = True
    weights: WeightColumns = WeightColumns()

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
        wanted += [("weight", c) for c in self.weights.columns]
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
    format : Format
        The input's format (:mod:`sparkrank.io.formats`), which every format-dependent step asks.
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
    not_data : tuple of str
        Files of the input's directories that are not its data but that Spark's and pyarrow's
        own listings would read: skipped by name (:func:`~sparkrank.io.uri.skipped_name`: a
        ``README``), or named for another format than ``--format``'s; see :meth:`read_uris`.
    """

    uris: tuple[str, ...]
    format: Format
    columns: ColumnSpec = ColumnSpec()
    where: str | None = None
    files: tuple[FileEntry, ...] = field(default=(), repr=False)
    where_sql: bool = False
    line_separator: str | None = None
    not_data: tuple[str, ...] = ()

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
        from .spark.columns import Columns
        from .spark.frames import features_name

        options = {"line_separator": self.line_separator} if self.line_separator else {}
        uris, base = self.read_uris()
        if base is not None:
            options["base_path"] = U.for_spark(base)
        df = self.format.read_spark(spark, [U.for_spark(u) for u in uris], **options)
        df = self.format.prepare_spark(df, self.columns, self.where, f"{self.name}: ", where_sql=self.where_sql)
        return df, Columns(self.columns.label, self.format.group_column(self.columns, df.columns),
                           features_name(self.columns))

    def fixed_width(self, names: Sequence[str] | None = None) -> bool:
        """Whether the rows are of a fixed width (:meth:`~sparkrank.io.formats.base.Format.fixed_width`):
        ``names`` are the columns of the input's frame, else those of its local dataset's schema."""
        if names is None:  # the Arrow formats' schema; other formats have no columns to ask
            names = self.local_dataset().schema.names if hasattr(self.format, "local_dataset") else ()
        return self.format.fixed_width(self.columns, names)

    def local_parquet_files(self) -> list[str] | None:
        """Local files whose row groups the Spark engine's blocks may read as they are
        (:meth:`~sparkrank.io.formats.base.Format.row_group_files`), else ``None``."""
        return self.format.row_group_files(self)

    # -- in-process ---------------------------------------------------------------------------
    def ranking_data(self, *, n_features: int | None = None, dtype: type = DTYPE,
                     drop_invalid_rows: bool = False, threads: int | None = THREADS) -> RankingData:
        """The rows as a :class:`RankingData` (read in this process; local paths only; SVMlight
        text is parsed on ``threads`` threads)."""
        if self.format.local and self.where_sql:
            raise ValueError(refuse_where_sql_locally(self.where))
        if self.columns.weights and not self.format.reads_weights:  # rows, then weights (io/weight_columns.py)
            local_dataset = getattr(self.format, "local_dataset", None)  # columnar formats (Arrow datasets)
            if local_dataset is None:
                raise DataError(f"{self.name}: {self.format.name} input has no weight columns (--weight-col, "
                                "--group-weight-col); convert it to Parquet with a weight column")
            from .weight_columns import with_weight_columns

            data = replace(self, columns=replace(self.columns, weights=WeightColumns())).ranking_data(
                n_features=n_features, dtype=dtype, drop_invalid_rows=drop_invalid_rows, threads=threads)
            return with_weight_columns(data, self.local_dataset(), self, drop_invalid_rows=drop_invalid_rows)
        return self.format.read_local(self, n_features=n_features, dtype=dtype,
                                      drop_invalid_rows=drop_invalid_rows, threads=threads)

    def data_shape(self, itemsize: int):
        """What the input's local files hold, told before they are read (the memory model's
        :class:`~sparkrank.data.memory.DataShape`: Parquet footers, a sample of SVMlight text), or
        ``None`` when that cannot be told (other formats, remote files, compressed text)."""
        files = [(U.local_path(entry.path), entry.size) for entry in self.files]
        if not files or any(path is None for path, _ in files):
            return None
        try:
            return self.format.data_shape(files, self.columns, itemsize)
        except (OSError, ValueError):  # not readable or not as expected: the read says why
            return None

    #: The largest file (all files, for SVMlight, whose reader takes them together) that the Spark
    #: engine's error path reads again in this process to name a bad row as the local engine
    #: does; beyond it the driver's memory is at risk, and a Spark job looks instead (Parquet) or
    #: the blocks' own wording stays (:mod:`sparkrank.engines.spark.locate`).
    LOCATE_IN_PROCESS_BYTES = 1 << 30

    def locate_row(self, dtype: type = DTYPE, drop_invalid_rows: bool = False) -> str | None:
        """The local engine's message for this source's bad rows: ``"{file}: row {n}: {detail}"``
        for the first file (in the local reader's order) with a bad row, read in-process and
        checked as a whole, rows counted in their own file before ``--where``, as the local
        engine counts them; ``None`` when it cannot tell.  For the Spark engine's error path
        (:mod:`sparkrank.engines.spark.locate`), in the local reader's order of the files (as given, then
        as found in a directory); local files of up to :attr:`LOCATE_IN_PROCESS_BYTES` only."""
        if self.format.locate_bytes([entry.size for entry in self.files] or [0]) > self.LOCATE_IN_PROCESS_BYTES:
            return None
        return self.format.locate_row(self, dtype=dtype, drop_invalid_rows=drop_invalid_rows)

    def local_paths(self) -> list[str]:
        """The input's URIs as local paths (an error for one that is not on this machine)."""
        return [self.local_path(u) for u in self.uris]

    def read_uris(self) -> tuple[list[str], str | None]:
        """``(uris, base)``: what a reader of a whole input is given.  The input's URIs, or, when
        one of its directories holds files that are not data but that Spark's and pyarrow's
        listings would read (:attr:`not_data`: a ``README``, ``x.crc``), its data files, with the
        directory as the base of their Hive partitions (``base``; one directory given)."""
        if not self.not_data:
            return list(self.uris), None
        single = len(self.uris) == 1 and not U.has_glob(self.uris[0])
        return [entry.path for entry in self.files], self.uris[0] if single else None

    def local_dataset(self):
        """The Arrow formats' ``pyarrow.dataset`` of this input's local files (:meth:`read_uris`:
        the input's paths, or one list of its data files under the base of their Hive partitions)."""
        if not self.not_data:  # a format's local_dataset(paths) as every format takes it
            return self.format.local_dataset(self.local_paths())
        uris, base = self.read_uris()
        return self.format.local_dataset([[self.local_path(u) for u in uris]],
                                         None if base is None else self.local_path(base))

    @staticmethod
    def local_path(uri: str) -> str:
        """``uri`` as a local path, or a ``ValueError`` saying the local engine cannot read it."""
        path = U.local_path(uri)
        if path is None:
            raise ValueError(f"{uri} is not on this machine: the local engine reads local paths and file: URIs; "
                             "use --engine spark (or auto) for Hadoop URIs")
        return path


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
        SVMlight text) or a name in :data:`~sparkrank.io.formats.registry.FORMATS`.
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
    if spark is not None:  # a session handed in: its executors get their Python as get_session's do
        from .spark.executors import prepare_executors

        prepare_executors(spark)
    files: list[FileEntry] = []
    not_data: list[str] = []
    found: dict[str, tuple[Format, FileEntry | None]] = {}
    for uri in uris:
        entries, fmt = _detect(_fs_for(uri, spark), uri, format, not_data)
        for entry in entries or [None]:
            if entry is not None or fmt.name not in found:
                found[fmt.name] = found.get(fmt.name) or (fmt, entry)
        files += entries
    if len(found) > 1:
        kinds = ", ".join(f"{name} ({entry.path})" for name, (_, entry) in found.items())
        raise DataError(f"inputs {', '.join(uris)} are of different formats: {kinds}; give one format per command")
    fmt = next(iter(found.values()))[0]
    columns = fmt.columns_for(_fs_for(uris[0], spark), files, columns)
    line_separator = fmt.line_separator(files, lambda path: _fs_for(path, spark))
    return Source(uris, fmt, columns, where or None, tuple(files), where_sql=bool(where) and where_sql,
                  line_separator=line_separator, not_data=tuple(not_data))


def refuse_where_sql_locally(text: str | None) -> str:
    """The message of a ``--where-sql`` given to the local engine."""
    return (f"--where-sql {text!r} is Spark SQL, which only the Spark engine evaluates (--engine spark); "
            "--where takes the filter grammar both engines share")


def _fs_for(uri: str, spark) -> FileSystem:
    if not U.has_scheme(uri):
        return LOCAL
    if spark is None and U.scheme(uri) == "file":
        return FileUriFileSystem()
    from .fs import active_or_new_session

    return HadoopFileSystem(spark if spark is not None else active_or_new_session())


def _detect(fs: FileSystem, uri: str, requested: str, not_data: list[str]) -> tuple[list[FileEntry], Format]:
    """The data files of one URI and their format (``requested`` unless ``auto``); ``not_data``
    collects the skipped files that the readers' own listings would read."""
    if U.has_glob(uri):
        matches = fs.glob(uri)
        if not matches:
            raise FileNotFoundError(f"input {uri} matches no files")
    else:
        if not fs.exists(uri):
            raise FileNotFoundError(f"input {uri} does not exist")
        matches = [uri]
    table = _table_format(fs, matches, requested)
    if table is not None:
        return [], table
    entries = [e for m in matches for e in fs.list_files(m, not_data)]
    if not entries:
        raise DataError(f"input {uri} is an empty directory (no data files; names starting with _ or . are skipped)")
    if requested != "auto":
        return _of_format(uri, entries, requested, not_data), get_format(requested)
    kinds: dict[str, tuple[Format, FileEntry]] = {}
    for e in entries:
        fmt = format_by_suffix(U.basename(e.path)) or format_by_magic(fs.read_bytes(e.path, 4))
        kinds.setdefault(fmt.name, (fmt, e))
    if len(kinds) > 1:
        raise DataError(mixed_formats_message(uri, {name: e for name, (_, e) in kinds.items()}))
    return entries, next(iter(kinds.values()))[0]


def _of_format(uri: str, entries: list[FileEntry], requested: str, not_data: list[str]) -> list[FileEntry]:
    """The files of one input that ``--format requested`` reads: all but those whose names say
    another format (``a.txt`` beside ``b.parquet``), which go to ``not_data`` (the readers are
    then given the files, :meth:`Source.read_uris`)."""
    if len(entries) == 1 and U.basename(entries[0].path) == U.basename(uri.rstrip("/")):
        return entries  # a file named on the command line is read as --format says, whatever its name
    others = {}
    for e in entries:
        fmt = format_by_suffix(U.basename(e.path))
        if fmt is not None and fmt.name != requested:
            others.setdefault(fmt.name, []).append(e)
    if not others:
        return entries
    kept = [e for e in entries if all(e not in group for group in others.values())]
    listing = "; ".join(f"{len(group)} {name} ({group[0].path}{', ...' if len(group) > 1 else ''})"
                        for name, group in others.items())
    if not kept:
        raise DataError(f"input {uri} has no {requested} files (--format {requested}): it holds {listing}")
    log.info("input %s: --format %s reads its %d %s files and skips the files of other formats: %s",
             uri, requested, len(kept), requested, listing)
    not_data.extend(e.path for group in others.values() for e in group)
    return kept


def _table_format(fs: FileSystem, matches: list[str], requested: str) -> Format | None:
    """The table format (Delta) ``matches`` are one table of, or ``None`` for files."""
    if requested != "auto":
        fmt = get_format(requested)
        return fmt if fmt.tables else None
    return next((fmt for fmt in FORMATS.values() if fmt.tables and fmt.is_table(fs, matches)), None)


def mixed_formats_message(uri: str, kinds: dict) -> str:
    """Files of several formats in one input, and what works: ``--format`` reads one format's
    files of it (:func:`_of_format`)."""
    listing = "; ".join(f"{fmt}: {e.path}" for fmt, e in kinds.items())
    choices = " or ".join(f"--format {fmt}" for fmt in kinds)
    return f"input {uri} mixes formats ({listing}); give {choices} to read only the files of that format"


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
        from .spark.columns import Columns
        from .spark.frames import features_name, prepare_frame

        df = prepare_frame(self.df, self.columns, self.where)
        return df, Columns(self.columns.label, self.columns.group_name, features_name(self.columns))
