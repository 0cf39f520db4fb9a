"""MkDocs hook: pages that are generated from the product, so they cannot drift from it.

* ``<!-- sparkrank-help COMMAND -->`` becomes the output of ``python -m sparkrank COMMAND
  --help`` (``COMMAND`` may be empty for the top-level help), as a text block.
* ``<!-- include PATH -->`` becomes the text of ``PATH`` (relative to the repository root),
  e.g. ``ARCHITECTURE.md``, which lives beside the code it maps.
* Docstrings write Sphinx roles (``:class:`X```); mkdocstrings renders the backticks as code
  and leaves the role's name as text, which is dropped (``~a.b.C`` shows ``C``, as in Sphinx).

A command that fails or a file that is missing stops the build.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
HELP = re.compile(r"^<!-- sparkrank-help ?([a-z]*) -->$", re.MULTILINE)
INCLUDE = re.compile(r"^<!-- include ([\w./-]+) -->$", re.MULTILINE)
ROLE = re.compile(r":(?:mod|class|func|meth|data|attr|exc|obj):<code>(~?)([^<]*)</code>")


def command_help(command: str) -> str:
    """``sparkrank COMMAND --help`` as this interpreter's installed sparkrank prints it."""
    argv = [sys.executable, "-m", "sparkrank", *([command] if command else []), "--help"]
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    if done.returncode != 0:
        raise PluginError(f"{' '.join(argv[1:])} failed ({done.returncode}): {done.stderr.strip()}")
    return f"```text\n{done.stdout.rstrip()}\n```"


def included(path: str) -> str:
    file = ROOT / path
    if not file.is_file():
        raise PluginError(f"<!-- include {path} -->: no such file {file}")
    return file.read_text(encoding="utf-8")


def on_page_markdown(markdown: str, **kwargs) -> str:
    markdown = INCLUDE.sub(lambda m: included(m.group(1)), markdown)
    return HELP.sub(lambda m: command_help(m.group(1)), markdown)


def on_page_content(html: str, **kwargs) -> str:
    return ROLE.sub(lambda m: f"<code>{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}</code>", html)
