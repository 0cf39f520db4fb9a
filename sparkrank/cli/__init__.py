"""Command line: ``sparkrank train | predict | evaluate | convert | tune | report``.

``tune`` picks C over a grid (validation set or group-wise k-fold, warm starts, see
:mod:`sparkrank.selection`); ``report`` draws PNGs (convergence, metric vs C, scores by
label level, see :mod:`sparkrank.report`).

This package parses arguments (:mod:`.parser`) and prints (:mod:`.commands`); each command is
one use case of :mod:`sparkrank.app` over the backend of the engine that runs
(:mod:`sparkrank.engines.registry`).  Every path is a local path, ``sample:NAME`` (the bundled
sample) or a Hadoop URI (``file:``, ``hdfs:``, ``s3a:``, ``abfss:``, ``gs:`` …).
"""

from __future__ import annotations

import gc
import logging
import sys

from ..data.block import feature_limit
from ..kernels.startup import defer_numba_blas_probe
from .commands import COMMANDS
from .parser import build_parser

__all__ = ["build_parser", "main", "run"]


def _setup_logging(args) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr)
    # py4j's INFO/DEBUG chatter (every gateway message) would drown the per-iteration lines
    logging.getLogger("py4j").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sparkrank`` console script: the command's exit status, every known
    failure reported in one line (:func:`sparkrank.failures.run_command`)."""
    from ..failures import run_command

    args = build_parser().parse_args(argv)
    _setup_logging(args)

    def command() -> int:
        from ..data.jit_room import keep_compiler_room

        # under ulimit -v: room for numba's compiler, whose LLVM would abort the process without it
        keep_compiler_room()
        with feature_limit(getattr(args, "max_features", None)):
            return COMMANDS[args.command](args)

    return run_command(args.command, command)


def run(argv: list[str] | None = None) -> None:
    """The ``sparkrank`` console script (and the ``jobs/`` scripts): :func:`main` on ``argv``
    (default ``sys.argv[1:]``), then exit with its status."""
    from ..failures import exit_process
    from ..io.spark.submit_stderr import restore_submit_stderr

    restore_submit_stderr()  # a job's error line and log on stderr under spark-submit, not its stdout
    # numba's first dispatch would import scipy.linalg only to probe for BLAS (0.25 s, ~13 MB)
    defer_numba_blas_probe()
    # This process owns the interpreter.  What the imports built (numba's ~100k compiler and
    # typing objects, ~770 modules) lives until exit: in the permanent generation the full
    # collections that the run's allocations trigger do not walk it again (whole-process
    # TRON on 300k x 136: median 4.66 -> 4.50 s over 6 alternating runs).
    gc.freeze()
    status = main(argv)
    # The process ends here: freeze what the run made too, so the interpreter's shutdown does
    # not run the cyclic collector over it (0.15 s of every run); memory goes back to the OS
    # at exit anyway.
    gc.freeze()
    exit_process(status)
