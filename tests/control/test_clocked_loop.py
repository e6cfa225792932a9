"""A mixed clocked system (#36.2): the native rigid_arm plant (FMI 3.0
co-simulation), a joint controller exported as an FMI 3.0 Scheduled Execution
FMU at 1 kHz, and a python-control Kalman filter observing the arm, run
together by the master. The controller FMU's partition is activated at
``k * T`` exactly (ticks counted, not accumulated) and the loop equals the same
loop with the Python controller unit (ControlUnit)."""
from __future__ import annotations

import control
import numpy as np
import pytest

from mbfmu.control import export_fmu
from mbfmu.cosim import ControlUnit, FmuUnit, FunctionUnit, System, simulate
from mbfmu.cosim.fmi.fmu3_scheduled import Fmu3ScheduledUnit
from mbfmu.errors import InputError

from clocked_arm import Q, STOP, T, TAU, V, arm_and_scheduled_controller, arm_loop, joint_controller


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    return arm_and_scheduled_controller(tmp_path_factory)


def test_the_plant_under_a_scheduled_execution_controller_equals_the_python_controller(fmus):
    plant, ctrl_fmu = fmus
    se = FmuUnit(ctrl_fmu, "ctrl")
    assert isinstance(se, Fmu3ScheduledUnit)
    (clock,) = se.clocks.values()
    assert clock.interval == T and clock.kind == "constant"
    native = arm_loop(plant, se)
    python = arm_loop(plant, ControlUnit("ctrl", joint_controller()))
    assert native.names == python.names
    for n in native.names:  # the C evaluation order of the matrix products differs (part 1): 1e-13
        scale = max(np.abs(python[n]).max(), 1e-300)
        assert np.abs(native[n] - python[n]).max() <= 1e-13 * scale, n
    # the loop does something: gravity moves the arm, the controller acts, the observer follows
    assert np.abs(python["plant.q[2]"]).max() > 1e-4 and np.abs(python["ctrl.tau2"]).max() > 1e-2
    err = np.abs(python["obs.xhat2"][-100:] - python["plant.q[2]"][-100:]).max()
    assert err < 0.05 * np.abs(python["plant.q[2]"]).max()
    # one activation per sample, at k * T to the bit
    n = int(round(STOP / T)) + 1
    assert se.ticks[clock.name] == (n, (n - 1) * T)
    assert list(se.activations) == [(clock.name, k * T) for k in range(n)]


@pytest.mark.slow
def test_a_million_ticks_land_on_k_T(fmus):
    """10^6 + 1 activations of the 1 kHz partition over 1000 s: the last at 1000 s exactly,
    each at k * T (a float sum of T would be 1000.0000000xxx by then)."""
    _, ctrl_fmu = fmus
    se = FmuUnit(ctrl_fmu, "ctrl")
    (clock,) = se.clocks.values()
    simulate(System([se]), 1000.0, T, record=[])
    assert se.ticks[clock.name] == (1_000_001, 1000.0)
    start = 1_000_001 - len(se.activations)
    assert list(se.activations) == [(clock.name, k * T) for k in range(start, 1_000_001)]
    assert sum([T] * 1_000_000) != 1000.0


def test_a_scheduled_execution_unit_in_an_algebraic_loop_is_refused(fmus):
    _, ctrl_fmu = fmus
    se = FmuUnit(ctrl_fmu, "ctrl")  # tau depends on q and v at the same tick (D != 0)
    echo = FunctionUnit("echo", lambda t, u: u, inputs=["tau"], outputs=["q"])
    cons = [("ctrl.tau1", "echo.tau"), ("echo.q", "ctrl.q1")]
    with pytest.raises(InputError, match="'ctrl' .*FMI 3.0 with clocks.* algebraic loop") as err:
        simulate(System([se, echo], cons), 0.01, T)
    assert "\n" not in str(err.value)


def test_iterative_coupling_refuses_the_scheduled_controller_although_its_fmu_saves_state(fmus):
    """The FMU declares canGetAndSetFMUState, but the tick schedule is the master's: restoring the
    FMU alone would replay a partition at the wrong tick."""
    _, ctrl_fmu = fmus
    se = FmuUnit(ctrl_fmu, "ctrl")
    assert se.md.scheduledExecution.canGetAndSetFMUstate and not se.can_rollback
    with pytest.raises(Exception, match=r"iterative coupling needs rollback, but units \['ctrl'\]"):
        simulate(System([se]), 0.01, T, iterative=True)


def test_a_native_fmi2_discrete_controller_takes_1_ms_steps_past_t_5_s(tmp_path):
    """The master's step is the difference of two rounded grid points: at t = 8 s a 1 ms step
    is 1 ms + 1.2e-15 s, which the FMU refused as "not a whole number of samples" (1e-12
    relative tolerance). It is now taken as the one sample it is, and the controller equals
    the Python unit over 10 s."""
    from mbfmu.cosim import sources
    fmu = export_fmu(joint_controller(), tmp_path, runtime="native", platforms=("linux64",))
    runs = []
    cons = [("s.y", f"ctrl.{n}") for n in Q + V]
    for ctrl in (FmuUnit(fmu, "ctrl"), ControlUnit("ctrl", joint_controller())):
        system = System([sources.sine("s", 0.3, 0.7), ctrl], cons)
        runs.append(simulate(system, 10.0, T, record=["ctrl.tau1"]))
    native, python = runs
    assert native["time"][-1] == 10.0
    scale = np.abs(python["ctrl.tau1"]).max()
    assert scale > 1.0 and np.abs(native["ctrl.tau1"] - python["ctrl.tau1"]).max() <= 1e-13 * scale


def strictly_proper_controller() -> control.StateSpace:
    """A joint controller without direct feedthrough (D = 0): leaky integral and lagged
    proportional-derivative action, zero-order hold at T."""
    A = np.kron(np.eye(3), [[-0.5, 0.0], [0.0, -200.0]])
    B = np.zeros((6, 6))
    for j in range(3):
        B[2 * j, j] = 1.0                                 # integral of q
        B[2 * j + 1, j], B[2 * j + 1, 3 + j] = 200.0 * 40.0, 200.0 * 8.0  # lagged PD
    C = np.zeros((3, 6))
    for j in range(3):
        C[j, 2 * j], C[j, 2 * j + 1] = -5.0, -1.0
    sys = control.ss(A, B, C, np.zeros((3, 6)), inputs=Q + V, outputs=TAU)
    return control.c2d(sys, T, method="zoh").copy(name="joint_lag")


def test_a_controller_without_feedthrough_latches_its_outputs_before_the_plant_reads_them(tmp_path, fmus):
    """With D = 0 the FMU declares no output dependency; still, an activation latches the
    outputs of the tick, so the plant must read them after it (as it reads ControlUnit's)."""
    plant, _ = fmus
    sys = strictly_proper_controller()
    assert not np.asarray(sys.D).any()
    fmu = export_fmu(sys, tmp_path, runtime="native", fmi=3, scheduled=True, platforms=("linux64",))
    native = arm_loop(plant, FmuUnit(fmu, "ctrl"), stop=0.2)
    python = arm_loop(plant, ControlUnit("ctrl", sys), stop=0.2)
    assert np.abs(python["ctrl.tau2"]).max() > 1e-2
    for n in native.names:
        scale = max(np.abs(python[n]).max(), 1e-300)
        assert np.abs(native[n] - python[n]).max() <= 1e-13 * scale, n
