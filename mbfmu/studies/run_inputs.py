"""The files a run reads, and their content hash, bounded.

A function target may read files while it builds its system or while the
system runs (an FMU, a table of gains, a CSV of measurements). Its cache key
cannot see them, so a run records each file it opens for reading
(:func:`record_opened`, through a Python audit hook on the ``open`` event)
with the SHA-256 of its bytes, and the cache checks them again before taking
the run (:mod:`.cache`). Files of the Python installation, of installed
packages, of the system (``/proc``, ``/sys``, ``/dev``, ``/etc``) and of
mbfmu's private temporary folders are not inputs.

:func:`bounded_digest` hashes a regular file of at most
``limits().max_expand_bytes`` bytes and reads no more than its size: a
device, a FIFO, a file in ``/proc`` (whose size says 0) or a huge sparse
file named by a cache entry someone else wrote costs nothing.
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
import sysconfig
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..untrusted.limits import limits
from ..untrusted.records import recording
from ..untrusted import scratch

_PSEUDO = ("/proc/", "/sys/", "/dev/", "/run/")  # kernel views, devices: never a run's input
_SYSTEM = (*_PSEUDO, "/etc/", "/usr/", "/lib/", "/lib64/")  # also not recorded: time zones, locales, libraries
_local = threading.local()
_hook_lock = threading.Lock()
_hooked = False


def bounded_digest(path: str | os.PathLike, max_bytes: int | None = None) -> tuple[str, int] | None:
    """``(sha256 hex, bytes read)`` of the regular file ``path``, or ``None``.

    Parameters
    ----------
    path : path
        The file.
    max_bytes : int, optional
        Largest size hashed, bytes (default ``limits().max_expand_bytes``).

    Returns
    -------
    tuple or None
        ``None`` when ``path`` is missing, not a regular file, larger than
        ``max_bytes``, or holds more bytes than its size says (``/proc``).
    """
    bound = limits().max_expand_bytes if max_bytes is None else int(max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > bound:
            return None
        h, left = hashlib.sha256(), st.st_size
        while left > 0:
            block = os.read(fd, min(left, 1 << 20))
            if not block:
                return None  # shorter than its size: changing under us
            h.update(block)
            left -= len(block)
        if os.read(fd, 1):
            return None  # longer than its size says
        return h.hexdigest(), st.st_size
    except OSError:
        return None
    finally:
        os.close(fd)


def _ignored_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).resolve().parents[1])}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(p)
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


def could_be_input(path: str) -> bool:
    """``path`` (absolute, links resolved) may be named as a run's input: not a
    kernel view or device (``/proc``, ``/sys``, ``/dev``, ``/run``), not in an
    mbfmu temporary folder (a marked :func:`mbfmu.untrusted.scratch.private_dir`:
    an extracted FMU, whose archive is the input).

    Parameters
    ----------
    path : str
        Absolute path.

    Returns
    -------
    bool
    """
    if path.startswith(_PSEUDO):
        return False
    tmp = os.path.join(os.path.realpath(tempfile.gettempdir()), "")
    if not (path.startswith(tmp) and path[len(tmp):].startswith(scratch.PREFIX)):
        return True
    # only mbfmu's own marked folders: a user's folder that happens to be named mbfmu-* holds inputs
    top = path[len(tmp):].split(os.sep, 1)[0]
    return not os.path.isfile(os.path.join(tmp, top, scratch.OWNER))


def _recorded(path: str) -> bool:
    """A file opened during a run that is recorded: a user's file, not Python's,
    a package's, the system's or an mbfmu temp folder's."""
    if path.startswith(_SYSTEM) or path.endswith(".pyc") or "site-packages" in path or "dist-packages" in path:
        return False
    if not hasattr(_local, "roots"):
        _local.roots = _ignored_roots()
    return not path.startswith(_local.roots) and could_be_input(path) and os.path.isfile(path)


def _reads(mode: object, flags: object) -> bool:
    if isinstance(mode, str):
        return "r" in mode or "+" in mode
    if isinstance(flags, int):
        return flags & (os.O_WRONLY | os.O_RDWR) != os.O_WRONLY
    return False


def _audit(event: str, args: tuple) -> None:
    if event != "open":
        return
    stack = getattr(_local, "stack", None)
    if not stack or getattr(_local, "busy", False) or not args or isinstance(args[0], int) or args[0] is None:
        return
    _local.busy = True  # the hashing below opens files too
    try:
        mode, flags = (args[1] if len(args) > 1 else "r"), (args[2] if len(args) > 2 else None)
        if not _reads(mode, flags):
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        if all(path in seen for seen in stack) or not _recorded(path):
            return
        found = bounded_digest(path)
        digest = found[0] if found else "too large or not a regular file"
        for seen in stack:
            seen.setdefault(path, digest)
    except Exception:  # an audit hook must never break the user's open()
        pass
    finally:
        _local.busy = False


@contextmanager
def record_opened() -> Iterator[dict[str, str]]:
    """Within: every user file this thread opens for reading is recorded as
    ``{real path: sha256 hex}`` in the dict yielded."""
    global _hooked
    with _hook_lock:
        if not _hooked:
            sys.addaudithook(_audit)  # permanent; it does nothing outside these blocks
            _hooked = True
    with recording(_local) as seen:
        yield seen
