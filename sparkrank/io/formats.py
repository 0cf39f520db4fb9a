"""Input formats, registered by name like the solvers in :data:`sparkrank.solvers.registry.SOLVERS`.

A format knows how to recognise its files and how to read a list of URIs into a Spark
DataFrame (on the executors) or into an Arrow table / arrays in this process.  Adding a
format is one :class:`Format` subclass plus one line in :data:`FORMATS`.

=========  ===================================================  ======================
name       files                                                read in-process by
=========  ===================================================  ======================
parquet    ``*.parquet``, ``*.pq`` or starting with ``PAR1``;   ``pyarrow.dataset``
           directories, Hive partitions (``day=…/``)
svmlight   SVMlight/LETOR text; ``.gz`` / ``.bz2`` compressed   the numba parser
csv, tsv   a header row with column names; ``.gz`` / ``.bz2``      ``pyarrow.dataset``
           compressed (``train.csv.gz``)
delta      a Delta table (``_delta_log/``); only when the       (Spark only)
           ``delta`` package is importable
=========  ===================================================  ======================
"""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import re
import zlib
from dataclasses import dataclass

from ..data.block import DataError

PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"


#: The numbers pyarrow's CSV reader reads as floats (the in-process engine's reader), as a Java
#: (and Python) regex: decimal and scientific notation, and inf, infinity and nan in any case,
#: signed, with blanks around them.  Spark's CSV schema inference knows only ``Inf``, ``-Inf``
#: and ``NaN`` and leaves a column holding ``inf`` or ``nan`` a string column (see
#: :func:`sparkrank.io.sources._text_number`); its cast of a string to a double takes them all.
TEXT_NUMBER = r"^\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|(?i:inf|infinity|nan))\s*$"


@dataclass(frozen=True)
class Format:
    """One input format.

    Attributes
    ----------
    name : str
    suffixes : tuple of str
        File name endings that identify it (lower case).
    local : bool
        Whether this process can read it without Spark.
    """

    name: str
    suffixes: tuple[str, ...] = ()
    local: bool = True

    def read_spark(self, spark, uris: list[str]):
        """A DataFrame of all ``uris`` (files, directories or globs)."""
        raise TypeError(f"{self.name} has no Spark reader")

    def local_dataset(self, paths: list[str]):
        """A ``pyarrow.dataset.Dataset`` over local ``paths`` (Hive partitions discovered)."""
        raise TypeError(f"{self.name} is not read as an Arrow dataset")


class ParquetFormat(Format):
    def read_spark(self, spark, uris):
        return spark.read.parquet(*uris)

    def local_dataset(self, paths):
        return _arrow_dataset(paths, "parquet")


class SvmlightFormat(Format):
    def read_spark(self, spark, uris):
        from ..spark.io import read_svmlight_dataframe

        return read_svmlight_dataframe(spark, uris[0] if len(uris) == 1 else uris)


class DelimitedFormat(Format):
    """CSV or TSV with a header row; types inferred (numbers become doubles/longs).

    Both engines read RFC 4180 text: a field in double quotes may hold the delimiter, line
    breaks (CR, LF or CR LF, kept as they are) and doubled quotes (``"a"",b"`` is ``a",b``);
    a backslash is an ordinary character; an empty field, quoted or not, is null.  A record
    may so span several lines: rows are counted by record (see :func:`record_start_line`).
    Spark reads each file whole (``multiLine``, a file is not split between tasks)."""

    @property
    def delimiter(self) -> str:
        return "\t" if self.name == "tsv" else ","

    def read_spark(self, spark, uris, line_separator: str | None = None):
        """``line_separator``: the files' record terminator (:func:`record_terminator`).  Given,
        Spark keeps a quoted CR LF as it is; left to Spark's detection, it reads a quoted CR LF
        in a file of CR LF records as LF (the in-process reader keeps CR LF)."""
        options = {"lineSep": line_separator} if line_separator else {}
        return spark.read.csv(list(uris), header=True, inferSchema=True, sep=self.delimiter, multiLine=True,
                              quote='"', escape='"', **options)

    def local_dataset(self, paths):
        import pyarrow.csv as pcsv
        import pyarrow.dataset as ds

        # Spark's CSV conventions, so both engines read the same values: only an empty field is
        # null (pyarrow's default also nulls "NA", "NaN", "null", ...), "NaN" is NaN; RFC 4180
        # quoting as read_spark's options say it
        parse = pcsv.ParseOptions(delimiter=self.delimiter, quote_char='"', double_quote=True, escape_char=False,
                                  newlines_in_values=True)
        fmt = ds.CsvFileFormat(parse_options=parse,
                               convert_options=pcsv.ConvertOptions(null_values=[""], strings_can_be_null=True))
        return _arrow_dataset(paths, fmt)


