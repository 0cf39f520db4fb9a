"""The data digest a checkpoint is resumed against: every number counts, the order of queries and
where blocks cut them do not (sparkrank.data.digest)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparkrank.data import digest as D
from sparkrank.data.block import RankingData
from sparkrank.data.digest import DataDigest, block_digest, cut_plan, digest_of, digest_pieces, group_keys


def _rows(rng, n=240, width=7, dense=False):
    X = rng.normal(size=(n, width)) * (rng.random((n, width)) < 0.5)
    qid = rng.integers(0, 25, n)  # unsorted, uneven queries; some of one row
    y = rng.integers(0, 4, n).astype(float)
    return (X if dense else sp.csr_matrix(X)), y, qid


def _blocks_of_whole_queries(data: RankingData, rng, n_blocks: int) -> DataDigest:
    """Queries dealt to blocks at random (Spark's executor placement), each block's queries in
    another order than the local block's."""
    owner = rng.integers(0, n_blocks, data.groups.n_groups)
    total = DataDigest()
    for b in range(n_blocks):
        groups = rng.permutation(np.flatnonzero(owner == b))
        if not groups.size:
            continue
        off = data.groups.offsets
        rows = np.concatenate([np.arange(off[g], off[g + 1]) for g in groups])
        sizes = off[groups + 1] - off[groups]
        sub = data.X[rows]
        g = data.groups
        weights = {"row_weights": g.row_weights[rows], "group_weights": g.group_weights[groups]} if g.weighted else {}
        digest, pieces = block_digest(sub, data.groups.labels[rows], np.concatenate(([0], np.cumsum(sizes))),
                                      group_keys(data.qids[groups], groups.size), **weights)
        assert pieces == []
        total = total.add(digest)
    return total


def _blocks_cutting_queries(data: RankingData, rng, n_blocks: int) -> DataDigest:
    """Rows cut into ranges anywhere, through queries and chunks (Spark's driver placement)."""
    off = data.groups.offsets
    n = data.n_rows
    cuts = np.unique(np.concatenate(([0, n], rng.integers(1, n, n_blocks - 1))))
    total, pieces = DataDigest(), []
    for a, b in zip(cuts[:-1], cuts[1:]):
        inner = off[(off > a) & (off < b)]
        offsets = np.concatenate(([0], inner - a, [b - a]))
        first = int(np.searchsorted(off, a, side="right")) - 1
        qids = data.qids[first: first + len(offsets) - 1]
        g = data.groups
        weights = {"row_weights": g.row_weights[a:b],
                   "group_weights": g.group_weights[first: first + len(qids)]} if g.weighted else {}
        digest, cut = block_digest(data.X[a:b], data.groups.labels[a:b], offsets, group_keys(qids, len(qids)),
                                   **cut_plan(off, a, b), **weights)
        total, pieces = total.add(digest), pieces + cut
    return total.add(digest_pieces(pieces))


@pytest.mark.parametrize("dense", [False, True])
def test_the_digest_is_the_same_however_blocks_hold_the_rows(dense, monkeypatch):
    rng = np.random.default_rng(3)
    monkeypatch.setattr(D, "CHUNK_ROWS", 4)  # queries of several chunks, chunks cut by blocks
    X, y, qid = _rows(rng, dense=dense)
    data = RankingData.from_arrays(X, y, qid, layout="dense" if dense else "sparse")
    whole = digest_of(data)
    for n_blocks in (1, 3, 7):
        assert _blocks_of_whole_queries(data, rng, n_blocks) == whole
    for n_blocks in (2, 5, 60, 200):  # 200 blocks: many inside one chunk
        assert _blocks_cutting_queries(data, rng, n_blocks) == whole
    # the rows given in another query order (same order inside each query)
    order = np.argsort(-qid, kind="stable")
    again = RankingData.from_arrays(X[order], y[order], qid[order].astype(np.int32),
                                    layout="dense" if dense else "sparse")
    assert digest_of(again) == whole


def _changed(data, **arrays):
    X, y, qid = arrays.get("X", data.X), arrays.get("y", data.groups.labels), arrays.get("qid", data.qids[
        np.repeat(np.arange(data.groups.n_groups), np.diff(data.groups.offsets))])
    return digest_of(RankingData.from_arrays(X, y, qid)).as_dict()


def test_every_number_counts_and_is_named():
    rng = np.random.default_rng(4)
    data = RankingData.from_arrays(*_rows(rng))
    base = digest_of(data).as_dict()

    def differing(other):
        return sorted(k for k in base if base[k] != other[k])

    y = data.groups.labels.copy()
    first = data.groups.offsets[3]
    a = first + np.flatnonzero(y[first:data.groups.offsets[4]] != y[first])[0]
    y[[first, a]] = y[[a, first]]  # two labels swapped inside a query
    assert differing(_changed(data, y=y)) == ["labels"]
    X = data.X.copy()
    X.data[5] = np.nextafter(X.data[5], np.inf)  # one value, one ulp
    assert differing(_changed(data, X=X)) == ["features"]
    dense = data.X.toarray()
    r = next(i for i in range(dense.shape[0]) if 0 < np.count_nonzero(dense[i]) < dense.shape[1])
    c_from, c_to = np.flatnonzero(dense[r])[0], np.flatnonzero(dense[r] == 0)[0]
    dense[r, c_to], dense[r, c_from] = dense[r, c_from], 0.0  # a value moved to another column
    assert differing(_changed(data, X=sp.csr_matrix(dense))) == ["features"]
    qid = data.qids[np.repeat(np.arange(data.groups.n_groups), np.diff(data.groups.offsets))].copy()
    qid[qid == qid[-1]] = qid.max() + 1  # a query renamed
    assert differing(_changed(data, qid=qid)) == ["features", "groups", "labels"]
    f32 = digest_of(RankingData.from_arrays(data.X, data.groups.labels, qid, dtype=np.float32)).as_dict()
    assert f32["feature_storage"] == "float32 CSR" and base["feature_storage"] == "float64 CSR"


def _weighted(data: RankingData, rng, row_weights=None, group_weights=None) -> RankingData:
    """``data`` with row and group weights (random ones unless given; group weights per row)."""
    g = data.groups
    a = rng.integers(0, 4, data.n_rows) * 0.5 if row_weights is None else row_weights
    b = np.repeat(rng.integers(1, 4, g.n_groups) * 1.5, g.group_sizes) if group_weights is None else group_weights
    qid = data.qids[np.repeat(np.arange(g.n_groups), g.group_sizes)]
    return RankingData.from_arrays(data.X, g.labels, qid, row_weights=a, group_weights=b)


def test_row_and_group_weights_count_and_are_named(monkeypatch):
    """A resumed fit must see the weights its checkpoint's fit saw: one row weight or one group
    weight changed is a different digest, named ``weights``; rows without weights record none,
    so checkpoints of unweighted rows read as before; blocks give the same digest however they
    hold the weighted rows."""
    monkeypatch.setattr(D, "CHUNK_ROWS", 5)  # queries of several chunks, cut anywhere
    rng = np.random.default_rng(11)
    plain = RankingData.from_arrays(*_rows(rng))
    data = _weighted(plain, rng)
    base = digest_of(data).as_dict()
    assert "weights" not in digest_of(plain).as_dict()
    assert sorted(k for k in base if base[k] != digest_of(plain).as_dict().get(k)) == ["weights"]
    a = data.groups.row_weights.copy()
    a[7] += 0.5
    per_row = np.repeat(data.groups.group_weights, data.groups.group_sizes)
    b = per_row.copy()
    first, stop = data.groups.offsets[2], data.groups.offsets[3]
    b[first:stop] *= 2  # one query's group weight
    for changed in (_weighted(data, rng, row_weights=a, group_weights=per_row),
                    _weighted(data, rng, row_weights=data.groups.row_weights, group_weights=b)):
        other = digest_of(changed).as_dict()
        assert sorted(k for k in base if base[k] != other[k]) == ["weights"]
    expected = digest_of(data)
    for n_blocks in (1, 3, 8):
        assert _blocks_of_whole_queries(data, rng, n_blocks) == expected
        assert _blocks_cutting_queries(data, rng, n_blocks) == expected


def test_group_keys_are_the_same_for_any_integer_type():
    assert group_keys(np.array([3, -1], dtype=np.int32), 2) == group_keys(np.array([3, -1]), 2)
    assert group_keys(np.array(["a", "b"]), 2) == group_keys(np.array(["a", "b"], dtype=object), 2)
    assert group_keys(None, 1) == [b""]
    assert len(set(group_keys(np.array([1]), 1) + group_keys(np.array([1.0]), 1) + group_keys(np.array(["1"]), 1))) == 3


def test_spark_gives_the_local_digest_in_either_placement(spark, tmp_path):
    """Executor placement (queries dealt to blocks) and driver placement (blocks cutting queries
    and rows of one ranking) on several partition counts: the in-process engine's digest."""
    from sparkrank.io.files import write_parquet
    from sparkrank.datasets import make_ranking_data
    from sparkrank.engines.local import LocalEngine
    from sparkrank.engines.spark import SparkEngine

    data, _ = make_ranking_data(700, 5, rows_per_group=35, n_levels=3, density=0.6, seed=9)
    path = str(tmp_path / "train.parquet")
    write_parquet(path, data)
    expected = LocalEngine(data).data_digest()
    df = spark.read.parquet(path)
    for placement, partitions in (("executor", 1), ("executor", 3), ("driver", 2), ("driver", 7)):
        with SparkEngine(df, placement=placement, num_partitions=partitions) as engine:
            assert engine.data_digest() == expected, (placement, partitions)
    one_ranking = RankingData.from_arrays(data.X, data.groups.labels)
    with SparkEngine(df.drop("qid"), qid_col=None, num_partitions=4) as engine:
        assert engine.data_digest() == LocalEngine(one_ranking).data_digest()


def test_spark_gives_the_local_digest_of_weighted_rows(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkrank.engines.local import LocalEngine
    from sparkrank.engines.spark import SparkEngine

    rng = np.random.default_rng(3)
    m = 600
    qid = np.sort(rng.integers(0, 40, m))
    y, X = rng.integers(0, 4, m) * 0.5, rng.normal(size=(m, 6)).round(2)
    a, b = rng.integers(0, 4, m) * 0.5, rng.integers(0, 3, 40)[qid] * 1.5
    table = pa.table({"label": y, "qid": qid, "features": list(X), "wt": a, "gwt": b})
    data = RankingData.from_arrays(X, y, qid, row_weights=a, group_weights=b, layout="dense")
    path = str(tmp_path / "weighted.parquet")
    pq.write_table(table, path, row_group_size=100)
    expected = LocalEngine(data).data_digest()
    assert "weights" in expected.as_dict()
    for placement, partitions in (("executor", 3), ("driver", 2)):
        with SparkEngine(spark.read.parquet(path), placement=placement, num_partitions=partitions,
                         weight_col="wt", group_weight_col="gwt") as engine:
            assert engine.data_digest() == expected, (placement, partitions)


@pytest.mark.parametrize("dense", [False, True])
def test_the_local_engine_digest_is_the_same_on_any_number_of_threads(dense, monkeypatch):
    from sparkrank.engines import tiles
    from sparkrank.engines.local import LocalEngine

    monkeypatch.setattr(tiles, "TILE_BYTES", 500)  # many tiles: runs of several
    X, y, qid = _rows(np.random.default_rng(5), dense=dense)
    data = RankingData.from_arrays(X, y, qid, layout="dense" if dense else "sparse")
    expected = digest_of(data)
    for threads in (1, 2, 3):
        engine = LocalEngine(data, threads=threads)
        assert threads == 1 or len(engine._runs) > 1
        assert engine.data_digest() == expected
        engine.close()
