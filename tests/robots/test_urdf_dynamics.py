"""Real robots from example-robot-data become plants whose dynamics equal
Pinocchio's on the same URDF file (Pinocchio: an independent C++ URDF parser
and ABA), with ports that carry what they claim."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from robot_files import robot_file

import mbfmu
from mbfmu.errors import InputError, ModelError, UnknownNameError
from mbfmu.plant.urdf import SERVO_BANDWIDTH, Servo, plant_from_urdf

UR5 = "ur_description/urdf/ur5_robot.urdf"


def pinocchio_model(path, floating):
    return pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromUrdf(str(path))


def to_pin(q, v, floating):
    """Pinocchio's coordinates: free-flyer quaternion (x, y, z, w) and twist [linear; angular]."""
    if not floating:
        return q.copy(), v.copy()
    return (np.concatenate([q[:3], q[4:7], q[3:4], q[7:]]), np.concatenate([v[3:6], v[:3], v[6:]]))


def v_from_pin(a, floating):
    return np.concatenate([a[3:6], a[:3], a[6:]]) if floating else a


def random_state(plant, rng, floating):
    m = plant.model
    q = rng.uniform(-1.0, 1.0, m.nq)
    if floating:
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
    return q, rng.uniform(-1.0, 1.0, m.nv)


def test_ros_ur5_with_a_world_link_loads_and_its_world_is_the_world_body():
    path = robot_file(UR5)
    assert '<link name="world"/>' in path.read_text()  # the standard ROS layout
    model = mbfmu.load_urdf(path)
    assert model.body_names.count("world") == 1 and model.nv == 6
    pm = pinocchio_model(path, False)
    pd = pm.createData()
    q = np.linspace(-1, 1, 6)
    pin.framesForwardKinematics(pm, pd, q)
    R, p = mbfmu.plant.urdf.URDFPlant(path).poses(np.concatenate([q, np.zeros(6)]))
    b = model.body_names.index("tool0")
    f = pd.oMf[pm.getFrameId("tool0")]
    np.testing.assert_allclose(p[b], f.translation, atol=1e-12)
    np.testing.assert_allclose(R[b], f.rotation, atol=1e-12)


def test_torque_driven_dynamics_equal_pinocchio(robot):
    name, path, floating, _ = robot
    plant = plant_from_urdf(path, floating_base=floating)
    pm = pinocchio_model(path, floating)
    pd = pm.createData()
    assert (pm.nq, pm.nv) == (plant.model.nq, plant.model.nv)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, v = random_state(plant, rng, floating)
        u = rng.uniform(-5, 5, len(plant.inputs))
        xdot = plant.derivatives(0.0, np.concatenate([q, v]), u)
        tau = plant.input_matrix @ u
        qp, vp = to_pin(q, v, floating)
        a = pin.aba(pm, pd, qp, vp, to_pin(np.zeros(plant.model.nq), tau, floating)[1])
        scale = max(1.0, np.abs(a).max())
        np.testing.assert_allclose(xdot[plant.model.nq:], v_from_pin(a, floating), atol=1e-9 * scale)
    # the inputs are the joint torques of the actuated joints, named and with units
    assert all(s.unit in ("N.m", "N") for s in plant.inputs)
    assert len(plant.inputs) == plant.model.nv - (6 if floating else 0)


def test_position_servos_apply_the_pd_law_with_urdf_effort_limits():
    path = robot_file(UR5)
    plant = plant_from_urdf(path, actuation="position")
    pm = pinocchio_model(path, False)
    pd = pm.createData()
    assert [s.name for s in plant.inputs] == [f"q_ref[{i}]" for i in range(1, 7)]
    assert all(s.unit == "rad" for s in plant.inputs)
    M0 = pin.crba(pm, pd, np.zeros(6))
    kp = np.diag(M0) * SERVO_BANDWIDTH ** 2
    kd = 2 * np.diag(M0) * SERVO_BANDWIDTH
    effort = np.array([float(j.find("limit").get("effort")) for j in ET.parse(path).getroot().findall("joint")
                       if j.get("type") == "revolute"])
    rng = np.random.default_rng(3)
    q, v = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
    q_ref = q + rng.uniform(-0.5, 0.5, 6)
    tau = np.clip(kp * (q_ref - q) - kd * v, -effort, effort)
    assert np.any(np.abs(tau) == effort)  # the limit is exercised
    a = pin.aba(pm, pd, q, v, tau)
    np.testing.assert_allclose(plant.derivatives(0, np.concatenate([q, v]), q_ref)[6:], a, atol=1e-9 * np.abs(a).max())


