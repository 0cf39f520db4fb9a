"""SVMlight/LETOR text as a Spark DataFrame, parsed on the executors, with exact file lines.

The rows become ``label double, [qid long|string,] cost double, indices array<int>, values
array<double>`` (sparkrank's Parquet layout, with the lines' ``cost:`` tokens, 1 where a line has
none: :mod:`sparkrank.data.svmlight.costs`; ``SvmlightFormat.prepare_spark`` drops the column
unless a weight column names it).  Every line is parsed by the numba scanner of the local reader
(:mod:`sparkrank.data.svmlight`), so both engines accept the same files and reject the same
lines with the same message, naming the file and the line *in the file*:

* **plain text** is read by Spark's text source, so large files stay split into byte
  ranges that run in parallel.  Each row carries its file and the start byte of its split
  (the ``_metadata`` columns); a task numbers its lines from the start of its split.  Only
  when a line is bad does the task count the line ends before its split (reading that
  prefix of the file) and parse the piece again with the true offset, so the happy path
  costs nothing extra.  Hadoop's line reader ends lines at LF, CRLF and a lone CR, as the
  local scanner does.
* **gzip named ``.gz``** is streamed by the same text source (one split per file, so the
  lines are numbered from its start); a truncated file is a clean error.
* **other compressed files** (gzip under any other name, recognised by its magic bytes;
  bzip2 by its ``.bz2`` name) are one task each that decompresses the whole file in
  Python and parses it.
* the **qid rule** (:class:`~sparkrank.data.svmlight.QidLayout`) is fixed by the first
  data line of the first file, read on the driver before the job, and every task checks
  its lines against it.

A bad line raises :class:`~sparkrank.data.svmlight.SVMLightFormatError` in the task; the
job fails and :func:`sparkrank.io.spark.errors.data_error_in` recovers the message on the
driver.
"""

from __future__ import annotations

import bz2
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from ...data.block import max_features_limit
from ...data.compression import UTF8_BOM, hadoop_reads_whole, is_bzip2, is_bzip2_name, is_gzip
from ...data.svmlight import QidLayout, SVMLightFile, SVMLightFormatError, gunzip, parse_svmlight_bytes
from ...data.weights import COST_COLUMN
from .. import uri as U
from .worker import worker_task

__all__ = ["read_svmlight_dataframe"]



@dataclass(frozen=True)
class _File:
    uri: str  # the qualified path, unescaped as Hadoop's Path(String) and Spark's readers take it
    whole: bool  # compressed (or named like it): parsed as one task

    @property
    def name(self) -> str:
        """How messages name it (io.uri.display_name)."""
        return U.display_name(self.uri)


def read_svmlight_dataframe(spark, path: str | Sequence[str], *, max_features: int | None = None):
    """Parse SVMlight/LETOR text on the executors into ``label, qid, indices, values``.

    Parameters
    ----------
    spark : SparkSession
    path : str or sequence of str
        Files, directories (their visible files, recursively) or globs; any Hadoop URI.
    max_features : int, optional
        A feature index needing more columns is an error naming its line (default: the
        limit in force on the driver, :func:`~sparkrank.data.block.max_features_limit`).

    Returns
    -------
    DataFrame
        ``indices`` (0-based) and ``values`` are list columns.  ``qid`` is ``long`` when the
        first qid is an integer, else ``string``; files without qids get no qid column.
        ``cost``: each line's ``cost:`` token, 1 when it has none.

    Raises
    ------
    FileNotFoundError
        A path matches nothing.
    SVMLightFormatError
        The first data line is bad (read on the driver); bad later lines fail the job.
    """
    import pyarrow as pa

    max_features = max_features_limit(max_features)
    paths = [path] if isinstance(path, str) else list(path)
    files = _list_files(spark, paths)
    layout = _first_layout(spark, files, max_features)
    fields = [pa.field("label", pa.float64())]
    qid_ddl = ""
    if layout is not None and layout.present:
        fields.append(pa.field("qid", pa.int64() if layout.integer else pa.string()))
        qid_ddl = f", qid {'long' if layout.integer else 'string'}"
    fields += [pa.field(COST_COLUMN, pa.float64()), pa.field("indices", pa.list_(pa.int32())),
               pa.field("values", pa.list_(pa.float64()))]
    schema = pa.schema(fields)
    ddl = "label double" + qid_ddl + f", {COST_COLUMN} double, indices array<int>, values array<double>"
    parts = []
    split_files = [f.uri for f in files if not f.whole]
    if split_files:
        text = spark.read.text(split_files).select("value", "_metadata.file_path", "_metadata.file_block_start")
        parts.append(text.mapInArrow(_split_task(layout, schema, max_features), ddl))
    whole_files = [f.uri for f in files if f.whole]
    if whole_files:
        blobs = spark.read.format("binaryFile").load(whole_files).select("path", "content")
        parts.append(blobs.mapInArrow(_whole_task(layout, schema, max_features), ddl))
    df = parts[0]
    for other in parts[1:]:
        df = df.unionByName(other)
    return df


