"""Units are probed before adaptive and iterative runs (issue 14 defect 7): a
unit whose saved state does not restore is refused by name."""
from __future__ import annotations

import math

import pytest

from mbfmu.cosim import simulate
from mbfmu.cosim.fmu_unit import FmuUnit
from mbfmu.cosim.rollback_probe import probe_rollback
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
