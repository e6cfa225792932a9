"""Fixtures of the viewer tests: toy plants and their recordings."""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
sys.path.insert(0, str(Path(__file__).parent))

from viewer_toys import DoublePendulum, FlexibleArm, pendulum_run, record  # noqa: E402

from mbfmu.viewer import Recording  # noqa: E402


@pytest.fixture
def pendulum():
    return DoublePendulum()


@pytest.fixture
def pendulum_rec(pendulum):
    t, X = pendulum_run()
    return Recording(record(pendulum, t, X), pendulum, trails=[(2, (0.0, 0.0, -0.8))])


@pytest.fixture
def arm_rec():
    import numpy as np
    arm = FlexibleArm()
    t = np.linspace(0.0, 2.0, 101)
    X = np.stack([t, 0.3 * np.sin(3 * t), np.ones_like(t), 0.9 * np.cos(3 * t)], 1)
    return Recording(record(arm, t, X), arm)
