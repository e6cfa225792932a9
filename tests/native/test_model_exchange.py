"""Model Exchange of the native FMU (#24.1, #24.4): fmpy integrates the FMU's
derivatives with its own solver (CVODE) and handles its events; the result
equals the FMU's own co-simulation at tight tolerances, the satellite's latches
engage when the Python plant's do, and the model description says what is
continuous, discrete, and when events come."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu
from fmpy.validation import validate_fmu

from mbfmu.fmu.native.model_exchange import ModelExchangeUnsupported, event_indicators
from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.library import load_plant

from .conftest import NATIVE_PLANTS
from .plants import Ball, BumpedChain, UrdfChain

TOL = 1e-11
# stop time (s); the inputs step at 33 and 66 of 100 output intervals (the
# crash's stop puts no output instant on its HIC grid of 0.5 ms, whose events
# change the history: the output rows are then unique or an input step's)
STOPS = {"rigid_arm": 1.0, "canonical_2body": 1.0, "flexible_arm": 0.6, "satellite": 20.0, "crash_occupant": 0.1507}
PROFILES = {name: (stop, (0.33 * stop, 0.66 * stop)) for name, stop in STOPS.items()}
LEVELS = (1.0, -0.5, 1.5)  # the inputs of NATIVE_PLANTS times these, one per phase


def _profile(name: str) -> np.ndarray:
    """fmpy's input table: piecewise constant, stepping at the profile's instants
    (a repeated time marks the step, so Model Exchange sees a discontinuity)."""
    stop, steps = PROFILES[name]
    inputs = NATIVE_PLANTS[name]
    edges = (0.0, *steps, stop)
    rows = []
    for k, level in enumerate(LEVELS):
        values = tuple(level * v for v in inputs.values())
        rows += [(edges[k], *values), (edges[k + 1], *values)]
    return np.array(rows, dtype=[("time", float)] + [(n, float) for n in inputs])


def _outputs(fmu) -> list[str]:
    return [v.name for v in read_model_description(str(fmu)).modelVariables if v.causality == "output"]


def _run(fmu, name: str, kind: str, output=None):
    stop, _ = PROFILES[name]
    return simulate_fmu(str(fmu), fmi_type=kind, stop_time=stop, relative_tolerance=TOL, input=_profile(name),
                        output_interval=stop / 100, output=output)


def _on_grid(result, times: np.ndarray) -> np.ndarray:
    """The rows of ``result`` at ``times``; of a repeated time (an event) the first,
    before the event, as fmpy's co-simulation records outputs before it sets
    the next inputs."""
    t = result["time"]
    idx = np.searchsorted(t, times - 1e-12 * max(1.0, abs(times[-1])), side="left")
    assert np.allclose(t[idx], times, rtol=0, atol=1e-9 * max(1.0, times[-1]))
    return result[idx]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "crash_occupant" else n
                                  for n in sorted(NATIVE_PLANTS)])
def test_model_exchange_in_fmpy_equals_the_fmus_co_simulation(name, native_fmu):
    fmu = native_fmu(name)
    cs = _run(fmu, name, "CoSimulation")
    me = _on_grid(_run(fmu, name, "ModelExchange"), cs["time"])
    for out in _outputs(fmu):
        scale = max(np.abs(cs[out]).max(), 1.0 if "momentum" in out else 1e-300)
        err = np.abs(me[out] - cs[out]).max() / scale
        assert err <= 1e-6, f"{out}: ME and CS differ by {err:.3g} (relative to its largest value)"


def test_the_inputs_step_changes_the_run(native_fmu):
    """The profile excites the plant: the run differs from one with the inputs held."""
    fmu = native_fmu("rigid_arm")
    stepped = _run(fmu, "rigid_arm", "ModelExchange")
    held = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=1.0, relative_tolerance=TOL,
                        input=_profile("rigid_arm")[:2], output_interval=0.01)
    assert np.abs(stepped["q[1]"][-1] - held["q[1]"][-1]) > 1e-2


def _python_latch_times(stop: float) -> np.ndarray:
    """The instants (s) at which the Python satellite's latches engage, from its
    own advance at a tight tolerance: within the step in which a flag flips,
    bisection on the length of the advance (a latch engages in advance(t, x, dt)
    exactly when its instant is at most t + dt)."""
    plant = load_plant("satellite")
    plant.set_tolerance(1e-12)
    nq, nv = plant.model.nq, plant.model.nv
    u = plant.default_inputs()
    for k, s in enumerate(plant.inputs):
        u[k] = NATIVE_PLANTS["satellite"].get(s.name, u[k])
    h, t, x = 0.5, 0.0, plant.initial_state()
    times = np.full(len(plant.states) - nq - nv, np.nan)
    while t < stop - 1e-9:
        x1 = plant.advance(t, x, u, h)
        new = (x1[nq + nv:] > 0.5) & (x[nq + nv:] < 0.5)
        for j in np.flatnonzero(new):
            lo, hi = 0.0, h
            while hi - lo > 1e-12:
                mid = 0.5 * (lo + hi)
                if plant.advance(t, x, u, mid)[nq + nv + j] > 0.5:
                    hi = mid
                else:
                    lo = mid
            times[j] = t + hi
        t, x = t + h, x1
    return times


def test_the_satellites_latches_engage_at_the_python_plants_event_times(native_fmu):
    """CVODE's global error limits the located instants: at rtol 1e-12 they are
    4e-8 s off, at 1e-14 within 4e-10 s (the Python plant's instants agree at
    1e-11, 1e-12 and 1e-13 to 2e-12 s)."""
    fmu = native_fmu("satellite")
    stop = 15.0  # every latch engages by 14 s
    flags = [f"states.latched[{j}]" for j in range(1, 7)]
    inputs = NATIVE_PLANTS["satellite"]
    held = np.array([(0.0, *inputs.values()), (stop, *inputs.values())],
                    dtype=[("time", float)] + [(n, float) for n in inputs])
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=stop, relative_tolerance=1e-14, input=held,
                       output_interval=0.01, output=flags)
    me_times = np.array([res["time"][np.argmax(res[f] > 0.5)] if res[f][-1] > 0.5 else np.nan for f in flags])
    expected = _python_latch_times(stop)
    assert np.all(np.isfinite(expected)), expected  # every latch engages in the run
    np.testing.assert_allclose(me_times, expected, rtol=0, atol=1e-9)


def test_the_satellite_as_a_model_exchange_unit_has_only_its_latch_events_and_equals_co_simulation(native_fmu):
    """#35: the quaternions' projection asked for a step event at every completed
    step (every output point, 400 of 400 here) and so restarted the integrator
    there. Now the only events are the six latches engaging, and the outputs
    equal the FMU's own co-simulation to the tolerance."""
    from mbfmu.cosim import FmuUnit, System, simulate

    fmu = native_fmu("satellite")
    stop, h = 20.0, 0.05
    inputs = NATIVE_PLANTS["satellite"]
    me_unit = FmuUnit(fmu, "s", values=inputs, interface="me", rtol=1e-10)
    me = simulate(System([me_unit]), stop, h, progress=False)
    cs = simulate(System([FmuUnit(fmu, "s", values=inputs, interface="cs")]), stop, h, progress=False)
    kinds = [kind for _, kind in me_unit.events]
    assert kinds == ["state"] * 6, f"events {me_unit.events[:8]}..."
    for out in _outputs(fmu):
        col = f"s.{out}"
        scale = max(np.abs(cs[col]).max(), 1.0 if "momentum" in out else 1e-300)
        err = np.abs(me[col] - cs[col]).max() / scale
        assert err <= 1e-6, f"{out}: ME and CS differ by {err:.3g} (relative to its largest value)"


