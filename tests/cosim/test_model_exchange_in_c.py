"""#35 §3: a Model Exchange unit's CVODE callbacks run in C (``csrc/me_step.c``):
no Python call per right-hand-side evaluation, the same answers, and a failing
FMU call inside CVODE still ends the run with a one-line error."""
from __future__ import annotations

import math

import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.errors import CosimError

from .me_faults import fail_derivative_calls_from
from tooling import reference_fmu

DERIVATIVE_CALL = {"fmi2": "getDerivatives", "fmi3": "getContinuousStateDerivatives"}


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_cvode_evaluates_the_fmu_without_python_and_follows_the_exponential(version, monkeypatch):
    """Dahlquist (dx/dt = -x, x(0) = 1) at rtol 1e-10: x(10) = exp(-10) to the tolerance's
    error, while fmpy's Python wrappers of the derivative and state calls are never
    called (CVODE makes hundreds of evaluations; before, each went through them)."""
    from fmpy.fmi2 import FMU2Model
    from fmpy.fmi3 import FMU3Model
    cls = FMU2Model if version == "fmi2" else FMU3Model
    calls = {"n": 0}
    for name in (DERIVATIVE_CALL[version], "setContinuousStates", "getEventIndicators"):
        original = getattr(cls, name)

        def counted(self, *args, _original=original, **kwargs):
            calls["n"] += 1
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(cls, name, counted)
    u = FmuUnit(reference_fmu(version, "Dahlquist"), "d", interface="me", rtol=1e-10, atol=1e-12)
    r = simulate(System([u]), 10.0, 0.01, progress=False)
    assert abs(r["d.x"][-1] - math.exp(-10)) < 1e-12 * 50
    assert calls["n"] == 0


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_a_failing_derivative_call_inside_cvode_ends_the_run_with_one_line(version, monkeypatch):
    """The FMU's derivative call returns fmiError on its 20th evaluation (injected in
    the solver's C context): the run stops with a CosimError naming the call and its
    status, and the unit refuses further steps."""
    fail_derivative_calls_from(monkeypatch, 20)
    u = FmuUnit(reference_fmu(version, "VanDerPol"), "v", interface="me", rtol=1e-8)
    with pytest.raises(CosimError) as err:
        simulate(System([u]), 10.0, 0.01, progress=False)
    message = str(err.value)
    assert "\n" not in message
    assert f"{version}{'GetDerivatives' if version == 'fmi2' else 'GetContinuousStateDerivatives'} failed with " \
           "status 3 (error)" in message, message
    with pytest.raises(CosimError, match="failed earlier"):
        u.do_step(10.0, 0.01)


def test_restarts_at_bounces_reuse_the_jacobian_and_keep_the_bounce_times():
    """Each bounce restarts CVODE; the restart takes the last Jacobian instead of a new
    difference quotient, and the bounces stay at the analytic times to 1e-9 s."""
    from .helpers import bounce_times
    u = FmuUnit(reference_fmu("fmi2", "BouncingBall"), "ball", interface="me", rtol=1e-12, atol=1e-12)
    simulate(System([u]), 2.5, 0.01, progress=False)
    bounces = [t for t, kind in u.events if kind == "state"]
    assert len(bounces) >= 5
    assert max(abs(a - b) for a, b in zip(bounces[:5], bounce_times(5))) < 1e-9
    computed, reused = u.jacobians
    assert computed >= 1
    assert reused >= len(bounces) - 1, (u.jacobians, u.restarts)
