"""Run an FMU step by step with fmpy's FMU2Slave (exact step sizes) and keep
its log, for the native-runtime tests."""
from __future__ import annotations

import shutil
import tempfile

import numpy as np
from fmpy import extract, read_model_description
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import calloc, free


class Loaded:
    """An extracted, instantiated FMU; ``log`` collects its messages; ``close()``
    frees the instance and deletes the folder."""

    def __init__(self, fmu):
        self.md = read_model_description(fmu)
        self.dir = extract(fmu, tempfile.mkdtemp(prefix="mbfmu_native_t_"))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.log: list[str] = []
        self._cb = fmi2CallbackFunctions()
        self._cb.logger = fmi2CallbackLoggerTYPE(self._logger)
        self._cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        self._cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        self.slave = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                               modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName="t")
        self.slave.instantiate(callbacks=self._cb, loggingOn=True)

    def _logger(self, env, name, status, category, message):
        self.log.append(message.decode())

    def setup(self, parameters=None, inputs=None, tolerance=None):
        s = self.slave
        s.setupExperiment(tolerance=tolerance, startTime=0.0)
        s.enterInitializationMode()
        for name, value in {**(parameters or {}), **(inputs or {})}.items():
            s.setReal([self.vr[name]], [value])
        s.exitInitializationMode()

    def get(self, names):
        return np.array(self.slave.getReal([self.vr[n] for n in names]))

    def set(self, name, value):
        self.slave.setReal([self.vr[name]], [value])

    def run(self, names, step, n, t0=0.0):
        """Outputs ``names`` at t0 and after each of ``n`` steps of ``step`` s (at t0 + k step)."""
        out = [self.get(names)]
        for k in range(n):
            self.slave.doStep(currentCommunicationPoint=t0 + k * step, communicationStepSize=step)
            out.append(self.get(names))
        return np.array(out)

    def close(self):
        try:
            try:
                self.slave.terminate()
            except FMICallException:
                pass  # never initialized: the FMU refuses terminate in that state
            self.slave.freeInstance()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
