"""Input-derivative orders an FMU accepts (issue 14 defect 4) and logging off
by default (defect 5), on OpenModelica-generated FMUs."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.cosim import simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.system import System

DEFAULTS = {"k1": 1.0, "k2": 1.0, "k3": 1.0, "m1": 1.0, "m2": 1.0}


def _pair(fmus, **kw) -> System:
    a = FmuUnit(fmus["MassSpringSubSystem1"], "a", **kw)
    b = FmuUnit(fmus["MassSpringSubSystem2"], "b", **kw)
    return System([a, b], [("a.x1", "b.x1"), ("b.x2", "a.x2")])


def _whole(fmus, stop: float, step: float):
    return simulate(System([FmuUnit(fmus["MassSpringSystem"], "m")]), stop, step, progress=False)


@pytest.mark.parametrize("order", [1, 2])
def test_extrapolation_runs_on_openmodelica_fmus(openmodelica_fmus, order):
    """OpenModelica FMUs take order-1 input derivatives only (they declare
    maxOutputDerivativeOrder="1"): order 2 is never sent and the coupled halves
    follow the monolithic model."""
    s = _pair(openmodelica_fmus)
    assert [u.max_input_order for u in s.units.values()] == [1, 1]
    r = simulate(s, 1.0, 1e-3, extrapolation=order, progress=False)
    ref = _whole(openmodelica_fmus, 1.0, 1e-3)
    assert r.time[-1] == 1.0
    # both take one explicit Euler step per communication step: close, not equal
    np.testing.assert_allclose(r["a.x1"], ref["m.x1"], atol=5e-3)
    np.testing.assert_allclose(r["b.x2"], ref["m.x2"], atol=5e-3)


def test_refused_order_is_learnt_and_logged_once(openmodelica_fmus, caplog):
    """Where nothing is declared, the first refusal of order 2 teaches the unit to
    send order 1 from then on, with one log line per unit."""
    s = _pair(openmodelica_fmus)
    for u in s.units.values():
        u.max_input_order = 2  # as if the FMU declared nothing
    with caplog.at_level(logging.WARNING, logger="mbfmu.cosim"):
        r = simulate(s, 0.1, 1e-3, extrapolation=2, progress=False)
    assert r.time[-1] == 0.1
    refusals = [rec for rec in caplog.records if "refused input derivatives of order 2" in rec.getMessage()]
    assert len(refusals) == 2 and {u.max_input_order for u in s.units.values()} == {1}


def test_logging_is_off_by_default_and_on_with_log(openmodelica_fmus, tmp_path, capsys):
    quiet = _pair(openmodelica_fmus)
    simulate(quiet, 0.01, 1e-3, progress=False)
    assert [len(u.log) for u in quiet.units.values()] == [0, 0]
    loud = _pair(openmodelica_fmus)
    simulate(loud, 0.01, 1e-3, progress=False, log=True)
    assert all(len(u.log) > 0 for u in loud.units.values())
    assert main(["simulate", str(openmodelica_fmus["MassSpringSystem"]), "--stop-time", "0.01", "--step", "1e-3",
                 "--log", "--no-progress"]) == 0
