"""rnea, crba and aba agree with Pinocchio on random URDF trees.

Pinocchio (C++, independent implementation) reads the same URDF text; the
q/v/tau order of revolute and prismatic joints must match without any
permutation (the contract of ``mbfmu.load_urdf``).
"""
import numpy as np
import pinocchio as pin
import pytest

from mbfmu import load_urdf
from mbfmu.dynamics import _kernels, aba, crba, minv, rnea
from mbfmu.dynamics.canonical import generalized_momentum
from random_trees import random_urdf

SEEDS = range(60)


def _rel(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)


def _check_dynamics(model, pmodel, pdata, q, v, a, tau):
    """rnea, crba and aba against Pinocchio's; returns Pinocchio's (symmetrized) mass matrix."""
    assert _rel(rnea(model, q, v, a), pin.rnea(pmodel, pdata, q, v, a)) < 1e-9
    M_ref = pin.crba(pmodel, pdata, q)
    M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
    assert _rel(crba(model, q), M_ref) < 1e-9
    assert _rel(aba(model, q, v, tau), pin.aba(pmodel, pdata, q, v, tau)) < 1e-9
    return M_ref


@pytest.mark.parametrize("seed", SEEDS)
def test_rnea_crba_aba_match_pinocchio_on_random_tree(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 41))
    text = random_urdf(rng, n, branchy=seed % 3 != 0)
    model = load_urdf(text)
    pmodel = pin.buildModelFromXML(text)
    pdata = pmodel.createData()
    assert (model.nq, model.nv) == (pmodel.nq, pmodel.nv)
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, model.nq)
        v = rng.normal(size=model.nv)
        a = rng.normal(size=model.nv)
        tau = rng.normal(size=model.nv) * 10
        _check_dynamics(model, pmodel, pdata, q, v, a, tau)


@pytest.mark.parametrize("seed", range(20))
def test_axis_aligned_joints_match_pinocchio(seed):
    """Joints about +-x, +-y, +-z, half of them without an origin rotation
    (the kernels' specialized joint steps): rnea, crba, aba, M^-1 b, the
    momentum M v, world poses and body velocities against Pinocchio."""
    rng = np.random.default_rng(1000 + seed)
    text = random_urdf(rng, int(rng.integers(1, 31)), branchy=seed % 2 == 0, aligned=True)
    model = load_urdf(text)
    pmodel = pin.buildModelFromXML(text)
    pdata = pmodel.createData()
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, model.nq)
        v = rng.normal(size=model.nv)
        a = rng.normal(size=model.nv)
        tau = rng.normal(size=model.nv) * 10
        M_ref = _check_dynamics(model, pmodel, pdata, q, v, a, tau)
        assert _rel(minv(model, q, tau), np.linalg.solve(M_ref, tau)) < 1e-9
        assert _rel(generalized_momentum(model, q, v), M_ref @ v) < 1e-9
        R, p, vel = _kernels.kinematics(model._h, q, v)
        pin.forwardKinematics(pmodel, pdata, q, v)
        for k in range(1, pmodel.njoints):  # pinocchio joint k: the k-th non-root body
            i = model.body_index(model.bodies[k].name)
            assert np.allclose(R[i], pdata.oMi[k].rotation, atol=1e-12)
            assert np.allclose(p[i], pdata.oMi[k].translation, atol=1e-12)
            assert np.allclose(vel[i], pdata.v[k].vector[[3, 4, 5, 0, 1, 2]], atol=1e-11)


def test_joint_order_follows_pinocchio_for_named_branches():
    rng = np.random.default_rng(123)
    text = random_urdf(rng, 12, branchy=True)
    model = load_urdf(text)
    pmodel = pin.buildModelFromXML(text)
    assert [n for n in model.joint_names[1:] if not n.startswith("base")] == list(pmodel.names[1:])


