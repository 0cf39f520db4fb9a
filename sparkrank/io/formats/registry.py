"""The formats by name, like the solvers in :data:`sparkrank.solvers.registry.SOLVERS`.

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

``--format``, ``--input`` globs, ``--engine auto``, both engines and ``convert``'s output name
all ask this registry; adding a format is one :class:`~sparkrank.io.formats.base.Format`
subclass and one :func:`register` (or one line in :data:`FORMATS`).
"""

from __future__ import annotations

import importlib.util

from ...data.compression import inner_name
from .. import uri as U
from .base import Format
from .delimited import DelimitedFormat
from .delta import DeltaFormat
from .parquet import PARQUET_MAGIC, ParquetFormat
from .svmlight import SvmlightFormat

#: Delta tables need the ``delta-spark`` package (and its jars on the session).
DELTA_AVAILABLE = importlib.util.find_spec("delta") is not None

#: The format of a file whose name and first bytes say nothing else, and of an output whose
#: name no format writes: SVMlight text.
TEXT_FORMAT = "svmlight"

FORMATS: dict[str, Format] = {
    "parquet": ParquetFormat("parquet", (".parquet", ".pq"), magic=PARQUET_MAGIC, output_suffixes=(".parquet", ".pq")),
    "svmlight": SvmlightFormat("svmlight", (".svmlight", ".svm", ".libsvm", ".txt", ".gz", ".bz2"),
                               memory_expansion=2.0),
    "csv": DelimitedFormat("csv", (".csv",), memory_expansion=2.0, output_suffixes=(".csv",), delimiter=","),
    "tsv": DelimitedFormat("tsv", (".tsv",), memory_expansion=2.0, output_suffixes=(".tsv",), delimiter="\t"),
}
if DELTA_AVAILABLE:
    FORMATS["delta"] = DeltaFormat("delta", (), local=False)
#: Named by ``--format`` whether or not it is installed (its error then says what is missing).
_OPTIONAL = ("delta",)


def register(fmt: Format) -> None:
    """Add ``fmt`` to :data:`FORMATS` (``--format``, auto-detection and ``convert`` pick it up)."""
    if fmt.name in FORMATS or fmt.name == "auto":
        raise ValueError(f"format {fmt.name!r} is registered already")
    FORMATS[fmt.name] = fmt


def unregister(name: str) -> None:
    """Remove a format added by :func:`register`."""
    FORMATS.pop(name, None)


def format_choices() -> tuple[str, ...]:
    """``--format``'s choices: ``auto`` and every format, an optional one even when missing."""
    return ("auto", *FORMATS, *(name for name in _OPTIONAL if name not in FORMATS))


def get_format(name: str) -> Format:
    """The registered format ``name`` (clear error for unknown or unavailable ones)."""
    if name in FORMATS:
        return FORMATS[name]
    if name == "delta":
        raise ValueError("--format delta needs the delta-spark package (pip install delta-spark) "
                         "and its jars on the Spark session")
    raise ValueError(f"unknown format {name!r}; choose one of {', '.join(['auto', *FORMATS])}")


def format_by_suffix(name: str) -> Format | None:
    """The format a file name's ending identifies, looking under a compression suffix first
    (``None``: look at the bytes)."""
    lower = name.lower()
    for candidate in dict.fromkeys((inner_name(lower), lower)):
        for fmt in FORMATS.values():
            if candidate.endswith(fmt.suffixes):
                return fmt
    return None


def format_by_magic(head: bytes) -> Format:
    """The format whose files start with ``head``'s magic bytes (Parquet's ``PAR1``), else text."""
    for fmt in FORMATS.values():
        if fmt.magic and head[:len(fmt.magic)] == fmt.magic:
            return fmt
    return FORMATS[TEXT_FORMAT]


def output_format(name: str) -> Format:
    """The format ``convert`` writes an output of this name in: the one whose output suffixes
    end it, else SVMlight text."""
    for fmt in FORMATS.values():
        if fmt.writes(U.basename(name)):
            return fmt
    return FORMATS[TEXT_FORMAT]
