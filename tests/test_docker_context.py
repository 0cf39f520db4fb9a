"""The docker build context leaves out every virtual environment (issue 38 item 5).

``README`` command 2 makes ``.venv-test`` in the checkout (1.4 GB); ``docker/Dockerfile.dockerignore``
named only ``.venv``, so that venv went into the build context and the image.  There is no Docker
engine to run a build here, so the ignore file is read with Docker's rules for a top-level name:
each pattern is matched as Go's ``filepath.Match`` matches one path component (``*`` never
crosses ``/``, as ``fnmatch`` here on a name without one), and a later ``!pattern`` re-includes.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

IGNORE = Path(__file__).resolve().parents[1] / "docker" / "Dockerfile.dockerignore"


def _ignored(name: str) -> bool:
    ignored = False
    for line in IGNORE.read_text().splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        if "/" not in pattern and fnmatch.fnmatchcase(name, pattern):
            ignored = not negate
    return ignored


def test_every_venv_of_the_checkout_stays_out_of_the_build_context():
    for name in (".venv", ".venv-test", ".venv-bench", ".venv311", "venv"):
        assert _ignored(name), name
    for kept in ("sparkrank", "jobs", "tests", "pyproject.toml", "README.md", "docs"):
        assert not _ignored(kept), kept
