"""Source shared by the benchmarks' child processes that step FMI 2.0 co-simulation FMUs with fmpy.

``CHILD_PRELUDE`` is Python source (imports, and ``open_slave(kind, path)``
returning the initialized ``FMU2Slave`` with the value references of its
inputs and outputs and its model description) that a child script starts with.
"""

CHILD_PRELUDE = r"""
import json, sys, time
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave

def open_slave(kind, path):
    md = read_model_description(path)
    f = FMU2Slave(guid=md.guid, unzipDirectory=extract(path), modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName=kind)
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    ins = [v.valueReference for v in md.modelVariables if v.causality == "input"]
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    return f, ins, outs, md
"""
