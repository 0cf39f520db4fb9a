"""spark-submit job: `sparkrank convert` on the Spark engine.

    spark-submit --master spark://HOST:7077 jobs/convert.py --help

Every option of `sparkrank convert` applies; `--engine spark` is implied and the master,
memory and partitions come from spark-submit as usual.
"""

import sys

from sparkrank.cli import main

if __name__ == "__main__":
    sys.exit(main(["convert", "--engine", "spark", *sys.argv[1:]]))
