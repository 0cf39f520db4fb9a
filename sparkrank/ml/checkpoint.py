"""Weight checkpoints of a ``LinearRanker`` fit: :mod:`sparkrank.checkpoints` with the
``spark`` argument pyspark.ml code passes (Hadoop URIs go through that session's JVM).

A resumed ``LinearRanker`` fit is a warm start from the newest checkpoint's weights; the
command line (``sparkrank train --checkpoint-dir ... --resume``) also restores the solver's
own state and continues bit for bit (TRON, BMRM, NCG).
"""

from __future__ import annotations

from typing import Any

from ..checkpoints import KEEP, CheckpointWriter as _Writer, checkpoint_path, latest

__all__ = ["KEEP", "CheckpointWriter", "checkpoint_path", "latest_checkpoint"]


class CheckpointWriter(_Writer):
    """A solver callback writing the weights every ``interval`` iterations to ``directory``.

    Parameters
    ----------
    spark : SparkSession
        The session whose Hadoop configuration serves URIs (it is the active one).
    directory : str
    interval : int
    meta : dict
        Facts stored beside the weights (solver, C, standardization, n_features).
    """

    def __init__(self, spark, directory: str, interval: int, meta: dict[str, Any]):
        super().__init__(directory, interval, meta)


def latest_checkpoint(spark, directory: str) -> dict[str, Any] | None:
    """The newest checkpoint in ``directory`` as a dict (``weights`` a numpy array), or ``None``.

    Use its ``weights`` as ``initialWeights`` of another fit, or set ``resumeFromCheckpoint``.
    """
    return latest(directory)
