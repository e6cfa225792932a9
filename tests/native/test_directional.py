"""Directional derivatives of the native FMU (#24.2): fmpy calls
fmi2GetDirectionalDerivative (Model Exchange and Co-Simulation) and FMI 3's
fmi3GetDirectionalDerivative / fmi3GetAdjointDerivative. At random states the
Jacobian equals central differences of the Python plant within their error
(the same C tangents, which mbfmu.control.linearize runs (#33), equal Pinocchio's
computeABADerivatives in tests/dynamics/test_exact_tangents.py); the adjoint is its transpose; plants whose derivatives the C runtime does not have exactly do not claim them and
refuse the call naming why."""
from __future__ import annotations

import ctypes
import zipfile
from xml.etree import ElementTree

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave

from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.control.linearization import state_jacobians
from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.library import load_plant

from .fmi3_jacobian import fmi3_jacobian
from .fmi_instances import cs2_slave
from .plants import SegmentArm, UrdfChain
from .tangent_checks import check_against_plant_differences, fd_tolerance

# library plants, URDF robots, and a URDF chain on a floating base (quaternion, revolute
# and prismatic joints with dampers and range limits)
EXACT = ("rigid_arm", "canonical_2body", "satellite", "ur5", "panda", UrdfChain, "crash_occupant")
# Ball: test_contact_directional; crash_occupant's sled frame and HIC recorder also test_crash_directional;
# flexible_arm (beams) is exact too: test_flexible_directional (its plant has no rigid model for the tests here);
# SegmentArm, the same arm of finite segments, outputs its tips relative to the link roots
NOT_EXACT = {SegmentArm: "relative point"}


def _plant(spec):
    return spec() if isinstance(spec, type) else load_plant(spec)


def _id(spec):
    return spec.name if isinstance(spec, type) else spec
ANALYTIC_RTOL = 1e-11  # the brief asks 1e-9, the issue 1e-10; measured 1e-14 (round-off)
DOUBLE_P = ctypes.POINTER(ctypes.c_double)


@pytest.fixture(scope="module")
def fmu(tmp_path_factory, native_fmus):
    cache = {}

    def get(spec, fmi: int = 2):
        if (spec, fmi) not in cache:
            cache[spec, fmi] = (native_fmus(spec, platforms=("linux64",), fmi_version=fmi) if isinstance(spec, str)
                                else build_fmu(spec, tmp_path_factory.mktemp(f"dd_{_id(spec)}_{fmi}"),
                                               runtime="native", platforms=("linux64",), fmi_version=fmi))
        return cache[spec, fmi]
    return get


# the random states' spread about the start state: the seated occupant's 0.3 would push the
# pelvis 30 cm into the seat (contact forces of 1e5 N whose round-off swamps the central
# differences of the input block); at 0.01 seed 1 puts the chest's specific force near 0
# (1.3 m/s2), where the resultant's third derivative ~ |da|^3 / |a|^2 defeats plain central
# differences (the Richardson oracle of test_crash_directional agrees there to 2e-11)
SPREAD = {"crash_occupant": 0.02}


def _point(plant, seed: int):
    """A random state (unit quaternions, latches free) and random inputs of the plant."""
    rng = np.random.default_rng(seed)
    x = plant.initial_state().astype(float)
    n = plant.model.nq + plant.model.nv
    x[:n] += SPREAD.get(plant.name, 0.3) * rng.standard_normal(n)
    u = plant.default_inputs() + rng.standard_normal(len(plant.inputs))
    return plant.normalize_state(x), u


@pytest.mark.parametrize("name", EXACT, ids=_id)
def test_model_exchange_directional_derivatives_equal_the_python_plant(name, fmu):
    plant = _plant(name)
    path = fmu(name)
    with ModelExchangeInstance(path) as inst:
        assert inst.provides_directional
        for seed in (1, 2):
            x, u = _point(plant, seed)
            nxc = inst.n
            dd = jacobians(inst, x[:nxc], u, DIRECTIONAL)
            assert dd.method == DIRECTIONAL and dd.evaluations == nxc + len(u)
            np.testing.assert_allclose(dd.xdot0, plant.derivatives(0.0, x, u)[:nxc], rtol=1e-12, atol=1e-12)
            method = check_against_plant_differences(plant, x, u, dd.A, dd.B, dd.C, dd.D)
            if plant.canonical:  # no differences in canonical variables: the C tangents (#33)
                assert method == "analytic"


