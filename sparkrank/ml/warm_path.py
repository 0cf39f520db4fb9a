"""``LinearRanker.fitMultiple``: a grid's param maps trained along the C path, warm-started.

``CrossValidator`` and ``TrainValidationSplit`` call ``estimator.fitMultiple(train, paramMaps)``
once per fold and pull ``(index, model)`` pairs from the returned iterator, from
``parallelism`` threads, each thread evaluating the model it got before pulling the next
(``pyspark.ml.tuning._parallelFitTasks``).  The order of the pairs is the estimator's.

So, as ``sparkrank tune`` does (:mod:`sparkrank.selection.driver`), the maps that differ only
in ``C`` (or ``regParam``) form one path, trained in ascending ``C`` (descending λ), each fit
starting from the previous one's solution -- on one engine over the fold's rows, built once
(:mod:`sparkrank.ml.block_cache`).  Fits along a path are sequential by nature (each needs the
last one's weights) and run one at a time on the shared engine; ``parallelism`` threads then
evaluate finished models while the next ones train.  A solver that cannot start from given
weights (``warm_start=False`` in its registry entry), a map that sets ``initialWeights`` or
``resumeFromCheckpoint``, and ``LinearRanker(warmStart=False)`` train every map from zero,
still in path order.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

#: The params a path runs over (every other param must be equal along a path).
PATH_PARAMS = ("C", "regParam")


def path_order(estimator, param_maps: Sequence[dict]) -> list[list[int]]:
    """Indices of ``param_maps`` in paths: maps equal in every param but ``C``/``regParam``,
    each path in ascending ``C`` (maps giving ``regParam``: descending λ, after them), paths in
    the order of their first map."""
    paths: dict[tuple, list[int]] = {}
    for i, pm in enumerate(param_maps):
        key = tuple(sorted((p.name, repr(v)) for p, v in pm.items() if p.name not in PATH_PARAMS))
        paths.setdefault(key, []).append(i)

    def weaker_regularisation_last(i: int) -> tuple:
        est = estimator.copy(param_maps[i])
        C, lam = est._maybe(est.C), est._maybe(est.regParam)
        if C is not None:
            return (0, float(C))
        if lam is not None:  # C = 1/(2λN): a larger λ is a smaller C
            return (1, -float(lam))
        return (2, 0.0)

    return [sorted(path, key=weaker_regularisation_last) for path in paths.values()]


class WarmPathFits:
    """Thread-safe iterator of ``(index, model)``: the maps of ``param_maps`` fitted on
    ``dataset`` along their paths (:func:`path_order`), each from the previous solution on
    its path when ``warm`` (see the module docstring)."""

    def __init__(self, estimator, dataset, param_maps: Sequence[dict], warm: bool):
        self.estimator, self.dataset, self.param_maps, self.warm = estimator, dataset, param_maps, warm
        paths = path_order(estimator, param_maps)
        self.order = [i for path in paths for i in path]
        self.starts = {path[0] for path in paths}
        self.lock = threading.Lock()
        self.position = 0
        self.previous: np.ndarray | None = None

    def __iter__(self) -> "WarmPathFits":
        return self

    def __next__(self) -> tuple[int, Any]:
        with self.lock:  # one fit at a time: the next one starts from this one's weights
            if self.position >= len(self.order):
                raise StopIteration("No models remaining.")
            index = self.order[self.position]
            self.position += 1
            start = None if index in self.starts or not self.warm else self.previous
            model = self.estimator.copy(self.param_maps[index])._fit(self.dataset, warm=start)
            self.previous = np.asarray(model.weights, dtype=np.float64)
            return index, model
