"""Every engine comes from here, and only here is it asked which engine runs.

Design
------
An engine owns *where* ``X·w``, the score-space kernel and ``Xᵀ·c`` run (docs/design.md §2); its
:class:`~sparkrank.engines.backend.Backend` owns everything else that depends on where the rows
live: opening an input, building the training engine, scoring rows and writing scores and
per-query metrics, converting data, and cutting rows into group-wise folds.  An entry here is a
name, a one-line description and the backend (imported when first used, so the local engine
never imports Spark's or Arrow's modules).  The CLI, ``tune``, ``train``, the jobs and
``LinearRanker`` reach an engine through :func:`backend`, :func:`make_engine` or
:func:`rows_for`, and ``--engine`` offers whatever :data:`ENGINES` holds.

Adding an engine (say one on Ray or Dask) is therefore one module and one line:

1. ``sparkrank/engines/ray.py`` with a class implementing
   :class:`~sparkrank.engines.base.Engine` (``summary``, ``run``, ``feature_statistics``,
   ``close``) and its :class:`~sparkrank.engines.backend.Backend`; an engine that takes rows
   read into this process needs only an :class:`~sparkrank.engines.backend.InProcessBackend`
   with ``engine_over(data)``;
2. one :class:`EngineEntry` in :data:`ENGINES` below (or :func:`register_engine`).

Solvers, objectives, the use cases, the CLI's option parsing and the tests of the other engines
do not change; the bit-identity tests of ``tests/test_spark_engine.py`` show what a new engine
must reproduce, and ``tests/test_engine_registry.py`` adds a toy engine this way.

:func:`choose_engine` is the ``--engine auto`` rule, kept here so the reason it prints
is next to the engines it chooses between.
"""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .backend import Backend, EngineRows, EngineSettings, InProcessBackend, Rows
from .base import Engine

log = logging.getLogger("sparkrank")


@dataclass(frozen=True)
class EngineEntry:
    """One engine: its name, what it is, and its backend (a class, or ``"module:Class"``)."""

    name: str
    description: str
    backend: Any

    def load(self) -> type[Backend]:
        """The backend class (imported on first use)."""
        if isinstance(self.backend, str):
            module, name = self.backend.split(":")
            return getattr(importlib.import_module(module), name)
        return self.backend


#: The engines, by ``--engine`` name.
ENGINES: dict[str, EngineEntry] = {
    "local": EngineEntry("local", "in this process: one block, numba on every core (--threads)",
                         "sparkrank.engines.local_backend:LocalBackend"),
    "spark": EngineEntry("spark", "Spark: cached blocks on the executors (embedded local[*] unless --master "
                         "or spark-submit)", "sparkrank.engines.spark.backend:SparkBackend"),
}


def register_engine(entry: EngineEntry) -> None:
    """Add an engine (``--engine``, ``make_engine``, ``tune`` and ``train`` pick it up)."""
    if entry.name in ENGINES or entry.name == "auto":
        raise ValueError(f"engine {entry.name!r} is registered already")
    ENGINES[entry.name] = entry


def unregister_engine(name: str) -> None:
    """Remove an engine added by :func:`register_engine`."""
    ENGINES.pop(name, None)


def _entry(kind: str) -> EngineEntry:
    if kind not in ENGINES:
        raise ValueError(f"unknown engine {kind!r}; choose one of {', '.join(ENGINES)}")
    return ENGINES[kind]


def backend(kind: str, settings: EngineSettings = EngineSettings(), session=None) -> Backend:
    """The ``kind`` engine's backend for one command (a Spark backend starts its session unless
    ``session``, a running one, is given)."""
    return _entry(kind).load()(settings, session=session)


def evaluates_spark_sql(kind: str) -> bool:
    """Whether the ``kind`` engine evaluates a Spark SQL row filter (``--where-sql``)."""
    return bool(getattr(_entry(kind).load(), "spark_sql", False))


def make_engine(source, kind: str, **options: Any) -> Engine:
    """The ``kind`` engine over ``source`` (a :class:`~sparkrank.io.sources.Source`, a
    :class:`~sparkrank.io.sources.FrameSource`, or for an in-process engine a ``RankingData``).

    ``options`` are the engine's keyword options (its backend's ``options``); ``None``
    values mean "the engine's default" and are dropped.
    """
    cls = _entry(kind).load()
    options = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(options) - set(cls.options))
    if unknown:
        raise TypeError(f"the {kind} engine takes no option {unknown[0]!r} (it takes {', '.join(cls.options)})")
    return cls.build(source, **options)


