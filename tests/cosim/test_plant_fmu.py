"""A plant FMU built by `mbfmu build` in a closed loop with a python-control
controller: against a hand-written fmpy loop with the controller written out."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import control
import numpy as np
import pytest

from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate

from .helpers import RawFmu

PLANT = Path(__file__).resolve().parents[1] / "fmu" / "plants.py"


@pytest.fixture(scope="session")
def plant_fmu(fmu_dir):
    """Built in a separate process: pythonfmu FMUs loaded here put their own copy of
    pythonfmu on sys.path, which `mbfmu build` must not pick up."""
    out = fmu_dir / "plant"
    subprocess.run([sys.executable, "-m", "mbfmu", "build", f"{PLANT}:DampedPendulum", "-o", str(out)],
                   check=True, capture_output=True, cwd=Path(__file__).resolve().parents[2])
    return next(out.glob("*.fmu"))


def test_mbfmu_plant_fmu_with_python_control_pd_matches_hand_loop(plant_fmu):
    kp, kd, H, T = 8.0, 2.0, 0.01, 2.0
    pd = control.ss([], [], [], [[-kp, -kd]], inputs=["theta", "omega"], outputs=["tau"])
    plant = FmuUnit(plant_fmu, "arm")
    assert plant.feedthrough == {"theta": (), "omega": (), "power": ("tau",)}  # declared by mbfmu build
    s = System([plant, ControlUnit("pd", pd, units={"theta": "rad", "omega": "rad/s", "tau": "N.m"})],
               [("arm.theta", "pd.theta"), ("arm.omega", "pd.omega"), ("pd.tau", "arm.tau")])
    r = simulate(s, T, H)
    p = RawFmu(plant_fmu, "arm")
    rows = []
    for k in range(int(round(T / H)) + 1):
        if k:
            p.step((k - 1) * H, H)
        th, om = p.get("theta", "omega")
        tau = -kp * th + -kd * om
        p.set(["tau"], [tau])
        rows.append((th, om, tau, p.get("power")[0]))
    p.close()
    rows = np.array(rows)
    np.testing.assert_allclose(np.column_stack([r["arm.theta"], r["arm.omega"], r["pd.tau"], r["arm.power"]]),
                               rows, rtol=1e-13, atol=1e-15)
    assert abs(r["arm.theta"][-1]) < 0.5 * abs(r["arm.theta"][0])  # the PD pulls the pendulum down
    assert r.meta["plants"]["arm"]["class_name"] == "DampedPendulum"
