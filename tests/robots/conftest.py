"""Fixtures of the robot tests: URDF files of real robots from the
``example-robot-data`` package (PyPI; installs its robots under
``cmeel.prefix/share/example-robot-data/robots``)."""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest


def robot_file(relative: str) -> Path:
    """Path of ``robots/<relative>`` inside the installed example-robot-data."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (pip install -e '.[test]')")
    for f in dist.files or ():
        if f.as_posix().endswith("example-robot-data/robots/" + relative):
            return Path(dist.locate_file(f)).resolve()
    raise FileNotFoundError(f"example-robot-data has no robots/{relative}")


# name -> (URDF inside example-robot-data, floating base, a link to watch)
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False, "tool0"),
    "panda": ("panda_description/urdf/panda.urdf", False, "panda_hand"),
    "solo": ("solo_description/robots/solo.urdf", True, "FL_FOOT"),
}


@pytest.fixture(params=sorted(ROBOTS))
def robot(request):
    """``(name, urdf path, floating_base, link)`` of each test robot."""
    rel, floating, link = ROBOTS[request.param]
    return request.param, robot_file(rel), floating, link
