"""Kernel-state files without pickle: a JSON description of the state, then its arrays' bytes.

A kept kernel state (TRON's sorted scores and order, TopPush's dual iterates: one per tile) is
``None``, numbers, strings, tuples and lists of them, and numpy arrays.  It used to be a pickle,
and unpickling runs whatever code the file names: whoever could write the file ran code as the
training user.  Now the file holds no code, only data:

    b"SPARKRANK-STATE-1\\n"   magic
    <Q                       the JSON header's size in bytes
    JSON header              {"tree": node, "arrays": [[dtype, shape, offset, nbytes], ...]}
    array bytes              each array C-ordered at ``offset``, a multiple of :data:`ALIGN`

where a node is JSON's null, a boolean, a number or a string, or ``{"tuple": [...]}``,
``{"list": [...]}``, ``{"array": i}`` (array ``i``) or ``{"scalar": i}`` (a numpy scalar, kept
as a 0-d array).  Reading maps the file and makes each array a view of its pages (a private
mapping: a task may write to them without touching the file), after checking every array's
type (booleans, integers or floats only: never objects), shape and bounds; anything else is
:class:`StateFileError`, never executed.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from typing import Any

import numpy as np

MAGIC = b"SPARKRANK-STATE-1\n"
#: A state file's arrays start on multiples of this many bytes (a cache line), so the arrays
#: read back from it are aligned like freshly allocated ones.
ALIGN = 64
#: The numpy kinds an array of a state may have: booleans, signed and unsigned integers, floats.
_KINDS = "biuf"


class StateFileError(ValueError):
    """A state file that is not one this module wrote (tampered with, truncated, another format)."""


def write_state(path: str, state: Any) -> None:
    """Write ``state`` to ``path`` atomically (a temporary file, then a rename: a killed task
    never leaves half a state)."""
    arrays: list[np.ndarray] = []
    tree = _encode(state, arrays)
    specs, position = [], 0
    for a in arrays:
        position = -(-position // ALIGN) * ALIGN
        specs.append([a.dtype.str, list(a.shape), position, a.nbytes])
        position += a.nbytes
    header = json.dumps({"tree": tree, "arrays": specs}).encode("utf-8")
    start = -(-(len(MAGIC) + 8 + len(header)) // ALIGN) * ALIGN  # where the arrays' offsets count from
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(header)) + header)
        for a, (_, _, offset, _) in zip(arrays, specs):
            f.write(bytes(start + offset - f.tell()))
            f.write(memoryview(a).cast("B") if a.nbytes else b"")
    os.replace(tmp, path)


def read_state(path: str) -> Any:
    """The state in ``path``; ``FileNotFoundError`` when there is none, :class:`StateFileError`
    when the file is not a state file."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < len(MAGIC) + 8:
            raise StateFileError(f"{path}: too short for a kernel state ({size} bytes)")
        mapped = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY))
    if bytes(mapped[:len(MAGIC)]) != MAGIC:
        raise StateFileError(f"{path}: not a sparkrank kernel-state file")
    (header_size,) = struct.unpack_from("<Q", mapped, len(MAGIC))
    body = len(MAGIC) + 8
    if header_size > size - body:
        raise StateFileError(f"{path}: its header runs past the end of the file")
    try:
        header = json.loads(bytes(mapped[body:body + header_size]).decode("utf-8"))
        start = -(-(body + header_size) // ALIGN) * ALIGN
        arrays = [_array(mapped, start, spec) for spec in header["arrays"]]
        return _decode(header["tree"], arrays)
    except StateFileError as exc:
        raise StateFileError(f"{path}: {exc}") from None
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise StateFileError(f"{path}: not a sparkrank kernel-state file ({type(exc).__name__}: {exc})") from None


def _encode(value: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(value, np.ndarray):
        arrays.append(_plain_array(value))
        return {"array": len(arrays) - 1}
    if isinstance(value, np.generic):
        arrays.append(_plain_array(np.asarray(value)))
        return {"scalar": len(arrays) - 1}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return {"tuple" if isinstance(value, tuple) else "list": [_encode(v, arrays) for v in value]}
    raise TypeError(f"a kernel state may not hold a {type(value).__name__}")


def _plain_array(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind not in _KINDS:
        raise TypeError(f"a kernel state may not hold an array of {a.dtype}")
    return a if a.flags.c_contiguous else a.copy(order="C")  # (ascontiguousarray makes a 0-d array 1-d)


def _decode(node: Any, arrays: list[np.ndarray]) -> Any:
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (kind, value), = node.items()
        if kind in ("tuple", "list") and isinstance(value, list):
            items = [_decode(v, arrays) for v in value]
            return tuple(items) if kind == "tuple" else items
        if kind in ("array", "scalar") and type(value) is int and 0 <= value < len(arrays):
            return arrays[value] if kind == "array" else arrays[value][()]
    raise StateFileError(f"an entry of an unknown kind: {str(node)[:80]}")


def _array(mapped: memoryview, start: int, spec: Any) -> np.ndarray:
    """Array ``spec`` (``[dtype, shape, offset, nbytes]``) as a view of the mapped file, checked."""
    dtype_text, shape, offset, nbytes = spec
    if not isinstance(dtype_text, str):
        raise StateFileError(f"an array type that is not a name: {dtype_text!r}")
    dtype = np.dtype(dtype_text)
    if dtype.kind not in _KINDS or dtype.hasobject or dtype.fields is not None:
        raise StateFileError(f"an array of type {dtype_text!r}: a kernel state holds numbers only")
    if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)):
        raise StateFileError(f"an array shape that is not a list of sizes: {shape!r}")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if type(offset) is not int or type(nbytes) is not int or nbytes != count * dtype.itemsize \
            or offset < 0 or offset % ALIGN or start + offset + nbytes > len(mapped):
        raise StateFileError(f"an array of {count} x {dtype} at offset {offset!r} ({nbytes!r} bytes) that "
                             "the file does not hold")
    if count == 0:
        return np.zeros(tuple(shape), dtype=dtype)
    return np.frombuffer(mapped, dtype=dtype, count=count, offset=start + offset).reshape(tuple(shape))
