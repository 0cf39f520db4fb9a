"""Model selection over the regularisation constant ``C`` (lee-lin2014 §4.4).

:func:`tune` trains one model per ``C`` of a grid, in ascending order, and scores each on
held-out queries, either a separate validation set or group-wise k-fold cross-validation
(folds hold whole query groups: groups are assigned to folds, never rows, because
preference pairs only exist inside a group and a split group would leak its pairs into
both sides).

Warm starts
-----------
With ``½‖w‖² + C·Σ loss`` the minimiser ``w*(C)`` moves continuously with ``C``, so the
solution at the previous (smaller) ``C`` is a good start for the next one; this is how
LIBLINEAR's ``-C`` parameter search works (chu2015 "warm start for parameter selection").
TRON's stopping rule stays relative to ``‖∇f(0)‖`` (see :mod:`sparkrank.solvers.tron`), so
a warm start reaches the same tolerance as a cold start, only in fewer iterations.
``cold_start=True`` trains every ``C`` from ``w = 0`` for comparison.

One consequence to know: at the previous optimum ``w_prev`` (for ``C_prev``) the gradient
of the new objective is ``w_prev·(1 − C/C_prev)``, of norm ``‖w_prev‖`` when ``C = 2·C_prev``,
while the threshold ``tol·‖∇f(0)‖`` grows linearly with ``C``.  From some ``C`` on the
previous solution therefore already meets the rule and the solver runs 0 iterations: the
model is kept, correct to the solver's tolerance but no closer, and the metric-vs-C curve
goes flat.  Such rows are marked ``kept`` and a note suggests a smaller ``tol`` (1e-5 makes
the warm path agree with cold starts as closely as cold starts at 1e-4 agree with each
other on MQ2008).

Engines
-------
* ``RankingData``: the local engine.
* :class:`SparkSource` (a DataFrame plus column names and engine options) or a plain
  DataFrame: the Spark engine; a fold is a filter Spark pushes into the scan, so it is
  never collected to the driver.
* An already-built :class:`~sparkrank.engines.base.Engine`: validation-set mode only (an
  engine cannot be split into folds).

Both engines put a group into fold ``seeded hash of its id mod k``
(:mod:`sparkrank.data.folds`), so the same data gets the same folds on either.  Validation
metrics come from the same one-pass :class:`~sparkrank.evaluation.kernel.MetricsKernel` as
``sparkrank evaluate`` (executor or driver placement).

The grid default is lee-lin2014 §4.4's ``C ∈ {2⁻¹⁵, 2⁻¹⁴, …, 2¹⁰}``.
"""

from .driver import tune
from .folds import SparkSource, local_split, take_groups
from .grid import DEFAULT_C_GRID, DEFAULT_METRIC, c_grid_from_range, check_c_grid
from .result import TuneResult, TuneRow, load_tune_result

__all__ = ["DEFAULT_C_GRID", "DEFAULT_METRIC", "SparkSource", "TuneResult", "TuneRow", "c_grid_from_range",
           "check_c_grid", "load_tune_result", "local_split", "take_groups", "tune"]
