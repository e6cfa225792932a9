"""The frame elements of the element interface (``csrc/element.h``, the block "frame
elements"; #33 §3): a test-only frame element written once in C
(``elements/frame_step.c``: the plant's frame accelerates by ``a0 + u`` along x from
``t_on`` on) moves a block held by a spring-damper (m x'' = -k x - c x' - m a) in the
Python plant, the native FMU (Co-Simulation and Model Exchange, FMI 2 and 3) as the
analytic step response says, with its static deflection shift m a / k; its accelerometer
and frame-acceleration sensors read their definitions; and its exact tangent (the input
column -da included) equals central differences, in the FMU and in ``mbfmu.linearize``'s
exact Jacobian."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import simulate_fmu

from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.control.linearization import exact_jacobian
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.dynamics import _kernels
from mbfmu.dynamics.integrators import ErrorControl
from mbfmu.errors import InputError
from mbfmu.fmu.builder import build_fmu
from mbfmu.fmu.native.description import NativeUnsupported
from mbfmu.fmu.native.pack import check_supported
from mbfmu.plant.elements import kernel_registry

from .element_plants import SpringInFrame, frame_step
from .fmi3_jacobian import fmi3_jacobian
from .tangent_checks import fd_tolerance

NAMES = ("x", "v", "frame_a", "meter_x", "meter_z")
PUSH = 1.5  # m/s2, the input: the frame accelerates by a0 + PUSH from t_on


def step_response(t: np.ndarray, a: float, k: float = SpringInFrame.K, t_on: float = SpringInFrame.T_ON):
    """x, v of m x'' + c x' + k x = -m a (a from t_on on, from rest at 0): the underdamped
    step response towards the static deflection -m a / k."""
    m, c = SpringInFrame.MASS, SpringInFrame.C
    w0, zeta = np.sqrt(k / m), c / (2 * np.sqrt(k * m))
    wd = w0 * np.sqrt(1 - zeta ** 2)
    tau = np.maximum(t - t_on, 0.0)
    decay = np.exp(-zeta * w0 * tau)
    x = -(m * a / k) * (1 - decay * (np.cos(wd * tau) + zeta / np.sqrt(1 - zeta ** 2) * np.sin(wd * tau)))
    v = -(m * a / k) * decay * w0 / np.sqrt(1 - zeta ** 2) * np.sin(wd * tau)
    return x, v


def check_response(t, Y, a: float, atol: float, k: float = SpringInFrame.K, t_on: float = SpringInFrame.T_ON):
    """The outputs against the step response and the sensors' definitions."""
    m, c = SpringInFrame.MASS, SpringInFrame.C
    x, v = step_response(t, a, k, t_on)
    np.testing.assert_allclose(Y[:, 0], x, rtol=0, atol=atol)
    np.testing.assert_allclose(Y[:, 1], v, rtol=0, atol=10 * atol)
    # the frame's acceleration: 0 before t_on, a from it on (Model Exchange records the event at t_on)
    np.testing.assert_array_equal(Y[:, 2], np.where(t >= t_on, a, 0.0))
    # the accelerometer reads the specific force: the spring and damper's push per unit mass
    # along x (x'' + a), +g along z (gravity -z, no motion along z)
    np.testing.assert_allclose(Y[:, 3], (-k * Y[:, 0] - c * Y[:, 1]) / m, rtol=0, atol=1e-9)
    np.testing.assert_allclose(Y[:, 4], 9.81, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def frame_fmus(tmp_path_factory):
    return {v: build_fmu(SpringInFrame, tmp_path_factory.mktemp(f"frame{v}"), runtime="native",
                         platforms=("linux64",), fmi_version=v) for v in (2, 3)}


def test_python_plant_follows_the_step_response_to_the_static_shift():
    """The Python plant (the element's C through the kernels) follows the analytic response
    and settles at the static deflection shift -m a / k, its accelerometer at a."""
    plant = SpringInFrame()
    plant.error_control = ErrorControl(rtol=1e-10, atol=1e-12)
    t, _, Y = plant.simulate(stop_time=4.0, step=0.05, u=np.array([PUSH]))
    a = SpringInFrame.A0 + PUSH
    check_response(t, Y, a, atol=1e-8)
    shift = -SpringInFrame.MASS * a / SpringInFrame.K
    assert Y[-1, 0] == pytest.approx(shift, rel=1e-6)
    assert Y[-1, 3] == pytest.approx(a, rel=1e-5)
    assert abs(shift) > 1e3 * abs(Y[-1, 0] - shift)  # the frame moved the block (at rest without it)


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_fmu_follows_the_step_response(frame_fmus, fmi, kind):
    """Co-Simulation (the runtime's integrator) and Model Exchange (fmpy's CVode, with the
    element's kink t_on as a time event) follow the analytic step response."""
    res = simulate_fmu(str(frame_fmus[fmi]), fmi_type=kind, stop_time=2.0, output_interval=0.05,
                       relative_tolerance=1e-9, start_values={"push": PUSH}, output=list(NAMES))
    Y = np.column_stack([res[n] for n in NAMES])
    check_response(res["time"], Y, SpringInFrame.A0 + PUSH, atol=2e-7)


def test_model_exchange_has_the_frame_kink_as_a_time_event(frame_fmus):
    """The FMU announces t_on as its next time event before it (and none after); without
    it an ME host would step over the frame's switch-on."""
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Model
    from fmpy import extract
    md = read_model_description(str(frame_fmus[2]))
    unzipped = extract(str(frame_fmus[2]))
    fmu = FMU2Model(guid=md.guid, unzipDirectory=unzipped,
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="frame")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    info = fmu.newDiscreteStates()
    assert info[4] and info[5] == pytest.approx(SpringInFrame.T_ON, abs=0)
    fmu.enterContinuousTimeMode()
    fmu.setTime(SpringInFrame.T_ON)
    fmu.enterEventMode()
    info = fmu.newDiscreteStates()
    assert not info[4]  # the step's one kink has passed
    fmu.terminate()
    fmu.freeInstance()


def test_frame_parameters_are_tunable(frame_fmus):
    """The element's parameters come from the plant's (k aside: a0 and t_on) through the
    tape: set on the FMU, the block follows the response of the new a0 and t_on."""
    a0, t_on = -2.0, 0.52
    res = simulate_fmu(str(frame_fmus[2]), stop_time=2.0, output_interval=0.05, relative_tolerance=1e-9,
                       start_values={"a0": a0, "t_on": t_on, "push": PUSH}, output=list(NAMES))
    Y = np.column_stack([res[n] for n in NAMES])
    check_response(res["time"], Y, a0 + PUSH, atol=2e-7, t_on=t_on)


def test_python_plant_equals_the_fmu(frame_fmus):
    """Co-Simulation of the native FMU runs what the Python plant runs (same integrator, same C)."""
    plant = SpringInFrame()
    _, _, Y = plant.simulate(stop_time=2.0, step=0.05, u=np.array([PUSH]))
    res = simulate_fmu(str(frame_fmus[2]), stop_time=2.0, output_interval=0.05, start_values={"push": PUSH},
                       output=list(NAMES))
    fmu = np.column_stack([res[n] for n in NAMES])
    np.testing.assert_allclose(Y, fmu, rtol=0, atol=1e-12 * (1 + np.abs(fmu).max()))


STATES = {"at_rest": (np.array([0.0, 0.0]), np.array([0.0])),
          "moving": (np.array([-0.02, 0.3]), np.array([-1.2]))}


@pytest.mark.parametrize("label", sorted(STATES))
def test_frame_tangent_is_exact(frame_fmus, label):
    """The FMU's directional derivatives with the frame on (t_on = 0) equal central
    differences of its own derivatives and outputs, the input column included; that column
    is the frame's -da/du = -1 (x'' and v') and its +1 on the frame's acceleration; FMI 3's
    Jacobian at a time after t_on (the build's t_on) is the same."""
    x, u = STATES[label]
    with ModelExchangeInstance(frame_fmus[2], parameters={"t_on": 0.0}) as inst:
        assert inst.provides_directional
        dd = jacobians(inst, x, u, DIRECTIONAL)
        fd = jacobians(inst, x, u, CENTRAL)
    for got, want in ((dd.A, fd.A), (dd.B, fd.B), (dd.C, fd.C), (dd.D, fd.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=fd_tolerance(want))
    m, k, c = SpringInFrame.MASS, SpringInFrame.K, SpringInFrame.C
    np.testing.assert_allclose(dd.A, [[0.0, 1.0], [-k / m, -c / m]], rtol=1e-14, atol=0)
    np.testing.assert_array_equal(dd.B[:, 0], [0.0, -1.0])
    np.testing.assert_array_equal(dd.D[:, 0], [0.0, 0.0, 1.0, 0.0, 0.0])
    J3, _ = fmi3_jacobian(frame_fmus[3], x, u, t=1.0)
    J2 = np.block([[dd.A, dd.B], [dd.C, dd.D]])
    np.testing.assert_allclose(J3, J2, rtol=0, atol=1e-12 * (1 + np.abs(J2).max()))
    # before t_on the frame is still: no input column
    J0, _ = fmi3_jacobian(frame_fmus[3], x, u, t=0.1)
    np.testing.assert_array_equal(J0[:, -1], 0.0)


def test_python_exact_jacobian_is_the_fmus():
    """``mbfmu.linearize``'s exact Jacobian (the same C tangents on the plant) at a time after
    t_on: checked there against the plant's own central differences, and the input column
    is the frame's."""
    plant = SpringInFrame()
    x, u = STATES["moving"]
    exact = exact_jacobian(plant, x, u, t=1.0)
    assert exact.J is not None, exact.why
    np.testing.assert_array_equal(exact.J[:2, -1], [0.0, -1.0])
    assert exact.J[4, -1] == 1.0
    before = exact_jacobian(plant, x, u, t=0.1)
    np.testing.assert_array_equal(before.J[:, -1], 0.0)


def test_registry_refuses_two_frames_and_a_missing_input():
    """One frame per plant (the kernels and the FMU build refuse a second, in one line); a
    frame element reading an input the plant does not have makes its acceleration NaN (never
    a silently wrong frame), which the integrator refuses."""
    plant = SpringInFrame()
    plant.register_elements(frame_step((0, 1, 0), 1.0, 0.0))
    with pytest.raises(NativeUnsupported, match="spring_in_frame.*more than one frame element"):
        check_supported(plant)
    with pytest.raises(InputError, match="more than one frame element"):
        plant.simulate(stop_time=0.1)
    plant = SpringInFrame()
    two = kernel_registry((frame_step((1, 0, 0), 1.0, 0.0), frame_step((0, 1, 0), 1.0, 0.0)))
    with pytest.raises(InputError, match="more than one frame element"):
        _kernels.element_rhs(plant.model._h, np.zeros(1), np.zeros(1), np.zeros(1), 0.0, two, np.zeros(1))
    stray = kernel_registry((frame_step((1, 0, 0), 1.0, 0.0, input=3),))
    _, ydot = _kernels.element_rhs(plant.model._h, np.zeros(1), np.zeros(1), np.zeros(1), 0.0, stray, np.zeros(1))
    assert np.isnan(ydot[0])
