"""spark-submit job: `sparkrank predict` on the Spark engine.

    spark-submit --master spark://HOST:7077 jobs/predict.py --help

Every option of `sparkrank predict` applies (`sparkrank predict --help`): inputs and outputs
may be any Hadoop URI (file://, hdfs://, s3a://, abfss://, gs:// with their connector),
Hive-partitioned directories, globs, `--where` filters and `--format`; `--engine spark` is
implied and the master, memory and partitions come from spark-submit as usual.  For a
quiet start add `--driver-java-options -Dlog4j2.configurationFile=file:<sparkrank>/io/spark/log4j2-quiet.properties`.
"""

import sys

from sparkrank.cli import run

if __name__ == "__main__":
    run(["predict", "--engine", "spark", *sys.argv[1:]])
