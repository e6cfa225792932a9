"""The closed loops of the four studies (examples/*_study.py) run in the
co-simulation master's compiled loop (mbfmu.control.master_loop.simulate_fmu_loop:
the plant's native FMU, the study's own controller as a ControlUnit, its
references as source units), give the Python loop's results
(MBFMU_PYTHON_LOOP=1), and equal the same loop closed on the Python plant
(mbfmu.control.simulate_loop, the plant's own integrator) to the rounding of
the two implementations of the plant.

Measured differences, native FMU in the master against the Python plant, the
largest over each array relative to max(1, its largest value): rigid arm
3e-15, satellite 1e-14 (the small step from the trimmed state, given to the
FMU as its states' start values: 1e-15 over 4 s, 5e-15 over the study's 20 s), canonical two-body 8e-15 (its steady state enters
through the plant's initial-condition parameters, 9e-16 from the trimmed
state), flexible arm 5e-15 under the rigid PD and 8e-13 under the LQG over
0.3 s (its 18-state observer amplifies the plants' last-bit differences).
Asserted: 1e-12 of each array's scale, 1e-11 for the LQG loop.
"""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from cosim.loop_comparison import bitwise_equal, both_loops
from mbfmu.control.master_loop import loop_system, simulate_fmu_loop
from mbfmu.control.sampled import simulate_loop
from mbfmu.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REL = 1e-12  # master (native FMU) against the Python plant, of each array's scale


def _study(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rigid():
    return _study("rigid_arm_study")


@pytest.fixture(scope="module")
def flexible():
    return _study("flexible_arm_study")


@pytest.fixture(scope="module")
def satellite():
    return _study("satellite_study")


@pytest.fixture(scope="module")
def canonical():
    return _study("canonical_2body_study")


def _fmu(native_fmus, plant):
    """The plant's native FMU with the study's parameters (cached across runs)."""
    return native_fmus(plant.name, parameters=dict(plant.parameter_values()), platforms=("linux64",))


def _compiled_equals_python_loop(monkeypatch, plant, fmu, ctrl, stop, exact=True, **kw):
    """Run the loop's system in both loops of the master (asserting the first
    took the compiled loop, python_loop_reason None); equal bit for bit, or to
    1e-12 of each column's scale when an LTI controller is stepped in C (its
    matrix-vector sums are added in sequence, numpy's may group differently)."""
    system, record, step = loop_system(plant, fmu, ctrl, stop, **kw)
    (fast, _), (slow, _) = both_loops(lambda: loop_system(plant, fmu, ctrl, stop, **kw)[0], monkeypatch, stop,
                                      step, record=record)
    assert fast.names[1:] == record
    if exact:
        bitwise_equal(fast, slow)
    else:
        assert np.array_equal(fast.time, slow.time)
        for name in record:
            scale = max(1.0, float(np.max(np.abs(slow[name]))))
            np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-12 * scale, err_msg=name)
    return fast


def _close(a, b, rel=REL, fields=("x", "y", "u", "controller_state")):
    """Two LoopResults on the same samples, each array to ``rel`` of its scale."""
    np.testing.assert_allclose(a.time, b.time, rtol=0, atol=1e-14 * max(1.0, float(b.time[-1])))
    for f in fields:
        A, B = getattr(a, f), getattr(b, f)
        assert A.shape == B.shape, f
        if B.size:
            np.testing.assert_allclose(A, B, rtol=0, atol=rel * max(1.0, float(np.abs(B).max())), err_msg=f)


