"""spark-submit job: `sparkrank predict` on the Spark engine.

    spark-submit --master spark://HOST:7077 jobs/predict.py --help

Every option of `sparkrank predict` applies; `--engine spark` is implied and the master,
memory and partitions come from spark-submit as usual.
"""

import sys

from sparkrank.cli import main

if __name__ == "__main__":
    sys.exit(main(["predict", "--engine", "spark", *sys.argv[1:]]))
