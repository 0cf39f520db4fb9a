"""The Spark engine: blocks decoded once and kept on the executors (:mod:`.store`), the tasks
of a pass over them (:mod:`.tasks`), kernel state kept beside them (:mod:`.kernel_state`),
blocks read straight from Parquet row groups (:mod:`.parquet_blocks`), fold views
(:mod:`.folds`, :mod:`.subsets`), scoring on the executors (:mod:`.scoring`), the
:class:`SparkEngine` that drives them (:mod:`.engine`) and its backend (:mod:`.backend`).

``SparkEngine`` and ``auto_aggregation_depth`` are also names of this package, imported when first
asked for (the package's other modules need neither Spark's engine nor Arrow).
"""

_LAZY = ("SparkEngine", "auto_aggregation_depth")


def __getattr__(name: str):
    if name in _LAZY:
        from . import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