_RECORD_BYTES = re.compile(rb'["\r\n]')


def first_record_end(head: bytes) -> tuple[int, str] | None:
    """``(offset, terminator)`` of the end of the first record of CSV text ``head``: the first
    CR, LF or CR LF outside double quotes (RFC 4180: a doubled quote inside a quoted field
    toggles twice); ``None`` when ``head`` holds no complete record."""
    quoted = False
    for m in _RECORD_BYTES.finditer(head):
        byte = m.group()
        if byte == b'"':
            quoted = not quoted
        elif not quoted:
            end = m.start()
            if byte == b"\n":
                return end, "\n"
            if end + 1 >= len(head):
                return None  # a CR at the end of what was read: CR or CR LF is unknown
            return end, "\r\n" if head[end + 1:end + 2] == b"\n" else "\r"
    return None


def record_start_line(path: str, delimiter: str, record: int) -> int | None:
    """The 1-based line of a local CSV/TSV file (``.gz``/``.bz2`` decompressed) where data
    record ``record`` (0-based, after the header row) starts, lines ending at LF, CR LF or CR
    as records do; ``None`` when the file has fewer records.  Read again on an error path only
    (Python's csv module, whose RFC 4180 records are pyarrow's and Spark's: blank lines are no
    record)."""
    import csv

    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path[path.rfind("."):].lower(), open)
    limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)  # a quoted field may be long
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
            reader = csv.reader(f, delimiter=delimiter, quotechar='"', doublequote=True, strict=False)
            ended, index = 0, -1  # the line the last record ended on; the header is record -1
            for fields in reader:
                if fields:
                    if index == record:
                        return ended + 1
                    index += 1
                ended = reader.line_num
            return None
    finally:
        csv.field_size_limit(limit)


class DeltaFormat(Format):
    def read_spark(self, spark, uris):
        if len(uris) != 1:
            raise DataError("a Delta input is one table; give one --input")
        return spark.read.format("delta").load(uris[0])


def unreadable_parquet(path: str) -> str:
    """The message of a file read as Parquet that is not one (or is damaged): the same on both
    engines (pyarrow and Spark word it differently)."""
    from .uri import display_name

    return f"{display_name(path)}: not a Parquet file, or a damaged one (its footer cannot be read)"


# pyarrow: "Could not open Parquet input source '<path>': Parquet magic bytes not found in footer"
_PARQUET_WITHOUT_FOOTER = re.compile(r"Could not open Parquet input source '(.+?)': .*(?:magic bytes|footer)", re.S)


