"""``mbfmu.linearize`` is exact (#33 §2): its A, B, C and D come from the native
runtime's C tangents (``csrc/dirder.c``, called through
``mbfmu.dynamics.tangents``), the implementation the native FMU's directional
derivatives run.

For the five library plants and UR5, at deflected states (the flexible arm's
beams bent, the crash occupant's seat contacts pressed and belts loaded
inside the pulse, the satellite's latches engaged, the others displaced and
moving):

* each block equals a Richardson-extrapolated central-difference oracle of
  the Python plant's own ``derivatives`` and ``outputs_at`` (an independent
  computation: no analytic derivative) to 1e-9 of the block's scale; the
  oracle's own error, estimated at twice its steps, must be below 1e-10 of
  that scale;
* each block equals the native FMU's ``fmi2GetDirectionalDerivative`` to
  1e-14 of its scale (the same C code on the same packed description; the
  satellite's at the state its co-simulation reaches with every latch
  engaged, since a host cannot set its latch flags).

The rows of A and B and the columns of A of discrete states (latch flags, the
HIC recorder's history and running maximum) are zero: they change only at
events. The configuration
rows of a quaternion plant's tangent chart are the chart's kinematics
(``mbfmu.dynamics.configuration_chart.tangent_kinematics``, tested in
``tests/dynamics``); the tangents' own configuration rows are checked in the
plant's raw coordinates.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fmpy import read_model_description

import mbfmu
from mbfmu.control.linearization import exact_jacobian, state_jacobians
from mbfmu.control.fmu_jacobians import DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.dynamics.algorithms import element_forces
from mbfmu.fmu.builder import build_fmu
from mbfmu.fmu.native.model_exchange import continuous_states
from mbfmu.plant.library import load_plant

from .fmi_instances import cs2_slave
from .oracle import richardson_jacobian

PLANTS = ("rigid_arm", "flexible_arm", "satellite", "canonical_2body", "crash_occupant", "ur5")
RTOL = 1e-9          # of each block's scale, against the oracle
ORACLE_SELF = 1e-10  # the oracle's own error, estimated from its steps h against 2h
NATIVE_RTOL = 1e-14  # against the native FMU
# the oracle's relative step: the crash occupant's contacts (1e5 N/m) and belts switch
# within a few mm, so its steps stay below them
# the oracle's relative steps of the states and of the inputs, and its levels: the crash
# occupant's contacts (1e5 N/m) and belts switch within mm, so its state steps stay small,
# while its dynamics is affine in the input (round-off of its 1e5 m/s2 rates then asks a
# large input step); the flexible arm's stiff beam modes need a fourth level
H0 = {"crash_occupant": (1e-4, 1e-2, 3), "flexible_arm": (1e-3, 1e-3, 4)}


def _deflected(name: str):
    """(plant, t, x, u) at a deflected state of the library plant ``name``."""
    plant = load_plant(name)
    rng = np.random.default_rng(7)
    u = plant.default_inputs() + rng.standard_normal(len(plant.inputs))
    x = plant.initial_state().astype(float)
    t = 0.0
    if name == "flexible_arm":  # torque steps bend the links (their modal coordinates)
        u = np.array([2.0, -1.0])
        x = plant.advance(0.0, x, u, 0.05)
        tables = plant.flexible_system.flex_tables  # each beam's first modal coordinate, its count
        eta = np.concatenate([np.arange(b, b + k) for b, k in zip(tables["bq"], tables["bnm"])])
        assert eta.size and np.abs(x[eta]).max() > 1e-5, "beams not bent"
    elif name == "crash_occupant":  # inside the pulse: seat pressed, belts loaded
        u, t = np.array([-30.0]), 0.05
        for k in range(50):
            x = plant.advance(k * 1e-3, x, u, 1e-3)
        m = plant.model
        ef = element_forces(m, x[:m.nq], x[m.nq:m.nq + m.nv])
        assert np.sum(np.asarray(ef.penetration) > 0) >= 1, "no contact pressed"
        assert np.sum(np.asarray(ef.cable_tension) > 0) >= 1, "no belt loaded"
    else:
        n = plant.model.nq + plant.model.nv
        x[:n] += 0.3 * rng.standard_normal(n)
        if name == "satellite":  # every latch engaged, the hinges a little off their stops
            nl = plant.n_hinges
            x[n:n + nl] = 1.0
            x[plant._hinge_iq] = 0.02 * rng.standard_normal(nl)
        x = plant.normalize_state(x)
    return plant, t, x, u


@pytest.fixture(scope="module")
def linearized():
    cache = {}

    def get(name):
        if name not in cache:
            plant, t, x, u = _deflected(name)
            sys = mbfmu.linearize(plant, x, u, t=t)
            cache[name] = plant, t, x, u, sys
        return cache[name]
    return get


def _chart_jacobian(plant, t, x, u) -> np.ndarray:
    """dx/dz of the linear model's state chart at x (tangent increments for quaternions)."""
    return state_jacobians(plant, x, u, t)[4].state_jacobian()


