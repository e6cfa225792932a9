"""Clocked FMI 3.0 units in the compiled loop (#35, #36.2). Systems with a Scheduled
Execution FMU take the C loop (mbfmu.cosim.master.c_scheduled), which activates
the same partitions at the same times in the same order as the Python loop
(MBFMU_PYTHON_LOOP=1) and gives its results column by column, bit for bit; on the
Reference FMUs' Clocks.fmu it also equals the Reference FMUs' own importer
(examples/scs_synchronous.c, kept in tests/fixtures). Co-simulation FMUs with
event mode take it too (mbfmu.cosim.master.c_events): the same events at the same
times, the same results bit for bit."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, FunctionUnit, System, simulate
from mbfmu.cosim.master import fast_loop
from mbfmu.cosim.units import Variable
from mbfmu.errors import CosimError

from .fmu_build import build_ticker3
from .clocks_reference import CLOCKS, scs_reference
from .loop_comparison import bitwise_equal, both_loops, same_failure_in_both_loops


class BooleanPulses(FunctionUnit):
    """A Boolean output that is true at the given communication points (s) only: a
    FunctionUnit, so the compiled loop calls it back and keeps the rest in C."""

    def __init__(self, name: str, times: list[float]) -> None:
        at = set(times)
        super().__init__(name, lambda t, u: [1.0 if t in at else 0.0])
        self.variables["y"] = Variable("y", "output", "Boolean", None, 0.0)


def _clocks_system() -> System:
    # inClock2 is triggered at 0, 1, 8 and 9 s, as the Reference FMUs' scs_synchronous.c does
    return System([FmuUnit(CLOCKS, "clocks"), BooleanPulses("trigger", [0.0, 1.0, 8.0, 9.0])],
                  [("trigger.y", "clocks.inClock2")])


def test_clocks_fmu_runs_compiled_like_the_python_loop_and_the_reference_importer(monkeypatch):
    (fast, fs), (slow, ss) = both_loops(_clocks_system, monkeypatch, 9.0, 1.0)
    bitwise_equal(fast, slow)
    a, b = fs.units["clocks"], ss.units["clocks"]
    assert list(a.activations) == list(b.activations) and a.ticks == b.ticks
    assert list(a.ticks) == list(b.ticks)  # first activated first
    rows, calls, out_clock = scs_reference()
    for name in ("inClock1Ticks", "inClock2Ticks", "inClock3Ticks", "totalInClockTicks"):
        np.testing.assert_array_equal(fast[f"clocks.{name}"], [r[name] for r in rows], err_msg=name)
    np.testing.assert_array_equal(fast["clocks.outClock"], out_clock)
    by_vr = {c.vr: c.name for c in a.clocks.values()}
    assert list(a.activations) == [(by_vr[vr], t) for vr, t in calls]
    # the countdown clock inClock3 was scheduled by the FMU inside the compiled run
    assert a.ticks == {"inClock1": (10, 9.0), "inClock2": (4, 9.0), "inClock3": (1, 4.0)}


def test_an_output_clock_drives_another_units_partition_compiled(monkeypatch):
    def make():
        return System([FmuUnit(CLOCKS, "a"), FmuUnit(CLOCKS, "b", values={"input2": 3}),
                       BooleanPulses("trigger", [0.0, 1.0])],
                      [("trigger.y", "a.inClock2"), ("a.outClock", "b.inClock2")])
    # a recorded input clock (from the unit's buffer) and input variable (read from the FMU) too
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 3.0, 1.0, record=["a.outClock", "b.inClock2", "b.input2",
                                                                            "b.inClock2Ticks", "a.totalInClockTicks"])
    bitwise_equal(fast, slow)
    assert fast["a.outClock"].any() and fast["b.inClock2Ticks"][-1] > 0  # the clocks did something
    assert fast["b.inClock2"].tolist() == fast["a.outClock"].tolist()
    assert fast["b.input2"][0] == 3  # its start value (the partition of inClock2 clears it, Clocks/model.c)
    for n in ("a", "b"):
        assert list(fs.units[n].activations) == list(ss.units[n].activations)


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    """cfmu/ticker3.c as Scheduled Execution: a periodic partition (0.5 s) that sets a
    countdown clock ``delay`` seconds ahead through the clock-update callback."""
    return build_ticker3(tmp_path_factory.mktemp("sampler3"), scheduled=True)


@pytest.mark.parametrize("delay", [0.25, 0.0])
def test_countdown_clocks_run_compiled_like_the_python_loop(sampler, monkeypatch, delay):
    def make():
        return System([FmuUnit(sampler, "s", values={"delay": delay})])
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 2.0, 0.25)
    bitwise_equal(fast, slow)
    a = fs.units["s"]
    assert list(a.activations) == list(ss.units["s"].activations) and a.ticks == ss.units["s"].ticks
    assert a.ticks["later"][0] == (4 if delay else 5)  # the countdown partition ran where the FMU scheduled it


def test_a_countdown_tick_off_the_grid_fails_the_compiled_run_as_the_python_loop(sampler, monkeypatch):
    msgs = []
    for enabled in (True, False):
        monkeypatch.setattr(fast_loop, "ENABLED", enabled)
        with pytest.raises(CosimError) as err:
            simulate(System([FmuUnit(sampler, "s", values={"delay": 0.1})]), 1.0, 0.25, progress=False)
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1] and "clock 'later': countdown tick at 0.1 s is not a whole number" in msgs[0]


def test_a_controller_partition_every_other_step_with_a_multirate_plant(monkeypatch):
    """Clocks' 1 s periodic clock on a 0.5 s master grid: a partition at every other
    communication point; with extrapolated inputs the compiled run still equals the Python one."""
    def make():
        return System([FmuUnit(CLOCKS, "clocks"), BooleanPulses("trigger", [0.5, 2.0])],
                      [("trigger.y", "clocks.inClock2")])
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 3.0, 0.5, extrapolation=1)
    bitwise_equal(fast, slow)
    assert list(fs.units["clocks"].activations) == list(ss.units["clocks"].activations)
    assert fast["clocks.inClock1Ticks"].tolist() == [1, 1, 2, 2, 3, 3, 4]


@pytest.fixture(scope="module")
def arm_and_controller(tmp_path_factory):
    """The native rigid_arm (FMI 3.0 co-simulation) and the joint controller of
    tests/control/clocked_arm.py exported natively as FMI 3.0 Scheduled Execution at 1 kHz."""
    from tests.control.clocked_arm import arm_and_scheduled_controller
    return arm_and_scheduled_controller(tmp_path_factory)


def test_ten_thousand_ticks_land_on_k_T_in_the_compiled_loop(arm_and_controller):
    """Ticks counted in integers in C: activation k at k * T to the bit (a float sum of T drifts)."""
    from tests.control.clocked_arm import T
    se = FmuUnit(arm_and_controller[1], "ctrl")
    (clock,) = se.clocks.values()
    res = simulate(System([se]), 10.0, T, record=[], progress=False)
    assert "python_loop" not in res.meta
    assert se.ticks[clock.name] == (10_001, 10.0)
    assert list(se.activations) == [(clock.name, k * T) for k in range(1, 10_001)]  # the last 10,000 kept
    assert np.cumsum(np.full(10_000, T))[-1] != 10.0


def test_the_mixed_arm_scheduled_controller_and_observer_run_compiled(monkeypatch, arm_and_controller):
    """#36.2's mixed system: the native rigid_arm (FMI 3.0 co-simulation), the native
    joint controller as Scheduled Execution at 1 kHz and a python-control observer,
    compiled, with one activation per k * T. The plant's and the controller's columns
    equal the Python loop's bit for bit; the observer (an LTI ControlUnit, which C
    steps with sums grouped otherwise than numpy's, see c_units) to 1e-13 of its range."""
    from tests.control.clocked_arm import T, arm_loop
    plant, ctrl = arm_and_controller
    runs = {}
    for enabled in (True, False):
        monkeypatch.setattr(fast_loop, "ENABLED", enabled)
        se = FmuUnit(ctrl, "ctrl")
        runs[enabled] = (arm_loop(plant, se, stop=0.2), se)
    (fast, a), (slow, b) = runs[True], runs[False]
    assert "python_loop" not in fast.meta and "python_loop" in slow.meta
    obs = [n for n in fast.names if n.startswith("obs.")]
    bitwise_equal(fast, slow, [n for n in fast.names if n not in obs])
    for n in obs:
        assert np.abs(fast[n] - slow[n]).max() <= 1e-13 * np.abs(slow[n]).max(), n
    assert np.abs(fast["ctrl.tau2"]).max() > 1e-2  # the controller acts
    (clock,) = a.clocks.values()
    assert a.ticks == b.ticks == {clock.name: (201, 200 * T)}
    assert list(a.activations) == [(clock.name, k * T) for k in range(201)]


