"""Executor side: a block's column-major tiles kept as files beside it, built once per block.

Why: a pass over wide CSR rows (hashed features) runs on tiles that hold their rows column by
column (:class:`~sparkrank.numerics.tile_columns.TileColumns`), made from the block in
O(nnz).  Kept in a Python worker's memory they were made again by every worker that
ran the block for the first time, and nothing pins a block to a worker: on ``local[2]`` the two
workers swap the two blocks between passes at random, and each swap cost a pass the tiles of
both blocks again (200k rows x 40 hashed ids of 2²⁴: 4.5-5 s of CPU per block, a 13-18 s value
pass where the pass itself takes 1 s).  So the first task that needs a block's tiles writes
them into the block's directory, and every later task of any Python worker of that executor
memory-maps them, as it maps the block (:func:`~sparkrank.engines.spark.store.open_block`).

A worker keeps the tiles of the one block it works on in memory (:func:`block_tiles`,
:func:`step_tiles`), as it keeps the block's features.

Layout: ``<block>/tiles-<tile bytes>/`` (``tiles-steps/``: :func:`step_tiles`): ``columns.npy`` (the block's distinct columns),
``bounds.npy`` (per tile: its first and last group, its first and last row) and per tile ``k``
its four arrays ``k-col_ptr.npy``, ``k-rows.npy``, ``k-values.npy``, ``k-positions.npy``.  The
directory is written under a temporary name and renamed into place, so a task reads either
complete tiles or none (and then makes them itself); two tasks that write at once keep the
first's.  The tiles read back are the ones written, array for array, so a pass gives the same
bits whichever worker made them.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from ...data.groups import QueryGroups
from ...numerics.sparse_sums import BlockColumns
from ...numerics.tile_columns import TileColumns, tile_columns
from ..tiles import TILE_BYTES, Tile, make_tiles

_TILE_ARRAYS = ("col_ptr", "rows", "values", "positions")

#: The tiles of the one block this Python worker works on, by block and kind (a tile size, or
#: ``"steps"``).
_TILES: dict[tuple[str, int | str | None], list[Tile]] = {}


def block_tiles(path: str, block, kernel, tile_bytes: int | None) -> list[Tile]:
    """The block's groups cut into tiles for the fused pass (``engines/tiles.py``).  A kernel
    that needs every group at once gets one tile.

    Tiles over wide CSR rows hold them column by column, made once per block and kept as files
    beside it for every Python worker of the executor; a worker keeps the tiles of the block it
    works on, as :func:`~.store.open_block` keeps its features."""
    if kernel.spans_groups:
        return [Tile(block.groups, 0, int(block.groups.offsets[-1]))]
    return _kept((path, tile_bytes), tiles_dir(path, tile_bytes), block.groups, block.X.shape[1],
                 lambda: make_tiles(block.X, block.groups, tile_bytes)[0])


def step_tiles(path: str, block, bounds: list[tuple[int, int]]) -> list[Tile]:
    """The block's wide CSR rows cut at ``bounds`` (row ranges that no step of ``Xᵀc`` crosses),
    column by column, without groups: driver and range placement's products (``step_sums.py``).
    Kept like :func:`block_tiles`' (the bounds are the block's for as long as it lives)."""
    return _kept((path, "steps"), os.path.join(path, "tiles-steps"), None, block.X.shape[1],
                 lambda: [Tile(None, a, b, c) for (a, b), c in zip(bounds, tile_columns(block.X, bounds))])


def _kept(key, directory: str, groups: QueryGroups | None, width: int, make) -> list[Tile]:
    tiles = _TILES.get(key)
    if tiles is None:
        _TILES.clear()  # another block's: mapped again (or cut again) when a task needs it
        tiles = read_tiles(directory, groups, width)
        if tiles is None:
            tiles = make()
            if tiles[0].columns is not None:
                write_tiles(directory, tiles)
        _TILES[key] = tiles
    return tiles


def forget(path: str) -> None:
    """Drop the kept tiles of the block at ``path`` (removed)."""
    for key in [k for k in _TILES if k[0] == path]:
        del _TILES[key]


def tiles_dir(block_path: str, tile_bytes: int | None) -> str:
    """Where the tiles of ``tile_bytes`` (default :data:`~sparkrank.engines.tiles.TILE_BYTES`) of
    the block at ``block_path`` are kept."""
    return os.path.join(block_path, f"tiles-{TILE_BYTES if tile_bytes is None else int(tile_bytes)}")


def write_tiles(directory: str, tiles: list[Tile]) -> bool:
    """Keep ``tiles`` (all with :attr:`Tile.columns`, of one block) in ``directory``, written
    under a temporary name and renamed into place (left as it is if it exists already).
    Whether ``directory`` holds tiles now: not when they could not be written (a full disk),
    and the pass then goes on with the tiles in memory."""
    tmp = f"{directory}.tmp-{os.getpid()}"
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        np.save(os.path.join(tmp, "columns.npy"), tiles[0].columns.block.columns)
        first = np.cumsum([0] + [0 if t.groups is None else t.groups.n_groups for t in tiles])
        np.save(os.path.join(tmp, "bounds.npy"),
                np.array([[first[k], first[k + 1], t.start, t.stop] for k, t in enumerate(tiles)], dtype=np.int64))
        for k, tile in enumerate(tiles):
            for name in _TILE_ARRAYS:
                np.save(os.path.join(tmp, f"{k}-{name}.npy"), getattr(tile.columns, name))
        os.rename(tmp, directory)
    except OSError:  # another task's tiles renamed first, or no room for them
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return os.path.isdir(directory)


def _load(directory: str, name: str) -> np.ndarray:
    # copy-on-write maps: writable arrays as the kernels were compiled for, pages shared and never written
    return np.asarray(np.load(os.path.join(directory, name + ".npy"), mmap_mode="c", allow_pickle=False))


def read_tiles(directory: str, groups: QueryGroups | None, n_features: int) -> list[Tile] | None:
    """The tiles :func:`write_tiles` kept in ``directory`` over the block's ``groups`` (``None``:
    tiles without groups) and width ``n_features``, memory-mapped; ``None`` when there are none."""
    if not os.path.isdir(directory):
        return None
    block = BlockColumns(_load(directory, "columns"), int(n_features))
    tiles = []
    for k, (g0, g1, start, stop) in enumerate(_load(directory, "bounds").tolist()):
        col_ptr, rows, values, positions = (_load(directory, f"{k}-{name}") for name in _TILE_ARRAYS)
        tiles.append(Tile(None if groups is None else groups.slice(g0, g1), start, stop,
                          TileColumns(col_ptr, rows, values, positions, block, stop - start)))
    return tiles
