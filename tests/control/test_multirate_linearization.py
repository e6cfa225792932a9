"""linearize_system on a multirate loop (#36.3): a Scheduled Execution controller FMU
ticking at T = 5 h around a continuous plant run at the macro step h. The loop the
master runs is then linear time-invariant at T; its margins equal those of the same
design closed by hand in python-control (plant held at T, controller at T) to 1e-8."""
from __future__ import annotations

import warnings

import control
import numpy as np
import pytest

from mbfmu.control import export_fmu
from mbfmu.control.multirate import SOURCE_IDENTIFIED
from mbfmu.control.system_linearization import linearize_system, loop_analysis
from mbfmu.cosim import ControlUnit, FmuUnit, System
from mbfmu.errors import InputError

H = 1e-3   # macro step [s]
T = 5e-3   # controller sample period [s]


def plant() -> control.StateSpace:
    """A damped double integrator 1 / (s (s + 2)): force [N] to position [m]."""
    return control.ss(control.tf([1.0], [1.0, 2.0, 0.0]), inputs=["u"], outputs=["y"], name="plant")


def controller() -> control.StateSpace:
    """Lead compensator with a leaky integrator, Tustin at T: position [m] to force [N]."""
    lead = control.tf([-40.0, -40.0], [1 / 30.0, 1.0]) + control.tf([-5.0], [1.0, 0.1])
    return control.c2d(control.ss(lead), T, method="tustin").copy(name="ctrl")


@pytest.fixture(scope="module")
def ctrl_fmu(tmp_path_factory):
    sys = control.ss(controller(), inputs=["y"], outputs=["u"])
    return export_fmu(sys, tmp_path_factory.mktemp("se"), runtime="native", fmi=3, scheduled=True,
                      platforms=("linux64",))


def _system(ctrl_fmu) -> System:
    return System([ControlUnit("plant", plant()), FmuUnit(ctrl_fmu, "ctrl")],
                  [("plant.y", "ctrl.y"), ("ctrl.u", "plant.u")])


def test_the_controller_unit_is_its_design_at_its_own_period(ctrl_fmu):
    lin = linearize_system(_system(ctrl_fmu), inputs="ctrl.y", outputs="ctrl.u", open_at="plant.y->ctrl.y",
                           sampled=True, step=H)
    assert lin.unit_models["ctrl"] == SOURCE_IDENTIFIED
    assert np.isclose(float(lin.dt), T, rtol=1e-12)
    w = np.logspace(-1, np.log10(np.pi / T * 0.99), 50)
    got = control.frequency_response(lin, w).complex.squeeze()
    want = control.frequency_response(controller(), w).complex.squeeze()
    assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()


def test_margins_of_the_multirate_loop_equal_the_hand_built_discrete_loop(ctrl_fmu):
    la = loop_analysis(_system(ctrl_fmu), "ctrl.u->plant.u", sampled=True, step=H)
    # by hand: an injection w at plant.u comes back at ctrl.u as C(z) P_T(z) w = -L w
    L_hand = -controller() * control.c2d(plant(), T, method="zoh")
    assert np.isclose(float(la.L.dt), T, rtol=1e-12)
    w = np.logspace(-1, np.log10(np.pi / T * 0.99), 200)  # rounding grows as 1/|z - 1| near the integrator
    got = control.frequency_response(la.L, w).complex.squeeze()
    want = control.frequency_response(L_hand, w).complex.squeeze()
    assert np.all(np.abs(got - want) <= 1e-8 * np.abs(want))
    gm, pm, wpc, wgc = _hand_margins(L_hand)
    m = la.margins()
    assert m["checked"] and m["closed_loop_stable"]
    assert np.isfinite(gm) and np.isfinite(pm) and 10 < pm < 90  # the loop has both crossovers
    assert m["gain_margin"] == pytest.approx(gm, rel=1e-8)
    assert m["phase_margin"] == pytest.approx(pm, rel=1e-8)
    assert m["gain_crossover"] == pytest.approx(wgc, rel=1e-8)
    assert m["phase_crossover"] == pytest.approx(wpc, rel=1e-8)
    # and the loop at h with the controller ticking each macro step would be another loop
    assert not np.allclose(np.linalg.eigvals(la.S.A), 0.0)


def _hand_margins(L: control.StateSpace) -> tuple[float, float, float, float]:
    """Gain and phase margin of a discrete SISO loop, and the phase and gain crossovers [rad/s]:
    python-control's estimates (its 'frd' fallback is grid-accurate only), each crossover
    then solved on L(exp(j w T)) by brentq."""
    from scipy.optimize import brentq
    with warnings.catch_warnings():  # "falling back to 'frd'": these are only the seeds
        warnings.simplefilter("ignore", UserWarning)
        _, _, _, wpc0, wgc0, _ = control.stability_margins(L)
    Lw = lambda w: complex(np.squeeze(L(np.exp(1j * w * T))))  # noqa: E731
    wgc = brentq(lambda w: abs(Lw(w)) - 1.0, 0.9 * wgc0, min(1.1 * wgc0, np.pi / T), xtol=1e-14, rtol=1e-15)
    wpc = brentq(lambda w: Lw(w).imag, 0.95 * wpc0, min(1.05 * wpc0, np.pi / T * (1 - 1e-12)), xtol=1e-14,
                 rtol=1e-15)
    pm = 180.0 + np.degrees(np.angle(Lw(wgc)))
    return 1.0 / abs(Lw(wpc)), float(pm), float(wpc), float(wgc)


