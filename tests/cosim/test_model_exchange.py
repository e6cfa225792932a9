"""Model Exchange units: the master integrates the FMU (CVODE BDF) between
communication points and handles its events.

References: the analytic bounce times of the Reference BouncingBall, the
exact solution of Dahlquist, scipy's DOP853 on Van der Pol's equations,
the Reference Stair's time events (counter = 1 + floor(t)), fmpy's own Model
Exchange loop at matched tolerances, and the co-simulation of the same
native mbfmu FMU.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
from fmpy import simulate_fmu

from mbfmu.cosim import FmuUnit, System, simulate, sources
from mbfmu.cosim.fmi.fmu_me import Fmu3MeUnit, FmuMeUnit
from mbfmu.errors import InputError
from tooling import reference_fmu

from .helpers import bounce_times

VERSIONS = ["fmi2", "fmi3"]
ME_CLASS = {"fmi2": FmuMeUnit, "fmi3": Fmu3MeUnit}


def _me(version, model, name="u", **kw):
    u = FmuUnit(reference_fmu(version, model), name, interface="me", **kw)
    assert type(u) is ME_CLASS[version] and u.interface == "me"
    return u


@pytest.mark.parametrize("version", VERSIONS)
def test_bouncing_ball_bounces_at_the_analytic_times(version):
    u = _me(version, "BouncingBall", "ball", rtol=1e-10, atol=1e-10)
    r = simulate(System([u]), 2.5, 0.01, progress=False)
    states = [t for t, kind in u.events if kind == "state"]
    exact = bounce_times(5)
    assert len(states) >= 5
    np.testing.assert_allclose(states[:5], exact, rtol=0, atol=1e-6)
    # between bounces the ball flies freely: at the first communication point past the
    # second bounce, h follows the parabola from that bounce
    t2 = exact[1]
    k = int(np.searchsorted(r.time, t2)) + 1
    v_up = 9.81 * exact[0] * 0.7 ** 2
    tau = r.time[k] - t2
    assert abs(r["ball.h"][k] - (v_up * tau - 0.5 * 9.81 * tau ** 2)) < 1e-6


@pytest.mark.parametrize("version", VERSIONS)
def test_dahlquist_follows_the_exponential(version):
    u = _me(version, "Dahlquist", "d", rtol=1e-10, atol=1e-12)
    r = simulate(System([u]), 10.0, 0.1, progress=False)
    np.testing.assert_allclose(r["d.x"], np.exp(-r.time), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("version", VERSIONS)
def test_van_der_pol_equals_scipy(version):
    u = _me(version, "VanDerPol", "v", rtol=1e-10, atol=1e-10)
    r = simulate(System([u]), 10.0, 0.05, progress=False)
    mu = 1.0
    ref = scipy.integrate.solve_ivp(lambda t, x: [x[1], mu * (1 - x[0] ** 2) * x[1] - x[0]], (0, 10), [2.0, 0.0],
                                    method="DOP853", rtol=1e-12, atol=1e-12, t_eval=r.time)
    np.testing.assert_allclose(r["v.x0"], ref.y[0], atol=2e-6)
    np.testing.assert_allclose(r["v.x1"], ref.y[1], atol=2e-6)


@pytest.mark.parametrize("version", VERSIONS)
def test_stair_time_events_step_the_counter_every_second(version):
    u = _me(version, "Stair", "s")
    r = simulate(System([u]), 10.0, 0.1, progress=False)
    assert u.events == [(float(k), "time") for k in range(1, 9)]
    # at the ninth event Stair asks to stop: the run ends at the last good point, as its
    # co-simulation does
    assert r.summary.status == "stopped" and "t = 9.0 s" in r.summary.message and r.time[-1] == pytest.approx(8.9)
    np.testing.assert_array_equal(r["s.counter"], 1 + np.floor(r.time + 1e-9))
    ref = simulate_fmu(str(reference_fmu(version, "Stair")), fmi_type="ModelExchange", stop_time=10.0,
                       output_interval=0.1)
    # fmpy records the values before and after each event at the event time; the ones after
    after = {round(float(t), 9): c for t, c in zip(ref["time"], ref["counter"])}
    np.testing.assert_array_equal(r["s.counter"], [after[round(float(t), 9)] for t in r.time])


@pytest.mark.parametrize("version", VERSIONS)
def test_bouncing_ball_equals_fmpy_model_exchange_at_matched_tolerance(version):
    u = _me(version, "BouncingBall", "ball", rtol=1e-8)
    r = simulate(System([u]), 3.0, 0.01, progress=False)
    ref = simulate_fmu(str(reference_fmu(version, "BouncingBall")), fmi_type="ModelExchange", stop_time=3.0,
                       output_interval=0.01, relative_tolerance=1e-8)
    last = {round(float(t), 9): h for t, h in zip(ref["time"], ref["h"])}  # after an event at a point
    np.testing.assert_allclose(r["ball.h"], [last[round(float(t), 9)] for t in r.time], atol=1e-5)


def test_interface_choice_and_refusals(clock_fmu):
    bb = reference_fmu("fmi2", "BouncingBall")
    assert type(FmuUnit(bb)) is FmuUnit  # both interfaces: co-simulation unless asked
    assert type(FmuUnit(bb, interface="cs")) is FmuUnit
    with pytest.raises(InputError, match="interface 'xx' must be 'cs'"):
        FmuUnit(bb, interface="xx")
    with pytest.raises(InputError, match="no FMI 2.0 model exchange interface"):
        FmuUnit(clock_fmu, interface="me")
    with pytest.raises(InputError, match="rtol = -1"):
        FmuUnit(bb, interface="me", rtol=-1)


@pytest.mark.parametrize("version, model, interface", [
    ("fmi2", "BouncingBall", None), ("fmi2", "BouncingBall", "me"), ("fmi3", "BouncingBall", None),
    ("fmi3", "BouncingBall", "me"), ("fmi3", "Clocks", None), ("fmi3", "Dahlquist", "me")])
def test_open_fmu_picks_the_class_the_description_calls_for(version, model, interface):
    """The factory's choice agrees with the model description as fmpy reads it
    (FMI version, the interface run, clocks), and ``FmuUnit(path)`` is its alias."""
    from fmpy import read_model_description

    from mbfmu.cosim import open_fmu
    from mbfmu.cosim.fmi.fmu3_events import Fmu3EventUnit
    from mbfmu.cosim.fmi.fmu3_scheduled import Fmu3ScheduledUnit
    from mbfmu.cosim.fmi.fmu3_unit import Fmu3Unit
    path = reference_fmu(version, model)
    md = read_model_description(str(path))
    unit = open_fmu(path, "u", interface=interface)
    fmi3 = md.fmiVersion.startswith("3.")
    scheduled = interface != "me" and md.coSimulation is None and md.scheduledExecution is not None
    me = interface == "me" or md.coSimulation is None
    clocks = any(v.type == "Clock" for v in md.modelVariables)
    expected = (Fmu3ScheduledUnit if scheduled else (Fmu3MeUnit if fmi3 else FmuMeUnit) if me else
                (Fmu3EventUnit if clocks else Fmu3Unit) if fmi3 else FmuUnit)
    assert type(unit) is expected and unit.name == "u"
    assert type(FmuUnit(path, "u", interface=interface)) is expected


@pytest.mark.parametrize("version", VERSIONS)
def test_rollback_repeats_a_step_with_its_events(version):
    """Save before a step with a bounce, step, restore, step again: the same outputs
    and the same event; and an adaptive run (which probes and uses rollback) still
    bounces at the analytic times."""
    u = _me(version, "BouncingBall", "ball", rtol=1e-10, atol=1e-10)
    assert u.can_rollback
    u.will_roll_back = True
    u.connect_inputs([])
    u.setup(0.0, 3.0, 0.1)
    for k in range(4):
        u.do_step(k * 0.1, 0.1)
    s = u.get_state()
    u.do_step(0.4, 0.1)  # the first bounce, at 0.4515 s
    u.pull()
    first, events = list(u.y[:2]), list(u.events)
    u.set_state(s)
    assert len(u.events) == 0
    u.do_step(0.4, 0.1)
    u.pull()
    assert list(u.y[:2]) == first and u.events == events
    u.free_state(s)
    u.terminate()
    a = _me(version, "BouncingBall", "ball", rtol=1e-10, atol=1e-10)
    r = simulate(System([a]), 1.2, 0.01, adaptive=True, extrapolation=1, progress=False)
    assert r.time[-1] == 1.2
    np.testing.assert_allclose([t for t, kind in a.events if kind == "state"][:2], bounce_times(2), atol=1e-6)


@pytest.fixture(scope="module")
def rigid_arm_fmu(native_fmus):
    return native_fmus("rigid_arm", platforms=("linux64",))


def _torque_steps(arm):
    src = [sources.step(f"s{k}", 0.3, height=h, initial=0.5 * h) for k, h in enumerate((2.0, -5.0, 3.0))]
    return System([arm, *src], [(f"s{k}.y", f"arm.tau[{k + 1}]") for k in range(3)])


def test_native_plant_as_model_exchange_equals_its_co_simulation(rigid_arm_fmu):
    """mbfmu's own native FMU has both interfaces: driven by torque steps through
    connected inputs, the master's integration of its ME equations equals the
    FMU's own co-simulation integrator."""
    cs = simulate(_torque_steps(FmuUnit(rigid_arm_fmu, "arm")), 1.0, 1e-3, progress=False)
    me_unit = FmuUnit(rigid_arm_fmu, "arm", interface="me", rtol=1e-10, atol=1e-10)
    me = simulate(_torque_steps(me_unit), 1.0, 1e-3, progress=False)
    for n in ("arm.q[1]", "arm.q[2]", "arm.q[3]", "arm.v[1]", "arm.v[2]", "arm.v[3]"):
        scale = float(np.max(np.abs(cs[n])))
        assert scale > 0.1  # the arm moves
        np.testing.assert_allclose(me[n], cs[n], rtol=0, atol=1e-6 * scale)


