"""Jacobians of a Model Exchange FMU: from its directional derivatives, or central differences.

An FMI 2.0 FMU with a ``<ModelExchange>`` interface is evaluated through
fmpy at a point ``(x, u)`` of its continuous states and inputs:

* ``providesDirectionalDerivative="true"``: one
  ``fmi2GetDirectionalDerivative`` call per state and input (a unit seed)
  gives the columns of ``[A B; C D]`` exactly, with no perturbation runs;
* otherwise central differences of ``fmi2GetDerivatives`` and the outputs
  with steps ``h_k = eps^(1/3) max(1, |z_k|)`` (2 evaluations per column).

``A = d(dx/dt)/dx``, ``B = d(dx/dt)/du``, ``C = dy/dx``, ``D = dy/du`` in the
FMU's own variables and units (SI for mbfmu's FMUs).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import CosimError, InputError
from ...untrusted.scratch import release
from .fmu_files import extract_private, read_checked

DIRECTIONAL = "directional derivatives"
CENTRAL = "central difference"
_DOUBLE_P = ctypes.POINTER(ctypes.c_double)
_EPS3 = np.finfo(float).eps ** (1.0 / 3.0)


@dataclass
class FmuJacobians:
    """``A, B, C, D`` of a Model Exchange FMU at ``(x0, u0)`` and how they were obtained.

    Attributes
    ----------
    A, B, C, D : ndarray
        ``(n, n)``, ``(n, m)``, ``(p, n)``, ``(p, m)``.
    method : str
        ``"directional derivatives"`` or ``"central difference"``.
    states, inputs, outputs : list of str
        The FMU's variable names of the columns and rows.
    x0, u0, y0, xdot0 : ndarray
        The point: continuous states, inputs, outputs and state derivatives.
    evaluations : int
        Calls of ``fmi2GetDirectionalDerivative`` or of the derivative-and-output evaluation.
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    method: str
    states: list
    inputs: list
    outputs: list
    x0: np.ndarray
    u0: np.ndarray
    y0: np.ndarray
    xdot0: np.ndarray
    evaluations: int


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
            self.fmu.setupExperiment(startTime=0.0)
            self._set_values(parameters or {})
            self.fmu.enterInitializationMode()
            self.fmu.exitInitializationMode()
            info = self.fmu.newDiscreteStates()
            while info[0]:  # newDiscreteStatesNeeded
                info = self.fmu.newDiscreteStates()
            self.fmu.enterContinuousTimeMode()
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



def jacobians(inst: ModelExchangeInstance, x0=None, u0=None, method: str = "auto") -> FmuJacobians:
    """``A, B, C, D`` of the instance at ``(x0, u0)`` (default: its current point).

    Parameters
    ----------
    inst : ModelExchangeInstance
    x0, u0 : array_like, optional
        Continuous states and inputs (the FMU's units).
    method : {"auto", "directional derivatives", "central difference"}
        ``"auto"``: directional derivatives when the FMU provides them.
    """
    x0 = inst.state() if x0 is None else np.asarray(x0, float).reshape(-1)
    u0 = inst.input_values() if u0 is None else np.asarray(u0, float).reshape(-1)
    if x0.size != inst.n or u0.size != inst.m:
        raise InputError(f"{inst.path.name}: {x0.size} states and {u0.size} inputs given; the FMU has "
                         f"{inst.n} continuous states and {inst.m} inputs")
    if method == "auto":
        method = DIRECTIONAL if inst.provides_directional else CENTRAL
    if method not in (DIRECTIONAL, CENTRAL):
        raise InputError(f"Jacobian method {method!r}: choose 'auto', {DIRECTIONAL!r} or {CENTRAL!r}")
    if method == DIRECTIONAL and not inst.provides_directional:
        raise InputError(f"{inst.path.name} provides no directional derivatives "
                         "(providesDirectionalDerivative is false)")
    n, m = inst.n, inst.m
    inst.set_point(x0, u0)
    xdot0, y0 = inst.evaluate()
    z0 = np.concatenate([x0, u0])
    cols = []
    if method == DIRECTIONAL:
        cols = [inst.directional_column(j) for j in range(n + m)]
        evaluations = n + m
    else:
        h = _EPS3 * np.maximum(1.0, np.abs(z0))
        for j in range(n + m):
            out = []
            for s in (1.0, -1.0):
                z = z0.copy()
                z[j] += s * h[j]
                inst.set_point(z[:n], z[n:])
                out.append(np.concatenate(inst.evaluate()))
            cols.append((out[0] - out[1]) / (2 * h[j]))
        inst.set_point(x0, u0)
        evaluations = 2 * (n + m)
    J = np.array(cols).T if cols else np.zeros((n + len(y0), 0))
    return FmuJacobians(J[:n, :n], J[:n, n:], J[n:, :n], J[n:, n:], method, list(inst.states), list(inst.inputs),
                        list(inst.outputs), x0, u0, y0, xdot0, evaluations)


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


def fmu_jacobians(path: str | Path, x0=None, u0=None, method: str = "auto") -> FmuJacobians:
    """:func:`jacobians` of the Model Exchange FMU ``path`` at ``(x0, u0)`` (default: its start point)."""
    with ModelExchangeInstance(path) as inst:
        return jacobians(inst, x0, u0, method)
