"""Synthetic ranking data with a known linear utility, and the generator of the bundled sample files.

Used for the bundled sample (``sample:train`` / ``sample:test``, located by
:func:`sparkrank.io.uri.sample_path`), tests and benchmarks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .data.block import RankingData


def make_ranking_data(
    n_rows: int,
    n_features: int,
    *,
    rows_per_group: int | None = 120,
    n_levels: int | None = 5,
    density: float = 1.0,
    noise: float = 0.5,
    dtype: type = np.float64,
    seed: int = 0,
) -> tuple[RankingData, np.ndarray]:
    """Rows ``x`` with utility ``y = quantise(w*·x + noise)``.

    Parameters
    ----------
    n_rows, n_features : int
    rows_per_group : int or None
        Average group size (sizes vary ±50%); ``None`` gives one global ranking.
    n_levels : int or None
        Number of relevance grades (quantiles of the utility); ``None`` keeps real labels.
    density : float
        Fraction of non-zero features per row (1.0 = dense).
    noise : float
        Standard deviation of the utility noise relative to the signal.
    dtype : float64 or float32
    seed : int

    Returns
    -------
    (RankingData, true weights)
    """
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=n_features)
    if density >= 1.0:
        X = sp.csr_matrix(rng.random((n_rows, n_features), dtype=np.float64).astype(dtype))
    else:
        X = sp.random(n_rows, n_features, density=density, format="csr", random_state=rng, dtype=np.float64)
        X = X.astype(dtype)
    signal = np.asarray(X @ w_true).ravel()
    utility = signal + noise * signal.std() * rng.normal(size=n_rows) if n_rows > 1 else signal
    if n_levels is None:
        labels = utility
    else:
        edges = np.quantile(utility, np.linspace(0, 1, n_levels + 1)[1:-1]) if n_rows else []
        labels = np.searchsorted(edges, utility).astype(np.float64)
    if rows_per_group is None:
        qid = None
    else:
        sizes = []
        total = 0
        while total < n_rows:
            size = int(rng.integers(max(1, rows_per_group // 2), rows_per_group + rows_per_group // 2 + 1))
            sizes.append(min(size, n_rows - total))
            total += sizes[-1]
        qid = np.repeat(np.arange(1, len(sizes) + 1), sizes)
    return RankingData.from_arrays(X, labels, qid, dtype=dtype), w_true


def write_sample(directory: str | Path, *, seed: int = 2026) -> None:
    """(Re)generate the bundled sample: ``train.svmlight`` (3,000 rows) and ``test.svmlight`` (1,000).

    25 features, 40% non-zero, ~40 rows per query, 5 relevance grades; train and test
    come from one draw so they share the true utility.
    """
    from .data.svmlight import write_svmlight

    data, _ = make_ranking_data(4000, 25, rows_per_group=40, n_levels=5, density=0.4, seed=seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    qid = np.repeat(data.qids, data.groups.group_sizes)
    split = int(data.groups.offsets[np.searchsorted(data.groups.offsets, 3000)])
    for name, rows in (("train", slice(0, split)), ("test", slice(split, data.n_rows))):
        write_svmlight(directory / f"{name}.svmlight", data.X[rows], data.labels[rows], qid[rows])
