"""The local engine on several threads gives the one-thread model bit for bit, for every solver.

Groups are cut into tiles of a few MB of rows and the tiles into one run per thread (rows by
non-zeros for a kernel that needs every group at once; ``sparkrank.engines.threads``); every
sum is a double-double merged in order, so neither the tiles nor the threads may change a
single bit of the objective, the gradient or the iterates.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparkrank.data.block import RankingData
from sparkrank.datasets import make_ranking_data
from sparkrank.engines import tiles as tiling
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.threads import balanced_cuts, check_threads
from sparkrank.numerics.linalg import matvec
from sparkrank.training import train

from conftest import MQ2008, require


def _fit(data: RankingData, threads: int, **kw):
    with LocalEngine(data, threads=threads) as engine:
        return train(engine, **kw)


@pytest.fixture(params=["one tile", "a group a tile", "a few groups a tile"])
def tiles(request, monkeypatch):
    """The fused pass's tile size: everything in one tile, or many (the reference fit uses one)."""
    size = {"one tile": 1 << 40, "a group a tile": 1, "a few groups a tile": 4000}[request.param]
    monkeypatch.setattr(tiling, "TILE_BYTES", size)
    return size


def _grouped() -> RankingData:
    # uneven group sizes, ties, sparse rows, a few one-level groups
    data, _ = make_ranking_data(1500, 30, rows_per_group=25, n_levels=4, density=0.4, seed=11)
    return data


def _one_ranking_real_labels() -> RankingData:
    data, _ = make_ranking_data(800, 12, rows_per_group=None, n_levels=None, seed=5)
    return data


@pytest.mark.parametrize("solver, options", [
    ("tron", {}),
    ("bmrm", {}),
    ("ncg", {"gradient": "fast"}),
    ("toppush", {"scope": "group"}),
    ("toppush", {"scope": "global"}),
])
@pytest.mark.parametrize("threads", [1, 2, 7])
def test_threads_and_tiles_give_the_one_thread_model_bitwise(solver, options, threads, tiles, monkeypatch):
    data = _grouped()
    kw = dict(solver=solver, C=0.5, max_iter=15, solver_options=options)
    many = _fit(data, threads, **kw)
    monkeypatch.setattr(tiling, "TILE_BYTES", 1 << 40)
    one = _fit(data, 1, **kw)
    np.testing.assert_array_equal(many.weights, one.weights)
    assert many.summary["iterations"] == one.summary["iterations"]
    assert [r.get("objective") for r in many.summary["history"]] == [r.get("objective") for r in one.summary["history"]]


@pytest.mark.parametrize("solver", ["tron", "ncg"])
def test_dense_rows_in_tiles_on_threads_give_the_one_thread_model_bitwise(solver, monkeypatch):
    data = _grouped()
    dense = RankingData.from_arrays(data.X.toarray(), data.labels, np.repeat(data.qids, data.groups.group_sizes),
                                    layout="dense")
    monkeypatch.setattr(tiling, "TILE_BYTES", 4000)
    many = _fit(dense, 3, solver=solver, C=0.5, max_iter=15)
    monkeypatch.setattr(tiling, "TILE_BYTES", 1 << 40)
    np.testing.assert_array_equal(many.weights, _fit(data, 1, solver=solver, C=0.5, max_iter=15).weights)


