"""Fill numba's on-disk cache before the test processes start: ``python tests/warm_numba.py PART``.

Why: after a fresh checkout every kernel compiles on first use, and the suite's processes (two
pytest-xdist workers, the Python workers of the embedded Spark session and of the standalone
cluster's executors, the CLI subprocesses) all start at once, find the cache empty and compile
the same kernels side by side: tens of CPU-seconds each, on two cores.  ``conftest.py`` runs
the parts below in two processes at the start of the session.  Together they cover the common
signatures (float64 and float32 values, CSR and dense rows, every solver, the SVMlight reader and
writer, the metrics), each about half of them (kernels both use, such as the pair counting,
compile in both), so later processes load them from the cache.
:func:`cache_is_stale` tells whether there is anything to do (in ~0.15 s, so a run of one test
module with a warm cache does not pay the two parts' imports).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np


PACKAGE = Path(__file__).resolve().parents[1] / "sparkrank"


def cache_is_stale(package: Path = PACKAGE) -> bool:
    """True if the sources changed since the caches were made (``sparkrank/numba_cache.py``:
    the first import of sparkrank will then delete every cache), or if a module with cached numba
    functions has no cache index newer than its source, as after a checkout (wherever numba keeps
    them: ``numba_cache.cache_directories``).  A cheap test, not
    an exact one: it does not look at every function and signature.  (It reads the sources'
    digest without importing sparkrank, whose import would delete the caches first.)"""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_sparkrank_numba_cache", package / "numba_cache.py")
    numba_cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(numba_cache)
    marker = Path(numba_cache.numba_cache_directory(str(package / "__init__.py"))) / numba_cache.MARKER
    if not marker.exists() or marker.read_text(encoding="ascii") != numba_cache.source_digest(str(package)):
        return True
    for source in package.rglob("*.py"):
        cached = [line for line in source.read_text(encoding="utf-8", errors="replace").splitlines()
                  if "cache=True" in line]
        if all('inline="always"' in line for line in cached):
            continue  # none cached, or only functions compiled into their callers (no index of their own)
        indexes = list(Path(numba_cache.numba_cache_directory(str(source))).glob(f"{source.stem}.*.nbi"))
        if not indexes or max(i.stat().st_mtime for i in indexes) < source.stat().st_mtime:
            return True
    return False


def _problem(dtype=np.float64, layout: str = "sparse"):
    from sparkrank.data.block import RankingData
    from sparkrank.datasets import make_ranking_data

    data, _ = make_ranking_data(200, 5, rows_per_group=20, n_levels=3, seed=1)
    X = data.X.toarray() if layout == "dense" else data.X
    qid = np.repeat(data.qids, np.diff(data.groups.offsets))
    return RankingData.from_arrays(X, data.labels, qid, dtype=dtype, layout=layout)


def _train_and_evaluate(data, solvers: tuple[str, ...]) -> None:
    from sparkrank.engines.local import LocalEngine
    from sparkrank.app.evaluate import evaluate_model
    from sparkrank.training import train

    with LocalEngine(data, threads=1) as engine:
        for solver in solvers:
            evaluate_model(train(engine, solver=solver, C=0.1, max_iter=3), engine)


def _svmlight(dtype) -> None:
    from sparkrank.data.svmlight import load_svmlight, write_svmlight

    data = _problem(dtype)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warm.txt"
        write_svmlight(path, data.X, data.labels, np.repeat(data.qids, np.diff(data.groups.offsets)))
        load_svmlight(str(path), dtype=dtype)
        load_svmlight(str(path), dtype=dtype, layout="dense")


def _counting_methods() -> None:
    """The other counting trees (``--counting``; training uses the selection tree)."""
    from sparkrank.kernels.counting import count_support_pairs

    data = _problem()
    scores = np.linspace(-1.0, 1.0, data.groups.n_rows)
    for method in ("direct", "rbtree"):
        count_support_pairs(data.groups, scores, scores, method=method)


def part_a() -> None:
    _train_and_evaluate(_problem(), ("tron", "bmrm"))
    _train_and_evaluate(_problem(np.float64, "dense"), ("tron",))
    _svmlight(np.float64)


def part_b() -> None:
    _train_and_evaluate(_problem(), ("ncg", "toppush"))
    _train_and_evaluate(_problem(np.float32), ("tron",))
    _train_and_evaluate(_problem(np.float32, "dense"), ("tron",))  # TRON's group-by-group Hessian pass
    _svmlight(np.float32)
    _counting_methods()


PARTS = {"a": part_a, "b": part_b}

if __name__ == "__main__":
    PARTS[sys.argv[1]]()
