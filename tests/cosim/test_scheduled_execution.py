"""FMI 3.0 Scheduled Execution in the master (#36.2): on the Reference FMUs'
``Clocks.fmu`` the master activates the same partitions at the same times and
reads the same values as the Reference FMUs' own importer
(``examples/scs_synchronous.c``, output kept in tests/fixtures, see its README);
periodic ticks are counted, never accumulated; what the master cannot do is
refused in one line."""
from __future__ import annotations


import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.fmi.clocks import Clock, PeriodicTicks, read_clocks
from mbfmu.cosim.master.fast_loop import python_loop_reason
from mbfmu.cosim.fmi.fmu3_scheduled import Fmu3ScheduledUnit
from mbfmu.errors import InputError

from .clocks_reference import CLOCKS, BooleanPulses, scs_reference
from .fmu_build import build_ticker3


def _run_clocks():
    unit = FmuUnit(CLOCKS, "clocks")
    # inClock2 is triggered by the importer at 0, 1, 8 and 9 s, as scs_synchronous.c does
    system = System([unit, BooleanPulses("trigger", [0.0, 1.0, 8.0, 9.0])], [("trigger.y", "clocks.inClock2")])
    return unit, simulate(system, 9.0, 1.0)


def test_clocks_fmu_ticks_like_the_reference_importer():
    rows, calls, out_clock = scs_reference()
    assert len(rows) == 10 and len(calls) == 15 and len(out_clock) == 10  # the fixture is what the README says
    unit, res = _run_clocks()
    assert isinstance(unit, Fmu3ScheduledUnit)
    np.testing.assert_array_equal(res["time"], [r["time"] for r in rows])
    for name in ("inClock1Ticks", "inClock2Ticks", "inClock3Ticks", "totalInClockTicks"):
        np.testing.assert_array_equal(res[f"clocks.{name}"], [r[name] for r in rows], err_msg=name)
    np.testing.assert_array_equal(res["clocks.outClock"], out_clock)
    by_vr = {c.vr: c.name for c in unit.clocks.values()}
    assert list(unit.activations) == [(by_vr[vr], t) for vr, t in calls]  # same partitions, order and times
    assert unit.ticks == {"inClock1": (10, 9.0), "inClock2": (4, 9.0), "inClock3": (1, 4.0)}


# Clocks' third partition burns about 10^9 loop iterations (seconds): the runs below end before
# its countdown clock's tick at 4 s


def test_a_clocked_input_variable_reaches_its_partition():
    """result2 accumulates input2 at each inClock2 tick (the partition reads it, then clears its copy)."""
    unit = FmuUnit(CLOCKS, "clocks")
    system = System([unit, BooleanPulses("trigger", [1.0, 3.0])], [("trigger.y", "clocks.inClock2")])
    res = simulate(system, 3.0, 1.0)
    assert res["clocks.inClock2Ticks"].tolist() == [0, 1, 1, 2]
    assert res["clocks.result2"].tolist() == [0] * 4
    unit.set("input2", 7)
    res = simulate(system, 3.0, 1.0)
    assert res["clocks.result2"].tolist() == [0, 7, 7, 7]


def test_an_output_clock_triggers_another_units_partition():
    """a's outClock (ticking in a round that brings its tick total to a multiple of 5, Clocks/model.c)
    drives b's inClock2."""
    a, b = FmuUnit(CLOCKS, "a"), FmuUnit(CLOCKS, "b")
    system = System([a, b, BooleanPulses("trigger", [0.0, 1.0])],
                    [("trigger.y", "a.inClock2"), ("a.outClock", "b.inClock2")])
    res = simulate(system, 3.0, 1.0)
    total = np.concatenate([[0], res["a.totalInClockTicks"]])
    crossed = total[1:] // 5 > total[:-1] // 5
    assert crossed.any() and res["a.outClock"].tolist() == crossed.tolist()
    assert res["b.inClock2Ticks"].tolist() == np.cumsum(crossed).tolist()
    assert b.ticks["inClock2"] == (int(crossed.sum()), float(np.flatnonzero(crossed)[-1]))


def test_periodic_ticks_are_counted_not_accumulated():
    """Tick i of a 1 kHz clock is i * 1e-3 s to the bit, for every i up to 10^7;
    summing the interval instead drifts (which this test would catch)."""
    c = Clock("c", 1, "input", "constant", 0, 1e-3, 0.0)
    p = PeriodicTicks(c, 0.0, 1e-3)
    assert all(p.tick_at(int(k)) == k * 1e-3 for k in (0, 1, 999_999, 1_000_000, 9_999_999))
    assert np.cumsum(np.full(1_000_000, 1e-3))[-1] != 1_000_000 * 1e-3  # accumulation would drift
    half = PeriodicTicks(c, 0.0, 5e-4)  # at half the clock's interval: every other communication point
    assert [half.tick_at(k) for k in range(5)] == [0.0, None, 1e-3, None, 2e-3]
    shifted = PeriodicTicks(Clock("s", 2, "input", "constant", 0, 3.0, 1.0), 10.0, 1.0)
    assert [shifted.tick_at(k) for k in range(8)] == [None, 11.0, None, None, 14.0, None, None, 17.0]


