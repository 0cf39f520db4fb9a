"""``python -m sparkrank.cli``: the ``sparkrank`` command."""

from . import run

run()
