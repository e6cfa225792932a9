"""Python units in the compiled loop: python-control LTI systems, discrete PIDs
and the static blocks run in C (mbfmu.cosim.master.c_units) around an FMU, and give
the Python loop's results (MBFMU_PYTHON_LOOP=1): the blocks and PIDs bit for
bit; LTI controllers to the rounding of their matrix-vector sums, which
controller.c adds in sequence where numpy's BLAS may group them differently.
Other Python units (FunctionUnit, nonlinear ControlUnit) are called back from
C and leave the rest compiled, bit for bit."""
from __future__ import annotations

import control
import numpy as np
import pytest

import mbfmu
from mbfmu.cosim import ControlUnit, FmuUnit, FunctionUnit, Gain, Offset, Saturation, Sum, System, simulate
from mbfmu.cosim.master import fast_loop
from mbfmu.cosim.master.c_units import step_sizes
from mbfmu.cosim.master.run import _Master
from mbfmu.cosim.master.options import SimulationOptions
from mbfmu.dynamics import gravity_torques
from mbfmu.errors import CosimError

REF = [0.5, 0.8, -0.4]  # set-point, rad


@pytest.fixture(scope="module")
def arm_fmu(native_fmus):
    return native_fmus("rigid_arm", platforms=("linux64",))


def _u0():
    """The torques that hold the arm at REF (N.m)."""
    return gravity_torques(mbfmu.load_plant("rigid_arm").model, REF)


def _blocks_system(arm_fmu) -> System:
    """The README's "Blocks and vector connections" PD loop, as written there."""
    arm = FmuUnit(arm_fmu, name="arm")
    err = Sum("err", "+-", n=3, inputs=("ref", "q"), unit="rad")
    kp = Gain("kp", 400.0, n=3, unit_in="rad", unit_out="N.m")
    kd = Gain("kd", 150.0, n=3, unit_in="rad/s", unit_out="N.m")
    pd = Sum("pd", "+-", n=3, inputs=("p", "d"), unit="N.m")
    u = Offset("u", _u0(), unit="N.m")
    lim = Saturation("lim", -300.0, 300.0, n=3, unit="N.m")
    return System([arm, err, kp, kd, pd, u, lim],
                  [("arm.q", "err.q"), ("err.y", "kp.u"), ("arm.v", "kd.u"), ("kp.y", "pd.p"),
                   ("kd.y", "pd.d"), ("pd.y", "u.u"), ("u.y", "lim.u"), ("lim.y", "arm.tau")],
                  values={f"err.ref[{i}]": r for i, r in enumerate(REF, 1)})


def _lqg(dt: float | None) -> control.StateSpace:
    """An LQR + observer (measuring q) on the arm linearized at REF; continuous,
    or discretized (zero-order hold) at ``dt`` s. Inputs q - REF (rad), outputs tau - u0 (N.m)."""
    plant = mbfmu.load_plant("rigid_arm")
    from mbfmu.control import linearize
    lin = linearize(plant, list(REF) + [0.0] * 3, list(_u0()))
    A, B = np.asarray(lin.A), np.asarray(lin.B)
    C = np.hstack([np.eye(3), np.zeros((3, 3))])
    K, _, _ = control.lqr(A, B, np.diag([400.0] * 3 + [10.0] * 3), np.eye(3) * 1e-2)
    L, _, _ = control.lqe(A, np.eye(6), C, np.eye(6), np.eye(3) * 1e-4)
    ctrl = control.ss(A - B @ K - L @ C, L, -K, np.zeros((3, 3)))
    return ctrl if dt is None else control.c2d(ctrl, dt, method="zoh")


def _controlled(arm_fmu, ctrl) -> System:
    """The arm under ``ctrl`` (a ControlUnit) in deviation variables: q - REF in, u0 + du out."""
    arm = FmuUnit(arm_fmu, name="arm", values={f"theta{i}_0": r - 0.05 for i, r in enumerate(REF, 1)})
    dev = Offset("dev", -np.asarray(REF), unit="rad")
    u = Offset("u", _u0(), unit="N.m")
    return System([arm, dev, ctrl, u], [("arm.q", "dev.u"), ("dev.y", f"{ctrl.name}.u"),
                                        (f"{ctrl.name}.y", "u.u"), ("u.y", "arm.tau")])


