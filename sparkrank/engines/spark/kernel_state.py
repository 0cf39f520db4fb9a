"""Kernel state kept beside a block on its executor, and replayed when it is lost.

Kernel state (TRON's sorted scores, TopPush's dual iterates; one per tile) is kept beside the
block as a file, but the driver also keeps its *recipe* (:class:`StateRecipe`: the vector and kernel
of the pass that made it, and the recipe of that pass's input state).  A state lost with
its executor is recomputed from the rebuilt block by replaying the recipe: the same
arithmetic on the same bytes, so the fit continues bit for bit.
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tiles import Tile, fused_pass
from .store import Block

@dataclass(frozen=True)
class StateRecipe:
    """How a kept kernel state was made: ``kernel(groups, X·vector, parent state)``.

    The driver keeps one per live state; a task whose state file is gone (its executor was
    lost and the block rebuilt elsewhere) replays the chain from the nearest state still on
    disk, or from the start.  TRON's states have no parent (one sort at ``w``); TopPush's
    dual iterates chain back to the first step.
    """

    state_id: int
    vector: np.ndarray
    kernel: Any
    parent: "StateRecipe | None" = None

    def chain(self) -> list["StateRecipe"]:
        """This recipe and its ancestors, newest first."""
        out, r = [], self
        while r is not None:
            out.append(r)
            r = r.parent
        return out


@dataclass(frozen=True)
class MissingStates:
    """What an executor pass returns instead of a result when kernel states were not found."""

    partitions: frozenset


def _state_file(path: str, state_id: int) -> str:
    return os.path.join(path, f"state-{state_id}.bin")


#: A state file's arrays start on multiples of this many bytes (a cache line), so the arrays
#: read back from it are aligned like freshly allocated ones.
_STATE_ALIGN = 64


def drop_states(path: str, released: tuple[int, ...]) -> None:
    for sid in released:
        try:
            os.remove(_state_file(path, sid))
        except FileNotFoundError:
            pass


def read_state(path: str, state_id: int):
    """The kept state, or ``None`` when its file is not on this host.

    Its arrays are views of the file's pages in the page cache (a private mapping: a write to
    them stays in this process), not copies: a Hessian pass of TRON reads its scores, order and
    sweep plan (15 bytes per row for queries of under 128 rows), which unpickling copied into
    fresh memory on every pass (10M rows on local[2], then 12 bytes per row: ~0.04 s of a 0.6 s
    pass)."""
    try:
        f = open(_state_file(path, state_id), "rb")
    except FileNotFoundError:
        return None
    with f:
        mapped = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY))
    header_size, n_buffers = struct.unpack_from("<QQ", mapped, 0)
    sizes = struct.unpack_from(f"<{n_buffers}Q", mapped, 16)
    position = 16 + 8 * n_buffers
    header = mapped[position:position + header_size]
    position += header_size
    buffers = []
    for size in sizes:
        position = -(-position // _STATE_ALIGN) * _STATE_ALIGN
        buffers.append(mapped[position:position + size])
        position += size
    return pickle.loads(header, buffers=buffers)


def write_state(path: str, state_id: int, state) -> None:
    """``state`` as pickle protocol 5 with its arrays out of band: sizes, the pickle, then each
    array's bytes at a multiple of :data:`_STATE_ALIGN` (:func:`read_state` maps them)."""
    buffers: list[pickle.PickleBuffer] = []
    header = pickle.dumps(state, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    tmp = _state_file(path, state_id) + f".{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack(f"<QQ{len(raws)}Q", len(header), len(raws), *(r.nbytes for r in raws)))
        f.write(header)
        for raw in raws:
            f.write(bytes(-f.tell() % _STATE_ALIGN))
            f.write(raw)
    os.replace(tmp, _state_file(path, state_id))  # a killed task never leaves half a state


def replay_state(block: Block, tiles: list[Tile], ref, recipe: StateRecipe):
    """Recompute a lost state (one per tile) from its recipe chain (bitwise what the original
    passes made)."""
    chain = recipe.chain()
    state, start = None, len(chain)
    for i, r in enumerate(chain):  # the newest ancestor still on disk
        found = read_state(ref.path, r.state_id)
        if found is not None:
            state, start = found, i
            break
    scores = np.empty(ref.n_rows, dtype=np.float64)
    for r in reversed(chain[:start]):
        results, _, _ = fused_pass(block.X, tiles, r.vector[: ref.width], r.kernel, state, (), scores)
        state = [result.state for result in results]
    write_state(ref.path, recipe.state_id, state)
    return state
