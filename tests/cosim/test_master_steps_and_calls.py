"""The master's step grid ends exactly at the stop time, and it makes no needless unit calls.

* 900 (stop time, step) pairs as a user types them: the last step of a strict
  unit ends at the stop time to the bit (a step of H from t_{N-1} overshoots
  it by a rounding error in many of them, as the old loop did).
* Gauss-Seidel sets the inputs and reads the outputs of each unit once per step.
* Recording a subset of a unit's outputs reads them from the output buffer:
  no extra unit call.
"""
from __future__ import annotations

import collections

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.units import Unit, Variable

STOPS = [0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0, 1.1, 1.2,
         1.5, 2.0, 2.5, 3.0, 3.3, 4.0, 5.0, 6.0, 7.5, 9.0, 10.0]
COUNTS = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 16, 20, 25, 30, 40, 50, 60, 64, 75, 80, 100, 120, 125, 150, 200, 250,
          300, 400, 500]


class StrictClock(Unit):
    """A unit without inputs that refuses a step ending past the stop time (as strict
    FMUs do) and keeps where its last step ended; output: its step count."""

    def __init__(self) -> None:
        super().__init__("clock", [Variable("n", "output", "Real", "1", 0.0)], {})
        self.u, self.y = [], np.zeros(1)

    def setup(self, t0, stop_time, step):
        self.stop, self.end, self.y[0] = stop_time, t0, 0.0

    def pull(self):
        pass

    def do_step(self, t, h):
        if t + h > self.stop:
            raise AssertionError(f"step to {t + h!r} past the stop time {self.stop!r}")
        self.end = t + h
        self.y[0] += 1


def test_last_step_ends_exactly_at_the_stop_time_for_900_pairs():
    overshoot_with_constant_step = 0
    for stop in STOPS:
        for n in COUNTS:
            step = float(f"{stop / n:.12g}")  # as typed: --stop-time 0.05 --step 0.0001
            clock = StrictClock()
            r = simulate(System([clock]), stop, step, progress=False)
            assert clock.end == stop and r.time[-1] == stop and r.summary.steps == n
            assert r["clock.n"][-1] == n
            t_last = (n - 1) * stop / n if n > 1 else 0.0
            overshoot_with_constant_step += t_last + step > stop
    assert len(STOPS) * len(COUNTS) == 900
    assert overshoot_with_constant_step > 50  # the pairs that failed with a last step of H


def test_issue_example_stop_005_step_1e4():
    clock = StrictClock()
    r = simulate(System([clock]), 0.05, 1e-4)
    assert clock.end == 0.05 and r.summary.steps == 500


def _count_calls(monkeypatch):
    """Count the units' FMU calls made by the Python loop (the compiled loop,
    which makes the same calls in C, is switched off; tests/cosim/test_fast_loop.py
    holds it equal to this loop bit for bit)."""
    from mbfmu.cosim.master import fast_loop
    monkeypatch.setattr(fast_loop, "ENABLED", False)
    calls = collections.Counter()
    for name in ("push", "pull", "do_step"):
        orig = getattr(FmuUnit, name)

        def counted(self, *a, _orig=orig, _name=name):
            calls[(self.name, _name)] += 1
            return _orig(self, *a)
        monkeypatch.setattr(FmuUnit, name, counted)
    orig_getter = FmuUnit.getter

    def counted_getter(self, names):
        get = orig_getter(self, names)

        def g():
            calls[(self.name, "get")] += 1
            return get()
        return g
    monkeypatch.setattr(FmuUnit, "getter", counted_getter)
    return calls


def _pair(mass_fmu):
    return System([FmuUnit(mass_fmu, "a", values={"k": 10.0, "x0": 1.0}),
                   FmuUnit(mass_fmu, "b", values={"kc": 30.0, "dc": 0.5})],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])


@pytest.mark.parametrize("order", [["a", "b"], ["b", "a"]])
def test_gauss_seidel_sets_and_reads_each_unit_once_per_step(mass_fmu, monkeypatch, order):
    n = 50
    ref = simulate(_pair(mass_fmu), 0.5, 0.01, algorithm="gauss-seidel", order=order)
    calls = _count_calls(monkeypatch)
    r = simulate(_pair(mass_fmu), 0.5, 0.01, algorithm="gauss-seidel", order=order)
    np.testing.assert_array_equal(r.data, ref.data)
    for u in ("a", "b"):
        assert calls[(u, "do_step")] == n
        # the initial exchange pushes once and reads at most twice (set-up reads once more)
        assert calls[(u, "push")] - 1 == n
        assert calls[(u, "pull")] - 3 <= n


def test_gauss_seidel_against_a_hand_loop(mass_fmu):
    """b first (its Fc depends on a's x, v), then a sees b's new Fc."""
    from .helpers import RawFmu, grid_steps
    va, vb = {"k": 10.0, "x0": 1.0}, {"kc": 30.0, "dc": 0.5}
    r = simulate(_pair(mass_fmu), 0.5, 0.01, algorithm="gauss-seidel", order=["b", "a"])
    a, b = RawFmu(mass_fmu, "a", va), RawFmu(mass_fmu, "b", vb)
    b.set(["xin", "vin"], a.get("x", "v"))
    a.set(["F"], b.get("Fc"))
    xs = [a.get("x")[0]]
    for t, h in grid_steps(0.0, 0.5, 50):
        b.set(["xin", "vin"], a.get("x", "v"))
        b.step(t, h)
        a.set(["F"], b.get("Fc"))
        a.step(t, h)
        xs.append(a.get("x")[0])
    np.testing.assert_array_equal(r["a.x"], xs)


def test_recording_a_subset_of_outputs_adds_no_unit_call(mass_fmu, monkeypatch):
    calls = _count_calls(monkeypatch)
    all_out = simulate(_pair(mass_fmu), 0.5, 0.01)
    full = dict(calls)
    calls.clear()
    sub = simulate(_pair(mass_fmu), 0.5, 0.01, record=["a.x", "b.Fc"])
    assert dict(calls) == full and calls[("a", "get")] == calls[("b", "get")] == 0
    np.testing.assert_array_equal(sub["a.x"], all_out["a.x"])
    np.testing.assert_array_equal(sub["b.Fc"], all_out["b.Fc"])
