"""The plain settings the use cases take, and the one way a command gets its backend.

The command line (:mod:`sparkrank.cli`), the jobs (through it) and ``LinearRanker`` fill these
dataclasses; their defaults are :mod:`sparkrank.defaults`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

from .. import defaults
from ..engines.backend import Backend, EngineSettings
from ..engines.registry import backend, choose_engine, evaluates_spark_sql
from ..data.weights import WeightColumns
from ..io.sources import ColumnSpec

log = logging.getLogger("sparkrank")


@dataclass(frozen=True)
class InputSettings:
    """One input: its URIs, format, row filter and column roles.

    Attributes
    ----------
    uris : tuple of str
        Local paths, ``sample:NAME`` or Hadoop URIs; files, directories or globs.
    format : str
        ``auto`` or a format name (:mod:`sparkrank.io.formats.registry`).
    where : str, optional
        Row filter: the grammar of :mod:`sparkrank.io.where` (both engines), or Spark SQL when
        ``where_sql``.
    where_sql : bool
        ``where`` is Spark SQL (``--where-sql``): the Spark engine only.
    label_col, qid_col, features_col : str
        ``qid_col`` may name several columns, comma-separated; ``""`` is one global ranking.
    feature_cols : tuple of str
        Named numeric feature columns (each item may hold several, comma-separated).
    weight_col, group_weight_col : str, optional
        Row and group weight columns (:mod:`sparkrank.data.weights`).
    """

    uris: tuple[str, ...]
    format: str = "auto"
    where: str | None = None
    where_sql: bool = False
    label_col: str = "label"
    qid_col: str = "qid"
    features_col: str = "features"
    feature_cols: tuple[str, ...] = ()
    weight_col: str | None = None
    group_weight_col: str | None = None

    def columns(self, model=None) -> ColumnSpec:
        """The column roles; a model's remembered feature columns by default (a different
        ``feature_cols`` is an error: the model's weights belong to its own)."""
        remembered = (model.summary.get("feature_cols") or None) if model is not None else None
        # "f1,f2" as --qid-col takes several columns, or "f1 f2"
        given = [name for item in self.feature_cols for name in ColumnSpec.parse_group(item)] or None
        if given and remembered and list(given) != list(remembered):
            raise ValueError(f"the model was trained on --feature-cols {' '.join(remembered)}; "
                             f"--feature-cols {' '.join(given)} differs")
        return ColumnSpec(self.label_col, ColumnSpec.parse_group(self.qid_col), self.features_col,
                          tuple(given or remembered or ()),
                          weights=WeightColumns(self.weight_col, self.group_weight_col))


@dataclass(frozen=True)
class RunSettings:
    """Which engine runs (``auto``: :func:`~sparkrank.engines.registry.choose_engine`) and how."""

    engine: str = "auto"
    engine_settings: EngineSettings = field(default_factory=EngineSettings)


def open_backend(inputs: InputSettings, run: RunSettings, extra_uris: Sequence[str] = ()) -> Backend:
    """The backend of the engine that runs a command on ``inputs`` (and ``extra_uris``, e.g. a
    validation input); the decision and its reason are the first log line."""
    s = run.engine_settings
    if inputs.where and not inputs.where_sql:  # outside its grammar: refused before an engine starts
        from ..io.where import parse_filter

        parse_filter(inputs.where)
    kind, reason = choose_engine(run.engine, [*inputs.uris, *extra_uris], master=s.master, where=inputs.where,
                                 where_sql=inputs.where_sql, format=inputs.format)
    if inputs.where_sql and not evaluates_spark_sql(kind):
        from ..io.sources import refuse_where_sql_locally

        raise ValueError(refuse_where_sql_locally(inputs.where))
    log.info("engine: %s (%s)", kind, reason)
    return backend(kind, s)


def open_input(backend_: Backend, inputs: InputSettings, *, columns: ColumnSpec | None = None,
               uris: Sequence[str] | None = None):
    """The source of ``inputs`` (or of other ``uris`` read like them) on ``backend_``."""
    return backend_.open_source(list(uris or inputs.uris), format=inputs.format,
                                columns=columns if columns is not None else inputs.columns(), where=inputs.where,
                                where_sql=inputs.where_sql)


@dataclass(frozen=True)
class FitSettings:
    """One fit: the solver and its settings (:func:`sparkrank.training.train`)."""

    solver: str = defaults.SOLVER
    C: float | None = None
    lam: float | None = None
    tol: float | None = defaults.TOL
    counting: str = defaults.COUNTING
    max_iter: int | None = defaults.MAX_ITER
    solver_options: dict = field(default_factory=dict)
    standardization: str = defaults.STANDARDIZATION
    n_features: int | None = None


@dataclass(frozen=True)
class CheckpointSettings:
    """Checkpoints of a fit (:mod:`sparkrank.checkpoints`).

    Attributes
    ----------
    directory : str, optional
        Local path or Hadoop URI; ``None``: no checkpoints.
    interval : int
    resume : bool
        Start from the newest checkpoint (same settings and data, else an error).
    solver_state : bool
        Continue the solver's own state (bit for bit); ``False``: a warm start from the
        checkpoint's weights.
    option : str
        How messages name the directory's option.
    """

    directory: str | None = None
    interval: int = defaults.CHECKPOINT_INTERVAL
    resume: bool = False
    solver_state: bool = True
    option: str = "--checkpoint-dir"


def load_model(path: str):
    """The model file at ``path`` (local or any URI)."""
    from ..model import RankingModel

    return RankingModel.load(path)


def check_report_dir(backend_: Backend | None, directory: str) -> None:
    """``directory`` can receive PNGs (an ``OSError`` naming it otherwise)."""
    from ..io.fs import filesystem

    fs = backend_.filesystem(directory) if backend_ is not None else filesystem(directory)
    try:
        fs.probe_writable(directory)
    except OSError as exc:
        raise OSError(f"cannot write the report to {directory}: {exc}") from None
