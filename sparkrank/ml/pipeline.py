"""``RankingPipeline``: a ``Pipeline`` whose ``fitMultiple`` keeps ``LinearRanker``'s C path.

``CrossValidator`` calls ``estimator.fitMultiple(train, paramMaps)`` once per fold.  A plain
``pyspark.ml.Pipeline`` inherits ``Estimator.fitMultiple``, which calls ``fit`` once per map:
every map re-runs the earlier stages and fits the ranker cold, so the ranker never sees the grid
and cannot train it along the C path with warm starts (:mod:`sparkrank.ml.warm_path`), and each
fit must first recognise its freshly transformed input (:mod:`sparkrank.ml.block_cache`).

When the grid only sets params of the pipeline's last stage and that stage is a
:class:`~sparkrank.ml.LinearRanker`, the earlier stages see the same data and the same params for
every map, so fitting them once and handing the transformed frame to the ranker's own
``fitMultiple`` gives each map the stage models ``Pipeline.fit`` would give it, and the ranker
models that the ranker alone as ``CrossValidator``'s estimator gives.  Any other grid (a param of
an earlier stage, of the pipeline itself, another last stage) falls back to ``Pipeline``'s own
``fitMultiple``.  ``fit`` is ``Pipeline.fit``; the fitted models are plain ``PipelineModel``\\ s.
"""

from __future__ import annotations

from typing import Any, Sequence

from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.base import Estimator
from pyspark.ml.pipeline import PipelineReader


class RankingPipeline(Pipeline):
    """A ``pyspark.ml.Pipeline`` that trains a grid over its final ``LinearRanker`` as the ranker
    does: the earlier stages fitted once per ``fitMultiple`` call, the ranker's maps along the
    ascending C path with warm starts.

    Use it in place of ``Pipeline`` as ``CrossValidator``'s or ``TrainValidationSplit``'s
    estimator::

        pipe = RankingPipeline(stages=[VectorAssembler(inputCols=cols, outputCol="features"), ranker])
        grid = ParamGridBuilder().addGrid(ranker.C, [0.1, 1.0, 10.0]).build()
        cv = CrossValidator(estimator=pipe, estimatorParamMaps=grid, ...)

    Everything else is ``Pipeline``'s: ``fit``, ``copy``, ``save`` (``RankingPipeline.load``
    reads a saved pipeline back as a ``RankingPipeline``).
    """

    def fitMultiple(self, dataset, paramMaps: Sequence[dict]):
        """``Pipeline.fitMultiple`` with the ranker's C path when the grid only sets params of
        the last stage, a ``LinearRanker`` (the module docstring); a thread-safe iterator of
        ``(index, PipelineModel)``."""
        ranker = self._ranker_for(paramMaps)
        if ranker is None:
            return super().fitMultiple(dataset, paramMaps)
        stages, frame = fit_leading_stages(self.getStages()[:-1], dataset)
        return _WithStages(ranker.fitMultiple(frame, paramMaps), stages)

    def _ranker_for(self, paramMaps: Sequence[dict]):
        """The last stage when it is a ``LinearRanker`` and owns every param of the grid, else
        ``None`` (the pipeline's own ``fitMultiple`` applies)."""
        from .estimator import LinearRanker

        stages = self.getStages()
        if not stages or not isinstance(stages[-1], LinearRanker):
            return None
        last = stages[-1]
        if all(param.parent == last.uid for pm in paramMaps for param in pm):
            return last
        return None

    @classmethod
    def read(cls) -> PipelineReader:
        return _RankingPipelineReader(cls)


def fit_leading_stages(stages: Sequence[Any], dataset) -> tuple[list, Any]:
    """Fit and apply ``stages`` as ``Pipeline.fit`` does before its last stage:
    ``(their fitted transformers, the transformed dataset)``."""
    fitted, frame = [], dataset
    for stage in stages:
        model = stage.fit(frame) if isinstance(stage, Estimator) else stage
        frame = model.transform(frame)
        fitted.append(model)
    return fitted, frame


class _WithStages:
    """``(index, ranker model)`` pairs as ``(index, PipelineModel(stages + [ranker model]))``:
    as thread-safe as the ranker's iterator, which holds the only state."""

    def __init__(self, fits, stages: list):
        self.fits, self.stages = fits, stages

    def __iter__(self) -> "_WithStages":
        return self

    def __next__(self) -> tuple[int, PipelineModel]:
        index, model = next(self.fits)
        return index, PipelineModel(stages=[*self.stages, model])


class _RankingPipelineReader(PipelineReader):
    """``Pipeline``'s reader, giving back a ``RankingPipeline`` (it builds a plain ``Pipeline``)."""

    def load(self, path: str) -> RankingPipeline:
        pipeline = super().load(path)
        return RankingPipeline(stages=pipeline.getStages())._resetUid(pipeline.uid)
