"""Canonical variables (Shimanovsky and Ivanov (2013)): p = M v in O(N), the O(N) sweep's dp/dt
against d(M v)/dt, and trajectories in (q, p) against (q, v)."""
import numpy as np
import pytest

from mbfmu.dynamics import _kernels, aba, crba, kinetic_energy, potential_energy
from mbfmu.dynamics.canonical import canonical_derivatives, generalized_momentum, velocity_from_momentum
from mbfmu.dynamics.integrators import DormandPrince, symplectic_euler_canonical
from chains import pendulum_chain
from trees import random_state, random_tree


@pytest.mark.parametrize("seed,n,floating", [(0, 4, False), (1, 12, True), (2, 30, False)])
def test_momentum_equals_mass_matrix_times_velocity(seed, n, floating):
    rng = np.random.default_rng(seed)
    model = random_tree(rng, n, floating)
    q, v = random_state(rng, model)
    p = generalized_momentum(model, q, v)
    assert np.allclose(p, crba(model, q) @ v, rtol=1e-10, atol=1e-10)
    assert np.allclose(velocity_from_momentum(model, q, p), v, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("seed,n,floating", [(3, 3, False), (4, 10, True), (5, 20, False)])
def test_sweep_pdot_equals_time_derivative_of_m_v(seed, n, floating):
    """dp/dt = M a + dM/dt v, with a from aba and dM/dt by a central difference."""
    rng = np.random.default_rng(seed)
    model = random_tree(rng, n, floating)
    q, v = random_state(rng, model)
    tau = rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.nbodies, 6))
    p = generalized_momentum(model, q, v)
    qdot, pdot, v_sweep = canonical_derivatives(model, q, p, tau, f_ext)
    a = aba(model, q, v, tau, f_ext)
    h = 1e-6
    qp = _kernels.integrate(model._h, q, v, h)
    qm = _kernels.integrate(model._h, q, v, -h)
    Mdot = (crba(model, qp) - crba(model, qm)) / (2 * h)
    expected = crba(model, q) @ a + Mdot @ v
    assert np.allclose(v_sweep, v, rtol=1e-8, atol=1e-9)
    assert np.allclose(pdot, expected, rtol=1e-6, atol=1e-6 * max(1, np.abs(expected).max()))
    assert np.allclose(qdot, _kernels.qdot(model._h, q, v))


def test_integrating_q_p_and_q_v_gives_the_same_trajectory():
    rng = np.random.default_rng(8)
    model = random_tree(rng, 6, allow_quaternions=False)
    q0, v0 = random_state(rng, model)
    nq = model.nq
    tau = rng.normal(size=model.nv)

    def f_qv(t, x):
        qd, vd = _kernels.rhs(model._h, x[:nq], x[nq:], tau)
        return np.concatenate([qd, vd])

    def f_qp(t, x):
        qd, pd, _ = _kernels.sweep(model._h, x[:nq], x[nq:], tau)
        return np.concatenate([qd, pd])

    xv = DormandPrince(f_qv, rtol=1e-11, atol=1e-12).advance(0, np.r_[q0, v0], 2.0)
    xp = DormandPrince(f_qp, rtol=1e-11, atol=1e-12).advance(
        0, np.r_[q0, generalized_momentum(model, q0, v0)], 2.0)
    assert np.allclose(xp[:nq], xv[:nq], atol=1e-7)
    assert np.allclose(velocity_from_momentum(model, xp[:nq], xp[nq:]), xv[nq:], atol=1e-6)


def test_symplectic_euler_energy_error_stays_bounded():
    """Over 20 s the symplectic step's energy error does not grow: the error
    in the last quarter is no larger than in the first quarter (explicit Euler
    would drift monotonically)."""
    model = pendulum_chain(2)
    q = np.array([1.2, -0.4])
    p = generalized_momentum(model, q, np.zeros(2))
    tau = np.zeros(2)

    def energy(q, p):
        v = velocity_from_momentum(model, q, p)
        return kinetic_energy(model, q, v) + potential_energy(model, q)

    e0 = energy(q, p)
    errs = []
    for _ in range(4000):
        q, p = symplectic_euler_canonical(model, q, p, tau, 5e-3)
        errs.append(energy(q, p) - e0)
    errs = np.abs(errs)
    assert errs.max() < 0.05 * abs(e0) + 0.05
    assert errs[-1000:].max() < 1.5 * errs[:1000].max()


def test_compiled_canonical_rk4_equals_the_python_rk4_over_the_sweep():
    """_kernels.rk4_canonical (with the model's force elements) against the
    same RK4 written in Python around the canonical derivatives."""
    from mbfmu.dynamics import JointForce, ModelBuilder, Revolute
    from mbfmu.plant.multibody import MultibodyPlant
    from mbfmu.plant import Plant
    b = ModelBuilder()
    b.add_body("a", 0, Revolute(axis=(0, 1, 0)), 1.0, (0.3, 0, 0), np.eye(3) * 0.02)
    b.add_body("b", 1, Revolute(axis=(0, 0, 1)), 0.5, (0.2, 0.1, 0), np.eye(3) * 0.01, p_PJ=(0.6, 0, 0))
    b.add_joint_force("a", JointForce(stiffness=3.0, damping=0.4))
    b.add_spring(0, (0, 0, 0.5), 2, (0.1, 0, 0), 20.0, 0.3, 0.2)
    model = b.build()
    plant = MultibodyPlant(model, np.eye(2), q0=[0.4, -0.3], v0=[0.5, 1.0], canonical=True)
    x0 = plant.initial_state()
    u = np.array([0.2, -0.1])
    compiled = plant.advance(0.0, x0, u, 0.05)
    python = Plant.advance(plant, 0.0, x0, u, 0.05)
    np.testing.assert_allclose(compiled, python, rtol=1e-12, atol=1e-13)
