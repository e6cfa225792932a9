"""Exact directional derivatives of a flexible plant's native FMU (#24.2,
``csrc/flex_dirder.c``): flexible_arm (two assumed-modes beams, 3 shapes
each, geometric stiffening) at random deflected states.

The Python plant's linearization runs these same C tangents (#33), and its
right-hand side is the compiled kernel (not complex-safe), so the independent oracle is Richardson-extrapolated central
differences of the Python plant's derivatives and outputs (tests/native/oracle.py):
steps h = 5e-4 max(1, |z|) in the state (a second table at 2h estimates the
oracle's own error, asserted below 1e-10 of each block's scale) and 0.1 in the
inputs, in which the plant is affine (round-off only). The FMU's directional
derivatives equal it to 1e-10 of each block's largest entry (measured at four
states: A 6e-14 to 3e-12, within the oracle's own error estimate, B 5e-13 to
8e-12, C 2e-15 to 1e-14; D is zero: the outputs do not read the inputs), and
equal the Python plant's linearization (mbfmu.control.linearization.linearize,
central differences) within its error; Co-Simulation's (at a state a CS run
reaches) and FMI 3's directional and adjoint derivatives equal Model
Exchange's.
"""
from __future__ import annotations

import zipfile
from xml.etree import ElementTree

import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from mbfmu.control.linearization import linearize
from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.plant.library import load_plant

from .fmi3_jacobian import fmi3_jacobian
from .fmi_instances import cs2_slave
from .oracle import richardson_jacobian

EXACT_RTOL = 1e-10
H_STATE, H_INPUT = 5e-4, 0.1


@pytest.fixture(scope="module")
def plant():
    return load_plant("flexible_arm")


@pytest.fixture(scope="module")
def fmus(native_fmus):
    return {fmi: native_fmus("flexible_arm", platforms=("linux64",), fmi_version=fmi) for fmi in (2, 3)}


def _deflected(plant, seed: int):
    """A random state with the links deflected (modal coordinates of a few mm, modal
    rates of cm/s, joint angles and rates of order 1) and random torques."""
    rng = np.random.default_rng(seed)
    nq = plant.nq
    x = plant.initial_state().astype(float)
    scale = np.r_[np.ones(2), np.full(nq - 2, 3e-3), np.ones(2), np.full(nq - 2, 5e-2)]
    x += scale * rng.standard_normal(x.size)
    return x, rng.standard_normal(len(plant.inputs))


def _oracle(plant, x, u, h):
    """[A B; C D] of the Python plant by Richardson extrapolation (state step h, input step H_INPUT)."""
    def f(xs, uu):
        return np.r_[plant.derivatives(0.0, xs, uu), plant.outputs_at(0.0, xs, uu)]
    Jx = richardson_jacobian(lambda z: f(z, u), x, h)
    Ju = richardson_jacobian(lambda w: f(x, w), u, H_INPUT)
    return np.hstack([Jx, Ju])


def _blocks(n):
    rows, cols = (slice(0, n), slice(n, None)), (slice(0, n), slice(n, None))
    return [(r, c) for r in rows for c in cols]


