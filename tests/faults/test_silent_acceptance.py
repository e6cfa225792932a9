"""Inputs that used to be accepted silently are refused (or made reproducible)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.cosim import FunctionUnit, System, simulate
from mbfmu.errors import InputError


@pytest.mark.parametrize("rtol, atol", [(0.0, 1e-6), (1e-4, -1e-6), (math.nan, 1e-6)])
def test_tolerance_must_be_positive(rtol, atol):
    s = System([FunctionUnit("c", lambda t, u: [t])])
    with pytest.raises(InputError, match="must be a positive finite number"):
        simulate(s, 1.0, 0.1, adaptive=True, rtol=rtol, atol=atol)


def test_function_unit_without_feedthrough_reruns_identically():
    """A loop through a FunctionUnit(feedthrough=False): each run starts from the start
    values (the unit kept the last run's inputs before). The first steps follow by hand:
    y_f = 0.5 u_f + 1 with u_f = y_g(previous) and y_g = u_g + t."""
    f = FunctionUnit("f", lambda t, u: [0.5 * u[0] + 1.0], inputs=["u"], outputs=["y"], feedthrough=False)
    g = FunctionUnit("g", lambda t, u: [u[0] + t], inputs=["u"], outputs=["y"])
    s = System([f, g], [("f.y", "g.u"), ("g.y", "f.u")])
    runs = [simulate(s, 1.0, 0.1).data for _ in range(30)]
    assert all(np.array_equal(r, runs[0]) for r in runs)
    assert runs[0]["f.y"][0] == 1.0 and runs[0]["g.y"][0] == 1.0  # u_f starts at 0


@pytest.fixture(scope="module")
def slave():
    from mbfmu.fmu.plantref import parse
    from mbfmu.fmu.slave import PlantSlave

    class Slave(PlantSlave):
        plant_ref = parse("rigid_arm").to_dict()
    return Slave(instance_name="arm", resources=None, visible=False)


@pytest.mark.parametrize("field, why", [("t", "its time is not finite"), ("x", "its state is not finite"),
                                        ("u", "its inputs is not finite")])
def test_state_restore_refuses_nan(slave, field, why):
    good = slave._get_fmu_state()
    bad = dict(good, **{field: math.nan if field == "t" else [math.nan] * len(good[field])})
    slave._set_fmu_state(bad)
    assert slave.errors[-1] == f"cannot restore FMU state: {why}"
    assert slave._get_fmu_state() == good


def test_failed_restore_keeps_the_old_parameters(slave):
    good = slave._get_fmu_state()
    p = list(good["p"])
    p[0] *= 2.0
    slave._set_fmu_state(dict(good, p=p, x=good["x"][:-1]))  # new parameters but a wrong state
    assert "wrong number of states" in slave.errors[-1]
    assert slave._get_fmu_state() == good


@pytest.mark.parametrize("where", ["input", "state"])
def test_blown_up_state_is_reported_as_such(where):
    """A huge input or state used to be reported as a singular inertia (a massless joint)."""
    import mbfmu
    from mbfmu.errors import SimulationError
    plant = mbfmu.load_plant("rigid_arm")
    x, u = plant.initial_state(), np.zeros(len(plant.inputs))
    if where == "input":
        u[:] = 1e300
    else:
        x[-1] = 1e200
    # named as the plant names them, from 1: the last state is v[3], the first force tau[1] (joint 1's)
    largest = (rf"generalized force tau\[1\] = 1e\+300 on {plant.model.v_names[0]}" if where == "input"
               else r"state v\[3\] = 1e\+200")
    with pytest.raises(SimulationError, match=r"the state has blown up in the step from t = 0.5 s to 0.51 s "
                                              rf"\(largest: {largest}\)"):
        plant.advance(0.5, x, u, 0.01)


def test_a_flexible_arm_driven_to_overflow_says_its_state_blew_up():
    """A torque far beyond the arm's design (1e12 N m) makes the step's own states
    overflow; the error says so instead of blaming a singular modal mass."""
    import mbfmu
    from mbfmu.errors import SimulationError

    arm = mbfmu.load_plant("flexible_arm")
    x0 = arm.initial_state()
    arm.advance(0.0, x0, np.array([1.0, 0.5]), 0.01)  # a normal step passes
    with pytest.raises(SimulationError, match="blown up within the step") as err:
        arm.advance(0.0, x0, np.array([1e12, 1e12]), 0.01)
    assert "t = 0 s" in str(err.value) and "1e+12" in str(err.value)
