"""What a format is: :class:`Format`, the one object each input or output format is.

A format owns every decision that depends on it, so no caller tests a format's name:

* its file names (:attr:`Format.suffixes`, looked for under a compression suffix too) and first bytes
  (:attr:`Format.magic`), and the names it writes (:attr:`Format.output_suffixes`);
* how Spark reads it (:meth:`Format.read_spark`, :meth:`Format.prepare_spark`) and how this
  process reads it (:meth:`Format.read_local`), column roles included
  (:meth:`Format.columns_for`, :meth:`Format.group_column`);
* how a bad row is named again on Spark's error path (:meth:`Format.locate_row`);
* how data is written (:meth:`Format.write_local`, :meth:`Format.write_spark`).

A new format is one subclass (in its own module when it needs a parser) and one entry in
:data:`~sparkrank.io.formats.registry.FORMATS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence



@dataclass(frozen=True)
class Format:
    """One input (and output) format.

    Attributes
    ----------
    name : str
    suffixes : tuple of str
        File name endings that identify an input of this format (lower case).
    local : bool
        Whether this process can read it without Spark.
    magic : bytes, optional
        The first bytes of its files, when they identify it.
    memory_expansion : float
        In-memory bytes per on-disk byte of an uncompressed file (``--engine auto``'s estimate).
    output_suffixes : tuple of str
        File name endings ``convert`` writes in this format.
    """

    name: str
    suffixes: tuple[str, ...] = ()
    local: bool = True
    magic: bytes | None = None
    memory_expansion: float = 4.0
    output_suffixes: tuple[str, ...] = ()
    #: Whether its own reader (``read_local``) reads the weight columns: SVMlight's ``cost:``
    #: tokens; other formats' weight columns are read beside the rows (``io/weight_columns.py``).
    reads_weights: ClassVar[bool] = False

    # -- names ---------------------------------------------------------------------------------
    def writes(self, name: str) -> bool:
        """Whether ``convert`` writes an output of this file name in this format (by the text
        after its last dot, the whole name when it has none)."""
        return name.lower().rsplit(".", 1)[-1] in (s.lstrip(".") for s in self.output_suffixes)

    @property
    def tables(self) -> bool:
        """Whether an input of this format is a table (a directory read as a whole), not files."""
        return False

    def is_table(self, fs, matches: list[str]) -> bool:
        """Whether ``matches`` (one input's paths) are one table of this format."""
        return False

    @property
    def spark_only_reason(self) -> str:
        """Why ``--engine auto`` picks Spark for this format (one that this process cannot read)."""
        return f"{self.name} input is read by Spark"

    # -- Spark -------------------------------------------------------------------------------------
    def read_spark(self, spark, uris: list[str], base_path: str | None = None):
        """A DataFrame of all ``uris`` (files, directories or globs); ``base_path``: the directory
        whose Hive partitions the files given are in (:meth:`~sparkrank.io.sources.Source.read_uris`)."""
        raise TypeError(f"{self.name} has no Spark reader")

    def prepare_spark(self, df, columns, where_filter: str | None, where: str, where_sql: bool = False):
        """``df`` filtered (the ``--where`` grammar, or Spark SQL when ``where_sql``) and its column
        roles checked and assembled (:func:`sparkrank.io.spark.frames.prepare_frame`)."""
        from ..spark.frames import prepare_frame

        return prepare_frame(df, columns, where_filter, where=where, where_sql=where_sql)

    def line_separator(self, files, fs_for) -> str | None:
        """The record terminator all ``files`` share, for Spark's reader (``fs_for(path)`` reads
        a file), or ``None`` when the format has none or Spark detects it."""
        return None

    def fixed_width(self, columns, names: Sequence[str]) -> bool:
        """Whether rows of this format with the frame's column ``names`` are of a fixed width: the
        features are named columns or one vector/list column (not an ``indices``/``values`` pair,
        whose omitted features are zeros)."""
        return bool(columns.feature_cols) or columns.features in names

    def group_column(self, columns, names: Sequence[str]) -> str | None:
        """The group column to train on among the frame's column ``names``."""
        return columns.group_name

    # -- this process --------------------------------------------------------------------------------
    def data_shape(self, files: list[tuple[str, int]], columns, itemsize: int):
        """What local ``files`` (``(path, size)``) hold, told before they are read (the memory
        model's :class:`~sparkrank.data.memory.DataShape`), or ``None`` when the format cannot
        tell."""
        return None

    def columns_for(self, fs, files, columns):
        """The column roles of an input of this format (``files``, read through ``fs``):
        ``columns``, completed from the data where the format says how (a header row)."""
        return columns

    def read_local(self, source, *, n_features: int | None, dtype: type, drop_invalid_rows: bool,
                   threads: int):
        """``source``'s rows as a :class:`~sparkrank.data.block.RankingData`, read in this process."""
        raise ValueError(f"{source.name}: {self.name} input needs the Spark engine (--engine spark)")

    def locate_bytes(self, sizes: Sequence[int]) -> int:
        """How many bytes :meth:`locate_row` reads again for files of ``sizes`` (the largest file:
        files are checked one at a time)."""
        return max(sizes)

    def locate_row(self, source, *, dtype: type, drop_invalid_rows: bool) -> str | None:
        """The local engine's message for ``source``'s first bad row, found again in this
        process, or ``None`` when it cannot tell (Spark's error path; see
        :meth:`sparkrank.io.sources.Source.locate_row`)."""
        return None

    def row_group_files(self, source) -> list[str] | None:
        """Local files whose row groups Spark's blocks may read as they are, or ``None``."""
        return None

    # -- writing ---------------------------------------------------------------------------------------
    def write_local(self, path: str, data) -> None:
        """Write ``data`` (a :class:`~sparkrank.data.block.RankingData`, rows in input order) to
        the path or URI ``path``, atomically."""
        raise ValueError(f"{self.name} is not written by sparkrank")

    @property
    def writes_on_spark(self) -> bool:
        """Whether :meth:`write_spark` writes a DataFrame on the executors."""
        return False

    def write_spark(self, df, path: str, *, mode: str, partition_by: Sequence[str] = ()) -> None:
        """Write a prepared DataFrame from the executors."""
        raise ValueError(f"{self.name} is not written on Spark")