@pytest.mark.parametrize("name", ("rigid_arm", "satellite"))
def test_co_simulation_directional_derivatives_equal_model_exchange(name, fmu):
    """fmi2GetDirectionalDerivative in Co-Simulation at the start state: the same columns."""
    path = fmu(name)
    with ModelExchangeInstance(path) as inst:
        me = jacobians(inst, method=DIRECTIONAL)
        unknowns = inst.der_vrs + inst.output_vrs
        knowns = inst.state_vrs + inst.input_vrs
    md = read_model_description(str(path))
    assert md.coSimulation.providesDirectionalDerivative
    with cs2_slave(path) as slave:
        J = np.column_stack([slave.getDirectionalDerivative(unknowns, [k], [1.0]) for k in knowns])
        slave.terminate()
    np.testing.assert_allclose(J, np.block([[me.A, me.B], [me.C, me.D]]), rtol=0, atol=1e-14)


def test_satellite_with_engaged_latches_in_co_simulation(fmu):
    """After the panels deploy and their latches engage (a CS run), the derivatives
    include the latches' stiffness and damping, and the energy output their energy:
    the directional derivatives still equal central differences of the Python plant."""
    plant = load_plant("satellite")
    path = fmu("satellite")
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    with ModelExchangeInstance(path) as inst:
        unknowns, knowns = inst.der_vrs + inst.output_vrs, inst.state_vrs + inst.input_vrs
        nxc, m = inst.n, inst.m
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="cs")
    slave.instantiate()
    try:
        slave.setupExperiment(startTime=0.0)
        slave.enterInitializationMode()
        slave.exitInitializationMode()
        step, t = 0.1, 0.0
        for _ in range(200):
            slave.doStep(currentCommunicationPoint=t, communicationStepSize=step)
            t += step
        x = np.array(slave.getReal([vr[f"states.{s.name}"] for s in plant.states]))
        u = np.array(slave.getReal(knowns[nxc:]))
        J = np.column_stack([slave.getDirectionalDerivative(unknowns, [k], [1.0]) for k in knowns])
        slave.terminate()
    finally:
        slave.freeInstance()
    flags = x[nxc:]
    assert flags.sum() >= 2, flags  # latches engaged
    check_against_plant_differences(plant, x, u, J[:nxc, :nxc], J[:nxc, nxc:], J[nxc:, :nxc], J[nxc:, nxc:], t)
    assert m == len(plant.inputs)


@pytest.mark.parametrize("name", ("rigid_arm", "satellite"))
def test_fmi3_directional_and_adjoint_derivatives(name, fmu):
    """FMI 3 at the start state: the directional derivatives equal the FMI 2
    FMU's, and getAdjointDerivative(w) = J^T w."""
    with ModelExchangeInstance(fmu(name)) as inst:
        me = jacobians(inst, method=DIRECTIONAL)
    J2 = np.block([[me.A, me.B], [me.C, me.D]])
    path = fmu(name, 3)
    with zipfile.ZipFile(path) as z:  # fmpy 0.3 reads FMI 2's attribute name: read FMI 3's from the XML
        root = ElementTree.fromstring(z.read("modelDescription.xml"))
    for tag in ("ModelExchange", "CoSimulation"):
        flags = root.find(tag).attrib
        assert flags["providesDirectionalDerivatives"] == flags["providesAdjointDerivatives"] == "true"
    w = np.random.default_rng(3).standard_normal(J2.shape[0])
    J3, adj = fmi3_jacobian(path, w=w)
    assert J3.shape == J2.shape
    np.testing.assert_allclose(J3, J2, rtol=0, atol=1e-14)
    np.testing.assert_allclose(adj, J3.T @ w, rtol=1e-13, atol=1e-13 * np.abs(J3.T @ w).max())


