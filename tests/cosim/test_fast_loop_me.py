"""#35 §3: Model Exchange units in the compiled loop. C takes each communication step of
an FmuMeUnit / Fmu3MeUnit (``me_do_step`` in ``csrc/me_step.c``: CVODE to the
communication point, state and time events, the event iteration, restarts and the
kept Jacobian) without Python per step; the results, events, restarts and Jacobian
counts equal those of the Python loop (MBFMU_PYTHON_LOOP=1) bit for bit, and a failing
FMU fails both loops with the same error and the same rows."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate, sources
from mbfmu.cosim.master import fast_loop

from .helpers import bounce_times
from .loop_comparison import bitwise_equal, both_loops, same_failure_in_both_loops
from .me_faults import fail_derivative_calls_from
from tooling import reference_fmu


def _me(version: str, model: str, name: str = "u", **kw) -> FmuUnit:
    return FmuUnit(reference_fmu(version, model), name, interface="me", **kw)


def _same_unit_history(fast_sys, slow_sys, name: str = "u") -> None:
    a, b = fast_sys.units[name], slow_sys.units[name]
    assert a.events == b.events
    assert (a.restarts, a.jacobians) == (b.restarts, b.jacobians)


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
@pytest.mark.parametrize("model, stop", [("VanDerPol", 5.0), ("Dahlquist", 5.0), ("BouncingBall", 3.0)])
def test_reference_me_units_run_compiled_like_the_python_loop(version, model, stop, monkeypatch):
    tol = {"rtol": 1e-12, "atol": 1e-12} if model == "BouncingBall" else {"rtol": 1e-9}
    (fast, fs), (slow, ss) = both_loops(lambda: System([_me(version, model, **tol)]), monkeypatch, stop, 1e-3)
    bitwise_equal(fast, slow)
    _same_unit_history(fs, ss)
    if model == "Dahlquist":  # dx/dt = -x, x(0) = 1
        assert abs(fast["u.x"][-1] - math.exp(-stop)) < 1e-7
    if model == "BouncingBall":
        u = fs.units["u"]
        bounces = [t for t, kind in u.events if kind == "state"]
        assert len(bounces) >= 4
        np.testing.assert_allclose(bounces[:4], bounce_times(4), rtol=0, atol=1e-9)


@pytest.mark.parametrize("kw", [{}, {"algorithm": "gauss-seidel"}, {"extrapolation": 2}, {"threads": 2}])
@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_me_units_mixed_with_a_co_simulation_unit_run_compiled(version, kw, monkeypatch):
    """VanDerPol (ME) drives the Feedthrough FMU as co-simulation, which drives the Feedthrough
    FMU as ME: an ME unit whose input changes at every communication point (a restart each
    step in both loops); the chain carries x0 through unchanged. Also with Gauss-Seidel, with
    input extrapolation of order 2 (its start-up trial step rolls back in Python, and every
    ME step restarts: a repeated step must give the same result) and with threads."""
    def make():
        return System([_me(version, "VanDerPol", "v", rtol=1e-8), FmuUnit(reference_fmu(version, "Feedthrough"), "f"),
                       _me(version, "Feedthrough", "g")],
                      [("v.x0", "f.Float64_continuous_input"),
                       ("f.Float64_continuous_output", "g.Float64_continuous_input")])
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 2.0, 1e-3, **kw)
    bitwise_equal(fast, slow)
    _same_unit_history(fs, ss, "v")
    _same_unit_history(fs, ss, "g")
    assert fs.units["g"].restarts > 1000  # x0 changes at each of the 2000 points
    if not kw:
        np.testing.assert_array_equal(fast["g.Float64_continuous_output"], fast["v.x0"])


@pytest.fixture(scope="module")
def rigid_arm_fmu(native_fmus):
    return native_fmus("rigid_arm", platforms=("linux64",))


def test_a_native_plant_me_unit_with_stepped_inputs_runs_compiled(rigid_arm_fmu, monkeypatch):
    """mbfmu's native rigid arm as ME, its torques stepped by sources at 0.3 s (an input jump:
    a restart in both loops), equal bit for bit; and close to the arm's own co-simulation."""
    def make(interface="me"):
        arm = FmuUnit(rigid_arm_fmu, "arm", **({"interface": "me", "rtol": 1e-10, "atol": 1e-10} if interface else {}))
        src = [sources.step(f"s{k}", 0.3, height=h, initial=0.5 * h) for k, h in enumerate((2.0, -5.0, 3.0))]
        return System([arm, *src], [(f"s{k}.y", f"arm.tau[{k + 1}]") for k in range(3)])
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 1.0, 1e-3)
    bitwise_equal(fast, slow)
    _same_unit_history(fs, ss, "arm")
    assert fs.units["arm"].restarts >= 1  # the torque steps restarted CVODE
    cs = simulate(make(interface=None), 1.0, 1e-3, progress=False)
    scale = float(np.max(np.abs(cs["arm.q[1]"])))
    assert scale > 0.1
    np.testing.assert_allclose(fast["arm.q[1]"], cs["arm.q[1]"], rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_a_failing_derivative_call_fails_both_loops_alike(version, monkeypatch):
    """The FMU's derivative call returns fmiError from its 200th evaluation on (a wrapper put in
    the solver's C context): both loops end with the same one-line error and the same rows."""
    fail_derivative_calls_from(monkeypatch, 200)
    msg = same_failure_in_both_loops(lambda: System([_me(version, "VanDerPol", rtol=1e-8)]), monkeypatch, 10.0, 0.01)
    assert "\n" not in msg
    assert "failed with status 3 (error)" in msg, msg


def test_a_terminating_bouncing_ball_stops_both_loops_alike(monkeypatch):
    """The event iteration asking to stop at the first bounce (terminateSimulation set by a
    wrapper: around fmpy's newDiscreteStates for the Python loop, around the FMU's function
    in the solver's C context for the compiled one): both runs stop with the same message
    at the same time (the bounce, t = sqrt(2 / 9.81) s) and keep the same rows."""
    from fmpy.fmi2 import FMU2Model

    from mbfmu.cosim.fmi import me_solver
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int * 5))
    keep = []
    original_init, original_update = me_solver.MeSolver.__init__, FMU2Model.newDiscreteStates

    def stopping_init(self, *args, **kwargs):  # after the initial event iteration
        original_init(self, *args, **kwargs)
        real = proto(self.ctx.update)

        def stop(c, info):
            st = real(c, info)
            info.contents[1] = 1
            return st
        cb = proto(stop)
        keep.append(cb)
        self.ctx.update = ctypes.cast(cb, ctypes.c_void_p).value
        self._fmu.newDiscreteStates = lambda: (lambda r: (r[0], True, *r[2:]))(original_update(self._fmu))
    monkeypatch.setattr(me_solver.MeSolver, "__init__", stopping_init)
    out = []
    for enabled in (True, False):
        monkeypatch.setattr(fast_loop, "ENABLED", enabled)
        r = simulate(System([_me("fmi2", "BouncingBall", rtol=1e-10, atol=1e-10)]), 2.0, 1e-3, progress=False)
        out.append((r.summary.status + ": " + r.summary.message, [np.asarray(r[n]).tobytes() for n in r.names]))
    assert out[0] == out[1]
    assert "asked to stop (terminateSimulation) at a state event at t = 0.4515" in out[0][0], out[0][0]


def test_a_failing_event_iteration_fails_both_loops_alike(monkeypatch):
    """fmi2NewDiscreteStates returning fmi2Error at the first bounce (after the initial event
    iteration: through fmpy's wrapper in the Python loop, the FMU's function in the solver's C
    context in the compiled one): the same one-line error and the same rows."""
    from fmpy.fmi1 import FMICallException

    from mbfmu.cosim.fmi import me_solver
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
    keep = []
    original_init = me_solver.MeSolver.__init__

    def failing_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        cb = proto(lambda c, info: 3)
        keep.append(cb)
        self.ctx.update = ctypes.cast(cb, ctypes.c_void_p).value

        def raise_error(*args):
            raise FMICallException(function="fmi2NewDiscreteStates", status=3)
        self._fmu.fmi2NewDiscreteStates = raise_error
    monkeypatch.setattr(me_solver.MeSolver, "__init__", failing_init)
    msg = same_failure_in_both_loops(lambda: System([_me("fmi2", "BouncingBall", rtol=1e-10, atol=1e-10)]), monkeypatch, 2.0, 1e-3)
    assert msg.startswith("unit 'u': model exchange step from t = 0.451") and msg.endswith(
        "fmi2NewDiscreteStates failed with status 3 (error)."), msg
