"""Checkpoints of a ``tune`` search, so a killed search resumes with the same table and best model.

Layout under the directory (a local path or any Hadoop URI, through the storage functions of
:mod:`sparkrank.checkpoints`; every file is written atomically)::

    tune.json                      the search's settings (grid, solver, options, folds, seed, metric, ...)
    path-P/data.json               fingerprints of path P's training and held-out data
    path-P/C-JJJ.json              C number JJJ finished on path P: its model record and metrics
    path-P/C-JJJ/iter-NNNNNNNN     train checkpoints of the C being trained (sparkrank.checkpoints)
    refit/iter-NNNNNNNN            train checkpoints of the k-fold refit at the best C

Path P is fold P of a k-fold search (0 with a validation set).  A finished C's model record
holds the solver's weights as float reprs, which round-trip float64 exactly, so the next C
warm-starts from exactly what the undisturbed search handed it; the C being trained resumes
bit for bit for the exactly-resumable solvers (TRON, BMRM, NCG).  Before anything is reused the
settings and each path's data fingerprints are compared, and a mismatch is a
:class:`~sparkrank.checkpoints.CheckpointMismatchError` naming the first difference.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np

from .checkpoints import (CheckpointMismatchError, Resumption, begin, check_compatible, clear, data_fingerprint,
                          delete, list_names, read_text, write_text_atomic)
from .model import FORMAT_VERSION, RankingModel, json_default

log = logging.getLogger("sparkrank.tune")

SETTINGS_FILE = "tune.json"
DATA_FILE = "data.json"


class TuneCheckpoints:
    """Where a search records its finished Cs and checkpoints the fit in progress.

    Parameters
    ----------
    directory : str
        Local path or Hadoop URI.
    interval : int
        Train checkpoint every ``interval`` solver iterations.
    resume : bool
        Reuse what an earlier search with the same ``settings`` left (none yet: start afresh);
        without it, earlier records are deleted first.
    settings : dict
        Everything that must match to resume (plain JSON values).
    """

    def __init__(self, directory: str, interval: int, resume: bool, settings: dict[str, Any]):
        if interval < 1:
            raise ValueError(f"checkpoint interval must be positive; got {interval}")
        self.directory, self.interval, self.resume = directory.rstrip("/"), interval, resume
        settings = {**settings, "model_format": FORMAT_VERSION}  # the finished Cs' records are models
        _check_or_write(f"{self.directory}/{SETTINGS_FILE}", _plain(settings), resume)
        if not resume:
            clear(f"{self.directory}/refit")

    def path(self, index: int, train_engine, valid_engine) -> "PathCheckpoints":
        """The records of path ``index`` (a fold, or 0 for the validation set), its data checked."""
        directory = f"{self.directory}/path-{index}"
        fingerprint = data_fingerprint(train_engine)
        meta = {"train_data": fingerprint, "valid_data": data_fingerprint(valid_engine)}
        if not self.resume:  # an earlier search's records must not be taken for this one's
            for name in list_names(directory):
                if name.startswith("C-"):
                    (delete if name.endswith(".json") else clear)(f"{directory}/{name}")
        _check_or_write(f"{directory}/{DATA_FILE}", meta, self.resume)
        return PathCheckpoints(directory, self.interval, self.resume, fingerprint)

    def refit(self, engine, settings: dict[str, Any], w0: np.ndarray | None) -> Resumption:
        """Train checkpoints of the k-fold refit (resumed when asked)."""
        return begin(f"{self.directory}/refit", interval=self.interval, resume=self.resume, engine=engine,
                     settings=settings, w0=w0)


class PathCheckpoints:
    """One path's finished Cs (``C-JJJ.json``) and the train checkpoints of the C in progress."""

    def __init__(self, directory: str, interval: int, resume: bool, fingerprint: dict[str, Any]):
        self.directory, self.interval, self.resume, self.fingerprint = directory, interval, resume, fingerprint

    def _record_path(self, j: int) -> str:
        return f"{self.directory}/C-{j:03d}.json"

    def finished(self, j: int, C: float) -> tuple[RankingModel, dict] | None:
        """The model and metrics recorded for C number ``j``, or ``None`` (not finished, or not resuming)."""
        path = self._record_path(j)
        if not self.resume or path.rsplit("/", 1)[1] not in list_names(self.directory):
            return None
        try:
            record = json.loads(read_text(path))
            model = RankingModel.from_dict(record["model"], source=path)
            metrics = record["metrics"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"tune checkpoint {path} is not a sparkrank tune record: {exc}") from None
        if model.C != C:
            raise CheckpointMismatchError(f"tune checkpoint {path} holds C={model.C!r}, the grid's C number "
                                          f"{j + 1} is {C!r}; use another --checkpoint-dir")
        log.info("C = %g (number %d) was finished by the interrupted search: reusing %s", C, j + 1, path)
        return model, metrics

    def begin(self, j: int, engine, settings: dict[str, Any], w0: np.ndarray | None) -> Resumption:
        """Train checkpoints of C number ``j`` (resumed from the newest one when resuming)."""
        return begin(f"{self.directory}/C-{j:03d}", interval=self.interval, resume=self.resume, engine=engine,
                     settings=settings, w0=w0, fingerprint=self.fingerprint)

    def record(self, j: int, model: RankingModel, metrics: dict) -> None:
        """C number ``j`` is finished: record it, then drop its train checkpoints."""
        text = json.dumps({"model": model.to_dict(), "metrics": metrics}, default=json_default)
        write_text_atomic(self._record_path(j), text)
        clear(f"{self.directory}/C-{j:03d}")


def _plain(value: Any) -> Any:
    """``value`` as it reads back from JSON (so a comparison after a round trip is fair)."""
    return json.loads(json.dumps(value, default=json_default))


def _check_or_write(path: str, meta: dict[str, Any], resume: bool) -> None:
    directory, name = path.rsplit("/", 1)
    if resume and name in list_names(directory):
        try:
            found = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise ValueError(f"tune checkpoint {path} is not JSON: {exc}") from None
        check_compatible({**found, "path": path}, meta)
        return
    write_text_atomic(path, json.dumps(meta))
