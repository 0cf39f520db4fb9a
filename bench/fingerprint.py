"""What the checkpoint's data fingerprint costs, against building the rows it covers.

    python bench/fingerprint.py [--rows 1000000] [--features 136] [--spark] [--master local[2]]

Set: ``--rows`` × ``--features`` dense float32 rows, ~120 rows per query, in Parquet
(``bench/_synthetic.py``).  Local engine: the build is reading the Parquet file into the
in-process block (:func:`sparkrank.io.files.read_parquet`); the fingerprint is
:meth:`LocalEngine.data_digest` (BLAKE2b over every label, group id and feature byte, a run of
queries per thread).  With
``--spark``: the build is ``SparkEngine(...)`` (executor placement, ``--partitions`` blocks) and the
fingerprint its digest job over the built blocks.  A fit pays the fingerprint only when it
writes or resumes checkpoints.  Wall seconds and CPU seconds (this process, its JVM and Python
workers: the machine may be shared) are the best of ``--repeat``; the ratio that matters is
fingerprint / build.  Writes bench/results/fingerprint.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import table, tree_cpu_seconds, write_result  # noqa: E402
from _synthetic import synthetic_parquet  # noqa: E402

from sparkrank.io.files import read_parquet  # noqa: E402
from sparkrank.engines.local import LocalEngine  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """Best wall and CPU seconds of ``repeat`` calls of ``fn`` (and its last result)."""
    best_wall = best_cpu = float("inf")
    out = None
    for _ in range(repeat):
        cpu, wall = tree_cpu_seconds(), time.perf_counter()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, tree_cpu_seconds() - cpu)
    return best_wall, best_cpu, out


def local_row(path: Path, n: int, repeat: int) -> dict:
    build_wall, build_cpu, data = timed(lambda: read_parquet(path, dtype=np.float32, n_features=n), repeat)
    engine = LocalEngine(data)

    def digest():
        engine._digest = None  # measure the digest, not the remembered one
        return engine.data_digest()

    digest_wall, digest_cpu, digest = timed(digest, repeat)
    engine.close()
    return {"engine": "local", "build_s": build_wall, "build_cpu_s": build_cpu, "digest_s": digest_wall,
            "digest_cpu_s": digest_cpu, "ratio_wall": digest_wall / build_wall, "ratio_cpu": digest_cpu / build_cpu,
            "MB": data.X.nbytes / 1e6, "digest": digest.as_dict()}


def spark_row(path: Path, n: int, repeat: int, master: str, partitions: int) -> dict:
    from sparkrank.engines.spark import SparkEngine
    from sparkrank.io.spark.session import get_session

    spark = get_session(master, conf={"spark.driver.memory": "4g"})
    spark.sparkContext.setLogLevel("ERROR")
    engines = []

    def build():
        engines.append(SparkEngine(spark.read.parquet(str(path)), placement="executor", num_partitions=partitions,
                                   dtype=np.float32, n_features=n))
        return engines[-1]

    def digest():
        engine = engines[-1]
        engine._digest = None  # measure the job, not the remembered digest
        return engine.data_digest()

    build_wall, build_cpu, engine = timed(build, repeat)
    digest_wall, digest_cpu, result = timed(digest, repeat)
    for e in engines:
        e.close()
    return {"engine": f"spark {master} x{partitions}", "build_s": build_wall, "build_cpu_s": build_cpu,
            "digest_s": digest_wall, "digest_cpu_s": digest_cpu, "ratio_wall": digest_wall / build_wall,
            "ratio_cpu": digest_cpu / build_cpu, "MB": sum(r.nbytes for r in engine.refs) / 1e6,
            "digest": result.as_dict()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true", help="also the Spark engine (executor placement)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args(argv)
    path = synthetic_parquet(args.rows, args.features)
    rows = [local_row(path, args.features, args.repeat)]
    if args.spark:
        rows.append(spark_row(path, args.features, args.repeat, args.master, args.partitions))
        assert rows[-1]["digest"] == rows[0]["digest"], "the engines' digests differ"
    cols = ["engine", "MB", "build_s", "build_cpu_s", "digest_s", "digest_cpu_s", "ratio_wall", "ratio_cpu"]
    print(f"{args.rows} x {args.features} dense float32 rows")
    print(table(rows, cols))
    for r in rows:
        print(f"fingerprint / build ({r['engine']}): {r['ratio_wall']:.2f}x wall, {r['ratio_cpu']:.2f}x CPU")
    print(f"wrote {write_result('fingerprint', {'rows': args.rows, 'features': args.features, 'results': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
