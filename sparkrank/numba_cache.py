"""numba's on-disk caches of sparkrank's kernels are thrown away when any of its sources changes.

Why: numba (0.68) keys a cached function on a hash of its own source file, and the cached code
of a function includes every jitted function it calls, from any file.  So a caller whose file did
not change keeps its callees' old code after they changed: after an edit, or after an upgrade in
place (``pip uninstall`` leaves the ``.nbi``/``.nbc`` files in the package's ``__pycache__``
directories, and the next version's unchanged callers would load them).  The results would be
silently those of the old callees.

What: on import, :func:`clear_stale_caches` hashes the package's ``.py`` sources (~2 ms) and
compares the digest with the one recorded in ``__pycache__/`` (:data:`MARKER`); if they differ,
it deletes every numba cache file under the package, then records the new digest.  Every kernel
then compiles once more, into a cache that matches the sources.  A package that is not a
writable directory (a zip, a read-only install) is left alone: numba cannot write caches beside
it either.
"""

from __future__ import annotations

import hashlib
import os

#: The file (in the package's top ``__pycache__``) that records the sources' digest.
MARKER = "numba-sources.sha256"
_CACHE_SUFFIXES = (".nbi", ".nbc")


def source_digest(root: str) -> str:
    """SHA-256 of every ``.py`` file under ``root``: relative paths and contents, in path order."""
    digest = hashlib.sha256()
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        paths += [os.path.join(dirpath, f) for f in filenames if f.endswith(".py")]
    for path in sorted(paths):
        digest.update(os.path.relpath(path, root).encode())
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def clear_stale_caches(root: str | None = None) -> bool:
    """Delete the numba cache files under ``root`` (default: this package) unless they were made
    from the current sources; returns whether it deleted (or found nothing to keep).  Never
    raises: an unreadable or read-only package is left as it is."""
    root = os.path.dirname(os.path.abspath(__file__)) if root is None else root
    if not os.path.isdir(root):
        return False  # imported from a zip
    marker = os.path.join(root, "__pycache__", MARKER)
    try:
        digest = source_digest(root)
        try:
            with open(marker, encoding="ascii") as f:
                if f.read() == digest:
                    return False
        except OSError:
            pass
        for dirpath, _, filenames in os.walk(root):
            for name in filenames:
                if name.endswith(_CACHE_SUFFIXES):
                    try:
                        os.remove(os.path.join(dirpath, name))
                    except OSError:
                        pass  # another process removed it first
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        tmp = f"{marker}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(digest)
        os.replace(tmp, marker)  # a concurrent process sees the old marker or the new one
        return True
    except OSError:
        return False
