"""Kernel state kept beside a block on its executor, and replayed when it is lost.

Kernel state (TRON's sorted scores, TopPush's dual iterates; one per tile) is kept beside the
block as a file (``state_files.py``: data only, no pickle), but the driver also keeps its
*recipe* (:class:`StateRecipe`: the vector and kernel of the pass that made it, and the recipe of
that pass's input state).  A state lost with
its executor is recomputed from the rebuilt block by replaying the recipe: the same
arithmetic on the same bytes, so the fit continues bit for bit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tiles import Tile, fused_pass
from . import state_files
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


def drop_states(path: str, released: tuple[int, ...]) -> None:
    for sid in released:
        try:
            os.remove(_state_file(path, sid))
        except FileNotFoundError:
            pass


def read_state(path: str, state_id: int):
    """The kept state, or ``None`` when its file is not on this host or is not a state file
    (then it is recomputed from its recipe like a lost one: it is never executed).

    Its arrays are views of the file's pages in the page cache (a private mapping: a write to
    them stays in this process), not copies: a Hessian pass of TRON reads its scores, order and
    sweep plan (15 bytes per row for queries of under 128 rows), which copying into fresh
    memory on every pass costs (10M rows on local[2], then 12 bytes per row: ~0.04 s of a
    0.6 s pass)."""
    try:
        return state_files.read_state(_state_file(path, state_id))
    except (FileNotFoundError, state_files.StateFileError):
        return None


def write_state(path: str, state_id: int, state) -> None:
    """``state`` as a state file (:mod:`sparkrank.engines.spark.state_files`) that :func:`read_state` maps."""
    state_files.write_state(_state_file(path, state_id), state)


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