def test_cli_runs_model_exchange_and_isolated_units_keep_it(tmp_path):
    import subprocess
    import sys

    from mbfmu.cosim import load_result
    out = tmp_path / "ball.csv"
    p = subprocess.run([sys.executable, "-m", "mbfmu", "simulate", str(reference_fmu("fmi3", "BouncingBall")),
                        "--interface", "me", "--me-tolerance", "1e-9", "--stop-time", "1", "--step", "0.01",
                        "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cs = simulate(System([FmuUnit(reference_fmu("fmi3", "BouncingBall"), "BouncingBall")]), 1.0, 0.01)
    me = load_result(out)
    assert me.meta["components"]["BouncingBall"]["type"] == "Fmu3MeUnit"
    # the co-simulation takes Euler steps of 1 ms; the model exchange run is exact to 1e-9
    t = me.time[(me.time < bounce_times(1)[0])]
    np.testing.assert_allclose(me["BouncingBall.h"][:len(t)], 1 - 0.5 * 9.81 * t ** 2, atol=1e-7)
    assert np.max(np.abs(me["BouncingBall.h"] - cs["BouncingBall.h"])) < 0.05
    iso = simulate(System([_me("fmi2", "VanDerPol", "v", rtol=1e-9)]), 1.0, 0.05, isolate=True, progress=False)
    own = simulate(System([_me("fmi2", "VanDerPol", "v", rtol=1e-9)]), 1.0, 0.05, progress=False)
    np.testing.assert_array_equal(iso["v.x0"], own["v.x0"])


def test_openmodelica_mass_spring_as_model_exchange_is_the_limit_of_its_co_simulation(openmodelica_fmus):
    """OpenModelica's MassSpringSystem takes one explicit Euler step per communication
    step in co-simulation: its CS result converges to the ME result at first order
    (ten times closer at a ten times smaller step), and the ME result equals fmpy's
    own Model Exchange run."""
    path = openmodelica_fmus["MassSpringSystem"]
    names = ["s.x1", "s.x2", "s.v1", "s.v2"]
    me = simulate(System([FmuUnit(path, "s", interface="me", rtol=1e-10, atol=1e-10)]), 10.0, 1e-3, progress=False)
    errors = []
    for h in (1e-3, 1e-4):
        cs = simulate(System([FmuUnit(path, "s")]), 10.0, h, progress=False)
        k = int(round(1e-3 / h))
        errors.append(max(float(np.max(np.abs(cs[n][::k] - me[n]))) for n in names))
    assert errors[1] < 3e-3 and 7 < errors[0] / errors[1] < 13
    ref = simulate_fmu(str(path), fmi_type="ModelExchange", stop_time=10.0, output_interval=1e-2,
                       relative_tolerance=1e-10)
    for n in names:
        np.testing.assert_allclose(me[n][::10], ref[n.split(".")[1]][:len(me[n][::10])], atol=1e-6)
