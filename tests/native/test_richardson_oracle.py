"""The Richardson oracle (tests/native/oracle.py) for exact directional
derivatives of plants without an exact linearization (#24.2, flexible_arm):
validated against the exact analytic directional derivatives of a rigid
native FMU, then applied to flexible_arm's native FMU: halving its step
changes it by less than 1e-10 (relative to max |J|), the FMU's exact
directional derivatives (csrc/flex_dirder.c) equal it within 1e-10, and its
central-difference linearization is within 1e-6 of it."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.plant.library import load_plant

from .oracle import richardson_jacobian


@pytest.fixture
def fmu_of(native_fmus):
    return lambda name: native_fmus(name, platforms=("linux64",))


def _point(plant, inst, seed):
    rng = np.random.default_rng(seed)
    x = plant.initial_state().astype(float)[:inst.n]
    x += 0.3 * rng.standard_normal(x.size)
    return x, plant.default_inputs() + rng.standard_normal(inst.m)


def _oracle(inst, x, u, h0=2e-3):
    """[A B; C D] of the FMU's own derivatives and outputs by the oracle."""
    def f(z):
        inst.set_point(z[:inst.n], z[inst.n:])
        return np.concatenate(inst.evaluate())
    J = richardson_jacobian(f, np.concatenate([x, u]), h0)
    inst.set_point(x, u)
    return J


def _full(jac):
    return np.block([[jac.A, jac.B], [jac.C, jac.D]])


def test_oracle_equals_exact_directional_derivatives_of_a_rigid_fmu(fmu_of):
    plant = load_plant("rigid_arm")
    with ModelExchangeInstance(fmu_of("rigid_arm")) as inst:
        assert inst.provides_directional
        for seed in (1, 2):
            x, u = _point(plant, inst, seed)
            exact = _full(jacobians(inst, x, u, DIRECTIONAL))
            J = _oracle(inst, x, u)
            np.testing.assert_allclose(J, exact, rtol=0, atol=1e-10 * np.abs(exact).max())


@pytest.mark.parametrize("seed", (1, 2))
def test_flexible_arm_directional_and_central_difference_linearizations_within_the_oracle(fmu_of, seed):
    plant = load_plant("flexible_arm")
    with ModelExchangeInstance(fmu_of("flexible_arm")) as inst:
        assert inst.provides_directional
        x, u = _point(plant, inst, seed)
        J = _oracle(inst, x, u)
        np.testing.assert_allclose(_oracle(inst, x, u, 1e-3), J, rtol=0, atol=1e-10 * np.abs(J).max())
        np.testing.assert_allclose(_full(jacobians(inst, x, u, DIRECTIONAL)), J, rtol=0,
                                   atol=1e-10 * np.abs(J).max())
        cd = jacobians(inst, x, u, CENTRAL)
        assert cd.method == CENTRAL
        np.testing.assert_allclose(_full(cd), J, rtol=0, atol=1e-6 * np.abs(J).max())
