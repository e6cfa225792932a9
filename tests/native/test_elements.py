"""The element interface (``csrc/element.h``, #33 §3): a test-only element written
once in C (``elements/point_damper.c``, a linear damper F = -c V between a body point
and the ground, with its dissipated energy as a state and its power as an output)
registered by a plant (``MultibodyPlant.register_elements``) works in the native FMU,
Co-Simulation and Model Exchange, FMI 2 and 3, against the analytic motion of a damped
block and the energy balance, in the exact directional derivatives, against central
differences of the FMU's own derivatives and outputs (FMI 2), FMI 3's (the same C) and
analytic gradients, and in the Python plant (the same C through the kernels), against
the FMU and the analytic motion."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import simulate_fmu

from mbfmu.dynamics.algorithms import crba, point_jacobian
from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.errors import InputError, ModelError
from mbfmu.fmu.builder import build_fmu
from mbfmu.fmu.native.description import NativeUnsupported
from mbfmu.fmu.native.pack import check_supported
from mbfmu.plant.elements import ElementOutput, NativeElement
from mbfmu.plant.signals import Signal

from .element_plants import DAMPER_C, DampedPendulum, DampedSlider, SledDampedSlider, point_damper
from .fmi3_jacobian import fmi3_jacobian
from .tangent_checks import fd_tolerance


@pytest.fixture(scope="module")
def slider_fmus(tmp_path_factory):
    return {v: build_fmu(DampedSlider, tmp_path_factory.mktemp(f"el_slider{v}"), runtime="native",
                         platforms=("linux64",), fmi_version=v) for v in (2, 3)}


@pytest.fixture(scope="module")
def pendulum_fmus(tmp_path_factory):
    return {v: build_fmu(DampedPendulum, tmp_path_factory.mktemp(f"el_pend{v}"), runtime="native",
                         platforms=("linux64",), fmi_version=v) for v in (2, 3)}


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_damper_slows_the_block_as_the_analytic_solution(slider_fmus, fmi, kind):
    """m dv/dt = -c v: v = v0 exp(-c t / m), x = v0 m / c (1 - exp(-c t / m))."""
    m, c, v0 = DampedSlider.MASS, DampedSlider.C, DampedSlider.V0
    res = simulate_fmu(str(slider_fmus[fmi]), fmi_type=kind, stop_time=1.0, output_interval=0.05,
                       relative_tolerance=1e-8, output=["x", "v", "dissipated", "power"])
    t = res["time"]
    decay = np.exp(-c * t / m)
    tol = 1e-5 if kind == "ModelExchange" else 1e-6  # fmpy's CVode at 1e-8, the runtime's own integrator
    np.testing.assert_allclose(res["v"], v0 * decay, rtol=0, atol=tol)
    np.testing.assert_allclose(res["x"], v0 * m / c * (1 - decay), rtol=0, atol=tol)
    assert res["v"][-1] < 0.5 * v0  # the damper acts (undamped: v stays v0)
    # the element's own state: the energy it dissipated is the block's lost kinetic energy
    np.testing.assert_allclose(res["dissipated"], 0.5 * m * v0 ** 2 * (1 - decay ** 2), rtol=0, atol=10 * tol)
    # the element's output, the power it dissipates c v^2
    np.testing.assert_allclose(res["power"], c * res["v"] ** 2, rtol=1e-12, atol=0)
    np.testing.assert_allclose(res["power"], c * (v0 * decay) ** 2, rtol=0, atol=10 * tol)
    # the accelerometer's states: the specific force along the slide integrates to v - v0, the
    # vertical one (the block does not move vertically: it reads +g) to g t
    res = simulate_fmu(str(slider_fmus[fmi]), fmi_type=kind, stop_time=1.0, output_interval=0.05,
                       relative_tolerance=1e-8, output=["meter_x", "meter_z"])
    np.testing.assert_allclose(res["meter_x"], v0 * (decay - 1), rtol=0, atol=10 * tol)
    np.testing.assert_allclose(res["meter_z"], 9.81 * t, rtol=0, atol=10 * tol)


@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_dissipated_energy_closes_the_energy_balance(pendulum_fmus, kind):
    """Unforced, the pendulum's kinetic plus potential energy plus the energy the damper's
    state has accumulated stays at its start value (conservation of energy)."""
    res = simulate_fmu(str(pendulum_fmus[2]), fmi_type=kind, stop_time=1.0, output_interval=0.02,
                       relative_tolerance=1e-9, output=["ke", "pe", "x[5]"])
    total = res["ke"] + res["pe"] + res["x[5]"]
    assert res["x[5]"][-1] > 0.05 * (res["ke"][0] + abs(res["pe"][0]))  # the damper took a visible share
    np.testing.assert_allclose(total, total[0], rtol=0, atol=1e-5 * (res["ke"][0] + abs(res["pe"][0])))


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_damper_parameter_is_tunable(slider_fmus, fmi, kind):
    """The element's parameter is computed from the plant's parameter ``c``: set on the FMU
    (the expression tape moves it), the block decays at the new rate, v0 exp(-c t / m)."""
    m, v0, c = DampedSlider.MASS, DampedSlider.V0, 5.0
    res = simulate_fmu(str(slider_fmus[fmi]), fmi_type=kind, stop_time=1.0, output_interval=0.05,
                       relative_tolerance=1e-8, output=["v"], start_values={"c": c})
    want = v0 * np.exp(-c * res["time"] / m)
    np.testing.assert_allclose(res["v"], want, rtol=0, atol=1e-5 if kind == "ModelExchange" else 1e-6)
    assert abs(res["v"][-1] - v0 * np.exp(-DampedSlider.C / m)) > 0.1  # not the build-time damping


STATES = {"rest_shape": (np.array([0.4, -0.3, 0.5, -1.0, 0.0, 0.0, 0.0]), np.array([0.2])),
          "swinging": (np.array([-1.1, 1.7, -2.0, 3.0, 0.6, -0.4, 2.0]), np.array([-0.7]))}


@pytest.mark.parametrize("label", sorted(STATES))
def test_damper_tangent_is_exact(pendulum_fmus, label):
    """The FMU's directional derivatives (the element's tangent in dirder.c) equal central
    differences of its own derivatives and outputs; FMI 3's Jacobian is FMI 2's."""
    x, u = STATES[label]
    with ModelExchangeInstance(pendulum_fmus[2]) as inst:
        assert inst.provides_directional
        dd = jacobians(inst, x, u, DIRECTIONAL)
        fd = jacobians(inst, x, u, CENTRAL)
    for got, want in ((dd.A, fd.A), (dd.B, fd.B), (dd.C, fd.C), (dd.D, fd.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=fd_tolerance(want))
    J3, _ = fmi3_jacobian(pendulum_fmus[3], x, u)
    J2 = np.block([[dd.A, dd.B], [dd.C, dd.D]])
    np.testing.assert_allclose(J3, J2, rtol=0, atol=1e-12 * (1 + np.abs(J2).max()))


def test_damper_tangent_holds_the_damping_at_rest(pendulum_fmus):
    """At v = 0 the Coriolis terms vanish and the velocity block of A is the damper's
    -M^-1 c J^T J, J the damped point's world Jacobian (the Python engine's crba and
    point_jacobian)."""
    x, u = np.array([0.4, -0.3, 0.0, 0.0, 0.0, 0.0, 0.0]), np.array([0.0])
    with ModelExchangeInstance(pendulum_fmus[2]) as inst:
        dd = jacobians(inst, x, u, DIRECTIONAL)
    plant = DampedPendulum()
    el = plant.native_elements[0]  # the damper
    J = point_jacobian(plant.model, x[:2], el.body, el.point)
    want = -np.linalg.solve(crba(plant.model, x[:2]), el.parameters[0] * J.T @ J)
    np.testing.assert_allclose(dd.A[2:4, 2:4], want, rtol=0, atol=1e-10 * np.abs(want).max())
    # the dissipated energy's rate c |V|^2 is flat at rest and no state depends on it
    np.testing.assert_array_equal(dd.A[4], 0.0)
    np.testing.assert_array_equal(dd.A[:, 4], 0.0)


def test_dissipation_rate_tangent_is_the_analytic_gradient(pendulum_fmus):
    """d(c |V|^2)/dv = 2 c J^T J v (J the damped point's world Jacobian, V = J v): the row of
    the element's state in A against the Python engine's point_jacobian."""
    x, u = np.array([0.7, -0.2, 1.3, -0.8, 0.0, 0.0, 0.0]), np.array([0.0])
    with ModelExchangeInstance(pendulum_fmus[2]) as inst:
        dd = jacobians(inst, x, u, DIRECTIONAL)
    plant = DampedPendulum()
    el = plant.native_elements[0]  # the damper
    J = point_jacobian(plant.model, x[:2], el.body, el.point)
    want = 2 * el.parameters[0] * J.T @ J @ x[2:4]
    np.testing.assert_allclose(dd.A[4, 2:4], want, rtol=0, atol=1e-12 * np.abs(want).max())
    # the element's output (the same power) has the same gradient
    np.testing.assert_allclose(dd.C[-1, 2:4], want, rtol=0, atol=1e-12 * np.abs(want).max())


def test_registry_is_checked():
    """Bad registrations get one-line errors before any C is compiled."""
    with pytest.raises(InputError, match="not a C identifier"):
        NativeElement(DAMPER_C, "bad name", 1, (0, 0, 0), (1.0,))
    with pytest.raises(InputError, match="must be finite"):
        point_damper(1, (0.0, np.nan, 0.0), 1.0)
    plant = DampedSlider()
    plant.native_elements = (point_damper(5, (0, 0, 0), 1.0),)
    with pytest.raises(NativeUnsupported, match="body 5"):
        check_supported(plant)
    plant = DampedSlider()
    plant.native_elements = plant.native_elements + (point_damper(1, (0, 0, 0), 1.0),)  # its state not appended
    with pytest.raises(NativeUnsupported, match="register_elements"):
        check_supported(plant)
    with pytest.raises(InputError, match="kind 'state'"):
        NativeElement(DAMPER_C, "test_point_damper", 1, (0, 0, 0), (1.0,), states=(Signal("E", "J"),))
    plant = DampedSlider()
    plant.sensors = plant.sensors[:-1] + (ElementOutput(2),)
    with pytest.raises(NativeUnsupported, match="reads plug-in element 2"):
        check_supported(plant)
    plant = DampedSlider()
    plant.canonical = True
    with pytest.raises(ModelError, match="not with canonical variables"):
        plant.simulate(stop_time=0.1)  # the Python dynamics would omit the damper
    with pytest.raises(NativeUnsupported, match="canonical"):
        check_supported(plant)


def test_python_plant_runs_the_same_element_as_the_fmu(slider_fmus):
    """The Python plant runs the element's own C (compiled for the kernels): it follows the
    analytic motion and equals the native FMU's Co-Simulation (same integrator, same C)."""
    m, c, v0 = DampedSlider.MASS, DampedSlider.C, DampedSlider.V0
    plant = DampedSlider()
    t, X, Y = plant.simulate(stop_time=1.0, step=0.05)
    decay = np.exp(-c * t / m)
    np.testing.assert_allclose(Y[:, 1], v0 * decay, rtol=0, atol=1e-6)
    np.testing.assert_allclose(Y[:, 2], 0.5 * m * v0 ** 2 * (1 - decay ** 2), rtol=0, atol=1e-5)
    np.testing.assert_allclose(Y[:, 3], c * Y[:, 1] ** 2, rtol=1e-12, atol=0)
    np.testing.assert_allclose(Y[:, 4], v0 * (decay - 1), rtol=0, atol=1e-5)  # the accelerometer's states
    np.testing.assert_allclose(Y[:, 5], 9.81 * t, rtol=0, atol=1e-5)
    names = ("x", "v", "dissipated", "power", "meter_x", "meter_z")
    res = simulate_fmu(str(slider_fmus[2]), stop_time=1.0, output_interval=0.05, output=names)
    fmu = np.column_stack([res[n] for n in names])
    np.testing.assert_allclose(Y, fmu, rtol=0, atol=1e-12 * (1 + np.abs(fmu).max()))
    # the element's parameter follows the plant's
    t, _, Y5 = DampedSlider(c=5.0).simulate(stop_time=1.0, step=0.05)
    np.testing.assert_allclose(Y5[:, 1], v0 * np.exp(-5.0 * t / m), rtol=0, atol=1e-6)


@pytest.mark.parametrize("label", sorted(STATES))
def test_python_plant_derivatives_equal_the_fmu(pendulum_fmus, label):
    """At one state the Python plant's derivatives and outputs (the element's C through the
    kernels) equal the FMU's Model Exchange derivatives and outputs."""
    x, u = STATES[label]
    plant = DampedPendulum()
    with ModelExchangeInstance(pendulum_fmus[2]) as inst:
        inst.set_point(x, u)
        xdot, y = inst.evaluate()
    np.testing.assert_allclose(plant.derivatives(0.0, x, u), xdot, rtol=0, atol=1e-12 * (1 + np.abs(xdot).max()))
    np.testing.assert_allclose(plant.outputs_at(0.0, x, u), y, rtol=0, atol=1e-12 * (1 + np.abs(y).max()))


def test_python_plant_names_a_broken_element(tmp_path):
    """An element C that does not compile, lacks its class or its class's functions is a
    one-line error."""
    bad = tmp_path / "broken.c"
    bad.write_text("#include \"element.h\"\nconst mbn_element_class broken = {\"broken\", 0, 0, undefined_f};\n")
    plant = DampedSlider()
    plant.native_elements = (NativeElement(bad, "broken", 1, (0, 0, 0)),)
    with pytest.raises(ModelError, match="does not compile") as err:
        plant.derivatives(0.0, plant.initial_state()[:2], np.zeros(1))
    assert "\n" not in str(err.value)
    plant = DampedSlider()
    plant.native_elements = (NativeElement(DAMPER_C, "no_such_class", 1, (0, 0, 0), (1.0,)),)
    with pytest.raises(ModelError, match="defines no no_such_class"):
        plant.derivatives(0.0, plant.initial_state()[:2], np.zeros(1))
    half = tmp_path / "half.c"  # compiles, but has a force without its tangent
    half.write_text("#include \"element.h\"\n"
                    "static void f(const double *p, double t, const double *x, const double *V, const double *s,"
                    " double *F, double *sd) { F[0] = F[1] = F[2] = 0.0; }\n"
                    "const mbn_element_class half = {.name = \"half\", .force = f};\n")
    plant = DampedSlider()
    plant.native_elements = (NativeElement(half, "half", 1, (0, 0, 0)),)
    with pytest.raises(InputError, match=r"its class is incomplete \(a function without its tangent"):
        plant.derivatives(0.0, plant.initial_state()[:2], np.zeros(1))


def test_linearize_is_exact_with_the_element(pendulum_fmus):
    """mbfmu.linearize of the Python plant takes the element's own tangent (the kernels'
    exact tangents): it equals the FMU's directional derivatives and the analytic gradient
    of the dissipated power, and its method says it is exact."""
    import mbfmu
    x, u = np.array([0.7, -0.2, 1.3, -0.8, 0.1, 0.2, -0.3]), np.array([0.3])
    plant = DampedPendulum()
    sys = mbfmu.linearize(plant, x, u)
    lin = sys.linearization
    assert lin.method == "analytic" and lin.output_method == "analytic", lin
    with ModelExchangeInstance(pendulum_fmus[2]) as inst:
        dd = jacobians(inst, x, u, DIRECTIONAL)
    for got, want in ((sys.A, dd.A), (sys.B, dd.B), (sys.C, dd.C), (sys.D, dd.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * (1 + np.abs(want).max()))
    el = plant.native_elements[0]  # the damper
    J = point_jacobian(plant.model, x[:2], el.body, el.point)
    want = 2 * el.parameters[0] * J.T @ J @ x[2:4]
    np.testing.assert_allclose(sys.A[4, 2:4], want, rtol=0, atol=1e-12 * np.abs(want).max())


def test_an_element_runs_in_a_sled_frame(tmp_path):
    """A plug-in element in a sled frame (as the crash occupant's HIC recorder): the damped block
    relative to a sled accelerating at a_s (the input) follows v0 e^(-c t / m) - (m a_s / c)
    (1 - e^(-c t / m)) in the native FMU and the Python plant, and the element's output (its
    power c v^2) is read in both."""
    m, c, v0, a_s = SledDampedSlider.MASS, SledDampedSlider.C, SledDampedSlider.V0, 2.0
    fmu = build_fmu(SledDampedSlider, tmp_path, runtime="native", platforms=("linux64",))
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05, start_values={"sled_acceleration": a_s},
                       output=["v", "dissipated", "power"])
    t = res["time"]
    decay = np.exp(-c * t / m)
    want = v0 * decay - m * a_s / c * (1 - decay)
    np.testing.assert_allclose(res["v"], want, rtol=0, atol=1e-6)
    assert want.min() < 0 < want.max()  # the sled's push reverses the block
    np.testing.assert_allclose(res["power"], c * res["v"] ** 2, rtol=1e-12, atol=0)
    plant = SledDampedSlider()
    _, X, Y = plant.simulate(stop_time=1.0, step=0.05, u=np.array([a_s]))
    np.testing.assert_allclose(Y[:, 0], want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(Y[:, 2], c * Y[:, 0] ** 2, rtol=1e-12, atol=0)
    np.testing.assert_allclose(Y, np.column_stack([res["v"], res["dissipated"], res["power"]]), rtol=0, atol=1e-9)
