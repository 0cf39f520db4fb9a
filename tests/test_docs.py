"""The documentation builds: ``mkdocs build --strict`` fails on a broken link or anchor, an
unresolved API reference, a docstring mkdocstrings cannot parse, or a ``--help`` that fails."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict_succeeds(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(site)],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    # the generated parts are there: the CLI reference from --help, ARCHITECTURE.md, the API
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: sparkrank train" in cli and "--checkpoint-dir" in cli
    assert "tests/test_architecture.py" in (site / "architecture" / "index.html").read_text(encoding="utf-8")
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("sparkrank.train", "sparkrank.RankingModel", "sparkrank.ml.LinearRanker",
                 "sparkrank.ml.RankingEvaluator"):
        assert f'id="{name}"' in api, name
    assert not re.search(r":(mod|class|func|meth|data|attr):<code>", api), "a Sphinx role shows as text"


def test_readme_links_point_at_files_in_the_repository():
    """README.md is outside the MkDocs site, so its relative links are checked here."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", readme) if "://" not in t]
    assert "docs/cli.md" in targets
    missing = [t for t in targets if t and not (REPO / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