@pytest.mark.parametrize("Ts", [0.1, 0.05])
def test_rigid_arm_sampled_loop_runs_compiled(rigid, native_fmus, monkeypatch, Ts):
    """The computed-torque loop (nonlinear controller called back from C, the
    reference table a source) over the whole tip move: compiled = Python loop
    bit for bit, = the Python plant's loop, and it reaches the target."""
    plant = rigid.make_plant()
    fmu = _fmu(native_fmus, plant)
    stop = rigid.STOP if Ts == 0.1 else 1.0
    ctrl, ref, _, _ = rigid.sampled_loop(plant, Ts, stop)
    _compiled_equals_python_loop(monkeypatch, plant, fmu, ctrl, stop, references=[ref])
    got = simulate_fmu_loop(plant, fmu, ctrl, stop, references=[ref])
    _close(got, simulate_loop(plant, ctrl, stop, reference=[ref]))
    if Ts == 0.1:
        tip = plant.fk(got.x[-1, :3])
        assert np.linalg.norm(tip - rigid.TARGET) < 1e-5  # m


@pytest.mark.parametrize("label", ["lqg", "rigid_pd"])
def test_flexible_arm_loops_run_compiled(flexible, native_fmus, monkeypatch, label):
    """The LQG servo (18 states, stepped in C) and the rigid-body PD, the
    set-points step sources: compiled = Python loop (the PD bit for bit, the
    LQG to the rounding of its sums), = the Python plant's loop."""
    plant = flexible.make_plant()
    fmu = _fmu(native_fmus, plant)
    d = flexible.design(plant)
    stop = 0.3
    refs = flexible.reference_sources()
    _compiled_equals_python_loop(monkeypatch, plant, fmu, d[label], stop, exact=label == "rigid_pd",
                                 references=refs)
    got = simulate_fmu_loop(plant, fmu, d[label], stop, references=refs)
    _close(got, simulate_loop(plant, d[label], stop, reference=refs), rel=1e-11 if label == "lqg" else REL)
    q1 = got.y[:, [s.name for s in plant.outputs].index("q[1]")]
    assert q1[-1] > 0.3 * flexible.Q_REF[0]  # the step at 0.05 s moved the joint


def test_satellite_slew_runs_compiled(satellite, native_fmus, monkeypatch):
    """The quaternion PD (a nonlinear python-control system called back from
    C) through deployment and a short slew: compiled = Python loop bit for
    bit, = the Python plant's loop, total angular momentum conserved."""
    plant = satellite.make_plant()
    fmu = _fmu(native_fmus, plant)
    d = satellite.design(plant)
    ref = lambda t: satellite.slew_reference(t, start=1.0, duration=4.0)  # noqa: E731
    ctrl = satellite.attitude_controller(d["Kp"], d["Kd"], d["J"], ref)
    _compiled_equals_python_loop(monkeypatch, plant, fmu, ctrl, 6.0)
    got = satellite.run_loop(plant, d, ref, 6.0, fmu)
    direct = simulate_loop(plant, ctrl, 6.0)
    _close(got, direct)
    diff = satellite.compare_runs(plant, got, direct)
    assert diff["samples_compared"] == len(direct.time) and diff["max_diff_attitude"] < 1e-12
    H = satellite._outputs(plant, got, "angular_momentum", 3)
    assert np.abs(got.u).max() > 0.01 and np.abs(H).max() < 1e-8  # N m, N m s


def test_satellite_step_from_the_trimmed_deployed_state_runs_compiled(satellite, native_fmus, monkeypatch):
    """The study's small step (step_deployed) from the trimmed, deployed
    equilibrium (every latch engaged), the state given to the native FMU as
    its states' start values (x0): compiled = Python loop bit for bit, = the
    Python plant's loop from the same state; the first sample is that state,
    the latches stay engaged and the hub turns towards the step."""
    plant = satellite.make_plant()
    fmu = _fmu(native_fmus, plant)
    d = satellite.design(plant)
    x0 = d["x_deployed"]
    ref = satellite.step_reference(satellite.STEP_ANGLE)
    ctrl = satellite.attitude_controller(d["Kp"], d["Kd"], d["J"], ref)
    stop = 4.0
    _compiled_equals_python_loop(monkeypatch, plant, fmu, ctrl, stop, x0=x0)
    got = simulate_fmu_loop(plant, fmu, ctrl, stop, x0=x0)
    _close(got, simulate_loop(plant, ctrl, stop, x0=x0))
    np.testing.assert_array_equal(got.x[0], x0)
    nz = plant.model.nq + plant.model.nv
    assert (got.x[:, nz:] == 1.0).all()
    err = np.linalg.norm(satellite.error_history(plant, got, ref), axis=1)
    assert err[0] == pytest.approx(satellite.STEP_ANGLE, rel=1e-6) and err[-1] < 0.8 * err[0]
    # the study's own run is this loop
    fig, res, _ = satellite.step_response(plant, d, fmu, stop=stop)
    np.testing.assert_array_equal(res.x, got.x)


