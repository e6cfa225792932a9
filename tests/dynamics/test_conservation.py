"""Conservation laws: energy of an undamped pendulum chain, momentum of a
free-floating tree, unit quaternions."""
import numpy as np

from mbfmu.dynamics import (_kernels, kinetic_energy, momentum,
                            potential_energy)
from mbfmu.dynamics.integrators import DormandPrince, integrate_rk4
from chains import pendulum_chain
from trees import random_state, random_tree


def _rhs(model):
    nq = model.nq

    def f(t, x):
        qd, vd = _kernels.rhs(model._h, x[:nq], x[nq:], np.zeros(model.nv))
        return np.concatenate([qd, vd])
    return f


def _energy(model, x):
    q, v = x[:model.nq], x[model.nq:]
    return kinetic_energy(model, q, v) + potential_energy(model, q)


def test_ten_link_pendulum_energy_drift_below_1e_6_over_10_s_adaptive():
    model = pendulum_chain(10)
    x0 = np.concatenate([np.linspace(0.6, 1.4, 10), np.zeros(10)])
    dp = DormandPrince(_rhs(model), rtol=1e-11, atol=1e-12)
    e0 = _energy(model, x0)
    x = x0
    worst = 0.0
    for k in range(1, 21):
        x = dp.advance((k - 1) * 0.5, x, k * 0.5)
        worst = max(worst, abs(_energy(model, x) - e0))
    scale = abs(e0) + model.mass * 9.81 * 5.0  # energy scale: |E| plus the chain's potential range
    assert worst / scale < 1e-6
    assert dp.rejected >= 0 and dp.accepted > 100  # it really stepped adaptively


def test_free_floating_tree_conserves_linear_and_angular_momentum_and_unit_quaternions():
    rng = np.random.default_rng(3)
    model = random_tree(rng, 8, floating=True, gravity=(0, 0, 0))
    q, v = random_state(rng, model)
    L0, H0 = momentum(model, q, v)
    q1, v1 = _kernels.rk4(model._h, q, v, np.zeros(model.nv), 1e-3, 2000)
    L1, H1 = momentum(model, q1, v1)
    assert np.linalg.norm(L1 - L0) <= 1e-9 * max(np.linalg.norm(L0), 1.0)
    assert np.linalg.norm(H1 - H0) <= 1e-9 * max(np.linalg.norm(H0), 1.0)
    for i, j in enumerate(model.joints):
        if j.nq in (4, 7):
            s = model.idx_q[i] + (3 if j.nq == 7 else 0)
            assert abs(np.linalg.norm(q1[s:s + 4]) - 1) < 1e-12


def test_rk4_energy_error_falls_at_fourth_order():
    model = pendulum_chain(3)
    x0 = np.concatenate([[1.0, 0.5, -0.3], np.zeros(3)])
    e0 = _energy(model, x0)
    errs = []
    for h in (4e-3, 2e-3):
        _, x = integrate_rk4(_rhs(model), x0, 2.0, h, record=False)
        errs.append(abs(_energy(model, x) - e0))
    order = np.log2(errs[0] / errs[1])
    assert 3.3 < order < 5.5