def test_the_crash_occupants_hic_samples_are_time_events_that_cost_no_restart(native_fmu):
    """#35: every HIC sample (a 0.5 ms grid) is a time event that changes only the
    recorder's history; the round-off norm drift of the quaternions handed back at
    each of them made the host restart CVODE there (528 restarts in 0.25 s). Now
    only the contacts' state events and the sled pulse's ends restart it, and the
    outputs equal the FMU's own co-simulation to the tolerance."""
    from mbfmu.cosim import FmuUnit, System, simulate

    fmu = native_fmu("crash_occupant")
    sample = load_plant("crash_occupant").native_elements[0].parameters[0]  # the HIC recorder's grid (s)
    stop, h = 0.1, 1e-3
    inputs = NATIVE_PLANTS["crash_occupant"]
    me_unit = FmuUnit(fmu, "c", values=inputs, interface="me", rtol=1e-8)
    me = simulate(System([me_unit]), stop, h, progress=False)
    cs = simulate(System([FmuUnit(fmu, "c", values=inputs, interface="cs")]), stop, h, progress=False)
    times = np.array([t for t, kind in me_unit.events if kind == "time"])
    on_grid = np.abs(times / sample - np.round(times / sample)) < 1e-6
    assert on_grid.sum() == round(stop / sample) and (~on_grid).sum() <= 2  # the samples, the pulse's ends
    n_state = sum(kind == "state" for _, kind in me_unit.events)
    assert me_unit.restarts <= n_state + 2, (me_unit.restarts, n_state)
    for out in _outputs(fmu):
        col = f"c.{out}"
        scale = max(np.abs(cs[col]).max(), 1e-300)
        err = np.abs(me[col] - cs[col]).max() / scale
        assert err <= 1e-3, f"{out}: ME and CS differ by {err:.3g} (relative to its largest value)"


