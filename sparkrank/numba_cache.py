"""numba's on-disk caches of sparkrank's kernels are thrown away when any of its sources changes.

Why: numba (0.68) keys a cached function on a hash of its own source file, and the cached code
of a function includes every jitted function it calls, from any file.  So a caller whose file did
not change keeps its callees' old code after they changed: after an edit, or after an upgrade in
place (``pip uninstall`` leaves the ``.nbi``/``.nbc`` files in the package's ``__pycache__``
directories, and the next version's unchanged callers would load them).  The results would be
silently those of the old callees.

What: on import, :func:`clear_stale_caches` hashes the package's ``.py`` sources (~2 ms) and
compares the digest with the one recorded beside the package's caches (:data:`MARKER`); if they
differ, it deletes every numba cache file of the package, then records the new digest.  Every
kernel then compiles once more, into a cache that matches the sources.

Where: wherever numba itself keeps them (:func:`cache_directories`, numba's own locator rules):
``NUMBA_CACHE_DIR`` when it is set (the Docker image, and docs/spark.md's advice for workers whose
package directory is read-only), else each source directory's ``__pycache__`` when it is
writable, else numba's user-wide cache directory (a read-only install).  The cache directories
there are per source directory, so they hold this package's caches only.  A package that is
not a directory (a zip) is left alone.
"""

from __future__ import annotations

import hashlib
import os
import types

#: The file (in the cache directory of the package's top directory) that records the sources' digest.
MARKER = "numba-sources.sha256"
_CACHE_SUFFIXES = (".nbi", ".nbc")


def _python_files(root: str) -> list[str]:
    """Every ``.py`` file under ``root`` (not in ``__pycache__``), in path order."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        paths += [os.path.join(dirpath, f) for f in filenames if f.endswith(".py")]
    return sorted(paths)


def source_digest(root: str, paths: list[str] | None = None) -> str:
    """SHA-256 of every ``.py`` file under ``root`` (``paths``, when the caller listed them with
    :func:`_python_files`): relative paths and contents, in path order."""
    digest = hashlib.sha256()
    for path in _python_files(root) if paths is None else paths:
        digest.update(os.path.relpath(path, root).encode())
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def _one_per_directory(paths: list[str]) -> dict[str, str]:
    """The first of ``paths`` in each directory, by directory (in the order of ``paths``)."""
    first: dict[str, str] = {}
    for path in paths:
        first.setdefault(os.path.dirname(path), path)
    return first


def numba_cache_directory(source_file: str) -> str | None:
    """Where numba caches the functions of the module ``source_file``: the locator numba would
    pick for a function defined there (its classes in its order, or ``NUMBA_CACHE_LOCATOR_CLASSES``),
    or ``None`` when none takes it."""
    from numba.core.caching import CompileResultCacheImpl

    code = numba_cache_directory.__code__.replace(co_filename=source_file)
    try:
        return CompileResultCacheImpl(types.FunctionType(code, {})).locator.get_cache_path()
    except RuntimeError:  # no locator available for the file
        return None


def cache_directories(root: str) -> list[str]:
    """The directories where numba keeps the cache files of the modules under ``root``, one per
    source directory (``root``'s first), as numba's own locator rules pick them (see the module
    docstring); creates them as numba would."""
    return _cache_directories(root, _python_files(root))


def _cache_directories(root: str, paths: list[str]) -> list[str]:
    first = _one_per_directory(paths)
    top = os.path.normpath(root)
    found = [numba_cache_directory(first[d]) for d in sorted(first, key=lambda d: d != top)]  # root's first
    return [d for d in found if d is not None]


def clear_stale_caches(root: str | None = None) -> bool:
    """Delete the numba cache files of the modules under ``root`` (default: this package), in
    the directories numba keeps them in (:func:`cache_directories`), unless they were made from
    the current sources; returns whether it deleted (or found nothing to keep).  Never raises:
    an unreadable package, or one whose caches cannot be written, is left as it is."""
    root = os.path.dirname(os.path.abspath(__file__)) if root is None else root
    if not os.path.isdir(root):
        return False  # imported from a zip
    try:
        paths = _python_files(root)  # listed once: the digest, and the caches' directories
        top_file = _one_per_directory(paths).get(os.path.normpath(root))
        top = None if top_file is None else numba_cache_directory(top_file)
        if top is None:
            return False  # no module in the package's top directory to record the digest beside
        marker = os.path.join(top, MARKER)
        digest = source_digest(root, paths)
        try:
            with open(marker, encoding="ascii") as f:
                if f.read() == digest:
                    return False
        except OSError:
            pass
        for directory in _cache_directories(root, paths):
            for name in sorted(os.listdir(directory)):
                if name.endswith(_CACHE_SUFFIXES):
                    try:
                        os.remove(os.path.join(directory, name))
                    except OSError:
                        pass  # another process removed it first
        tmp = f"{marker}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(digest)
        os.replace(tmp, marker)  # a concurrent process sees the old marker or the new one
        return True
    except OSError:
        return False
