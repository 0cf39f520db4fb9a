"""The one group-fold rule (sparkrank.data.folds): Spark and the local engine give every group the same fold."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sparkrank.data.block import DataError
from sparkrank.data.folds import group_folds, group_hash, group_id_text
from sparkrank.engines.spark.folds import spark_group_fold, spark_group_hash
from sparkrank.data.table import combine_group_columns
from sparkrank.io.spark.frames import group_expression

LONGS = [1, 2, 3, 17, 10**12, -5, 2**62]
STRINGS = ["q1", "q2", "Zürich", "", "a,b", "10"]
DOUBLES = [1.0, 2.5, -0.0, 1e7, 1.5e-4, 123456.789, 1e300]


@pytest.mark.parametrize("ids, kind", [(LONGS, "long"), (STRINGS, "string"), (DOUBLES, "double")])
def test_spark_and_local_hash_every_id_alike(spark, ids, kind):
    df = spark.createDataFrame([(v,) for v in ids], f"g {kind}")
    got = df.select(spark_group_hash("g", 7).alias("h"), spark_group_fold("g", 3, 7).alias("f"),
                    df.g.cast("string").alias("text")).collect()
    assert [r.text for r in got] == [group_id_text(v) for v in ids]  # the rule hashes Spark's text
    np.testing.assert_array_equal([r.h for r in got], group_hash(ids, 7).astype(np.int64))
    np.testing.assert_array_equal([r.f for r in got], group_hash(ids, 7) % np.uint64(3))


def test_several_group_columns_hash_the_same_json_text(spark):
    rows = [(1, "a"), (1, "b"), (2, "a"), (30, "zz")]
    df = spark.createDataFrame(rows, "user long, session string")
    spark_folds = [r.f for r in df.select(spark_group_fold(group_expression(("user", "session")), 2, 0).alias("f"))
                   .collect()]
    local_ids = combine_group_columns(pa.table({"user": [r[0] for r in rows], "session": [r[1] for r in rows]}),
                                      ("user", "session")).to_pylist()
    np.testing.assert_array_equal(spark_folds, group_hash(local_ids, 0) % np.uint64(2))


def test_seed_changes_the_folds_and_empty_folds_are_errors():
    ids = np.arange(200)
    a, b = group_folds(ids, 4, 0), group_folds(ids, 4, 1)
    assert set(a.tolist()) == set(range(4)) and (a != b).any()
    assert np.array_equal(group_folds(ids.astype(str), 4, 0), a)  # "17" and 17 are one id text
    with pytest.raises(DataError, match="at least 5 query groups"):
        group_folds([1, 2, 3, 4], 5)
    with pytest.raises(DataError, match="gets none of the"):
        group_folds([1, 2], 2, seed=next(s for s in range(100) if len(set(group_hash([1, 2], s) % np.uint64(2))) == 1))
    with pytest.raises(ValueError, match="at least 2 folds"):
        group_folds(ids, 1)
