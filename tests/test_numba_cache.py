"""numba's cache files of sparkrank are deleted when any of its sources changes (``sparkrank/numba_cache.py``)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from sparkrank.numba_cache import MARKER, clear_stale_caches, source_digest


def _package(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "callee.py").write_text("def f():\n    return 1\n")
    (root / "sub" / "caller.py").write_text("from .callee import f\n")
    return root


def _cache_files(root):
    return sorted(p.name for p in root.rglob("*.nb[ic]"))


def test_cache_files_go_when_any_source_changes_and_stay_otherwise(tmp_path):
    root = _package(tmp_path)
    cached = ["caller.g-3.py311.nbi", "caller.g-3.py311.1.nbc"]
    for name in cached:
        (root / "sub" / "__pycache__" / name).write_bytes(b"x")
    assert clear_stale_caches(str(root))  # no marker yet: the caches' sources are unknown
    assert _cache_files(root) == []
    assert (root / "__pycache__" / MARKER).read_text() == source_digest(str(root))
    for name in cached:  # compiled again from these sources
        (root / "sub" / "__pycache__" / name).write_bytes(b"x")
    assert not clear_stale_caches(str(root)) and _cache_files(root) == sorted(cached)
    # the caller's file is unchanged, its callee's is not: the caller's cached code is stale too
    (root / "sub" / "callee.py").write_text("def f():\n    return 2\n")
    assert clear_stale_caches(str(root)) and _cache_files(root) == []
    assert not clear_stale_caches(str(root))


def test_the_digest_covers_paths_and_contents_but_not_caches(tmp_path):
    root = _package(tmp_path)
    before = source_digest(str(root))
    (root / "sub" / "__pycache__" / "caller.cpython-311.pyc").write_bytes(b"compiled")
    assert source_digest(str(root)) == before
    (root / "sub" / "callee.py").rename(root / "sub" / "callee2.py")
    assert source_digest(str(root)) != before


def test_a_package_that_is_no_directory_is_left_alone(tmp_path):
    """Imported from a zip (or gone): nothing to hash, nothing deleted, no marker written."""
    assert not clear_stale_caches(str(tmp_path / "missing"))
    archive = tmp_path / "deps.zip"
    archive.write_bytes(b"PK")
    assert not clear_stale_caches(str(archive / "pkg"))
    assert not clear_stale_caches(str(archive))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deps.zip"]


def test_importing_sparkrank_records_the_digest_of_its_sources():
    out = subprocess.run([sys.executable, "-c", "import sparkrank, os\n"
                          "from sparkrank.numba_cache import MARKER, cache_directories, source_digest\n"
                          "root = os.path.dirname(sparkrank.__file__)\n"
                          "marker = os.path.join(cache_directories(root)[0], MARKER)\n"
                          "print(open(marker).read() == source_digest(root))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def _jitted_package(tmp_path):
    """A package whose cached caller calls a jitted callee in another file, and clears its stale
    caches on import (as sparkrank's ``__init__`` does) unless told not to."""
    root = tmp_path / "jitpkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "import os\n"
        "from sparkrank.numba_cache import clear_stale_caches\n"
        "if os.environ.get('KEEP_CACHES') != '1':\n"
        "    clear_stale_caches(os.path.dirname(os.path.abspath(__file__)))\n")
    (root / "callee.py").write_text("from numba import njit\n\n@njit(cache=True)\ndef f():\n    return 1\n")
    (root / "caller.py").write_text("from numba import njit\nfrom .callee import f\n\n"
                                    "@njit(cache=True)\ndef g():\n    return f()\n")
    return root


def test_caches_under_numba_cache_dir_are_cleared_too(tmp_path):
    """With ``NUMBA_CACHE_DIR`` set (the Docker image; docs/spark.md's advice for read-only installs
    on workers) numba keeps the caches there, not in the package: they are the ones cleared.  A
    changed callee under an unchanged caller is the hazard: without the clearing, numba loads the
    caller's cached code with the old callee inside."""
    root = _jitted_package(tmp_path)
    cache_dir = tmp_path / "numba-cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))])}

    def call(keep_caches: bool = False) -> str:
        out = subprocess.run([sys.executable, "-c", "from jitpkg.caller import g; print(g())"],
                             env={**env, "KEEP_CACHES": "1" if keep_caches else "0"},
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()

    assert call() == "1"
    assert not list(root.rglob("*.nb[ic]"))  # nothing beside the sources ...
    assert sorted(p.name.split(".")[0] for p in cache_dir.rglob("*.nbi")) == ["callee", "caller"]  # ... all here
    assert (cache_dir / f"jitpkg_{hashlib.sha1(str(root).encode()).hexdigest()}" / MARKER).read_text() == \
        source_digest(str(root))
    (root / "callee.py").write_text("from numba import njit\n\n@njit(cache=True)\ndef f():\n    return 2\n")
    assert call(keep_caches=True) == "1"  # numba alone: the stale caller
    assert call() == "2"  # cleared, compiled again from the current sources
    assert call() == "2"