def test_read_clocks_takes_the_declared_attributes():
    clocks = {c.name: c for c in read_clocks(
        '<fmiModelDescription><ModelVariables>'
        '<Clock name="a" valueReference="3" causality="input" intervalVariability="constant" '
        'intervalCounter="3" resolution="1000" shiftCounter="1" priority="2"/>'
        '<Clock name="b" valueReference="4" causality="output" intervalVariability="triggered"/>'
        '</ModelVariables></fmiModelDescription>')}
    assert clocks["a"] == Clock("a", 3, "input", "constant", 2, 0.003, 0.001)
    assert clocks["b"].interval is None and clocks["b"].priority == float("inf")
    with pytest.raises(InputError, match="clock 'x': malformed"):
        read_clocks('<m><ModelVariables><Clock name="x" valueReference="q"/></ModelVariables></m>')


def test_a_clock_off_the_master_grid_is_refused_in_one_line():
    with pytest.raises(InputError, match=r"clock 'inClock1': interval 1.0 s is not a whole number of master steps") \
            as err:
        simulate(System([FmuUnit(CLOCKS, "clocks")]), 3.0, 0.3)
    assert "\n" not in str(err.value)


def test_the_clocks_are_not_settable():
    with pytest.raises(InputError, match="'inClock1' is a clock"):
        FmuUnit(CLOCKS, "clocks").set("inClock1", 1)


def test_a_scheduled_execution_run_takes_the_compiled_loop():
    res = simulate(System([FmuUnit(CLOCKS, "clocks")]), 2.0, 1.0)
    assert "python_loop" not in res.meta


def test_python_loop_reason_names_a_clocked_unit_the_compiled_loop_does_not_run():
    """A subclass of the Scheduled Execution unit may schedule its partitions otherwise
    (threads): the compiled loop runs the class itself only, and says so by name."""
    from mbfmu.cosim.master.run import SimulationOptions, _Master

    class OwnScheduling(Fmu3ScheduledUnit):
        pass

    assert python_loop_reason(_Master(System([FmuUnit(CLOCKS, "clk")]), 1.0, SimulationOptions(), None)) is None
    m = _Master(System([OwnScheduling(CLOCKS, "clk")]), 1.0, SimulationOptions(), None)
    assert "unit 'clk' runs FMI 3.0 Scheduled Execution" in python_loop_reason(m)


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    """A Scheduled Execution FMU (cfmu/ticker3.c) whose periodic partition (0.5 s) sets a
    countdown clock ``delay`` seconds ahead."""
    return build_ticker3(tmp_path_factory.mktemp("sampler3"), scheduled=True)


def test_a_countdown_clock_ticks_where_the_fmu_schedules_it(sampler):
    unit = FmuUnit(sampler, "s")
    res = simulate(System([unit]), 2.0, 0.25)
    sample = [0.5 * i for i in range(5)]
    later = [t + 0.25 for t in sample[:-1]]
    assert list(unit.activations) == sorted([("sample", t) for t in sample] + [("later", t) for t in later],
                                            key=lambda a: a[1])
    assert res["s.kick_time"].tolist() == [0.0] + [max([t for t in later if t <= g], default=0.0)
                                                   for g in res["time"][1:]]
    unit.set("delay", 0.0)  # in the same round, after the periodic partition (higher priority)
    simulate(System([unit]), 1.0, 0.25)
    assert list(unit.activations) == [(n, t) for t in (0.0, 0.5, 1.0) for n in ("sample", "later")]


def test_a_fixed_clock_without_a_declared_interval_ticks_at_the_fmus(tmp_path):
    """``sample`` declared fixed without interval: the unit asks the FMU after initialization
    (0.75 s; the FMU refuses fmi3GetShiftDecimal, so the declared shift, 0, holds), and the
    partitions tick as if 0.75 s had been declared."""
    asked = FmuUnit(build_ticker3(tmp_path, scheduled=True, asked=True), "s")
    assert asked.clocks["sample"].interval is None
    res = simulate(System([asked]), 2.0, 0.25)
    sample = [0.0, 0.75, 1.5]
    later = [t + 0.25 for t in sample]
    assert list(asked.activations) == sorted([("sample", t) for t in sample] + [("later", t) for t in later],
                                             key=lambda a: a[1])
    assert res["s.count"].tolist() == [sum(t <= g for t in sample) for g in res["time"]]


def test_a_countdown_tick_off_the_master_grid_fails_the_run_by_name(sampler):
    from mbfmu.errors import CosimError
    unit = FmuUnit(sampler, "s", values={"delay": 0.1})
    with pytest.raises(CosimError, match=r"clock 'later': countdown tick at 0.1 s is not a whole number of master "
                                         r"steps \(0.25 s\).*\(set at t = 0.0 s\)") as err:
        simulate(System([unit]), 1.0, 0.25)
    assert "\n" not in str(err.value) and len(err.value.result["time"]) == 0  # at the first exchange


def test_simulate_verbose_says_a_clocked_fmu_takes_the_compiled_loop(tmp_path, capsys, monkeypatch):
    from mbfmu.cli import main
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", str(CLOCKS), "--stop-time", "3", "-v", "-o", "out.csv"]) == 0
    out = capsys.readouterr().out
    assert "master loop: compiled (C)" in out
    rows = (tmp_path / "out.csv").read_text().splitlines()
    assert rows[0].startswith("time,Clocks.outClock,Clocks.inClock1Ticks") and len(rows) == 5
