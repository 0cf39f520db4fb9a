"""numba's cache files of sparkrank are deleted when any of its sources changes (``sparkrank/numba_cache.py``)."""

from __future__ import annotations

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
                          "from sparkrank.numba_cache import MARKER, source_digest\n"
                          "root = os.path.dirname(sparkrank.__file__)\n"
                          "print(open(os.path.join(root, '__pycache__', MARKER)).read() == source_digest(root))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