# -- FMI 3.0 co-simulation with event mode ------------------------------------------------------

@pytest.fixture(scope="module")
def ticker(tmp_path_factory):
    """cfmu/ticker3.c: an output clock ticking inside steps (early return at the tick) and
    a triggered input clock."""
    return build_ticker3(tmp_path_factory.mktemp("ticker3"))


@pytest.mark.parametrize("early_return", [True, False])
def test_events_inside_steps_run_compiled_like_the_python_loop(ticker, monkeypatch, early_return):
    def make():
        return System([FmuUnit(ticker, "tick", early_return=early_return)])
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 2.0, 0.1, extrapolation=1)
    bitwise_equal(fast, slow)
    a, b = fs.units["tick"], ss.units["tick"]
    want = [0.1234567891234 + k * 0.37 for k in range(6)]  # the FMU's ticks up to 2 s
    assert list(a.events) == list(b.events) and [c for _, c in a.events] == [("tick",)] * 6
    times = [t for t, _ in a.events]
    if early_return:  # handled at the FMU's own event time, inside the step
        assert np.abs(np.array(times) - want).max() <= 1e-12
    else:
        assert times == [fast["time"][int(np.ceil((t - 1e-12) / 0.1))] for t in want]
    assert np.abs(fast["tick.x"] - fast["time"]).max() <= 1e-12  # every piece of every step was stepped


