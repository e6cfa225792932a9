"""A PATH that hides some executables: a folder of symlinks to everything on
PATH except the named tools (standard library only, so ``.ci/run`` can call it
before any virtual environment exists).

``python3 tests/hide_tools.py TOOL [TOOL ...]`` prints such a folder; tests
use :func:`path_without`. A tool is hidden by exact name, and by prefix when
the name ends with ``*`` (``x86_64-w64-mingw32-*`` hides the whole cross
toolchain).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def _hidden(entry: str, tools: tuple[str, ...]) -> bool:
    return any(entry.startswith(t[:-1]) if t.endswith("*") else entry == t for t in tools)


def path_without(*tools: str, path: str | None = None) -> str:
    """A PATH value (one new folder of symlinks) with every executable of
    ``path`` (default ``$PATH``) but ``tools``; the first folder wins, as on PATH."""
    folder = Path(tempfile.mkdtemp(prefix="mbfmu-path-"))
    for source in (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if not os.path.isdir(source):
            continue
        for entry in sorted(os.listdir(source)):
            target, real = folder / entry, Path(source) / entry
            if _hidden(entry, tools) or os.path.lexists(target):
                continue
            if real.is_file() and os.access(real, os.X_OK):
                target.symlink_to(real)
    return str(folder)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: hide_tools.py TOOL [TOOL ...]")
    print(path_without(*sys.argv[1:]))
