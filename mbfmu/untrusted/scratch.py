"""Private temporary folders that do not outlive their owner.

:func:`private_dir` makes a folder with :func:`tempfile.mkdtemp` (a random
name, mode 0700: another user cannot plant files in it or guess it) and marks
it with its owner process (``.mbfmu-owner``: pid and process start time). The
folder is removed when :func:`release` is called, else when the owner exits
normally. A process that is killed, crashes, or is ended by ``os._exit`` (a
sweep worker past its timeout) cannot clean up; :func:`clean_stale` removes
the marked folders whose owner is no longer alive. It runs once in every
process before its first folder is made, and after every pool of sweep
workers ends (POSIX; on Windows folders of dead processes are left to the
system's temp cleaning).

Folders made outside Python carry the same mark: the pythonfmu FMU's loader
shim keeps a copy of mbfmu's source distribution in ``mbfmu-install-*`` for
the install command it offers when mbfmu is missing (one folder per host
process, whatever the number of failed instantiations: the copy's path is
kept in the host's environment, ``MBFMU_INSTALL_COPY``); its mark adds
``keep_until`` (seconds since the epoch, a day later), before which the
folder is kept even when its owner is gone, so that the command still works.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

PREFIX = "mbfmu-"
OWNER = ".mbfmu-owner"

_mine: dict[str, int] = {}   # folder -> pid that made it (forked children inherit the dict)
_lock = threading.Lock()
_cleaned_in: int | None = None


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (Linux: clock ticks since boot), to tell a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    if len(fields) > 19 and fields[0] == "Z":
        return "zombie"
    return fields[19] if len(fields) > 19 else None


def _alive(owner: dict) -> bool:
    try:
        pid = int(owner["pid"])
    except (KeyError, TypeError, ValueError):
        return True  # not ours to judge
    if pid == os.getpid() or os.name == "nt":  # on Windows signal 0 is CTRL_C_EVENT: never probe there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    except OSError:
        return True
    started = _start_time(pid)
    if started == "zombie":
        return False
    return started is None or owner.get("start") in (None, started)


def _kept(owner: dict) -> bool:
    """The mark asks to keep the folder a while longer (``keep_until``, seconds since the epoch)."""
    try:
        return time.time() < float(owner.get("keep_until", 0))
    except (TypeError, ValueError):
        return False


def clean_stale(root: str | os.PathLike | None = None) -> int:
    """Remove the marked folders under ``root`` (default: the temp folder) whose owner is dead.

    Only folders named ``mbfmu-*``, owned by this user and holding an owner
    mark are considered. Returns how many were removed.
    """
    base = Path(root or tempfile.gettempdir())
    removed = 0
    try:
        entries = list(os.scandir(base))
    except OSError:
        return 0
    uid = os.getuid() if hasattr(os, "getuid") else None
    for e in entries:
        if not e.name.startswith(PREFIX):
            continue
        try:
            if not e.is_dir(follow_symlinks=False) or (uid is not None and e.stat(follow_symlinks=False).st_uid != uid):
                continue
            owner = json.loads((Path(e.path) / OWNER).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(owner, dict) and not _alive(owner) and not _kept(owner):
            shutil.rmtree(e.path, ignore_errors=True)
            removed += not os.path.exists(e.path)
    return removed


def private_dir(kind: str, root: str | os.PathLike | None = None) -> Path:
    """A new private folder ``mbfmu-<kind>-XXXXXXXX`` owned by this process.

    Parameters
    ----------
    kind : str
        What it holds (``fmu``, ``ssp``, ``view``, ``study``), in its name.
    root : path, optional
        Where to make it (default: the temp folder).
    """
    global _cleaned_in
    if _cleaned_in != os.getpid():
        _cleaned_in = os.getpid()
        clean_stale(root)
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=root))
    pid = os.getpid()
    (path / OWNER).write_text(json.dumps({"pid": pid, "start": _start_time(pid)}))
    with _lock:
        _mine[str(path)] = pid
    return path


def release(path: str | os.PathLike) -> None:
    """Remove a folder made by :func:`private_dir` (nothing if it is gone)."""
    with _lock:
        _mine.pop(str(path), None)
    shutil.rmtree(path, ignore_errors=True)


def release_all() -> None:
    """Remove every folder this process made (forked children leave their parent's alone)."""
    pid = os.getpid()
    with _lock:
        mine = [p for p, owner in _mine.items() if owner == pid]
    for p in mine:
        release(p)


atexit.register(release_all)