@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_the_model_description_declares_model_exchange(name, native_fmu):
    fmu = native_fmu(name)
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    plant = load_plant(name)
    assert md.modelExchange.modelIdentifier == md.coSimulation.modelIdentifier
    assert md.numberOfEventIndicators == len(event_indicators(plant))
    states = [v for v in md.modelVariables if v.name.startswith("states.")]
    continuous = [d.variable.derivative for d in md.derivatives]
    assert [v.name for v in continuous] == [v.name for v in states[:len(continuous)]]
    assert all(v.variability == "discrete" for v in states[len(continuous):])
    # the satellite's latch flags, the crash occupant's HIC recorder's history and maximum
    discrete = {"satellite": 6, "crash_occupant": 31 + 1}
    assert len(states) - len(continuous) == discrete.get(name, 0)
    for d in md.derivatives:
        assert d.variable.name == f"der({d.variable.derivative.name})"
        assert {v.name for v in d.dependencies} == {v.name for v in continuous} | {s.name for s in plant.inputs}
    assert {v.variable.name for v in md.outputs} == {s.name for s in plant.outputs}


def _indicators_at_start(fmu) -> np.ndarray:
    """The event indicators after initialization, read with fmpy's FMU2Model."""
    from fmpy import extract
    from fmpy.fmi2 import FMU2Model
    md = read_model_description(str(fmu))
    model = FMU2Model(guid=md.guid, unzipDirectory=extract(str(fmu)),
                      modelIdentifier=md.modelExchange.modelIdentifier, instanceName="z")
    model.instantiate()
    model.setupExperiment(startTime=0.0)
    model.enterInitializationMode()
    model.exitInitializationMode()
    import ctypes
    z = np.zeros(md.numberOfEventIndicators)
    model.getEventIndicators(z.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), z.size)
    model.terminate()
    model.freeInstance()
    return z