def test_a_start_state_the_fmu_cannot_take_is_refused_by_name(native_fmus, tmp_path):
    """x0 of the wrong size or with a NaN: InputError naming it; a pythonfmu FMU
    (states calculated, not start values) cannot start at x0: refused naming the state."""
    import mbfmu
    from mbfmu.fmu import build_fmu
    plant = mbfmu.load_plant("rigid_arm")
    fmu = native_fmus("rigid_arm", platforms=("linux64",))
    with pytest.raises(InputError, match=r"state has 5 values, expected 6"):
        simulate_fmu_loop(plant, fmu, None, 0.1, step=0.01, x0=np.zeros(5))
    with pytest.raises(InputError, match=r"state 'v\[1\]' = nan is not finite"):
        simulate_fmu_loop(plant, fmu, None, 0.1, step=0.01, x0=[0, 0, 0, np.nan, 0, 0])
    python_fmu = build_fmu("rigid_arm", tmp_path)
    with pytest.raises(InputError, match=r"its state states\.q\[1\] has no start value"):
        simulate_fmu_loop(plant, python_fmu, None, 0.1, step=0.01, x0=plant.initial_state())


@pytest.mark.parametrize("run", ["spin_up", "small_step"])
def test_canonical_two_body_runs_compiled(canonical, native_fmus, monkeypatch, run):
    """The motor loop inside the plant, its set-point held on the FMU's input:
    compiled = Python loop bit for bit, = the Python plant advanced with its
    own integrator (the small step from the steady state, given to the FMU as
    its initial-condition parameters)."""
    plant = canonical.make_plant()
    fmu = _fmu(native_fmus, plant)
    omega, x0, start = canonical.OMEGA_0, plant.initial_state(), None
    if run == "small_step":
        x0 = canonical.relative_equilibrium(plant, canonical.OMEGA_0)
        omega, start = canonical.OMEGA_0 + canonical.SMALL_STEP, canonical.initial_condition(x0, plant)
    u = np.array([omega, 0.0])
    stop, h = 2.0, canonical.H
    _compiled_equals_python_loop(monkeypatch, plant, fmu, None, stop, values=start, u_offset=u, step=h)
    got = canonical.simulate(plant, fmu, omega, stop, start=start)
    n = int(round(stop / h))
    X = [x0]
    for k in range(n):
        X.append(plant.advance(k * h, X[-1], u, h))
    X = np.array(X)
    np.testing.assert_allclose(got["x"], X, rtol=0, atol=REL * np.abs(X).max())
    np.testing.assert_allclose(got["time"], np.arange(n + 1) * h, rtol=0, atol=1e-14)
    if run == "small_step":  # from the steady state: the turning rate starts at omega_0 and rises
        assert got["qd"][0, 0] == pytest.approx(canonical.OMEGA_0, abs=1e-12)
        assert got["qd"][-1, 0] > canonical.OMEGA_0 + 0.5 * canonical.SMALL_STEP
    else:
        assert got["qd"][-1, 0] > 0.5 * canonical.OMEGA_0


