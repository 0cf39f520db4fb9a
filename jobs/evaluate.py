"""spark-submit job: `sparkrank evaluate` on the Spark engine.

    spark-submit --master spark://HOST:7077 jobs/evaluate.py --help

Every option of `sparkrank evaluate` applies; `--engine spark` is implied and the master,
memory and partitions come from spark-submit as usual.
"""

import sys

from sparkrank.cli import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", "--engine", "spark", *sys.argv[1:]]))
