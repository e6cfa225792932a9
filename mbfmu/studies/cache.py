"""The run cache of a study: finished runs on disk, keyed by content.

A run's key is the SHA-256 of the target's content hash, the run's parameter
values (floats exactly, as hex) and the options that change its result
(stop time, step, recording, algorithm). A finished run is stored as two
files in ``DIR/runs/``: ``KEY.npz`` (the full result, see
:meth:`mbfmu.cosim.Result.save`) and then ``KEY.json`` (status, wall time,
values); the JSON is written last, atomically, so a run counts as cached only
once both are complete. Only successful runs are cached: a failed or
timed-out run is tried again on the next study.

A cache is data, which someone else may have handed over or damaged: an
entry is taken only when both files name its key inside them (a file copied
over another entry's is not), the result loads, and every file the run
read (the FMUs it loaded and the data files it opened, recorded with the
SHA-256 of their bytes for function targets, whose key cannot cover them)
still has those bytes. Anything else is a miss: the
run is done again, the study never stops for it.

Nothing the cache writes leaves its folder: a ``runs`` folder that is a
symbolic link is refused, entries are written under fresh random names
opened with ``O_CREAT|O_EXCL|O_NOFOLLOW`` and renamed into place (a link
planted at the final name is replaced, never followed), and an entry that is
a link is a miss. The files an entry names as inputs are checked only for a
function target (the key of a file or plant target covers its content), each
only when a run could have recorded it (not under ``/proc``, ``/sys``,
``/dev``, ``/run`` or in mbfmu's temporary folders) and is a regular file of bounded size
(:func:`.run_inputs.bounded_digest`), each hashed once per study, and at most
``limits().max_expand_bytes`` bytes in all.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError
from ..untrusted.limits import limits
from .executors import Outcome
from .run_inputs import bounded_digest, could_be_input
from .targets import FORMAT, Options, Target


def _exact(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float) or hasattr(v, "__float__") and not isinstance(v, str):
        return float(v).hex()
    return str(v)


def run_key(target: Target, values: Mapping[str, Any], opts: Options) -> str:
    """The content key of one run (64 hex digits)."""
    text = json.dumps({"format": FORMAT, "target": target.digest,
                       "values": {k: _exact(v) for k, v in sorted(values.items())}, "options": opts.key()},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_MAX_INPUTS = 256  # files one entry may name as inputs
_MAX_ENTRY_BYTES = 1 << 20  # an entry's JSON


def _regular(path: Path) -> bool:
    """``path`` is a regular file itself (not a link, a device or a folder)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class RunCache:
    """Finished runs under ``folder`` (created when missing).

    Raises
    ------
    InputError
        ``folder`` is a file, or its ``runs`` folder is a symbolic link or not a folder.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).resolve()
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError(f"cache {str(self.folder)!r} is a file, not a folder")
        self.runs = self.folder / "runs"
        self._check_runs()
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot make the cache folder {str(self.runs)!r}: {exc.strerror or exc}") from None
        self._check_runs()
        self._digests: dict[tuple, str | None] = {}
        self._hashed = 0  # bytes hashed to check entries' inputs

    def _check_runs(self) -> None:
        if self.runs.is_symlink():
            raise InputError(f"cache {str(self.folder)!r}: 'runs' is a symbolic link; refused, as the cache's "
                             "entries would be written elsewhere")
        if os.path.lexists(self.runs) and not self.runs.is_dir():
            raise InputError(f"cache {str(self.folder)!r}: 'runs' is not a folder")

    def result_path(self, key: str) -> Path:
        """The result file of run ``key``."""
        return self.runs / f"{key}.npz"

    def _digest(self, path: str) -> str | None:
        """SHA-256 of the input file ``path``, hashed once per study, within the byte budget (else None)."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        ident = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if ident not in self._digests:
            budget = limits().max_expand_bytes - self._hashed
            if st.st_size > budget:
                return None  # not stored: a later entry may still fit
            found = bounded_digest(path, budget)
            self._hashed += found[1] if found else 0
            self._digests[ident] = found[0] if found else None
        return self._digests[ident]

    def _inputs_unchanged(self, inputs: Any, function: bool) -> bool:
        if not inputs:
            return True
        if not function or not isinstance(inputs, dict) or len(inputs) > _MAX_INPUTS:
            return False  # a file or plant target's key covers its content: it names no inputs
        for path, digest in inputs.items():
            if not (isinstance(path, str) and os.path.isabs(path) and isinstance(digest, str)):
                return False
            if not could_be_input(path):
                return False  # a run never records it: named by someone else
            if self._digest(path) != digest:
                return False
        return True

    def load(self, key: str, function: bool = True) -> Outcome | None:
        """The cached outcome of run ``key`` with its result, or ``None`` (a miss:
        absent, damaged, swapped, a link, or a file the run read has changed since).

        Parameters
        ----------
        key : str
            The run's key (:func:`run_key`).
        function : bool
            The target is a function, whose runs record the files they read
            (other entries naming inputs are misses, their files never opened).
        """
        from ..cosim.recording.result import Result, load_result
        from ..errors import MbfmuError
        js = self.runs / f"{key}.json"
        if not _regular(js) or not _regular(self.result_path(key)):
            return None
        try:
            fd = os.open(js, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as f:
                text = f.read(_MAX_ENTRY_BYTES + 1)
            if len(text) > _MAX_ENTRY_BYTES:
                return None
            info = json.loads(text)
            if not isinstance(info, dict) or info.get("key") != key or info.get("status") != "ok":
                return None
            if not self._inputs_unchanged(info.get("inputs"), function):
                return None
            result = load_result(self.result_path(key))
            if not isinstance(result, Result) or result.meta.get("cache_key") != key:
                return None
            return Outcome("ok", str(info.get("error", "")), float(info["wall_time"]), result)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, MbfmuError):
            return None

    def _write(self, final: Path, data: bytes) -> None:
        """``data`` into ``final`` through a fresh random name in the same folder (never following a link)."""
        self._check_runs()
        tmp = final.with_name(f".{final.stem}.{secrets.token_hex(16)}.part")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def store(self, key: str, values: Mapping[str, Any], out: Outcome) -> Path | None:
        """Store a successful run; returns the result file (``None`` when not stored)."""
        from ..cosim.recording.result import Result
        if out.status != "ok" or out.result is None:
            return None
        path = self.result_path(key)
        r = out.result
        self._check_runs()
        # written under a random name beside it, then renamed over it (a link there is replaced, not followed)
        Result(r.data, r.summary, {**r.meta, "cache_key": key}).save(path)
        info = {"key": key, "status": out.status, "error": out.error, "wall_time": out.wall_time,
                "values": {k: _exact(v) for k, v in values.items()}, "inputs": dict(r.meta.get("inputs") or {})}
        self._write(self.runs / f"{key}.json", json.dumps(info).encode())
        return path
