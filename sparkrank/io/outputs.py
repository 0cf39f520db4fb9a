"""Outputs a data lake expects, and checks that run before any work is done.

* :func:`check_output_file` / :func:`check_output_dir` run before training or scoring: the
  location must be writable (a probe file is written and removed), a file target must not be
  a directory or end in ``/``, and a directory target that exists and is not empty is refused unless the
  write mode is ``overwrite`` (``--overwrite`` / ``--mode overwrite``).  A read-only or
  impossible ``--model`` path therefore fails in the first second, not after training.
* :func:`write_dataframe` writes a Spark DataFrame as Parquet (optionally partitioned); a
  write that fails or is interrupted leaves no partial directory.
* :func:`write_csv` writes rows with the csv module: text fields quoted, and a text cell
  that a spreadsheet could run as a formula gets a leading ``'`` so it shows as text (OWASP
  "CSV injection", :func:`safe_cell`); numbers are written as numbers, a missing value (null)
  as an empty cell.  :func:`write_csv_dataframe` writes a Spark DataFrame as Spark's directory
  of CSV part files, each line made by the same csv writer (Spark's own CSV writer quotes
  differently and escapes nothing), each part file with the header, as Spark writes them.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import unicodedata
from typing import Iterable, Sequence

from . import uri as U
from .fs import filesystem

WRITE_MODES = ("error", "overwrite")
#: What starts a formula in a spreadsheet cell (OWASP): = + - @, and a tab or a carriage return.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Text that is a plain decimal number ("-3", "+1.5e3"): a spreadsheet reads it as that number.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def check_output_file(path: str, spark=None) -> None:
    """``path`` can be written as a file: not a directory (nor named like one, ending in ``/``),
    its directory writable.

    Raises ``OSError`` (naming the path) otherwise.  Creates the parent directory.
    """
    if path.endswith("/"):  # the probe would pass in the parent; only the final rename would fail
        raise OSError(f"output {path} ends in '/': give a file name, not a directory")
    fs = filesystem(path, spark)
    if fs.is_dir(path):
        raise OSError(f"output {path} is a directory, not a file")
    try:
        fs.probe_writable(U.parent(path))
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc}") from None


def check_output_dir(path: str, mode: str = "error", spark=None) -> None:
    """``path`` can receive a directory of files in write ``mode``.

    ``error``: it must be absent or an empty directory; ``overwrite``: anything there is
    replaced.  The parent must be writable either way.
    """
    if mode not in WRITE_MODES:
        raise ValueError(f"write mode must be one of {', '.join(WRITE_MODES)}, got {mode!r}")
    fs = filesystem(path, spark)
    if fs.exists(path) and mode != "overwrite":
        if not fs.is_dir(path):
            raise OSError(f"output {path} exists and is a file; give --overwrite to replace it")
        if fs.children(path):
            raise OSError(f"output {path} exists and is not empty; give --overwrite (--mode overwrite) "
                          "to replace it")
    try:
        fs.probe_writable(U.parent(path))
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc}") from None


def write_dataframe(df, path: str, *, mode: str = "error", partition_by: Sequence[str] = (),
                    fmt: str = "parquet", part_suffix: str | None = None) -> None:
    """``df`` as a Parquet directory at ``path`` (any URI), after :func:`check_output_dir`;
    ``fmt="text"``: a directory of text part files of ``df``'s one string column, renamed from
    Spark's ``.txt`` to ``part_suffix`` when given."""
    check_output_dir(path, mode, df.sparkSession)
    missing = [c for c in partition_by if c not in df.columns]
    if missing:
        raise ValueError(f"--partition-by {', '.join(missing)}: no such output column; "
                         f"columns are {', '.join(df.columns)}")
    writer = df.write.mode("overwrite")  # checked above: absent, empty, or replacing was asked for
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    fs = filesystem(path, df.sparkSession)
    was_empty_dir = fs.is_dir(path) and not fs.children(path)
    try:
        getattr(writer, fmt)(U.for_spark(path))
        if part_suffix:
            _rename_parts(df.sparkSession, path, ".txt", part_suffix)
    except BaseException:  # a full disk, a lost executor, Ctrl-C: no partial directory is left
        _remove_partial_output(fs, path, was_empty_dir)
        raise


def _rename_parts(spark, path: str, old: str, new: str) -> None:
    """Rename the part files ``part-*<old>`` in the directory ``path`` to ``part-*<new>``, through
    Hadoop's file system even for a local path (its checksum files follow the names)."""
    from .fs import HadoopFileSystem

    fs = HadoopFileSystem(spark)
    for child, is_dir, _ in fs.children(U.for_spark(path)):
        name = child.rsplit("/", 1)[-1]
        if not is_dir and name.startswith("part-") and name.endswith(old):
            fs.rename(child, child[: -len(old)] + new)


