"""Solver checkpoints during a fit, and resuming from the newest one (CLI, jobs, pyspark.ml).

A checkpoint is one JSON file ``<dir>/iter-NNNNNNNN`` written atomically (temporary name,
then rename), so a reader never sees half of one, plus ``iter-NNNNNNNN.npz`` (written first)
when the solver's state has arrays.  It holds the iteration, the solver's current weights (in
the solver's space: standardized when standardization is on), the solver's own state
(``state`` of its :class:`~sparkrank.solvers.result.IterationRecord`: TRON's trust-region
radius; BMRM's cutting planes, Gram matrix and best point; NCG's gradient, direction and step
memory), the fit's settings, its start point, the model-format version and a fingerprint of
the training data (:func:`data_fingerprint`: sizes and a digest of every group id, label,
feature value and index).  A resumed fit checks all of them first and refuses with an error
that names what differs; then the solver continues bit for bit where the undisturbed run would
have been.  ``--resume`` with no checkpoint there yet starts afresh, with a warning.

Only the newest :data:`KEEP` checkpoints stay.  Directories are local paths or any Hadoop
URI (``hdfs://``, ``s3a://``, ``file:``): the storage functions at the end are the only
place that touches storage, through :func:`sparkrank.io.fs.filesystem` like every other path.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .io import uri as U
from .io.fs import filesystem
from .model import FORMAT_VERSION
from .solvers.result import IterationRecord  # solvers without a state (TopPush) resume as a warm start from w

log = logging.getLogger("sparkrank.checkpoints")

#: How many checkpoints a fit keeps (older ones are deleted after each write).
KEEP = 2
PREFIX = "iter-"
_ARRAY = "__float64_array__"
#: The solver state's arrays (BMRM's planes: iterations × features) go to ``<checkpoint>.npz``
#: beside the JSON (written first, so a JSON never names a missing sidecar).
SIDECAR = ".npz"


class CheckpointMismatchError(ValueError):
    """The checkpoint was written by a fit with other settings or other data."""


def data_fingerprint(engine) -> dict[str, Any]:
    """Sizes, feature storage and digests of every number the objective sees: group ids and
    sizes, labels, feature values and indices (:meth:`~sparkrank.engines.base.Engine.data_digest`:
    the same on every engine and partitioning for the same rows in the same storage)."""
    s = engine.summary
    return {"n_rows": s.n_rows, "n_groups": s.n_groups, "n_pairs": s.n_pairs,
            "n_groups_without_pairs": s.n_groups_without_pairs, "n_features": s.n_features,
            **engine.data_digest().as_dict()}


#: How a refusal names each fingerprint entry that differs.
_DATA_CHANGES = {"groups": "group ids or group sizes differ", "labels": "labels differ",
                 "features": "feature values or indices differ", "weights": "row or group weights differ"}


def data_changes(theirs: Any, mine: Any) -> str:
    """What differs between two :func:`data_fingerprint` s, in words (``"labels differ"``)."""
    if not (isinstance(theirs, dict) and isinstance(mine, dict)):
        return "it has no fingerprint of every value (a checkpoint of an earlier sparkrank)"
    changed = []
    for key in sorted(set(theirs) | set(mine), key=lambda k: (k in _DATA_CHANGES, k)):
        if theirs.get(key) != mine.get(key):
            changed.append(_DATA_CHANGES.get(key) or f"{key} {theirs.get(key)!r} then, {mine.get(key)!r} now")
    return "; ".join(changed)


def start_fingerprint(w0: np.ndarray | None) -> str | None:
    """The start point of a fit as a checkpoint records it: ``None`` (zeros) or a digest of its bytes."""
    if w0 is None:
        return None
    return hashlib.blake2b(np.ascontiguousarray(w0, dtype=np.float64), digest_size=16).hexdigest()


def checkpoint_path(directory: str, iteration: int) -> str:
    """Where the checkpoint of ``iteration`` is written."""
    return f"{directory.rstrip('/')}/{PREFIX}{iteration:08d}"


def _iterations(directory: str) -> list[int]:
    names = list_names(directory)
    return sorted(int(n[len(PREFIX):]) for n in names if n.startswith(PREFIX) and n[len(PREFIX):].isdigit())


def latest(directory: str) -> dict[str, Any] | None:
    """The newest checkpoint in ``directory`` (``weights`` as a numpy array, ``path`` added), or ``None``."""
    found = _iterations(directory)
    if not found:
        return None
    path = checkpoint_path(directory, found[-1])
    try:
        record = json.loads(read_text(path))
        record["weights"] = np.asarray(record["weights"], dtype=np.float64)
        arrays = None
        if record.get("arrays"):
            with np.load(io.BytesIO(read_bytes(path + SIDECAR)), allow_pickle=False) as npz:
                arrays = [npz[f"a{i}"] for i in range(len(npz.files))]
        record["solver_state"] = decode_state(record.get("solver_state"), arrays)
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"checkpoint {path} is not a sparkrank checkpoint: {exc}") from None
    record["path"] = path
    return record


class CheckpointWriter:
    """A solver ``callback(record)`` writing a checkpoint every ``interval`` accepted iterations.

    Parameters
    ----------
    directory : str
        Local path or Hadoop URI; created if missing.
    interval : int
    meta : dict
        Facts stored beside the weights (settings, data fingerprint).
    """

    def __init__(self, directory: str, interval: int, meta: dict[str, Any]):
        if interval < 1:
            raise ValueError(f"checkpoint interval must be positive; got {interval}")
        self.directory, self.interval, self.meta = directory.rstrip("/"), interval, dict(meta)
        self.written: list[str] = []

    def __call__(self, record: IterationRecord) -> None:
        iteration, w = record.iteration, record.w
        if not record.accepted or iteration % self.interval:  # a rejected step changed nothing
            return
        if not self.written:
            # an earlier fit's checkpoints (already read if this fit resumes from one) would
            # outrank this fit's by iteration number: the directory holds one fit at a time
            for old in _iterations(self.directory):
                if old >= iteration:
                    _delete_checkpoint(self.directory, old)
        path = checkpoint_path(self.directory, iteration)
        arrays: list[np.ndarray] = []
        state = encode_state(record.state or {}, arrays)
        if arrays:
            buffer = io.BytesIO()
            np.savez(buffer, **{f"a{i}": a for i, a in enumerate(arrays)})
            write_bytes_atomic(path + SIDECAR, buffer.getvalue())
        text = json.dumps({**self.meta, "iteration": int(iteration), "solver_state": state, "arrays": len(arrays),
                           "record": {k: _plain_value(v) for k, v in record.as_dict().items() if _is_plain(v)},
                           "weights": [float(v) for v in w]})  # repr of a float64 round-trips exactly
        write_text_atomic(path, text)
        self.written.append(path)
        log.info("checkpoint of iteration %d written to %s", iteration, path)
        for old in _iterations(self.directory)[:-KEEP]:
            _delete_checkpoint(self.directory, old)


def _delete_checkpoint(directory: str, iteration: int) -> None:
    path = checkpoint_path(directory, iteration)
    delete(path)  # the JSON first: a sidecar without its JSON is never read
    delete(path + SIDECAR)


def clear(directory: str) -> None:
    """Delete every checkpoint in ``directory`` (a finished fit's; the directory may be missing)."""
    for it in _iterations(directory):
        _delete_checkpoint(directory, it)


#: The entries of a checkpoint's facts that are data fingerprints (:func:`data_fingerprint`).
DATA_KEYS = ("data", "train_data", "valid_data")


def check_compatible(found: dict[str, Any], meta: dict[str, Any], option: str = "--checkpoint-dir") -> None:
    """Raise :class:`CheckpointMismatchError` naming the first setting or data fact that differs
    (for the data, what in it changed; ``option``: how the message names the checkpoint
    directory's option)."""
    for key, mine in meta.items():
        theirs = found.get(key)
        if theirs == mine:
            continue
        if key in DATA_KEYS:
            keys = list(mine or {}) + [k for k in (theirs if isinstance(theirs, dict) else {}) if k not in (mine or {})]
            shown = [k for k in keys if not isinstance(theirs, dict) or theirs.get(k) != (mine or {}).get(k)]
            raise CheckpointMismatchError(
                f"checkpoint {found['path']} was written with {key}={_subset(theirs, shown)!r}, but this fit has "
                f"{key}={_subset(mine, shown)!r}: the data changed since the checkpoint "
                f"({data_changes(theirs, mine)}); resume with the same data, or use another {option}")
        raise CheckpointMismatchError(
            f"checkpoint {found['path']} was written with {key}={theirs!r}, but this fit has "
            f"{key}={mine!r}; resume with the same data and settings, or use another {option}")


def _subset(value: Any, keys: list[str]) -> Any:
    return {k: value.get(k) for k in keys} if isinstance(value, dict) else value


@dataclass
class Resumption:
    """What a checkpointed fit starts from: weights, solver state and the writer callback."""

    w0: np.ndarray | None
    solver_state: dict[str, Any] | None
    callback: Callable | None
    iteration: int = 0


def begin(directory: str | None, *, interval: int, resume: bool, engine, settings: dict[str, Any],
          w0: np.ndarray | None = None, fingerprint: dict[str, Any] | None = None,
          option: str = "--checkpoint-dir") -> Resumption:
    """Set up checkpoints for one fit, resuming from the newest one when asked.

    Parameters
    ----------
    directory : str or None
        Checkpoint directory (``None``: no checkpoints; then ``resume`` is an error).
    interval : int
        Write every ``interval`` accepted iterations.
    resume : bool
        Start from the newest checkpoint (after checking ``settings``, ``w0``, the model format
        and the data); with none there yet, start afresh (a warning says so).
    engine : Engine
        The training data (for the fingerprint).
    settings : dict
        Everything that must match to resume: solver, C, tol, counting, options, standardization.
    w0 : ndarray, optional
        The start when there is nothing to resume (a resumed fit must have been given the same).
    fingerprint : dict, optional
        :func:`data_fingerprint` of ``engine`` when the caller has it (saves a statistics pass).
    option : str
        How messages name the directory's option.
    """
    if directory is None:
        if resume:
            raise ValueError("--resume needs --checkpoint-dir")
        return Resumption(w0, None, None)
    meta = {**settings, "start": start_fingerprint(w0), "model_format": FORMAT_VERSION,
            "data": fingerprint or data_fingerprint(engine), "n_features": engine.summary.n_features}
    writer = CheckpointWriter(directory, interval, meta)
    if resume:
        found = latest(directory)
        if found is None:
            log.warning("--resume: no checkpoint in %s%s; starting afresh", directory,
                        "" if filesystem(directory).exists(directory) else " (no such directory)")
        else:
            check_compatible(found, meta, option)
            if found["weights"].shape != (engine.summary.n_features,):
                raise CheckpointMismatchError(f"checkpoint {found['path']} has {found['weights'].shape[0]} "
                                              f"weights, the data {engine.summary.n_features} features")
            state = found.get("solver_state") or None
            log.info("resuming from %s (iteration %d%s)", found["path"], found["iteration"],
                     "" if state else "; a warm start: this solver's state is not checkpointed")
            return Resumption(found["weights"], state, writer, int(found["iteration"]))
    return Resumption(w0, None, writer)


def encode_state(state, arrays: list[np.ndarray]):
    """A solver state (nested dicts, lists, numbers, arrays) as JSON-ready values; each array is
    appended to ``arrays`` (stored in the ``.npz`` sidecar, bit for bit) and replaced by its number."""
    if isinstance(state, np.ndarray):
        arrays.append(np.asarray(state, dtype=np.float64))
        return {_ARRAY: len(arrays) - 1}
    if isinstance(state, dict):
        return {k: encode_state(v, arrays) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return [encode_state(v, arrays) for v in state]
    return _plain_value(state)


def decode_state(state, arrays: list[np.ndarray] | None):
    """The inverse of :func:`encode_state`."""
    if isinstance(state, dict):
        if _ARRAY in state:
            return arrays[state[_ARRAY]]
        return {k: decode_state(v, arrays) for k, v in state.items()}
    if isinstance(state, list):
        return [decode_state(v, arrays) for v in state]
    return state


def _is_plain(v) -> bool:
    return isinstance(v, (int, float, str, bool, np.floating, np.integer)) or v is None


def _plain_value(v):
    return v.item() if isinstance(v, (np.floating, np.integer)) else v


# -- storage: the only functions that touch the file system (also for sparkrank.tune_checkpoints) ------------------------------------
# A directory without a scheme is a local path; a file: URI (file:/x and file:///x alike) is
# this machine's /x; any other URI goes through Hadoop (io/fs.filesystem: the one rule).
def write_text_atomic(uri: str, text: str) -> None:
    write_bytes_atomic(uri, text.encode("utf-8"))


def write_bytes_atomic(uri: str, data: bytes) -> None:
    """Write ``data`` to ``uri`` atomically (a temporary sibling, then a rename), its directory
    made first."""
    fs = filesystem(uri)
    fs.mkdirs(U.parent(uri))
    fs.write_bytes(uri, data)


def read_text(uri: str) -> str:
    return read_bytes(uri).decode("utf-8")


def read_bytes(uri: str) -> bytes:
    return filesystem(uri).read_bytes(uri)


def list_names(directory: str) -> list[str]:
    """The names in ``directory`` (none when it does not exist)."""
    fs = filesystem(directory)
    if not fs.exists(directory):
        return []
    return [U.basename(path) for path, _, _ in fs.children(directory)]


def delete(uri: str) -> None:
    """Delete the file (or directory tree) ``uri`` when it exists."""
    fs = filesystem(uri)
    if fs.exists(uri):
        fs.delete(uri, recursive=True)
