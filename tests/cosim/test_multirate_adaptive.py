"""Multi-rate units and the adaptive macro step."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.errors import CosimError

from .helpers import D1, D2, DC, K1, K2, KC, M1, M2, RawFmu, grid_steps, monolithic_two_mass, sub_steps
from .systems import with_feedthrough


def test_multirate_unit_matches_hand_loop_with_sub_steps(mass_fmu):
    """b steps 4 times per macro step with inputs held: same as a plain loop doing so."""
    va, vb = dict(m=M1, k=K1, d=D1, x0=1.0), dict(m=M2, k=K2, d=D2, kc=KC, dc=DC)
    s = System([FmuUnit(mass_fmu, "a", values=va), FmuUnit(mass_fmu, "b", values=vb, step=0.0025)],
               [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])
    r = simulate(s, 0.5, 0.01)
    a, b = RawFmu(mass_fmu, "a", va), RawFmu(mass_fmu, "b", vb)

    def exchange():
        b.set(["xin", "vin"], a.get("x", "v"))
        a.set(["F"], b.get("Fc"))
    exchange()
    xs = [b.get("x")[0]]
    for t, h in grid_steps(0.0, 0.5, 50):
        a.step(t, h)
        for ts, hs in sub_steps(t, h, 4):
            b.step(ts, hs)
        exchange()
        xs.append(b.get("x")[0])
    np.testing.assert_array_equal(r["b.x"], xs)
    r1 = simulate(with_feedthrough(mass_fmu), 0.5, 0.01)
    assert not np.array_equal(r1["b.x"], r["b.x"])  # the sub-steps made a difference


def _max_error(r):
    ref = monolithic_two_mass(r.time)
    got = np.column_stack([r["a.x"], r["a.v"], r["b.x"], r["b.v"]])
    return float(np.max(np.abs(got - ref)))


def test_adaptive_holds_tolerance_rejects_and_needs_fewer_steps(mass_fmu):
    T = 2.0
    errs, steps = [], []
    for tol in (1e-3, 1e-4):
        r = simulate(with_feedthrough(mass_fmu), T, 0.05, adaptive=True, extrapolation=1, rtol=tol, atol=tol)
        assert r.time[-1] == T and np.all(np.diff(r.time) > 0)
        assert r.summary.rejected_steps > 0  # the initial 0.05 s step is too large
        errs.append(_max_error(r))
        steps.append(r.summary.steps)
        h = np.diff(r.time)
        assert h.max() > 3 * h.min()  # the step really adapts
    # tolerance proportionality: the global error follows the tolerance (~4x it for this system)
    assert errs[0] < 5e-3 and errs[1] < 5e-4
    assert 5 < errs[0] / errs[1] < 20
    # the fixed-step run with the same extrapolation needs more steps for the same accuracy
    for n in (50, 100, 200, 400, 800, 1600, 3200):
        if _max_error(simulate(with_feedthrough(mass_fmu), T, T / n, extrapolation=1)) <= errs[1]:
            break
    assert steps[1] < n, (steps, n)


def test_adaptive_is_refused_when_a_unit_cannot_roll_back(pendulum_fmu, mass_fmu):
    s = System([FmuUnit(pendulum_fmu, "p"), FmuUnit(mass_fmu, "m")])
    with pytest.raises(CosimError, match=r"adaptive stepping needs rollback, but units \['p'\]"):
        simulate(s, 1.0, 0.1, adaptive=True)


def test_iterative_coupling_is_second_order_and_beats_explicit_jacobi(mass_fmu):
    """Implicit Jacobi (rollback, linear interpolation of the converged inputs): order 2
    against the monolithic solution, and more accurate than explicit Jacobi at the same step."""
    ref = monolithic_two_mass(1.0)[0]

    def err(h, **kw):
        r = simulate(with_feedthrough(mass_fmu), 1.0, h, **kw)
        return np.max(np.abs([r["a.x"][-1] - ref[0], r["a.v"][-1] - ref[1], r["b.x"][-1] - ref[2], r["b.v"][-1] - ref[3]]))
    e1, e2 = err(0.01, iterative=True), err(0.0025, iterative=True)
    assert abs(np.log2(e1 / e2) / 2 - 2) < 0.3
    assert e1 < err(0.01) / 10
    r = simulate(with_feedthrough(mass_fmu), 1.0, 0.01, iterative=True)
    assert r.summary.loop_iterations > 2 * r.summary.steps  # really iterated


def test_iterative_coupling_is_refused_without_rollback(pendulum_fmu, pd_fmu):
    s = System([FmuUnit(pendulum_fmu, "plant"), FmuUnit(pd_fmu, "ctrl")],
               [("plant.theta", "ctrl.theta"), ("ctrl.tau", "plant.tau")])
    with pytest.raises(CosimError, match=r"iterative coupling needs rollback, but units \['plant', 'ctrl'\]"):
        simulate(s, 1.0, 0.1, iterative=True)


def test_adaptive_gives_up_with_an_error_instead_of_hanging(mass_fmu):
    with pytest.raises(CosimError, match="adaptive stepping took 50 steps") as e:
        simulate(with_feedthrough(mass_fmu), 10.0, 0.01, adaptive=True, rtol=1e-9, atol=1e-9, max_steps=50)
    assert len(e.value.result) > 1