def test_an_output_clock_kicks_another_units_input_clock_compiled(ticker, monkeypatch):
    def make():
        a, b = FmuUnit(ticker, "a"), FmuUnit(ticker, "b")
        b.set("first", 10.0)  # b's own clock stays quiet
        return System([a, b], [("a.tick", "b.kick")])
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 2.0, 0.1)
    bitwise_equal(fast, slow)
    assert fast["b.kicks"][-1] == 6 and fast["a.count"][-1] == 6
    for n in ("a", "b"):
        assert list(fs.units[n].events) == list(ss.units[n].events)


@pytest.mark.parametrize("kw", [{}, {"threads": 2}, {"algorithm": "gauss-seidel"}], ids=["jacobi", "threads", "gs"])
def test_an_event_unit_and_a_scheduled_unit_together_run_compiled(ticker, monkeypatch, kw):
    """A co-simulation output clock (inside steps) triggers a Scheduled Execution partition;
    with the units of a Jacobi step in two threads, and with Gauss-Seidel, too."""
    def make():
        return System([FmuUnit(ticker, "tick"), FmuUnit(CLOCKS, "clocks")], [("tick.tick", "clocks.inClock2")])
    (fast, fs), (slow, ss) = both_loops(make, monkeypatch, 3.0, 0.5, **kw)
    assert fast.summary.threads == kw.get("threads", 1)
    bitwise_equal(fast, slow)
    # Jacobi: one partition per communication point that ends a step holding ticks (two may share
    # a step); Gauss-Seidel activates a driven unit when its inputs are next set, so the last
    # point's tick is not activated before the run ends
    assert fast["tick.tick"].sum() == 6 and fast["tick.count"][-1] == 8
    assert fast["clocks.inClock2Ticks"][-1] == (5 if kw.get("algorithm") else 6)
    assert list(fs.units["clocks"].activations) == list(ss.units["clocks"].activations)


# -- failing FMU calls: the same error and the same rows in both loops ----------------------------


def test_a_failing_partition_fails_both_loops_alike(monkeypatch):
    """fmi3ActivateModelPartition returning fmi3Error from the tick at 2 s on (a wrapper around
    the FMU's own function, installed after initialization)."""
    from mbfmu.cosim.fmi.fmu3_scheduled import Fmu3ScheduledUnit
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_double)
    real_init = Fmu3ScheduledUnit._initialized

    def failing_from_2_s(self, t0, step):
        real_init(self, t0, step)
        real = self._f_activate
        self._f_activate = proto(lambda inst, vr, t: 3 if t >= 2.0 else real(inst, vr, t))

    monkeypatch.setattr(Fmu3ScheduledUnit, "_initialized", failing_from_2_s)
    msg = same_failure_in_both_loops(_clocks_system, monkeypatch, 4.0, 1.0)
    assert msg.startswith("unit 'clocks': fmi3ActivateModelPartition of clock 'inClock1' returned error at t = 2.0 s")


def test_a_failing_event_update_fails_both_loops_alike(ticker, monkeypatch):
    """fmi3UpdateDiscreteStates returning fmi3Error at the first event inside a step."""
    from mbfmu.cosim.fmi.fmu3_events import Fmu3EventUnit
    proto = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 7)
    real_init = Fmu3EventUnit._initialized

    def failing_after_start(self, t0, step):
        real_init(self, t0, step)  # the event at the start time runs with the FMU's own function
        self._f_update = proto(lambda *args: 3)

    monkeypatch.setattr(Fmu3EventUnit, "_initialized", failing_after_start)
    msg = same_failure_in_both_loops(lambda: System([FmuUnit(ticker, "tick")]), monkeypatch, 1.0, 0.1)
    assert msg.startswith("unit 'tick': fmi3UpdateDiscreteStates returned error at t = 0.1234567891234 s")
