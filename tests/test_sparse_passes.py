"""Sparse passes on hashed features: each tile's ``Xᵀc`` over its own columns, added in tile order.

The sums must be the dense sums' bits (``numerics/exact_sum.py``'s contract), on any tiles,
threads and engine, and a pass over 2²⁴ columns must allocate O(nnz + n), not O(tiles × n).
"""

from __future__ import annotations

import tracemalloc
from functools import reduce

import numpy as np
import pytest
import scipy.sparse as sp

from sparkrank.data.block import RankingData
from sparkrank.io.files import read_ranking_data
from sparkrank.engines import tiles as tiling
from sparkrank.engines.local import LocalEngine
from sparkrank.engines.registry import make_engine
from sparkrank.io.sources import open_source
from sparkrank.kernels.losses import SquaredHingeDiagonalKernel
from sparkrank.numerics import sparse_sums
from sparkrank.numerics.exact_sum import dd_add, dd_round, rmatvec_dd_products
from sparkrank.numerics.sparse_sums import ColumnSums, SparseSums, add_into_dense, add_sparse, wants_sparse_passes
from sparkrank.numerics.tile_columns import tile_columns, tile_products
from sparkrank.training import train


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def hashed(rows: int, n: int, nnz: int, group: int, seed: int, levels: int = 3) -> RankingData:
    """``rows`` rows of ``nnz`` hashed ids out of ``n`` (a few shared by many rows, so columns
    collect terms from several rows, steps and tiles), values with ties, groups of ``group``
    rows (a few one-level groups), graded labels."""
    rng = np.random.default_rng(seed)
    popular = rng.integers(0, n, 16)
    cols = np.where(rng.random((rows, nnz)) < 0.3, rng.choice(popular, (rows, nnz)), rng.integers(0, n, (rows, nnz)))
    vals = rng.choice([1.0, 0.5, -2.0, 3.25, 1e-3], (rows, nnz))
    X = sp.csr_matrix((vals.ravel(), (np.repeat(np.arange(rows), nnz), cols.ravel())), shape=(rows, n))
    X.sum_duplicates()
    X.sort_indices()
    y = rng.integers(0, levels, rows).astype(float)
    y[: 2 * group] = 1.0  # two one-level groups
    return RankingData.from_arrays(X, y, np.repeat(np.arange(-(-rows // group)), group)[:rows])


def test_tile_sums_are_the_dense_sums_bit_for_bit():
    data = hashed(900, 5000, 12, 7, seed=1)
    X, offsets = data.X, data.groups.offsets
    rng = np.random.default_rng(2)
    cuts = np.unique(np.concatenate(([0], rng.choice(offsets[1:-1], 9, replace=False), [offsets[-1]])))
    bounds = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    columns = tile_columns(X, bounds)
    c = rng.choice([0.0, 1.0, -1.0, 0.25, 3.0], size=(3, data.n_rows))
    accumulator, dense_total = ColumnSums(columns[0].block), None
    for (a, b), cols in zip(bounds, columns):
        starts = offsets[(offsets >= a) & (offsets <= b)] - a
        products = [(c[0, a:b], 1), (c[1, a:b], 2), (c[2, a:b], 1)]
        dense = rmatvec_dd_products(X, products, (a, b), starts)
        sparse = tile_products(cols, products, starts)
        distinct = cols.block.columns[cols.positions]
        for (dh, dl), (sh, sl) in zip(dense, sparse):
            assert np.array_equal(_bits(dh[distinct]), _bits(sh)) and np.array_equal(_bits(dl[distinct]), _bits(sl))
            untouched = np.ones(X.shape[1], bool)
            untouched[distinct] = False
            assert not dh[untouched].any() and not dl[untouched].any()
        accumulator.add(cols, sparse)
        dense_total = dense if dense_total is None else [dd_add(t, d) for t, d in zip(dense_total, dense)]
    for got, want in zip(accumulator.sums(), dense_total):
        assert all(np.array_equal(_bits(g), _bits(w)) for g, w in zip(got.dense(), want))
        assert np.array_equal(_bits(got.rounded()), _bits(dd_round(want)))


@pytest.mark.parametrize("rows, nnz, group", [(900, 12, 7), (70_000, 2, 3)])  # uint16 and int32 rows
def test_a_tiles_column_major_copy_holds_its_rows_entries(rows, nnz, group):
    data = hashed(rows, 5000, nnz, group, seed=5)
    X = data.X.copy()
    X.data[::7] = 0.0  # explicit zeros are kept as entries
    rng = np.random.default_rng(6)
    offsets = data.groups.offsets
    cuts = np.unique(np.concatenate(([0], rng.choice(offsets[1:-1], 5, replace=False), [offsets[-1]])))
    bounds = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    for (a, b), cols in zip(bounds, tile_columns(X, bounds)):
        assert cols.rows.dtype == (np.uint16 if b - a < 1 << 16 else np.int32)
        columns = cols.block.columns[cols.positions]
        assert np.all(np.diff(columns) > 0)
        per_entry = np.repeat(columns, np.diff(cols.col_ptr))
        rebuilt = sp.csr_matrix((cols.values, (cols.rows.astype(np.int64), per_entry)), shape=(b - a, X.shape[1]))
        want = X[a:b]
        assert rebuilt.nnz == want.nnz  # explicit zeros included
        assert np.array_equal(rebuilt.toarray(), want.toarray())
        for t in range(min(cols.width, 50)):  # rows ascend within a column
            assert np.all(np.diff(cols.rows[cols.col_ptr[t]: cols.col_ptr[t + 1]].astype(np.int64)) > 0)


@pytest.mark.parametrize("batch, parts", [(1, 1), (3, 2), (40, 7), (40, 5000)])
def test_tiles_added_in_batches_are_the_tiles_added_one_by_one(batch, parts):
    """Each column's additions in tile order, whatever the batches and column ranges: the bits
    of ColumnSums.add tile after tile (sums of many magnitudes, so a change of order shows)."""
    data = hashed(3000, 40_000, 15, 7, seed=21)
    offsets = data.groups.offsets
    rng = np.random.default_rng(22)
    cuts = np.unique(np.concatenate(([0], rng.choice(offsets[1:-1], 39, replace=False), [offsets[-1]])))
    tiles = tile_columns(data.X, list(zip(cuts[:-1].tolist(), cuts[1:].tolist())))
    sums = [None if t % 9 == 4 else  # a tile without sums (a kernel that gives no c)
            [(rng.normal(size=c.width) * 10.0 ** rng.integers(-8, 9, c.width), rng.normal(size=c.width) * 1e-20)
             for _ in range(2)] for t, c in enumerate(tiles)]
    one_by_one, batched = ColumnSums(tiles[0].block), ColumnSums(tiles[0].block)
    for c, s in zip(tiles, sums):
        if s is not None:
            one_by_one.add(c, s)
    for a in range(0, len(tiles), batch):
        batched.add_batch(tiles[a: a + batch], sums[a: a + batch], parts=parts,
                          map_ranges=lambda fn, ranges: [fn(r) for r in reversed(ranges)])  # any order of ranges
    for want, got in zip(one_by_one.sums(), batched.sums()):
        assert np.array_equal(_bits(got.hi), _bits(want.hi)) and np.array_equal(_bits(got.lo), _bits(want.lo))
    empty = ColumnSums(tiles[0].block)
    empty.add_batch(tiles[:2], [None, None])
    assert empty.sums() is None


def test_batches_hold_about_their_bytes_and_at_least_the_threads_tiles(monkeypatch):
    monkeypatch.setattr(sparse_sums, "SUM_BATCH_BYTES", 16 * 3 * 100)
    assert sparse_sums.sum_batches([50, 50, 50, 50, 50], 3) == [(0, 2), (2, 4), (4, 5)]
    assert sparse_sums.sum_batches([50, 50, 50, 50, 50], 3, minimum=3) == [(0, 3), (3, 5)]
    assert sparse_sums.sum_batches([500, 1, 1], 1) == [(0, 1), (1, 3)]
    assert sparse_sums.sum_batches([], 2) == []
    # a batch holds at least the accumulator's bytes: 3 products' double-doubles over 200 columns
    assert sparse_sums.sum_batches([50, 50, 50, 50, 50], 3, block_width=200) == [(0, 4), (4, 5)]
    assert sparse_sums.batch_bytes(3, 200) == 16 * 3 * 200 and sparse_sums.batch_bytes(1, 2) == 16 * 3 * 100


def test_tile_sum_buffers_are_kept_per_slot_and_grow_when_asked_for_more():
    from sparkrank.numerics.sparse_sums import TileSumBuffers

    buffers = TileSumBuffers()
    hi, lo = buffers.take(0, (3, 10))
    assert hi.shape == lo.shape == (3, 10) and hi.flags.c_contiguous and lo.flags.c_contiguous
    assert not np.shares_memory(hi, lo)
    other, _ = buffers.take(1, (3, 10))
    assert not np.shares_memory(hi, other)  # slots of one batch never share
    smaller, _ = buffers.take(0, (1, 7))
    assert smaller.shape == (1, 7) and np.shares_memory(smaller, hi)  # kept, not made again
    larger, _ = buffers.take(0, (3, 11))
    assert larger.shape == (3, 11) and buffers.nbytes() == 2 * 8 * (33 + 30)


def test_tile_sums_written_into_kept_buffers_are_fresh_ones_bit_for_bit():
    from sparkrank.numerics.sparse_sums import TileSumBuffers

    data = hashed(400, 1 << 16, 12, 8, seed=5)
    tile = tile_columns(data.X, [(0, data.n_rows)])[0]
    rng = np.random.default_rng(2)
    buffers = TileSumBuffers()
    buffers.take(0, (3, tile.width))[0].fill(np.nan)  # what an earlier pass left must not show
    offsets = np.array([0, 150, data.n_rows])
    for k in (3, 1, 2):
        products = [(rng.normal(size=data.n_rows), 1 + q % 2) for q in range(k)]
        want = tile_products(tile, products, offsets)
        got = tile_products(tile, products, offsets, buffers, 0)
        for (wh, wl), (gh, gl) in zip(want, got):
            assert np.array_equal(_bits(wh), _bits(gh)) and np.array_equal(_bits(wl), _bits(gl))


def test_sparse_sums_add_as_the_dense_ones():
    rng = np.random.default_rng(4)
    n = 400
    a_cols, b_cols = np.sort(rng.choice(n, 150, replace=False)), np.sort(rng.choice(n, 90, replace=False))
    a = SparseSums(a_cols, rng.normal(size=150) * 1e3, rng.normal(size=150) * 1e-14, n)
    b = SparseSums(b_cols, rng.normal(size=90), rng.normal(size=90) * 1e-17, n)
    want = dd_add(a.dense(), b.dense())
    for got in (add_sparse(a, b).dense(), add_into_dense(tuple(np.array(x) for x in a.dense()), b)):
        assert all(np.array_equal(_bits(g), _bits(w)) for g, w in zip(got, want))


@pytest.mark.parametrize("n_columns", [0, 1, 20, 300, 399, 400])
def test_sparse_sums_round_as_the_dense_pair_sparse_or_nearly_full(n_columns):
    """Few columns scatter into zeros, many are written in one sweep: ``dd_round`` of the dense
    pair either way, first and last columns and ``-0.0`` sums included."""
    rng = np.random.default_rng(n_columns)
    n = 400
    cols = np.sort(rng.choice(n, n_columns, replace=False)).astype(np.int32)
    hi, lo = rng.normal(size=n_columns) * 1e3, rng.normal(size=n_columns) * 1e-14
    if n_columns:
        hi[0], lo[0] = -0.0, -0.0
    sums = SparseSums(cols, hi, lo, n)
    assert np.array_equal(_bits(sums.rounded()), _bits(dd_round(sums.dense())))


@pytest.mark.parametrize("solver, options", [
    ("tron", {}),
    ("bmrm", {}),
    ("ncg", {"gradient": "fast"}),
    ("toppush", {"scope": "group"}),
    ("toppush", {"scope": "global"}),
])
def test_sparse_passes_give_the_dense_model_on_any_threads_and_tiles(solver, options, monkeypatch):
    data = hashed(1200, 3000, 10, 9, seed=3)
    kw = dict(solver=solver, C=0.5, max_iter=6, solver_options=options)
    with LocalEngine(data, threads=1, sparse=False) as engine:
        want = train(engine, **kw).weights
    # tiles of one group each, a batch of 2 or 3 tiles at a time (batches of 1 byte)
    for tile_bytes, threads, batch_bytes in ((1 << 40, 1, 1 << 28), (1, 2, 1), (3000, 3, 1), (3000, 2, 1 << 28)):
        monkeypatch.setattr(tiling, "TILE_BYTES", tile_bytes)
        monkeypatch.setattr(sparse_sums, "batch_bytes", lambda products, width, held=batch_bytes: held)
        with LocalEngine(data, threads=threads, sparse=True) as engine:
            assert engine.sparse
            got = train(engine, **kw).weights
        assert np.array_equal(_bits(got), _bits(want)), (tile_bytes, threads, batch_bytes)


def test_wide_csr_rows_take_the_sparse_passes_by_default():
    assert wants_sparse_passes(hashed(10, 1 << 16, 3, 5, seed=0).X)
    assert not wants_sparse_passes(hashed(10, 1 << 15, 3, 5, seed=0).X)
    assert not wants_sparse_passes(np.zeros((3, 1 << 17)))


def test_a_pass_over_2_24_columns_allocates_nnz_plus_n_not_tiles_times_n(monkeypatch):
    """16 tiles on 2 threads over 2²⁴ hashed ids: the dense sums allocated five arrays of width
    n per tile per product (16 x 3 x 5 x 128 MiB); the sparse pass holds its rounded results
    (three vectors of n) and O(nnz) besides."""
    n = 1 << 24
    data = hashed(3200, n, 40, 50, seed=7)
    monkeypatch.setattr(tiling, "TILE_BYTES", data.X.data.nbytes // 12)
    w = np.random.default_rng(0).normal(size=n) * 1e-3
    with LocalEngine(data, threads=2) as engine:
        assert engine.sparse and len(engine._tiles) >= 12
        engine.run(w, SquaredHingeDiagonalKernel(), keep_state=True)  # compiled, tiles made
        tracemalloc.start()
        try:
            result = engine.run(w, SquaredHingeDiagonalKernel(), keep_state=True)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.moments is not None  # Xᵀc and the preconditioner's two moments: three products
    nnz = data.X.nnz
    assert peak <= 3 * 8 * n + 400 * nnz + (16 << 20), f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("merge", ["tree", "columns"])
def test_spark_gives_the_local_model_on_hashed_features(spark, tmp_path, monkeypatch, merge):
    """Through ``treeAggregate`` (these blocks' sparse sums are small) and through the column-sliced
    merge (forced: ``engines/spark/column_merge.py``): every pass kind gives the local bits."""
    from sparkrank.engines.spark import building
    from sparkrank.kernels.losses import SupportPairDiagonalKernel
    from sparkrank.objectives.base import hessian_diagonal_estimate

    if merge == "columns":
        monkeypatch.setattr(building, "merge_slices", lambda *args, **kwargs: 3)
    data = hashed(600, 1 << 20, 20, 12, seed=9)
    X = data.X
    lines = []
    for i in range(data.n_rows):
        entries = " ".join(f"{j + 1}:{v:g}" for j, v in zip(X.indices[X.indptr[i]:X.indptr[i + 1]],
                                                            X.data[X.indptr[i]:X.indptr[i + 1]]))
        lines.append(f"{data.labels[i]:g} qid:{i // 12} {entries}")
    path = tmp_path / "hashed.svm"
    path.write_text("\n".join(lines) + "\n")
    local_data = read_ranking_data(str(path))
    w = np.random.default_rng(10).normal(size=X.shape[1])
    for solver in ("tron", "bmrm"):
        kw = dict(solver=solver, C=1.0, max_iter=4)
        with LocalEngine(local_data, threads=2) as engine:
            assert engine.sparse
            local = train(engine, **kw)
            if solver == "tron":
                local_diagonal = hessian_diagonal_estimate(engine, w, SupportPairDiagonalKernel(), 1.0)
                local_stats = engine.feature_statistics()
        with make_engine(open_source(str(path), spark=spark), "spark", spark=spark, num_partitions=3) as engine:
            assert (engine._merge_slices(engine._pass_refs().getNumPartitions()) > 0) == (merge == "columns")
            distributed = train(engine, **kw)
            if solver == "tron":
                diagonal = hessian_diagonal_estimate(engine, w, SupportPairDiagonalKernel(), 1.0)
                assert np.array_equal(_bits(diagonal), _bits(local_diagonal))
                stats = engine.feature_statistics()
                for name in ("mean", "m2", "min", "max"):
                    assert np.array_equal(_bits(getattr(stats, name)), _bits(getattr(local_stats, name))), name
        assert np.array_equal(_bits(distributed.weights), _bits(local.weights)), solver


def test_the_memory_model_counts_sparse_passes_by_their_entries():
    from sparkrank.data import memory
    from sparkrank.data.memory import MiB, DataShape, WorkerBudget

    hashed_rows = DataShape(200_000, 1 << 24, 8_000_000, 4000, 4)
    assert hashed_rows.sparse_passes and not DataShape(200_000, 136).sparse_passes
    # in process: the rows, what the sparse passes keep per entry and touched column, the solver's
    # vectors; no partial sums of the full width per thread
    per_thread = memory.PARTIAL_FEATURE_BYTES * hashed_rows.features
    held = memory.local_bytes(hashed_rows, threads=8)
    assert held == memory.local_bytes(hashed_rows, threads=1) < 8 * per_thread
    assert held >= hashed_rows.block_bytes() + memory.SOLVER_VECTORS * 8 * hashed_rows.features
    # on Spark: blocks sized by their entries, where dense partial sums of 2^24 columns could not fit
    budget = WorkerBudget(512 * MiB, "spark.driver.memory=1g over 2 cores", "spark.driver.memory")
    parts = memory.partition_count(hashed_rows, budget, 2, minimum=2, input_bytes=memory.build_input_bytes(40, 8))
    assert 2 <= parts <= 64 and parts % 2 == 0
    assert memory.worker_fixed_bytes(0) + memory.worker_block_bytes(hashed_rows.part(parts)) <= budget.bytes


def test_the_union_of_sorted_columns_is_np_unique():
    from sparkrank.numerics.tile_columns import sorted_union

    rng = np.random.default_rng(11)
    parts = [np.unique(rng.integers(0, 1 << 24, size)) for size in (0, 1, 500, 40_000)]
    got = sorted_union(parts)
    assert got.dtype == np.int64 and np.array_equal(got, np.unique(np.concatenate(parts)))
    assert sorted_union([]).shape == (0,) and sorted_union([parts[0]]).dtype == np.int64


@pytest.mark.parametrize("n_features", [1 << 10, 1 << 16, 1 << 30])
def test_block_columns_by_marks_or_by_sorting_are_the_union_and_its_places(n_features):
    # 2^10 and 2^16 columns take the marks (fewer bytes than sorting the tiles' columns), 2^30 the sort
    from sparkrank.engines.threads import ThreadRunner
    from sparkrank.numerics.tile_columns import block_columns

    rng = np.random.default_rng(17)
    tiles = [np.unique(rng.integers(0, n_features, size)).astype(np.int32) for size in (0, 1, 300, 3000, 3000)]
    tiles.append(np.array([0, n_features - 1], dtype=np.int32))
    union = np.unique(np.concatenate(tiles))
    runner = ThreadRunner(2)
    try:
        for map_tiles in (map, runner.map):
            block, places = block_columns(tiles, n_features, map_tiles)
            assert block.n_features == n_features and block.columns.dtype == np.int64
            assert np.array_equal(block.columns, union)
            for tile, where in zip(tiles, places):
                assert where.dtype == np.int32 and np.array_equal(where, np.searchsorted(union, tile))
    finally:
        runner.close()
    assert block_columns([], n_features)[0].columns.shape == (0,)


def _block(data):
    from sparkrank.engines.spark.store import Block, CsrArrays

    X = data.X
    return Block(CsrArrays(X.indptr, X.indices, X.data, X.shape), data.groups, None)


def _same_tiles(got, want):
    assert [(t.start, t.stop) for t in got] == [(t.start, t.stop) for t in want]
    for g, w in zip(got, want):
        assert np.array_equal(g.groups.offsets, w.groups.offsets) and np.array_equal(g.groups.labels, w.groups.labels)
        assert np.array_equal(g.columns.block.columns, w.columns.block.columns)
        assert g.columns.n_rows == w.columns.n_rows and g.columns.block.n_features == w.columns.block.n_features
        for name in ("col_ptr", "rows", "values", "positions"):
            a, b = getattr(g.columns, name), getattr(w.columns, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name


def test_a_blocks_tiles_kept_as_files_are_the_tiles_made_and_give_their_bits(tmp_path):
    from sparkrank.engines.spark import tile_files

    data = hashed(900, 1 << 16, 12, 7, seed=12)
    tiles, _ = tiling.make_tiles(data.X, data.groups, 4000)
    assert len(tiles) > 3 and tiles[0].columns is not None
    directory = tile_files.tiles_dir(str(tmp_path), 4000)
    assert tile_files.read_tiles(directory, data.groups, data.X.shape[1]) is None
    assert tile_files.write_tiles(directory, tiles)
    kept = tile_files.read_tiles(directory, data.groups, data.X.shape[1])
    _same_tiles(kept, tiles)
    w = np.random.default_rng(13).normal(size=data.X.shape[1])
    kernel = SquaredHingeDiagonalKernel()
    runs = [tiling.fused_pass(data.X, t, w, kernel, None, (1,), np.empty(data.n_rows)) for t in (tiles, kept)]
    (_, (want,), want_moments), (_, (got,), got_moments) = runs
    for g, x in zip([got, *got_moments], [want, *want_moments]):
        assert np.array_equal(_bits(g.rounded()), _bits(x.rounded()))
    # a second writer (another Python worker, at the same time) keeps the first's tiles
    other, _ = tiling.make_tiles(data.X, data.groups, 1 << 40)
    assert tile_files.write_tiles(directory, other)
    _same_tiles(tile_files.read_tiles(directory, data.groups, data.X.shape[1]), tiles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiles-4000"]  # no temporary left


def test_every_python_worker_maps_a_blocks_tiles_made_once(tmp_path, monkeypatch):
    from sparkrank.engines.spark import tile_files as kept

    kernel = SquaredHingeDiagonalKernel()
    blocks = {str(tmp_path / f"part-{k:05d}"): _block(hashed(600, 1 << 16, 10, 6, seed=20 + k)) for k in range(2)}
    for path in blocks:
        (tmp_path / path).mkdir()
    monkeypatch.setattr(kept, "_TILES", {})
    made = {path: kept.block_tiles(path, block, kernel, 3000) for path, block in blocks.items()}
    assert list(kept._TILES) == [(list(blocks)[1], 3000)]  # one block's tiles at a time

    def refuse(*args, **kwargs):
        raise AssertionError("tiles made again")

    monkeypatch.setattr(kept, "make_tiles", refuse)
    for path, block in [*blocks.items(), *reversed(blocks.items())]:
        kept._TILES.clear()  # a Python worker that has not run this block yet
        _same_tiles(kept.block_tiles(path, block, kernel, 3000), made[path])
        assert kept.block_tiles(path, block, kernel, 3000) is kept._TILES[(path, 3000)]


def test_sparse_block_sums_merge_sparsely_while_they_are_small_with_the_dense_bits():
    from sparkrank.engines.spark import tasks

    rng = np.random.default_rng(14)
    n = 3000

    def sums(k):
        cols = np.sort(rng.choice(n, k, replace=False))
        return SparseSums(cols, rng.normal(size=k) * 1e3, rng.normal(size=k) * 1e-14, n)

    for ka, kb, sparse in ((700, 600, True), (1000, 1000, True), (1000, 1001, False), (2000, 900, False)):
        a, b = sums(ka), sums(kb)
        want = dd_add(a.dense(), b.dense())
        got = tasks.add_dd(a, b)
        assert isinstance(got, SparseSums) == sparse, (ka, kb)
        dense = tasks.dense_sums(got)
        assert all(np.array_equal(_bits(g), _bits(w)) for g, w in zip(dense, want))
        assert np.array_equal(_bits(tasks.rounded_sums(got)), _bits(dd_round(want)))


def test_sparse_sums_travel_packed_with_their_bits():
    import pickle

    rng = np.random.default_rng(15)
    k, n = 20_000, 1 << 24
    columns = np.sort(rng.choice(n, k, replace=False))
    lo = np.where(rng.random(k) < 0.1, rng.normal(size=k) * 1e-17, 0.0)
    lo[:3] = -0.0, np.inf, np.nan
    products = [SparseSums(columns, rng.normal(size=k), lo, n), SparseSums(columns, -np.zeros(k), lo * 2, n),
                SparseSums(columns, rng.normal(size=k), rng.normal(size=k), n)]
    plain = 8 * k * 7  # the columns once, three hi and lo
    shipped = pickle.dumps(products, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(shipped) < 0.8 * plain  # the columns once, mostly zero lo as their non-zeros (not -0.0)
    for got, want in zip(pickle.loads(shipped), products):
        assert got.n_features == n and got.columns.dtype == want.columns.dtype
        for g, w in ((got.columns, want.columns), (got.hi, want.hi), (got.lo, want.lo)):
            assert np.array_equal(g.view(np.int64), w.view(np.int64))


def _numpy_tile_columns(X, a, b):
    # the column-major copy by np.argsort(kind="stable") and np.searchsorted: what the radix
    # passes and the galloping walk must give, array for array
    first, last = int(X.indptr[a]), int(X.indptr[b])
    entries = np.asarray(X.indices[first:last])
    order = np.argsort(entries, kind="stable")
    by_column = entries[order]
    starts = np.flatnonzero(np.diff(by_column)) + 1
    distinct = by_column[np.concatenate(([0], starts))] if by_column.shape[0] else by_column
    col_ptr = np.concatenate(([0], starts, [by_column.shape[0]])) if by_column.shape[0] else np.zeros(1)
    row_of = np.repeat(np.arange(b - a), np.diff(np.asarray(X.indptr[a: b + 1])))
    return distinct, col_ptr, row_of[order], np.asarray(X.data[first:last])[order]


@pytest.mark.parametrize("n", [5000, 1 << 24, (1 << 31) - 1])  # one, two and three radix passes
def test_the_radix_column_order_is_the_stable_argsorts(n):
    rng = np.random.default_rng(12)
    rows, group = 3000, 7
    cols = rng.integers(0, n, size=(rows, 9))
    cols[::5, :] = cols[::5, :1]  # repeated columns in a row become one entry
    cols[:, -1] = n - 1  # the last column in every row
    X = sp.csr_matrix((rng.normal(size=cols.size).astype(np.float32), (np.repeat(np.arange(rows), 9), cols.ravel())),
                      shape=(rows, n))
    X.sum_duplicates()
    X.data[::11] = 0.0  # explicit zeros are entries
    bounds = [(0, 700), (700, 701), (701, 701), (701, 2996), (2996, rows)]
    tiles = tile_columns(X, bounds)
    for (a, b), cols_of in zip(bounds, tiles):
        distinct, col_ptr, rows_of, values = _numpy_tile_columns(X, a, b)
        assert np.array_equal(cols_of.block.columns[cols_of.positions], distinct)
        assert np.array_equal(cols_of.positions, np.searchsorted(cols_of.block.columns, distinct))
        assert np.array_equal(cols_of.col_ptr, col_ptr) and cols_of.col_ptr.dtype == np.int32
        assert np.array_equal(cols_of.rows, rows_of) and np.array_equal(_bits(cols_of.values), _bits(values))
        assert cols_of.values.dtype == np.float32


def test_positions_by_galloping_are_searchsorteds():
    from sparkrank.numerics.tile_columns import positions_in

    rng = np.random.default_rng(13)
    ascending = np.unique(rng.integers(0, 1 << 30, 200_000))
    for size in (0, 1, 17, 5000, ascending.shape[0]):
        subset = np.sort(rng.choice(ascending, size, replace=False))
        assert np.array_equal(positions_in(ascending, subset), np.searchsorted(ascending, subset))
    ends = ascending[[0, -1]]
    assert np.array_equal(positions_in(ascending, ends), [0, ascending.shape[0] - 1])
