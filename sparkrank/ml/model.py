"""LinearRankerModel: a fitted ranker as a pyspark.ml Transformer, saved on any Hadoop path."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pyspark.ml import Model
from pyspark.ml.linalg import DenseVector
from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter, MLReadable, MLReader, MLWritable, MLWriter

from ..model import RankingModel, json_default
from ..solvers.result import accepted_records
from .params import LinearRankerParams

#: Version of the ``data`` record written beside the params metadata.
ML_FORMAT_VERSION = 1


@dataclass(frozen=True)
class LinearRankerSummary:
    """Facts of the fit that produced a model.

    Attributes
    ----------
    objectiveHistory : list of float
        Objective after every accepted solver iteration (NaN where the solver did not compute it).
    totalIterations : int
    seconds : float
        Solver wall time.
    numPairs, numRows, numGroups : int
        Preference pairs, rows and groups of the training data.
    converged : bool
        Whether the stopping rule (not the iteration cap) ended the fit.
    message : str
    history : list of dict
        The solver's full per-iteration records.
    """

    objectiveHistory: list[float]
    totalIterations: int
    seconds: float
    numPairs: int
    numRows: int
    numGroups: int
    converged: bool
    message: str
    history: list[dict[str, Any]] = field(default_factory=list)

    def __repr__(self) -> str:
        # one line: the histories can hold thousands of records
        last = f"{self.objectiveHistory[-1]:.6g}" if self.objectiveHistory else "n/a"
        return (f"LinearRankerSummary(totalIterations={self.totalIterations}, converged={self.converged}, "
                f"objective={last}, seconds={self.seconds:.3g}, numPairs={self.numPairs}, "
                f"numRows={self.numRows}, numGroups={self.numGroups}, message={self.message!r})")

    @classmethod
    def from_model(cls, model: RankingModel) -> "LinearRankerSummary":
        s = model.summary
        history = list(s.get("history", []))
        return cls(
            objectiveHistory=[r.objective for r in accepted_records(history)],
            totalIterations=int(s.get("iterations", len(history))),
            seconds=float(s.get("seconds", float("nan"))),
            numPairs=int(s.get("n_pairs", 0)),
            numRows=int(s.get("n_rows", 0)),
            numGroups=int(s.get("n_groups", 0)),
            converged=bool(s.get("converged", False)),
            message=str(s.get("message", "")),
            history=history,
        )


class LinearRankerModel(Model, LinearRankerParams, MLWritable, MLReadable):
    """A linear ranking function ``score = w·x`` as a Transformer.

    :meth:`transform` keeps every input column and adds ``predictionCol``.  With
    ``standardization`` the score is ``w'·((x − shift)·scale)`` (see
    :mod:`sparkrank.standardization`).

    Parameters
    ----------
    model : RankingModel
        The trained weights and metadata (``None`` only while loading).
    """

    def __init__(self, model: RankingModel | None = None):
        super().__init__()
        self._ranking_model = model

    @property
    def rankingModel(self) -> RankingModel:
        """The underlying :class:`~sparkrank.model.RankingModel` (usable without Spark)."""
        if self._ranking_model is None:
            raise ValueError("this LinearRankerModel has no weights (it was neither fitted nor loaded)")
        return self._ranking_model

    @property
    def weights(self) -> np.ndarray:
        """The solver's weights (on the standardized features when ``standardization`` is on)."""
        return np.array(self.rankingModel.weights)

    @property
    def coefficients(self) -> DenseVector:
        """Coefficients on the raw features (Spark's convention): ``score = coefficients·x + intercept``."""
        return DenseVector(self.rankingModel.raw_weights)

    @property
    def intercept(self) -> float:
        """The constant of :attr:`coefficients` (non-zero only with a centring standardization)."""
        return self.rankingModel.intercept

    @property
    def numFeatures(self) -> int:
        return self.rankingModel.n_features

    @property
    def hasSummary(self) -> bool:
        return bool(self.rankingModel.summary)

    @property
    def summary(self) -> LinearRankerSummary:
        """Objective history, iterations, time, pairs and convergence of the fit."""
        if not self.hasSummary:
            raise RuntimeError("no training summary is available for this model")
        return LinearRankerSummary.from_model(self.rankingModel)

    def setPredictionCol(self, value: str) -> "LinearRankerModel":
        return self._set(predictionCol=value)

    def setFeaturesCol(self, value: str) -> "LinearRankerModel":
        return self._set(featuresCol=value)

    def predict(self, features) -> float:
        """Score of one feature vector (a Spark ML Vector or a sequence of numbers)."""
        import scipy.sparse as sp
        from pyspark.ml.linalg import SparseVector

        if isinstance(features, SparseVector):
            X = sp.csr_matrix((features.values, features.indices, [0, len(features.indices)]),
                              shape=(1, features.size))
        else:
            X = np.atleast_2d(np.asarray(features, dtype=np.float64))
        return float(self.rankingModel.predict(X)[0])

    def _transform(self, dataset):
        from ..engines.spark.scoring import predict_dataframe
        from ..io.spark.executors import prepare_executors
        from .scored_rows import remember

        prepare_executors(dataset.sparkSession)
        scored = predict_dataframe(dataset, self.rankingModel, features_col=self.getFeaturesCol(),
                                   score_col=self.getPredictionCol(), keep_features=True)
        # RankingEvaluator may score the input in the driver instead (sparkrank.ml.scored_rows)
        return remember(scored, self.rankingModel, dataset, self.getFeaturesCol(), self.getPredictionCol())

    def write(self) -> MLWriter:
        return _LinearRankerModelWriter(self)

    @classmethod
    def read(cls) -> MLReader:
        return _LinearRankerModelReader(cls)


class _LinearRankerModelWriter(MLWriter):
    """Params metadata as ``DefaultParamsWriter`` writes it, plus the model JSON in ``data/``."""

    def __init__(self, instance: LinearRankerModel):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path: str) -> None:
        DefaultParamsWriter.saveMetadata(self.instance, path, self.sparkSession,
                                         extraMetadata={"sparkrankFormat": ML_FORMAT_VERSION})
        record = json.dumps(self.instance.rankingModel.to_dict(), default=json_default)
        self.sparkSession.createDataFrame([(record,)], "value string").coalesce(1).write.text(
            os.path.join(path, "data"))


class _LinearRankerModelReader(MLReader):
    def __init__(self, cls: type):
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> LinearRankerModel:
        metadata = DefaultParamsReader.loadMetadata(path, self.sparkSession)
        version = metadata.get("sparkrankFormat")
        if version is None or int(version) > ML_FORMAT_VERSION:
            raise ValueError(f"{path} is not a sparkrank LinearRankerModel of a known format "
                             f"(format {version!r}, this version reads up to {ML_FORMAT_VERSION})")
        data_path = os.path.join(path, "data")
        text = "".join(r.value for r in self.sparkSession.read.text(data_path, wholetext=True).collect())
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"model data {data_path} is not valid JSON: {exc}") from exc
        instance = self.cls(RankingModel.from_dict(record, source=data_path))
        instance._resetUid(metadata["uid"])
        DefaultParamsReader.getAndSetParams(instance, metadata)
        return instance