def _pids(arm_fmu) -> System:
    """Each joint under a discrete PID of mbfmu.control.discrete_pid (derivative on
    the measurement for joints 1 and 3, on the error for joint 2), plus gravity."""
    from mbfmu.control.discrete_pid import pid
    arm = FmuUnit(arm_fmu, name="arm")
    pids = [ControlUnit(f"pid{i}", pid(300.0, 200.0, 60.0, dt=0.005, Tf=0.01, u_min=-200.0, u_max=200.0,
                                       derivative_on="error" if i == 2 else "measurement", name=f"pid{i}"),
                        inputs_start={"r": REF[i - 1]})
            for i in (1, 2, 3)]
    u = Offset("u", _u0(), unit="N.m")
    conns = [(f"arm.q[{i}]", f"pid{i}.y") for i in (1, 2, 3)] + [(f"pid{i}.u", f"u.u[{i}]") for i in (1, 2, 3)]
    return System([arm, *pids, u], conns + [("u.y", "arm.tau")])


def _both(make, monkeypatch, **kw):
    """(compiled, Python-loop) results of the same run; asserts which loop each took."""
    calls = []
    real_run = fast_loop.run
    monkeypatch.setattr(fast_loop, "run", lambda *a: calls.append(1) or real_run(*a))
    system = make()
    assert fast_loop.python_loop_reason(_Master(system, kw["step"], SimulationOptions(progress=False), None)) is None
    fast = simulate(system, progress=False, **kw)
    assert calls == [1] and "python_loop" not in fast.meta
    monkeypatch.setattr(fast_loop, "ENABLED", False)
    slow = simulate(make(), progress=False, **kw)
    assert calls == [1] and "python_loop" in slow.meta  # the second run took the Python loop
    assert fast.names == slow.names
    return fast, slow


def test_readme_blocks_system_runs_compiled_bit_for_bit(arm_fmu, monkeypatch):
    """The README's blocks example takes the compiled loop (the six blocks in C)
    and equals the Python loop bit for bit; it holds its set-point."""
    fast, slow = _both(lambda: _blocks_system(arm_fmu), monkeypatch, stop_time=2.0, step=0.01)
    assert all(np.array_equal(fast[n], slow[n]) for n in fast.names)
    np.testing.assert_allclose([fast[f"arm.q[{i}]"][-1] for i in (1, 2, 3)], REF, atol=2e-3)


@pytest.mark.parametrize("dt, step, extrapolation", [(None, 0.01, 0), (None, 0.01, 1), (None, 0.01, 2), (0.01, 0.01, 0),
                                                    (0.0025, 0.01, 0)])
def test_lqg_around_the_arm_runs_compiled_and_equals_the_python_loop(arm_fmu, monkeypatch, dt, step, extrapolation):
    """A python-control LQG (continuous: zero-order hold over the step with
    ControlUnit's own c2d matrices; discrete at the step or at a quarter of it,
    four samples per step) is stepped in C; the run equals the Python loop to
    1e-12 of each signal's scale, and the loop brings the arm to REF."""
    make = lambda: _controlled(arm_fmu, ControlUnit("lqg", _lqg(dt), x0=np.zeros(6)))  # noqa: E731
    fast, slow = _both(make, monkeypatch, stop_time=3.0, step=step, extrapolation=extrapolation)
    for name in fast.names[1:]:
        scale = max(1.0, float(np.max(np.abs(slow[name]))))
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-12 * scale, err_msg=name)
    assert np.array_equal(fast.time, slow.time)
    np.testing.assert_allclose([fast[f"arm.q[{i}]"][-1] for i in (1, 2, 3)], REF, atol=1e-2)
    assert max(abs(fast[f"arm.q[{i}]"][0] - REF[i - 1]) for i in (1, 2, 3)) > 0.04  # it started away