# ----------------------------------------------------------------------------- driver side


def _hadoop_fs(spark, uri: str):
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(uri)
    return p, p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def _list_files(spark, paths: list[str]) -> list[_File]:
    """The data files under ``paths`` (names that are not data skipped, as in-process:
    :func:`~sparkrank.io.uri.skipped_name`)."""
    out: list[_File] = []
    for given in paths:
        p, fs = _hadoop_fs(spark, given)
        statuses = fs.globStatus(p)
        if not statuses:
            raise FileNotFoundError(f"input {given} does not exist")
        found = []
        for st in statuses:
            if st.isDirectory():
                it = fs.listFiles(st.getPath(), True)
                while it.hasNext():
                    f = it.next()
                    if not U.skipped_name(f.getPath().getName()):
                        found.append(f.getPath())
            else:
                found.append(st.getPath())
        for fp in sorted(found, key=lambda q: q.toUri().toString()):
            uri = fp.toString()  # not toUri(): Hadoop's Path(String) and Spark read it unescaped ("my lake")
            out.append(_File(uri, _is_whole(fs, fp)))
    if not out:
        raise FileNotFoundError(f"no files under {', '.join(paths)}")
    return out


def _is_whole(fs, fp) -> bool:
    """Whether a file is read whole by one task rather than by Spark's text source.

    A gzip file named ``.gz`` goes to the text source: Hadoop decompresses it as a stream
    (little memory, no size limit) in one split, so its lines are numbered from the start
    and a truncated file fails with ``FAILED_READ_FILE`` (see :mod:`sparkrank.io.spark.errors`).
    gzip under another name, and any other codec suffix (bzip2 splits would break the
    line count), are read whole (``binaryFile``: at most 2 GB compressed).
    """
    name = fp.getName().lower()
    stream = fs.open(fp)
    try:
        head = bytes([stream.read() & 0xFF, stream.read() & 0xFF])
    finally:
        stream.close()
    return hadoop_reads_whole(name, head)


def _first_layout(spark, files: list[_File], max_features) -> QidLayout | None:
    """The qid rule of the input: the layout of the first data line of the first file that has one.

    The first lines are read through Hadoop on the driver (decompressing gzip), so a bad
    first data line is reported here with its file and line.
    """
    jvm = spark.sparkContext._jvm
    for f in files:
        p, fs = _hadoop_fs(spark, f.uri)
        stream = fs.open(p)
        head = jvm.java.io.BufferedInputStream(stream)
        head.mark(4)
        magic = bytes([head.read() & 0xFF, head.read() & 0xFF, head.read() & 0xFF])
        head.reset()
        if is_gzip(magic):
            head = jvm.java.util.zip.GZIPInputStream(head)
        elif is_bzip2(magic) and f.whole:
            head = jvm.org.apache.hadoop.io.compress.BZip2Codec().createInputStream(head)
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(head, "UTF-8"))
        try:
            number = 0
            while True:
                try:
                    line = reader.readLine()
                except Exception:  # a corrupt or truncated compressed file: the task reports it
                    break
                if line is None:
                    break
                number += 1
                text = line.lstrip("\ufeff").strip(" \t\x0b\x0c")
                if not text or text.startswith("#"):
                    continue
                parsed = parse_svmlight_bytes(text.encode("utf-8"), name=f.name, first_line=number - 1,
                                              max_features=max_features)
                return parsed.qid_layout
        finally:
            reader.close()
    return None


# ----------------------------------------------------------------------------- executor side


def _to_batch(parsed: SVMLightFile, schema):
    import pyarrow as pa

    X = parsed.X
    offsets = pa.array(X.indptr.astype(np.int32))
    cols = [pa.array(parsed.labels)]
    if "qid" in schema.names:
        cols.append(pa.array(parsed.qid, type=schema.field("qid").type))
    cols.append(pa.array(np.ones(parsed.labels.shape[0]) if parsed.cost is None else parsed.cost))
    cols += [pa.ListArray.from_arrays(offsets, pa.array(X.indices.astype(np.int32))),
             pa.ListArray.from_arrays(offsets, pa.array(X.data.astype(np.float64)))]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _joined_lines(arr) -> bytes:
    """The lines of an Arrow string array as one buffer, each followed by ``\\n``."""
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset: arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]]
    return np.insert(data, offsets[1:] - offsets[0], np.uint8(10)).tobytes()


