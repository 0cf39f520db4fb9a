"""What a path string names: a local path, a bundled sample, or a Hadoop URI.

The one rule (issue 9): a string with a URI scheme (``file://``, ``hdfs://``, ``s3a://``,
``abfss://``, ``gs://``, …) is only ever opened through Hadoop's ``FileSystem``; a string
without one is a path on this machine.  ``sample:NAME`` is the bundled sample (a local file).
Windows drive letters (``C:\\x``) are not schemes.
"""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urlparse, urlsplit

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
_GLOB_CHARS = set("*?[{")
SAMPLE_SCHEME = "sample"
#: The bundled samples (``sparkrank/sample/NAME.svmlight``, made by :func:`sparkrank.datasets.write_sample`).
SAMPLE_NAMES = ("train", "test")


def scheme(uri: str) -> str:
    """The URI scheme in lower case (``""`` for a plain path; one-letter drive names are paths)."""
    m = _SCHEME.match(str(uri))
    return m.group(1).lower() if m else ""


def has_scheme(uri: str) -> bool:
    """True for ``file:``, ``hdfs:``, ``s3a:`` … URIs (``sample:`` names are local files)."""
    return scheme(uri) not in ("", SAMPLE_SCHEME)


def sample_path(name: str) -> Path:
    """Path of a bundled sample file (``train`` or ``test``)."""
    if name not in SAMPLE_NAMES:
        raise ValueError(f"unknown sample {name!r}; choose one of {', '.join(SAMPLE_NAMES)}")
    return Path(str(resources.files("sparkrank") / "sample" / f"{name}.svmlight"))


def resolve_sample(uri: str) -> str:
    """``sample:NAME`` -> the bundled file's local path; anything else unchanged."""
    if scheme(uri) == SAMPLE_SCHEME:
        return str(sample_path(str(uri).split(":", 1)[1]))
    return str(uri)


def local_path(uri: str) -> str | None:
    """The local path of a scheme-less path, a ``sample:`` name or a ``file:`` URI; else None."""
    uri = resolve_sample(uri)
    s = scheme(uri)
    if s == "":
        return uri
    if s == "file":
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            return None
        return parsed.path
    return None


def for_spark(uri: str) -> str:
    """``uri`` as Spark and Hadoop should get it: a scheme-less path made absolute here, since
    the JVM resolves a relative one against its own working directory, fixed when it started
    (a notebook or a test that changed directory since would read or write elsewhere)."""
    return str(uri) if has_scheme(uri) else os.path.abspath(uri)


def canonical(uri: str) -> str:
    """One spelling of a file URI: Hadoop lists ``file:///a%20b``, Spark's ``_metadata``
    says ``file:/a%20b``; both become ``file:/a b``."""
    parts = urlsplit(unquote(uri))
    return f"{parts.scheme}://{parts.netloc}{parts.path}" if parts.netloc else f"{parts.scheme}:{parts.path}"


def display_name(uri: str) -> str:
    """How error messages name a data file, on both engines alike (the one place of this
    rule): a file on this machine by its absolute path (``data/a.txt``, ``file:///x/a.txt``
    -> ``/home/me/data/a.txt``, ``/x/a.txt``), any other by its URI, percent-decoded."""
    if not has_scheme(uri):
        return os.path.abspath(uri)  # a plain local path (no scheme: os.path may see it)
    spelled = canonical(uri)
    return spelled[len("file:"):] if spelled.startswith("file:/") else spelled


def has_glob(uri: str) -> bool:
    """True when the string has a Hadoop/glob pattern character (``* ? [ {``)."""
    return any(c in _GLOB_CHARS for c in str(uri))


def join(base: str, name: str) -> str:
    """``base/name`` for a path or a URI (one slash between them)."""
    return str(base).rstrip("/") + "/" + name


def parent(uri: str) -> str:
    """The directory part of a path or URI (``"."`` for a bare file name)."""
    text = str(uri).rstrip("/")
    head, sep, _ = text.rpartition("/")
    if not sep:
        return "."
    if head.endswith(":") or head.endswith(":/"):  # "file:/x" or "s3a://bucket/x"
        return head + "/"
    return head or "/"


def basename(uri: str) -> str:
    return str(uri).rstrip("/").rpartition("/")[2]


# ----------------------------------------------------------------------------- names that are not data

#: Endings of files that are never data: Hadoop's checksums (``part-0.parquet.crc``; Hadoop's
#: own are ``.part-0.parquet.crc``, hidden anyway) and a copy Hadoop has not finished.
_NOT_DATA_SUFFIXES = (".crc", "._copying_")
#: A README of a data folder (``README``, ``README.md``, ``readme.txt``) is documentation.
_README = "readme"


def hidden_name(name: str) -> bool:
    """Whether the readers' own listings (Spark's and Hadoop's, ``pyarrow.dataset``'s) skip a file
    or directory of this name: names starting with ``_`` or ``.`` (``_SUCCESS``, ``_committed_*``,
    ``_temporary``, ``.DS_Store``, Hadoop's ``.part-0.crc``)."""
    return name.startswith(("_", "."))


def skipped_name(name: str) -> bool:
    """Whether a file or directory of this name inside an input directory is skipped as not
    data, on both engines: the one rule of every listing (:meth:`sparkrank.io.fs.FileSystem.list_files`,
    the Spark SVMlight reader).  :func:`hidden_name`'s names, Hadoop checksums and unfinished
    copies (``*.crc``, ``*._COPYING_``), and ``README`` files (``README``, ``README.md``, any
    case).  A file named on the command line is read whatever its name."""
    lower = name.lower()
    return hidden_name(name) or lower.endswith(_NOT_DATA_SUFFIXES) or lower.split(".", 1)[0] == _README