def test_free_flyer_and_spherical_match_pinocchio():
    """A floating base carrying a ball joint and a revolute joint. Pinocchio
    orders a free joint's q as (x, y, z, qx, qy, qz, qw) and v as [v; w]; mbfmu
    as (x, y, z, qw, qx, qy, qz) and [w; v]: the test maps between them."""
    from mbfmu.dynamics import FreeFlyer, ModelBuilder, Revolute, Spherical
    from mbfmu.dynamics.spatial import rpy

    rng = np.random.default_rng(7)
    from random_trees import random_inertia
    from pinocchio_bridge import to_pinocchio
    b = ModelBuilder()
    specs = [("base", 0, FreeFlyer()), ("ball", 1, Spherical()), ("hinge", 2, Revolute(axis=(0, 1, 0)))]
    for name, parent, joint in specs:
        mass, com, I = random_inertia(rng)
        R = rpy(*rng.uniform(-1, 1, 3))
        p = rng.uniform(-0.5, 0.5, 3)
        b.add_body(name, parent, joint, mass, com, I, R_PJ=R, p_PJ=p)
    model = b.build()
    pm, perm_q, perm_v = to_pinocchio(model)
    pd = pm.createData()
    quat1 = rng.normal(size=4); quat1 /= np.linalg.norm(quat1)
    quat2 = rng.normal(size=4); quat2 /= np.linalg.norm(quat2)
    pos = rng.normal(size=3)
    hinge = rng.uniform(-1, 1)
    q = np.r_[pos, quat1, quat2, hinge]
    q_pin = np.r_[pos, quat1[1:], quat1[0], quat2[1:], quat2[0], hinge]
    v = rng.normal(size=model.nv)  # [w_base, v_base, w_ball, hinge]
    perm = np.r_[3, 4, 5, 0, 1, 2, 6, 7, 8, 9]  # mbfmu index of each pinocchio coordinate
    # the converter's permutations, checked against the orderings written out here
    assert np.array_equal(q[perm_q], q_pin) and np.array_equal(perm_v, perm)
    v_pin = v[perm]
    tau = rng.normal(size=model.nv)
    a_ref = pin.aba(pm, pd, q_pin, v_pin, tau[perm])
    a = aba(model, q, v, tau)
    assert np.allclose(a[perm], a_ref, rtol=1e-9, atol=1e-9)
    t_ref = pin.rnea(pm, pd, q_pin, v_pin, a_ref)
    assert np.allclose(rnea(model, q, v, a)[perm], t_ref, rtol=1e-9, atol=1e-9)
    M_ref = pin.crba(pm, pd, q_pin)
    M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
    assert np.allclose(crba(model, q)[np.ix_(perm, perm)], M_ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_kinematics_jacobians_com_energy_match_pinocchio(seed):
    """World poses, joint Jacobians (world-aligned at the body origin), centre
    of mass, kinetic and potential energy and centroidal-free momentum."""
    from mbfmu.dynamics import (center_of_mass, forward_kinematics, frame_jacobian, kinetic_energy,
                                momentum, potential_energy)
    rng = np.random.default_rng(1000 + seed)
    text = random_urdf(rng, int(rng.integers(3, 20)))
    model = load_urdf(text)
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    q = rng.uniform(-np.pi, np.pi, model.nq)
    v = rng.normal(size=model.nv)
    pin.forwardKinematics(pm, pd, q, v)
    pin.computeJointJacobians(pm, pd, q)
    kin = forward_kinematics(model, q)
    # pinocchio joint k is the k-th non-root body of mbfmu (the root link is welded)
    for k in range(1, pm.njoints):
        i = model.body_index(model.bodies[k].name)
        assert np.allclose(kin.R_WB[i], pd.oMi[k].rotation, atol=1e-10)
        assert np.allclose(kin.p_WB[i], pd.oMi[k].translation, atol=1e-10)
        J_ref = pin.getJointJacobian(pm, pd, k, pin.LOCAL_WORLD_ALIGNED)  # [v; w]
        J = frame_jacobian(model, q, i)                                     # [w; v]
        assert np.allclose(J[:3], J_ref[3:], atol=1e-10)
        assert np.allclose(J[3:], J_ref[:3], atol=1e-10)
    assert np.allclose(center_of_mass(model, q), pin.centerOfMass(pm, pd, q), atol=1e-10)
    assert kinetic_energy(model, q, v) == pytest.approx(pin.computeKineticEnergy(pm, pd, q, v), rel=1e-10)
    assert potential_energy(model, q) == pytest.approx(pin.computePotentialEnergy(pm, pd, q), rel=1e-9, abs=1e-9)
    L, H = momentum(model, q, v)
    pin.ccrba(pm, pd, q, v)
    h_g = pd.hg  # centroidal momentum about the centre of mass
    assert np.allclose(L, h_g.linear, atol=1e-9)
    c = pin.centerOfMass(pm, pd, q)
    assert np.allclose(H, h_g.angular + np.cross(c, h_g.linear), atol=1e-9)


def test_thousand_body_tree_is_consistent_and_a_large_tree_matches_pinocchio():
    """Any number of bodies: a 1000-body branched tree satisfies
    aba(rnea(a)) = a and p = M v (Pinocchio's Data grows too fast with the
    body count to hold 1000 bodies here: 4.4 GB at 400), and a 150-body tree
    matches Pinocchio."""
    from mbfmu.dynamics import crba
    from mbfmu.dynamics.canonical import generalized_momentum
    rng = np.random.default_rng(2024)
    model = load_urdf(random_urdf(rng, 1000, branchy=True))
    assert model.nbodies == 1002
    q = rng.uniform(-np.pi, np.pi, model.nq)
    v = rng.normal(size=model.nv)
    a = rng.normal(size=model.nv)
    assert _rel(aba(model, q, v, rnea(model, q, v, a)), a) < 1e-8
    assert _rel(generalized_momentum(model, q, v), crba(model, q) @ v) < 1e-10
    text = random_urdf(rng, 150, branchy=True)
    model = load_urdf(text)
    pmodel = pin.buildModelFromXML(text)
    pdata = pmodel.createData()
    q = rng.uniform(-np.pi, np.pi, model.nq)
    tau = rng.normal(size=model.nv)
    v = rng.normal(size=model.nv)
    assert _rel(aba(model, q, v, tau), pin.aba(pmodel, pdata, q, v, tau)) < 1e-9


def _random_tree(builder, specs, rng):
    """Build ``specs`` = [(name, parent, joint)] with random inertias and placements."""
    from mbfmu.dynamics.spatial import rpy
    from random_trees import random_inertia

    for name, parent, joint in specs:
        mass, com, I = random_inertia(rng)
        builder.add_body(name, parent, joint, mass, com, I, R_PJ=rpy(*rng.uniform(-1, 1, 3)),
                         p_PJ=rng.uniform(-0.5, 0.5, 3))
    return builder.build()


def test_converter_folds_fixed_bodies_into_the_parent_joint():
    """A welded body (``Fixed``) becomes inertia on its parent's Pinocchio
    joint and its children hang from that joint at the composed placement."""
    from mbfmu.dynamics import Fixed, ModelBuilder, Prismatic, Revolute, forward_kinematics
    from pinocchio_bridge import to_pinocchio

    rng = np.random.default_rng(3)
    b = ModelBuilder(gravity=(0.1, 0.2, -9.81))
    specs = [("a", 0, Revolute(axis=(0, 0, 1))), ("weld", 1, Fixed()), ("b", 2, Prismatic(axis=(1, 0, 1))),
             ("weld2", 0, Fixed()), ("c", 4, Revolute(axis=(1, 1, 0)))]
    model = _random_tree(b, specs, rng)
    pm, perm_q, perm_v = to_pinocchio(model)
    pd = pm.createData()
    assert pm.nq == model.nq == 3
    q, v, tau = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    assert _rel(aba(model, q, v, tau)[perm_v], pin.aba(pm, pd, q[perm_q], v[perm_v], tau[perm_v])) < 1e-9
    pin.framesForwardKinematics(pm, pd, q[perm_q])
    kin = forward_kinematics(model, q)
    for i, body in enumerate(model.bodies, start=1):
        M = pd.oMf[pm.getFrameId(body.name)]
        assert np.allclose(M.translation, kin.p_WB[i], atol=1e-12)
        assert np.allclose(M.rotation, kin.R_WB[i], atol=1e-12)


def test_converter_splits_a_universal_joint_into_two_revolute_joints():
    from mbfmu.dynamics import ModelBuilder, Prismatic, Revolute, Universal, crba, rnea
    from pinocchio_bridge import to_pinocchio

    rng = np.random.default_rng(5)
    b = ModelBuilder(gravity=(-9.81, 0.3, 0.0))
    specs = [("a", 0, Revolute(axis=(1, 0, 0))), ("s", 1, Prismatic(axis=(0, 1, 0))),
             ("u", 2, Universal(axis1=(0, 1, 0.2), axis2=(0.1, 0, 1))), ("c", 3, Revolute(axis=(1, 1, 0)))]
    model = _random_tree(b, specs, rng)
    pm, perm_q, perm_v = to_pinocchio(model)
    pd = pm.createData()
    assert pm.nv == model.nv == 5
    q, v, a, tau = (rng.normal(size=5) for _ in range(4))
    assert _rel(aba(model, q, v, tau)[perm_v], pin.aba(pm, pd, q[perm_q], v[perm_v], tau[perm_v])) < 1e-9
    assert _rel(rnea(model, q, v, a)[perm_v], pin.rnea(pm, pd, q[perm_q], v[perm_v], a[perm_v])) < 1e-9
    M = pin.crba(pm, pd, q[perm_q])
    assert _rel(crba(model, q)[np.ix_(perm_v, perm_v)], np.triu(M) + np.triu(M, 1).T) < 1e-9
