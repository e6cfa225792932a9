"""The run cache of a study: finished runs on disk, keyed by content.

A run's key is the SHA-256 of the target's content hash, the run's parameter
values (floats exactly, as hex) and the options that change its result
(stop time, step, recording, algorithm). A finished run is stored as two
files in ``DIR/runs/``: ``KEY.npz`` (the full result, see
:meth:`mbfmu.cosim.Result.save`) and then ``KEY.json`` (status, wall time,
values); the JSON is written last, atomically, so a run counts as cached only
once both are complete. Only successful runs are cached: a failed or
timed-out run is tried again on the next study.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError
from .executors import Outcome
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


class RunCache:
    """Finished runs under ``folder`` (created when missing)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).resolve()
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError(f"cache {str(self.folder)!r} is a file, not a folder")
        self.runs = self.folder / "runs"
        self.runs.mkdir(parents=True, exist_ok=True)

    def result_path(self, key: str) -> Path:
        return self.runs / f"{key}.npz"

    def load(self, key: str) -> Outcome | None:
        """The cached outcome of run ``key`` (result loaded lazily), or ``None``."""
        js = self.runs / f"{key}.json"
        if not js.is_file() or not self.result_path(key).is_file():
            return None
        try:
            info = json.loads(js.read_text())
        except (OSError, ValueError):
            return None
        return Outcome(info["status"], info.get("error", ""), float(info["wall_time"]), None)

    def store(self, key: str, values: Mapping[str, Any], out: Outcome) -> Path | None:
        """Store a successful run; returns the result file (``None`` when not stored)."""
        if out.status != "ok" or out.result is None:
            return None
        path = self.result_path(key)
        part = path.with_name(f".{key}.{os.getpid()}.part.npz")
        out.result.save(part)
        os.replace(part, path)
        info = {"status": out.status, "error": out.error, "wall_time": out.wall_time,
                "values": {k: _exact(v) for k, v in values.items()}}
        js = self.runs / f"{key}.json"
        tmp = js.with_name(f".{key}.{os.getpid()}.part.json")
        tmp.write_text(json.dumps(info))
        os.replace(tmp, js)
        return path
