"""The element interface's joint rows, state events and energy (``csrc/element.h``, #33
§3): a test-only element written once in C (``elements/joint_stop.c``, a one-sided stop
that catches a joint coordinate at the first instant it reaches the stop and holds it with
a spring-damper from then on) on a spring-mass block released from rest
(:class:`~.element_plants.CaughtOscillator`). Against the analytic motion (the engagement
time t* = acos(x_s / A) / w0 and the caught oscillation after it) and the conservation of
energy (its elastic energy counted in the potential-energy output) in the Python plant and
the native FMU, Co-Simulation and Model Exchange, FMI 2 and 3; its tangent (joint rows and
energy) against central differences of the FMU's own derivatives and outputs and FMI 3's
Jacobian, and ``mbfmu.linearize`` against the FMU."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import simulate_fmu

from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.errors import InputError
from mbfmu.fmu.builder import build_fmu
from mbfmu.fmu.native.description import NativeUnsupported
from mbfmu.fmu.native.pack import check_supported
from mbfmu.fmu.native.model_exchange import ELEMENT, event_indicators
from mbfmu.plant.elements import NativeElement

from .element_plants import STOP_C, CaughtOscillator
from .fmi3_jacobian import fmi3_jacobian
from .tangent_checks import central_differences, fd_tolerance

NAMES = ("x", "v", "engaged", "ke", "pe")


@pytest.fixture(scope="module")
def stop_fmus(tmp_path_factory):
    return {v: build_fmu(CaughtOscillator, tmp_path_factory.mktemp(f"el_stop{v}"), runtime="native",
                         platforms=("linux64",), fmi_version=v) for v in (2, 3)}


def _check_motion(t, x, v, engaged, energy, tol):
    t_star, x_want, v_want = CaughtOscillator.analytic(t)
    assert t[0] < t_star < t[-1]
    at_event = np.flatnonzero(np.diff(t) == 0)  # Model Exchange: the rows before and after its event
    if at_event.size:
        assert at_event.size == 1 and abs(t[at_event[0]] - t_star) < 1e-8, t[at_event]
        assert engaged[at_event[0]] == 0.0 and engaged[at_event[0] + 1] == 1.0
    off = np.ones(t.size, bool)
    off[at_event] = off[at_event + 1] = False
    np.testing.assert_array_equal(engaged[off], (t[off] > t_star).astype(float))  # from t* on, never back
    # the caught motion starts from the state at t*: an engagement off by dt would be off by ~|v*| dt
    np.testing.assert_allclose(x, x_want, rtol=0, atol=tol)
    np.testing.assert_allclose(v, v_want, rtol=0, atol=10 * tol)
    assert x.min() > -0.8 * CaughtOscillator.A  # caught: the block never swings out to -A as it would free
    # undamped: the block's kinetic energy plus the joint spring's and the stop's is 1/2 k0 A^2
    e0 = 0.5 * CaughtOscillator.K0 * CaughtOscillator.A ** 2
    np.testing.assert_allclose(energy, e0, rtol=0, atol=10 * tol * e0)


def test_python_plant_engages_at_the_analytic_instant():
    """The Python plant (the element's C through the kernels): the stop engages at t*
    (located within the step that holds it), the motion follows the analytic one."""
    plant = CaughtOscillator()
    t, _, Y = plant.simulate(stop_time=2.0, step=0.05)
    _check_motion(t, Y[:, 0], Y[:, 1], Y[:, 2], Y[:, 3] + Y[:, 4], 1e-7)
    t_star = CaughtOscillator.analytic(np.zeros(1))[0]
    x0, u = plant.initial_state(), np.zeros(1)
    assert plant.advance(0.0, x0, u, t_star - 1e-7)[2] == 0.0
    assert plant.advance(0.0, x0, u, t_star + 1e-7)[2] == 1.0


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_fmu_engages_at_the_analytic_instant(stop_fmus, fmi, kind):
    """The native FMU: Co-Simulation locates the event in its step as the Python plant does
    (and equals it); Model Exchange reports the element's indicator and engages at the event."""
    # Co-Simulation at the plant's own tolerances (the Python plant's), Model Exchange's CVode at 1e-10
    tolerance = {"relative_tolerance": 1e-10} if kind == "ModelExchange" else {}
    res = simulate_fmu(str(stop_fmus[fmi]), fmi_type=kind, stop_time=2.0, output_interval=0.05,
                       output=list(NAMES), **tolerance)
    tol = 1e-6 if kind == "ModelExchange" else 1e-7  # fmpy's CVode, the runtime's own integrator
    _check_motion(res["time"], res["x"], res["v"], res["engaged"], res["ke"] + res["pe"], tol)
    if kind == "CoSimulation":
        _, _, Y = CaughtOscillator().simulate(stop_time=2.0, step=0.05)
        np.testing.assert_allclose(np.column_stack([res[n] for n in NAMES]), Y, rtol=0, atol=1e-12)


def test_damped_stop_is_tunable(stop_fmus):
    """The stop's parameters follow the plant's (the tape): with damping the caught block
    loses energy, the FMU and the Python plant agree."""
    res = simulate_fmu(str(stop_fmus[2]), stop_time=2.0, output_interval=0.05, output=list(NAMES),
                       start_values={"c_stop": 3.0})
    _, _, Y = CaughtOscillator(c_stop=3.0).simulate(stop_time=2.0, step=0.05)
    np.testing.assert_allclose(np.column_stack([res[n] for n in NAMES]), Y, rtol=0, atol=1e-12)
    energy = res["ke"] + res["pe"]
    t_star = CaughtOscillator.analytic(np.zeros(1))[0]
    np.testing.assert_allclose(energy[res["time"] < t_star], energy[0], rtol=0, atol=1e-7)
    assert energy[-1] < 0.9 * energy[0]


def test_indicator_is_the_elements():
    """Model Exchange's event indicator of the element: its own description, read by the runtime."""
    ind = [i for i in event_indicators(CaughtOscillator()) if i.kind == ELEMENT]
    assert [(i.index, i.qindex) for i in ind] == [(0, 0)]
    assert "travel past the stop" in ind[0].description


FREE, ENGAGED = np.array([0.3, -0.7, 0.0]), np.array([-0.25, 0.4, 1.0])


def _analytic_rows(x):
    """dv/dt's row in x, v (the springs k0 + z k over m) and d pe / dx (k0 x + z k (x - x_s))."""
    P, z = CaughtOscillator, x[2]
    return [-(P.K0 + z * P.K_STOP) / P.MASS, 0.0], P.K0 * x[0] + z * P.K_STOP * (x[0] - P.X_STOP)


def test_stop_tangent_is_exact(stop_fmus):
    """The FMU's directional derivatives (the joint rows' and the energy's tangents in dirder.c)
    equal central differences of its own derivatives and outputs, the analytic ones, and FMI
    3's Jacobian FMI 2's (the stop free: a Model Exchange host cannot set its discrete state)."""
    u = np.array([0.0])
    with ModelExchangeInstance(stop_fmus[2]) as inst:
        dd = jacobians(inst, FREE[:2], u, DIRECTIONAL)
        fd = jacobians(inst, FREE[:2], u, CENTRAL)
    for got, want in ((dd.A, fd.A), (dd.B, fd.B), (dd.C, fd.C), (dd.D, fd.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=fd_tolerance(want))
    row, dpe = _analytic_rows(FREE)
    np.testing.assert_allclose(dd.A[1], row, rtol=1e-14, atol=0)
    np.testing.assert_allclose(dd.C[4, 0], dpe, rtol=1e-14, atol=0)
    J3, _ = fmi3_jacobian(stop_fmus[3], FREE[:2], u)
    np.testing.assert_allclose(J3, np.block([[dd.A, dd.B], [dd.C, dd.D]]), rtol=0, atol=1e-13)


@pytest.mark.parametrize("x", [FREE, ENGAGED], ids=["free", "engaged"])
def test_linearize_is_exact_with_the_stop(stop_fmus, x):
    """mbfmu.linearize of the Python plant takes the element's tangents (the runtime's dirder.c,
    exact): they equal central differences of the plant's own derivatives and outputs (the
    element's force and energy, another code path), the analytic rows, zero columns of the
    discrete state, and (stop free) the FMU's directional derivatives."""
    import mbfmu
    plant, u = CaughtOscillator(), np.array([0.2])
    sys = mbfmu.linearize(plant, x, u)
    assert sys.linearization.method == "analytic", sys.linearization
    A = central_differences(lambda z: plant.derivatives(0.0, np.r_[z, x[2]], u), x[:2])
    C = central_differences(lambda z: plant.outputs_at(0.0, np.r_[z, x[2]], u), x[:2])
    np.testing.assert_allclose(sys.A[:2, :2], A[:2], rtol=0, atol=fd_tolerance(A))
    np.testing.assert_allclose(sys.C[:, :2], C, rtol=0, atol=fd_tolerance(C))
    np.testing.assert_array_equal(sys.A[:, 2], 0.0)  # the discrete state: no known
    np.testing.assert_array_equal(sys.A[2], 0.0)
    row, dpe = _analytic_rows(x)
    np.testing.assert_allclose(sys.A[1, :2], row, rtol=1e-14, atol=0)
    np.testing.assert_allclose(sys.C[4, 0], dpe, rtol=1e-14, atol=0)
    if x[2] == 0.0:
        with ModelExchangeInstance(stop_fmus[2]) as inst:
            dd = jacobians(inst, x[:2], u, DIRECTIONAL)
        for got, want in ((sys.A[:2, :2], dd.A), (sys.B[:2], dd.B), (sys.C[:, :2], dd.C), (sys.D, dd.D)):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * (1 + np.abs(want).max()))


def test_joint_rows_are_checked():
    """Joint rows that do not pair, are negative, lie outside the model or do not match the class,
    and events not described, get one-line errors."""
    with pytest.raises(InputError, match="joint_v"):
        NativeElement(STOP_C, "test_joint_stop", 1, (0, 0, 0), (0, 1, 1, 0), joint_q=(0,))
    with pytest.raises(InputError, match="0-based"):
        NativeElement(STOP_C, "test_joint_stop", 1, (0, 0, 0), (0, 1, 1, 0), joint_q=(-1,), joint_v=(0,))
    plant = CaughtOscillator()
    el = plant.native_elements[0]
    plant.native_elements = (NativeElement(el.source, el.symbol, el.body, el.point, el.parameters,
                                           discrete=el.discrete, joint_q=(3,), joint_v=(0,)),)
    with pytest.raises(InputError, match="joint row 0 reads q\\[3\\]") as err:
        plant.derivatives(0.0, plant.initial_state(), np.zeros(1))
    assert "\n" not in str(err.value)
    plant = CaughtOscillator()
    plant.native_elements = (NativeElement(el.source, el.symbol, el.body, el.point, el.parameters,
                                           discrete=el.discrete),)
    with pytest.raises(InputError, match="1 joint rows"):
        plant.derivatives(0.0, plant.initial_state(), np.zeros(1))
    plant = CaughtOscillator()
    plant.native_elements = (NativeElement(el.source, el.symbol, el.body, el.point, el.parameters,
                                           discrete=el.discrete, joint_q=(0,), joint_v=(0,)),)
    with pytest.raises(NativeUnsupported, match="0 event descriptions, its class has 1"):
        check_supported(plant)
    plant.native_elements = (NativeElement(el.source, el.symbol, el.body, el.point, el.parameters,
                                           discrete=el.discrete, joint_q=(1,), joint_v=(0,), events=el.events),)
    with pytest.raises(NativeUnsupported, match="beyond the model's 1 and 1"):
        check_supported(plant)
