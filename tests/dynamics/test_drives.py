"""Joint drives (servos and Coulomb friction, csrc/drives.c) against the law
the URDF plant computed in Python before they became kernel elements, and
against the power balance of a robot that friction and damping slow down."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from mbfmu.dynamics import JointDrive, ModelBuilder, Revolute, _kernels
from mbfmu.dynamics.urdf import load_urdf
from mbfmu.errors import ModelError
from mbfmu.plant.urdf import plant_from_urdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "robots"))
from robot_files import robot_file  # noqa: E402

UR5 = "ur_description/urdf/ur5_robot.urdf"


def python_law(gains, frictions, friction_velocity, q, v, u):
    """The URDF plant's former ``applied_forces`` (mbfmu 0.1), written out:
    ``gains`` rows (input column, v index, q index, mode, kp, kd, limit),
    ``frictions`` rows (v index, Coulomb torque)."""
    tau = np.zeros(len(v))
    for col, iv, iq, mode, kp, kd, limit in gains:
        f = kp * (u[col] - q[iq]) - kd * v[iv] if mode == "position" else kd * (u[col] - v[iv])
        tau[iv] += min(max(f, -limit), limit)
    for iv, fc in frictions:
        tau[iv] -= fc * np.tanh(v[iv] / friction_velocity)
    return tau


def ur5_with_friction(tmp_path, damping="0.0", friction="1.5"):
    text = re.sub(r'<dynamics damping="[^"]*" friction="[^"]*"/>',
                  f'<dynamics damping="{damping}" friction="{friction}"/>', robot_file(UR5).read_text())
    path = tmp_path / "ur5_friction.urdf"
    path.write_text(text)
    return path


def test_servo_and_friction_elements_equal_the_former_python_law(tmp_path):
    path = ur5_with_friction(tmp_path)
    servos = {"shoulder_pan_joint": "velocity", "elbow_joint": "position", "wrist_1_joint": "position"}
    plant = plant_from_urdf(path, actuation=servos, friction=True, friction_velocity=0.02)
    bare = load_urdf(path)  # the same robot without any drive: the former law adds its torques outside
    drives = plant.model.packed["drives"]
    by_iv = {int(r[0]): r for r in drives}
    gains = []
    for col in range(len(plant.inputs)):
        iv = int(np.flatnonzero(plant.input_matrix[:, col])[0])
        r = by_iv.get(iv)
        if r is not None and r[2] != 0:
            gains.append((col, iv, int(r[1]), {1: "position", 2: "velocity"}[int(r[2])], r[3], r[4], r[5]))
    assert {g[3] for g in gains} == {"position", "velocity"} and len(gains) == 3
    frictions = [(iv, 1.5) for iv in range(6)]
    rng = np.random.default_rng(5)
    saturated = 0
    for _ in range(20):
        q, v = rng.uniform(-2, 2, 6), rng.uniform(-0.1, 0.1, 6)
        u = rng.uniform(-2, 2, len(plant.inputs))
        torque = plant.input_matrix @ u
        torque[[g[1] for g in gains]] = 0.0  # the torque inputs; servos add their law below
        tau = torque + python_law(gains, frictions, 0.02, q, v, u)
        want = np.concatenate(_kernels.rhs(bare._h, q, v, tau))
        got = plant.derivatives(0.0, np.concatenate([q, v]), u)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
        saturated += any(abs(g[4] * (u[g[0]] - q[g[2]]) - g[5] * v[g[1]]) > g[6] for g in gains if g[3] == "position")
    assert saturated  # the torque limit was exercised


def test_friction_and_damping_dissipate_what_the_power_balance_says(tmp_path):
    """d(T + V)/dt = -sum(d v^2 + fc tanh(v / vs) v) along the compiled integration."""
    path = ur5_with_friction(tmp_path, damping="0.7", friction="0.9")
    vs = 0.05
    plant = plant_from_urdf(path, damping=True, friction=True, friction_velocity=vs,
                            v0=[1.0, -0.8, 1.2, 0.6, -1.0, 0.5], q0=[0.2, -1.0, 0.8, 0.3, 0.1, 0.0])
    h, n = 2e-3, 500
    _, X, _ = plant.simulate(n * h, h)
    E = np.array([sum(plant.energies(x)) for x in X])
    V = X[:, 6:]
    power = -(0.7 * V ** 2 + 0.9 * np.tanh(V / vs) * V).sum(axis=1)
    # Simpson's rule on the output grid
    lost = h / 3 * (power[0] + power[-1] + 4 * power[1:-1:2].sum() + 2 * power[2:-1:2].sum())
    assert E[-1] - E[0] < -0.5  # it did slow down
    assert E[-1] - E[0] == pytest.approx(lost, rel=1e-5)
    assert np.all(np.diff(E) < 1e-9)  # never gains energy


def test_drive_declarations_are_checked_by_name():
    b = ModelBuilder(gravity=(0, 0, 0))
    b.add_body("link", "world", Revolute(axis=(0, 0, 1)), mass=1.0, com=(0.5, 0, 0), inertia=np.eye(3) * 1e-3)
    with pytest.raises(ModelError, match="mode 'stiff'"):
        JointDrive("stiff")
    with pytest.raises(ModelError, match="kp = -1"):
        JointDrive("position", kp=-1.0)
    with pytest.raises(ModelError, match="friction_velocity = 0"):
        JointDrive(friction=1.0, friction_velocity=0.0)
    with pytest.raises(ModelError, match="expected a JointDrive"):
        b.add_joint_drive("link", "position")
    b.add_joint_drive("link", JointDrive("position", kp=10.0, kd=1.0, torque_limit=3.0))
    m = b.build()
    # the kernels refuse rows that do not fit the model, naming the drive
    with pytest.raises(ModelError, match="joint drive 1 does not fit"):
        _kernels.set_drives(m._h, 1, np.array([[5, 0, 1, 1.0, 1.0, 1.0, 0.0, 1.0]]))
    # a servo's set-point is in the commanded torque: the force elements need it
    with pytest.raises(ModelError, match="pass tau"):
        _kernels.passive_forces(m._h, np.zeros(1), np.zeros(1))
    tau, _ = _kernels.passive_forces(m._h, np.array([0.1]), np.array([0.5]), np.array([0.4]))
    assert tau[0] + 0.4 == pytest.approx(min(10.0 * (0.4 - 0.1) - 1.0 * 0.5, 3.0))
