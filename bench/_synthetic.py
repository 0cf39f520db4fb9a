"""Large synthetic ranking sets written to Parquet chunk by chunk (never all in memory).

Same model as :func:`sparkrank.datasets.make_ranking_data`: rows ``x`` uniform in [0, 1)
(dense) or 50-of-n sparse, utility ``w*·x`` plus 50% noise, cut into ``n_levels`` grades at
quantiles of a pilot chunk, query groups of 60–180 rows (~120).  Files are cached under
``bench/results/data`` and reused when the same set is asked for again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from _common import RESULTS

DATA_DIR = RESULTS / "data"


def synthetic_parquet(
    n_rows: int,
    n_features: int,
    *,
    nnz_per_row: int | None = None,
    rows_per_group: int = 120,
    n_levels: int = 5,
    chunk: int = 200_000,
    seed: int = 0,
) -> Path:
    """Path of a Parquet file with ``label``, ``qid`` and float32 features.

    Dense sets store a ``features`` list<float> column; sparse sets (``nnz_per_row``) the
    ``indices``/``values`` layout with the width in the schema metadata.
    """
    kind = "dense" if nnz_per_row is None else f"nnz{nnz_per_row}"
    path = DATA_DIR / f"syn_{n_rows}x{n_features}_{kind}_g{rows_per_group}_l{n_levels}_s{seed}.parquet"
    if path.exists():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=n_features)
    edges = None
    next_qid, left_in_group = 0, 0
    tmp = path.with_suffix(".tmp")
    writer = None
    for start in range(0, n_rows, chunk):
        n = min(chunk, n_rows - start)
        if nnz_per_row is None:
            X = rng.random((n, n_features), dtype=np.float32)
            signal = X @ w_true
        else:
            # one index per stratum of n_features / nnz columns: distinct and increasing
            stride = n_features // nnz_per_row
            idx = (np.arange(nnz_per_row) * stride + rng.integers(0, stride, size=(n, nnz_per_row))).astype(np.int32)
            val = rng.random((n, nnz_per_row), dtype=np.float32)
            signal = np.einsum("ij,ij->i", val, w_true[idx])
        utility = signal + 0.5 * signal.std() * rng.normal(size=n)
        if edges is None:
            edges = np.quantile(utility, np.linspace(0, 1, n_levels + 1)[1:-1])
        labels = np.searchsorted(edges, utility).astype(np.float64)
        qid = np.empty(n, dtype=np.int64)
        i = 0
        while i < n:
            if left_in_group == 0:
                next_qid += 1
                left_in_group = int(rng.integers(rows_per_group // 2, rows_per_group + rows_per_group // 2 + 1))
            take = min(left_in_group, n - i)
            qid[i: i + take] = next_qid
            i += take
            left_in_group -= take
        columns = {"label": pa.array(labels), "qid": pa.array(qid)}
        if nnz_per_row is None:
            columns["features"] = pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), n_features).cast(
                pa.list_(pa.float32()))
        else:
            offsets = pa.array(np.arange(0, n * nnz_per_row + 1, nnz_per_row, dtype=np.int32))
            columns["indices"] = pa.ListArray.from_arrays(offsets, pa.array(idx.ravel()))
            columns["values"] = pa.ListArray.from_arrays(offsets, pa.array(val.ravel()))
        table = pa.table(columns)
        if writer is None:
            meta = {"sparkrank.n_features": str(n_features), "sparkrank.synthetic": json.dumps({"seed": seed})}
            writer = pq.ParquetWriter(str(tmp), table.schema.with_metadata(meta))
        writer.write_table(table.replace_schema_metadata(writer.schema.metadata))
    writer.close()
    tmp.rename(path)
    print(f"wrote {path.name} ({path.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t0:.0f}s", flush=True)
    return path


def synthetic_svmlight(n_rows: int, n_features: int, *, rows_per_group: int = 120, n_levels: int = 5,
                       seed: int = 0, chunk: int = 20_000) -> Path:
    """The dense :func:`synthetic_parquet` set as LETOR-style SVMlight text, values to six
    decimals (cached like it).

    Written chunk by chunk (each chunk through sparkrank's shortest-round-trip writer, then
    appended), so memory stays at one chunk; the file is what LIBLINEAR-ranksvm and sparkrank
    both read in ``bench/train_letor.py --whole-process``.
    """
    source = synthetic_parquet(n_rows, n_features, rows_per_group=rows_per_group, n_levels=n_levels, seed=seed)

    def six_decimals(batch):
        # Six decimals, as LETOR files have (the shortest text of a float32 seen as a
        # float64 has ~17 digits and would double the file and the parse for both programs).
        return np.round(np.asarray(batch.column("features").flatten(), dtype=np.float64), 6).reshape(-1, n_features)

    return svmlight_from_parquet(source, source.with_suffix(".letor.svm"), six_decimals, chunk)


def svmlight_from_parquet(source: Path, path: Path, features_of, chunk: int) -> Path:
    """``source``'s rows (``label``, ``qid`` and ``features_of(batch)``, a dense or scipy sparse
    matrix) as SVMlight text at ``path``, written once (kept: later calls return it) chunk by
    chunk through sparkrank's shortest-round-trip writer, so memory stays at one chunk."""
    import pyarrow.parquet as pq

    from sparkrank.data.svmlight import write_svmlight

    if path.exists():
        return path
    t0 = time.perf_counter()
    tmp, piece = path.with_suffix(".svm.tmp"), path.with_suffix(".svm.piece")
    with open(tmp, "wb") as out:
        for batch in pq.ParquetFile(str(source)).iter_batches(batch_size=chunk):
            write_svmlight(piece, features_of(batch), batch.column("label").to_numpy(), batch.column("qid").to_numpy())
            out.write(piece.read_bytes())
    piece.unlink()
    tmp.rename(path)
    print(f"wrote {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f}s", flush=True)
    return path
