"""schedule: LQR gains of the rigid arm on a grid of elbow angles, against
the same design made by hand at each pose; the scheduled controller beats the
fixed one on a large elbow slew in a co-simulation through the plant FMU, and
runs the same as an exported controller FMU."""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from mbfmu.control import linearize, schedule, trim_inputs
from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate
from mbfmu.errors import InputError, UnknownNameError
from mbfmu.plant.library import load_plant
from mbfmu.studies.metrics import integral_error

H = 0.01
GRID = np.linspace(-2.5, 2.5, 11)


def lqr(lin, point):
    """Discrete LQR at the step H on the zero-order-hold model."""
    d = ct.c2d(ct.ss(lin.A, lin.B, np.eye(6), 0), H, "zoh")
    K, _, _ = ct.dlqr(d.A, d.B, np.diag([100, 100, 100, 1, 1, 1]), 0.01 * np.eye(3))
    return K


@pytest.fixture(scope="module")
def arm():
    return load_plant("rigid_arm")


@pytest.fixture(scope="module")
def sch(arm):
    return schedule(arm, {"q[3]": GRID}, lqr)


def test_gains_are_the_design_at_each_held_pose_and_interpolate_between(arm, sch):
    for k in (0, 4, 10):
        x = arm.initial_state()
        x[2] = GRID[k]
        u = trim_inputs(arm, state=x).u
        assert np.allclose(sch.gains[k], lqr(linearize(arm, x, u), {}), rtol=1e-9, atol=1e-9)
        assert np.allclose(sch.u0[k], u) and np.array_equal(sch.x0[k], x)
    mid = 0.5 * (GRID[3] + GRID[4])
    assert np.allclose(sch.gain(mid), 0.5 * (sch.gains[3] + sch.gains[4]))
    assert np.array_equal(sch.gain(10.0), sch.gains[-1])  # clamped at the ends
    ctrl = sch.controller(arm.initial_state(), np.zeros(3), H)
    x = arm.initial_state() + 0.1
    assert np.allclose(ctrl._out(0.0, [], x), -sch.gain(x[2]) @ np.full(6, 0.1))
    assert sch.model_source == f"plant's exact linearization ({linearize(arm, x, u).linearization.method})"


def test_a_schedule_prints_what_it_is_in_one_short_line(sch):
    """``print(schedule)`` names the variable, its grid and the gain shape,
    not the arrays of gains, operating points and linear models."""
    text = repr(sch)
    assert text == str(sch) and "\n" not in text and len(text) < 200, text
    assert text.startswith("Schedule(state 'q[3]': 11 points, -2.5 .. 2.5; gains 3x6 (inputs tau[1]")
    assert "array" not in text and "StateSpace" not in text


def _slew(fmu, ctrl_unit):
    a = FmuUnit(fmu, name="arm")
    velocity = a.outputs[3][:-3]  # the FMU's name of the joint rates
    system = System([a, ctrl_unit], [("arm.q", "ctrl.q"), (f"arm.{velocity}", "ctrl.v"), ("ctrl.tau", "arm.tau")])
    return simulate(system, stop_time=4.0, step=H)


def test_scheduled_beats_fixed_on_a_large_elbow_slew_through_the_fmu(arm, sch, tmp_path):
    from mbfmu.control.export import export_fmu
    from mbfmu.fmu import build_fmu
    fmu = build_fmu("rigid_arm", tmp_path)
    x0 = arm.initial_state()
    x_ref = x0.copy()
    x_ref[2] = 2.0  # elbow from -45 deg to +115 deg
    u_ref = trim_inputs(arm, state=x_ref).u
    scheduled = sch.controller(x_ref, u_ref, H)
    fixed = sch.controller(x_ref, u_ref, H, fixed_at=x0[2], name="fixed")  # designed at the start pose
    r_s = _slew(fmu, ControlUnit("ctrl", scheduled))
    r_f = _slew(fmu, ControlUnit("ctrl", fixed))
    itae_s = integral_error("itae", r_s.time, r_s["arm.q[3]"], x_ref[2])
    itae_f = integral_error("itae", r_f.time, r_f["arm.q[3]"], x_ref[2])
    assert itae_f / itae_s > 3.0  # measured 8.2 (Dec 2026)
    assert abs(r_s["arm.q[3]"][-1] - x_ref[2]) < 1e-4
    # the scheduled controller as an exported controller FMU runs the same loop
    ctrl_fmu = export_fmu(scheduled, tmp_path / "ctrl", reference=scheduled.reference, step=H)
    r_e = _slew(fmu, FmuUnit(ctrl_fmu, name="ctrl"))
    assert np.abs(r_e["arm.q[3]"] - r_s["arm.q[3]"]).max() < 1e-9


def test_parameter_schedule_adds_the_parameter_as_an_input(arm):
    masses = [10.0, 20.0, 40.0]
    sp = schedule(arm, {"arm_mass": masses}, lqr)
    heavy = load_plant("rigid_arm", arm_mass=40.0)
    u = trim_inputs(heavy, q=heavy.initial_state()[:3]).u
    assert np.allclose(sp.gains[2], lqr(linearize(heavy, None, u), {}), rtol=1e-9, atol=1e-9)
    ctrl = sp.controller(arm.initial_state(), np.zeros(3), H)
    assert list(ctrl.input_labels)[-1] == "arm_mass"
    x = arm.initial_state() + 0.1
    assert np.allclose(ctrl._out(0.0, [], np.append(x, 30.0)), -0.5 * (sp.gains[1] + sp.gains[2]) @ np.full(6, 0.1))


def test_bad_schedules_are_refused(arm):
    with pytest.raises(UnknownNameError, match="no state or parameter 'elbow'"):
        schedule(arm, {"elbow": [0.0, 1.0]}, lqr)
    with pytest.raises(InputError, match="increasing"):
        schedule(arm, {"q[3]": [1.0, 0.0]}, lqr)
    with pytest.raises(InputError, match="shape"):
        schedule(arm, {"q[3]": [0.0]}, lambda lin, p: np.zeros((2, 2)))