def test_discrete_pids_run_compiled_and_equal_the_python_loop(arm_fmu, monkeypatch):
    """Three discrete PIDs of mbfmu.control.discrete_pid (recognised, stepped by
    controller.c at their 5 ms sample time, two samples per 10 ms step) give the
    Python loop's results bit for bit: their arithmetic has no sums to regroup."""
    fast, slow = _both(lambda: _pids(arm_fmu), monkeypatch, stop_time=2.0, step=0.01)
    assert all(np.array_equal(fast[n], slow[n]) for n in fast.names)
    err = [np.max(np.abs([fast[f"arm.q[{i}]"][k] - REF[i - 1] for i in (1, 2, 3)])) for k in (0, -1)]
    assert err[1] < 0.1 * err[0]  # the PIDs pull the arm from rest at 0 rad towards REF


def test_recorded_controller_states_and_block_inputs_come_from_c(arm_fmu, monkeypatch):
    """Recording a ControlUnit's states and a block's inputs (read by C from the
    buffers it steps) gives the Python loop's values, and the unit's state after
    the run is the one C reached."""
    make = lambda: _controlled(arm_fmu, ControlUnit("lqg", _lqg(0.01), x0=np.zeros(6)))  # noqa: E731
    record = ["lqg.x[1]", "lqg.x[6]", "u.u[2]", "arm.q[1]"]
    calls = []
    real_run = fast_loop.run
    monkeypatch.setattr(fast_loop, "run", lambda *a: calls.append(1) or real_run(*a))
    system = make()
    fast = simulate(system, 1.0, 0.01, record=record, progress=False)
    assert calls == [1]
    monkeypatch.setattr(fast_loop, "ENABLED", False)
    slow_system = make()
    slow = simulate(slow_system, 1.0, 0.01, record=record, progress=False)
    for name in record:
        scale = max(1.0, float(np.max(np.abs(slow[name]))))
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-12 * scale, err_msg=name)
    assert np.max(np.abs(fast["lqg.x[1]"])) > 0  # the state moved
    np.testing.assert_allclose(system.units["lqg"].x, slow_system.units["lqg"].x, rtol=0, atol=1e-12)


def _with_python_callbacks(arm_fmu, fail_at: float = np.inf) -> System:
    """The README blocks system with Python units C calls back: the reference of
    joint 1 from a FunctionUnit (a smooth move, NaN from ``fail_at`` s), the
    torque limit a nonlinear python-control system (tanh, static) in place of
    the Saturation block, and a continuous nonlinear ControlUnit (RK4) filtering q[1]."""
    system = _blocks_system(arm_fmu)
    src = FunctionUnit("src", lambda t, u: [REF[0] * (1.0 - np.exp(-3.0 * t)) if t < fail_at else np.nan],
                       outputs=["y"])
    soft = ControlUnit("soft", control.NonlinearIOSystem(
        None, lambda t, x, u, p: 300.0 * np.tanh(np.asarray(u) / 300.0), inputs=3, outputs=3))
    filt = ControlUnit("filt", control.NonlinearIOSystem(
        lambda t, x, u, p: -20.0 * x + 20.0 * np.sin(u), None, inputs=1, outputs=1, states=1))
    units = [system.units[n] for n in ("arm", "err", "kp", "kd", "pd", "u")] + [src, soft, filt]
    return System(units, [("arm.q", "err.q"), ("err.y", "kp.u"), ("arm.v", "kd.u"), ("kp.y", "pd.p"),
                          ("kd.y", "pd.d"), ("pd.y", "u.u"), ("u.y", "soft.u"), ("soft.y", "arm.tau"),
                          ("src.y", "err.ref[1]"), ("arm.q[1]", "filt.u[1]")],
                  values={f"err.ref[{i}]": REF[i - 1] for i in (2, 3)})


