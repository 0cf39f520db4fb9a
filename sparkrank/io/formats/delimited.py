"""CSV and TSV: a header row of column names, then rows; written by ``convert`` as dense rows.

Both engines read the same values: Spark's CSV conventions in pyarrow (only an empty field is
null, ``NaN`` is NaN), one header row whose names are the columns, and without
``--feature-cols`` every header column but the label and the group id is a feature (decided
once, when the input is opened: :meth:`DelimitedFormat.columns_for`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from ...data.block import DataError
from ...data.compression import decompressed_head
from .. import uri as U
from ..outputs import write_via_local_file
from .arrow import ArrowFormat, arrow_dataset
from .records import first_record_end

log = logging.getLogger("sparkrank")

#: The most of a file's first bytes read for its header row.
HEADER_BYTES = 1 << 20
#: The widest data ``convert`` writes as CSV/TSV, whose rows are dense (use Parquet beyond).
MAX_DELIMITED_FEATURES = 10_000
#: At most this many CSV/TSV files have their record terminator read (the first
#: :data:`TERMINATOR_BYTES` of each), for :meth:`DelimitedFormat.line_separator`.
TERMINATOR_FILES, TERMINATOR_BYTES = 100, 1 << 16


@dataclass(frozen=True)
class DelimitedFormat(ArrowFormat):
    """CSV or TSV with a header row; types inferred (numbers become doubles/longs).

    Both engines read RFC 4180 text: a field in double quotes may hold the delimiter, line
    breaks (CR, LF or CR LF, kept as they are) and doubled quotes (``"a"",b"`` is ``a",b``);
    a backslash is an ordinary character; an empty field, quoted or not, is null.  A record
    may so span several lines: rows are counted by record (see
    :func:`~sparkrank.io.formats.records.record_start_line`).  Spark reads each file whole
    (``multiLine``, a file is not split between tasks)."""

    delimiter: str = ","

    def read_spark(self, spark, uris, line_separator: str | None = None, base_path: str | None = None):
        """``line_separator``: the files' record terminator (:meth:`line_separator`).  Given,
        Spark keeps a quoted CR LF as it is; left to Spark's detection, it reads a quoted CR LF
        in a file of CR LF records as LF (the in-process reader keeps CR LF)."""
        options = {"lineSep": line_separator} if line_separator else {}
        if base_path is not None:
            options["basePath"] = base_path
        return spark.read.csv(list(uris), header=True, inferSchema=True, sep=self.delimiter, multiLine=True,
                              quote='"', escape='"', **options)

    def prepare_spark(self, df, columns, where_filter, where, where_sql=False):
        from ..spark.frames import prepare_frame

        return prepare_frame(df, columns, where_filter, where=where, where_sql=where_sql, text_types=True)

    def line_separator(self, files, fs_for) -> str | None:
        """The record terminator every CSV/TSV file of an input ends its first record with, for
        Spark's reader (:meth:`read_spark`); ``None`` (Spark detects it per file) when they
        differ, cannot be told, or there are more than :data:`TERMINATOR_FILES` files."""
        if not files:
            return None
        if len(files) > TERMINATOR_FILES:
            log.info("%d CSV/TSV files: Spark detects each file's line ends (a quoted CR LF in a file of CR LF lines "
                     "reads as LF there)", len(files))
            return None
        found = set()
        for entry in files:
            end = first_record_end(decompressed_head(fs_for(entry.path).read_bytes(entry.path, TERMINATOR_BYTES)))
            found.add(end[1] if end else None)
        return found.pop() if len(found) == 1 else None

    def local_dataset(self, paths, base_dir=None):
        import pyarrow.csv as pcsv
        import pyarrow.dataset as ds

        # Spark's CSV conventions, so both engines read the same values: only an empty field is
        # null (pyarrow's default also nulls "NA", "NaN", "null", ...), "NaN" is NaN; RFC 4180
        # quoting as read_spark's options say it
        parse = pcsv.ParseOptions(delimiter=self.delimiter, quote_char='"', double_quote=True, escape_char=False,
                                  newlines_in_values=True)
        fmt = ds.CsvFileFormat(parse_options=parse,
                               convert_options=pcsv.ConvertOptions(null_values=[""], strings_can_be_null=True))
        return arrow_dataset(paths, fmt, base_dir)

    def columns_for(self, fs, files, columns):
        if not files:
            return columns
        names = header_names(fs, files[0].path, self.delimiter)
        return columns if columns.feature_cols else default_feature_cols(names, files[0].path, columns)

    def write_local(self, path, data):
        write_via_local_file(path, lambda local: write_delimited(local, data, self.delimiter))


def header_names(fs, path: str, delimiter: str) -> list[str] | None:
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
        names = next(csv.reader(io.StringIO(first.decode("utf-8-sig")), delimiter=delimiter), [])
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


def default_feature_cols(names: list[str] | None, path: str, columns):
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


def input_order(data) -> tuple[np.ndarray, np.ndarray | None]:
    """The row permutation back to input order, and each row's qid in that order (``None``:
    one ranking without qids)."""
    inverse = np.argsort(data.row_order)
    qid = None if data.qids is None else np.repeat(data.qids, data.groups.group_sizes)[inverse]
    return inverse, qid


def write_delimited(path: str, data, delimiter: str) -> None:
    """``data`` in input order to the local ``path`` as a header row ``label[,qid],f1..fN`` and
    dense rows (numbers at full precision: read back, they are the same doubles); a CSV input
    without ``--feature-cols`` reads every column but the label and qid as its features."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    if data.n_features > MAX_DELIMITED_FEATURES:
        raise ValueError(f"CSV/TSV rows are dense: {data.n_features} features is more than "
                         f"{MAX_DELIMITED_FEATURES}; write Parquet (.parquet) or SVMlight instead")
    inverse, qid = input_order(data)
    X = data.X[inverse]
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    columns = {"label": pa.array(data.labels[inverse])}
    if qid is not None:
        columns["qid"] = pa.array(qid)
    for j in range(data.n_features):
        columns[f"f{j + 1}"] = pa.array(X[:, j].astype(np.float64))
    pcsv.write_csv(pa.table(columns), path, write_options=pcsv.WriteOptions(delimiter=delimiter,
                                                                             quoting_style="needed"))
