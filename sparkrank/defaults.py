"""Every default setting, in one place: the command line, the Python API (``train``,
``read_ranking_data``, ``load_svmlight``, ``tune``), ``LinearRanker`` and the application layer
all read them here.

Solver tolerances, iteration caps, default C and tune metric are each solver's own
(``default_tol``, ``default_max_iter``, ``default_C`` and ``tune_metric`` of its entry in
:data:`sparkrank.solvers.registry.SOLVERS`): ``None`` here means "the solver's".
"""

from __future__ import annotations

import os

import numpy as np

#: The optimiser (a name in the solver registry).
SOLVER = "tron"
#: Stopping tolerance and iteration cap (and C when neither C nor λ is given, and the metric
#: ``tune`` selects by): the solver's own.
TOL: float | None = None
MAX_ITER: int | None = None
#: Support-pair counting structure (:data:`sparkrank.choices.COUNTING_METHODS`).
COUNTING = "selection"
#: Per-feature standardization (:data:`sparkrank.choices.STANDARDIZATIONS`).
STANDARDIZATION = "none"
#: Feature storage precision: the type, and its name on the command line.
DTYPE = np.float64
DTYPE_NAME = "float64"
#: In-memory layout of feature rows (:data:`sparkrank.choices.FEATURE_LAYOUTS`): dense rows when
#: they take no more memory than CSR.
LAYOUT = "auto"
#: Threads of the local engine and of the SVMlight parser: ``None`` is every core
#: (:func:`threads_or_default`); the model and the parsed rows are the same for any number.
THREADS: int | None = None
#: Where a ``LinearRanker`` fit runs (``auto``: in the driver when the rows fit it, as
#: ``--engine auto`` decides for the command line; the engines give the same model).
ML_ENGINE = "auto"
#: Where the Spark engine runs the score-space kernel (:data:`sparkrank.choices.PLACEMENTS`).
PLACEMENT = "auto"
#: Checkpoints: every this many accepted solver iterations (command line; ``LinearRanker``'s
#: ``checkpointInterval`` defaults to :data:`ML_CHECKPOINT_INTERVAL`).
CHECKPOINT_INTERVAL = 1
ML_CHECKPOINT_INTERVAL = 10
#: NDCG cut-offs ``evaluate`` reports.
NDCG_CUTOFFS = (1, 3, 5, 10)


def available_cores() -> int:
    """The cores this process may use (``sched_getaffinity``; ``cpu_count`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def threads_or_default(threads: int | None) -> int:
    """``threads`` as a positive int; ``None`` (:data:`THREADS`) is :func:`available_cores`."""
    if threads is None:
        return available_cores()
    if int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    return int(threads)
