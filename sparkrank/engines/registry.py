"""Every engine comes from here: :data:`ENGINES` and :func:`make_engine`.

Design
------
An engine owns *where* ``X·w``, the score-space kernel and ``Xᵀ·c`` run (docs/design.md §2); what it
needs from the outside world is rows.  Rows come from a
:class:`~sparkrank.io.sources.Source`, which can hand them over in the two shapes engines
take: a local :class:`~sparkrank.data.block.RankingData` (``Source.ranking_data``) or a Spark
DataFrame with its column names (``Source.dataframe``).  So an engine entry here is a
name, a one-line description, the keyword options it accepts, and a ``build(source,
**options)`` function; the CLI, ``tune``, the jobs and ``LinearRanker`` only ever call
:func:`make_engine`, and ``--engine`` offers whatever :data:`ENGINES` holds.

Adding a third engine (say one on Ray or Dask) is therefore one file and one line:

1. ``sparkrank/engines/ray.py`` with a class implementing
   :class:`~sparkrank.engines.base.Engine` (``summary``, ``run``, ``feature_statistics``,
   ``close``) and a ``build(source, **options)`` that reads the source in the shape it
   wants (``source.dataframe(spark)`` or ``source.ranking_data()``, or the source's
   ``uris`` and ``format`` with its own reader);
2. one :class:`EngineEntry` line in :data:`ENGINES` below.

Solvers, objectives, the CLI's option parsing and the tests of the other engines do not
change; the bit-identity tests of ``tests/test_spark_engine.py`` show what a new engine
must reproduce.

:func:`choose_engine` is the ``--engine auto`` rule, kept here so the reason it prints
is next to the engines it chooses between.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..data.block import DataError
from .base import Engine

log = logging.getLogger("sparkrank")


@dataclass(frozen=True)
class EngineEntry:
    """One engine: its name, what it is, the options it accepts, and its factory."""

    name: str
    description: str
    options: tuple[str, ...]
    build: Callable[..., Engine]


def _build_local(source, *, n_features: int | None = None, dtype: type = np.float64,
                 drop_invalid_rows: bool = False, threads: int | None = None) -> Engine:
    from .local import LocalEngine
    from .threads import check_threads

    threads = check_threads(threads)  # the same threads parse the text (SVMlight) and run the passes
    return LocalEngine(_ranking_data(source, n_features, dtype, drop_invalid_rows, threads), threads=threads)


def _ranking_data(source, n_features, dtype, drop_invalid_rows, threads=1):
    from ..data import heap, memory
    from ..data.block import RankingData

    if isinstance(source, RankingData):
        return source if n_features is None else source.with_features(n_features)
    found = input_shape(source, np.dtype(dtype).itemsize)
    if found is not None:  # one line now rather than a MemoryError halfway through the read
        shape = found if n_features is None else dataclasses.replace(found, features=max(n_features, found.features))
        memory.check_local(shape, threads, source.name)
    data = source.ranking_data(n_features=n_features, dtype=dtype, drop_invalid_rows=drop_invalid_rows,
                               threads=threads)
    heap.return_freed_memory()  # what the read freed on its threads (data/heap.py)
    return data


def _build_spark(source, *, spark=None, n_features: int | None = None, dtype: type = np.float64,
                 drop_invalid_rows: bool = False, placement: str = "auto", num_partitions: int | None = None,
                 aggregation_depth: int | None = None) -> Engine:
    from ..io.fs import active_or_new_session
    from .spark import SparkEngine

    df, cols = source.dataframe(spark or active_or_new_session())
    local_files = getattr(source, "local_parquet_files", None)
    hint = None if num_partitions else input_shape(source, np.dtype(dtype).itemsize)
    try:
        return SparkEngine(df, label_col=cols.label, qid_col=cols.qid, features_col=cols.features,
                           placement=placement, num_partitions=num_partitions, dtype=dtype,
                           aggregation_depth=aggregation_depth, n_features=n_features,
                           drop_invalid_rows=drop_invalid_rows, parquet_files=local_files() if local_files else None,
                           row_locator=getattr(source, "locate_row", None), size_hint=hint)
    except Exception as exc:  # a value the --where cannot cast: say which input and filter, as in-process
        from ..io.where import cannot_read
        from ..spark.errors import CAST_CONDITION, data_error_in

        error = data_error_in(exc)
        where = getattr(source, "where", None)
        if error is None or not where or not str(error).startswith(f"[{CAST_CONDITION}]"):
            raise
        raise DataError(cannot_read(source.name, where, error, getattr(source, "filter_option", "--where"))) from None


def input_shape(source, itemsize: int):
    """What a source's local files hold, told before they are read (the memory model's
    :class:`~sparkrank.data.memory.DataShape`: Parquet footers, a sample of SVMlight text), or
    ``None`` when that cannot be told (other formats, remote files, compressed text)."""
    from ..data import memory
    from ..io import uri as U

    files = [(U.local_path(entry.path), entry.size) for entry in getattr(source, "files", ())]
    if not files or any(path is None for path, _ in files):
        return None
    columns = source.columns
    try:
        if source.format == "svmlight":
            return memory.svmlight_shape(files, itemsize)
        if source.format != "parquet":
            return None
        import pyarrow.parquet as pq  # Parquet only: the SVMlight path needs neither Arrow nor scipy

        from ..data.arrow import FeatureSpec

        paths = [path for path, _ in files]
        if columns.feature_cols:  # named numeric columns: dense rows of them
            rows = sum(pq.ParquetFile(path).metadata.num_rows for path in paths)
            return memory.DataShape(rows, len(columns.feature_cols), itemsize=itemsize)
        spec = FeatureSpec.detect(pq.read_schema(paths[0]).names, columns.features)
        return memory.parquet_shape(paths, spec, itemsize)
    except (OSError, ValueError):  # not readable or not as expected: the read says why
        return None


_COMMON = ("n_features", "dtype", "drop_invalid_rows")

#: The engines, by ``--engine`` name.
ENGINES: dict[str, EngineEntry] = {
    "local": EngineEntry("local", "in this process: one block, numba on every core (--threads)",
                         _COMMON + ("threads",), _build_local),
    "spark": EngineEntry("spark", "Spark: cached blocks on the executors (embedded local[*] unless --master "
                         "or spark-submit)", _COMMON + ("spark", "placement", "num_partitions", "aggregation_depth"),
                         _build_spark),
}


def make_engine(source, kind: str, **options: Any) -> Engine:
    """The ``kind`` engine over ``source`` (a :class:`~sparkrank.io.sources.Source`, a
    :class:`~sparkrank.io.sources.FrameSource`, or for ``local`` a ``RankingData``).

    ``options`` are the engine's keyword options (:attr:`EngineEntry.options`); ``None``
    values mean "the engine's default" and are dropped.
    """
    if kind not in ENGINES:
        raise ValueError(f"unknown engine {kind!r}; choose one of {', '.join(ENGINES)}")
    entry = ENGINES[kind]
    options = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        raise TypeError(f"the {kind} engine takes no option {unknown[0]!r} (it takes {', '.join(entry.options)})")
    return entry.build(source, **options)


# ----------------------------------------------------------------------------- --engine auto

#: An input is read in-process under ``--engine auto`` when its estimated in-memory size is
#: at most this fraction of the memory available now (the solver needs a few more vectors).
LOCAL_MEMORY_FRACTION = 0.25
#: In-memory bytes per on-disk byte, by format: SVMlight text "12:0.5 " (7 bytes) becomes
#: 12 bytes of CSR (float64 + int32); compressed files expand about 5x more.
_EXPANSION = {"svmlight": 2.0, "parquet": 4.0, "csv": 2.0, "tsv": 2.0}
_COMPRESSED_EXPANSION = 10.0


def choose_engine(requested: str, uris: list[str], *, master: str | None = None, where: str | None = None,
                  where_sql: bool = False, format: str = "auto") -> tuple[str, str]:
    """``(engine, reason)`` for ``--engine requested`` (``auto`` decides; others are kept).

    ``auto``: Spark when a master is given, under spark-submit, when an input is a URI with
    a scheme (a data lake: ``file:``, ``hdfs:``, ``s3a:`` …), when the filter is Spark SQL
    (``where_sql``: ``--where-sql``; or a ``where`` outside the grammar of
    :mod:`sparkrank.io.where`, which only Spark SQL can mean) or the format has no local
    reader, or when the local inputs would not fit in memory; otherwise local.
    """
    if requested != "auto":
        return requested, "--engine " + requested
    from ..io import uri as U

    if master:
        return "spark", f"--master {master}"
    if os.environ.get("PYSPARK_GATEWAY_PORT") or os.environ.get("SPARK_ENV_LOADED"):
        return "spark", "running under spark-submit"
    remote = [u for u in uris if U.has_scheme(u)]
    if remote:
        return "spark", f"input {remote[0]} is a URI (data lake)"
    if format == "delta":
        return "spark", "Delta tables are read by Spark"
    if where and where_sql:
        return "spark", "--where-sql is Spark SQL"
    if where:
        from ..io.where import locally_supported

        if not locally_supported(where):
            return "spark", "the filter is Spark SQL beyond the --where grammar"
    size, expanded = _local_footprint(uris)
    budget = LOCAL_MEMORY_FRACTION * _available_memory()
    if expanded > budget:
        return "spark", (f"input is {size / 2**20:.0f} MB on disk, ~{expanded / 2**30:.1f} GB in memory, "
                         f"more than {LOCAL_MEMORY_FRACTION:.0%} of the {budget / LOCAL_MEMORY_FRACTION / 2**30:.1f} "
                         "GB available")
    return "local", (f"input is local, {size / 2**20:.1f} MB on disk (~{expanded / 2**20:.1f} MB in memory) fits "
                     "in memory")


def _local_footprint(uris: list[str]) -> tuple[int, float]:
    """On-disk bytes of local inputs and their estimated in-memory size."""
    from ..io import uri as U
    from ..io.formats import format_by_suffix, is_compressed
    from ..io.fs import LOCAL

    size, expanded = 0, 0.0
    for uri in uris:
        path = U.resolve_sample(uri)
        matches = LOCAL.glob(path) if U.has_glob(path) else ([path] if LOCAL.exists(path) else [])
        for m in matches:
            for entry in LOCAL.list_files(m):
                fmt = format_by_suffix(U.basename(entry.path)) or "parquet"
                factor = _COMPRESSED_EXPANSION if is_compressed(entry.path) else _EXPANSION.get(fmt, 4.0)
                size += entry.size
                expanded += factor * entry.size
    return size, expanded


def _available_memory() -> float:
    """Bytes of memory available now (``MemAvailable``; total physical memory as a fallback)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
