"""Models from Denavit-Hartenberg parameters (``mbfmu.dynamics.dh``).

Checked against (a) a hand-written homogeneous-transform chain, (b) the
closed-form forward kinematics of the arm of Wang et al. (2009) (models/rigid_arm.py), (c) the same arm written
by hand as a URDF and with ``ModelBuilder`` (mass matrix, inverse dynamics).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.dynamics import (ModelBuilder, Revolute, crba, forward_kinematics, from_dh,
                            point_position, rnea)
from mbfmu.dynamics.dh import DHRow, dh_forward_kinematics, dh_frame_in_body, dh_transform
from mbfmu.dynamics.urdf import load_urdf
from mbfmu.errors import ModelError

RNG = np.random.default_rng(20260530)


def hand_T(a, alpha, d, theta):
    """Rz(theta) Tz(d) Tx(a) Rx(alpha) as a product of four elementary 4x4 matrices."""
    def Rz(t):
        return np.array([[math.cos(t), -math.sin(t), 0, 0], [math.sin(t), math.cos(t), 0, 0],
                         [0, 0, 1, 0], [0, 0, 0, 1.0]])

    def Rx(t):
        return np.array([[1.0, 0, 0, 0], [0, math.cos(t), -math.sin(t), 0],
                         [0, math.sin(t), math.cos(t), 0], [0, 0, 0, 1]])

    def Tr(x, y, z):
        T = np.eye(4)
        T[:3, 3] = (x, y, z)
        return T
    return Rz(theta) @ Tr(0, 0, d) @ Tr(a, 0, 0) @ Rx(alpha)


def random_rows(n: int) -> list[DHRow]:
    rows = []
    for i in range(n):
        mass = RNG.uniform(0.5, 3.0)
        A = np.linalg.qr(RNG.normal(size=(3, 3)))[0]
        I = A @ np.diag(RNG.uniform(0.05, 0.1, 3)) @ A.T
        rows.append(DHRow(a=RNG.uniform(-0.5, 0.8), alpha=RNG.uniform(-np.pi, np.pi),
                          d=RNG.uniform(-0.3, 0.3), theta=RNG.uniform(-np.pi, np.pi),
                          joint="prismatic" if i % 3 == 1 else "revolute", mass=mass,
                          com=RNG.uniform(-0.2, 0.2, 3), inertia=I))
    return rows


def test_dh_transform_is_the_product_of_the_four_elementary_motions():
    for _ in range(20):
        a, alpha, d, theta = RNG.uniform(-2, 2, 4)
        np.testing.assert_allclose(dh_transform(a, alpha, d, theta), hand_T(a, alpha, d, theta),
                                   atol=1e-14)


@pytest.mark.parametrize("n", [1, 3, 6])
def test_model_frames_match_hand_chain_for_random_revolute_and_prismatic_rows(n):
    rows = random_rows(n)
    base = hand_T(0.1, 0.4, 0.2, -0.3)
    model = from_dh(rows, base=base)
    assert model.nq == model.nv == n
    for _ in range(5):
        q = RNG.uniform(-2, 2, n)
        T = base.copy()
        frames = [T]
        for r, qi in zip(rows, q):
            rev = r.joint == "revolute"
            T = T @ hand_T(r.a, r.alpha, r.d + (0 if rev else qi), r.theta + (qi if rev else 0))
            frames.append(T)
        np.testing.assert_allclose(dh_forward_kinematics(rows, q, base), np.array(frames), atol=1e-12)
        kin = forward_kinematics(model, q)
        for i, r in enumerate(rows, start=1):
            R_BF, p_BF = dh_frame_in_body(r)
            np.testing.assert_allclose(kin.R_WB[i] @ R_BF, frames[i][:3, :3], atol=1e-12)
            np.testing.assert_allclose(kin.p_WB[i] + kin.R_WB[i] @ p_BF, frames[i][:3, 3], atol=1e-12)
        np.testing.assert_allclose(point_position(model, q, n, (rows[-1].a, 0, 0)), frames[-1][:3, 3],
                                   atol=1e-12)


def seed_arm_rows(h=0.15, l2=1.0, l3=1.0, m=10.0, It=0.9, Ia=0.2, mb=20.0, Ib=(1.0, 1.6)):
    return [DHRow(a=0, alpha=math.pi / 2, d=h, mass=mb, com=(0, -h, 0), inertia=(Ib[0], Ib[1], Ib[0])),
            DHRow(a=l2, mass=m, com=(-l2 / 2, 0, 0), inertia=(Ia, It, It)),
            DHRow(a=l3, mass=m, com=(-l3 / 2, 0, 0), inertia=(Ia, It, It))]


def test_wang_2009_arm_tip_matches_closed_form_kinematics():
    """px = c1 (l2 c2 + l3 c23), py = s1 (...), pz = h + l2 s2 + l3 s23 (Wang et al. 2009, eq. 3; pz derived)."""
    h, l2, l3 = 0.15, 1.0, 0.8
    model = from_dh(seed_arm_rows(h, l2, l3))
    for _ in range(20):
        t1, t2, t3 = RNG.uniform(-np.pi, np.pi, 3)
        r = l2 * math.cos(t2) + l3 * math.cos(t2 + t3)
        expected = [math.cos(t1) * r, math.sin(t1) * r, h + l2 * math.sin(t2) + l3 * math.sin(t2 + t3)]
        np.testing.assert_allclose(point_position(model, [t1, t2, t3], 3, (l3, 0, 0)), expected,
                                   atol=1e-12)


SEED_ARM_URDF = """<robot name="wang2009_arm">
  <link name="ground"/>
  <link name="base"><inertial><origin xyz="0 0 -0.15"/><mass value="20"/>
    <inertia ixx="1.0" iyy="1.0" izz="1.6" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="upper"><inertial><origin xyz="0.5 0 0"/><mass value="10"/>
    <inertia ixx="0.2" iyy="0.9" izz="0.9" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.5 0 0"/><mass value="10"/>
    <inertia ixx="0.2" iyy="0.9" izz="0.9" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="yaw" type="continuous"><parent link="ground"/><child link="base"/>
    <origin xyz="0 0 0.15"/><axis xyz="0 0 1"/></joint>
  <joint name="shoulder" type="continuous"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0" rpy="1.5707963267948966 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="fore"/>
    <origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
