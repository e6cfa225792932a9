"""FMI 3.0 Model Exchange with clocks (#36.2): a small C FMU (cfmu/sampler_me3.c), an
undamped oscillator x = cos(w t) whose periodic input clock samples the state into clocked
variables and whose output clock ticks at the state event x = 0. Checked against the
analytic solution: tick times to 1e-12 s, sampled values equal cos(w t) at the tick, the
crossings at (pi/2 + n pi) / w to the integrator's tolerance. The FMU refuses any clocked
variable read or set while its clock is inactive, so the run also checks that the unit
follows FMI 3.0's rules for clocks."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.fmi.fmu3_me_clocks import Fmu3MeClockUnit
from mbfmu.cosim.fmi.fmu_me import Fmu3MeUnit
from mbfmu.cosim.master.fast_loop import python_loop_reason
from mbfmu.errors import InputError

from .fmu_build import build_sampler_me3

W = 2.0                       # the FMU's angular frequency [rad/s]
INTERVAL, SHIFT = 0.3, 0.1    # the sample clock [s]: ticks at SHIFT + i * INTERVAL
H, STOP = 0.1, 3.0            # master step and stop time [s]
RTOL = 1e-10


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    return build_sampler_me3(tmp_path_factory.mktemp("sampler_me3"), INTERVAL, SHIFT)


def _clock_times(unit, clock):
    return np.array([t for c, t in unit.activations if c == clock])


def _ticks():
    return np.array([SHIFT + i * INTERVAL for i in range(100) if SHIFT + i * INTERVAL <= STOP + 1e-9])


def _holder(times):
    """Index of the communication point that ends the step holding each time."""
    return [int(np.ceil(t / H - 1e-9)) for t in times]


def test_periodic_ticks_sample_the_state_at_their_exact_times(sampler):
    unit = FmuUnit(sampler, "s", rtol=RTOL)
    assert isinstance(unit, Fmu3MeClockUnit)
    res = simulate(System([unit]), STOP, H)
    want = _ticks()
    got = _clock_times(unit, "sample")
    assert len(got) == len(want) and np.abs(got - want).max() <= 1e-12
    holder = _holder(want)
    for n, (tick, k) in enumerate(zip(want, holder)):
        assert res["s.count"][k] == n + 1
        assert abs(res["s.ts"][k] - tick) <= 1e-12
        assert abs(res["s.xs"][k] - math.cos(W * tick)) <= 1e-7  # k = 1: the state at the tick
    # before the first tick the clocked outputs hold their start values
    assert res["s.count"][0] == 0 and res["s.xs"][0] == 0.0
    # the continuous state between ticks is the oscillator's
    assert np.abs(res["s.x"] - np.cos(W * res["time"])).max() <= 1e-7
    # a sample that changes no state or derivative costs no solver restart
    assert unit.restarts == len(_clock_times(unit, "cross"))


def test_a_state_event_fires_the_output_clock_at_the_crossing(sampler):
    unit = FmuUnit(sampler, "s", rtol=RTOL)
    res = simulate(System([unit]), STOP, H)
    want = np.array([(math.pi / 2 + n * math.pi) / W for n in range(10) if (math.pi / 2 + n * math.pi) / W <= STOP])
    got = _clock_times(unit, "cross")
    assert len(got) == len(want) and np.abs(got - want).max() <= 1e-8
    holder = _holder(got)
    assert np.flatnonzero(res["s.cross"]).tolist() == holder
    for t, k in zip(got, holder):
        assert res["s.t_cross"][k] == t
    assert [t for t, kind in unit.events if kind == "state"] == got.tolist()


def test_clocked_inputs_and_a_triggered_clock_from_another_unit(sampler):
    """b's clocked input k takes a's sampled xs (held over the step holding b's tick); b's
    triggered input clock kick is driven by a's output clock."""
    a, b = FmuUnit(sampler, "a", rtol=RTOL), FmuUnit(sampler, "b", rtol=RTOL)
    res = simulate(System([a, b], [("a.xs", "b.k"), ("a.cross", "b.kick")]), STOP, H)
    ticks = _ticks()
    holder = _holder(ticks)
    for tick, k in zip(ticks, holder):
        held_k = res["a.xs"][k - 1]  # the value the master held over the step ending at k
        assert abs(res["b.xs"][k] - held_k * math.cos(W * tick)) <= 1e-7
    crossed = np.flatnonzero(res["a.cross"]).tolist()
    assert len(crossed) == 2
    assert np.flatnonzero(np.diff(res["b.kicks"], prepend=0)).tolist() == crossed
    assert [res["b.kick_time"][k] for k in crossed] == [res["time"][k] for k in crossed]
    assert _clock_times(b, "kick").tolist() == [res["time"][k] for k in crossed]


def test_a_tick_at_the_start_time_comes_with_the_start_inputs(tmp_path):
    fmu = build_sampler_me3(tmp_path, INTERVAL, 0.0)
    a, b = FmuUnit(fmu, "a", rtol=RTOL), FmuUnit(fmu, "b", rtol=RTOL)
    b.set("x", 0.5)
    res = simulate(System([a, b], [("a.xs", "b.k")]), 1.0, H)
    # a (no inputs) ticks in its initial event, b when the master has set its start inputs
    assert res["a.count"][0] == res["b.count"][0] == 1
    assert res["a.xs"][0] == 1.0 and res["b.xs"][0] == 1.0 * 0.5  # b.k = a.xs(0) = cos 0
    assert _clock_times(b, "sample").tolist() == [i * INTERVAL for i in range(4)]


def test_a_fixed_clock_without_a_declared_interval_takes_the_fmus(tmp_path):
    fmu = build_sampler_me3(tmp_path, asked=True)
    unit = FmuUnit(fmu, "s", rtol=RTOL)
    simulate(System([unit]), STOP, H)
    got = _clock_times(unit, "sample")
    assert len(got) == len(_ticks()) and np.abs(got - _ticks()).max() <= 1e-12


def test_the_run_says_why_it_takes_the_python_loop(sampler):
    from mbfmu.cosim.master.run import SimulationOptions, _Master
    m = _Master(System([FmuUnit(sampler, "s")]), H, SimulationOptions(), None)
    assert "unit 's' runs FMI 3.0 model exchange with clocks" in python_loop_reason(m)


def test_plain_model_exchange_unit_refuses_clocks_by_name(sampler):
    with pytest.raises(InputError, match=r"has clocks \(sample, cross, kick\).*interface='me'"):
        Fmu3MeUnit(sampler)


def test_a_clock_without_an_interval_is_refused_by_name(tmp_path):
    fmu = build_sampler_me3(tmp_path, interval=0.0)
    with pytest.raises(InputError, match=r"periodic input clock 'sample' needs a declared interval > 0"):
        simulate(System([FmuUnit(fmu, "s")]), STOP, H)


def test_a_countdown_input_clock_is_refused_by_name(sampler, tmp_path):
    import zipfile
    countdown = tmp_path / "countdown.fmu"
    with zipfile.ZipFile(sampler) as src, zipfile.ZipFile(countdown, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "modelDescription.xml":
                data = data.replace(b'intervalVariability="constant"', b'intervalVariability="countdown"')
            dst.writestr(item, data)
    with pytest.raises(InputError, match=r"input clock 'sample' has intervalVariability 'countdown'; the master "
                                         r"runs constant and fixed and tunable and triggered input clocks"):
        FmuUnit(countdown)
