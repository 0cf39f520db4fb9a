"""One global ranking of hashed sparse rows on Spark: driver and range placement against the
local engine, with blocks that cut steps of ``Xᵀc`` (step_sums.py, numerics/cut_steps.py),
through ``treeAggregate`` and through the column-sliced merge."""

from __future__ import annotations

import os

import numpy as np
import pytest

from sparkrank.engines.local import LocalEngine
from sparkrank.engines.registry import make_engine
from sparkrank.io.files import read_ranking_data
from sparkrank.io.sources import open_source
from sparkrank.kernels.losses import HingeKernel, SupportPairDiagonalKernel
from sparkrank.objectives.base import hessian_diagonal_estimate
from sparkrank.training import train

N_FEATURES = 1 << 20


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


def _write_global_ranking(path, rows: int = 603, nnz: int = 12, seed: int = 4) -> None:
    """``rows`` rows (not a multiple of 4: three blocks cut steps) of ``nnz`` hashed ids out of
    2²⁰, a few ids shared by many rows (columns that collect terms from cut rows of several
    blocks), graded labels with ties, one ranking (no qid)."""
    rng = np.random.default_rng(seed)
    popular = rng.integers(0, N_FEATURES, 8)
    lines = []
    for i in range(rows):
        cols = np.where(rng.random(nnz) < 0.4, rng.choice(popular, nnz), rng.integers(0, N_FEATURES, nnz))
        cols = np.unique(cols)
        vals = rng.choice([1.0, 0.5, -2.0, 3.25, 1e-3], cols.shape[0])
        entries = " ".join(f"{j + 1}:{v:g}" for j, v in zip(cols.tolist(), vals.tolist()))
        lines.append(f"{int(rng.integers(0, 3))} {entries}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def ranking(tmp_path_factory):
    path = tmp_path_factory.mktemp("hashed-global") / "global.svm"
    _write_global_ranking(path)
    return str(path)


@pytest.mark.parametrize("merge", ["tree", "columns"])
@pytest.mark.parametrize("placement", ["driver", "range"])
def test_hashed_global_ranking_trains_on_spark_to_the_local_model(spark, ranking, monkeypatch, placement, merge):
    from sparkrank.engines.spark import building

    if merge == "columns":
        monkeypatch.setattr(building, "merge_slices", lambda *args, **kwargs: 3)
    local_data = read_ranking_data(ranking)
    rng = np.random.default_rng(8)
    n = local_data.n_features
    w = rng.normal(size=n) * (rng.random(n) < 0.5)
    with LocalEngine(local_data, threads=2) as local:
        assert local.sparse
        want_bmrm = train(local, solver="bmrm", C=1.0, max_iter=4)
        want_tron = train(local, solver="tron", C=1.0, max_iter=3)
        want_pass = local.run(w, HingeKernel())
        want_diagonal = hessian_diagonal_estimate(local, w, SupportPairDiagonalKernel(), 1.0)
    source = open_source(ranking, spark=spark)
    with make_engine(source, "spark", spark=spark, num_partitions=3, placement=placement) as engine:
        starts = sorted(engine.row_start.values())
        assert len(starts) == 3 and any(s % 4 for s in starts)  # blocks begin inside steps
        assert (engine._merge_slices(engine._pass_refs().getNumPartitions()) > 0) == (merge == "columns")
        got = engine.run(w, HingeKernel())
        kept = [os.path.join(r.path, "tiles-steps") for r in engine.refs if r.n_rows]
        assert all(os.path.isdir(d) for d in kept)  # wide rows: summed column by column, tile by tile
        assert np.array_equal(_bits(got.gradient), _bits(want_pass.gradient))
        assert np.array_equal(_bits(got.stats), _bits(want_pass.stats))
        if placement == "driver":  # the preconditioner's moments: a pass of three products
            diagonal = hessian_diagonal_estimate(engine, w, SupportPairDiagonalKernel(), 1.0)
            assert np.array_equal(_bits(diagonal), _bits(want_diagonal))
        bmrm = train(engine, solver="bmrm", C=1.0, max_iter=4)
        assert np.array_equal(_bits(bmrm.weights), _bits(want_bmrm.weights))  # L1: counts, bit for bit
        tron = train(engine, solver="tron", C=1.0, max_iter=3)
        if placement == "driver":
            assert np.array_equal(_bits(tron.weights), _bits(want_tron.weights))
        else:  # the squared hinge's partner sums are added per range (range_placement.py)
            np.testing.assert_allclose(tron.weights, want_tron.weights, rtol=1e-9, atol=1e-15)


def test_a_hashed_global_ranking_sends_the_driver_its_entries_not_dense_rows():
    """The memory check counts what a pass of one global ranking sends the driver by the blocks'
    entries: 200 rows of 40 ids out of 2²⁴ are a few hundred kB, not a dense row per cut row."""
    from sparkrank.data import memory

    n = 1 << 24
    blocks_nnz, blocks_rows = [4000, 4000], [100, 100]
    sums, _ = memory.pass_result_bytes(n, blocks_nnz, 2, 1)
    sent = memory.driver_products_bytes(sums, blocks_nnz, blocks_rows)
    assert sent < 1 << 20
    assert sent - sums == 2 * 3 * 6 * 16 * 40  # the cut rows' entries, three products


@pytest.mark.parametrize("tile_bytes", [200, 1500, 1 << 30])
def test_a_blocks_step_tiles_sum_like_one_sweep(tmp_path, monkeypatch, tile_bytes):
    """Wide CSR rows summed tile by tile, tiles cut where no step crosses (step_bounds), give the
    one sweep's rounded sums, with query starts and cut rows (zero coefficients) inside."""
    from types import SimpleNamespace

    import scipy.sparse as sp

    from sparkrank.engines.spark import step_sums, tile_files
    from sparkrank.engines.tiles import step_bounds
    from sparkrank.numerics.exact_sum import dd_round, rmatvec_dd_products
    from sparkrank.numerics.simd import DD_ROWS

    monkeypatch.setattr(tile_files, "_TILES", {})
    rng = np.random.default_rng(12)
    m, n = 403, 1 << 17
    popular = rng.integers(0, n, 6)
    shared = sp.csr_matrix((rng.choice([0.0, 1.0, -0.5], 3 * m), (np.repeat(np.arange(m), 3), np.tile(popular[:3], m))),
                           shape=(m, n))  # columns shared by many rows
    X = sp.csr_matrix(sp.random(m, n, density=8 / n, random_state=13, format="csr") + shared)
    X.eliminate_zeros()
    X.sort_indices()
    origins = np.array([0, 3, 41, 42, 170, 399, m], dtype=np.int64)
    c = rng.normal(size=m) * (rng.random(m) < 0.8)
    c[:3] = c[399:] = 0.0  # the cut rows' coefficients, zeroed
    products = [(c, 1), (np.abs(c), 2), (c * 3.0, 1)]
    bounds = step_bounds(X, origins, tile_bytes)
    assert bounds[0][0] == 0 and bounds[-1][1] == m and all(b[0] < b[1] for b in bounds)
    for a, _ in bounds[1:]:  # a step boundary: an origin plus a multiple of DD_ROWS
        k = np.searchsorted(origins, a, side="right") - 1
        assert (a - origins[k]) % DD_ROWS == 0
    assert (len(bounds) > 3) == (tile_bytes < 1 << 20)
    block = SimpleNamespace(X=X)
    got = step_sums.tiled_products(str(tmp_path), block, products, origins, tile_bytes)
    want = rmatvec_dd_products(X, products, None, origins)
    for g, w in zip(got, want):
        assert np.array_equal(_bits(g.rounded()), _bits(dd_round(w)))
    tile_files._TILES.clear()  # another worker: the tiles read back from the block's files
    again = step_sums.tiled_products(str(tmp_path), block, products, origins, tile_bytes)
    assert all(np.array_equal(_bits(a.rounded()), _bits(b.rounded())) for a, b in zip(again, got))


def _grouped_with_one_large_group(ranking: str):
    """The global ranking's rows as one large query of 403 rows and 50 of 4 rows each (a tile
    holds several small queries, the large one is summed in parts)."""
    from sparkrank.data.block import RankingData

    data = read_ranking_data(ranking)
    qid = np.concatenate([np.zeros(403, dtype=np.int64), 1 + np.arange(data.n_rows - 403) // 4])
    return RankingData.from_arrays(data.X, data.groups.labels, qid, n_features=data.n_features)


@pytest.mark.parametrize("grouped", [False, True])
def test_the_local_engine_sums_a_large_group_in_parts_with_one_tiles_bits(ranking, monkeypatch, grouped):
    """A group larger than a tile (one global ranking) has its kernel run first and its
    ``Xᵀc`` summed in parts cut where no step crosses (engines/tiles.py ``Tile.parts``), on any
    threads: every pass and model equals the one-tile engine's bit for bit."""
    from sparkrank.engines import tiles
    from sparkrank.kernels.losses import SquaredHingeDiagonalKernel, SquaredHingeHessianKernel
    from sparkrank.kernels.toppush import TopPushPrimalKernel

    data = _grouped_with_one_large_group(ranking) if grouped else read_ranking_data(ranking)
    rng = np.random.default_rng(3)
    n = data.n_features
    w, v = rng.normal(size=n) * (rng.random(n) < 0.5), rng.normal(size=n)

    def passes(engine):
        value = engine.run(w, SquaredHingeDiagonalKernel(), keep_state=True)
        hessian = engine.run(v, SquaredHingeHessianKernel(), state=value.state)
        moments = engine.column_moments(w, SupportPairDiagonalKernel())
        top = engine.run(w, TopPushPrimalKernel(0.5, "global"))
        arrays = [value.stats, value.gradient, *value.moments, hessian.stats, hessian.gradient,
                  moments.stats, moments.first, moments.second, top.stats, top.gradient]
        fits = [train(engine, solver=s, C=1.0, max_iter=3).weights for s in ("tron", "bmrm")]
        return [_bits(a) for a in arrays + fits]

    with LocalEngine(data, threads=2) as whole:
        assert all(t.parts is None for t in whole._tiles)
        want = passes(whole)
    monkeypatch.setattr(tiles, "TILE_BYTES", 2000)  # the large group: over 2 tiles' bytes
    for threads in (1, 2):
        with LocalEngine(data, threads=threads) as parted:
            assert len(parted._tiles[0].parts) > 3  # the large group's tile
            if grouped:  # and tiles of small groups summed whole
                assert sum(t.parts is None for t in parted._tiles) > 3
            got = passes(parted)
        for g, h in zip(got, want):
            assert np.array_equal(g, h)
