"""trim_inputs: the inputs that hold a plant at a requested state, checked
against the analytic gravity torques of the rigid arm, against Pinocchio's
rnea on a URDF robot, and by simulating the plant with the inputs found."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.control import trim_inputs
from mbfmu.errors import InputError, UnknownNameError
from mbfmu.plant.library import load_plant

G, M_LINK, L = 9.81, 10.0, 1.0  # rigid_arm defaults: 20 kg of arms split equally, 1 m links


def gravity_torque(q):
    """Torques that carry the two links of the rigid arm at rest, N m (centres of
    mass at mid-length; the base axis is vertical, so it carries nothing)."""
    _, t2, t3 = q
    tau3 = M_LINK * G * L / 2 * np.cos(t2 + t3)
    tau2 = M_LINK * G * (L / 2 * np.cos(t2) + L * np.cos(t2) + L / 2 * np.cos(t2 + t3))
    return np.array([0.0, tau2, tau3])


@pytest.fixture(scope="module")
def arm():
    return load_plant("rigid_arm")


def test_rigid_arm_held_at_random_poses_by_the_gravity_torque(arm):
    rng = np.random.default_rng(28)
    for q in rng.uniform(-np.pi, np.pi, (10, 3)):
        hold = trim_inputs(arm, q=q)
        assert hold.success and hold.residual < 1e-10
        assert np.allclose(hold.u, gravity_torque(q), rtol=0, atol=1e-9)
        assert np.array_equal(hold.x[:3], q) and not hold.x[3:].any()
    assert hold.model_source == "plant's exact linearization (analytic Jacobians)"  # rigid_arm's are analytic
    assert f"model: {hold.model_source}" in hold.report()


def test_plant_stays_at_rest_for_one_second_under_the_trim_inputs(arm):
    rng = np.random.default_rng(7)
    for q in rng.uniform(-1.5, 1.5, (3, 3)):
        hold = trim_inputs(arm, q=q)
        arm_at = load_plant("rigid_arm", theta1_0=q[0], theta2_0=q[1], theta3_0=q[2])
        _, X, _ = arm_at.simulate(stop_time=1.0, step=0.01, u=hold.u)
        assert np.abs(X[:, :3] - q).max() < 1e-9 and np.abs(X[:, 3:]).max() < 1e-9


def test_free_states_and_fixed_inputs(arm):
    """Elbow torque fixed at 0 and the elbow angle free: the forearm must hang
    or stand vertical (cos(q2 + q3) = 0), and the shoulder carries both links."""
    hold = trim_inputs(arm, q=[0.3, 0.7, -1.0], free=["tau[2]", "q[3]"], u={"tau[3]": 0.0})
    assert hold.residual < 1e-10 and hold.unknowns == ["q[3]", "tau[2]"]
    assert abs(np.cos(hold.x[1] + hold.x[2])) < 1e-12 and hold.u[2] == 0.0
    assert np.isclose(hold.u[1], gravity_torque(hold.x[:3])[1], atol=1e-9)


def test_steady_motion_only_cancels_accelerations(arm):
    """Base turning at 0.5 rad/s: the inputs cancel the accelerations, and the
    Coriolis/centrifugal part equals the plant's own inverse dynamics."""
    from mbfmu.dynamics import rnea
    q, v = np.array([0.2, 0.6, -0.9]), np.array([0.5, 0.0, 0.0])
    hold = trim_inputs(arm, q=q, v=v)
    assert hold.equations == ["v[1]", "v[2]", "v[3]"] and hold.residual < 1e-10
    assert np.allclose(hold.u, rnea(arm.model, q, v, np.zeros(3)), atol=1e-9)
    assert not np.allclose(hold.u, gravity_torque(q), atol=1e-3)  # the motion matters


def test_ur5_from_urdf_equals_pinocchio_rnea():
    import pinocchio as pin  # the test extra installs it: an oracle never skips
    sys.path.insert(0, str(Path(__file__).parents[1] / "robots"))
    from robot_files import robot_file
    path = robot_file("ur_description/urdf/ur5_robot.urdf")
    from mbfmu.plant.urdf import plant_from_urdf
    plant = plant_from_urdf(path)
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    rng = np.random.default_rng(5)
    for q in rng.uniform(-2.0, 2.0, (5, model.nq)):
        hold = trim_inputs(plant, q=q)
        expected = pin.rnea(model, data, q, np.zeros(model.nv), np.zeros(model.nv))
        assert hold.residual < 1e-10
        assert np.allclose(plant.input_matrix @ hold.u, expected, rtol=1e-9, atol=1e-9)


def test_an_mbfmu_fmu_is_trimmed_through_its_plant(tmp_path, arm):
    from mbfmu.fmu import build_fmu
    fmu = build_fmu("rigid_arm", tmp_path)
    q = [0.1, 0.4, -0.8]
    assert np.allclose(trim_inputs(fmu, q=q).u, gravity_torque(q), atol=1e-9)


def test_bad_requests_get_one_line_errors(arm):
    with pytest.raises(UnknownNameError, match="no state or input .tau9."):
        trim_inputs(arm, free=["tau9"])
    with pytest.raises(InputError, match="4 unknowns for 3 equations"):
        trim_inputs(arm, v=[1.0, 0, 0], free=["tau[1]", "tau[2]", "tau[3]", "q[2]"])
    with pytest.raises(InputError, match="q has 2 values"):
        trim_inputs(arm, q=[0.0, 1.0])
    with pytest.raises(InputError, match="nothing to solve for"):
        trim_inputs(arm, free=[])


def test_cli_linearize_at_hold(tmp_path, capsys):
    out = tmp_path / "arm.npz"
    q = [0.0, 0.5, -1.0]
    assert main(["linearize", "rigid_arm", "--at", "hold:q=0,0.5,-1", "-o", str(out)]) == 0
    text = capsys.readouterr()
    assert "held by the trim inputs" in text.out and "not an equilibrium" not in text.err
    data = np.load(out)
    assert np.allclose(data["u0"], gravity_torque(q), atol=1e-9)
    assert np.allclose(data["x0"][:3], q)
    assert main(["linearize", "rigid_arm", "--at", "hold:q=a,b", "-o", str(tmp_path / "x.npz")]) != 0
    assert "q= takes numbers separated by commas" in capsys.readouterr().err
