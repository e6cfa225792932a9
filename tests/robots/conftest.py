"""Fixtures of the robot tests: real robots from ``example-robot-data``."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from robot_files import robot_file  # noqa: E402

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