def test_a_period_that_is_no_whole_number_of_steps_is_refused(ctrl_fmu):
    with pytest.raises(InputError, match="whole number") as err:
        linearize_system(_system(ctrl_fmu), inputs="ctrl.y", outputs="ctrl.u", sampled=True, step=2e-3)
    assert "\n" not in str(err.value)


def test_the_continuous_ideal_takes_the_controller_s_tustin_equivalent(ctrl_fmu):
    lin = linearize_system(_system(ctrl_fmu), inputs="ctrl.y", outputs="ctrl.u", open_at="plant.y->ctrl.y",
                           step=H)
    assert lin.isctime(strict=True) and "Tustin" in lin.unit_models["ctrl"]
    back = control.c2d(lin, T, method="tustin")
    w = np.logspace(-1, 2, 20)
    got = control.frequency_response(back, w).complex.squeeze()
    want = control.frequency_response(controller(), w).complex.squeeze()
    assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()


def test_a_saturating_controller_is_refused_as_no_linear_system(tmp_path):
    """A PID whose output limits act on a unit impulse: the realization from the impulses
    misses the check run, and the unit is refused by name instead of modelled wrongly."""
    from mbfmu.control import pid
    law = pid(Kp=100.0, Ki=10.0, dt=T, u_min=-1.0, u_max=1.0, name="sat")
    fmu = export_fmu(law, tmp_path, runtime="native", fmi=3, scheduled=True, platforms=("linux64",))
    system = System([ControlUnit("plant", plant()), FmuUnit(fmu, "ctrl")],
                    [("plant.y", "ctrl.y"), ("ctrl.u", "plant.u")])
    with pytest.raises(InputError, match="unit 'ctrl': .* not linear time-invariant") as err:
        loop_analysis(system, "ctrl.u->plant.u", sampled=True, step=H)
    assert "\n" not in str(err.value)


def test_a_native_fmi2_controller_is_its_design_too(tmp_path):
    """The same design as a native FMI 2.0 co-simulation controller, at a macro step of T:
    identified exactly at its sample time, and the sampled loop is the hand-built one."""
    fmu = export_fmu(control.ss(controller(), inputs=["y"], outputs=["u"]), tmp_path, runtime="native",
                     platforms=("linux64",))
    system = System([ControlUnit("plant", plant()), FmuUnit(fmu, "ctrl")],
                    [("plant.y", "ctrl.y"), ("ctrl.u", "plant.u")])
    la = loop_analysis(system, "ctrl.u->plant.u", sampled=True, step=T)
    assert la.unit_models["ctrl"] == SOURCE_IDENTIFIED
    L_hand = -controller() * control.c2d(plant(), T, method="zoh")
    w = np.logspace(-1, np.log10(np.pi / T * 0.99), 100)
    got = control.frequency_response(la.L, w).complex.squeeze()
    want = control.frequency_response(L_hand, w).complex.squeeze()
    assert np.all(np.abs(got - want) <= 1e-8 * np.abs(want))
    with pytest.raises(InputError, match="co-simulation FMU with sample time .* cannot run at a macro step"):
        loop_analysis(system, "ctrl.u->plant.u", sampled=True, step=T / 5)


def test_a_native_fmi2_controller_runs_two_samples_per_macro_step(tmp_path):
    """At a macro step of 2 T the FMU takes two samples with its input held: the hand-built
    model is the controller's own two-step map (A^2, (A + I) B), its output at the step."""
    fmu = export_fmu(control.ss(controller(), inputs=["y"], outputs=["u"]), tmp_path, runtime="native",
                     platforms=("linux64",))
    system = System([ControlUnit("plant", plant()), FmuUnit(fmu, "ctrl")],
                    [("plant.y", "ctrl.y"), ("ctrl.u", "plant.u")])
    lin = linearize_system(system, inputs="ctrl.y", outputs="ctrl.u", open_at="plant.y->ctrl.y",
                           sampled=True, step=2 * T)
    c = controller()
    A, B = np.asarray(c.A), np.asarray(c.B)
    two = control.ss(A @ A, (A + np.eye(A.shape[0])) @ B, c.C, c.D, 2 * T)
    w = np.logspace(-1, np.log10(np.pi / (2 * T) * 0.99), 50)
    got = control.frequency_response(lin, w).complex.squeeze()
    want = control.frequency_response(two, w).complex.squeeze()
    assert np.all(np.abs(got - want) <= 1e-8 * np.abs(want))
    # and the FMU run by the master at 2 T gives what the model predicts
    from mbfmu.cosim import simulate, sources
    run = simulate(System([sources.sine("s", 0.3, 7.0), FmuUnit(fmu, "c")], [("s.y", "c.y")]), 0.2, 2 * T,
                   record=["s.y", "c.u"])
    pred = control.forced_response(lin, U=run["s.y"]).outputs
    assert np.abs(pred - run["c.u"]).max() <= 1e-9 * np.abs(run["c.u"]).max()
