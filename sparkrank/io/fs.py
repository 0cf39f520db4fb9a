"""The file operations sparkrank needs, on a local disk or through Hadoop's FileSystem.

:func:`filesystem` picks the implementation from the path string alone (:mod:`.uri`):

* a scheme-less path (or ``sample:``) -> :class:`LocalFileSystem`, plain ``os`` calls, no
  Spark;
* any URI with a scheme (``file:``, ``hdfs:``, ``s3a:``, ``abfss:``, ``gs:`` …) ->
  :class:`HadoopFileSystem`, ``org.apache.hadoop.fs.FileSystem`` through the JVM gateway of
  the active SparkSession (one is started when none runs).  Python never ``open()``\\ s such
  a URI, so whatever connector the session has (hadoop-aws, hadoop-azure, gcs-connector, or
  a test scheme) serves it.

Writes are atomic at the target: the bytes go to a hidden temporary name beside it
(``.<name>.<random>.tmp``), which is then renamed over the target.  A reader sees the old
file or the complete new one, never a half-written one; an interrupted write leaves at
most the hidden temporary file.  (Local: ``os.replace``.  Hadoop: delete + rename, atomic
on HDFS and local disks; on object stores the upload itself is all-or-nothing.)
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from abc import ABC, abstractmethod

from . import uri as U


@dataclass(frozen=True)
class FileEntry:
    """One file found by :meth:`FileSystem.list_files`: its path/URI and size in bytes."""

    path: str
    size: int


# the reason java.io puts after a path it could not open: "/x/m.json (Read-only file system)"
_JAVA_IO_REASON = re.compile(r"\(([^()]+)\)\s*$")


class FileError(OSError):
    """An ``OSError`` whose message names the file it is about, ``"{what}: {reason}"``, keeping
    ``reason`` (and ``errno``) so a caller can say it again about another path (the target
    of a write instead of its temporary file)."""

    def __init__(self, what: str, reason: str, errno: int | None = None):
        super().__init__(f"{what}: {reason}")
        self.reason, self.errno = reason, errno

    def __str__(self) -> str:
        return self.args[0]


def _reason(exc: OSError) -> str | None:
    """Why an ``OSError`` happened, without the path it names (``None``: it does not say)."""
    return getattr(exc, "reason", None) or exc.strerror


class FileSystem(ABC):
    """The operations; :class:`LocalFileSystem` and :class:`HadoopFileSystem` implement them."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""

    @abstractmethod
    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory."""

    @abstractmethod
    def children(self, path: str) -> list[tuple[str, bool, int]]:
        """``(path, is_dir, size)`` of the entries directly inside a directory."""

    @abstractmethod
    def glob(self, pattern: str) -> list[str]:
        """The paths matching a glob pattern, sorted."""

    @abstractmethod
    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        """The file's bytes (only the first ``limit`` when given)."""

    @abstractmethod
    def _write_new(self, path: str, data: bytes) -> None:
        """Create ``path`` (which does not exist) holding ``data``."""

    @abstractmethod
    def _replace(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``, replacing it if it exists."""

    @abstractmethod
    def delete(self, path: str, recursive: bool = False) -> None:
        """Remove ``path`` (a directory's contents too with ``recursive``); absent is fine."""

    @abstractmethod
    def mkdirs(self, path: str) -> None:
        """Create the directory and its parents (existing is fine)."""

    # -- shared logic -----------------------------------------------------------------------
    def rename(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target`` (replacing it if it exists)."""
        self._replace(source, target)

    def list_files(self, path: str, not_hidden: list[str] | None = None) -> list[FileEntry]:
        """Data files under ``path`` (itself if it is a file), recursively, in sorted order,
        skipping the names that are not data (:func:`sparkrank.io.uri.skipped_name`: ``_*``,
        ``.*``, ``*.crc``, ``README*``).  ``not_hidden``, when given, collects the skipped paths
        that Spark's and pyarrow's own listings would read (a ``README``, a ``x.crc``): their
        readers are then given the files, not the directory (:meth:`sparkrank.io.sources.Source.read_uris`)."""
        if not self.is_dir(path):
            return [FileEntry(path, self.size(path))]
        out: list[FileEntry] = []
        stack = [path]
        while stack:
            for child, is_dir, size in sorted(self.children(stack.pop())):
                name = U.basename(child)
                if U.skipped_name(name):
                    if not_hidden is not None and not U.hidden_name(name):
                        not_hidden.append(child)
                    continue
                if is_dir:
                    stack.append(child)
                else:
                    out.append(FileEntry(child, size))
        return sorted(out, key=lambda e: e.path)

    @abstractmethod
    def size(self, path: str) -> int:
        """Size of a file in bytes."""

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically (temporary sibling, then rename)."""
        tmp = U.join(U.parent(path), f".{U.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            self._write_new(tmp, data)
            self._replace(tmp, path)
        except BaseException as exc:
            try:
                self.delete(tmp)
            except Exception:  # the original error is the one to report
                pass
            if isinstance(exc, OSError) and _reason(exc):  # e.g. ENOSPC: the file, not its temporary
                raise FileError(f"cannot write {path}", _reason(exc), exc.errno) from None
            raise

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def write_text(self, path: str, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def probe_writable(self, directory: str) -> None:
        """Create ``directory`` if needed and write + delete a probe file in it; raises
        ``OSError`` naming the directory when that fails (read-only, impossible path)."""
        existed = self.exists(directory)
        if existed and not self.is_dir(directory):
            raise OSError(f"{directory} is a file, not a directory")
        self.mkdirs(directory)
        probe = U.join(directory, f".sparkrank-probe-{uuid.uuid4().hex[:12]}")
        try:
            self._write_new(probe, b"")
        except OSError as exc:  # read-only, no permission, full: about the directory, not the probe
            self._remove_quietly(probe)  # a full disk may have left it empty (and Hadoop its .crc)
            if not existed:
                self._remove_quietly(directory)
            raise FileError(f"{directory} is not writable", _reason(exc) or str(exc), exc.errno) from None
        self.delete(probe)

    def _remove_quietly(self, path: str) -> None:
        try:
            if self.exists(path):
                self.delete(path, recursive=True)
        except Exception:  # noqa: BLE001 - the failure being reported is the one that matters
            pass


class LocalFileSystem(FileSystem):
    """Plain ``os`` calls on paths of this machine (``file:`` URIs are not accepted here)."""

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def children(self, path: str) -> list[tuple[str, bool, int]]:
        with os.scandir(path) as it:
            return [(os.path.join(path, e.name), e.is_dir(), 0 if e.is_dir() else e.stat().st_size) for e in it]

    def glob(self, pattern: str) -> list[str]:
        import glob

        return sorted(glob.glob(pattern))

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        with open(path, "rb") as f:
            return f.read() if limit is None else f.read(limit)

    def _write_new(self, path: str, data: bytes) -> None:
        with open(path, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def _replace(self, source: str, target: str) -> None:
        os.replace(source, target)

    def delete(self, path: str, recursive: bool = False) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            if recursive:
                import shutil

                shutil.rmtree(path)
            else:
                os.rmdir(path)
        elif os.path.lexists(path):
            os.remove(path)

    def mkdirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)


class HadoopFileSystem(FileSystem):
    """``org.apache.hadoop.fs.FileSystem`` of each URI, through a SparkSession's JVM."""

    def __init__(self, spark):
        self.spark = spark
        self.jvm = spark.sparkContext._jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs_path(self, path: str):
        p = self.jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self.conf), p

    def _call(self, what: str, path: str, fn):
        """Run ``fn(fs, hadoop_path)``; Java errors become ``OSError``/``FileNotFoundError``."""
        from py4j.protocol import Py4JJavaError

        try:
            fs, p = self._fs_path(path)
            return fn(fs, p)
        except Py4JJavaError as exc:
            java = exc.java_exception
            kind = java.getClass().getName()
            message = java.getMessage() or kind
            if kind.endswith("FileNotFoundException"):
                # java.io's "/x/m.json (Read-only file system)": a create refused, not a missing file
                reason = _JAVA_IO_REASON.search(message)
                if what in ("write", "create") and reason and reason.group(1) != "No such file or directory":
                    raise FileError(f"cannot {what} {path}", reason.group(1)) from None
                raise FileNotFoundError(f"{path} does not exist") from None
            from .connectors import missing_connector_message

            missing = missing_connector_message(path, message, self.jvm)
            if missing is not None:
                raise OSError(missing) from None
            if "UnsupportedFileSystemException" in kind or "No FileSystem for scheme" in message:
                raise OSError(f"{path}: no Hadoop file system for this scheme ({message}); add its "
                              "connector jar (see the README, 'Data lakes')") from None
            raise FileError(f"cannot {what} {path}", message) from None

    def exists(self, path: str) -> bool:
        return bool(self._call("check", path, lambda fs, p: fs.exists(p)))

    def is_dir(self, path: str) -> bool:
        return bool(self._call("check", path, lambda fs, p: fs.exists(p) and fs.getFileStatus(p).isDirectory()))

    def size(self, path: str) -> int:
        return int(self._call("stat", path, lambda fs, p: fs.getFileStatus(p).getLen()))

    def children(self, path: str) -> list[tuple[str, bool, int]]:
        statuses = self._call("list", path, lambda fs, p: fs.listStatus(p))
        return [(s.getPath().toString(), bool(s.isDirectory()), int(s.getLen())) for s in statuses]

    def glob(self, pattern: str) -> list[str]:
        statuses = self._call("glob", pattern, lambda fs, p: fs.globStatus(p))
        return sorted(s.getPath().toString() for s in (statuses or []))

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        def read(fs, p):
            stream = fs.open(p)
            try:
                # InputStream.readNBytes/readAllBytes return byte[], which py4j hands over as bytes
                return bytes(stream.readAllBytes() if limit is None else stream.readNBytes(int(limit)))
            finally:
                stream.close()

        return self._call("read", path, read)

    def _write_new(self, path: str, data: bytes) -> None:
        def write(fs, p):
            out = fs.create(p, False)
            try:
                chunk = 1 << 24  # py4j copies each argument whole; keep the messages bounded
                for i in range(0, len(data), chunk):
                    out.write(bytearray(data[i:i + chunk]))
            finally:
                out.close()

        self._call("write", path, write)

    def _replace(self, source: str, target: str) -> None:
        def rename(fs, p):
            t = self.jvm.org.apache.hadoop.fs.Path(target)
            if fs.exists(t):
                fs.delete(t, False)
            if not fs.rename(p, t):
                raise OSError(f"cannot rename {source} to {target}")

        self._call("rename", source, rename)

    def delete(self, path: str, recursive: bool = False) -> None:
        self._call("delete", path, lambda fs, p: fs.delete(p, bool(recursive)))

    def mkdirs(self, path: str) -> None:
        if not self._call("create", path, lambda fs, p: fs.mkdirs(p)):
            raise OSError(f"cannot create the directory {path}")


class FileUriFileSystem(LocalFileSystem):
    """``file:`` URIs when no Spark session runs (the local engine): this machine's disk,
    without starting a JVM just to write a model file; listings keep the URI form."""

    @staticmethod
    def _p(uri: str) -> str:
        path = U.local_path(uri)
        if path is None:
            raise OSError(f"{uri}: a file: URI with a host is not on this machine")
        return path

    def exists(self, path):
        return super().exists(self._p(path))

    def is_dir(self, path):
        return super().is_dir(self._p(path))

    def size(self, path):
        return super().size(self._p(path))

    def children(self, path):
        base = path.rstrip("/")
        return [(base + "/" + U.basename(p), d, s) for p, d, s in super().children(self._p(path))]

    def glob(self, pattern):
        return ["file://" + p for p in super().glob(self._p(pattern))]

    def read_bytes(self, path, limit=None):
        return super().read_bytes(self._p(path), limit)

    def _write_new(self, path, data):
        super()._write_new(self._p(path), data)

    def _replace(self, source, target):
        super()._replace(self._p(source), self._p(target))

    def delete(self, path, recursive=False):
        super().delete(self._p(path), recursive)

    def mkdirs(self, path):
        super().mkdirs(self._p(path))


LOCAL = LocalFileSystem()


def filesystem(path: str, spark=None) -> FileSystem:
    """The file system that serves ``path``: local for scheme-less paths; Hadoop's for URIs
    (through ``spark``, the active session, or a new one), except ``file:`` URIs while no
    session runs, which are this machine's disk anyway (:class:`FileUriFileSystem`)."""
    if not U.has_scheme(path):
        return LOCAL
    if spark is None and U.scheme(path) == "file" and _active_session() is None:
        return FileUriFileSystem()
    return HadoopFileSystem(spark if spark is not None else active_or_new_session())


def _active_session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def active_or_new_session():
    """The running SparkSession, or an embedded one (quiet, see :mod:`sparkrank.io.spark.session`)."""
    active = _active_session()
    if active is not None:
        return active
    from .spark.session import get_session

    return get_session()

