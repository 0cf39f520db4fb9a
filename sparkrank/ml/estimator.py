"""LinearRanker: sparkrank's exact linear rankers as a pyspark.ml Estimator.

Fitting builds a :class:`~sparkrank.spark.engine.SparkEngine` over the DataFrame and calls
:func:`sparkrank.training.train`; every piece of training logic lives there.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np
from pyspark import keyword_only
from pyspark.ml import Estimator
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from .checkpoint import CheckpointWriter, latest_checkpoint
from .model import LinearRankerModel
from .params import LinearRankerParams

log = logging.getLogger("sparkrank.ml")


class LinearRanker(Estimator, LinearRankerParams, DefaultParamsReadable, DefaultParamsWritable):
    """Exact pairwise linear learning-to-rank (RankSVM family) on a Spark DataFrame.

    Rows of the same group (``groupCol``, alias ``qidCol``) are compared; row ``i`` should
    score above row ``j`` when its label is larger.  No pair is ever materialised.

    Parameters
    ----------
    featuresCol : str, default "features"
        A Spark ML Vector column (dense or sparse, e.g. from ``VectorAssembler``) or an
        ``array<double>`` column.
    labelCol : str, default "label"
        Real-valued relevance.
    groupCol : str, default "qid"
        Query/group id column, which must exist; several columns comma-separated
        (``"user_id,session_id"``) form one id; ``""`` makes all rows one global ranking.
        ``qidCol`` is an alias.
    predictionCol : str, default "prediction"
        The score column the model adds.
    solver : str, default "tron"
        A name from :data:`sparkrank.training.SOLVERS` (``tron``: L2-loss RankSVM by
        trust-region Newton; ``bmrm``: L1-loss RankSVM by cutting planes; more as registered).
    regParam, C : float, optional
        Regularisation as BMRM's λ (``λ‖w‖² + (1/N)Σ loss``) or LIBLINEAR's C
        (``½‖w‖² + C Σ loss``, default 1), never both; converted by
        :mod:`sparkrank.conventions` (``C = 1/(2λN)``, N = preference pairs).
    tol, maxIter : optional
        Solver stopping tolerance and iteration cap (defaults: the solver's).
    counting : {"selection", "rbtree", "direct", "pairs"}
    kernelPlacement : {"auto", "driver", "executor"}
    aggregationDepth : int, default 2
    numPartitions : int, optional
    standardization : {"none", "minmax", "standard"}
        Exact per-feature scaling during training (``sparkrank.standardization``); the model
        stores it and applies it when scoring.
    initialWeights : list of float, optional
        Warm start, in the solver's space (a model's ``weights``, or a checkpoint's).
    checkpointDir : str, optional
        Hadoop directory where the current weights are written every ``checkpointInterval``
        solver iterations (:mod:`sparkrank.ml.checkpoint`).
    checkpointInterval : int, default 10
    resumeFromCheckpoint : bool, default False
        Start from the newest checkpoint in ``checkpointDir`` (over ``initialWeights``) when
        one exists.  The resumed solver counts iterations (and ``maxIter``) afresh.
    solverOptions : dict, optional
        Solver-specific options, passed as ``train(solver_options=...)``.

    Notes
    -----
    There is no ``weightCol``: per-row weights are not part of the data layer yet.
    Model selection must keep groups whole; use :func:`sparkrank.ml.with_group_folds` with
    ``CrossValidator(foldCol=...)`` rather than its random row split.
    """

    @keyword_only
    def __init__(
        self,
        *,
        featuresCol: str = "features",
        labelCol: str = "label",
        groupCol: str = "qid",
        qidCol: str | None = None,
        predictionCol: str = "prediction",
        solver: str = "tron",
        regParam: float | None = None,
        C: float | None = None,
        tol: float | None = None,
        maxIter: int | None = None,
        counting: str = "selection",
        kernelPlacement: str = "auto",
        aggregationDepth: int = 2,
        numPartitions: int | None = None,
        standardization: str = "none",
        initialWeights: list[float] | None = None,
        checkpointDir: str | None = None,
        checkpointInterval: int = 10,
        resumeFromCheckpoint: bool = False,
        solverOptions: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.setParams(**self._input_kwargs)

    def setParams(self, **kwargs: Any) -> "LinearRanker":
        """Set any of the constructor's params (``None`` values are ignored)."""
        alias = kwargs.pop("qidCol", None)
        if alias is not None:
            if kwargs.get("groupCol") not in (None, alias):
                raise ValueError("qidCol is an alias of groupCol; give one of them")
            kwargs["groupCol"] = alias
        unknown = [k for k in kwargs if not self.hasParam(k)]
        if unknown:
            raise ValueError(f"LinearRanker has no param {unknown[0]!r}")
        return self._set(**{k: v for k, v in kwargs.items() if v is not None})

    def setQidCol(self, value: str) -> "LinearRanker":
        return self._set(groupCol=value)

    def setGroupCol(self, value: str) -> "LinearRanker":
        return self._set(groupCol=value)

    def setSolver(self, value: str) -> "LinearRanker":
        return self._set(solver=value)

    def setC(self, value: float) -> "LinearRanker":
        return self._set(C=value)

    def setRegParam(self, value: float) -> "LinearRanker":
        return self._set(regParam=value)

    def setMaxIter(self, value: int) -> "LinearRanker":
        return self._set(maxIter=value)

    def setTol(self, value: float) -> "LinearRanker":
        return self._set(tol=value)

    def setStandardization(self, value: str) -> "LinearRanker":
        return self._set(standardization=value)

    def setInitialWeights(self, value) -> "LinearRanker":
        return self._set(initialWeights=[float(v) for v in np.asarray(value, dtype=np.float64).ravel()])

    def setFeaturesCol(self, value: str) -> "LinearRanker":
        return self._set(featuresCol=value)

    def setLabelCol(self, value: str) -> "LinearRanker":
        return self._set(labelCol=value)

    def setPredictionCol(self, value: str) -> "LinearRanker":
        return self._set(predictionCol=value)

    # -- fitting ---------------------------------------------------------------------------
    def _fit(self, dataset) -> LinearRankerModel:
        spark = dataset.sparkSession
        w0 = self._checked_start(dataset)
        engine = self._engine(dataset, w0)
        try:
            return self._train(engine, spark, w0)
        finally:
            engine.close()

    def fitMultiple(self, dataset, paramMaps):
        """Fit one model per param map; when the maps differ only in solver settings (the usual
        ``C``/``regParam`` grid of ``CrossValidator``), the cached blocks are built once and shared.

        Returns a thread-safe iterator of ``(index, model)``; fits sharing blocks run one at a time.
        """
        estimators = [self.copy(pm) for pm in paramMaps]
        if len({e._data_key() for e in estimators}) != 1:
            return super().fitMultiple(dataset, paramMaps)
        return _SharedEngineFits(dataset, estimators)

    #: Params that change the cached blocks or the start point; fits may share an engine
    #: only when these agree.
    _DATA_PARAMS = ("featuresCol", "labelCol", "groupCol", "kernelPlacement", "numPartitions",
                    "aggregationDepth", "initialWeights", "checkpointDir", "resumeFromCheckpoint")

    def _data_key(self) -> tuple:
        return tuple(repr(self._maybe(self.getParam(name))) for name in self._DATA_PARAMS)

    def _checked_start(self, dataset) -> np.ndarray | None:
        """Checks that need no Spark job, then the warm-start weights."""
        C, lam = self._maybe(self.C), self._maybe(self.regParam)
        if C is not None and lam is not None:
            raise ValueError("set either C (LIBLINEAR) or regParam (BMRM λ), not both")
        # every named column must exist (label, group, features), before any Spark job
        self._columns().check(dataset.columns, "LinearRanker: ")
        return self._start_weights(dataset.sparkSession)

    def _columns(self):
        from ..io.sources import ColumnSpec

        return ColumnSpec(self.getLabelCol(), ColumnSpec.parse_group(self.getGroupCol()), self.getFeaturesCol())

    def _engine(self, dataset, w0: np.ndarray | None):
        from ..engines.registry import make_engine
        from ..io.sources import FrameSource

        return make_engine(
            FrameSource(dataset, self._columns()), "spark", spark=dataset.sparkSession,
            placement=self.getOrDefault(self.kernelPlacement), num_partitions=self._maybe(self.numPartitions),
            aggregation_depth=self.getOrDefault(self.aggregationDepth), n_features=None if w0 is None else len(w0),
        )

    def _train(self, engine, spark, w0: np.ndarray | None) -> LinearRankerModel:
        from ..training import train

        model = train(
            engine, solver=self.getSolver(), C=self._maybe(self.C), lam=self._maybe(self.regParam),
            tol=self._maybe(self.tol), counting=self.getOrDefault(self.counting), max_iter=self._maybe(self.maxIter),
            w0=w0, solver_options=self._maybe(self.solverOptions), callback=self._checkpointer(spark, engine),
            standardization=self.getStandardization(),
        )
        return self._copyValues(LinearRankerModel(model))

    def _start_weights(self, spark) -> np.ndarray | None:
        w0 = self._maybe(self.initialWeights)
        directory = self._maybe(self.checkpointDir)
        resume = self.getOrDefault(self.resumeFromCheckpoint)
        from ..training import solver_spec

        if (w0 is not None or resume) and not solver_spec(self.getSolver()).warm_start:
            raise ValueError(f"solver {self.getSolver()!r} cannot start from given weights "
                             "(initialWeights / resumeFromCheckpoint)")
        if resume:
            if not directory:
                raise ValueError("resumeFromCheckpoint needs checkpointDir")
            found = latest_checkpoint(spark, directory)
            if found is None:
                log.info("no checkpoint in %s; starting afresh", directory)
            else:
                for key, mine in (("solver", self.getSolver()), ("standardization", self.getStandardization())):
                    if found.get(key) != mine:
                        raise ValueError(f"checkpoint {found['path']} was written with {key}={found.get(key)!r}, "
                                         f"but this fit uses {key}={mine!r}")
                log.info("resuming from %s (iteration %d)", found["path"], found["iteration"])
                return found["weights"]
        return None if w0 is None else np.asarray(w0, dtype=np.float64)

    def _checkpointer(self, spark, engine):
        directory = self._maybe(self.checkpointDir)
        if not directory:
            return None
        meta = {"solver": self.getSolver(), "standardization": self.getStandardization(),
                "C": self._maybe(self.C), "regParam": self._maybe(self.regParam),
                "n_features": engine.summary.n_features}
        return CheckpointWriter(spark, directory, self.getOrDefault(self.checkpointInterval), meta)


class _SharedEngineFits:
    """``fitMultiple``'s iterator when all fits can share one engine (built at the first fit,
    closed after the last one or on the first error)."""

    def __init__(self, dataset, estimators: list[LinearRanker]):
        self.dataset, self.estimators = dataset, estimators
        self.lock = threading.Lock()
        self.next_index = 0
        self.engine = None
        self.w0 = None

    def __iter__(self) -> "_SharedEngineFits":
        return self

    def __next__(self) -> tuple[int, LinearRankerModel]:
        with self.lock:
            index = self.next_index
            if index >= len(self.estimators):
                raise StopIteration
            self.next_index += 1
            est = self.estimators[index]
            try:
                if self.engine is None:
                    self.w0 = est._checked_start(self.dataset)
                    self.engine = est._engine(self.dataset, self.w0)
                else:
                    est._checked_start(self.dataset)
                model = est._train(self.engine, self.dataset.sparkSession, self.w0)
            except BaseException:
                self._close()
                self.next_index = len(self.estimators)
                raise
            if self.next_index == len(self.estimators):
                self._close()
            return index, model

    def _close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None