@pytest.mark.parametrize("kw", [{}, {"extrapolation": 1}, {"algorithm": "gauss-seidel"}, {"threads": 2}])
def test_python_callback_units_run_compiled_and_equal_the_python_loop(arm_fmu, monkeypatch, kw):
    """A FunctionUnit and nonlinear ControlUnits keep their Python callbacks,
    called from C once per exchange and step, and no longer pull the FMU and the
    blocks out of the compiled loop: the run equals the Python loop bit for bit."""
    fast, slow = _both(lambda: _with_python_callbacks(arm_fmu), monkeypatch, stop_time=1.0, step=0.01, **kw)
    assert all(np.array_equal(fast[n], slow[n]) for n in fast.names)
    assert np.max(np.abs(fast["filt.y[1]"])) > 0.1 and fast["src.y"][-1] > 0.4  # the callbacks ran


def test_python_callback_failure_in_the_compiled_loop_is_the_units_own_error(arm_fmu, monkeypatch):
    """A Python unit that fails inside the compiled loop raises its own error (a
    FunctionUnit's non-finite output), as in the Python loop, with the rows up to it."""
    errors = []
    for enabled in (True, False):
        monkeypatch.setattr(fast_loop, "ENABLED", enabled)
        with pytest.raises(CosimError, match=r"unit 'src': output 'y' is not finite") as exc:
            simulate(_with_python_callbacks(arm_fmu, fail_at=0.5), 1.0, 0.01, progress=False)
        errors.append(exc.value)
    assert str(errors[0]) == str(errors[1])
    rows = [e.result for e in errors]
    assert len(rows[0]) == len(rows[1]) > 10
    assert all(np.array_equal(rows[0][n], rows[1][n]) for n in rows[0].names)


def test_a_state_of_a_python_unit_in_the_recording_keeps_the_python_loop(arm_fmu):
    """A nonlinear ControlUnit's state (replaced at every Python step) is not read
    by C: recording it keeps the Python loop, and the reason names it."""
    system = _with_python_callbacks(arm_fmu)
    why = fast_loop.python_loop_reason(_Master(system, 0.01, SimulationOptions(progress=False), ["filt.x[1]"]))
    assert why is not None and "filt.x[1]" in why


@pytest.mark.parametrize("t0, stop, n, sub", [(0.0, 1.0, 10, 1), (0.1, 0.7, 6, 3), (0.0, 3.0, 300, 4)])
def test_step_sizes_are_the_loops_own(t0, stop, n, sub):
    """The step sizes the continuous controllers' matrices are made for are the
    ones the Python loop's counted time points give (recomputed point by point)."""
    seen = set()
    t = t0
    for k in range(n):
        t_next = stop if k == n - 1 else t0 + (k + 1) * (stop - t0) / n
        h = t_next - t
        hs = h / sub
        ts_next = t
        for s in range(sub):
            ts = ts_next
            ts_next = t + h if s == sub - 1 else t + (s + 1) * hs
            seen.add(ts_next - ts)
        t = t_next
    assert step_sizes(t0, stop, n, sub) == sorted(seen)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("dt", [0.01, 0])
def test_a_diverging_controller_in_c_ends_as_in_the_python_loop(monkeypatch, dt):
    """x+ = 1e300 x (continuous: exp(400) x) overflows at the second step: controller.c refuses the
    non-finite state, the Python unit takes that step, so the run stops with the
    Python loop's error and rows, or (allow_nan) carries inf and NaN as it does."""
    def make():
        sys = control.ss([[1e300 if dt else 4e4]], [[1.0]], [[1.0]], [[0.0]], dt or None)
        return System([ControlUnit("c", sys, x0=[1.0], inputs_start=1.0)])
    out = {}
    for enabled in (True, False):
        monkeypatch.setattr(fast_loop, "ENABLED", enabled)
        with pytest.raises(CosimError) as exc:
            simulate(make(), 0.1, 0.01, progress=False)
        out[enabled] = (str(exc.value), simulate(make(), 0.1, 0.01, progress=False, allow_nan=True))
    assert out[True][0] == out[False][0] and "'y[1]' is inf" in out[True][0]
    fast, slow = out[True][1], out[False][1]
    assert not np.isfinite(fast["c.y[1]"][-1])
    assert all(np.array_equal(fast[n], slow[n], equal_nan=True) for n in fast.names)


