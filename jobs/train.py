"""spark-submit job: `sparkrank train` on the Spark engine.

    spark-submit --master spark://HOST:7077 jobs/train.py --help
    spark-submit --master spark://HOST:7077 --packages org.apache.hadoop:hadoop-aws:3.5.0 jobs/train.py \
        --input s3a://bucket/ltr/ --where "day >= '2026-11-01'" --model s3a://bucket/models/m.json

Every option of `sparkrank train` applies (`sparkrank train --help`): inputs and outputs
may be any Hadoop URI (file://, hdfs://, s3a://, abfss://, gs:// with their connector),
Hive-partitioned directories, globs, `--where` filters and `--format`; `--engine spark` is
implied and the master, memory and partitions come from spark-submit as usual.  For a
quiet start add `--driver-java-options -Dlog4j2.configurationFile=file:<sparkrank>/io/spark/log4j2-quiet.properties`.
"""

import sys

from sparkrank.cli import run

if __name__ == "__main__":
    run(["train", "--engine", "spark", *sys.argv[1:]])
