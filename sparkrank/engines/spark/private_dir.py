"""Directories of this user's alone: where executors keep block and kernel-state files.

Why: a task maps its block and reads its kernel state back from these files, so whoever can
write them decides what the fit computes.  In local mode they live under the system temp
directory (``/tmp/sparkrank-blocks-<user>``), a name any local user could create first.  So
each directory is made with mode 0700 and, before it is used, checked to be a real directory
(not a link) owned by this process's user that neither its group nor others may write;
anything else is refused with :class:`~sparkrank.io.spark.errors.UnsafeDirectoryError` naming it.

A directory of this user's that others may only read or enter (mode 0755: what sparkrank made
before it asked for 0700) is narrowed to 0700 rather than refused: no one else could have
written in it, and its blocks should not stay readable by others.
"""

from __future__ import annotations

import logging
import os
import stat

from ...io.spark.errors import UnsafeDirectoryError

log = logging.getLogger("sparkrank.spark")

#: Permission bits that let the group or other users write in (or replace entries of) a directory.
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
_ANY_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def private_dir(path: str) -> str:
    """``path`` as a directory that only this user may use, created with mode 0700 when
    missing (its parent must exist); raises :class:`UnsafeDirectoryError` when it exists and is
    not safe (:func:`check_private`)."""
    try:
        os.mkdir(path, 0o700)  # the umask may only take bits away
    except FileExistsError:
        pass
    check_private(path)
    return path


def check_private(path: str) -> None:
    """Raise :class:`UnsafeDirectoryError` unless ``path`` is a directory (not a symbolic link)
    owned by this process's user that its group and others cannot write; narrow a mode that
    lets them read or enter it to 0700."""
    st = os.lstat(path)
    uid = os.getuid()
    if stat.S_ISLNK(st.st_mode):
        _refuse(path, "it is a symbolic link", "remove the link")
    if not stat.S_ISDIR(st.st_mode):
        _refuse(path, "it is not a directory", "remove it")
    if st.st_uid != uid:
        _refuse(path, f"it belongs to uid {st.st_uid}, not to this user (uid {uid})",
                "remove it, or point SPARK_LOCAL_DIRS / spark.local.dir elsewhere")
    mode = stat.S_IMODE(st.st_mode)
    if mode & _WRITABLE_BY_OTHERS:
        _refuse(path, f"its mode {mode:04o} lets its group or other users write in it",
                f"remove it, or chmod 700 {path} if only you could have written there")
    if mode & _ANY_OTHERS:
        os.chmod(path, 0o700)
        log.info("narrowed the mode of %s from %04o to 0700", path, mode)


def _refuse(path: str, why: str, fix: str) -> None:
    raise UnsafeDirectoryError(
        f"unsafe block directory {path}: {why}; sparkrank keeps block and kernel-state files only in a "
        f"directory of this user's own that no one else may write ({fix})")
