"""Error-controlled ``advance`` (csrc/adaptive.c): accuracy to the tolerance,
honest failure when the tolerance cannot be met, and the FMU's tolerance from
``fmi2SetupExperiment``."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import mbfmu
from mbfmu.dynamics import _kernels
from mbfmu.dynamics.integrators import ErrorControl, advance_function
from mbfmu.errors import InputError, SimulationError

TORQUE = 1000.0  # N m on each joint: large but legal (the inputs are unbounded)
T_RUN = 5.0      # s


def _run_arm(plant, T=T_RUN, step=0.01, torque=TORQUE):
    """Final state of rigid_arm after ``T`` s at constant joint torques, and
    the energy-balance error (E(T) - E(0) - W) / W, with W = tau . (q(T) -
    q(0)) the work of the constant torques on the revolute joints."""
    x0 = plant.initial_state()
    u = np.full(3, torque)
    x = x0
    for k in range(int(round(T / step))):
        x = plant.advance(k * step, x, u, step)
    ke, pe = plant.energies(x)
    ke0, pe0 = plant.energies(x0)
    work = float(u @ (x[:3] - x0[:3]))
    return x, ke, (ke + pe - ke0 - pe0 - work) / work


@pytest.fixture(scope="module")
def converged():
    """rigid_arm at 1000 N m, tolerance 1e-10: its own energy balance holds
    to 1e-7 (the fixed 1 ms RK4 of before missed it by 37 %)."""
    plant = mbfmu.load_plant("rigid_arm")
    plant.set_tolerance(1e-10)
    x, ke, balance = _run_arm(plant)
    assert abs(balance) < 1e-7
    return x, ke


def test_rigid_arm_at_1000_Nm_matches_a_converged_run(converged):
    """Default tolerance: kinetic energy within 1 % of the converged 6.07e6 J
    and the energy balance within 1 % (before: 9.08e5 J, balance off 37 %)."""
    x_ref, ke_ref = converged
    assert ke_ref == pytest.approx(6.07e6, rel=0.01)  # the converged value
    _, ke, balance = _run_arm(mbfmu.load_plant("rigid_arm"))
    assert ke == pytest.approx(ke_ref, rel=0.01)
    assert abs(balance) < 0.01


def test_a_tighter_tolerance_is_closer_to_the_converged_run(converged):
    x_ref, ke_ref = converged
    errors = []
    for tol in (1e-6, 1e-8):
        plant = mbfmu.load_plant("rigid_arm")
        plant.set_tolerance(tol)
        _, ke, balance = _run_arm(plant)
        errors.append(abs(ke / ke_ref - 1))
    assert errors[1] < 0.1 * errors[0]
    assert errors[1] < 1e-4


@pytest.mark.parametrize("method", ["dp54", "bs32"])
def test_harmonic_oscillator_meets_the_tolerance(method):
    """x'' = -x over 10 s (analytic cos t): the global error stays within a
    small multiple of the tolerance, and shrinks with it."""
    f = lambda t, x: np.array([x[1], -x[0]])  # noqa: E731
    errs = []
    for tol in (1e-5, 1e-8):
        ec = ErrorControl(rtol=tol, atol=tol, method=method)
        x = advance_function(f, 0.0, np.array([1.0, 0.0]), 10.0, ec)
        errs.append(np.max(np.abs(x - [math.cos(10.0), -math.sin(10.0)])))
        assert errs[-1] < 50 * tol
    assert errs[1] < 1e-2 * errs[0]


def test_step_limit_is_a_simulation_error_not_a_wrong_state():
    plant = mbfmu.load_plant("rigid_arm")
    plant.error_control = ErrorControl(rtol=1e-10, atol=1e-10, max_steps=20)
    with pytest.raises(SimulationError, match=r"plant 'rigid_arm'.*t = 0 s to 1 s.*step limit.*max_steps 20"):
        plant.advance(0.0, plant.initial_state(), np.full(3, TORQUE), 1.0)


def test_smallest_step_is_a_simulation_error():
    plant = mbfmu.load_plant("rigid_arm")
    plant.error_control = ErrorControl(rtol=1e-10, atol=1e-10, min_step=0.05)
    with pytest.raises(SimulationError, match="below the smallest step"):
        plant.advance(0.0, plant.initial_state(), np.full(3, TORQUE), 1.0)


def test_python_plants_fail_the_same_way():
    """The crash-sled plant (its sled frame element, stopped on its HIC
    grid) runs the same compiled integrator and fails the same way."""
    plant = mbfmu.load_plant("crash_occupant")
    plant.error_control = ErrorControl(rtol=1e-12, atol=1e-12, max_steps=3)
    with pytest.raises(SimulationError, match="crash_occupant.*step limit"):
        plant.advance(0.0, plant.initial_state(), plant.default_inputs(), 1e-3)


def test_an_exception_in_a_python_right_hand_side_propagates():
    def f(t, x):
        raise ZeroDivisionError("boom")
    with pytest.raises(ZeroDivisionError, match="boom"):
        advance_function(f, 0.0, np.zeros(2), 1.0, ErrorControl())
    with pytest.raises(InputError, match="returned 3 values, expected 2"):
        advance_function(lambda t, x: np.zeros(3), 0.0, np.zeros(2), 1.0, ErrorControl())


@pytest.mark.parametrize("bad, words", [(dict(rtol=-1.0), "rtol"), (dict(rtol=0.0, atol=0.0), "both be 0"),
                                        (dict(method="rk4"), "method"), (dict(max_steps=0), "max_steps"),
                                        (dict(max_step=math.nan), "max_step")])
def test_bad_settings_are_refused(bad, words):
    with pytest.raises(InputError, match=words):
        ErrorControl(**bad)


def test_set_tolerance_refuses_nonsense():
    plant = mbfmu.load_plant("rigid_arm")
    for bad in (0.0, -1e-6, math.inf, "x"):
        with pytest.raises(InputError, match="tolerance"):
            plant.set_tolerance(bad)


def test_stage_times_reach_a_time_dependent_right_hand_side():
    """x' = cos(t) from t0 = 2 s: x(t0 + 3) - x(t0) = sin(5) - sin(2)."""
    x = advance_function(lambda t, x: np.array([math.cos(t)]), 2.0, np.zeros(1), 3.0,
                         ErrorControl(rtol=1e-10, atol=1e-12))
    assert x[0] == pytest.approx(math.sin(5.0) - math.sin(2.0), abs=1e-9)


