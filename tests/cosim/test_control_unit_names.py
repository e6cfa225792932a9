"""A python-control system keeps one set of names everywhere: as a ControlUnit and
as its exported FMU, vectors are counted from 1 (its states were x[0], x[1], ...)."""
from __future__ import annotations

import control
import numpy as np
from fmpy import read_model_description

from mbfmu.control.export import export_fmu
from mbfmu.cosim import ControlUnit, System, simulate, sources


def _system():
    return control.ss([[0.0, 1.0], [-4.0, -0.4]], [[0.0], [4.0]], [[1.0, 0.0]], [[0.0]])  # u[0], y[0], x[0..1]


def test_control_unit_names_are_counted_from_one_like_its_fmu(tmp_path):
    unit = ControlUnit("c", _system())
    assert unit.inputs == ["u[1]"] and unit.outputs == ["y[1]"]
    assert [n for n, v in unit.variables.items() if v.causality == "local"] == ["x[1]", "x[2]"]
    fmu = export_fmu(_system(), tmp_path, name="osc", step=0.01)
    names = {v.name for v in read_model_description(str(fmu)).modelVariables}
    assert {"u[1]", "y[1]"} <= names


def test_the_renamed_states_record_the_state():
    """x[1] is the system's first state: recorded, it equals the output y = x[1]."""
    s = System([ControlUnit("c", _system()), sources.step("f", 0.0)], [("f.y", "c.u[1]")])
    res = simulate(s, 1.0, 0.01, record=["c.x[1]", "c.x[2]", "c.y[1]"])
    np.testing.assert_array_equal(res["c.x[1]"], res["c.y[1]"])
    assert np.abs(res["c.x[2]"]).max() > 0.1