def test_a_discrete_controller_takes_one_sample_per_step_whatever_the_steps_last_bits(monkeypatch):
    """The steps of a 10 s run at 1 ms differ from 1 ms by more than 1e-12
    relative in their last bits (0.0010000000000012 s at t = 8 s): a discrete
    ControlUnit at dt = 1 ms still takes one sample per step, as in the Python
    loop (a first-order lag closed by a Gain: one product per sum, so bit for bit)."""
    assert max(step_sizes(0.0, 10.0, 10000, 1)) - 1e-3 > 1e-15
    def make():
        lag = control.ss([[0.999]], [[0.001]], [[1.0]], [[0.0]], 1e-3)
        return System([ControlUnit("lag", lag, x0=[1.0]), Gain("g", -0.5), Offset("r", 2.0)],
                      [("lag.y[1]", "g.u"), ("g.y", "r.u"), ("r.y", "lag.u[1]")])
    fast, slow = _both(make, monkeypatch, stop_time=10.0, step=1e-3)
    assert all(np.array_equal(fast[n], slow[n]) for n in fast.names)
    # x -> the fixed point of x = 0.999 x + 0.001 (2 - 0.5 x): 2 / 1.5
    assert abs(fast["lag.y[1]"][-1] - 2.0 / 1.5) < 1e-3


def test_a_number_as_inputs_start_starts_every_input():
    """``inputs_start=1.0`` gives every input of a system with python-control's
    default labels the start value 1 (u[1] was left without one: the one-based
    names were renamed a second time)."""
    c = ControlUnit("c", control.ss(-np.eye(2), np.eye(2, 3), np.eye(2), np.zeros((2, 3))), inputs_start=1.0)
    assert [c.variables[n].start for n in c.inputs] == [1.0, 1.0, 1.0] and list(c.u) == [1.0, 1.0, 1.0]


def _scheduled_slew(arm_fmu, name: str = "sched") -> System:
    """The arm's elbow slewed from its start (-0.79 rad) to 2 rad under a scheduled LQR whose
    grid (-0.5 .. 1.5 rad, 5 points) the elbow leaves at both ends: the gains are clamped,
    then interpolated across four intervals, then clamped again."""
    from mbfmu.control import schedule, trim_inputs
    plant = mbfmu.load_plant("rigid_arm")

    def lqr(lin, point):
        d = control.c2d(control.ss(lin.A, lin.B, np.eye(6), 0), 0.01, "zoh")
        return control.dlqr(d.A, d.B, np.diag([100.0] * 3 + [1.0] * 3), 0.01 * np.eye(3))[0]
    sch = schedule(plant, {"q[3]": np.linspace(-0.5, 1.5, 5)}, lqr)
    x_ref = plant.initial_state()
    x_ref[2] = 2.0
    ctrl = sch.controller(x_ref, trim_inputs(plant, state=x_ref).u, 0.01, name=name)
    arm = FmuUnit(arm_fmu, name="arm")
    velocity = arm.outputs[3][:-3]
    return System([arm, ControlUnit("ctrl", ctrl)],
                  [("arm.q", "ctrl.q"), (f"arm.{velocity}", "ctrl.v"), ("ctrl.tau", "arm.tau")])


def test_a_scheduled_controller_runs_compiled_and_equals_the_python_loop(arm_fmu, monkeypatch):
    """A scheduled controller of mbfmu.control.schedule (its gain tables and their
    interpolation evaluated by controller.c from the ScheduledLaw the Python unit
    evaluates) takes the compiled loop and equals the Python loop to 1e-12 of each
    signal's scale: C adds the products of K(s) (x - x_ref) in sequence, numpy's BLAS
    may group them otherwise; the interpolation itself is the same arithmetic."""
    from mbfmu.cosim.master import c_units
    system = _scheduled_slew(arm_fmu)
    assert c_units.evaluated_in_c(system.units["ctrl"])
    fast, slow = _both(lambda: _scheduled_slew(arm_fmu), monkeypatch, stop_time=3.0, step=0.01)
    assert np.array_equal(fast.time, slow.time)
    for name in fast.names[1:]:
        scale = max(1.0, float(np.max(np.abs(slow[name]))))
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-12 * scale, err_msg=name)
    q3 = fast["arm.q[3]"]
    assert q3[0] < -0.5 and q3.max() > 1.5  # the elbow left the grid at both ends
    assert abs(q3[-1] - 2.0) < 1e-2