def test_adaptive_kernel_reports_its_steps():
    plant = mbfmu.load_plant("rigid_arm")
    x = plant.initial_state()
    q, v, (acc, rej, evals, t_reached, h_next, err) = _kernels.adapt(
        plant.model._h, x[:3], x[3:], np.full(3, 10.0), 0.5, ErrorControl().options(1e-3))
    assert t_reached == 0.5 and acc >= 1 and evals == 1 + 6 * (acc + rej) and err <= 1.0


# ------------------------------------------------------------------ the FMU
@pytest.fixture(scope="module")
def arm_fmu(tmp_path_factory):
    from mbfmu.fmu.builder import build_fmu
    return build_fmu("rigid_arm", tmp_path_factory.mktemp("ec") / "rigid_arm.fmu")


def _fmu_run(path, tolerance, step, n, torque=TORQUE):
    """Joint angles after n doSteps of ``step`` s, fmpy as host, with
    ``tolerance`` passed to fmi2SetupExperiment (None: not defined); or the
    FMICallException of the step that failed, with the log."""
    from fmpy.fmi1 import FMICallException

    from tests.fmu.fmurun import instantiate, open_fmu
    op = open_fmu(path)
    fmu = instantiate(op)
    try:
        fmu.setupExperiment(tolerance=tolerance, startTime=0.0)
        fmu.enterInitializationMode()
        fmu.setReal([op.vr[f"tau[{k}]"] for k in (1, 2, 3)], [torque] * 3)
        fmu.exitInitializationMode()
        try:
            for k in range(n):
                fmu.doStep(k * step, step)
        except FMICallException as exc:
            return exc, op.messages
        return np.array(fmu.getReal([op.vr[f"q[{k}]"] for k in (1, 2, 3)])), op.messages
    finally:
        fmu.terminate()
        fmu.freeInstance()
        op.close()


def test_fmu_integrates_to_the_hosts_tolerance(arm_fmu):
    """The FMU's angles equal the Python plant's at the same tolerance: the
    default without a tolerance, the host's when it defines one."""
    plant = mbfmu.load_plant("rigid_arm")
    for tol in (None, 1e-3, 1e-9):
        p = copy.copy(plant)
        if tol is not None:
            p.set_tolerance(tol)
        x = p.initial_state()
        for k in range(50):
            x = p.advance(k * 0.01, x, np.full(3, TORQUE), 0.01)
        got, _ = _fmu_run(arm_fmu, tol, 0.01, 50)
        np.testing.assert_allclose(got, x[:3], rtol=0, atol=1e-12)
        if tol == 1e-3:
            loose = got
    assert np.max(np.abs(loose - got)) > 1e-6  # the tolerance really changed the result


def test_fmu_step_that_cannot_meet_its_tolerance_returns_error(arm_fmu):
    """A 100 s doStep at 1000 N m needs more than the 100000 steps allowed
    per call: fmi2Error with the reason in the log, not fmi2OK."""
    exc, messages = _fmu_run(arm_fmu, 1e-8, 100.0, 1)
    assert not isinstance(exc, np.ndarray), "the step returned OK"
    assert exc.status == 3  # fmi2Error
    assert any("step limit" in m and "rigid_arm" in m for _, _, m in messages)
