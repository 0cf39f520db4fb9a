"""The predict use case: score every input row with a model (labels are not needed, nor read)."""

from __future__ import annotations

import dataclasses

from ..engines.backend import Backend, ScoreOutput
from .settings import InputSettings, open_input


def predict(backend: Backend, inputs: InputSettings, model, out: ScoreOutput) -> str:
    """``sparkrank predict``: the output checked first, then ``inputs``' rows scored by ``model``
    and written by the backend (one score per line in input order in-process; a Parquet directory
    with the group id, kept columns, the prediction and its rank on Spark); the line to print."""
    # scoring reads no labels: unlabelled rows are what a model is for
    columns = dataclasses.replace(inputs.columns(model), labels=False)
    backend.check_scores_output(out)
    return backend.write_scores(open_input(backend, inputs, columns=columns), model, out)
