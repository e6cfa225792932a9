"""Periodic input clocks of FMI 3.0 co-simulation with event mode (#36.2): the C FMU of
cfmu/ticker3.c with a constant periodic input clock ``sample``. The master ticks it at
i * T, i counted as an integer, inside communication steps where T is no whole number
of steps; at each tick the FMU (x = t, dx/dt = 1) counts it and keeps its time and the
state there. Checked against the analytic values: tick i at i * T to 1e-12 s, x = t
there, and the last of many ticks still at i * T (no drift)."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.fmi.fmu3_events import Fmu3EventUnit
from mbfmu.errors import InputError

from .fmu_build import build_ticker3

H = 0.1      # master step [s]
T = 0.25     # the clock's interval [s]: ticks inside steps (0.25, 0.75, ...) and on points (0.5, 1.0, ...)
QUIET = {"first": 1e9}  # the FMU's own output clock stays quiet


@pytest.fixture(scope="module")
def ticker(tmp_path_factory):
    return build_ticker3(tmp_path_factory.mktemp("ticker3_periodic"), periodic=T)


def _holder(times):
    return [int(np.ceil(t / H - 1e-9)) for t in times]


@pytest.mark.parametrize("driven", [False, True])
def test_periodic_ticks_land_on_i_times_the_interval(ticker, driven):
    unit = FmuUnit(ticker, "s", values=QUIET)
    assert isinstance(unit, Fmu3EventUnit) and "xs" in unit.outputs and "sample" not in unit.inputs
    units, conns = [unit], []
    if driven:  # a unit with a connected input takes the start time's tick with the start inputs
        src = FmuUnit(ticker, "src", values=QUIET)
        units, conns = [unit, src], [("src.tick", "s.kick")]
    stop = 2.0
    res = simulate(System(units, conns), stop, H)
    ticks = [i * T for i in range(int(stop / T) + 1)]
    assert unit.ticks["sample"] == (len(ticks), ticks[-1])
    for i, (tick, k) in enumerate(zip(ticks, _holder(ticks))):
        assert res["s.count"][k] == i + 1
        assert abs(res["s.t_event"][k] - tick) <= 1e-12
        assert abs(res["s.xs"][k] - tick) <= 1e-12  # x = t at the tick
    # the pieces of each step split at a tick add up to the step
    assert np.abs(res["s.x"] - res["time"]).max() <= 1e-12


def test_many_ticks_do_not_drift(ticker, tmp_path):
    fmu = build_ticker3(tmp_path, periodic=0.1 / 3)  # not a binary fraction, no whole number of steps
    unit = FmuUnit(fmu, "s", values=QUIET)
    stop = 100.0
    res = simulate(System([unit]), stop, H)
    n = int(round(stop / (0.1 / 3)))
    assert res["s.count"][-1] == n + 1
    assert abs(res["s.t_event"][-1] - n * (0.1 / 3)) <= 1e-12
    assert abs(res["s.xs"][-1] - 100.0) <= 1e-11


def test_an_interval_of_zero_is_refused_by_name(tmp_path):
    fmu = build_ticker3(tmp_path, periodic=0.0)
    with pytest.raises(InputError, match=r"periodic input clock 'sample' needs a declared interval > 0"):
        simulate(System([FmuUnit(fmu, "s")]), 1.0, H)


def test_ticks_off_the_grid_need_variable_steps(tmp_path):
    import zipfile
    fmu = build_ticker3(tmp_path, periodic=T)
    fixed = tmp_path / "fixed_steps.fmu"
    with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(fixed, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "modelDescription.xml":
                data = data.replace(b'canHandleVariableCommunicationStepSize="true"',
                                    b'canHandleVariableCommunicationStepSize="false"')
            dst.writestr(item, data)
    with pytest.raises(InputError, match=r"clock 'sample': interval 0.25 s is not a whole number of master "
                                         r"steps.*canHandleVariableCommunicationStepSize"):
        simulate(System([FmuUnit(fixed, "s", values=QUIET)]), 1.0, H)
    res = simulate(System([FmuUnit(fixed, "s", values=QUIET)]), 1.0, 0.05)  # on the grid: runs
    assert res["s.count"][-1] == 5