def test_bad_loops_are_refused_by_name(rigid, native_fmus):
    """A reference unit with inputs, a controller input nobody drives, a bad
    offset, a loop without a controller or step, a stop time off the grid and
    the FMU of another plant: one-line InputErrors naming what is wrong."""
    from mbfmu.cosim import FunctionUnit
    plant = rigid.make_plant()
    fmu = _fmu(native_fmus, plant)
    ctrl, ref, _, _ = rigid.sampled_loop(plant, 0.1, 1.0)
    with pytest.raises(InputError, match=r"reference unit 'bad' has inputs"):
        simulate_fmu_loop(plant, fmu, ctrl, 1.0, references=[FunctionUnit("bad", lambda t, u: u, inputs=["a"])])
    with pytest.raises(InputError, match=r"controller input 'q_ref\[1\]' is neither a plant output"):
        simulate_fmu_loop(plant, fmu, ctrl, 1.0)
    with pytest.raises(InputError, match=r"u_offset holds a value that is not finite"):
        simulate_fmu_loop(plant, fmu, ctrl, 1.0, references=[ref], u_offset=[0.0, np.nan, 0.0])
    with pytest.raises(InputError, match=r"u_offset needs 3 values"):
        simulate_fmu_loop(plant, fmu, ctrl, 1.0, references=[ref], u_offset=[0.0, 0.0])
    with pytest.raises(InputError, match=r"without a controller needs a sample time"):
        simulate_fmu_loop(plant, fmu, None, 1.0)
    with pytest.raises(InputError, match=r"not a whole number of samples"):
        simulate_fmu_loop(plant, fmu, ctrl, 1.05 + math.pi * 1e-3, references=[ref])
    other = _study("canonical_2body_study").make_plant()
    with pytest.raises(InputError, match=r"is not the FMU of plant 'canonical_2body'"):
        simulate_fmu_loop(other, fmu, None, 1.0, step=0.01)


def test_offsets_enter_as_blocks_and_hold_the_arm_at_its_set_point(native_fmus, monkeypatch):
    """A PD designed in deviations (``tau = u0 + D (y - y0)``) around a pose of
    the rigid arm, u0 its gravity torques: the offsets become Offset blocks
    (evaluated in C), the first torque is the hand-computed
    ``u0 - Kp (q0 - q_ref)``, the arm settles at the pose, and the master
    equals the Python plant's loop and its own Python loop."""
    import control

    import mbfmu
    from mbfmu.dynamics import gravity_torques
    plant = mbfmu.load_plant("rigid_arm")
    fmu = native_fmus("rigid_arm", platforms=("linux64",))
    q_ref = np.array([0.5, 0.8, -0.4])
    u0 = gravity_torques(plant.model, q_ref)
    y0 = plant.outputs_at(0.0, np.concatenate([q_ref, np.zeros(3)]), u0)
    kp, kd = 400.0, 150.0
    ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, 6)), np.zeros((3, 0)),
                      np.hstack([-kp * np.eye(3), -kd * np.eye(3)]), 0.01,
                      inputs=[f"q[{i}]" for i in (1, 2, 3)] + [f"v[{i}]" for i in (1, 2, 3)],
                      outputs=[f"tau[{i}]" for i in (1, 2, 3)])
    kw = dict(u_offset=u0, y_offset=y0)
    system, _, _ = loop_system(plant, fmu, ctrl, 3.0, **kw)
    assert {"y_offset", "u_offset"} <= set(system.units)
    _compiled_equals_python_loop(monkeypatch, plant, fmu, ctrl, 3.0, exact=False, **kw)
    got = simulate_fmu_loop(plant, fmu, ctrl, 3.0, **kw)
    _close(got, simulate_loop(plant, ctrl, 3.0, **kw))
    q0 = plant.initial_state()[:3]
    np.testing.assert_allclose(got.u[0], u0 - kp * (q0 - q_ref), rtol=0, atol=1e-12 * np.abs(u0).max())
    err = np.abs(got.x[:, :3] - q_ref).max(axis=1)
    assert err[-1] < 1e-3 and err[-1] < 0.01 * err[0]  # rad: the gravity torques hold it there
