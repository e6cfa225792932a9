"""The exact derivatives of the forward dynamics, the native runtime's C tangents
(mbfmu.dynamics.tangents.packed_jacobian, which mbfmu.linearize and the native
FMU's directional derivatives run), against Pinocchio's ``computeABADerivatives``
(Carpentier & Mansard, RSS 2018) and against central differences in the tangent
space; and the tangent chart of the configuration space
(mbfmu.dynamics.configuration_chart)."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.dynamics import (FreeFlyer, JointForce, ModelBuilder, Planar, Prismatic, Revolute,
                            Spherical, Universal, _kernels)
from mbfmu.dynamics import configuration_chart as chart
from mbfmu.dynamics.spatial import rot_axis
from mbfmu.dynamics.tangents import packed_jacobian
from mbfmu.dynamics.urdf import load_urdf
from mbfmu.fmu.native.pack import describe
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.signals import Signal

from pinocchio_bridge import to_pinocchio
from random_trees import random_inertia, random_urdf

import pinocchio as pin  # noqa: E402  (test dependency: the oracle)


def _sym(Minv_upper: np.ndarray) -> np.ndarray:
    return np.triu(Minv_upper) + np.triu(Minv_upper, 1).T


class TorquePlant(MultibodyPlant):
    """A bare model as a plant: inputs the generalized forces, no outputs."""
    name = "bare_model"

    def __init__(self, model):
        super().__init__(model, np.eye(model.nv))
        self.inputs = tuple(Signal(f"tau[{k + 1}]", "1", "generalized force", kind="input")
                            for k in range(model.nv))


def _packed(model):
    desc = describe(TorquePlant(model), outputs=False)
    return desc.structure, desc.d, desc.offsets


def c_tangents(model, q, v, tau):
    """``d(vdot)/d(dq)`` (in the tangent chart), ``d(vdot)/dv`` and ``d(vdot)/dtau``
    of the kernels' rhs by the C tangents, the model packed as the native FMU packs it
    (a plant whose inputs are the generalized forces, no outputs)."""
    J, why = packed_jacobian(*_packed(model), np.r_[q, v], tau)
    assert why is None, why
    nq, nv = model.nq, model.nv
    rows = slice(nq, nq + nv)
    return (J[rows, :nq] @ chart.configuration_jacobian(model, q), J[rows, nq:nq + nv],
            J[rows, nq + nv:])


def _compare_with_pinocchio(model, pm, pq, pv, q, v, tau, tol=1e-12):
    A, B, Minv = c_tangents(model, q, v, tau)
    data = pm.createData()
    pin.computeABADerivatives(pm, data, q[pq], v[pv], tau[pv])
    scale = max(1.0, np.abs(data.ddq_dq).max(), np.abs(data.ddq_dv).max(), np.abs(data.Minv).max())
    ix = np.ix_(pv, pv)
    assert np.abs(A[ix] - data.ddq_dq).max() < tol * scale
    assert np.abs(B[ix] - data.ddq_dv).max() < tol * scale
    assert np.abs(Minv[ix] - _sym(data.Minv)).max() < tol * scale


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_c_tangents_match_pinocchio_aba_derivatives_on_random_urdf_trees(seed):
    rng = np.random.default_rng(seed)
    text = random_urdf(rng, 9)
    model = load_urdf(text)
    pm = pin.buildModelFromXML(text)
    q = rng.uniform(-2, 2, model.nq)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    ident = np.arange(model.nv)
    _compare_with_pinocchio(model, pm, ident, ident, q, v, tau)


def test_c_tangents_match_pinocchio_aba_derivatives_on_ur5():
    from mbfmu.plant.robots import robot_urdf
    path = robot_urdf("ur5")
    model = load_urdf(path)
    pm = pin.buildModelFromUrdf(str(path))
    assert model.nv == pm.nv == 6
    rng = np.random.default_rng(11)
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, 6)
        v = rng.normal(size=6)
        tau = 10 * rng.normal(size=6)
        ident = np.arange(6)
        _compare_with_pinocchio(model, pm, ident, ident, q, v, tau)


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


def test_c_tangents_match_pinocchio_with_ball_and_free_joints():
    """Quaternion joints: derivatives with respect to the tangent increment
    (Pinocchio's convention, q (+) dq = q Exp(dq))."""
    rng = np.random.default_rng(7)
    model = _tree_with_ball_and_free_joints(rng)
    pm, pq, pv = to_pinocchio(model)
    for _ in range(2):
        q = _kernels.normalize(model._h, model.neutral() + 0.6 * rng.normal(size=model.nq))
        _compare_with_pinocchio(model, pm, pq, pv, q, rng.normal(size=model.nv), rng.normal(size=model.nv))


def _model_with_force_elements(rng, planar=False):
    """Every joint type the C tangents carry (and a planar joint, which they do not),
    joint springs/dampers/active limits, point springs."""
    b = ModelBuilder(gravity=(0.3, -1.0, -9.81))
    joints = [FreeFlyer(), Spherical(), Revolute(axis=(0.3, 1, 0.2)), Universal(axis1=(1, 0, 0), axis2=(0, 1, 0.3)),
              Planar() if planar else Revolute(axis=(0, 0, 1)), Prismatic(axis=(1, 1, 0)), Spherical()]
    parents = ["world", 1, 2, 2, 4, 3, 6]
    for k, (j, p) in enumerate(zip(joints, parents)):
        mass, com, I = random_inertia(rng)
        b.add_body(f"b{k + 1}", p, j, mass=mass, com=com, inertia=I,
                   R_PJ=rot_axis(rng.normal(size=3), rng.uniform(0, 3)), p_PJ=rng.uniform(-0.4, 0.4, 3))
    b.add_joint_force(2, JointForce(stiffness=3.0, damping=0.4, rest=(0.1, 0, 0.2)))
    b.add_joint_force(3, JointForce(stiffness=2.0, damping=0.1, lower=-0.2, upper=0.2,
                                    limit_stiffness=100, limit_damping=3))
    b.add_joint_force(4, JointForce(stiffness=(2.0, 1.0), damping=0.3))
    if planar:
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
def test_c_tangents_with_force_elements_match_central_difference(seed):
    """The kernels' rhs (springs, dampers, limits engaged on some joints, point
    springs) against a central difference in the tangent space."""
    rng = np.random.default_rng(seed)
    model = _model_with_force_elements(rng)
    q = _kernels.normalize(model._h, model.neutral() + 0.5 * rng.normal(size=model.nq))
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    A, B, Minv = c_tangents(model, q, v, tau)
    h = 1e-5
    A_fd = _central(lambda q_, e: _kernels.rhs(model._h, chart.integrate(model, q_, e), v, tau)[1], q, model.nv, h)
    B_fd = _central(lambda v_, e: _kernels.rhs(model._h, q, v_ + e, tau)[1], v, model.nv, h)
    T_fd = _central(lambda t_, e: _kernels.rhs(model._h, q, v, t_ + e)[1], tau, model.nv, h)
    assert np.abs(A - A_fd).max() < 1e-6 * max(1.0, np.abs(A).max())
    assert np.abs(B - B_fd).max() < 1e-6 * max(1.0, np.abs(B).max())
    assert np.abs(Minv - T_fd).max() < 1e-6 * max(1.0, np.abs(Minv).max())


def test_a_planar_joint_has_no_c_tangent_and_says_so():
    model = _model_with_force_elements(np.random.default_rng(5), planar=True)
    J, why = packed_jacobian(*_packed(model), np.r_[model.neutral(), np.zeros(model.nv)], np.zeros(model.nv))
    assert J is None and "planar" in why.lower()


def test_difference_inverts_integrate_and_tangent_kinematics_match_central_difference():
    rng = np.random.default_rng(6)
    model = _model_with_force_elements(rng, planar=True)
    q0 = _kernels.normalize(model._h, model.neutral() + 0.5 * rng.normal(size=model.nq))
    dq = 0.3 * rng.normal(size=model.nv)
    assert np.allclose(chart.difference(model, q0, chart.integrate(model, q0, dq)), dq, atol=1e-12)
    # d/dt of the increment: (difference(q0, q(dq) (+) v h) - ...) / 2h, differentiated in dq
    v = rng.normal(size=model.nv)
    h = 1e-6

    def rate(q_, e):
        qe = chart.integrate(model, q_, e)
        return (chart.difference(model, q_, chart.integrate(model, qe, v * h))
                - chart.difference(model, q_, chart.integrate(model, qe, -v * h))) / (2 * h)
    Aq_fd = _central(rate, q0, model.nv, 1e-4)
    Aq, Av = chart.tangent_kinematics(model, q0, v)
    assert np.abs(Aq - Aq_fd).max() < 1e-5
    assert np.array_equal(Av, np.eye(model.nv))
