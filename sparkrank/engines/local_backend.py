"""The local engine's backend: rows read into this process, passes on its threads
(:class:`~sparkrank.engines.local.LocalEngine`)."""

from __future__ import annotations

from .backend import InProcessBackend, check_local_memory
from .local import LocalEngine
from .threads import check_threads


class LocalBackend(InProcessBackend):
    """``--engine local``."""

    name = "local"
    options = InProcessBackend.options + ("threads",)

    @classmethod
    def engine_over(cls, data, threads: int | None = None):
        return LocalEngine(data, threads=threads)

    @classmethod
    def build(cls, source, *, n_features=None, dtype=None, drop_invalid_rows=False, threads=None):
        from ..data import heap
        from ..defaults import DTYPE

        threads = check_threads(threads)  # the same threads parse the text (SVMlight) and run the passes
        dtype = DTYPE if dtype is None else dtype
        check_local_memory(source, n_features, dtype, threads)  # one line now, not a MemoryError halfway
        data = cls.read(source, n_features=n_features, dtype=dtype, drop_invalid_rows=drop_invalid_rows,
                        threads=threads)
        heap.return_freed_memory()  # what the read freed on its threads (data/heap.py)
        return LocalEngine(data, threads=threads)

    def engine_options(self) -> dict:
        return {"threads": self.settings.threads}

    def engine(self, source, n_features=None):
        s = self.settings
        return self.build(source, n_features=n_features, dtype=s.dtype_type, drop_invalid_rows=s.drop_invalid_rows,
                          threads=s.threads)