@pytest.mark.parametrize("case", [dict(grid=[-1.0, 0.0, 0.5, 2.0], index=1),
                                  dict(grid=[-1.0, 0.0, 0.5, 2.0], index=-1, parameter="m"),
                                  dict(grid=[0.3], index=0), dict(grid=[-1.0, 2.0], index=-1)],
                         ids=["state", "parameter", "one_point", "unscheduled"])
def test_a_scheduled_controller_in_c_outputs_what_its_law_computes(monkeypatch, case):
    """controller.c's MBC_SCHED against ScheduledLaw.output: inputs swept by a Python
    source (called back) so that the scheduling value runs from below the grid to above
    it, through grid points; a state or a parameter schedule, one grid point, none. The
    compiled run equals the Python loop, and every row's outputs are the law's of that
    row's inputs."""
    from mbfmu.control.scheduling import scheduled_controller
    from mbfmu.cosim.master import c_units
    rng = np.random.default_rng(5)
    g = len(case["grid"])
    nu = 3 + bool(case.get("parameter"))
    gains, x_ref, u_ref = rng.normal(size=(g, 2, 3)), rng.normal(size=3), rng.normal(size=2)
    waves = rng.normal(size=(nu, 2))

    def make():
        sys = scheduled_controller(gains=gains, x_ref=x_ref, u_ref=u_ref, dt=0.01, states=["a", "b", "c"],
                                   inputs=["y1", "y2"], **case)
        src = FunctionUnit("src", lambda t, u: waves[:, 0] * np.sin(7.0 * t + waves[:, 1]) + (10.0 * t - 3.0),
                           outputs=[f"s{k}" for k in range(nu)])
        return System([src, ControlUnit("ctrl", sys)],
                      [(f"src.s{k}", f"ctrl.{n}") for k, n in enumerate(sys.input_labels)])
    assert c_units.evaluated_in_c(make().units["ctrl"])
    fast, slow = _both(make, monkeypatch, stop_time=1.0, step=0.01)
    law = make().units["ctrl"].sys.law
    ins = np.column_stack([fast[f"src.s{k}"] for k in range(nu)])
    outs = np.column_stack([fast["ctrl.y1"], fast["ctrl.y2"]])
    expected = np.array([law.output(0.0, [], u) for u in ins])
    np.testing.assert_allclose(outs, expected, rtol=0, atol=1e-14 * np.abs(expected).max())
    for n in fast.names:
        np.testing.assert_allclose(fast[n], slow[n], rtol=0, atol=1e-14 * max(1.0, np.abs(slow[n]).max()))
    if law.index >= 0 and g > 1:
        s = ins[:, law.index]
        assert s.min() < case["grid"][0] and s.max() > case["grid"][-1]  # clamped at both ends


def test_a_modified_scheduled_controller_is_not_taken_for_one():
    """Only a system whose output function is its own ScheduledLaw's is evaluated in C:
    a law swapped for another output function is called back from Python."""
    from mbfmu.control.scheduling import scheduled_controller
    from mbfmu.cosim.master import c_units
    sys = scheduled_controller([0.0, 1.0], np.ones((2, 1, 2)), [0.0, 0.0], [0.0], 0.01, ["a", "b"], ["y"], index=0)
    assert c_units.scheduled_law(sys) is sys.law
    other = control.nlsys(None, lambda t, x, u, p: -np.asarray(u)[:1], inputs=2, outputs=1, dt=0.01)
    other.law = sys.law
    assert c_units.scheduled_law(other) is None
    assert not c_units.evaluated_in_c(ControlUnit("c", other)) and c_units.called_back(ControlUnit("c", other))
