"""Weight checkpoints during a fit, on any Hadoop path, and picking the latest one up.

A checkpoint is a directory ``<checkpointDir>/iter-NNNNNNNN`` holding one JSON text line
(written through Spark, so HDFS/S3/ABFS paths work like local ones) with the iteration,
the solver's current weights, the solver, ``C`` and the standardization kind.  Spark
writes ``_SUCCESS`` last, so a checkpoint cut short by a crash is never picked up.  The
weights are in the solver's space (standardized when ``standardization`` is on), which is
what ``train(w0=...)`` expects; a resumed fit refits the same standardization from the
same data.  Only the newest :data:`KEEP` checkpoints are kept.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import numpy as np

log = logging.getLogger("sparkrank.ml")

#: How many checkpoints a fit keeps (older ones are deleted after each write).
KEEP = 2
_PREFIX = "iter-"


def _fs(spark, directory: str):
    """The Hadoop FileSystem and Path of ``directory`` (through the JVM, like Spark's MLWriter)."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(directory)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _complete_checkpoints(spark, directory: str) -> list[tuple[int, str]]:
    """``(iteration, path)`` of every complete checkpoint in ``directory``, oldest first."""
    fs, root = _fs(spark, directory)
    if not fs.exists(root):
        return []
    found = []
    for status in fs.listStatus(root):
        name = status.getPath().getName()
        if status.isDirectory() and name.startswith(_PREFIX) and name[len(_PREFIX):].isdigit():
            child = status.getPath().toString()
            if fs.exists(spark.sparkContext._jvm.org.apache.hadoop.fs.Path(child + "/_SUCCESS")):
                found.append((int(name[len(_PREFIX):]), child))
    return sorted(found)


class CheckpointWriter:
    """A solver ``callback(iteration, w, record)`` writing ``w`` every ``interval`` iterations.

    Parameters
    ----------
    spark : SparkSession
    directory : str
        Any Hadoop path; created if missing.
    interval : int
    meta : dict
        Facts stored beside the weights (solver, C, standardization, n_features).
    """

    def __init__(self, spark, directory: str, interval: int, meta: dict[str, Any]):
        if interval < 1:
            raise ValueError(f"checkpointInterval must be positive; got {interval}")
        self.spark, self.directory, self.interval, self.meta = spark, directory.rstrip("/"), interval, dict(meta)
        self.written: list[str] = []

    def __call__(self, iteration: int, w: np.ndarray, record: dict[str, Any]) -> None:
        if iteration % self.interval:
            return
        path = checkpoint_path(self.directory, iteration)
        fs, p = _fs(self.spark, path)
        if not self.written:
            # an earlier fit's checkpoints (already read if this fit resumes from one) would
            # outrank this fit's by iteration number: the directory holds one fit at a time
            for _, old in _complete_checkpoints(self.spark, self.directory):
                fs.delete(self.spark.sparkContext._jvm.org.apache.hadoop.fs.Path(old), True)
        if fs.exists(p):  # an incomplete write left by an earlier fit
            fs.delete(p, True)
        line = json.dumps({**self.meta, "iteration": int(iteration), "record": _plain(record),
                           "weights": [float(v) for v in w]})
        self.spark.createDataFrame([(line,)], "value string").coalesce(1).write.text(path)
        self.written.append(path)
        log.info("checkpoint of iteration %d written to %s", iteration, path)
        for _, old in _complete_checkpoints(self.spark, self.directory)[:-KEEP]:
            fs.delete(self.spark.sparkContext._jvm.org.apache.hadoop.fs.Path(old), True)


def latest_checkpoint(spark, directory: str) -> dict[str, Any] | None:
    """The newest complete checkpoint in ``directory`` as a dict (``weights`` a numpy array), or ``None``.

    Use its ``weights`` as ``initialWeights`` of another fit, or set ``resumeFromCheckpoint``.
    """
    found = _complete_checkpoints(spark, directory)
    if not found:
        return None
    iteration, path = found[-1]
    text = "".join(r.value for r in spark.read.text(path, wholetext=True).collect())
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"checkpoint {path} is not valid JSON: {exc}") from exc
    record["weights"] = np.asarray(record["weights"], dtype=np.float64)
    record["path"] = path
    return record


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in record.items():
        if isinstance(v, (np.floating, np.integer)):
            v = v.item()
        if isinstance(v, (int, float, str, bool)) or v is None:
            out[k] = v
    return out


def checkpoint_path(directory: str, iteration: int) -> str:
    """Where the checkpoint of ``iteration`` is written."""
    return os.path.join(directory.rstrip("/"), f"{_PREFIX}{iteration:08d}")
