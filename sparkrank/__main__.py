"""``python -m sparkrank`` = the ``sparkrank`` command."""

from .cli import run

run()
