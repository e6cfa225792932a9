"""Exact dynamics derivatives (mbfmu.dynamics.derivatives) against Pinocchio's
``computeRNEADerivatives`` / ``computeABADerivatives`` (Carpentier & Mansard,
RSS 2018) and against central differences in the tangent space."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.dynamics import (FreeFlyer, JointForce, ModelBuilder, Planar, Prismatic, Revolute,
                            Spherical, Universal, _kernels, rnea)
from mbfmu.dynamics import derivatives as dd
from mbfmu.dynamics.spatial import rot_axis
from mbfmu.dynamics.urdf import load_urdf
from mbfmu.errors import InputError

from pinocchio_bridge import to_pinocchio
from random_trees import random_inertia, random_urdf

import pinocchio as pin  # noqa: E402  (test dependency: the oracle)


def _sym(Minv_upper: np.ndarray) -> np.ndarray:
    return np.triu(Minv_upper) + np.triu(Minv_upper, 1).T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rnea_and_aba_derivatives_match_pinocchio_on_random_urdf_trees(seed):
    rng = np.random.default_rng(seed)
    text = random_urdf(rng, 9)
    model = load_urdf(text)
    pm = pin.buildModelFromXML(text)
    data = pm.createData()
    q = rng.uniform(-2, 2, model.nq)
    v = rng.normal(size=model.nv)
    a = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    dq, dv, M = dd.rnea_derivatives(model, q, v, a)
    pin.computeRNEADerivatives(pm, data, q, v, a)
    assert np.abs(dq - data.dtau_dq).max() < 1e-9
    assert np.abs(dv - data.dtau_dv).max() < 1e-9
    assert np.abs(M - _sym(data.M)).max() < 1e-9
    A, B, Minv = dd.aba_derivatives(model, q, v, tau)
    pin.computeABADerivatives(pm, data, q, v, tau)
    assert np.abs(A - data.ddq_dq).max() < 1e-9
    assert np.abs(B - data.ddq_dv).max() < 1e-9
    assert np.abs(Minv - _sym(data.Minv)).max() < 1e-9


def _tree_with_ball_and_free_joints(rng):
    """Free base, ball joints, revolute and prismatic joints, branched."""
    b = ModelBuilder(gravity=(0.2, -0.5, -9.81))
    joints = [FreeFlyer(), Spherical(), Revolute(axis=(0.3, 1.0, 0.2)), Prismatic(axis=(1.0, 1.0, 0.0)),
              Spherical(), Revolute(axis=(0.0, 0.0, 1.0))]
    parents = ["world", 1, 2, 1, 4, 4]
    for k, (j, p) in enumerate(zip(joints, parents)):
        mass, com, I = random_inertia(rng)
        b.add_body(f"b{k + 1}", p, j, mass=mass, com=com, inertia=I,
                   R_PJ=rot_axis(rng.normal(size=3), rng.uniform(0, 3)), p_PJ=rng.uniform(-0.4, 0.4, 3))
    return b.build()


def test_derivatives_match_pinocchio_with_ball_and_free_joints():
    """Quaternion joints: derivatives with respect to the tangent increment
    (Pinocchio's convention, q (+) dq = q Exp(dq))."""
    rng = np.random.default_rng(7)
    model = _tree_with_ball_and_free_joints(rng)
    pm, pq, pv = to_pinocchio(model)
    data = pm.createData()
    q = _kernels.normalize(model._h, model.neutral() + 0.6 * rng.normal(size=model.nq))
    v = rng.normal(size=model.nv)
    a = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    assert np.abs(rnea(model, q, v, a)[pv] - pin.rnea(pm, data, q[pq], v[pv], a[pv])).max() < 1e-10
    dq, dv, M = dd.rnea_derivatives(model, q, v, a)
    pin.computeRNEADerivatives(pm, data, q[pq], v[pv], a[pv])
    assert np.abs(dq[np.ix_(pv, pv)] - data.dtau_dq).max() < 1e-9
    assert np.abs(dv[np.ix_(pv, pv)] - data.dtau_dv).max() < 1e-9
    A, B, Minv = dd.aba_derivatives(model, q, v, tau)
    pin.computeABADerivatives(pm, data, q[pq], v[pv], tau[pv])
    assert np.abs(A[np.ix_(pv, pv)] - data.ddq_dq).max() < 1e-9
    assert np.abs(B[np.ix_(pv, pv)] - data.ddq_dv).max() < 1e-9
    assert np.abs(Minv[np.ix_(pv, pv)] - _sym(data.Minv)).max() < 1e-9


def _model_with_force_elements(rng):
    """Every joint type, joint springs/dampers/active limits, point springs."""
    b = ModelBuilder(gravity=(0.3, -1.0, -9.81))
    joints = [FreeFlyer(), Spherical(), Revolute(axis=(0.3, 1, 0.2)), Universal(axis1=(1, 0, 0), axis2=(0, 1, 0.3)),
              Planar(), Prismatic(axis=(1, 1, 0)), Spherical()]
    parents = ["world", 1, 2, 2, 4, 3, 6]
    for k, (j, p) in enumerate(zip(joints, parents)):
        mass, com, I = random_inertia(rng)
        b.add_body(f"b{k + 1}", p, j, mass=mass, com=com, inertia=I,
                   R_PJ=rot_axis(rng.normal(size=3), rng.uniform(0, 3)), p_PJ=rng.uniform(-0.4, 0.4, 3))
    b.add_joint_force(2, JointForce(stiffness=3.0, damping=0.4, rest=(0.1, 0, 0.2)))
    b.add_joint_force(3, JointForce(stiffness=2.0, damping=0.1, lower=-0.2, upper=0.2,
                                    limit_stiffness=100, limit_damping=3))
    b.add_joint_force(4, JointForce(stiffness=(2.0, 1.0), damping=0.3))
    b.add_joint_force(5, JointForce(stiffness=(1.0, 2.0, 3.0), damping=(0.1, 0.2, 0.3), rest=(0.1, 0, 0)))
    b.add_joint_force(7, JointForce(stiffness=5.0, damping=0.2, lower=-0.1, upper=0.1,
                                    limit_stiffness=50, limit_damping=1))
    b.add_spring(0, (0.1, 0.2, 0.5), 5, (0.1, 0, 0.1), stiffness=40, damping=2, rest_length=0.3)
    b.add_spring(3, (0.1, 0.2, 0.5), 7, (0.1, 0, 0.1), stiffness=40, damping=2, rest_length=0.3)
    return b.build()


def _central(f, x, n, h):
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        cols.append((f(x, e) - f(x, -e)) / (2 * h))
    return np.column_stack(cols)


@pytest.mark.parametrize("seed", [3, 4])
def test_forward_dynamics_derivatives_with_force_elements_match_central_difference(seed):
    """The kernels' rhs (force elements included) against a central
    difference in the tangent space; limits engaged on some joints."""
    rng = np.random.default_rng(seed)
    model = _model_with_force_elements(rng)
    q = _kernels.normalize(model._h, model.neutral() + 0.5 * rng.normal(size=model.nq))
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    vdot, A, B, Minv = dd.forward_dynamics_derivatives(model, q, v, tau)
    assert np.allclose(vdot, _kernels.rhs(model._h, q, v, tau)[1], atol=1e-12)
    h = 1e-5
    A_fd = _central(lambda q_, e: _kernels.rhs(model._h, dd.integrate(model, q_, e), v, tau)[1], q, model.nv, h)
    B_fd = _central(lambda v_, e: _kernels.rhs(model._h, q, v_ + e, tau)[1], v, model.nv, h)
    T_fd = _central(lambda t_, e: _kernels.rhs(model._h, q, v, t_ + e)[1], tau, model.nv, h)
    assert np.abs(A - A_fd).max() < 1e-6 * max(1.0, np.abs(A).max())
    assert np.abs(B - B_fd).max() < 1e-6 * max(1.0, np.abs(B).max())
    assert np.abs(Minv - T_fd).max() < 1e-6 * max(1.0, np.abs(Minv).max())


def test_rnea_derivatives_of_universal_and_planar_joints_match_central_difference():
    rng = np.random.default_rng(5)
    model = _model_with_force_elements(rng)
    q = _kernels.normalize(model._h, model.neutral() + 0.5 * rng.normal(size=model.nq))
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    dq, dv, M = dd.rnea_derivatives(model, q, v, a)
    h = 1e-5
    dq_fd = _central(lambda q_, e: rnea(model, dd.integrate(model, q_, e), v, a), q, model.nv, h)
    dv_fd = _central(lambda v_, e: rnea(model, q, v_ + e, a), v, model.nv, h)
    assert np.abs(dq - dq_fd).max() < 1e-6 * np.abs(dq).max()
    assert np.abs(dv - dv_fd).max() < 1e-6 * np.abs(dv).max()


def test_difference_inverts_integrate_and_tangent_kinematics_match_central_difference():
    rng = np.random.default_rng(6)
    model = _model_with_force_elements(rng)
    q0 = _kernels.normalize(model._h, model.neutral() + 0.5 * rng.normal(size=model.nq))
    dq = 0.3 * rng.normal(size=model.nv)
    assert np.allclose(dd.difference(model, q0, dd.integrate(model, q0, dq)), dq, atol=1e-12)
    # d/dt of the increment: (difference(q0, q(dq) (+) v h) - ...) / 2h, differentiated in dq
    v = rng.normal(size=model.nv)
    h = 1e-6

    def rate(q_, e):
        qe = dd.integrate(model, q_, e)
        return (dd.difference(model, q_, dd.integrate(model, qe, v * h))
                - dd.difference(model, q_, dd.integrate(model, qe, -v * h))) / (2 * h)
    Aq_fd = _central(rate, q0, model.nv, 1e-4)
    Aq, Av = dd.tangent_kinematics(model, q0, v)
    assert np.abs(Aq - Aq_fd).max() < 1e-5
    assert np.array_equal(Av, np.eye(model.nv))


def test_bad_inputs_name_the_argument():
    model = _model_with_force_elements(np.random.default_rng(0))
    with pytest.raises(InputError, match="v"):
        dd.rnea_derivatives(model, model.neutral(), np.zeros(model.nv + 1), np.zeros(model.nv))
    with pytest.raises(InputError, match="q"):
        dd.aba_derivatives(model, np.full(model.nq, np.nan), np.zeros(model.nv), np.zeros(model.nv))
