import sys, time, functools, logging
T0 = time.time()
def stamp(msg): print(f"PHASE {time.time()-T0:6.2f} {msg}", file=sys.stderr, flush=True)
stamp("python start")
import sparkrank.spark.session as S
stamp("imported session")
orig_check = S.check_executors
def timed(name, f):
    @functools.wraps(f)
    def g(*a, **k):
        stamp(f"{name} start"); r = f(*a, **k); stamp(f"{name} end"); return r
    return g
S.check_executors = timed("check_executors", S.check_executors)
S.get_session = timed("get_session", S.get_session)
from pyspark.sql import DataFrameReader
DataFrameReader.parquet = timed("read.parquet", DataFrameReader.parquet)
from pyspark.sql import DataFrame
for m in ("count", "collect", "take", "first", "toLocalIterator"):
    setattr(DataFrame, m, timed("df." + m, getattr(DataFrame, m)))
from pyspark import RDD
for m in ("collect", "count", "treeAggregate", "reduce", "foreachPartition", "mapPartitionsWithIndex"):
    setattr(RDD, m, timed("rdd." + m, getattr(RDD, m)))
from sparkrank.cli import main
stamp("imported cli")
rc = main(["train", "--engine", "spark", *sys.argv[1:]])
stamp("main done")
sys.exit(rc)
