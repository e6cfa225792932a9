"""Units are probed before adaptive and iterative runs (issue 14 defect 7): a
unit whose saved state does not restore is refused by name."""
from __future__ import annotations

import math
import re

import pytest

from mbfmu.cosim import simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.master.rollback_probe import probe_rollback
from mbfmu.cosim.system import System
from mbfmu.errors import CosimError


@pytest.mark.parametrize("mode", [{"adaptive": True}, {"iterative": True}])
def test_unit_with_broken_restore_is_refused_by_name(forgetful_fmu, mode):
    unit = FmuUnit(forgetful_fmu, "lag")
    assert unit.can_rollback  # it claims it can
    with pytest.raises(CosimError, match="unit 'lag' failed the rollback probe.*x = "):
        simulate(System([unit]), 1.0, 0.1, progress=False, **mode)


def test_sound_units_pass_and_are_left_where_they_were(mass_fmu):
    """The C mass FMU restores correctly: the probe passes, and the run after it
    equals a run without it (the probe leaves no trace)."""
    def system():
        s = System([FmuUnit(mass_fmu, "m")])
        s.set("m.k", 4.0)
        s.set("m.x0", 1.0)
        return s
    adaptive = simulate(system(), 1.0, 0.01, adaptive=True, rtol=1e-6, atol=1e-9, progress=False)
    assert abs(adaptive["m.x"][-1] - math.cos(2.0)) < 1e-3  # x = cos(2 t) for k/m = 4
    s = system()
    u = s.units["m"]
    u.setup(0.0, 1.0, 0.01)
    try:
        before = list(u.y)
        probe_rollback([u], 0.0, 0.01)
        assert list(u.y) == before
        u.do_step(0.0, 0.01)
        u.pull()
        after_probe = list(u.y)
    finally:
        u.terminate()
    u.setup(0.0, 1.0, 0.01)
    try:
        u.do_step(0.0, 0.01)
        u.pull()
        assert list(u.y) == after_probe
    finally:
        u.terminate()


def _lag_with_clock(clock_fmu, mass_fmu, restore_error):
    """The clock FMU (z' = u, its restore off by ``restore_error`` relative) beside a
    mass that restores exactly."""
    clock = FmuUnit(clock_fmu, "c", values={"restore_error": restore_error, "u": 1.0})
    mass = FmuUnit(mass_fmu, "m", values={"k": 4.0, "x0": 1.0})
    return System([clock, mass])


@pytest.mark.parametrize("mode", [{"adaptive": True}, {"iterative": True}])
def test_inexact_restore_is_refused_with_the_measured_difference(clock_fmu, mass_fmu, mode):
    """A restore off by 2e-6 relative (as Dymola's Drivetrain's is) is refused by name."""
    with pytest.raises(CosimError, match=r"unit 'c' failed the rollback probe: .*gave z = .*relative difference "
                                         r"(1\.\d+|2)e-06.*rollback_tolerance=(2|3)e-6") as info:
        simulate(_lag_with_clock(clock_fmu, mass_fmu, 2e-6), 1.0, 0.01, progress=False, **mode)
    assert "unit 'm'" not in str(info.value)  # the sound unit is not blamed


def test_a_tolerance_accepts_close_restores_and_says_so(clock_fmu, mass_fmu):
    r = simulate(_lag_with_clock(clock_fmu, mass_fmu, 2e-6), 1.0, 0.01, adaptive=True, rollback_tolerance=1e-5,
                 progress=False)
    assert r.time[-1] == 1.0 and re.search(r"\bc \d(\.\d)?e-06", r.meta["rollback"])
    assert "m " not in r.meta["rollback"]
    with pytest.raises(Exception, match="rollback_tolerance = 2 must be"):
        simulate(_lag_with_clock(clock_fmu, mass_fmu, 0.0), 1.0, 0.01, adaptive=True, rollback_tolerance=2)


def test_the_probe_wants_the_bit_and_needs_excited_inputs(clock_fmu, monkeypatch):
    """A restore off by 1e-15 relative is refused (the old probe's 1e-12 let it through);
    and without the warm-up steps with excited inputs, the state z would still be 0,
    where a relative error is invisible: the probe would pass."""
    from mbfmu.cosim.master import rollback_probe
    u = FmuUnit(clock_fmu, "c", values={"restore_error": 1e-15})
    u.setup(0.0, 1.0, 0.01)
    try:
        with pytest.raises(CosimError, match=r"relative difference \d(\.\d+)?e-1[56]"):
            probe_rollback([u], 0.0, 0.01)
        monkeypatch.setattr(rollback_probe, "WARMUP_STEPS", 0)
        monkeypatch.setattr(rollback_probe, "EXCITATION", (0.0,))
        assert probe_rollback([u], 0.0, 0.01) == {"c": 0.0}
        before = list(u.y)
        monkeypatch.undo()
        u2 = FmuUnit(clock_fmu, "c2")  # a sound restore: passes, and the unit is left at its start
        u2.setup(0.0, 1.0, 0.01)
        start = list(u2.y)
        assert probe_rollback([u2], 0.0, 0.01) == {"c2": 0.0}
        assert list(u2.y) == start and before == list(u.y)
        u2.terminate()
    finally:
        u.terminate()


def test_adaptive_steps_forced_at_the_minimum_step_are_reported(mass_fmu):
    from .systems import with_feedthrough
    s = with_feedthrough(mass_fmu)
    with pytest.warns(RuntimeWarning, match="accepted .* steps at the minimum step"):
        r = simulate(s, 1.0, 0.01, adaptive=True, rtol=1e-12, atol=1e-14, min_step=0.005, progress=False)
    assert r.meta["adaptive_forced_steps"]["count"] > 0 and r.meta["adaptive_forced_steps"]["worst_error"] > 1
