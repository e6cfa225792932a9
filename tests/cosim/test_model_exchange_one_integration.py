"""#35: a Model Exchange unit keeps one CVODE integration across communication
points. It restarts only at events, at input jumps and at restored states, and
its answers stay those of the analytic solutions and of a tight reference."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate

from mbfmu.cosim import FmuUnit, System, simulate, sources
from tooling import reference_fmu

from .helpers import bounce_times

VERSIONS = ["fmi2", "fmi3"]
TOLERANCES = (1e-4, 1e-6, 1e-8)


@pytest.mark.parametrize("version", VERSIONS)
def test_bouncing_ball_bounces_within_a_nanosecond_and_restarts_only_there(version):
    u = FmuUnit(reference_fmu(version, "BouncingBall"), "ball", interface="me", rtol=1e-12, atol=1e-12)
    simulate(System([u]), 2.5, 0.01, progress=False)
    bounces = [t for t, kind in u.events if kind == "state"]
    np.testing.assert_allclose(bounces[:5], bounce_times(5), rtol=0, atol=1e-9)
    assert u.restarts == len(u.events), (u.restarts, u.events)  # not at the 250 communication points


def _van_der_pol_reference(stop):
    ref = scipy.integrate.solve_ivp(lambda t, x: [x[1], (1 - x[0] ** 2) * x[1] - x[0]], (0, stop), [2.0, 0.0],
                                    method="DOP853", rtol=1e-13, atol=1e-13)
    return ref.y[0][-1]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("rtol", TOLERANCES)
def test_final_values_are_within_each_tolerances_error_of_a_tight_reference(version, rtol):
    """Dahlquist x(10) = exp(-10); VanDerPol (mu = 1) x0(10) from DOP853 at 1e-13. CVODE's
    global error is a modest multiple of its local tolerance: 20 rtol relative to the
    solution's size (1 for Dahlquist's start, 2 for VanDerPol's amplitude)."""
    stop = 10.0
    d = FmuUnit(reference_fmu(version, "Dahlquist"), "d", interface="me", rtol=rtol)
    v = FmuUnit(reference_fmu(version, "VanDerPol"), "v", interface="me", rtol=rtol)
    r = simulate(System([d, v]), stop, 0.01, progress=False)
    assert abs(r["d.x"][-1] - math.exp(-stop)) <= 20 * rtol * 1.0
    assert abs(r["v.x0"][-1] - _van_der_pol_reference(stop)) <= 20 * rtol * 2.0
    assert d.restarts == 0 and v.restarts == 0  # one integration across 1000 communication points


def test_a_unit_with_connected_inputs_restarts_only_when_an_input_jumps(native_fmus):
    """Three torque steps at 0.3 s: the solver restarts once for the first inputs the
    master sets (they differ from the start values) and once at the step, not at the
    1000 communication points where the inputs are set to the values they had."""
    fmu = native_fmus("rigid_arm", platforms=("linux64",))
    arm = FmuUnit(fmu, "arm", interface="me", rtol=1e-8)
    src = [sources.step(f"s{k}", 0.3, height=h, initial=0.5 * h) for k, h in enumerate((2.0, -5.0, 3.0))]
    me = simulate(System([arm, *src], [(f"s{k}.y", f"arm.tau[{k + 1}]") for k in range(3)]), 1.0, 1e-3,
                  progress=False)
    assert arm.restarts == 2 and arm.events == []
    cs = simulate(System([FmuUnit(fmu, "arm"), *src], [(f"s{k}.y", f"arm.tau[{k + 1}]") for k in range(3)]), 1.0,
                  1e-3, progress=False)
    for n in ("arm.q[1]", "arm.q[2]", "arm.q[3]"):
        scale = float(np.max(np.abs(cs[n])))
        np.testing.assert_allclose(me[n], cs[n], rtol=0, atol=1e-5 * scale)
