"""What an engine is to the application: a :class:`Backend`, one per engine, one registry entry each.

An :class:`~sparkrank.engines.base.Engine` runs training passes; a backend is everything else
that depends on where the rows live: how an input is opened, how the training engine is built
over it, how rows are scored and the scores and per-query metrics written, how data is
converted, and how rows are cut into group-wise folds (:class:`Rows`).  The use cases of
:mod:`sparkrank.app` only ever talk to a backend, so no code outside
:mod:`sparkrank.engines.registry` asks which engine runs.

:class:`InProcessBackend` is a backend whose rows are read into this process and handed to an
engine made from a :class:`~sparkrank.data.block.RankingData`: the local engine is one
(:mod:`.local_backend`); an engine of that kind needs only :meth:`InProcessBackend.engine_over`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterator, Sequence

import numpy as np

from .. import defaults
from ..data.block import DataError, RankingData, check_fixed_width, check_max_features, max_features_limit
from ..data.folds import local_split
from ..io.fs import filesystem
from ..io.outputs import check_output_dir, check_output_file, write_csv, write_parquet_file
from ..io.sources import open_source
from .base import Engine


@dataclass(frozen=True)
class EngineSettings:
    """How engines run: the options of every engine (each backend reads those that apply).

    Attributes
    ----------
    dtype : str
        Feature storage precision (``float64`` or ``float32``).
    drop_invalid_rows : bool
        Drop rows with a null or non-finite label or a null group id (counted in the log).
    threads : int, optional
        In-process engines: threads for parsing and passes (default every core).
    master, driver_memory : str, optional
        Spark: the master URL and the embedded driver's memory.
    spark_conf, packages : optional
        Spark: more settings of the embedded session (``--conf KEY=VALUE`` pairs) and jars by
        Maven coordinates (``--packages``), as :func:`sparkrank.io.spark.passthrough.spark_conf` merges them.
    partitions, aggregation_depth : int, optional
        Spark: blocks to build, ``treeAggregate`` depth.
    placement : str
        Spark: where the pair counting runs.
    verbose : bool
        Spark: INFO logs.
    """

    dtype: str = defaults.DTYPE_NAME
    drop_invalid_rows: bool = False
    threads: int | None = defaults.THREADS
    master: str | None = None
    driver_memory: str | None = None
    spark_conf: tuple[tuple[str, str], ...] = ()
    packages: str | None = None
    partitions: int | None = None
    placement: str = defaults.PLACEMENT
    aggregation_depth: int | None = None
    verbose: bool = False

    @property
    def dtype_type(self) -> type:
        return np.dtype(self.dtype).type


@dataclass(frozen=True)
class ScoreOutput:
    """Where and how ``predict`` writes scores (the Spark-only shaping options included)."""

    path: str
    prediction_col: str
    keep_cols: Sequence[str] | None = None
    rank: bool = False
    partition_by: Sequence[str] = ()
    mode: str = "error"


@dataclass(frozen=True)
class ConvertOutput:
    """Where and in which format ``convert`` writes (:mod:`sparkrank.io.formats`); ``inputs``:
    the inputs as the command named them (for the line printed)."""

    path: str
    format: Any
    inputs: Sequence[str] = ()
    n_features: int | None = None
    partition_by: Sequence[str] = ()
    mode: str = "error"


#: ``metrics(groups, scores)`` -> per-query metric columns (``evaluate --per-query``).
PerQueryMetrics = Callable[..., dict]


class Rows(ABC):
    """Training rows an engine is built over and that are cut into group-wise folds (``tune``)."""

    #: Whether :meth:`engine` builds an engine (closed after use) rather than lending one.
    owned: bool = True

    @abstractmethod
    def engine(self) -> Engine:
        """An engine over all the rows."""

    def kfold(self, k: int, seed: int):
        """A context manager over the ``k`` group-wise folds: ``part(i)`` yields the engines of
        ``(training part, held-out part)``, ``whole()`` the engine over all rows."""
        raise TypeError("k-fold needs RankingData or a Spark DataFrame/SparkSource, not an engine "
                        "(an engine cannot be split into folds)")

    @property
    def data(self) -> RankingData | None:
        """The rows in this process, when they are (``report``'s score distribution)."""
        return None


class EngineRows(Rows):
    """An engine given as it is: validation sets only (an engine cannot be split into folds)."""

    owned = False

    def __init__(self, engine: Engine):
        self._engine = engine

    def engine(self) -> Engine:
        return self._engine


class Backend(ABC):
    """One engine's way of doing everything the use cases need (module docstring).

    Parameters
    ----------
    settings : EngineSettings
    session : optional
        A running session of the engine's cluster to use (``None``: the backend's own).
    """

    #: The ``--engine`` name (its description is its registry entry's).
    name: ClassVar[str]
    #: The keyword options of :meth:`build`.
    options: ClassVar[tuple[str, ...]] = ("n_features", "dtype", "drop_invalid_rows")

    def __init__(self, settings: EngineSettings = EngineSettings(), session=None):
        self.settings = settings
        self.check_settings()
        self.session = session

    #: The session whose Hadoop ``FileSystem`` serves URIs with a scheme (``None``: the active
    #: one when there is one, else ``file:`` URIs are this machine's disk).
    session = None

    def check_settings(self) -> None:
        """Refuse settings this engine cannot honour (before any work)."""

    # -- building ------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def build(cls, source, **options) -> Engine:
        """An engine over ``source`` with keyword :attr:`options` (``make_engine``)."""

    @classmethod
    def adopt(cls, rows) -> Rows | None:
        """``rows`` (a Python object given to ``tune`` or ``train``) as this engine's :class:`Rows`,
        or ``None`` when they are not this engine's."""
        return None

    # -- inputs --------------------------------------------------------------------------------
    def open_source(self, uris, *, format: str = "auto", columns=None, where: str | None = None,
                    where_sql: bool = False):
        """The :class:`~sparkrank.io.sources.Source` of ``uris`` (files found, format decided)."""
        kwargs = {} if columns is None else {"columns": columns}
        return open_source(uris, format=format, where=where, where_sql=where_sql, spark=self.session, **kwargs)

    @abstractmethod
    def engine(self, source, n_features: int | None = None) -> Engine:
        """The training engine over ``source`` (``n_features``: the width to read it as)."""

    def fixed_width(self, source) -> bool:
        """Whether ``source``'s rows are of a fixed width, so that a model wider than them is an
        error (:func:`~sparkrank.data.block.check_fixed_width`)."""
        return source.fixed_width()

    def rows(self, source, model=None) -> RankingData | None:
        """``source``'s rows in this process (padded to ``model``'s width), when this engine
        reads them here; ``None`` for an engine whose rows stay elsewhere."""
        return None

    @abstractmethod
    def tune_rows(self, source) -> Rows:
        """``source`` as :class:`Rows` for ``tune``."""

    # -- outputs -------------------------------------------------------------------------------
    def filesystem(self, path: str):
        """The file system that serves ``path`` for this engine."""
        return filesystem(path, self.session)

    def check_output_file(self, path: str) -> None:
        check_output_file(path, self.session)

    def check_output_dir(self, path: str, mode: str) -> None:
        check_output_dir(path, mode, self.session)

    @abstractmethod
    def check_scores_output(self, out: ScoreOutput) -> None:
        """Refuse a ``predict`` output this engine cannot write, before any work."""

    @abstractmethod
    def write_scores(self, source, model, out: ScoreOutput) -> str:
        """Score ``source``'s rows with ``model`` and write them; the line to print."""

    @abstractmethod
    def check_per_query_output(self, path: str, mode: str) -> None:
        """Refuse an ``evaluate --per-query`` target this engine cannot write, before any work."""

    @abstractmethod
    def write_per_query(self, source, model, metrics: PerQueryMetrics, path: str, mode: str) -> None:
        """Per-query metrics of ``model`` on ``source`` to ``path`` (CSV when it ends in ``.csv``)."""

    @abstractmethod
    def check_convert_output(self, out: ConvertOutput) -> None:
        """Refuse a ``convert`` output this engine cannot write, before the input is opened."""

    @abstractmethod
    def convert(self, source, out: ConvertOutput) -> str:
        """Write ``source``'s rows in ``out.format``; the line to print."""


def input_shape(source, itemsize: int):
    """What ``source``'s local files hold, told before they are read
    (:meth:`~sparkrank.io.sources.Source.data_shape`), or ``None`` when that cannot be told (a
    DataFrame, remote files, a format that cannot say)."""
    data_shape = getattr(source, "data_shape", None)
    return None if data_shape is None else data_shape(itemsize)


def check_local_memory(source, n_features: int | None, dtype, threads: int) -> None:
    """Refuse in one line, before it is read, an input whose rows would not fit in this
    process's memory (:func:`sparkrank.data.memory.check_local`) rather than fail halfway."""
    from ..data import memory

    found = input_shape(source, np.dtype(dtype).itemsize)
    # an input wider than the feature limit is left to the read, whose refusal names the line
    # or row and --max-features (the estimate counts the solver's vectors of the full width)
    if found is not None and found.features <= max_features_limit():
        shape = found if n_features is None else dataclasses.replace(found, features=max(n_features, found.features))
        memory.check_local(shape, threads, source.name)


def is_csv(path: str) -> bool:
    """Whether a per-query target is one CSV file (else Parquet)."""
    return path.lower().endswith(".csv")


def score_format(path: str) -> str | None:
    """The format a ``predict --output`` name asks for, the same rule on both engines: ``csv``
    (``*.csv``), ``parquet`` (``*.parquet``, ``*.pq``), or ``None`` for the engine's own (one score
    per line in-process, a Parquet directory on Spark)."""
    name = path.lower()
    return "csv" if name.endswith(".csv") else "parquet" if name.endswith((".parquet", ".pq")) else None


# ----------------------------------------------------------------------------- in this process


class InProcessRows(Rows):
    """Rows held in this process; folds are split up front (:func:`~sparkrank.data.folds.local_split`)
    and an engine over all rows is built only when the refit asks for it."""

    def __init__(self, data: RankingData, engine_over: Callable[[RankingData], Engine]):
        self._data, self._engine_over = data, engine_over

    @property
    def data(self) -> RankingData:
        return self._data

    def engine(self) -> Engine:
        return self._engine_over(self._data)

    def kfold(self, k: int, seed: int):
        return _InProcessFolds(self, k, seed)


class _InProcessFolds:
    def __init__(self, rows: InProcessRows, k: int, seed: int):
        self.rows, self.k, self.seed = rows, k, seed
        self._whole: Engine | None = None

    def __enter__(self) -> "_InProcessFolds":
        self._parts = local_split(self.rows.data, self.k, self.seed)
        return self

    @contextmanager
    def part(self, fold: int) -> Iterator[tuple[Engine, Engine]]:
        tr_data, va_data = self._parts[fold]
        with self.rows._engine_over(tr_data) as tr, self.rows._engine_over(va_data) as va:
            yield tr, va

    def whole(self) -> Engine:
        if self._whole is None:
            self._whole = self.rows.engine()
        return self._whole

    def __exit__(self, *exc) -> None:
        if self._whole is not None:
            whole, self._whole = self._whole, None
            whole.close()


class InProcessBackend(Backend):
    """A backend whose rows are read into this process (module docstring): an engine of this
    kind defines :meth:`engine_over` (and :attr:`name`)."""

    options: ClassVar[tuple[str, ...]] = ("n_features", "dtype", "drop_invalid_rows")

    @classmethod
    @abstractmethod
    def engine_over(cls, data: RankingData, **options) -> Engine:
        """The engine over rows in this process."""

    @classmethod
    def read(cls, source, *, n_features: int | None = None, dtype: type = defaults.DTYPE,
             drop_invalid_rows: bool = False, threads: int | None = defaults.THREADS) -> RankingData:
        """``source``'s rows (a ``RankingData`` as it is, or widened to ``n_features``)."""
        if isinstance(source, RankingData):
            return source if n_features is None else source.with_features(n_features)
        return source.ranking_data(n_features=n_features, dtype=dtype, drop_invalid_rows=drop_invalid_rows,
                                   threads=threads)

    @classmethod
    def build(cls, source, *, n_features=None, dtype=defaults.DTYPE, drop_invalid_rows=False, **options):
        return cls.engine_over(cls.read(source, n_features=n_features, dtype=dtype,
                                        drop_invalid_rows=drop_invalid_rows), **options)

    @classmethod
    def adopt(cls, rows) -> Rows | None:
        if isinstance(rows, RankingData):
            return InProcessRows(rows, cls.engine_over)
        return None

    def engine_options(self) -> dict:
        """The keyword options of :meth:`engine_over` from the settings."""
        return {}

    def _read(self, source, n_features: int | None = None) -> RankingData:
        s = self.settings
        return source.ranking_data(n_features=n_features, dtype=s.dtype_type, drop_invalid_rows=s.drop_invalid_rows)

    def engine(self, source, n_features=None):
        return self.engine_over(self._read(source, n_features), **self.engine_options())

    def rows(self, source, model=None):
        data = self._read(source)
        if model is None:
            return data
        model.check_width(data.n_features, source.name)
        if data.n_features < model.n_features and self.fixed_width(source):
            check_fixed_width(data.n_features, model.n_features, model.source, source.name)
        return data.with_features(model.n_features)

    def tune_rows(self, source):
        options = self.engine_options()
        return InProcessRows(self._read(source), lambda data: self.engine_over(data, **options))

    # -- outputs -------------------------------------------------------------------------------
    def check_scores_output(self, out):
        spark_only = [flag for flag, given in (("--keep-cols", out.keep_cols), ("--rank", out.rank),
                                               ("--partition-by", out.partition_by)) if given]
        if spark_only:
            raise ValueError(f"{', '.join(spark_only)} shape the output of the Spark engine; "
                             f"the {self.name} engine writes the scores alone, in input order")
        self.check_output_file(out.path)

    def write_scores(self, source, model, out):
        data = self.rows(source, model)
        scores = data.to_input_order(model.predict(data))
        kind = score_format(out.path)
        if kind is None:
            self.filesystem(out.path).write_text(out.path, "".join(f"{v:.17g}\n" for v in scores))
            return f"wrote {scores.shape[0]} scores to {out.path}"
        # one column, the score, in input order: scoring reads no group ids from Parquet or CSV rows
        # (table.py), so a group column would come and go with the input's format
        if kind == "csv":
            write_csv(out.path, [out.prediction_col], [(v,) for v in scores.tolist()])
        else:
            write_parquet_file(out.path, [out.prediction_col], [scores.tolist()])
        return f"wrote {scores.shape[0]} scores ({out.prediction_col}) as {kind.upper()} to {out.path}"

    def check_per_query_output(self, path, mode):
        self.check_output_file(path)

    def write_per_query(self, source, model, metrics, path, mode):
        data = self.rows(source, model)
        if data.qids is None:
            raise DataError(f"{source.name} has no group ids; --per-query needs them")
        per = metrics(data.groups, model.predict(data))
        header = [source.columns.group_name or "qid", *per]
        by_qid = np.argsort(data.qids, kind="stable")  # queries by id, as the Spark engine orders them
        columns = [data.qids[by_qid].tolist(), *[per[k][by_qid].tolist() for k in per]]  # counts stay integers
        if is_csv(path):
            write_csv(path, header, list(zip(*columns)))
        else:
            write_parquet_file(path, header, columns)

    def check_convert_output(self, out):
        check_max_features(out.n_features or 0, None, "--n-features")
        if out.partition_by:
            raise ValueError("--partition-by needs the Spark engine")
        self.check_output_file(out.path)

    def convert(self, source, out):
        data = self._read(source)
        if out.n_features is not None:
            if out.n_features < data.n_features:
                raise DataError(f"{source.name} has {data.n_features} feature columns, more than "
                                f"--n-features {out.n_features}")
            data = data.with_features(out.n_features)
        out.format.write_local(out.path, data)
        return f"wrote {data.n_rows} rows ({data.n_features} features, {data.groups.n_groups} groups) to {out.path}"


def replace_settings(settings: EngineSettings, **changes) -> EngineSettings:
    """``settings`` with ``changes`` (a copy)."""
    return dataclasses.replace(settings, **changes)
