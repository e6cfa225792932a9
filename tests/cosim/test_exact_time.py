"""Time that is exact: every step passes ``communicationStepSize = t_{n+1} - t_n``
with both points counted from the step number, so a unit that accumulates
``t += h`` lands on every communication point to the last bit.

The ``clock`` C FMU (cfmu/clock.c) sums the step sizes it is given and
compares the sum with each ``currentCommunicationPoint`` bit for bit
(``missed`` counts the differences, ``drift`` is the largest). A loop that
passes a constant ``h`` makes it miss almost every step (checked below, so
the test can fail); the Reference FMUs keep their own count and stay on the
explicit-Euler solution of their fixed solver step.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.master import fast_loop
from tooling import reference_fmu

from .helpers import RawFmu, grid_steps


def _clock_run(clock_fmu, stop, step, **kw):
    unit = FmuUnit(clock_fmu, "c")
    r = simulate(System([unit]), stop, step, progress=False, **kw)
    return r


def _assert_on_grid(r, t0, stop, n):
    assert r.summary.steps == n
    assert r["c.missed"][-1] == 0.0 and r["c.drift"][-1] == 0.0
    assert r["c.acc"][-1] == stop and r["c.last_t"][-1] == stop
    grid = np.array([t0 + k * (stop - t0) / n for k in range(n)] + [stop])
    np.testing.assert_array_equal(r.time, grid)
    # the unit's sum of steps is the master's grid at every recorded point
    np.testing.assert_array_equal(r["c.acc"], grid)


def test_a_million_steps_of_1e4_stay_on_the_grid_in_the_compiled_loop(clock_fmu):
    unit = FmuUnit(clock_fmu, "c")
    from mbfmu.cosim.master.run import _Master
    from mbfmu.cosim.master.options import SimulationOptions
    assert fast_loop.eligible(_Master(System([unit]), 1e-4, SimulationOptions(), None))  # the C loop runs it
    r = _clock_run(clock_fmu, 100.0, 1e-4)
    _assert_on_grid(r, 0.0, 100.0, 1_000_000)


@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
def test_python_loop_stays_on_the_grid_and_equals_the_compiled_one(clock_fmu, monkeypatch, algorithm):
    fast = _clock_run(clock_fmu, 10.0, 1e-4, algorithm=algorithm)
    monkeypatch.setattr(fast_loop, "ENABLED", False)
    slow = _clock_run(clock_fmu, 10.0, 1e-4, algorithm=algorithm)
    _assert_on_grid(slow, 0.0, 10.0, 100_000)
    assert np.array_equal(fast.time, slow.time) and np.array_equal(fast["c.acc"], slow["c.acc"])


@pytest.mark.parametrize("t0, stop, step", [(3.3, 13.7, 1e-3), (0.1, 0.7, 0.1), (1e4, 1e4 + 1.0, 1e-5)])
def test_non_zero_start_times_stay_on_the_grid(clock_fmu, t0, stop, step):
    n = int(round((stop - t0) / step))
    r = _clock_run(clock_fmu, stop, step, start_time=t0)
    _assert_on_grid(r, t0, stop, n)


def test_multi_rate_sub_steps_sum_to_the_communication_points(clock_fmu, gain_fmu):
    """A unit with its own step 1e-3 / 7 inside a 1e-3 macro step: its sub-steps are
    counted from each macro point and the last one ends on the next point."""
    s = System([FmuUnit(clock_fmu, "c", step=1e-3 / 7), FmuUnit(gain_fmu, "g")], [("g.y", "c.u")])
    r = simulate(s, 2.0, 1e-3, progress=False)
    assert r["c.missed"][-1] == 0.0 and r["c.acc"][-1] == 2.0
    np.testing.assert_array_equal(r["c.acc"], r.time)


def test_adaptive_steps_stay_on_the_points_the_master_records(clock_fmu):
    r = _clock_run(clock_fmu, 1.0, 1e-3, adaptive=True, extrapolation=1)
    assert r["c.missed"][-1] == 0.0
    np.testing.assert_array_equal(r["c.acc"], r.time)
    assert r.time[-1] == 1.0


def test_a_constant_step_would_drift(clock_fmu):
    """Guard: the clock sees the drift of a loop that passes the same h every step."""
    f = RawFmu(clock_fmu, "c")
    n = 10_000
    for k in range(n):
        f.step(k * 10.0 / n, 10.0 / n)
    missed, acc = f.get("missed", "acc")
    f.close()
    assert missed > n / 2 and acc != 10.0
    steps = grid_steps(0.0, 10.0, n)
    assert sum(1 for t, h in steps if h != 10.0 / n) > n / 2  # the counted steps differ from H


def _is_close(a, b):
    """The Reference FMUs' ``isClose`` (sources/cosimulation.c): 1e-5 absolute or relative."""
    return abs(a - b) <= 1e-5 or abs(a - b) <= 1e-5 * max(abs(a), abs(b))


def _euler_dahlquist(points):
    """Dahlquist (x' = -x, x(0) = 1) as the Reference FMUs integrate it: explicit
    Euler with a fixed solver step of 0.1 s, each solver step taken in the
    communication step whose end reaches it (to within their ``isClose``)."""
    x, n, out = 1.0, 0, [1.0]
    for t_next in points[1:]:
        while n * 0.1 + 0.1 <= t_next or _is_close(n * 0.1 + 0.1, t_next):  # time = nSteps * h, then + h
            x, n = x - 0.1 * x, n + 1
        out.append(x)
    return np.array(out)


@pytest.mark.parametrize("version, steps", [("fmi2", 1_000_000), ("fmi3", 100_000)])
def test_reference_dahlquist_accepts_every_point_of_a_fine_grid(version, steps):
    """The Reference FMUs check each currentCommunicationPoint against their own
    t + h (and fail the step otherwise); over 1e6 steps of 1e-4 (1e5 for FMI 3,
    which runs in the Python loop) they accept all and stay on their Euler solution."""
    stop = steps * 1e-4
    u = FmuUnit(reference_fmu(version, "Dahlquist"), "d")
    r = simulate(System([u]), stop, 1e-4, progress=False)
    assert r.summary.steps == steps and r.time[-1] == stop
    np.testing.assert_array_equal(r["d.x"], _euler_dahlquist(r.time.tolist()))
    assert math.isclose(r["d.x"][-1], 0.9 ** round(stop / 0.1), rel_tol=1e-12)