def rows_for(rows) -> Rows:
    """Training rows given to ``tune`` or ``train`` (a ``RankingData``, a Spark DataFrame or
    ``SparkSource``, an engine, or rows of a backend) as :class:`~sparkrank.engines.backend.Rows`
    of the engine they belong to."""
    if isinstance(rows, Rows):
        return rows
    if isinstance(rows, Engine):
        return EngineRows(rows)
    for entry in ENGINES.values():
        adopted = entry.load().adopt(rows)
        if adopted is not None:
            return adopted
    raise TypeError(f"expected RankingData, an Engine, a SparkSource or a Spark DataFrame, got {type(rows).__name__}")


def engine_for(rows) -> Engine:
    """An engine over ``rows`` (see :func:`rows_for`); an engine is returned as it is."""
    return rows_for(rows).engine()


# ----------------------------------------------------------------------------- --engine auto

#: An input is read in-process under ``--engine auto`` when its estimated in-memory size is
#: at most this fraction of the memory available now (the solver needs a few more vectors).
LOCAL_MEMORY_FRACTION = 0.25
#: In-memory bytes per on-disk byte of a compressed file (a format's own factor,
#: :attr:`~sparkrank.io.formats.base.Format.memory_expansion`, is for uncompressed ones: SVMlight
#: text "12:0.5 " (7 bytes) becomes 12 bytes of CSR, float64 + int32); of a file no name
#: identifies, Parquet's.
_COMPRESSED_EXPANSION = 10.0
_UNNAMED_EXPANSION = 4.0


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
    if format != "auto":
        from ..io.formats.registry import get_format

        fmt = get_format(format)
        if not fmt.local:
            return "spark", fmt.spark_only_reason
    if where and where_sql:
        return "spark", "--where-sql is Spark SQL"
    if where:
        from ..io.where import locally_supported

        if not locally_supported(where):
            return "spark", "the filter is Spark SQL beyond the --where grammar"
    size, expanded = _local_footprint(uris)
    budget = in_process_budget()
    if expanded > budget:
        return "spark", (f"input is {size / 2**20:.0f} MB on disk, ~{expanded / 2**30:.1f} GB in memory, "
                         f"more than {LOCAL_MEMORY_FRACTION:.0%} of the {budget / LOCAL_MEMORY_FRACTION / 2**30:.1f} "
                         "GB available")
    return "local", (f"input is local, {size / 2**20:.1f} MB on disk (~{expanded / 2**20:.1f} MB in memory) fits "
                     "in memory")


def in_process_budget() -> float:
    """Bytes of rows read in-process under ``--engine auto`` (and ``LinearRanker(engine="auto")``):
    :data:`LOCAL_MEMORY_FRACTION` of the memory available now."""
    return LOCAL_MEMORY_FRACTION * _available_memory()


def choose_frame_engine(requested: str, frame_bytes: Callable[[], float | None],
                        spark_params: Sequence[str] = (),
                        refuse_collect: Callable[[float], str | None] | None = None) -> tuple[str, str]:
    """``(engine, reason)`` of a ``LinearRanker`` fit on a DataFrame (``engine=requested``;
    ``auto`` decides): Spark when a Spark-only param was set (``spark_params``: partitions,
    placement, aggregation depth), when the frame's in-memory size (``frame_bytes()``, Spark's
    estimate) is unknown or above :func:`in_process_budget`, or when ``refuse_collect(size)``
    gives a reason the rows cannot be collected (the driver's JVM); otherwise the local engine on
    the rows collected to the driver.  The engines give the same model bit for bit."""
    if requested != "auto":
        return requested, f"engine={requested}"
    if spark_params:
        return "spark", f"{spark_params[0]} is set"
    need = frame_bytes()
    if need is None:
        return "spark", "the DataFrame's size is unknown"
    budget = in_process_budget()
    if need > budget:
        return "spark", f"~{need / 2**20:.0f} MB in memory, more than the driver's {budget / 2**20:.0f} MB"
    refusal = None if refuse_collect is None else refuse_collect(need)
    if refusal is not None:
        return "spark", refusal
    return "local", f"~{need / 2**20:.1f} MB in memory fits the driver"


def runs_in_process(kind: str) -> bool:
    """Whether the ``kind`` engine trains on rows in this process (its backend reads them here)."""
    return issubclass(_entry(kind).load(), InProcessBackend)


def _local_footprint(uris: list[str]) -> tuple[int, float]:
    """On-disk bytes of local inputs and their estimated in-memory size."""
    from ..io import uri as U
    from ..data.compression import is_compressed
    from ..io.formats.registry import format_by_suffix
    from ..io.fs import LOCAL

    size, expanded = 0, 0.0
    for uri in uris:
        path = U.resolve_sample(uri)
        matches = LOCAL.glob(path) if U.has_glob(path) else ([path] if LOCAL.exists(path) else [])
        for m in matches:
            for entry in LOCAL.list_files(m):
                fmt = format_by_suffix(U.basename(entry.path))
                factor = (_COMPRESSED_EXPANSION if is_compressed(entry.path) else
                          fmt.memory_expansion if fmt is not None else _UNNAMED_EXPANSION)
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
