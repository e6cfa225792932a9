"""The controllers are python-control systems the co-simulation master can
wrap as units (mbfmu.cosim.units.ControlUnit): same outputs and states."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.control.inverse_dynamics_control import computed_torque
from mbfmu.control.discrete_pid import pid
from mbfmu.control.sampled import step_system

from ctl_plants import DoublePendulum

from mbfmu.cosim import units  # noqa: E402


@pytest.mark.parametrize("make", [
    lambda: pid(2.0, 1.0, 0.5, dt=0.01, u_min=-1, u_max=1),
    lambda: computed_torque(DoublePendulum().model, 25.0, 10.0, dt=0.01),
])
def test_controller_runs_as_a_cosimulation_unit(make):
    sys = make()
    unit = units.ControlUnit("ctrl", sys)
    assert unit.inputs == list(sys.input_labels) and unit.outputs == list(sys.output_labels)
    assert unit.step == sys.dt
    rng = np.random.default_rng(0)
    u = rng.normal(size=sys.ninputs)
    unit.setup(0.0, 1.0, sys.dt)
    x = np.zeros(sys.nstates)
    for k in range(3):
        unit.u = np.array(u)
        unit.pull()
        y_ref, x = step_system(sys, k * sys.dt, x, u)
        assert np.allclose(unit.y, y_ref, atol=1e-12)
        unit.do_step(k * sys.dt, sys.dt)
        assert np.allclose(unit.x, x, atol=1e-12)
