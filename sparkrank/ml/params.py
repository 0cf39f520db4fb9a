"""The Params shared by :class:`~sparkrank.ml.LinearRanker` and its model, with checking converters.

Every converter raises a ``ValueError``/``TypeError`` naming the parameter and the allowed
values as soon as a bad value is *set*, so a typo fails before any Spark job runs.  The
solver list is read from :data:`sparkrank.solvers.registry.SOLVERS` at that moment, so solvers
registered later are accepted without touching this module.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasFeaturesCol, HasLabelCol, HasPredictionCol

from .. import defaults
from ..choices import (COUNTING_METHODS, ML_ENGINES, PLACEMENTS, STANDARDIZATIONS, check_positive_float,
                       check_positive_int)


def _choice(name: str, choices) -> Any:
    def convert(value):
        value = TypeConverters.toString(value)
        allowed = tuple(choices() if callable(choices) else choices)
        if value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        return value

    return convert


def _solvers():
    from ..solvers.registry import SOLVERS

    return SOLVERS


def _positive_float(name: str):
    def convert(value):
        return check_positive_float(TypeConverters.toFloat(value), name)

    return convert


def _positive_int(name: str):
    def convert(value):
        return check_positive_int(TypeConverters.toInt(value), name)

    return convert


def _finite_list(value):
    values = TypeConverters.toListFloat(value)
    bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"initialWeights must be finite; entry {bad[0]} is {values[bad[0]]!r}")
    return values


def _options(value):
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise TypeError(f"solverOptions must be a dict with string keys; got {type(value).__name__}")
    return dict(value)


def _group_col(value):
    return "" if value is None else TypeConverters.toString(value)


class LinearRankerParams(HasFeaturesCol, HasLabelCol, HasPredictionCol):
    """Params of :class:`~sparkrank.ml.LinearRanker` and :class:`~sparkrank.ml.LinearRankerModel`."""

    groupCol: Param[str] = Param(
        Params._dummy(), "groupCol",
        "query/group id column (alias qidCol); '' = all rows form one global ranking", typeConverter=_group_col)
    weightCol: Param[str] = Param(
        Params._dummy(), "weightCol",
        "row weight column (a >= 0): every pair (i, j) weighs a_i*a_j, as if row i were repeated a_i times; "
        "'' = no weights", typeConverter=_group_col)
    groupWeightCol: Param[str] = Param(
        Params._dummy(), "groupWeightCol",
        "group weight column (b >= 0, the same on every row of a group): every pair of group q weighs b_q; "
        "'' = no weights", typeConverter=_group_col)
    solver: Param[str] = Param(
        Params._dummy(), "solver", "solver name from sparkrank.solvers.registry.SOLVERS (tron, bmrm, ...)",
        typeConverter=_choice("solver", _solvers))
    regParam: Param[float] = Param(
        Params._dummy(), "regParam", "BMRM λ of λ‖w‖² + (1/N)Σ loss (sparkrank.conventions); exclusive with C",
        typeConverter=_positive_float("regParam"))
    C: Param[float] = Param(
        Params._dummy(), "C", "LIBLINEAR C of ½‖w‖² + C Σ loss (default 1); exclusive with regParam",
        typeConverter=_positive_float("C"))
    tol: Param[float] = Param(
        Params._dummy(), "tol", "stopping tolerance (default: the solver's)", typeConverter=_positive_float("tol"))
    maxIter: Param[int] = Param(
        Params._dummy(), "maxIter", "iteration cap (default: the solver's)", typeConverter=_positive_int("maxIter"))
    counting: Param[str] = Param(
        Params._dummy(), "counting", "support-pair counting structure: " + ", ".join(COUNTING_METHODS),
        typeConverter=_choice("counting", COUNTING_METHODS))
    kernelPlacement: Param[str] = Param(
        Params._dummy(), "kernelPlacement",
        "where the score-space kernel runs: auto (executor with groups, else driver), driver, executor",
        typeConverter=_choice("kernelPlacement", PLACEMENTS))
    aggregationDepth: Param[int] = Param(
        Params._dummy(), "aggregationDepth",
        "treeAggregate depth of a pass's sums (default: 1 unless the blocks' partial sums would crowd the driver, "
        "then the executors add them up by slices of columns)", typeConverter=_positive_int("aggregationDepth"))
    numPartitions: Param[int] = Param(
        Params._dummy(), "numPartitions", "blocks to build (default: the default parallelism)",
        typeConverter=_positive_int("numPartitions"))
    standardization: Param[str] = Param(
        Params._dummy(), "standardization", "feature standardization: " + ", ".join(STANDARDIZATIONS)
        + " (stored in the model, applied at predict)", typeConverter=_choice("standardization", STANDARDIZATIONS))
    initialWeights: Param[list[float]] = Param(
        Params._dummy(), "initialWeights",
        "warm start, in the solver's (standardized) space, e.g. another model's weights or a checkpoint's",
        typeConverter=_finite_list)
    checkpointDir: Param[str] = Param(
        Params._dummy(), "checkpointDir", "Hadoop directory for weight checkpoints during fit",
        typeConverter=TypeConverters.toString)
    checkpointInterval: Param[int] = Param(
        Params._dummy(), "checkpointInterval", "write a checkpoint every this many solver iterations",
        typeConverter=_positive_int("checkpointInterval"))
    resumeFromCheckpoint: Param[bool] = Param(
        Params._dummy(), "resumeFromCheckpoint",
        "start from the latest checkpoint in checkpointDir when there is one", typeConverter=TypeConverters.toBoolean)
    reuseBlocks: Param[bool] = Param(
        Params._dummy(), "reuseBlocks",
        "keep the blocks of the last fit for the next fit on the same input (CrossValidator over a Pipeline)",
        typeConverter=TypeConverters.toBoolean)
    warmStart: Param[bool] = Param(
        Params._dummy(), "warmStart",
        "fitMultiple (CrossValidator, TrainValidationSplit): train the maps that differ only in C or regParam "
        "in ascending C, each from the previous C's solution, as sparkrank tune does",
        typeConverter=TypeConverters.toBoolean)
    engine: Param[str] = Param(
        Params._dummy(), "engine",
        "where the fit runs: auto (in the driver when the rows fit it, as the command line's --engine auto; "
        "else distributed), local (rows collected to the driver once, through Arrow), spark",
        typeConverter=_choice("engine", ML_ENGINES))
    solverOptions: Param[dict] = Param(
        Params._dummy(), "solverOptions",
        "solver-specific options passed to train(solver_options=...), checked against the solver's registry entry",
        typeConverter=_options)

    def __init__(self, *args: Any):
        super().__init__(*args)
        self._setDefault(
            featuresCol="features", labelCol="label", predictionCol="prediction", groupCol="qid",
            weightCol="", groupWeightCol="",
            solver=defaults.SOLVER, counting=defaults.COUNTING, kernelPlacement=defaults.PLACEMENT,
            standardization=defaults.STANDARDIZATION, checkpointInterval=defaults.ML_CHECKPOINT_INTERVAL,
            resumeFromCheckpoint=False, reuseBlocks=True, warmStart=True, engine=defaults.ML_ENGINE,
        )

    def _maybe(self, param: Param) -> Any:
        """The value of ``param``, or ``None`` when it has no value (set to ``None`` counts as unset)."""
        return self.getOrDefault(param) if self.isDefined(param) else None

    def getGroupCol(self) -> str:
        """The group id column ('' = one global ranking)."""
        return self.getOrDefault(self.groupCol)

    getQidCol = getGroupCol

    def getWeightCol(self) -> str:
        """The row weight column ('' = none)."""
        return self.getOrDefault(self.weightCol)

    def getGroupWeightCol(self) -> str:
        """The group weight column ('' = none)."""
        return self.getOrDefault(self.groupWeightCol)

    def getSolver(self) -> str:
        return self.getOrDefault(self.solver)

    def getStandardization(self) -> str:
        return self.getOrDefault(self.standardization)
