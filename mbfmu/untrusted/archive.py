"""The one way mbfmu opens a zip archive from someone else (FMU, SSP, ``.npz``).

Before anything is extracted or read, :func:`check` looks at the central
directory: every member's name must stay inside the archive (no absolute
path, drive, ``..`` or symbolic link), the members' declared sizes must sum to
at most ``max_expand_bytes`` and each member larger than
``ratio_floor_bytes`` must expand at most ``max_ratio`` times
(:mod:`.limits`). :mod:`zipfile` itself stops a member at its declared size,
so a member cannot write more than it declares. :func:`extract` then writes
into a private folder (:mod:`.scratch`) and removes it on every failure (a
full disk, a damaged member, Ctrl-C).

:func:`watch_inputs` records the archives opened meanwhile with the SHA-256 of
their bytes: a sweep's cache stores them with a run so that resuming notices
an FMU that changed.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import threading
import zipfile
from pathlib import Path, PurePosixPath
from typing import Iterator

from ..errors import InputError
from .limits import limits, size_text
from .records import recording
from .scratch import private_dir, release

_watch = threading.local()


@contextlib.contextmanager
def watch_inputs() -> Iterator[dict[str, str]]:
    """Within: every file passed to :func:`note_input` (every archive opened
    here) is recorded as ``{resolved path: sha256 hex}`` in the dict yielded."""
    with recording(_watch) as seen:
        yield seen


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of the bytes of ``path`` (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def note_input(path: str | os.PathLike) -> None:
    """Record ``path`` (and the hash of its bytes) in the open :func:`watch_inputs` blocks."""
    stack = getattr(_watch, "stack", None)
    if not stack:
        return
    key = str(Path(path).resolve())
    try:
        digest = file_digest(key)
    except OSError:
        digest = "unreadable"
    for seen in stack:
        seen.setdefault(key, digest)


def _bad_name(name: str) -> str | None:
    if "\0" in name:
        return "holds a NUL character"
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        return "climbs out of the archive ('..')"
    return None


def check(z: zipfile.ZipFile, what: str, members: list[zipfile.ZipInfo] | None = None) -> list[zipfile.ZipInfo]:
    """Refuse archive ``z`` (named ``what`` in messages) unless its members
    (``members``: a subset of them) are contained and bounded; returns them.

    Raises
    ------
    InputError
        One line naming the archive, the member and the limit it passes.
    """
    lim = limits()
    infos = z.infolist() if members is None else members
    if len(z.infolist()) > lim.max_members:
        raise InputError(f"{what}: {len(z.infolist())} members, above the limit of {lim.max_members} "
                         "(MBFMU_MAX_MEMBERS)")
    total = 0
    for info in infos:
        why = _bad_name(info.filename)
        if why:
            raise InputError(f"{what}: member {info.filename!r} {why}; refused")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise InputError(f"{what}: member {info.filename!r} is a symbolic link; refused")
        size, packed = info.file_size, max(info.compress_size, 1)
        if size > lim.ratio_floor_bytes and size / packed > lim.max_ratio:
            raise InputError(f"{what}: member {info.filename!r} declares {size_text(size)} from "
                             f"{size_text(packed)} compressed (ratio {size / packed:.0f}:1, limit "
                             f"{lim.max_ratio:g}:1, MBFMU_MAX_RATIO); refused as a zip bomb")
        total += size
        if total > lim.max_expand_bytes:
            raise InputError(f"{what}: its members declare more than {size_text(total)}, above the limit of "
                             f"{size_text(lim.max_expand_bytes)} (MBFMU_MAX_EXPAND_BYTES); refused")
    return infos


@contextlib.contextmanager
def open_zip(path: str | os.PathLike, what: str, noun: str = "zip archive") -> Iterator[zipfile.ZipFile]:
    """``zipfile.ZipFile(path)`` checked with :func:`check`; a damaged or
    non-zip file is an :class:`InputError` naming ``what`` (``"... is not a readable <noun>"``)."""
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise InputError(f"{what} is not a readable {noun}: {exc}") from None
    with z:
        check(z, what)
        note_input(path)
        yield z


def check_file(path: str | os.PathLike, what: str, noun: str = "zip archive") -> None:
    """Refuse the archive at ``path`` unless :func:`check` passes (before another library reads it)."""
    with open_zip(path, what, noun):
        pass


def read_member(path: str | os.PathLike, name: str, what: str) -> bytes | None:
    """The bytes of member ``name`` of the archive at ``path`` (``None`` when absent), bounded."""
    with open_zip(path, what) as z:
        try:
            info = z.getinfo(name)
        except KeyError:
            return None
        try:
            return z.read(info)
        except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
            raise InputError(f"{what}: member {name!r} is damaged: {exc}") from None


def extract(path: str | os.PathLike, what: str, kind: str = "fmu", prefix: str = "", noun: str = "zip archive") -> Path:
    """Extract the archive at ``path`` (only the members under ``prefix``) into a new private folder.

    Parameters
    ----------
    path : path
        The archive.
    what : str
        How messages name it (``"FMU 'x.fmu'"``).
    kind : str
        Part of the folder's name (``mbfmu-<kind>-XXXXXXXX``).
    prefix : str
        Extract only the members whose name starts with it (``"resources/"``).
    noun : str
        What the archive should be, for the message when it is not a zip.

    Returns
    -------
    Path
        The folder; :func:`mbfmu.untrusted.scratch.release` removes it, else it
        goes when this process exits.

    Raises
    ------
    InputError
        The archive is unreadable, escapes, passes a limit, or does not fit on
        the disk; nothing is left behind.
    """
    dest = private_dir(kind)
    try:
        with open_zip(path, what, noun) as z:
            infos = check(z, what, [i for i in z.infolist() if i.filename.startswith(prefix)])
            need = sum(i.file_size for i in infos)
            free = shutil.disk_usage(dest).free
            if need > free:
                raise InputError(f"{what} expands to {size_text(need)}; the disk holding {str(dest.parent)!r} has "
                                 f"{size_text(free)} free")
            root = dest.resolve()
            for info in infos:
                target = (root / info.filename).resolve()
                if target != root and root not in target.parents:
                    raise InputError(f"{what}: member {info.filename!r} lands outside the folder; refused")
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
                mode = (info.external_attr >> 16) & 0o777
                if mode & 0o100:
                    os.chmod(target, 0o755)
    except InputError:
        release(dest)
        raise
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
        release(dest)
        raise InputError(f"cannot extract {what}: {getattr(exc, 'strerror', None) or exc}") from None
    except BaseException:
        release(dest)
        raise
    return dest
