"""URDF files of real robots from the ``example-robot-data`` package (PyPI;
it installs its robots under ``cmeel.prefix/share/example-robot-data/robots``)."""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

from tooling import skip_unless_required


def robot_file(relative: str) -> Path:
    """Path of ``robots/<relative>`` inside the installed example-robot-data."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        skip_unless_required("needs example-robot-data (pip install -e '.[test]')")
    for f in dist.files or ():
        if f.as_posix().endswith("example-robot-data/robots/" + relative):
            return Path(dist.locate_file(f)).resolve()
    raise FileNotFoundError(f"example-robot-data has no robots/{relative}")
