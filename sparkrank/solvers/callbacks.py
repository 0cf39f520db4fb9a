"""Per-iteration callbacks: history, the log line, engine progress, and their composition.

Every solver hands each :class:`~sparkrank.solvers.result.IterationRecord` to
``callback(record)``.  :func:`sparkrank.training.train` composes what a fit needs
(engine progress first, so the others see it; checkpoints; the caller's callback); every
solver run keeps its :class:`History` and writes its :class:`LogLine` (one line per
iteration, like LIBLINEAR's ``iter ... act ... pre ...``).
"""

from __future__ import annotations

import logging
from typing import Any

from .result import IterationCallback, IterationRecord

#: How the log line names each stopping measure.
MEASURE_LABELS = {"grad_ratio": "|g|/|g0|", "gap": "gap", "relative_gap": "rel gap"}


def compose(*callbacks: IterationCallback | None) -> IterationCallback:
    """One callback calling the given ones in order (``None`` entries are skipped)."""
    chain = tuple(c for c in callbacks if c is not None)

    def call(record: IterationRecord) -> None:
        for callback in chain:
            callback(record)

    return call


class History:
    """Keeps :meth:`IterationRecord.as_dict` of every record."""

    def __init__(self):
        self.records: list[dict[str, Any]] = []

    def __call__(self, record: IterationRecord) -> None:
        self.records.append(record.as_dict())


class LogLine:
    """Logs one line per record: iteration, objective, stopping measure, extras, seconds."""

    def __init__(self, logger: logging.Logger):
        self.logger = logger

    def __call__(self, record: IterationRecord) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        facts = "".join(f"  {key} {_text(value)}" for key, value in record.extras.items())
        self.logger.info("iter %3d  f %.6e  %s %.3e%s%s  %.2fs", record.iteration, record.objective,
                         MEASURE_LABELS.get(record.measure_name, record.measure_name), record.measure,
                         "" if record.accepted else "  rejected", facts, record.seconds)


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3e}"
    return str(value)


class EngineProgress:
    """Adds the engine's work since the last iteration (rows, groups, passes on Spark) to the extras."""

    def __init__(self, engine):
        self.engine = engine

    def __call__(self, record: IterationRecord) -> None:
        record.extras.update(self.engine.progress())


class SolverReport:
    """What a solver run does with each record: the caller's callback, then history and log line.

    Parameters
    ----------
    callback : callable or None
        The caller's (composed) callback; it sees the record first and may add extras.
    logger : logging.Logger
        The solver's logger.
    """

    def __init__(self, callback: IterationCallback | None, logger: logging.Logger):
        self.history = History()
        self._emit = compose(callback, self.history, LogLine(logger))

    def __call__(self, record: IterationRecord) -> None:
        self._emit(record)
