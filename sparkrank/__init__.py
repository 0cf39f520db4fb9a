"""sparkrank: exact, fast linear learning-to-rank without materialising preference pairs.

Quick start::

    from sparkrank import load_svmlight, train
    data = load_svmlight("train.txt")
    model = train(data, solver="tron", C=1.0)
    scores = model.predict(data)
"""

__version__ = "0.1.0"

from .numba_cache import clear_stale_caches  # noqa: E402

clear_stale_caches()  # before any kernel's cache is looked up (see sparkrank/numba_cache.py)

from . import defaults  # noqa: E402
from .data.block import DataError, RankingData  # noqa: E402
from .data.groups import QueryGroups  # noqa: E402
from .model import RankingModel  # noqa: E402
from .standardization import Standardization  # noqa: E402
from .training import train  # noqa: E402


def load_svmlight(path, *, layout: str = defaults.LAYOUT, threads: int | None = defaults.THREADS,
                  dtype: type = defaults.DTYPE, **kwargs) -> RankingData:
    """Read an SVMlight/LETOR file into :class:`RankingData` (see :mod:`sparkrank.data.svmlight`)
    with the command line's defaults (:mod:`sparkrank.defaults`): dense rows when they are no
    larger than CSR, parsed on every core, float64 -- so ``train`` on these rows gives the
    command line's model, bit for bit and at its speed."""
    from .data.svmlight import load_svmlight as _load

    return _load(path, layout=layout, threads=threads, dtype=dtype, **kwargs)


__all__ = ["DataError", "QueryGroups", "RankingData", "RankingModel", "Standardization", "load_svmlight", "train",
           "__version__"]
