"""LinearRanker: sparkrank's exact linear rankers as a pyspark.ml Estimator.

Fitting builds an engine over the DataFrame -- in-process on its rows collected once, or on the
files of a plain Parquet scan, when they fit the driver (``engine="auto"``,
:mod:`sparkrank.ml.local_fit`, :mod:`sparkrank.ml.file_scan`), else a
:class:`~sparkrank.engines.spark.SparkEngine` through the Spark backend of
:mod:`sparkrank.engines.registry` -- and runs the fit use case of :mod:`sparkrank.app` on it, the
command line's: start weights, checkpoints and the checks of a resumed fit (every setting and a
fingerprint of the data) live there.  ``fitMultiple`` trains a C grid along its path with warm
starts (:mod:`sparkrank.ml.warm_path`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np
from pyspark import keyword_only
from pyspark.ml import Estimator
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from .. import defaults
from .block_cache import BLOCKS
from .checkpoint import latest_checkpoint
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
        A name from :data:`sparkrank.solvers.registry.SOLVERS` (``tron``: L2-loss RankSVM by
        trust-region Newton; ``bmrm``: L1-loss RankSVM by cutting planes; more as registered).
    regParam, C : float, optional
        Regularisation as BMRM's λ (``λ‖w‖² + (1/N)Σ loss``) or LIBLINEAR's C
        (``½‖w‖² + C Σ loss``, default 1), never both; converted by
        :mod:`sparkrank.conventions` (``C = 1/(2λN)``, N = preference pairs).
    tol, maxIter : optional
        Solver stopping tolerance and iteration cap (defaults: the solver's).
    counting : str
        One of :data:`sparkrank.choices.COUNTING_METHODS`.
    kernelPlacement : str
        One of :data:`sparkrank.choices.PLACEMENTS`.
    aggregationDepth : int, optional
        ``treeAggregate`` depth (default: 1, or the column-sliced merge for wide sums:
        :func:`sparkrank.engines.spark.building.merge_slices`).
    numPartitions : int, optional
    standardization : str
        One of :data:`sparkrank.choices.STANDARDIZATIONS`: exact per-feature scaling during training (``sparkrank.standardization``); the model
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
        Solver-specific options, passed as ``train(solver_options=...)``; checked against the
        solver's entry in :data:`sparkrank.solvers.registry.SOLVERS` before any Spark job.
    reuseBlocks : bool, default True
        Keep the blocks built by a fit and reuse them when the next fit has the same input
        (same DataFrame semantics and data params): ``CrossValidator`` over a ``Pipeline``
        then builds them once per fold, not once per fold and param map
        (:mod:`sparkrank.ml.block_cache`).  ``sparkrank.ml.release_blocks()`` frees them.

    warmStart : bool, default True
        ``fitMultiple`` (what ``CrossValidator`` and ``TrainValidationSplit`` call with the
        ranker as their estimator) trains the param maps that differ only in ``C`` or
        ``regParam`` in ascending ``C`` on one engine per input, each from the previous
        solution, as ``sparkrank tune`` does (:mod:`sparkrank.ml.warm_path`); ``False``: each
        from zero.  A single ``fit`` never warm-starts.

    weightCol, groupWeightCol : str, default ""
        Row and group weight columns (:mod:`sparkrank.data.weights`): a pair ``(i, j)`` of group
        ``q`` weighs ``b_q·a_i·a_j``, the model of the data with integer weights repeated.  The
        model does not need them to score.

    engine : {"auto", "local", "spark"}, default "auto"
        Where the fit runs.  ``auto``: in the driver when the rows fit it (the command line's
        ``--engine auto`` rule on Spark's size estimate of the DataFrame), else distributed;
        ``local``: the rows are collected to the driver once, as Arrow batches, and trained on
        every core there; ``spark``: distributed blocks.  The model is the same bit for bit.

    Notes
    -----
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
        weightCol: str = "",
        groupWeightCol: str = "",
        predictionCol: str = "prediction",
        solver: str = defaults.SOLVER,
        regParam: float | None = None,
        C: float | None = None,
        tol: float | None = None,
        maxIter: int | None = None,
        counting: str = defaults.COUNTING,
        kernelPlacement: str = defaults.PLACEMENT,
        aggregationDepth: int | None = None,
        numPartitions: int | None = None,
        standardization: str = defaults.STANDARDIZATION,
        initialWeights: list[float] | None = None,
        checkpointDir: str | None = None,
        checkpointInterval: int = defaults.ML_CHECKPOINT_INTERVAL,
        resumeFromCheckpoint: bool = False,
        solverOptions: dict[str, Any] | None = None,
        reuseBlocks: bool = True,
        warmStart: bool = True,
        engine: str = defaults.ML_ENGINE,
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

    def setWeightCol(self, value: str) -> "LinearRanker":
        return self._set(weightCol=value)

    def setGroupWeightCol(self, value: str) -> "LinearRanker":
        return self._set(groupWeightCol=value)

    def setEngine(self, value: str) -> "LinearRanker":
        return self._set(engine=value)

    def setWarmStart(self, value: bool) -> "LinearRanker":
        return self._set(warmStart=value)

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
    def _fit(self, dataset, warm: np.ndarray | None = None) -> LinearRankerModel:
        """One fit; ``warm``: the previous solution on a C path (:mod:`sparkrank.ml.warm_path`),
        the start when this fit has none of its own and its solver can start from weights."""
        from ..io.spark.executors import prepare_executors

        w0 = self._checked_start(dataset)
        prepare_executors(dataset.sparkSession)  # the executors' Python imports sparkrank, or one clear error
        spec = self._columns()  # the columns the engine reads (checked to exist above)
        features = (spec.features,) if spec.features in dataset.columns else ("indices", "values")
        columns = (spec.label, *spec.group, *features)
        with BLOCKS.engine(dataset, self._data_key(w0), lambda: self._engine(dataset, w0),
                           keep=self.getOrDefault(self.reuseBlocks), columns=columns) as engine:
            return self._train(engine, dataset.sparkSession, w0, warm)

    def fitMultiple(self, dataset, paramMaps):
        """Fit one model per param map over one build of the blocks, the maps that differ only in
        ``C``/``regParam`` along the ascending C path with warm starts (``warmStart``;
        :mod:`sparkrank.ml.warm_path`).

        Returns a thread-safe iterator of ``(index, model)`` in path order; fits sharing blocks run
        one at a time (``CrossValidator(parallelism>1)`` evaluates finished models meanwhile).
        With ``reuseBlocks=False`` the blocks are still shared inside the grid and freed after its
        last fit.
        """
        from .warm_path import WarmPathFits

        fits = WarmPathFits(self.copy({self.reuseBlocks: True}), dataset, paramMaps,
                            warm=self.getOrDefault(self.warmStart))
        if self.getOrDefault(self.reuseBlocks):
            return fits
        return _ReleaseBlocksAfter(fits, len(paramMaps))

    #: Params that decide what the blocks hold: fits may share an engine only when they agree
    #: (and when they start from a vector of the same length, which fixes the feature count).
    _DATA_PARAMS = ("featuresCol", "labelCol", "groupCol", "weightCol", "groupWeightCol", "kernelPlacement",
                    "numPartitions", "aggregationDepth", "engine")

    def _data_key(self, w0: np.ndarray | None) -> tuple:
        params = tuple(repr(self._maybe(self.getParam(name))) for name in self._DATA_PARAMS)
        return params + (None if w0 is None else len(w0),)

    def _checked_start(self, dataset) -> np.ndarray | None:
        """Checks that need no Spark job, then the warm-start weights."""
        C, lam = self._maybe(self.C), self._maybe(self.regParam)
        if C is not None and lam is not None:
            raise ValueError("set either C (LIBLINEAR) or regParam (BMRM λ), not both")
        # solver options and every named column (label, group, features) are checked before any Spark job
        from ..solvers.registry import solver_spec

        spec = solver_spec(self.getSolver())
        spec.check_options(self._maybe(self.solverOptions))
        if lam is not None and not spec.takes_lambda:
            raise ValueError(f"regParam is the RankSVM (BMRM) λ; solver {spec.name!r} takes C")
        self._columns().check(dataset.columns, "LinearRanker: ")
        return self._start_weights(dataset.sparkSession)

    def _columns(self):
        from ..io.sources import ColumnSpec

        from ..data.weights import WeightColumns

        weights = WeightColumns(self.getWeightCol() or None, self.getGroupWeightCol() or None)
        return ColumnSpec(self.getLabelCol(), ColumnSpec.parse_group(self.getGroupCol()), self.getFeaturesCol(),
                          weights=weights)

    def _engine(self, dataset, w0: np.ndarray | None):
        from ..engines.backend import EngineSettings
        from ..engines.registry import backend, engine_for, runs_in_process
        from ..io.sources import FrameSource
        from .file_scan import file_source
        from .local_fit import choose_fit_engine, collect_rows

        frame = FrameSource(dataset, self._columns())
        files = file_source(dataset, self._columns())  # a plain Parquet scan: its row groups, as the CLI
        local_files = None if files is None else files.local_parquet_files()  # what this process can read
        n_features = None if w0 is None else len(w0)
        spark_only = [p.name for p in (self.numPartitions, self.aggregationDepth, self.kernelPlacement)
                      if self.isSet(p)]
        kind, reason = choose_fit_engine(self.getOrDefault(self.engine), frame, spark_only,
                                         parquet_files=local_files, collects=local_files is None)
        log.info("LinearRanker: the %s engine (%s)", kind, reason)
        if runs_in_process(kind) and local_files is None:
            return engine_for(collect_rows(frame, n_features))
        settings = EngineSettings(placement=self.getOrDefault(self.kernelPlacement),
                                  partitions=self._maybe(self.numPartitions),
                                  aggregation_depth=self._maybe(self.aggregationDepth))
        # files (in-process or as Spark blocks) through the command line's backend: its memory
        # check, its read and what it does after (the read's freed heap returned to the system)
        source = frame if files is None else files
        return backend(kind, settings, session=dataset.sparkSession).engine(source, n_features)

    def _train(self, engine, spark, w0: np.ndarray | None, warm: np.ndarray | None = None) -> LinearRankerModel:
        from ..app import CheckpointSettings, FitSettings, StartWeights, fit_on
        from ..solvers.registry import solver_spec

        settings = FitSettings(
            solver=self.getSolver(), C=self._maybe(self.C), lam=self._maybe(self.regParam), tol=self._maybe(self.tol),
            counting=self.getOrDefault(self.counting), max_iter=self._maybe(self.maxIter),
            solver_options=self._maybe(self.solverOptions) or {}, standardization=self.getStandardization())
        # a resumed fit is a warm start from the checkpoint's weights: the solver counts its
        # iterations (and maxIter) afresh
        checkpoints = CheckpointSettings(self._maybe(self.checkpointDir), self.getOrDefault(self.checkpointInterval),
                                         self._resumes(spark), solver_state=False, option="checkpointDir")
        start = None if w0 is None or checkpoints.resume else StartWeights(w0, "initialWeights")
        if (start is None and not checkpoints.resume and warm is not None
                and warm.shape[0] == engine.summary.n_features and solver_spec(settings.solver).warm_start):
            start = StartWeights(warm, "the previous C's solution")
        return self._copyValues(LinearRankerModel(fit_on(engine, settings, start=start, checkpoints=checkpoints)))

    def _resumes(self, spark) -> bool:
        """Whether this fit resumes from a checkpoint (there is one and it was asked for)."""
        directory = self._maybe(self.checkpointDir)
        return bool(self.getOrDefault(self.resumeFromCheckpoint) and directory
                    and latest_checkpoint(spark, directory) is not None)

    def _start_weights(self, spark) -> np.ndarray | None:
        """The weights the fit starts from, whose length is the data's width: the newest
        checkpoint's when resuming from one (its settings are checked by the fit), else
        ``initialWeights``."""
        w0 = self._maybe(self.initialWeights)
        directory = self._maybe(self.checkpointDir)
        resume = self.getOrDefault(self.resumeFromCheckpoint)
        from ..solvers.registry import solver_spec

        if (w0 is not None or resume) and not solver_spec(self.getSolver()).warm_start:
            raise ValueError(f"solver {self.getSolver()!r} cannot start from given weights "
                             "(initialWeights / resumeFromCheckpoint)")
        if resume:
            if not directory:
                raise ValueError("resumeFromCheckpoint needs checkpointDir")
            found = latest_checkpoint(spark, directory)
            if found is None:
                log.warning("resumeFromCheckpoint: no checkpoint in %s; starting afresh", directory)
            else:
                return found["weights"]
        return None if w0 is None else np.asarray(w0, dtype=np.float64)


class _ReleaseBlocksAfter:
    """Pass ``fitMultiple``'s ``(index, model)`` pairs through; free the shared blocks after the
    last one or on the first error (``reuseBlocks=False``)."""

    def __init__(self, fits, count: int):
        self.fits, self.left = fits, count
        self.lock = threading.Lock()

    def __iter__(self) -> "_ReleaseBlocksAfter":
        return self

    def __next__(self) -> tuple[int, LinearRankerModel]:
        try:
            item = next(self.fits)
        except BaseException:
            BLOCKS.release()
            raise
        with self.lock:
            self.left -= 1
            if self.left == 0:
                BLOCKS.release()
        return item
