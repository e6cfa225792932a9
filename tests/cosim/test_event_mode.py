"""FMI 3.0 co-simulation with event mode (#36.2): a small C FMU (cfmu/ticker3.c)
whose output clock ticks at its own times first + k * period, inside
communication steps. With early return the master handles each event at the
time the FMU reached (exact to 1e-12 s), reads the output clock, updates the
discrete states and steps the rest of the step; without it the events land on
the step ends. A triggered input clock is driven by another unit's output
clock."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.master.fast_loop import python_loop_reason
from mbfmu.cosim.fmi.fmu3_events import Fmu3EventUnit
from mbfmu.cosim.fmi.fmu3_unit import Fmu3Unit
from mbfmu.errors import InputError

from .fmu_build import build_ticker3

H = 0.1       # master step [s]
STOP = 2.0    # [s]
FIRST, PERIOD = 0.1234567891234, 0.37  # the FMU's defaults: tick k at FIRST + k * PERIOD


@pytest.fixture(scope="module")
def ticker(tmp_path_factory):
    return build_ticker3(tmp_path_factory.mktemp("ticker3"))


def _ticks(stop: float) -> list[float]:
    return [FIRST + k * PERIOD for k in range(100) if FIRST + k * PERIOD <= stop]


def test_events_inside_steps_are_handled_at_their_exact_time(ticker):
    unit = FmuUnit(ticker, "tick")
    assert isinstance(unit, Fmu3EventUnit) and unit.early_return
    assert unit.outputs == ["x", "t_event", "count", "tick", "kicks", "kick_time"]
    res = simulate(System([unit]), STOP, H)
    want = _ticks(STOP)
    times = [t for t, clocks in unit.events]
    assert [clocks for _, clocks in unit.events] == [("tick",)] * len(want)
    assert np.abs(np.array(times) - want).max() <= 1e-12  # the event time, not the step end
    # the output clock is true at the communication point ending the step that held the tick
    grid = res["time"]
    holder = [int(np.ceil((t - 1e-12) / H)) for t in want]
    assert np.flatnonzero(res["tick.tick"]).tolist() == holder
    # each tick updated the discrete states in event mode, at its own time
    assert res["tick.count"][-1] == len(want)
    for t, k in zip(want, holder):
        assert abs(res["tick.t_event"][k] - t) <= 1e-12
    # the rest of each interrupted step was stepped: x integrates dx/dt = 1 over every piece
    assert np.abs(res["tick.x"] - grid).max() <= 1e-12


def test_without_early_return_the_events_land_on_the_step_ends(ticker):
    unit = FmuUnit(ticker, "tick", early_return=False)
    res = simulate(System([unit]), STOP, H)
    holder = [int(np.ceil((t - 1e-12) / H)) for t in _ticks(STOP)]
    assert [t for t, _ in unit.events] == [res["time"][k] for k in holder]
    assert np.flatnonzero(res["tick.tick"]).tolist() == holder
    assert np.abs(res["tick.x"] - res["time"]).max() <= 1e-12


def test_an_output_clock_ticks_another_units_input_clock(ticker):
    a, b = FmuUnit(ticker, "a"), FmuUnit(ticker, "b")
    b.set("first", 10.0)  # b's own clock stays quiet
    res = simulate(System([a, b], [("a.tick", "b.kick")]), STOP, H)
    holder = [int(np.ceil((t - 1e-12) / H)) for t in _ticks(STOP)]
    # b is kicked at the communication point where a's clock output shows the tick
    assert np.flatnonzero(np.diff(res["b.kicks"], prepend=0)).tolist() == holder
    assert res["b.kick_time"][holder[-1]] == res["time"][holder[-1]]
    assert [t for t, _ in b.events] == [res["time"][k] for k in holder]


def test_python_loop_reason_names_an_event_unit_the_compiled_loop_does_not_run(ticker):
    """The compiled loop runs Fmu3EventUnit itself (tests/cosim/test_fast_loop_clocked.py); a
    subclass may handle its events otherwise and keeps the Python loop, by name."""
    from mbfmu.cosim.master.run import SimulationOptions, _Master

    class OwnEvents(Fmu3EventUnit):
        pass

    assert python_loop_reason(_Master(System([FmuUnit(ticker, "tick")]), H, SimulationOptions(), None)) is None
    m = _Master(System([OwnEvents(ticker, "tick")]), H, SimulationOptions(), None)
    assert "unit 'tick' runs FMI 3.0 co-simulation with event mode" in python_loop_reason(m)


def test_a_clocked_fmu_as_plain_co_simulation_is_refused_by_name(ticker):
    with pytest.raises(InputError, match=r"has clocks \(tick, kick\).*open_fmu\(path\)"):
        Fmu3Unit(ticker)


def test_adaptive_stepping_refuses_a_clocked_unit_by_name(ticker):
    from mbfmu.errors import CosimError
    with pytest.raises(CosimError, match=r"adaptive stepping needs rollback, but units \['tick'\]"):
        simulate(System([FmuUnit(ticker, "tick")]), STOP, H, adaptive=True)


def test_model_exchange_with_clocks_opens_as_the_clocked_model_exchange_unit(tmp_path):
    from mbfmu.cosim.fmi.fmu3_me_clocks import Fmu3MeClockUnit
    fmu = build_ticker3(tmp_path, model_exchange=True)
    unit = FmuUnit(fmu)
    assert isinstance(unit, Fmu3MeClockUnit) and unit.outputs[-3:] == ["tick", "kicks", "kick_time"]