def _split_task(layout, schema, max_features):
    """``mapInArrow`` over (line, file, split start): parse each split's lines in order."""

    def task(batches: Iterator) -> Iterator:
        seen: dict[tuple[str, int], int] = {}  # lines of each split parsed so far
        for batch in batches:
            files = batch.column(1).to_numpy(zero_copy_only=False)
            starts = batch.column(2).to_numpy(zero_copy_only=False)
            n = batch.num_rows
            if n == 0:
                continue
            cut = np.flatnonzero((files[1:] != files[:-1]) | (starts[1:] != starts[:-1])) + 1
            bounds = [0, *cut.tolist(), n]
            for a, b in zip(bounds[:-1], bounds[1:]):
                uri, start = U.canonical(str(files[a])), int(starts[a])
                first = seen.get((uri, start), 0)
                seen[(uri, start)] = first + (b - a)
                raw = _joined_lines(batch.column(0).slice(a, b - a))
                if start == 0 and first == 0 and raw.startswith(UTF8_BOM):
                    raw = raw[3:]
                parsed = _parse_piece(raw, uri, U.display_name(uri), start, first, layout, max_features)
                if parsed.labels.size:
                    yield _to_batch(parsed, schema)

    return worker_task(task)


def _parse_piece(raw: bytes, uri: str, name: str, start: int, first: int, layout, max_features) -> SVMLightFile:
    """Parse lines ``first + 1 ...`` of the split starting at byte ``start``; on an error,
    count the lines before the split and parse again so the message has the file's line."""
    try:
        return parse_svmlight_bytes(raw, name=name, first_line=first, qid_layout=layout, max_features=max_features)
    except SVMLightFormatError as exc:
        if start == 0:
            raise
        try:
            before = lines_before(uri, start)
        except OSError as io_exc:
            raise SVMLightFormatError(f"{exc} (counted from the split at byte {start}: the lines before it "
                                      f"could not be counted: {io_exc})", path=name, line=exc.line) from None
        return parse_svmlight_bytes(raw, name=name, first_line=before + first, qid_layout=layout,
                                    max_features=max_features)


def lines_before(uri: str, start: int) -> int:
    """How many lines of a file come before the Hadoop split that starts at byte ``start > 0``.

    Hadoop's line reader gives a split ``[start, end)`` the lines that begin after
    ``start``; so the lines before it are those beginning at or before ``start``: one at
    byte 0 plus one after each line end (LF, CRLF, lone CR) that finishes before ``start``.
    The prefix is read with pyarrow's file systems (local, HDFS, S3, GCS).
    """
    import pyarrow.fs as pafs

    if uri.startswith("file:"):
        fs, path = pafs.LocalFileSystem(), U.local_path(uri)
    else:
        fs, path = pafs.FileSystem.from_uri(uri)
    with fs.open_input_stream(path) as f:
        prefix = np.frombuffer(f.read(start + 1), dtype=np.uint8)
    body = prefix[:start]
    nl = int(np.count_nonzero(body == 10))
    cr = body == 13
    follows = np.zeros_like(cr)  # a CR followed by LF ends a line only once (at the LF)
    follows[:-1] = prefix[1:start] == 10
    if start < prefix.size:
        follows[-1] = prefix[start] == 10
    lone_cr = int(np.count_nonzero(cr & ~follows))
    # a CRLF whose LF is the byte at ``start`` finishes after ``start``: its CR is not counted
    return 1 + nl + lone_cr


def _whole_task(layout, schema, max_features):
    """``mapInArrow`` over (path, content) of compressed files: one file per row."""

    def task(batches: Iterator) -> Iterator:
        for batch in batches:
            uris = batch.column(0).to_pylist()
            for i, uri in enumerate(uris):
                uri = U.canonical(uri)
                name = U.display_name(uri)
                raw = batch.column(1)[i].as_py()
                if is_gzip(raw):
                    raw = gunzip(raw, name)
                elif is_bzip2(raw) and is_bzip2_name(uri):
                    try:
                        raw = bz2.decompress(raw)
                    except (OSError, EOFError, ValueError) as exc:
                        raise SVMLightFormatError(f"{name}: truncated or corrupt bzip2 data ({exc})",
                                                  path=name) from None
                if raw.startswith(UTF8_BOM):
                    raw = raw[3:]
                parsed = parse_svmlight_bytes(raw, name=name, qid_layout=layout, max_features=max_features)
                if parsed.labels.size:
                    yield _to_batch(parsed, schema)

    return worker_task(task)