</robot>"""


def test_seed_arm_from_dh_has_the_dynamics_of_the_same_arm_written_as_urdf_and_with_builder():
    """Inertias given in DH frames must land where a hand-written URDF and a
    ModelBuilder description (proximal link frames) put them."""
    dh = from_dh(seed_arm_rows())
    urdf = load_urdf(SEED_ARM_URDF)
    b = ModelBuilder()
    b.add_body("base", "world", Revolute((0, 0, 1)), 20.0, (0, 0, -0.15), (1.0, 1.0, 1.6), p_PJ=(0, 0, 0.15))
    R90 = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    b.add_body("upper", "base", Revolute((0, 0, 1)), 10.0, (0.5, 0, 0), (0.2, 0.9, 0.9), R_PJ=R90)
    b.add_body("fore", "upper", Revolute((0, 0, 1)), 10.0, (0.5, 0, 0), (0.2, 0.9, 0.9), p_PJ=(1, 0, 0))
    built = b.build()
    for _ in range(10):
        q, v, a = RNG.uniform(-2, 2, (3, 3))
        M = crba(dh, q)
        np.testing.assert_allclose(crba(urdf, q), M, atol=1e-12)
        np.testing.assert_allclose(crba(built, q), M, atol=1e-12)
        tau = rnea(dh, q, v, a)
        np.testing.assert_allclose(rnea(urdf, q, v, a), tau, atol=1e-10)
        np.testing.assert_allclose(rnea(built, q, v, a), tau, atol=1e-10)


def test_seed_arm_from_dh_agrees_with_pinocchio_on_the_same_urdf():
    """External reference: Pinocchio's CRBA and RNEA on the hand-written URDF."""
    import pinocchio as pin
    pmodel = pin.buildModelFromXML(SEED_ARM_URDF)
    pmodel.gravity.linear = np.array([0.0, 0.0, -9.81])
    data = pmodel.createData()
    dh = from_dh(seed_arm_rows())
    for _ in range(10):
        q, v, a = RNG.uniform(-2, 2, (3, 3))
        q_pin = np.column_stack([np.cos(q), np.sin(q)]).ravel()  # continuous joints: (cos, sin)
        M = pin.crba(pmodel, data, q_pin)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(crba(dh, q), M, atol=1e-12)
        np.testing.assert_allclose(rnea(dh, q, v, a), pin.rnea(pmodel, data, q_pin, v, a), atol=1e-10)


def test_dict_rows_are_accepted():
    rows = [dict(a=0.5, mass=1.0, com=(-0.25, 0, 0), inertia=(0.001, 0.02, 0.02))]
    model = from_dh(rows)
    np.testing.assert_allclose(point_position(model, [math.pi / 2], 1, (0.5, 0, 0)), [0, 0.5, 0], atol=1e-15)


@pytest.mark.parametrize("rows, match", [
    ([], "at least one row"),
    ([DHRow(a=1.0, joint="spherical", mass=1.0)], "joint 'spherical'"),
    ([DHRow(a=float("nan"), mass=1.0)], "a = nan"),
    ([dict(a=1.0, mass=1.0, lenght=2.0)], "unknown field"),
    ([DHRow(a=1.0, mass=-1.0)], "negative"),
    ([DHRow(a=1.0, mass=1.0, inertia=(1.0, 0.1, 0.1))], "triangle"),
    ([DHRow(a=1.0, mass=0.0)], "moves no mass"),
    (["not a row"], "expected a DHRow"),
])
def test_bad_rows_are_refused_with_a_clear_error(rows, match):
    with pytest.raises(ModelError, match=match):
        from_dh(rows)
