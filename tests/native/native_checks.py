"""Checks the native-runtime tests share: a native FMU's model description
against the pythonfmu FMU's, and a child process that restores a serialized
FMU state (run with this folder on its path)."""
from __future__ import annotations

from pathlib import Path

from fmpy import read_model_description

HERE = Path(__file__).resolve().parent

RESTORE_CHILD = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
from fmi_loop import Loaded
L = Loaded(sys.argv[2]); L.setup()
state = L.slave.deSerializeFMUstate(open(sys.argv[3], "rb").read())
L.slave.setFMUstate(state)
np.save(sys.argv[4], L.run(sys.argv[5].split(","), float(sys.argv[6]), 30, t0=20 * float(sys.argv[6])))
L.close()
"""


def host_view(fmu, skip=()):
    """What a co-simulation host reads of the model description: the native
    FMU's Model Exchange additions (derivative variables, discrete states,
    dependencies on states, derivative units) and its states' start values
    (``initial="exact"`` there, settable; test_state_start_values checks them)
    left out, and the variables ``skip``."""
    md = read_model_description(str(fmu))
    keep = [v for v in md.modelVariables if not v.name.startswith("der(") and v.name not in skip]
    variables = [(v.name, v.causality) + ((None, None, v.unit, None) if v.name.startswith("states.") else
                                          (v.variability, v.initial, v.unit, v.start))
                 + (v.min, v.max, v.description) for v in keep]
    structure = ([(u.variable.name, [d.name for d in u.dependencies if d.causality == "input"])
                  for u in md.outputs],
                 [u.variable.name for u in md.initialUnknowns if u.variable.causality == "output"])
    used = {v.unit for v in keep}
    ex = md.defaultExperiment
    return dict(variables=variables, structure=structure, units=[u.name for u in md.unitDefinitions if u.name in used],
                experiment=(ex.startTime, ex.stopTime, ex.stepSize),
                flags=(md.coSimulation.canGetAndSetFMUstate, md.coSimulation.canSerializeFMUstate))


def assert_same_description(native, python_fmu, name):
    """The native FMU's description is the pythonfmu FMU's, except the parameters the native
    runtime cannot take: calculated parameters there (native_parameter_report says why)."""
    from mbfmu.fmu.native import native_parameter_report
    from mbfmu.fmu.plantref import parse
    calculated = {v.name for v in read_model_description(str(native)).modelVariables
                  if v.causality == "calculatedParameter"}
    assert calculated == {n for n, why in native_parameter_report(parse(name)).items() if why}
    assert host_view(native, calculated) == host_view(python_fmu, calculated)
