"""Driving an FMU by hand with fmpy's FMU2Slave (the tests' FMI host)."""
from __future__ import annotations

import shutil
from ctypes import c_void_p
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from fmpy import extract, read_model_description
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2StepFinishedTYPE)
from fmpy import calloc, free


@dataclass
class Opened:
    """An extracted FMU: model description, folder, name -> value reference."""

    path: Path
    md: object
    unzipdir: str
    vr: dict = field(default_factory=dict)
    messages: list = field(default_factory=list)   # (status, category, message) from every instance

    def names(self, causality: str) -> list[str]:
        return [v.name for v in self.md.modelVariables if v.causality == causality]

    def close(self) -> None:
        shutil.rmtree(self.unzipdir, ignore_errors=True)


def open_fmu(path: Path) -> Opened:
    md = read_model_description(str(path))
    unzipdir = extract(str(path))
    return Opened(Path(path), md, unzipdir, {v.name: v.valueReference for v in md.modelVariables})


def instantiate(op: Opened, name: str = "instance", logging_on: bool = False) -> FMU2Slave:
    """Instantiated FMU whose log messages go to ``op.messages``."""
    def logger(env, instance, status, category, message):
        op.messages.append((status, (category or b"").decode(), (message or b"").decode()))

    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(logger)
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    cb.stepFinished = fmi2StepFinishedTYPE()
    cb.componentEnvironment = c_void_p()
    fmu = FMU2Slave(guid=op.md.guid, unzipDirectory=op.unzipdir,
                    modelIdentifier=op.md.coSimulation.modelIdentifier, instanceName=name)
    fmu.instantiate(callbacks=cb, loggingOn=logging_on)
    fmu._keep_callbacks = cb  # keep the ctypes callbacks alive
    return fmu


def initialize(fmu: FMU2Slave, op: Opened, values: dict | None = None, start_time: float = 0.0) -> None:
    fmu.setupExperiment(startTime=start_time)
    fmu.enterInitializationMode()
    for name, value in (values or {}).items():
        fmu.setReal([op.vr[name]], [float(value)])
    fmu.exitInitializationMode()


def run(fmu: FMU2Slave, op: Opened, n: int, h: float, t0: float = 0.0, names: list[str] | None = None) -> np.ndarray:
    """Outputs (rows: t0, after step 1, ..., after step n)."""
    vrs = [op.vr[v] for v in (names or op.names("output"))]
    rows = [fmu.getReal(vrs)]
    for k in range(n):
        fmu.doStep(t0 + k * h, h)
        rows.append(fmu.getReal(vrs))
    return np.array(rows)


MAX_STEPS = 200


def case_setup(case):
    """(plant, step [s], number of steps (at most MAX_STEPS), input vector) of a test case."""
    plant = case.plant()
    h = plant.default_step
    n = min(MAX_STEPS, int(round(plant.default_stop_time / h)))
    return plant, h, n, case.input_vector(plant)
