"""The application layer: sparkrank's use cases, each over the backend of the engine that runs
(:mod:`sparkrank.engines.registry`) and plain settings objects (:mod:`.settings`), returning results.

==========  ======================================================================
fit         :func:`.fit.fit_on` (an open engine), :func:`.fit.fit` (a source),
            :func:`.fit.train_model` (``sparkrank train``: outputs, start, model file)
predict     :func:`.predict.predict`
evaluate    :func:`.evaluate.evaluate`, :func:`.evaluate.evaluate_model`
convert     :func:`.convert.convert`
tune        :func:`.tune.tune`
report      :func:`.report.report`
==========  ======================================================================

The command line, the ``jobs/`` scripts (through it) and ``LinearRanker`` call these, so the
start point, resuming, checkpoint checks, validation and output writing exist once.
"""

from .convert import ConvertSettings, convert
from .evaluate import EvaluateSettings, evaluate, evaluate_model, strict_json
from .fit import StartWeights, fit, fit_on, train_model
from .predict import predict
from .report import ReportSettings, report
from .settings import (CheckpointSettings, FitSettings, InputSettings, RunSettings, load_model, open_backend,
                       open_input)
from .tune import TuneSettings, tune

__all__ = ["CheckpointSettings", "ConvertSettings", "EvaluateSettings", "FitSettings", "InputSettings",
           "ReportSettings", "RunSettings", "StartWeights", "TuneSettings", "convert", "evaluate", "evaluate_model",
           "fit", "fit_on", "load_model", "open_backend", "open_input", "predict", "report", "strict_json",
           "train_model", "tune"]