def test_urdf_damping_and_friction_act_when_asked(tmp_path):
    text = robot_file(UR5).read_text()
    text = re.sub(r'<dynamics damping="[^"]*" friction="[^"]*"/>', '<dynamics damping="2.5" friction="1.5"/>', text)
    path = tmp_path / "ur5_damped.urdf"
    path.write_text(text)
    plant = plant_from_urdf(path, damping=True, friction=True, friction_velocity=0.01)
    pm = pinocchio_model(path, False)
    pd = pm.createData()
    q, v, u = np.linspace(-1, 1, 6), np.linspace(0.3, -0.2, 6), np.linspace(1, 2, 6)
    tau = u - 2.5 * v - 1.5 * np.tanh(v / 0.01)
    np.testing.assert_allclose(plant.derivatives(0, np.concatenate([q, v]), u)[6:], pin.aba(pm, pd, q, v, tau),
                               atol=1e-9)


def test_link_pose_and_twist_outputs_equal_pinocchio_frames(robot):
    name, path, floating, link = robot
    plant = plant_from_urdf(path, floating_base=floating, poses=[link], twists=[link])
    pm = pinocchio_model(path, floating)
    pd = pm.createData()
    q, v = random_state(plant, np.random.default_rng(11), floating)
    y = dict(zip([s.name for s in plant.outputs], plant.outputs_at(0, np.concatenate([q, v]), plant.default_inputs())))
    qp, vp = to_pin(q, v, floating)
    pin.forwardKinematics(pm, pd, qp, vp)
    pin.updateFramePlacements(pm, pd)
    fid = pm.getFrameId(link)
    f = pd.oMf[fid]
    np.testing.assert_allclose([y[f"{link}_p[{i}]"] for i in (1, 2, 3)], f.translation, atol=1e-12)
    quat = pin.Quaternion(f.rotation)
    want = np.array([quat.w, quat.x, quat.y, quat.z]) * np.sign(quat.w)
    np.testing.assert_allclose([y[f"{link}_quat[{i}]"] for i in (1, 2, 3, 4)], want, atol=1e-12)
    tw = pin.getFrameVelocity(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
    np.testing.assert_allclose([y[f"{link}_twist[{i}]"] for i in range(1, 7)],
                               np.concatenate([tw.angular, tw.linear]), atol=1e-10)
    np.testing.assert_allclose([y[f"q[{i}]"] for i in range(1, plant.model.nq + 1)], q)
    units = {s.name: s.unit for s in plant.outputs}
    assert units[f"{link}_p[1]"] == "m" and units[f"{link}_twist[1]"] == "rad/s" and units[f"{link}_twist[4]"] == "m/s"


def test_mixed_actuation_per_joint_names_each_port_after_its_joint():
    path = robot_file(UR5)
    plant = plant_from_urdf(path, actuation={"shoulder_pan_joint": "velocity",
                                             "elbow_joint": Servo("position", kp=100.0, kd=5.0),
                                             "wrist_3_joint": "torque"})
    assert [(s.name, s.unit) for s in plant.inputs] == [("tau[1]", "N.m"), ("q_ref[1]", "rad"),
                                                         ("v_ref[1]", "rad/s")]
    assert "wrist_3_joint" in plant.inputs[0].description and "elbow_joint" in plant.inputs[1].description
    q, v = np.zeros(6), np.linspace(0.1, 0.6, 6)
    pm = pinocchio_model(path, False)
    pd = pm.createData()
    M0 = pin.crba(pm, pd, np.zeros(6))
    u = np.array([3.0, 0.4, 1.0])
    tau = np.zeros(6)
    tau[5] = 3.0
    tau[2] = 100.0 * (0.4 - q[2]) - 5.0 * v[2]
    tau[0] = np.clip(2 * M0[0, 0] * SERVO_BANDWIDTH * (1.0 - v[0]), -150, 150)
    np.testing.assert_allclose(plant.derivatives(0, np.concatenate([q, v]), u)[6:], pin.aba(pm, pd, q, v, tau),
                               atol=1e-9)


def test_bad_robot_options_are_refused_naming_the_culprit(tmp_path):
    path = robot_file(UR5)
    with pytest.raises(UnknownNameError, match="elbow_jiont"):
        plant_from_urdf(path, actuation={"elbow_jiont": "position"})
    with pytest.raises(UnknownNameError, match="link 'tool9'"):
        plant_from_urdf(path, poses=["tool9"])
    with pytest.raises(InputError, match="servo mode 'stiff'"):
        plant_from_urdf(path, actuation="stiff")
    with pytest.raises(InputError, match="kp = -1"):
        Servo("position", kp=-1.0)
    with pytest.raises(InputError, match="does not exist"):
        plant_from_urdf(tmp_path / "nope.urdf")
    with pytest.raises(InputError, match="outputs"):
        plant_from_urdf(path, outputs=["qq"])
    lost = tmp_path / "lost.urdf"
    lost.write_text(path.read_text().replace("package://example-robot-data/", "package://no-such-package/"))
    with pytest.raises(ModelError, match="package 'no-such-package' not found"):
        plant_from_urdf(lost).geometry
