"""Check before any work that an output file can be written.

A command that would run a study or render a video for minutes and then fail
to write its file loses everything; :func:`check_writable` refuses such a
path up front, in one line naming it and what is wrong.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from ...errors import InputError


def check_writable(path: str | os.PathLike, what: str = "results") -> Path:
    """Refuse ``path`` unless a file can be made there; returns it as a Path.

    The folder is probed by creating (and removing) a file of a fresh random
    name in it, so a read-only file system or a folder this user cannot write
    is found as the real write would find it.

    Parameters
    ----------
    path : path
        The output file.
    what : str
        What is written there, for the message ("results", "the table").

    Raises
    ------
    InputError
        The folder is missing or not a folder, ``path`` is a folder, or
        writing there is not permitted.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise InputError(f"cannot write {what} to {str(path)!r}: it is a folder")
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(f"cannot write {what} to {str(path)!r}: folder {str(folder)!r} {why}")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"cannot write {what} to {str(path)!r}: permission denied")
    probe = folder / f".mbfmu-probe-{secrets.token_hex(8)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
    except OSError as exc:
        raise InputError(f"cannot write {what} to {str(path)!r}: {exc.strerror or exc}") from None
    try:
        os.unlink(probe)
    except OSError:
        pass
    return path