@pytest.mark.parametrize("seed", (1, 2))
def test_flexible_arm_directional_derivatives_are_exact(seed, plant, fmus):
    x, u = _deflected(plant, seed)
    assert np.abs(x[2:plant.nq]).max() > 1e-3  # deflected
    with ModelExchangeInstance(fmus[2]) as inst:
        assert inst.provides_directional and inst.n == x.size
        dd = jacobians(inst, x, u, DIRECTIONAL)
    assert dd.method == DIRECTIONAL
    np.testing.assert_allclose(dd.xdot0, plant.derivatives(0.0, x, u), rtol=1e-12, atol=1e-12)
    got = np.block([[dd.A, dd.B], [dd.C, dd.D]])
    J1, J2 = _oracle(plant, x, u, H_STATE), _oracle(plant, x, u, 2 * H_STATE)
    assert np.abs(J1[:x.size, :x.size]).max() > 1e6  # the stiff beam modes are in
    for r, c in _blocks(x.size):
        scale = np.abs(J1[r, c]).max()
        if scale == 0.0:  # D: the outputs do not read the inputs
            assert np.all(got[r, c] == 0.0)
            continue
        assert np.abs(J1[r, c] - J2[r, c]).max() < 1e-10 * scale, (r, c)
        np.testing.assert_allclose(got[r, c], J1[r, c], rtol=0, atol=EXACT_RTOL * scale)
    # and the Python plant's own linearization: the same C tangents (#33; its central
    # differences were up to 2.5e-6 of max |A| off in the stiff modes' rows)
    ref = linearize(plant, x, u)
    assert ref.linearization.method == "analytic" and ref.linearization.output_method == "analytic"
    for mine, want in ((dd.A, ref.A), (dd.B, ref.B), (dd.C, ref.C), (dd.D, ref.D)):
        np.testing.assert_allclose(mine, want, rtol=0, atol=1e-14 * max(np.abs(want).max(), 1e-300))


def test_flexible_arm_fmus_claim_derivatives_and_validate(fmus):
    md = read_model_description(str(fmus[2]))
    assert md.coSimulation.providesDirectionalDerivative and md.modelExchange.providesDirectionalDerivative
    with zipfile.ZipFile(fmus[3]) as z:  # fmpy 0.3 reads FMI 2's attribute name: read FMI 3's from the XML
        root = ElementTree.fromstring(z.read("modelDescription.xml"))
    for tag in ("ModelExchange", "CoSimulation"):
        flags = root.find(tag).attrib
        assert flags["providesDirectionalDerivatives"] == flags["providesAdjointDerivatives"] == "true"
    for path in fmus.values():
        assert validate_fmu(str(path)) == []


def test_co_simulation_directional_derivatives_at_a_deflected_state_equal_model_exchange(plant, fmus):
    """A CS run under joint torques deflects the links; there fmi2GetDirectionalDerivative
    of the CS instance gives Model Exchange's columns at the same state."""
    path = fmus[2]
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    with ModelExchangeInstance(path) as inst:
        unknowns, knowns = inst.der_vrs + inst.output_vrs, inst.state_vrs + inst.input_vrs
        nxc = inst.n
    with cs2_slave(path) as slave:
        u = [2.0, -1.0]
        slave.setReal(knowns[nxc:], u)
        t = 0.0
        for _ in range(10):
            slave.doStep(currentCommunicationPoint=t, communicationStepSize=0.01)
            t += 0.01
        x = np.array(slave.getReal([vr[f"states.{s.name}"] for s in plant.states]))
        J = np.column_stack([slave.getDirectionalDerivative(unknowns, [k], [1.0]) for k in knowns])
        slave.terminate()
    assert np.abs(x[2:plant.nq]).max() > 1e-4  # deflected
    with ModelExchangeInstance(path) as inst:
        me = jacobians(inst, x, np.array(u), DIRECTIONAL)
    np.testing.assert_allclose(J, np.block([[me.A, me.B], [me.C, me.D]]), rtol=0, atol=1e-14 * np.abs(J).max())
    # the outputs' derivatives with respect to the inputs: the outputs do not read them
    assert np.all(J[nxc:, nxc:] == 0.0)


def test_fmi3_directional_and_adjoint_derivatives_equal_fmi2(plant, fmus):
    """At a deflected state set on both: FMI 3's getDirectionalDerivative equals FMI 2's,
    and getAdjointDerivative(w) = J^T w."""
    x, u = _deflected(plant, 3)
    with ModelExchangeInstance(fmus[2]) as inst:
        me = jacobians(inst, x, u, DIRECTIONAL)
    J2 = np.block([[me.A, me.B], [me.C, me.D]])
    w = np.random.default_rng(3).standard_normal(J2.shape[0])
    J3, adj = fmi3_jacobian(fmus[3], x, u, w=w)
    assert J3.shape == J2.shape
    np.testing.assert_allclose(J3, J2, rtol=0, atol=1e-14 * np.abs(J2).max())
    np.testing.assert_allclose(adj, J3.T @ w, rtol=1e-13, atol=1e-13 * np.abs(J3.T @ w).max())