def _arrow_dataset(paths: list[str], fmt):
    """One ``pyarrow.dataset.Dataset`` over local ``paths`` (Hive partitions discovered) with
    the schema of :func:`_unified_schema`: pyarrow would otherwise take the first file's types
    for all of them (or refuse to combine several paths' datasets), where Spark reads an
    integer column of one file and a double column of another as doubles.  A file read as
    Parquet that is not one is :func:`unreadable_parquet`."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    def discover(path, schema=None):
        try:
            return ds.dataset(path, format=fmt, partitioning="hive", schema=schema)
        except pa.ArrowInvalid as exc:
            unreadable = _PARQUET_WITHOUT_FOOTER.search(str(exc)) if fmt == "parquet" else None
            if unreadable is None:
                raise
            raise DataError(unreadable_parquet(unreadable.group(1))) from None

    found = [discover(p) for p in paths]
    schema = _unified_schema(found)
    # a path whose own schema is not the merged one is read again with it (CSV files are then
    # parsed to these types)
    datasets = [d if d.schema.equals(schema) else discover(p, schema) for p, d in zip(paths, found)]
    return datasets[0] if len(datasets) == 1 else ds.dataset(datasets)


def _unified_schema(datasets):
    """The schema of every file of ``datasets`` (a CSV file's types inferred from that file),
    merged with numbers widened (int32 to int64 to double) as Spark merges them, then the
    Hive partition columns.

    Raises
    ------
    DataError
        Two files whose column types do not merge (a string and a number), naming both.
    """
    import pyarrow as pa

    schema, origin = None, {}  # origin: the file whose type of each column the schema holds
    for dataset in datasets:
        for fragment in dataset.get_fragments():
            own = fragment.physical_schema
            try:
                merged = own if schema is None else pa.unify_schemas([schema, own], promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                raise DataError(_type_conflict(schema, own, origin, fragment.path)) from None
            before = {} if schema is None else dict(zip(schema.names, schema.types))
            origin.update({f.name: fragment.path for f in merged if before.get(f.name) != f.type})
            schema = merged
    if schema is None:  # no files (an empty dataset): nothing to merge
        return datasets[0].schema
    partitions = [d.partitioning.schema for d in datasets if getattr(d, "partitioning", None) is not None]
    return pa.unify_schemas([schema, *partitions], promote_options="permissive")


def _type_conflict(schema, own, origin: dict, path: str) -> str:
    """The message for file ``path`` (schema ``own``) whose column types do not merge with
    ``schema`` (each column's type as in file ``origin[name]``)."""
    import pyarrow as pa

    from .uri import display_name

    for f in own:
        if f.name in schema.names:
            try:
                pa.unify_schemas([pa.schema([schema.field(f.name)]), pa.schema([f])], promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                return (f"{display_name(path)}: column {f.name!r} is {f.type}, but "
                        f"{schema.field(f.name).type} in {display_name(origin[f.name])}; the files of one input "
                        "must agree on each column's type (integers and doubles are read as doubles)")
    return f"{display_name(path)}: its columns do not merge with those of {display_name(next(iter(origin.values())))}"


#: Delta tables need the ``delta-spark`` package (and its jars on the session).
DELTA_AVAILABLE = importlib.util.find_spec("delta") is not None

FORMATS: dict[str, Format] = {
    "parquet": ParquetFormat("parquet", (".parquet", ".pq")),
    "svmlight": SvmlightFormat("svmlight", (".svmlight", ".svm", ".libsvm", ".txt", ".gz", ".bz2")),
    "csv": DelimitedFormat("csv", (".csv",)),
    "tsv": DelimitedFormat("tsv", (".tsv",)),
}
if DELTA_AVAILABLE:
    FORMATS["delta"] = DeltaFormat("delta", (), local=False)

FORMAT_CHOICES = ("auto", "parquet", "svmlight", "csv", "tsv", "delta")


def get_format(name: str) -> Format:
    """The registered format ``name`` (clear error for unknown or unavailable ones)."""
    if name in FORMATS:
        return FORMATS[name]
    if name == "delta":
        raise ValueError("--format delta needs the delta-spark package (pip install delta-spark) "
                         "and its jars on the Spark session")
    raise ValueError(f"unknown format {name!r}; choose one of {', '.join(['auto', *FORMATS])}")


#: File name endings of compressed files, which Spark's text sources and pyarrow's CSV reader
#: decompress by that name: the format is the one the name before it says (``train.csv.gz``
#: is CSV), and compressed text of no named format is SVMlight (its suffixes include these).
COMPRESSION_SUFFIXES = (".gz", ".bz2")


def is_compressed(name: str) -> bool:
    """Whether a file name ends with a :data:`COMPRESSION_SUFFIXES` ending."""
    return name.lower().endswith(COMPRESSION_SUFFIXES)


def format_by_suffix(name: str) -> str | None:
    """The format a file name's ending identifies, looking under a compression suffix first
    (``None``: look at the bytes)."""
    lower = name.lower()
    inner = lower.rsplit(".", 1)[0] if is_compressed(lower) else lower
    for candidate in dict.fromkeys((inner, lower)):
        for fmt in FORMATS.values():
            if any(candidate.endswith(s) for s in fmt.suffixes):
                return fmt.name
    return None


def format_by_magic(head: bytes) -> str:
    """Parquet files start with ``PAR1``; anything else is read as SVMlight text."""
    return "parquet" if head[:4] == PARQUET_MAGIC else "svmlight"


def decompressed_head(head: bytes) -> bytes:
    """The text at the start of a gzip/bzip2 file (by magic bytes) whose first bytes are
    ``head`` (as far as they decompress: a cut stream is no error), else ``head``.  For a
    header row, read through the compression as the readers of the rows read it."""
    if head[:2] == GZIP_MAGIC:
        return zlib.decompressobj(wbits=zlib.MAX_WBITS | 16).decompress(head)  # | 16: a gzip header
    if head[:3] == BZIP2_MAGIC:
        return bz2.BZ2Decompressor().decompress(head)
    return head


def decompressed(raw: bytes) -> bytes:
    """Text bytes of a gzip/bzip2 file (by magic bytes), else ``raw``."""
    if raw[:2] == GZIP_MAGIC:
        return gzip.decompress(raw)
    if raw[:3] == BZIP2_MAGIC:
        return bz2.decompress(raw)
    return raw