def _remove_partial_output(fs, path: str, was_empty_dir: bool) -> None:
    """Delete what a failed write left at ``path`` (Spark's ``_temporary`` files, part files);
    an empty directory that was there before is left as it was.  (Replacing a directory, Spark
    deleted the old files when the write began: they are gone either way.)"""
    try:
        fs.delete(path, recursive=True)
        if was_empty_dir:
            fs.mkdirs(path)
    except Exception:  # noqa: BLE001 - the write's own error is the one to report
        pass


def safe_cell(value):
    """A CSV cell: numbers unchanged; text a spreadsheet could run as a formula prefixed by ``'``.

    Text is such a formula when, read as spreadsheets read it (Unicode compatibility forms:
    the full-width ``＝＋－＠`` and the small ``﹦﹢﹣﹫`` are ``= + - @``), it starts with ``=``,
    ``+``, ``-``, ``@``, a tab or a carriage return, also after leading whitespace (a space,
    a no-break or ideographic space, a line feed ...), unless it is a plain decimal number
    (``-3`` stays a number).
    """
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return value  # the csv module writes None as an empty cell
    text = str(value)
    if _PLAIN_NUMBER.fullmatch(text):
        return text
    folded = unicodedata.normalize("NFKC", text)
    blank = len(folded) - len(folded.lstrip())  # leading whitespace, tabs and CRs included
    if any(c in _FORMULA_START for c in folded[:blank]) or folded[blank:blank + 1] in _FORMULA_START:
        return "'" + text
    return text


def csv_lines(header: Sequence[str], rows: Iterable[Sequence]):
    """The lines (without their line end) of the CSV of ``header`` and ``rows``: every cell through
    :func:`safe_cell` (the header's names too: a column may be named ``=cmd``), text quoted.  A
    line may hold line breaks inside a quoted cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    for row in itertools.chain([[str(h) for h in header]], rows):
        writer.writerow([safe_cell(v) for v in row])
        yield buffer.getvalue()[:-1]
        buffer.seek(0)
        buffer.truncate()


def write_csv(path: str, header: Sequence[str], rows: Iterable[Sequence], spark=None) -> None:
    """Rows as CSV at ``path`` (local or any URI, written atomically); text quoted, see module."""
    filesystem(path, spark).write_text(path, "".join(line + "\n" for line in csv_lines(header, rows)))


def write_csv_dataframe(df, path: str, *, mode: str = "error") -> None:
    """``df`` as Spark's directory of CSV part files at ``path`` (any URI), the lines those of
    :func:`write_csv` (:func:`csv_lines`), the header at the top of every non-empty part file (as
    Spark's ``header`` option writes it, and reads it back); nothing partial is left on failure
    (:func:`write_dataframe`)."""
    header = list(df.columns)

    def part_lines(rows):
        first = next(rows, None)
        if first is None:
            return iter(())  # an empty partition writes no header either
        return csv_lines(header, (list(r) for r in itertools.chain([first], rows)))

    lines = df.rdd.mapPartitions(part_lines).map(lambda line: (line,))
    write_dataframe(df.sparkSession.createDataFrame(lines, "value string"), path, mode=mode, fmt="text",
                    part_suffix=".csv")


def write_via_local_file(out: str, write_local) -> None:
    """Write a file with ``write_local(local_path)`` and move it, atomically, to a path or URI."""
    import contextlib
    import os
    import secrets
    import tempfile

    from .fs import LOCAL, FileError

    # the name before the file, and the file made inside the try (tempfile.mkstemp's flags): a
    # signal raised between the file's creation and its name's assignment (inside mkstemp, as
    # it was) left the file behind; here the finally knows the name whenever the file can exist
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    tmp = None
    try:
        for _ in range(100):
            tmp = os.path.join(tempfile.gettempdir(), f"tmp{secrets.token_hex(6)}.sparkrank.tmp")
            try:
                os.close(os.open(tmp, flags, 0o600))
                break
            except FileExistsError:  # another file's name (48 random bits): not ours to remove
                tmp = None
        else:
            raise FileError(f"cannot write {out}", f"no free temporary name in {tempfile.gettempdir()}")
        try:
            write_local(tmp)
        except OSError as exc:  # the system's temporary directory is full: say which file it was for
            raise FileError(f"cannot write {out} (through {tmp})", exc.strerror or str(exc), exc.errno) from None
        filesystem(out).write_bytes(out, LOCAL.read_bytes(tmp))
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):  # a signal before os.open made it
                os.remove(tmp)


def write_parquet_file(path: str, names: Sequence[str], columns: Sequence[list]) -> None:
    """Columns as one Parquet file at ``path`` (local or any URI, written atomically)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(dict(zip(names, columns))), sink)
    filesystem(path).write_bytes(path, sink.getvalue().to_pybytes())
