"""Room in the address space for numba's compiler under an address-space limit (``ulimit -v``).

Why: numba compiles a kernel, or loads it from its cache, with LLVM on the first call, which
for a fit comes after the rows are read.  LLVM allocates with C++ ``new``; when the limit stops
one, the process aborts (``LLVM ERROR: out of memory`` or ``std::bad_alloc``, exit 134), which no
Python code can catch.  Found with 2M x 136 float32 rows, ``--engine local``: between ~3.0 and
~3.2 GB of ``ulimit -v`` the rows fit, and the compiler did not.

What: :func:`keep_compiler_room` maps :data:`ROOM` bytes with no access (``PROT_NONE``: counted
by the limit, no memory used) and gives them back to the compiler each time numba takes its
compiler lock (compiling or loading from the cache), mapping them again when it lets go.  The
memory check before the rows are read (:func:`sparkrank.data.memory.available_memory`) sees the
room as mapped, so rows that would leave the compiler too little are refused then, in one line.
When the room cannot be mapped at the start, the command is refused in one line; when it cannot
be mapped again after a compile (the rows took it), the next compile first checks what the limit
leaves and raises ``MemoryError`` (one line, :mod:`sparkrank.failures`) rather than abort.
Only where sparkrank owns the process (the console script) and a limit is set.
"""

from __future__ import annotations

import mmap
import threading

from numba.core.event import Listener

#: Address space numba needs to compile every kernel of a fit, measured with
#: ``bench/jit_address_space.py`` on this project's machine (numba 0.68.1, llvmlite 0.50, x86-64,
#: 2,000 x 136 float32 rows, one thread): how far ``VmPeak`` rose above the process's size before
#: its first compile, then checked with ``RLIMIT_AS`` at that rise + 8 MiB (ends) and - 32 MiB
#: (aborts).  Compiling with an empty cache: tron 185, bmrm 382, ncg 226, toppush 275 MiB; loading
#: from the cache: tron 173 (which once aborted at +8 MiB: the rise is not exact), bmrm 322, ncg
#: 184 MiB.  The largest, bmrm's 382 MiB, and a quarter more for that scatter and for kernels of
#: other layouts and label kinds.
ROOM = 480 << 20

_LOCK = threading.Lock()
_STATE: dict = {"installed": False, "room": None, "depth": 0}


class CompilerRoomError(ValueError):
    """The address-space limit leaves too little for numba's compiler (a usage error: exit 2)."""


def address_space_left() -> int | None:
    """Bytes the address-space limit leaves above what this process maps, or ``None`` (no limit)."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    with open("/proc/self/status") as f:
        mapped = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    return soft - mapped


def room_text() -> str:
    """How a memory message says the room is counted as mapped (empty when none is kept)."""
    return f", {ROOM >> 20} MiB kept for numba's compiler included" if _STATE["room"] is not None else ""


def _map_room() -> mmap.mmap | None:
    try:
        return mmap.mmap(-1, ROOM, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0),
                         prot=getattr(mmap, "PROT_NONE", 0))  # 0 where the module lacks the name (< 3.13)
    except OSError:  # ENOMEM: the limit leaves less than the room
        return None


def _limit_text() -> str:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return f"ulimit -v {soft // 1024} (KiB)"


def keep_compiler_room() -> bool:
    """Keep :data:`ROOM` for numba's compiler while an address-space limit is set (see module);
    True if it did.  Idempotent.

    Raises
    ------
    CompilerRoomError
        The limit leaves less than the room above what the process maps now, naming the limit
        and the ``ulimit -v`` that would leave enough.
    """
    left = address_space_left()
    if left is None or _STATE["installed"]:
        return False
    room = _map_room()
    if room is None:
        raise CompilerRoomError(
            f"the address-space limit ({_limit_text()}) leaves {max(left, 0) >> 20} MiB above what this process "
            f"maps, less than the ~{ROOM >> 20} MiB numba's compiler needs for sparkrank's kernels; raise it to at "
            f"least ulimit -v {limit_for(ROOM - left)}")
    from numba.core import event

    _STATE.update(installed=True, room=room)
    event.register("numba:compiler_lock", _RoomListener())
    return True


def limit_for(missing: int, slack: int = 64 << 20) -> int:
    """The ``ulimit -v`` (KiB) that gives this process ``missing`` bytes more, plus ``slack``
    (by default 64 MiB for the libraries a command loads later: pyarrow's compute module,
    Spark's client), rounded down to 1 MiB."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return (soft + max(missing, 0) + slack) // (1 << 20) * 1024


def _give_room() -> None:
    """The compiler's turn: unmap the room, or, if it is gone, refuse a compile it cannot finish."""
    with _LOCK:
        _STATE["depth"] += 1
        if _STATE["depth"] > 1:
            return
        room = _STATE["room"]
        if room is not None:
            room.close()
            _STATE["room"] = None
            return
        left = address_space_left() or 0
        if left < ROOM:
            _STATE["depth"] -= 1
            raise MemoryError(f"numba's compiler needs ~{ROOM >> 20} MiB of address space to compile or load a "
                              f"kernel and the limit leaves {max(left, 0) >> 20} MiB; raise it to at least "
                              f"ulimit -v {limit_for(ROOM - left)}")


def _take_room_back() -> None:
    with _LOCK:
        _STATE["depth"] -= 1
        if _STATE["depth"] == 0 and _STATE["room"] is None:
            _STATE["room"] = _map_room()  # None when the rows took the space: the next compile checks


class _RoomListener(Listener):
    """numba's compiler lock taken (``on_start``, before it waits for it) and let go (``on_end``)."""

    def on_start(self, event) -> None:
        _give_room()

    def on_end(self, event) -> None:
        _take_room_back()
