"""Under an address-space limit (``ulimit -v``) a fit ends or is refused in one line (issue 36).

Before: between the limit at which the rows no longer fit and the one at which the fit ended,
numba's compiler (LLVM) ran out after the rows were read and aborted the process (``LLVM ERROR:
out of memory`` / ``std::bad_alloc``, exit 134): 2M x 136 float32 rows at ``ulimit -v`` 3.0-3.2 GB,
200k x 136 at 1.0-1.2 GB.  Now :mod:`sparkrank.data.jit_room` keeps room for the compiler.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkrank.data.jit_room import ROOM

MIB = 1 << 20
ROWS, FEATURES = 50_000, 136
#: What the console script maps before it reads anything: sparkrank, numba, pyarrow imported.
_IMPORTED = """
import sparkrank.cli, pyarrow.parquet
with open("/proc/self/status") as f:
    print(next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")))
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return env


def _limited(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.fixture(scope="module")
def dense_rows(tmp_path_factory):
    """50,000 rows x 136 float32 features (27 MB), ~120 rows a query, 5 label levels."""
    rng = np.random.default_rng(3)
    X = rng.random((ROWS, FEATURES), dtype=np.float32)
    utility = X @ rng.normal(size=FEATURES) + rng.normal(size=ROWS)
    labels = np.searchsorted(np.quantile(utility, [0.2, 0.4, 0.6, 0.8]), utility).astype(np.float64)
    features = pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), FEATURES).cast(pa.list_(pa.float32()))
    path = tmp_path_factory.mktemp("address_space") / "dense.parquet"
    pq.write_table(pa.table({"label": labels, "qid": np.arange(ROWS) // 120, "features": features}), path)
    return path


def test_any_address_space_limit_ends_the_fit_or_refuses_it_in_one_line(dense_rows, tmp_path):
    """From what the process maps with nothing read up to where the fit ends, every limit ends
    in exit 0 or in one line naming ``ulimit -v`` (exit 2): never an abort, never a traceback.
    The steps (64 MiB) are narrower than the window in which LLVM used to abort (~170 MiB)."""
    imported = int(subprocess.run([sys.executable, "-c", _IMPORTED], capture_output=True, text=True, env=_env(),
                                  check=True).stdout)
    outcomes = {}
    limit = imported
    while limit < imported + ROOM + 2048 * MIB:
        model = tmp_path / f"m{limit}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "sparkrank", "train", "--engine", "local", "--input", str(dense_rows),
             "--dtype", "float32", "--model", str(model), "--max-iter", "2", "-q"],
            capture_output=True, text=True, env=_env(), timeout=600, preexec_fn=_limited(limit))
        lines = [line for line in proc.stderr.splitlines() if "NOT converged" not in line]
        outcomes[limit >> 20] = proc.returncode
        if proc.returncode == 0:
            assert model.exists(), proc.stderr
            break
        assert proc.returncode == 2, (limit >> 20, proc.returncode, proc.stderr[-2000:])
        [line] = lines
        assert line.startswith("sparkrank train: error: ") and "ulimit -v" in line, line
        assert not model.exists()
        limit += 64 * MIB
    assert list(outcomes.values())[-1] == 0, outcomes  # a limit high enough trains
    assert len(outcomes) > 2, outcomes  # and the ones below it were refused