def test_a_pass_at_the_point_of_the_last_one_reuses_its_scores(monkeypatch):
    """The preconditioner's pass at TRON's new iterate follows the value's pass at the same point:
    it skips ``X·v``, and a pass at any other point (the vector changed in place, too) does not."""
    from sparkrank.kernels.losses import SquaredHingeKernel, SupportPairDiagonalKernel

    data = _grouped()
    products = []
    monkeypatch.setattr(tiling, "matvec", lambda *a: products.append(a[2]) or matvec(*a))
    monkeypatch.setattr(tiling, "TILE_BYTES", 4000)
    w = np.random.default_rng(2).normal(size=data.n_features)
    with LocalEngine(data, threads=2) as engine, LocalEngine(data, threads=1) as fresh:
        value = engine.run(w, SquaredHingeKernel())
        tiles = len(products)
        assert tiles > 3  # one product per tile
        moments = engine.column_moments(w, SupportPairDiagonalKernel())
        assert len(products) == tiles  # the same point: no product
        expected = fresh.column_moments(w.copy(), SupportPairDiagonalKernel())
        for got, want in ((moments.first, expected.first), (moments.second, expected.second),
                          (moments.stats, expected.stats)):
            np.testing.assert_array_equal(got, want)
        w[0] += 1.0  # changed in place: a new point
        again = engine.run(w, SquaredHingeKernel())
        assert len(products) == 3 * tiles
        np.testing.assert_array_equal(again.gradient, fresh.run(w, SquaredHingeKernel()).gradient)
        assert not np.array_equal(again.gradient, value.gradient)


@pytest.mark.parametrize("layout", ["sparse", "dense"])
@pytest.mark.parametrize("solver", ["tron", "bmrm"])
def test_threads_on_one_global_ranking(solver, layout, monkeypatch):
    """One global ranking on threads, and as a tile too large for one (its passes over the
    threads' row chunks, ``LocalEngine._whole_pass``): the one thread's model of one tile."""
    data = _one_ranking_real_labels()
    if layout == "dense":
        data = RankingData.from_arrays(data.X.toarray(), data.labels, None, layout="dense")
    kw = dict(solver=solver, C=1e-3, max_iter=10)
    one = _fit(data, 1, **kw)
    np.testing.assert_array_equal(_fit(data, 4, **kw).weights, one.weights)
    monkeypatch.setattr(tiling, "TILE_BYTES", 1000)  # the ranking: over two tiles' bytes
    with LocalEngine(data, threads=4) as engine:
        assert engine._whole_tile and len(engine._tiles) == 1
    np.testing.assert_array_equal(_fit(data, 4, **kw).weights, one.weights)


@pytest.mark.slow
def test_threads_on_mq2008_bitwise():
    from sparkrank.io.files import read_ranking_data

    data = read_ranking_data(require(MQ2008 / "train.txt"))
    one, two = _fit(data, 1, solver="tron", C=1.0), _fit(data, 2, solver="tron", C=1.0)
    np.testing.assert_array_equal(two.weights, one.weights)
    assert two.summary["iterations"] == one.summary["iterations"]


def test_float32_rows_threaded():
    data = _grouped()
    X32 = sp.csr_matrix(data.X, dtype=np.float32)
    d32 = RankingData.from_arrays(X32, data.labels, np.repeat(data.qids, data.groups.group_sizes),
                                  dtype=np.float32)
    np.testing.assert_array_equal(_fit(d32, 3, C=1.0, max_iter=5).weights, _fit(d32, 1, C=1.0, max_iter=5).weights)


def test_balanced_cuts():
    indptr = np.array([0, 10, 10, 11, 30, 31, 40])  # non-zeros per row: 10 0 1 19 1 9
    cuts = balanced_cuts(indptr, 2)
    assert cuts[0] == 0 and cuts[-1] == 6 and np.all(np.diff(cuts) > 0)
    many = balanced_cuts(indptr, 100)  # never more chunks than rows, never an empty chunk
    assert many[0] == 0 and many[-1] == 6 and np.all(np.diff(many) > 0) and len(many) <= 7
    # each two-chunk cut lands where the running total crosses half of the 40 non-zeros
    assert balanced_cuts(indptr, 2).tolist() == [0, 4, 6]
    assert balanced_cuts(np.array([0, 0, 0]), 4).tolist() == [0, 2]  # no weight: one chunk
    with pytest.raises(ValueError, match="threads"):
        check_threads(0)