@pytest.mark.parametrize("name", list(NOT_EXACT), ids=_id)
def test_plants_without_exact_derivatives_do_not_claim_them_and_refuse_naming_why(name, fmu):
    path = fmu(name)
    md = read_model_description(str(path))
    assert not md.coSimulation.providesDirectionalDerivative
    assert md.modelExchange is None or not md.modelExchange.providesDirectionalDerivative
    log = []
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="cs")
    from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2CallbackAllocateMemoryTYPE, \
        fmi2CallbackFreeMemoryTYPE, calloc, free
    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(lambda env, inst, status, cat, msg: log.append(msg.decode()))
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    slave.instantiate(callbacks=cb, loggingOn=True)
    try:
        slave.setupExperiment(startTime=0.0)
        slave.enterInitializationMode()
        slave.exitInitializationMode()
        out = [v.valueReference for v in md.modelVariables if v.causality == "output"][:1]
        inp = [v.valueReference for v in md.modelVariables if v.causality == "input"][:1]
        with pytest.raises(FMICallException):
            slave.getDirectionalDerivative(out, inp, [1.0])
        assert any("provides no exact directional derivatives" in m and NOT_EXACT[name] in m for m in log), log
    finally:
        slave.freeInstance()


@pytest.mark.parametrize("name", EXACT, ids=_id)
def test_central_differences_of_the_fmu_approach_its_directional_derivatives(name, fmu):
    """The FMU's own central differences (through fmpy, in its raw states: a quaternion's
    radial direction is projected away by the runtime, and by its derivatives) agree with
    its directional derivatives within the difference error."""
    plant = _plant(name)
    x, u = _point(plant, 7)
    with ModelExchangeInstance(fmu(name)) as inst:
        x = x[:inst.n]
        dd = jacobians(inst, x, u, DIRECTIONAL)
        fd = jacobians(inst, x, u, CENTRAL)
    assert fd.method == CENTRAL and fd.evaluations == 2 * (inst.n + inst.m)
    for got, want in ((dd.A, fd.A), (dd.B, fd.B), (dd.C, fd.C), (dd.D, fd.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=fd_tolerance(want))


# ---------------------------------------------------------------- #24.4: mbfmu linearize uses them
def test_mbfmu_linearize_uses_the_fmus_directional_derivatives(fmu, tmp_path, capsys):
    """``mbfmu linearize rigid_arm.fmu`` (and linearize_fmu) take A, B, C, D from the
    directional derivatives: A, B equal the plant's analytic linearization to 1e-11,
    C, D the plant's (central-difference) output Jacobian within its error, and the
    saved ZOH model is theirs."""
    import control

    from mbfmu.cli import main
    from mbfmu.control.fmu_model import linearize_fmu
    from mbfmu.control.linearization import linearize

    plant = load_plant("rigid_arm")
    path = fmu("rigid_arm")
    u = plant.default_inputs()
    ref = linearize(plant, None, u)
    assert ref.linearization.method == "analytic"
    sysd = linearize_fmu(path, step=0.01)
    jac = sysd.linearization.continuous
    assert sysd.linearization.method == "directional derivatives (exact, checked) + ZOH" and jac.method == DIRECTIONAL
    for got, want in ((jac.A, ref.A), (jac.B, ref.B)):
        np.testing.assert_allclose(got, want, rtol=0, atol=ANALYTIC_RTOL * np.abs(want).max())
    for got, want in ((jac.C, ref.C), (jac.D, ref.D)):  # the same C tangents (#33)
        np.testing.assert_allclose(got, want, rtol=0, atol=ANALYTIC_RTOL * max(np.abs(want).max(), 1e-300))
    out = tmp_path / "lin.npz"
    assert main(["linearize", str(path), "--step", "0.01", "-o", str(out)]) == 0
    text = capsys.readouterr()
    assert "directional derivatives (exact, checked) + ZOH" in text.out and "central difference" not in text.err
    saved = np.load(out)
    want = control.c2d(control.ss(jac.A, jac.B, jac.C, jac.D), 0.01, "zoh")
    for k in "ABCD":
        np.testing.assert_allclose(saved[k], getattr(want, k), rtol=0, atol=1e-12)
    # at t0 > 0 the point is the state the FMU's co-simulation reaches: still the analytic Jacobian there
    later = linearize_fmu(path, step=0.01, t0=0.5).linearization
    assert later.t == 0.5 and not np.allclose(later.x0, ref.linearization.x0)
    A_an, B_an, *_ = state_jacobians(plant, later.x0, u)
    for got, want in ((later.continuous.A, A_an), (later.continuous.B, B_an)):
        np.testing.assert_allclose(got, want, rtol=0, atol=ANALYTIC_RTOL * np.abs(want).max())
    refd = control.c2d(ref, 0.01, "zoh")
    np.testing.assert_allclose(saved["A"], refd.A, rtol=0, atol=ANALYTIC_RTOL * np.abs(refd.A).max())
    np.testing.assert_allclose(saved["B"], refd.B, rtol=0, atol=ANALYTIC_RTOL * np.abs(refd.B).max())


def test_mbfmu_linearize_falls_back_to_central_differences_saying_so(fmu, tmp_path, capsys):
    """An FMU without providesDirectionalDerivative (SegmentArm: flexible_arm of
    finite segments, its tips' outputs relative to the link roots) is
    linearized from central differences of its Model Exchange evaluations, and
    the command says so in a line."""
    from mbfmu.cli import main
    from mbfmu.control.fmu_model import linearize_fmu
    from mbfmu.control.linearization import linearize

    plant = SegmentArm()
    path = fmu(SegmentArm)
    with pytest.warns(UserWarning, match="provides no directional derivatives"):
        sysd = linearize_fmu(path, step=0.01)
    jac = sysd.linearization.continuous
    assert jac.method == CENTRAL and sysd.linearization.method.startswith("central difference of the FMU")
    ref = linearize(plant, None, plant.default_inputs())
    for got, want in ((jac.A, ref.A), (jac.B, ref.B), (jac.C, ref.C), (jac.D, ref.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * (1 + np.abs(want).max()))
    assert main(["linearize", str(path), "--step", "0.01", "-o", str(tmp_path / "lin.npz")]) == 0
    text = capsys.readouterr()
    lines = [ln for ln in text.err.splitlines() if "provides no directional derivatives" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: ") and "central differences" in lines[0]
    assert "central difference of the FMU's derivatives and outputs + ZOH" in text.out


def test_another_tools_model_exchange_fmu_with_directional_derivatives():
    """The Reference FMU VanDerPol (FMI 2.0 ME, providesDirectionalDerivative) declares
    directional derivatives, but they fail the probe (its d(x)/d(x) is 0, issue 32): it is
    linearized by central differences of the FMU, with a warning, A = [[0, 1], [-1 - 2 mu x0
    x1, mu (1 - x0^2)]] at its start (x0, x1) = (2, 0), mu = 1, and C = I (its outputs are its
    states). Another tool's FMU without them (Dahlquist) keeps the identification (ERA),
    which refuses it for having no input, as before."""
    from tooling import REFERENCE_FMUS

    from mbfmu.control.fmu_model import linearize_fmu
    from mbfmu.control.jacobian_check import DerivativeWarning
    from mbfmu.errors import InputError

    with pytest.warns(DerivativeWarning, match="VanDerPol.fmu"):
        sysd = linearize_fmu(REFERENCE_FMUS / "fmi2" / "VanDerPol.fmu", step=0.01)
    jac = sysd.linearization.continuous
    assert jac.method == CENTRAL
    x0, x1, mu = 2.0, 0.0, 1.0
    np.testing.assert_allclose(jac.A, [[0.0, 1.0], [-1.0 - 2 * mu * x0 * x1, mu * (1 - x0 ** 2)]], atol=1e-8)
    np.testing.assert_allclose(jac.C, np.eye(2), atol=1e-8)
    with pytest.raises(InputError, match="needs at least one real input"):
        linearize_fmu(REFERENCE_FMUS / "fmi2" / "Dahlquist.fmu", step=0.01)
