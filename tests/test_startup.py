"""Start-up and loading in processes sparkrank owns: numba's BLAS probe is deferred, nothing is lost;
the heap memory a read freed goes back to the system."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def test_deferred_probe_skips_scipy_linalg_and_np_dot_still_compiles():
    done = _python("""
        import sys
        import numba
        import numpy as np
        from sparkrank.kernels.startup import defer_numba_blas_probe

        assert defer_numba_blas_probe() is True
        assert defer_numba_blas_probe() is False  # once per process
        import numba.np.arraymath as arraymath
        import numba.np.linalg as numba_linalg
        assert arraymath._HAVE_BLAS is False
        assert arraymath.ensure_blas is numba_linalg.ensure_blas  # the real probe is back

        from sparkrank.data.svmlight import parse_svmlight_bytes  # a cached kernel's first dispatch
        f = parse_svmlight_bytes(b"2 qid:1 1:0.5 2:1\\n0 qid:1 1:0.25 2:3\\n")
        assert f.labels.tolist() == [2.0, 0.0]
        assert "scipy.linalg" not in sys.modules

        @numba.njit
        def dot(a, b):
            return np.dot(a, b)

        a = np.arange(5.0)
        assert dot(a, a) == 30.0  # np.dot checks for BLAS when it is compiled
        assert "scipy.linalg" in sys.modules
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_console_script_imports_neither_scipy_linalg_nor_pyarrow_for_svmlight(tmp_path):
    """The local engine on SVMlight text needs neither BLAS nor Arrow or scipy's sparse matrices:
    importing them costs ~31 MB, a tenth of the float32 fit's peak (issue 12: half of LIBLINEAR's)."""
    model = tmp_path / "model.json"
    rng = np.random.default_rng(0)
    letor = tmp_path / "letor.txt"  # every feature on every line, as LETOR text: read as dense rows
    letor.write_text("".join(f"{rng.integers(0, 3)} qid:{i // 20 + 1} "
                             + " ".join(f"{j + 1}:{rng.random():.4f}" for j in range(10)) + "\n" for i in range(200)))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "sparkrank", "train", "--engine", "local",
                           "--input", str(letor), "--model", str(model), "-q"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert model.exists()
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "numba.np.arraymath" in imported  # the kernels ran
    assert "scipy.linalg" not in imported
    assert not {"pyarrow", "scipy.sparse"} & imported, sorted({"pyarrow", "scipy.sparse"} & imported)


def test_freed_heap_memory_goes_back_to_the_system_after_loading(monkeypatch, tmp_path):
    """The local engine hands the C heap's free pages back once the data are read (glibc's
    ``malloc_trim``; elsewhere a no-op that says so)."""
    import platform

    from sparkrank.data import heap
    from sparkrank.data.svmlight import write_svmlight
    from sparkrank.datasets import make_ranking_data
    from sparkrank.engines.registry import make_engine
    from sparkrank.io.sources import open_source

    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert heap.return_freed_memory() is True
    calls = []
    monkeypatch.setattr(heap, "return_freed_memory", lambda: calls.append(1) or True)
    data, _ = make_ranking_data(60, 3, rows_per_group=10, seed=0)
    write_svmlight(tmp_path / "d.txt", data.X, data.labels, np.repeat(data.qids, np.diff(data.groups.offsets)))
    with make_engine(open_source(str(tmp_path / "d.txt")), "local") as engine:
        assert engine.summary.n_rows == 60
    assert calls == [1]
