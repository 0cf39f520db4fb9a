"""Shared real sets for the pair benches: MQ2008 Fold1 and cadata as one ranking, split."""

from __future__ import annotations

import numpy as np

from _common import SHARED_DATA

from sparkrank.data.block import RankingData
from sparkrank.io.files import read_ranking_data

MQ2008 = SHARED_DATA / "MQ2008" / "Fold1"
CADATA = SHARED_DATA / "cadata" / "cadata"


def mq2008(part: str) -> RankingData:
    """``train``, ``vali`` or ``test`` of MQ2008 Fold1."""
    return read_ranking_data(MQ2008 / f"{part}.txt")


def cadata_parts(fractions=(0.6, 0.2, 0.2), seed: int = 0) -> list[RankingData]:
    """cadata min-max scaled, labels in units of $100k, cut at random (``seed``) into parts of
    ``fractions`` of the rows, each one global ranking."""
    data = read_ranking_data(CADATA)
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
    X = (X - X.min(axis=0)) / np.maximum(X.max(axis=0) - X.min(axis=0), 1e-12)
    y = data.labels / 1e5
    idx = np.random.default_rng(seed).permutation(len(y))
    cuts = np.cumsum([int(f * len(y)) for f in fractions[:-1]])
    return [RankingData.from_arrays(X[part], y[part]) for part in np.split(idx, cuts)]
