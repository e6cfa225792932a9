"""Instances of an FMU through fmpy, initialized and freed: the FMI 2.0 co-simulation
slave and the FMI 3.0 model-exchange model the native tests drive."""
from __future__ import annotations

import contextlib

from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
from fmpy.fmi3 import FMU3Model


@contextlib.contextmanager
def cs2_slave(path, inputs=None):
    """An FMI 2.0 co-simulation instance of ``path`` after exitInitializationMode at t = 0,
    with ``inputs`` ((value references, values) or None) set in initialization mode."""
    md = read_model_description(str(path))
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="cs")
    slave.instantiate()
    try:
        slave.setupExperiment(startTime=0.0)
        slave.enterInitializationMode()
        if inputs is not None:
            slave.setReal(*inputs)
        slave.exitInitializationMode()
        yield slave
    finally:
        slave.freeInstance()


@contextlib.contextmanager
def me3_model(path, md=None):
    """An FMI 3.0 model-exchange instance of ``path`` in continuous-time mode at t = 0."""
    md = md or read_model_description(str(path))
    model = FMU3Model(guid=md.guid, unzipDirectory=extract(str(path)),
                      modelIdentifier=md.modelExchange.modelIdentifier, instanceName="m3")
    model.instantiate()
    try:
        model.enterInitializationMode(startTime=0.0)
        model.exitInitializationMode()
        model.updateDiscreteStates()
        model.enterContinuousTimeMode()
        yield model
    finally:
        model.freeInstance()
