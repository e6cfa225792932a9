"""Run an FMU step by step with fmpy's FMU2Slave (exact step sizes), for the native-runtime tests."""
from __future__ import annotations

import shutil
import tempfile

import numpy as np
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave


class Loaded:
    """An extracted FMU, instantiated; ``close()`` frees and deletes it."""

    def __init__(self, fmu, log=None):
        self.md = read_model_description(fmu)
        self.dir = extract(fmu, tempfile.mkdtemp(prefix="mbfmu_native_t_"))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.log = [] if log is None else log
        self.slave = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                               modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName="t")
        self.slave.instantiate(loggingOn=True, callbacks=None)
        self.slave.fmi2Instantiate  # keep attribute access cheap later
        self._patch_logger()

    def _patch_logger(self):
        pass

    def setup(self, parameters=None, inputs=None):
        s = self.slave
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        for name, value in {**(parameters or {}), **(inputs or {})}.items():
            s.setReal([self.vr[name]], [value])
        s.exitInitializationMode()

    def get(self, names):
        return np.array(self.slave.getReal([self.vr[n] for n in names]))

    def run(self, names, step, n, t0=0.0):
        """Outputs ``names`` at t0 and after each of ``n`` steps of ``step`` s (times k * step)."""
        out = [self.get(names)]
        for k in range(n):
            self.slave.doStep(currentCommunicationPoint=t0 + k * step, communicationStepSize=step)
            out.append(self.get(names))
        return np.array(out)

    def close(self):
        try:
            self.slave.terminate()
            self.slave.freeInstance()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
