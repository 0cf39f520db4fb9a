"""Compressed input files: which compression a file has, and its text.

The one place that knows the compressions sparkrank reads (gzip and bzip2), by name and by
magic bytes, for every reader: the local SVMlight parser (:mod:`sparkrank.data.svmlight`),
the Spark one (:mod:`sparkrank.io.spark.svmlight`), the formats' name rules and header rows
(:mod:`sparkrank.io.formats`) and ``--engine auto``'s size estimate.

* By name: Spark's text sources and pyarrow's CSV reader decompress a file by its suffix
  (:data:`COMPRESSION_SUFFIXES`), so the format is the one the name before it says
  (``train.csv.gz`` is CSV).
* By content: gzip is recognised by its magic bytes whatever the file's name, as the local
  reader does; Hadoop's codecs (:data:`HADOOP_CODEC_SUFFIXES`) go by name only.
"""

from __future__ import annotations

import bz2
import gzip
import zlib

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
#: A UTF-8 byte-order mark (some Windows editors write one before the text).
UTF8_BOM = b"\xef\xbb\xbf"

#: File name endings of compressed files that sparkrank's readers decompress by that name.
COMPRESSION_SUFFIXES = (".gz", ".bz2")
#: Names Hadoop's text source would decompress by their suffix.
HADOOP_CODEC_SUFFIXES = (".gz", ".gzip", ".bz2", ".deflate", ".lz4", ".snappy", ".zst")


def is_compressed(name: str) -> bool:
    """Whether a file name ends with a :data:`COMPRESSION_SUFFIXES` ending."""
    return name.lower().endswith(COMPRESSION_SUFFIXES)


def inner_name(name: str) -> str:
    """The lower-case file name without its compression suffix (``train.csv.gz`` -> ``train.csv``)."""
    lower = name.lower()
    return lower.rsplit(".", 1)[0] if is_compressed(lower) else lower


def is_bzip2_name(name: str) -> bool:
    """Whether the name says bzip2 (``.bz2``), which is decompressed by name, never by content."""
    return name.lower().endswith(".bz2")


def is_gzip(head: bytes) -> bool:
    """Whether bytes start like a gzip stream."""
    return head[:2] == GZIP_MAGIC


def is_bzip2(head: bytes) -> bool:
    """Whether bytes start like a bzip2 stream."""
    return head[:3] == BZIP2_MAGIC


def hadoop_reads_whole(name: str, head: bytes) -> bool:
    """Whether a file is decompressed whole by one Spark task rather than streamed by Spark's
    text source: gzip named ``.gz`` streams (one split, lines numbered from the start); gzip
    under another name, and any other codec suffix (bzip2 splits would break the line count),
    are read whole."""
    lower = name.lower()
    if is_gzip(head) and lower.endswith(".gz"):
        return False
    return is_gzip(head) or lower.endswith(HADOOP_CODEC_SUFFIXES)


def decompressed_head(head: bytes) -> bytes:
    """The text at the start of a gzip/bzip2 file (by magic bytes) whose first bytes are
    ``head`` (as far as they decompress: a cut stream is no error), else ``head``.  For a
    header row, read through the compression as the readers of the rows read it."""
    if is_gzip(head):
        return zlib.decompressobj(wbits=zlib.MAX_WBITS | 16).decompress(head)  # | 16: a gzip header
    if is_bzip2(head):
        return bz2.BZ2Decompressor().decompress(head)
    return head


def decompressed(raw: bytes) -> bytes:
    """Text bytes of a gzip/bzip2 file (by magic bytes), else ``raw``."""
    if is_gzip(raw):
        return gzip.decompress(raw)
    if is_bzip2(raw):
        return bz2.decompress(raw)
    return raw
