"""An FMI 3.0 Model Exchange instance with the interface of
:class:`~mbfmu.cosim.fmi.me_instance.ModelExchangeInstance`, so that
:func:`~mbfmu.control.fmu_jacobians.jacobians` and the probe of
:mod:`mbfmu.control.jacobian_check` take an FMI 3 FMU's Jacobians
(``providesDirectionalDerivatives``) the same way.

fmpy reads FMI 2's ``providesDirectionalDerivative`` only; FMI 3's
``providesDirectionalDerivatives`` is read from the model description here.
The FMU is read and extracted by :mod:`mbfmu.cosim.fmi.fmu_files` (checked,
private folder). Array variables are flattened row-major and their elements named
``name[i,j]`` (1-based), as :class:`~mbfmu.cosim.Fmu3Unit` names them.
"""
from __future__ import annotations

import ctypes
import re
from pathlib import Path

import numpy as np

from ...errors import InputError
from .fmi_versions import FMI3, element_names
from .fmu_files import extract_private, read_checked
from .me_instance import InstanceLifetime

_DOUBLE_P = ctypes.POINTER(ctypes.c_double)


def fmi3_model_exchange_description(path: str | Path):
    """fmpy's model description of ``path`` if it is an FMI 3.0 FMU with Model Exchange, else ``None``."""
    path = Path(path)
    if not path.is_file():
        return None
    md = read_checked(path)  # bounded and checked (modelIdentifier, names) before anything loads
    return md if str(md.fmiVersion).startswith("3.") and md.modelExchange is not None else None


def provides_directional_derivatives(path: str | Path) -> bool:
    """Whether the FMI 3.0 FMU at ``path`` declares ``providesDirectionalDerivatives="true"`` on Model Exchange."""
    from ...untrusted.archive import read_member
    xml = read_member(path, "modelDescription.xml", f"FMU {Path(path).name!r}") or b""
    tag = re.search(rb"<ModelExchange\b[^>]*>", xml)
    return bool(tag and re.search(rb'\bprovidesDirectionalDerivatives\s*=\s*"true"', tag.group(0)))


class Fmi3ModelExchangeInstance(InstanceLifetime):
    """An instantiated FMI 3.0 Model Exchange FMU in continuous-time mode (fmpy ``FMU3Model``).

    Parameters
    ----------
    path : str or Path
        The FMU (FMI 3.0 with ``<ModelExchange>``).
    parameters : mapping, optional
        Values of Float64 parameters (by scalar variable name) set before initialization.
    """

    def __init__(self, path: str | Path, parameters=None):
        from fmpy.fmi3 import FMU3Model

        self.path = Path(path)
        md = fmi3_model_exchange_description(self.path)
        if md is None:
            raise InputError(f"{self.path.name}: no FMI 3.0 Model Exchange interface to differentiate")
        self.md = md
        me = md.modelExchange
        self.provides_directional = provides_directional_derivatives(self.path)
        by_vr = {v.valueReference: v for v in md.modelVariables}

        def elements(v) -> list[str]:
            return element_names(v, by_vr)

        state_vars = [d.variable.derivative for d in md.derivatives]
        inputs = [v for v in md.modelVariables if v.causality == "input"]
        ins = [v for v in inputs if v.type == "Float64" and v.variability in (None, "continuous")]
        outs = [v for v in md.modelVariables if v.causality == "output" and v.type == "Float64"]
        self.other_inputs = [v.name for v in inputs if v not in ins]
        self.der_vrs = [d.variable.valueReference for d in md.derivatives]
        self.state_vrs = [v.valueReference for v in state_vars]
        self.input_vrs = [v.valueReference for v in ins]
        self.output_vrs = [v.valueReference for v in outs]
        self.states = [n for v in state_vars for n in elements(v)]
        self.inputs = [n for v in ins for n in elements(v)]
        self.outputs = [n for v in outs for n in elements(v)]
        self.n, self.m = len(self.states), len(self.inputs)
        self._dir = extract_private(self.path, "jac3")
        self.fmu = FMU3Model(guid=md.guid, unzipDirectory=str(self._dir), modelIdentifier=me.modelIdentifier,
                             instanceName="mbfmu_jacobian")
        self.fmu.instantiate()

        def set_values() -> None:
            for name, value in (parameters or {}).items():
                v = next((v for v in md.modelVariables if v.name == name and v.type == "Float64"), None)
                if v is None:
                    raise InputError(f"{self.path.name} has no Float64 variable {name!r}")
                self.fmu.setFloat64([v.valueReference], [float(value)])

        try:
            self._enter_continuous_time(FMI3, set_values)
        except Exception:
            self.close()
            raise

    def input_values(self) -> np.ndarray:
        """The inputs (flattened)."""
        return np.array(self.fmu.getFloat64(self.input_vrs, self.m) if self.m else [], float)

    def set_point(self, x, u) -> None:
        """Set the continuous states ``x`` and the inputs ``u``."""
        self._set_states(x)
        if self.m:
            self.fmu.setFloat64(self.input_vrs, [float(v) for v in u])

    def evaluate(self) -> tuple[np.ndarray, np.ndarray]:
        """``(dx/dt, y)`` at the current point."""
        xdot = np.zeros(self.n)
        if self.n:
            self.fmu.getContinuousStateDerivatives(xdot.ctypes.data_as(_DOUBLE_P), self.n)
        p = len(self.outputs)
        y = np.array(self.fmu.getFloat64(self.output_vrs, p) if p else [], float)
        return xdot, y

    def directional_column(self, j: int) -> np.ndarray:
        """Column ``j`` of ``[A B; C D]`` (knowns: states, then inputs) by one directional derivative."""
        seed = np.zeros(self.n + self.m)
        seed[j] = 1.0
        return np.array(self.fmu.getDirectionalDerivative(self.der_vrs + self.output_vrs,
                                                          self.state_vrs + self.input_vrs, list(seed),
                                                          self.n + len(self.outputs)), float)