def _layout(plant, sys):
    """(nq, nxc, discrete chart columns, first chart row after the configuration, nzc)."""
    lin = sys.linearization
    nx, nxc = len(plant.states), continuous_states(plant)
    nq = plant.model.nq if hasattr(plant, "model") and lin.tangent else 0
    n = sys.nstates
    nzc = n - (nx - nxc)
    r0 = plant.model.nv if lin.tangent else 0  # chart rows before the dynamics rows compared
    return nq, nxc, nzc, r0, n


@pytest.mark.parametrize("name", PLANTS)
def test_linearize_is_exact_against_the_richardson_oracle(name, linearized):
    plant, t, x, u, sys = linearized(name)
    lin = sys.linearization
    assert lin.method == "analytic" and lin.output_method == "analytic" and lin.step == "", lin
    nq, nxc, nzc, r0, n = _layout(plant, sys)
    q0 = nq  # the raw rows of the configuration (their chart rows are kinematics)
    nu = len(u)

    def f(z, uu):
        xs = lin.to_state(np.r_[z, np.zeros(n - nzc)])
        return np.r_[plant.derivatives(t, xs, uu)[:nxc], plant.outputs_at(t, xs, uu)]

    def oracle(scale):  # [d/dz, d/du] at steps scale * h0
        hz, hu, levels = H0.get(name, (2e-3, 2e-3, 3))
        return np.hstack([richardson_jacobian(lambda z: f(z, u), np.zeros(nzc), h0=scale * hz, levels=levels),
                          richardson_jacobian(lambda w: f(np.zeros(nzc), w), u, h0=scale * hu, levels=levels)])
    R1, R2 = oracle(1.0), oracle(2.0)
    levels = H0.get(name, (0, 0, 3))[2]
    # the linear model's blocks: dynamics rows after the configuration (chart) and the outputs
    raw_dyn = slice(q0, nxc)
    got = {"A": sys.A[r0:r0 + nxc - q0, :nzc], "B": sys.B[r0:r0 + nxc - q0],
           "C": sys.C[:, :nzc], "D": sys.D}
    want = {k: (R1[rows, cols], R2[rows, cols]) for k, rows, cols in (
        ("A", raw_dyn, slice(0, nzc)), ("B", raw_dyn, slice(nzc, nzc + nu)),
        ("C", slice(nxc, None), slice(0, nzc)), ("D", slice(nxc, None), slice(nzc, nzc + nu)))}
    # the configuration rows of the tangents in raw coordinates (exact J times the chart's dx/dz)
    if q0:
        J = exact_jacobian(plant, x, u, t).J
        got["A config (raw)"] = J[:nq, :nxc] @ _chart_jacobian(plant, t, x, u)[:nxc, :nzc]
        want["A config (raw)"] = (R1[:nq, :nzc], R2[:nq, :nzc])
    for key, (r1, r2) in want.items():
        scale = np.abs(r1).max()
        if scale == 0.0:
            assert np.all(got[key] == 0.0), key
            continue
        # the extrapolation's error is O(h^(2 levels)): doubling the steps multiplies it by 4^levels
        assert np.abs(r1 - r2).max() / (4 ** levels - 1) < ORACLE_SELF * scale, (name, key, "oracle not converged")
        err = np.abs(got[key] - r1).max() / scale
        assert err < RTOL, (name, key, err)
    # discrete states: no columns, no rates
    assert np.all(sys.A[:, nzc:] == 0.0)
    assert np.all(sys.A[r0 + nxc - q0:] == 0.0) and np.all(sys.B[r0 + nxc - q0:] == 0.0)


