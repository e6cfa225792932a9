"""Jacobi and Gauss-Seidel against plain hand-written fmpy loops (bit-identical),
and the step counting that ends exactly at the stop time."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from mbfmu.cosim import FmuUnit, System, simulate

from .helpers import RawFmu, grid_steps

H, T = 1e-3, 2.0


def pendulum_pd(pendulum_fmu, pd_fmu):
    return System([FmuUnit(pendulum_fmu, "plant"), FmuUnit(pd_fmu, "ctrl", values={"ref": 0.2})],
                  [("plant.theta", "ctrl.theta"), ("plant.omega", "ctrl.omega"), ("ctrl.tau", "plant.tau")])


def _reference_pendulum(pendulum_fmu, pd_fmu, gauss_seidel):
    p, c = RawFmu(pendulum_fmu, "plant"), RawFmu(pd_fmu, "ctrl", {"ref": 0.2})
    n = int(round(T / H))
    # initial output-to-input propagation
    c.set(["theta", "omega"], p.get("theta", "omega"))
    p.set(["tau"], c.get("tau"))
    rows = [(0.0, *p.get("theta", "omega"), *c.get("tau"))]
    for k in range(n):
        t = k * T / n  # both points counted; the step is their difference
        h = (T if k == n - 1 else (k + 1) * T / n) - t
        if gauss_seidel:  # plant first, then the controller sees the new plant outputs
            p.set(["tau"], c.get("tau"))
            p.step(t, h)
            c.set(["theta", "omega"], p.get("theta", "omega"))
            c.step(t, h)
        else:
            p.step(t, h)
            c.step(t, h)
            c.set(["theta", "omega"], p.get("theta", "omega"))
            p.set(["tau"], c.get("tau"))
        rows.append(((k + 1) * H, *p.get("theta", "omega"), *c.get("tau")))
    p.close()
    c.close()
    return np.array(rows)


@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
def test_pythonfmu_loop_is_bit_identical_to_hand_written_fmpy_loop(pendulum_fmu, pd_fmu, algorithm):
    r = simulate(pendulum_pd(pendulum_fmu, pd_fmu), T, H, algorithm=algorithm, order=["plant", "ctrl"])
    ref = _reference_pendulum(pendulum_fmu, pd_fmu, algorithm == "gauss-seidel")
    got = np.column_stack([r["plant.theta"], r["plant.omega"], r["ctrl.tau"]])
    assert got.shape == ref[:, 1:].shape
    assert np.array_equal(got, ref[:, 1:])
    # the loop is really closed: theta settles where kp (ref - theta) = g sin(theta)
    eq = scipy.optimize.brentq(lambda th: 20.0 * (0.2 - th) - 9.81 * np.sin(th), 0.0, 0.2)
    assert abs(r["plant.theta"][-1] - eq) < 5e-3


def test_jacobi_skipping_initial_propagation_would_differ(pendulum_fmu, pd_fmu):
    """Guard that the reference test can fail: a loop without the initial propagation differs."""
    r = simulate(pendulum_pd(pendulum_fmu, pd_fmu), T, H)
    p, c = RawFmu(pendulum_fmu, "plant"), RawFmu(pd_fmu, "ctrl", {"ref": 0.2})
    for t, h in grid_steps(0.0, T, int(round(T / H))):
        p.step(t, h)
        c.step(t, h)
        c.set(["theta", "omega"], p.get("theta", "omega"))
        p.set(["tau"], c.get("tau"))
    assert p.get("theta")[0] != r["plant.theta"][-1]


def test_feedthrough_exchange_order_matches_hand_loop(mass_fmu):
    """Jacobi over C FMUs where b.Fc depends directly on b's inputs: the exchange sets
    b's inputs before reading Fc (order from the declared dependencies), even though
    b was added first."""
    vals_a, vals_b = {"m": 1.0, "k": 10.0, "x0": 1.0}, {"m": 2.0, "k": 20.0, "kc": 30.0, "dc": 0.5}
    s = System([FmuUnit(mass_fmu, "b", values=vals_b), FmuUnit(mass_fmu, "a", values=vals_a)],
               [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])
    r = simulate(s, 0.5, 0.01)
    a, b = RawFmu(mass_fmu, "a", vals_a), RawFmu(mass_fmu, "b", vals_b)

    def exchange():
        b.set(["xin", "vin"], a.get("x", "v"))
        a.set(["F"], b.get("Fc"))
    exchange()
    xs = [a.get("x")[0]]
    for t, h in grid_steps(0.0, 0.5, 50):
        b.step(t, h)
        a.step(t, h)
        exchange()
        xs.append(a.get("x")[0])
    assert np.array_equal(r["a.x"], np.array(xs))


def test_time_counts_steps_and_ends_exactly_at_stop_time(gain_fmu):
    s = System([FmuUnit(gain_fmu, "g")])
    r = simulate(s, 10.0, 1e-3)
    assert r.summary.steps == 10_000
    assert len(r) == 10_001
    assert r.time[-1] == 10.0
    assert np.array_equal(r.time, np.arange(10_001) * 10.0 / 10_000)  # counted, no drift
    assert r.summary.end_time == 10.0 and r.summary.real_time_factor > 0