def test_event_indicators_are_the_distances_to_each_switch(tmp_path):
    """A URDF chain's joint limits (shoulder in [-1, 1] rad, telescope in
    [-0.05, 0.1] m, both at 0 at the start) and the ball's contact, cable and
    (no indicator) spring: the indicators are the distances to each switch,
    computed here from the plants' start geometry."""
    chain = UrdfChain()
    assert [i.description for i in event_indicators(chain)] == [
        "shoulder: distance to its lower limit", "shoulder: distance to its upper limit",
        "telescope: distance to its lower limit", "telescope: distance to its upper limit"]
    z = _indicators_at_start(build_fmu(UrdfChain, tmp_path / "chain", runtime="native", platforms=("linux64",)))
    np.testing.assert_allclose(z, [1.0, 1.0, 0.05, 0.1], rtol=0, atol=1e-15)
    ball = Ball()
    assert [i.description for i in event_indicators(ball)] == ["contact floor: penetration (m)",
                                                               "cable tether: stretch (m), slack below 0"]
    z = _indicators_at_start(build_fmu(Ball, tmp_path / "ball", runtime="native", platforms=("linux64",)))
    # ball centre at z = 0.095 m, radius 0.1 m; tether from (0, 0, 1.5) to the ball's top (0.1, 0, 0.195)
    tether = np.hypot(0.1, 1.5 - 0.195) - 1.3
    np.testing.assert_allclose(z, [0.1 - 0.095, tether], rtol=1e-12)
    sat = event_indicators(load_plant("satellite"))
    assert [i.description.split(":")[0] for i in sat] == [f"latch {j}" for j in range(1, 7)]


@pytest.mark.parametrize("cls", [UrdfChain, Ball])
def test_plants_of_engine_elements_run_as_model_exchange(cls, tmp_path):
    """A URDF chain on a floating base (quaternion, limits) and a ball on a plane
    (contact, cable, spring): Model Exchange equals co-simulation."""
    fmu = build_fmu(cls, tmp_path, runtime="native", platforms=("linux64",))
    stop = 0.5
    kw = dict(stop_time=stop, relative_tolerance=TOL, output_interval=stop / 50)
    cs = simulate_fmu(str(fmu), fmi_type="CoSimulation", **kw)
    me = _on_grid(simulate_fmu(str(fmu), fmi_type="ModelExchange", **kw), cs["time"])
    for out in _outputs(fmu):
        scale = max(np.abs(cs[out]).max(), 1e-3)
        assert np.abs(me[out] - cs[out]).max() / scale <= 1e-6, out


def test_a_plant_with_a_jump_of_its_own_is_refused_for_model_exchange_by_name(tmp_path):
    with pytest.raises(ModelExchangeUnsupported, match="bumped_chain.*end-stop impact.*--interface cs"):
        build_fmu(BumpedChain, tmp_path, runtime="native", platforms=("linux64",))
    fmu = build_fmu(BumpedChain, tmp_path, runtime="native", platforms=("linux64",), interfaces=("cs",))
    md = read_model_description(str(fmu))
    assert md.coSimulation is not None and md.modelExchange is None


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["ur5", "panda"])
def test_urdf_robots_with_servos_friction_and_limits_run_as_model_exchange(robot, tmp_path):
    """The URDF robots of example-robot-data, every drive mode, Coulomb friction
    and joint limits active: Model Exchange in fmpy equals co-simulation."""
    from .robots import H, N, inputs_of, robot_plant
    plant = robot_plant(robot, tmp_path)
    fmu = build_fmu(plant, tmp_path / "fmu", runtime="native", platforms=("linux64",))
    u = inputs_of(plant)
    table = np.array([(0.0, *u.values()), (N * H, *u.values())], dtype=[("time", float)] + [(k, float) for k in u])
    kw = dict(stop_time=N * H, relative_tolerance=TOL, input=table)
    cs = simulate_fmu(str(fmu), fmi_type="CoSimulation", output_interval=H, **kw)
    # CVODE takes more than its 500 steps per output interval of H through the panda's servo transients
    me = _on_grid(simulate_fmu(str(fmu), fmi_type="ModelExchange", output_interval=H / 10, **kw), cs["time"])
    for out in _outputs(fmu):
        scale = max(np.abs(cs[out]).max(), 1e-3)
        assert np.abs(me[out] - cs[out]).max() / scale <= 1e-6, out
    assert read_model_description(str(fmu)).numberOfEventIndicators == len(event_indicators(plant)) > 0
