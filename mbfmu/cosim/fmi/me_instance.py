"""A Model Exchange FMU evaluated through fmpy at a point of its states and inputs.

:class:`ModelExchangeInstance` (FMI 2.0; :mod:`.fmu3_me_instance` for 3.0) sets
``(x, u)``, evaluates the state derivatives and outputs, and gives one column
of ``[A B; C D]`` from ``fmi2GetDirectionalDerivative``; :func:`state_at` runs
the co-simulation interface to a time. The Jacobians themselves (directional
derivatives or central differences, and their check) are computed in
:mod:`mbfmu.control.fmu_jacobians` from these calls.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ...errors import CosimError, InputError
from ...untrusted.scratch import release
from .fmi_versions import FMI2
from .fmu_files import extract_private, read_checked

_DOUBLE_P = ctypes.POINTER(ctypes.c_double)


class InstanceLifetime:
    """Frees a Model Exchange instance (``self.fmu``) and its extracted folder
    (``self._dir``); a context manager. Reads and sets its ``self.n``
    continuous states (the calls are named alike in FMI 2.0 and 3.0)."""

    def close(self) -> None:
        """Free the instance and its extracted files."""
        try:
            self.fmu.terminate()
            self.fmu.freeInstance()
        except Exception:  # noqa: BLE001 (a failed initialization leaves nothing to terminate)
            pass
        finally:
            release(self._dir)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _enter_continuous_time(self, fmi, set_values) -> None:
        """Initialize the instance ``self.fmu`` at t = 0 s (``set_values()`` where its
        version sets values), iterate its discrete states and enter continuous-time mode."""
        fmi.initialize(self.fmu, None, 0.0, None, set_values)
        while getattr(self.fmu, fmi.discrete_update)()[0]:  # the discrete states need an update
            pass
        self.fmu.enterContinuousTimeMode()

    def state(self) -> np.ndarray:
        """The continuous states (``self.n`` of them)."""
        x = np.zeros(self.n)
        if self.n:
            self.fmu.getContinuousStates(x.ctypes.data_as(_DOUBLE_P), self.n)
        return x

    def _set_states(self, x) -> None:
        if self.n:
            x = np.ascontiguousarray(x, float)
            self.fmu.setContinuousStates(x.ctypes.data_as(_DOUBLE_P), self.n)


class ModelExchangeInstance(InstanceLifetime):
    """An instantiated Model Exchange FMU in continuous-time mode (fmpy ``FMU2Model``).

    Parameters
    ----------
    path : str or Path
        The FMU (FMI 2.0 with ``<ModelExchange>``).
    parameters : mapping, optional
        Values of parameters and start values (by variable name) set before initialization.
    """

    def __init__(self, path: str | Path, parameters=None):
        from fmpy.fmi2 import FMU2Model
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(f"{self.path}: no such FMU")
        self.md = read_checked(self.path)
        me = self.md.modelExchange
        if me is None or self.md.fmiVersion != "2.0":
            raise InputError(f"{self.path.name}: no FMI 2.0 Model Exchange interface to differentiate")
        self.provides_directional = bool(me.providesDirectionalDerivative)
        self._dir = str(extract_private(self.path, "jac"))
        self.fmu = None
        try:
            self.fmu = FMU2Model(guid=self.md.guid, unzipDirectory=self._dir, modelIdentifier=me.modelIdentifier,
                                 instanceName="mbfmu_jacobian")
            self.fmu.instantiate()
            self._enter_continuous_time(FMI2, lambda: self._set_values(parameters or {}))
        except Exception as exc:  # a library that does not load, a call that fails: one line, nothing left
            release(self._dir)
            raise CosimError(f"{self.path.name}: cannot start its Model Exchange interface: "
                             f"{(str(exc).splitlines() or [type(exc).__name__])[0]}") from None
        except BaseException:
            release(self._dir)
            raise
        ders = self.md.derivatives
        self.state_vars = [d.variable.derivative for d in ders]
        self.der_vrs = [d.variable.valueReference for d in ders]
        self.state_vrs = [v.valueReference for v in self.state_vars]
        inputs = [v for v in self.md.modelVariables if v.causality == "input"]
        ins = [v for v in inputs if v.type == "Real" and v.variability in (None, "continuous")]
        #: inputs outside [B; D]: discrete or not Real (settable only at events)
        self.other_inputs = [v.name for v in inputs if v not in ins]
        outs = [v for v in self.md.modelVariables if v.causality == "output" and v.type == "Real"]
        self.input_vrs = [v.valueReference for v in ins]
        self.output_vrs = [v.valueReference for v in outs]
        self.states = [v.name for v in self.state_vars]
        self.inputs = [v.name for v in ins]
        self.outputs = [v.name for v in outs]
        self.n, self.m = len(self.states), len(self.inputs)

    def _set_values(self, values) -> None:
        """Set variables by name (Real, Integer or Boolean) before initialization."""
        by_name = {v.name: v for v in self.md.modelVariables}
        for name, value in values.items():
            v = by_name.get(name)
            if v is None:
                raise InputError(f"{self.path.name} has no variable {name!r}")
            if v.type == "Real":
                self.fmu.setReal([v.valueReference], [float(value)])
            elif v.type in ("Integer", "Enumeration"):
                self.fmu.setInteger([v.valueReference], [int(value)])
            elif v.type == "Boolean":
                self.fmu.setBoolean([v.valueReference], [bool(value)])
            else:
                raise InputError(f"{self.path.name}: cannot set the {v.type} variable {name!r}")

    def input_values(self) -> np.ndarray:
        return np.array(self.fmu.getReal(self.input_vrs) if self.m else [], float)

    def set_point(self, x, u) -> None:
        """Set the continuous states ``x`` and the inputs ``u``."""
        self._set_states(x)
        if self.m:
            self.fmu.setReal(self.input_vrs, list(np.asarray(u, float)))

    def evaluate(self) -> tuple[np.ndarray, np.ndarray]:
        """``(dx/dt, y)`` at the current point."""
        xdot = np.zeros(self.n)
        if self.n:
            self.fmu.getDerivatives(xdot.ctypes.data_as(_DOUBLE_P), self.n)
        y = np.array(self.fmu.getReal(self.output_vrs) if self.output_vrs else [], float)
        return xdot, y

    def directional_column(self, j: int) -> np.ndarray:
        """Column ``j`` of ``[A B; C D]`` (knowns: states, then inputs) by one directional derivative."""
        known = (self.state_vrs + self.input_vrs)[j]
        return np.array(self.fmu.getDirectionalDerivative(self.der_vrs + self.output_vrs, [known], [1.0]), float)



def model_exchange_description(path: str | Path):
    """fmpy's model description of ``path`` if it is an FMI 2.0 FMU with Model Exchange, else ``None``."""
    path = Path(path)
    if not path.is_file():
        return None
    md = read_checked(path)
    return md if md.fmiVersion == "2.0" and md.modelExchange is not None else None


def state_at(inst: ModelExchangeInstance, t0: float, step: float, u) -> np.ndarray:
    """The continuous states the FMU of ``inst`` reaches at ``t0`` (s) in co-simulation
    with communication step ``step`` (s) and the inputs ``u`` held."""
    from fmpy.fmi2 import FMU2Slave

    md = inst.md
    if md.coSimulation is None:
        raise InputError(f"{inst.path.name}: t0 = {t0} s needs the co-simulation interface to reach it")
    unzip = str(extract_private(inst.path, "t0"))
    try:
        slave = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.coSimulation.modelIdentifier,
                          instanceName="mbfmu_t0")
        slave.instantiate()
        slave.setupExperiment(startTime=0.0)
        slave.enterInitializationMode()
        if inst.m:
            slave.setReal(inst.input_vrs, [float(v) for v in u])
        slave.exitInitializationMode()
        for k in range(int(round(t0 / step))):
            slave.doStep(currentCommunicationPoint=k * step, communicationStepSize=step)
        x = np.array(slave.getReal(inst.state_vrs), float)
        slave.terminate()
        slave.freeInstance()
    finally:
        release(unzip)
    return x
