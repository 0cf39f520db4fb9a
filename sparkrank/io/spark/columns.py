"""Ranking data as Spark DataFrames: the column names to train on, and SVMlight text on the executors.

Which reader reads which input is :mod:`sparkrank.io.sources`; this module keeps the
Spark-specific SVMlight reader.

SVMlight is parsed on the executors by the same numba scanner as the local reader
(:mod:`sparkrank.io.spark.svmlight`), so a large LETOR file never passes through the driver
and errors name the line in the file.
"""

from __future__ import annotations

from dataclasses import dataclass




@dataclass(frozen=True)
class Columns:
    """Column names of a ranking DataFrame."""

    label: str = "label"
    qid: str | None = "qid"
    features: str = "features"


def feature_spec(df, features_col: str):
    """Where ``df``'s features are (:meth:`FeatureSpec.detect`), with the names of the columns an
    assembled array came from (``--feature-cols``; its column metadata) for messages."""
    from ...data.arrow import FEATURE_NAMES_KEY, FeatureSpec

    fields = {f.name: f for f in df.schema.fields}
    names = fields[features_col].metadata.get(FEATURE_NAMES_KEY, ()) if features_col in fields else ()
    return FeatureSpec.detect(df.columns, features_col, names)


def read_svmlight_dataframe(spark, path, qid_type: str | None = None):
    """SVMlight/LETOR text parsed on the executors: see :mod:`sparkrank.io.spark.svmlight`.

    ``qid_type`` is accepted for compatibility and ignored: the first qid of the input
    decides (:class:`~sparkrank.data.svmlight.QidLayout`), on both engines.
    """
    from .svmlight import read_svmlight_dataframe as read

    return read(spark, path)
