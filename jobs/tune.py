"""spark-submit job: `sparkrank tune` (model selection over C) on the Spark engine.

    spark-submit --master spark://HOST:7077 jobs/tune.py \
        --input hdfs:///ltr/train.parquet --valid hdfs:///ltr/valid.parquet \
        --C-range -15 10 --metric ndcg@10 --model best.json --output-json tune.json

    spark-submit --master spark://HOST:7077 jobs/tune.py --input train.parquet --folds 5 --help

Every option of `sparkrank tune` applies (`sparkrank tune --help`): inputs and outputs may
be any Hadoop URI, Hive-partitioned directories, globs, with `--where` filters (applied to
--input and --valid); `--engine spark` is implied and the master, memory and partitions come
from spark-submit as usual.  With `--folds K` each fold is the
query groups whose seeded MD5 hash of the group id, mod K, equals the fold number
(`sparkrank/data/folds.py`: the same folds as the local engine), so folds hold whole
query groups and are never collected to the driver.  With `--checkpoint-dir URI` a killed
job rerun with `--resume` reuses the finished Cs and resumes the interrupted one (same table
and best model).
"""

import sys

from sparkrank.cli import run

if __name__ == "__main__":
    run(["tune", "--engine", "spark", *sys.argv[1:]])
