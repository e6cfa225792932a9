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
over another entry's is not), the result loads, and every FMU the run
loaded (recorded with the SHA-256 of its bytes, for function targets whose
key cannot cover them) still has those bytes. Anything else is a miss: the
run is done again, the study never stops for it.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError
from ..untrusted.archive import file_digest
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
        """The cached outcome of run ``key`` with its result, or ``None`` (a miss:
        absent, damaged, swapped, or an FMU it loaded has changed since)."""
        from ..cosim.recording import Result, load_result
        from ..errors import MbfmuError
        js = self.runs / f"{key}.json"
        if not js.is_file() or not self.result_path(key).is_file():
            return None
        try:
            info = json.loads(js.read_text())
            if not isinstance(info, dict) or info.get("key") != key or info.get("status") != "ok":
                return None
            for path, digest in (info.get("inputs") or {}).items():
                if not os.path.isfile(path) or file_digest(path) != digest:
                    return None
            result = load_result(self.result_path(key))
            if not isinstance(result, Result) or result.meta.get("cache_key") != key:
                return None
            return Outcome("ok", str(info.get("error", "")), float(info["wall_time"]), result)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, MbfmuError):
            return None

    def store(self, key: str, values: Mapping[str, Any], out: Outcome) -> Path | None:
        """Store a successful run; returns the result file (``None`` when not stored)."""
        from ..cosim.recording import Result
        if out.status != "ok" or out.result is None:
            return None
        path = self.result_path(key)
        part = path.with_name(f".{key}.{os.getpid()}.part.npz")
        r = out.result
        Result(r.data, r.summary, {**r.meta, "cache_key": key}).save(part)
        os.replace(part, path)
        info = {"key": key, "status": out.status, "error": out.error, "wall_time": out.wall_time,
                "values": {k: _exact(v) for k, v in values.items()}, "inputs": dict(r.meta.get("inputs") or {})}
        js = self.runs / f"{key}.json"
        tmp = js.with_name(f".{key}.{os.getpid()}.part.json")
        tmp.write_text(json.dumps(info))
        os.replace(tmp, js)
        return path
