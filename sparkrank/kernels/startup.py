"""Start-up of numba in processes that sparkrank owns (the console script, Spark's Python workers).

numba loads its lowering registries on a process's first call of a compiled function, and
one of them, ``numba.np.arraymath``, probes at import time whether BLAS is there by
importing ``scipy.linalg`` (``_HAVE_BLAS = _check_blas()``).  Here that import is 0.25 s and
~13 MB of resident memory (scipy.linalg's modules and its own OpenBLAS) of a whole-process
train that takes ~5 s in ~330–500 MB, and no sparkrank kernel needs it: the probe's only
use is to pick ``np.dot`` over a plain loop for the inner products of ``np.cov`` and
friends (``arraymath._get_inner_prod``).  ``np.dot`` and ``np.linalg`` themselves check for
BLAS again, lazily, when a function that uses them is compiled, so they keep working.

:func:`defer_numba_blas_probe` imports ``numba.np.arraymath`` with that one probe answering
"no BLAS", then puts the probe back.  It is called only where sparkrank owns the
interpreter; a program that imports sparkrank as a library keeps numba's default.
"""

from __future__ import annotations

import sys


def defer_numba_blas_probe() -> bool:
    """Import ``numba.np.arraymath`` without its import-time ``scipy.linalg`` probe.

    Returns
    -------
    bool
        True if the probe was skipped; False if there was nothing to do (arraymath was
        already imported, or scipy.linalg was, so skipping would save nothing).
    """
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return False
    import numba.np.linalg as numba_linalg

    probe = numba_linalg.ensure_blas

    def no_blas_yet() -> None:
        raise ImportError("BLAS probe deferred by sparkrank (np.dot checks again when compiled)")

    numba_linalg.ensure_blas = no_blas_yet
    try:
        import numba.np.arraymath as arraymath  # runs _check_blas() once, against no_blas_yet
    finally:
        numba_linalg.ensure_blas = probe
    arraymath.ensure_blas = probe  # the name it bound at import: the real probe again
    return True
