"""Algorithm identities on random trees with every joint type
(spatial_v2 / Pinocchio style): each algorithm is checked against another."""
import numpy as np
import pytest

from mbfmu.dynamics import (_kernels, aba, coriolis_matrix, coriolis_torques, crba, gravity_torques,
                            kinetic_energy, minv, nonlinear_effects, rnea)
from trees import random_state, random_tree

CASES = [(seed, n, floating) for seed, n, floating in
         [(0, 1, False), (1, 3, False), (2, 8, True), (3, 15, False), (4, 25, True), (5, 40, False)]]


@pytest.mark.parametrize("seed,n,floating", CASES)
def test_aba_inverts_rnea(seed, n, floating):
    rng = np.random.default_rng(seed)
    model = random_tree(rng, n, floating)
    q, v = random_state(rng, model)
    a = rng.normal(size=model.nv)
    assert np.allclose(aba(model, q, v, rnea(model, q, v, a)), a, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed,n,floating", CASES)
def test_rnea_equals_mass_matrix_times_a_plus_bias(seed, n, floating):
    rng = np.random.default_rng(seed + 100)
    model = random_tree(rng, n, floating)
    q, v = random_state(rng, model)
    a = rng.normal(size=model.nv)
    M = crba(model, q)
    assert np.allclose(rnea(model, q, v, a), M @ a + nonlinear_effects(model, q, v), rtol=1e-9, atol=1e-9)
    assert np.allclose(nonlinear_effects(model, q, v), coriolis_torques(model, q, v) + gravity_torques(model, q),
                       atol=1e-9)


@pytest.mark.parametrize("seed,n,floating", CASES)
def test_mass_matrix_symmetric_positive_definite(seed, n, floating):
    rng = np.random.default_rng(seed + 200)
    model = random_tree(rng, n, floating)
    q, v = random_state(rng, model)
    M = crba(model, q)
    assert np.allclose(M, M.T, atol=1e-12 * np.abs(M).max())
    assert np.linalg.eigvalsh(M).min() > 0
    assert kinetic_energy(model, q, v) == pytest.approx(0.5 * v @ M @ v, rel=1e-10)
    b = rng.normal(size=model.nv)
    assert np.allclose(minv(model, q, b), np.linalg.solve(M, b), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("seed,n", [(0, 2), (1, 6), (2, 12)])
def test_mdot_minus_2c_is_skew_and_c_gives_coriolis_torques(seed, n):
    """dM/dt by a central difference of crba along dq/dt; C from the
    Jacobian-based Coriolis matrix."""
    rng = np.random.default_rng(seed + 300)
    model = random_tree(rng, n)
    q, v = random_state(rng, model)
    C = coriolis_matrix(model, q, v)
    assert np.allclose(C @ v, coriolis_torques(model, q, v), rtol=1e-9, atol=1e-9)
    h = 1e-6
    qp = _kernels.normalize(model._h, _kernels.integrate(model._h, q, v, h))
    qm = _kernels.normalize(model._h, _kernels.integrate(model._h, q, v, -h))
    Mdot = (crba(model, qp) - crba(model, qm)) / (2 * h)
    N = Mdot - 2 * C
    assert np.abs(N + N.T).max() < 1e-6 * max(1.0, np.abs(Mdot).max())


def test_universal_and_planar_equal_chains_of_simple_joints():
    """A universal joint is two revolute joints through a massless body; a
    planar joint is prismatic x, prismatic y and revolute z."""
    from mbfmu.dynamics import ModelBuilder, Planar, Prismatic, Revolute, Universal
    from mbfmu.dynamics.spatial import rpy
    from random_trees import random_inertia
    rng = np.random.default_rng(11)
    a1 = np.array([0.3, -0.2, 0.9]); a1 /= np.linalg.norm(a1)
    a2 = np.cross(a1, [1.0, 0, 0]); a2 /= np.linalg.norm(a2)
    inert = [random_inertia(rng) for _ in range(2)]
    R0 = rpy(0.2, -0.4, 0.7)
    compact = ModelBuilder()
    compact.add_body("u", 0, Universal(axis1=a1, axis2=a2), *inert[0], R_PJ=R0, p_PJ=(0.1, 0.2, 0.3))
    compact.add_body("p", 1, Planar(), *inert[1], p_PJ=(0.3, 0, -0.2))
    chain = ModelBuilder()
    chain.add_body("u1", 0, Revolute(axis=a1), R_PJ=R0, p_PJ=(0.1, 0.2, 0.3))
    chain.add_body("u", 1, Revolute(axis=a2), *inert[0])
    chain.add_body("px", 2, Prismatic(axis=(1, 0, 0)), p_PJ=(0.3, 0, -0.2))
    chain.add_body("py", 3, Prismatic(axis=(0, 1, 0)))
    chain.add_body("p", 4, Revolute(axis=(0, 0, 1)), *inert[1])
    m1, m2 = compact.build(), chain.build()
    q = rng.normal(size=5)
    v = rng.normal(size=5)
    tau = rng.normal(size=5)
    assert np.allclose(aba(m1, q, v, tau), aba(m2, q, v, tau), rtol=1e-10, atol=1e-10)
    assert np.allclose(crba(m1, q), crba(m2, q), rtol=1e-10, atol=1e-12)