def test_central_differences_of_the_fmu_approach_its_directional_derivatives(plant, fmus):
    """The FMU's own central differences (fmpy, steps eps^(1/3) max(1, |z|)) within their
    truncation error in the stiff modes' rows (measured 5e-7 of max |A| here, as linearize's)."""
    x, u = _deflected(plant, 4)
    with ModelExchangeInstance(fmus[2]) as inst:
        dd = jacobians(inst, x, u, DIRECTIONAL)
        fd = jacobians(inst, x, u, CENTRAL)
    assert fd.method == CENTRAL
    for got, want in ((dd.A, fd.A), (dd.B, fd.B), (dd.C, fd.C), (dd.D, fd.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * (1 + np.abs(want).max()))


def _same(a, b):
    """Bit for bit."""
    return np.array_equal(np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64))


def _columns(inst):
    return np.column_stack([inst.directional_column(j) for j in range(inst.n + inst.m)])


def _set_parameter(inst, name, value):
    """A tunable parameter in event mode (the FMU refuses them in continuous-time mode)."""
    vr = {v.name: v.valueReference for v in inst.md.modelVariables}[name]
    inst.fmu.enterEventMode()
    inst.fmu.setReal([vr], [value])
    while inst.fmu.newDiscreteStates()[0]:
        pass
    inst.fmu.enterContinuousTimeMode()


def _fresh(path, x, u, params=()):
    with ModelExchangeInstance(path) as inst:
        for name, value in params:
            _set_parameter(inst, name, value)
        inst.set_point(x, u)
        return _columns(inst)


def test_directional_derivatives_follow_every_change_of_the_point(plant, fmus):
    """flex_dirder.c caches the seed-free forward solve and the factor of the public mass
    matrix at a point: after each change (a state, one state by one ulp, an input, the
    state and back after another point's derivatives, a tunable parameter at the same
    state and inputs), the first directional derivatives equal a fresh instance's."""
    path = fmus[2]
    (x1, u1), (x2, u2) = _deflected(plant, 4), _deflected(plant, 5)
    x3 = x2.copy()
    x3[3] = np.nextafter(x3[3], np.inf)  # a modal coordinate, one ulp
    with ModelExchangeInstance(path) as inst:
        inst.set_point(x1, u1)
        J1 = _columns(inst)
        assert _same(J1, _fresh(path, x1, u1))
        # the first joint turns about the gravity: the accelerations do not read its angle, exactly
        # (the gravity's tangent was left unset in the flexible path: denormal stack garbage here)
        n, nq = inst.n, plant.nq
        assert np.all(J1[nq:n, 0] == 0.0)
        steps = [(x2, u1, ()), (x3, u1, ()), (x3, u2, ())]
        for x, u, params in steps:
            inst.set_point(x, u)
            got = _columns(inst)
            assert not np.array_equal(got, J1)
            assert _same(got, _fresh(path, x, u)), (x, u)
        # another point's right-hand side in between, then back: the cached pieces, not the kernel's leftovers
        inst.set_point(x2, u2)
        inst.evaluate()
        inst.set_point(x1, u1)
        assert _same(_columns(inst), J1)
        # a parameter at an unchanged state and inputs (set again: re-packing resets the state)
        inst.set_point(x2, u2)
        before = _columns(inst)
        for params in ((("damping_ratio", 0.05),), (("damping_ratio", 0.05), ("payload_mass", 0.7))):
            _set_parameter(inst, *params[-1])
            inst.set_point(x2, u2)
            got = _columns(inst)
            assert not np.array_equal(got, before)
            assert _same(got, _fresh(path, x2, u2, params)), params
            before = got
