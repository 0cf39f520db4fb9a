"""Where a ``LinearRanker`` fit runs (``engine``: ``auto``, ``local`` or ``spark``).

The engines give the same model bit for bit (ARCHITECTURE.md), so where a fit runs is a
question of speed only.  A DataFrame whose rows fit the driver -- the command line's
``--engine auto`` budget, :func:`sparkrank.engines.registry.choose_frame_engine`, on the size
the Spark engine's sizing estimates for the frame -- is collected once through Arrow (no pandas,
no per-row objects) and decoded by the Spark blocks' own decoder
(:func:`~sparkrank.engines.spark.store.decode_rows`) into one in-process block for the local
engine; a larger one is trained distributed, as before.
"""

from __future__ import annotations

import logging

log = logging.getLogger("sparkrank.ml")

def choose_fit_engine(requested: str, source, spark_params: list[str] = (),
                      parquet_files: list[str] | None = None, collects: bool = True) -> tuple[str, str]:
    """``(engine, reason)`` of a fit on ``source`` (a :class:`~sparkrank.io.sources.FrameSource`):
    :func:`sparkrank.engines.registry.choose_frame_engine` on the frame's in-memory size as the
    Spark engine's sizing estimates it (``parquet_files``: the local files a plain scan reads,
    whose footers give the exact shape).  Rows that would be collected (``collects``: not read
    from their files) must also pass the driver's JVM (``spark.driver.maxResultSize``, its heap),
    else ``auto`` trains distributed."""
    from ..engines.registry import choose_frame_engine

    def frame_bytes() -> float | None:
        if _SIZED and _SIZED[0] is source.df:  # the same DataFrame again (every evaluation of a fold)
            return _SIZED[1]
        nbytes = _frame_bytes()
        _SIZED[:] = [source.df, nbytes]
        return nbytes

    def _frame_bytes() -> float | None:
        import numpy as np

        from .. import defaults
        from ..engines.spark.sizing import input_shape
        from ..io.spark.columns import feature_spec

        df, cols = source.dataframe()
        shape = input_shape(df, feature_spec(df, cols.features), np.dtype(defaults.DTYPE).itemsize,
                            parquet_files, None)
        if shape is not None:
            return float(shape.feature_bytes())
        return _counted_bytes(df, cols.features, np.dtype(defaults.DTYPE).itemsize)

    refuse = (lambda nbytes: _driver_refusal(source.df, nbytes)) if collects else None
    return choose_frame_engine(requested, frame_bytes, spark_params, refuse)


#: The last DataFrame sized and its size: ``[frame, bytes]`` (sizing may cost two small jobs).
_SIZED: list = []


def _driver_refusal(df, nbytes: float) -> str | None:
    """Why collecting ``nbytes`` of rows would fail in the driver's JVM, or ``None``."""
    from ..data.memory import MemoryBudgetError, check_driver_results
    from ..engines.spark.sizing import SessionMemory

    sc = df.sparkSession.sparkContext
    session = SessionMemory.of(sc, local=str(sc.master).startswith("local"))
    try:
        check_driver_results(int(nbytes), "collecting the rows to the driver", session.max_result_size,
                             session.heap_bytes, session.driver_memory)
    except MemoryBudgetError as exc:
        return str(exc)
    return None


def _counted_bytes(df, features: str, itemsize: int) -> float | None:
    """Dense bytes of ``df``'s rows when Spark has no size for its plan (a cached frame not yet
    materialised): its row count times the width of its first row's features (two small jobs)."""
    if features not in df.columns:
        return None
    first = df.select(features).first()
    if first is None:
        return 0.0
    value = first[0]
    width = getattr(value, "size", None) if not isinstance(value, (list, tuple)) else len(value)
    if width is None:
        return None
    return float(df.count()) * int(width) * itemsize


def collect_rows(source, n_features: int | None = None):
    """The rows of ``source`` (a :class:`~sparkrank.io.sources.FrameSource`) as a checked
    :class:`~sparkrank.data.block.RankingData` in this process, collected once as Arrow batches
    (row and group weights too, when the source's columns name them); a bad row is one
    :class:`~sparkrank.data.block.DataError` naming the row."""
    from ..io.spark.columns import feature_spec

    df, cols = source.dataframe()
    spec = feature_spec(df, cols.features)
    qid_col = cols.qid if cols.qid in df.columns else None
    weights = source.columns.weights
    names = list(dict.fromkeys([cols.label, *([qid_col] if qid_col else []), *spec.columns, *weights.columns]))
    data = decode_collected(collect_table(df, names), cols.label, qid_col, spec, weights, source.name)
    return data if n_features is None else data.with_features(n_features)


def collect_table(df, names: list[str]):
    """The columns ``names`` of ``df`` as one Arrow table in this process: one Spark job, or none
    when ``df`` is a fold view of a frame already collected (:mod:`sparkrank.ml.fold_views`)."""
    from .fold_views import VIEWS

    viewed = VIEWS.table(df, names, _collect)
    return _collect(df, names) if viewed is None else viewed


def _collect(df, names: list[str]):
    import pyarrow as pa

    selected = df.select(*[f"`{n}`" for n in names])
    batches = selected._collect_as_arrow()
    return pa.Table.from_batches(batches, schema=None if batches else _empty_schema(selected))


def decode_collected(table, label_col: str, qid_col: str | None, spec, weights, name: str):
    """Collected rows as a checked :class:`~sparkrank.data.block.RankingData` (the Spark blocks'
    decoder); a bad row is one :class:`~sparkrank.data.block.DataError` naming ``name`` and the row."""
    from .. import defaults
    from ..data.arrow import RowError
    from ..data.block import DataError, max_features_limit
    from ..data.weights import WeightError
    from ..engines.spark.store import decode_rows

    try:
        return decode_rows(table, label_col, qid_col, spec, defaults.DTYPE, max_features_limit(), weights)
    except (RowError, WeightError) as exc:
        raise DataError(f"{name}: row {exc.row + 1}: {exc.detail}") from None


def _empty_schema(df):
    """The Arrow schema of a DataFrame without rows (``_collect_as_arrow`` returns no batch)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema)