@pytest.fixture(scope="module")
def native_me(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = build_fmu(name, tmp_path_factory.mktemp(f"exact_{name}"), runtime="native",
                                    platforms=("linux64",))
        return cache[name]
    return get


def _engaged_in_co_simulation(path, plant):
    """(t, x, u, [A B; C D]) of the satellite's native FMU after a co-simulation run that
    deploys its panels (every latch engaged): its latch flags are discrete states a Model
    Exchange host cannot set, so the point is the FMU's own."""
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    ins = [vr[s.name] for s in plant.inputs]
    u = np.array([0.02, -0.01, 0.03])  # N m on the wheels
    with cs2_slave(path, (ins, list(u))) as slave:
        t, step = 0.0, 0.1
        for _ in range(200):
            slave.doStep(currentCommunicationPoint=t, communicationStepSize=step)
            t += step
        x = np.array(slave.getReal([vr[f"states.{s.name}"] for s in plant.states]))
        nxc = continuous_states(plant)
        unknowns = [vr[f"der(states.{s.name})"] for s in plant.states[:nxc]] + [vr[s.name] for s in plant.outputs]
        knowns = [vr[f"states.{s.name}"] for s in plant.states[:nxc]] + ins
        J = np.column_stack([slave.getDirectionalDerivative(unknowns, [k], [1.0]) for k in knowns])
        slave.terminate()
    assert np.all(x[nxc:] == 1.0), x[nxc:]  # every latch engaged
    return t, x, u, J


@pytest.mark.parametrize("name", PLANTS)
def test_linearize_equals_the_native_fmu_directional_derivatives(name, linearized, native_me):
    plant, t, x, u, sys = linearized(name)
    path = native_me(name)
    nxc = continuous_states(plant)
    if name == "satellite":
        t, x, u, J = _engaged_in_co_simulation(path, plant)
        sys = mbfmu.linearize(plant, x, u, t=t)
        dd = SimpleNamespace(A=J[:nxc, :nxc], B=J[:nxc, nxc:], C=J[nxc:, :nxc], D=J[nxc:, nxc:])
    else:
        with ModelExchangeInstance(path) as inst:
            assert inst.provides_directional and inst.n == nxc
            inst.fmu.setTime(t)
            dd = jacobians(inst, x[:nxc], u, DIRECTIONAL)
    nq, nxc, nzc, r0, n = _layout(plant, sys)
    T = _chart_jacobian(plant, t, x, u)[:nxc, :nzc]
    pairs = {"A": (sys.A[r0:r0 + nxc - nq, :nzc], dd.A[nq:] @ T), "B": (sys.B[r0:r0 + nxc - nq], dd.B[nq:]),
             "C": (sys.C[:, :nzc], dd.C @ T), "D": (sys.D, dd.D)}
    pairs["A raw"] = (exact_jacobian(plant, x, u, t).J[:nxc, :nxc], dd.A)
    for key, (got, want) in pairs.items():
        scale = np.abs(want).max()
        assert np.abs(got - want).max() <= NATIVE_RTOL * scale, (name, key, np.abs(got - want).max() / scale)


def test_tangents_that_are_not_the_plants_own_are_refused_naming_the_check():
    """A plant whose Python dynamics is not its packed model's (here a satellite whose wheel
    torques reach its Python dynamics doubled, a private ``_input_forces`` the packer does not
    see) fails the check along one direction: the linear model falls back to central
    differences and says why, never claiming "analytic"."""
    from mbfmu.models.satellite import Satellite

    class StrongerWheels(Satellite):
        def _input_forces(self, u):
            return 2.0 * super()._input_forces(u)

    plant = StrongerWheels()
    lin = mbfmu.linearize(plant).linearization
    assert lin.method == "analytic kinematics + central difference"
    assert "no exact tangents: the exact tangents differ from the plant's own derivatives" in lin.notes
    assert exact_jacobian(Satellite(), plant.initial_state(), plant.default_inputs()).J is not None


def test_packed_jacobian_refuses_bad_points_in_one_line():
    from mbfmu.dynamics.tangents import packed_jacobian
    from mbfmu.errors import InputError
    from mbfmu.fmu.native.pack import describe
    plant = load_plant("rigid_arm")
    desc = describe(plant)
    x, u = plant.initial_state(), plant.default_inputs()
    J, why = packed_jacobian(desc.structure, desc.d, desc.offsets, x, u)
    assert why is None and J.shape == (len(x) + len(plant.outputs), len(x) + len(u))
    bad = x.copy()
    bad[2] = np.nan
    with pytest.raises(InputError, match=r"^packed_jacobian: state\[3\] is not finite \(nan\)$"):
        packed_jacobian(desc.structure, desc.d, desc.offsets, bad, u)
    with pytest.raises(InputError, match="state of 5 values and input of 3 for a plant with 6 states and 3 inputs"):
        packed_jacobian(desc.structure, desc.d, desc.offsets, x[:5], u)


def test_a_piece_without_a_tangent_is_named_in_the_result():
    """The finite-segment arm outputs its tips relative to the link roots, which have no C
    tangent: the linear model names the method it used and why (#33)."""
    from mbfmu.control.cli import _plant_model_words

    from .plants import SegmentArm
    lin = mbfmu.linearize(SegmentArm()).linearization
    assert lin.method != "analytic" or lin.output_method != "analytic"
    assert "no exact tangents:" in lin.notes and "relative point" in lin.notes
    assert not _plant_model_words(lin).startswith("plant's exact")
