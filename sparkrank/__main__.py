"""``python -m sparkrank`` = the ``sparkrank`` command."""

import sys

from .cli import main

sys.exit(main())
