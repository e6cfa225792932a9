"""Linear model of any co-simulation FMU: exact for FMUs that mbfmu built, ERA otherwise.

An FMU built by ``mbfmu build`` names its plant (its plant reference): the
plant is rebuilt here and linearized exactly (:func:`~mbfmu.control.linearization.linearize`,
analytic or central-difference Jacobians), then discretized with zero-order
hold at the communication step, which is what the FMU does between
communication points up to its integrator's error. Every other FMU is
identified from pulse responses (:func:`mbfmu.cosim.fmu_linearize.linearize_fmu`, ERA).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import control
import numpy as np


def linearize_fmu(fmu_path: str | Path, step: float | None = None, t0: float = 0.0, u0=None,
                  inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                  parameters: Mapping[str, Any] | None = None, *, exact: bool = True,
                  **era_options: Any) -> control.StateSpace:
    """Discrete-time linear model of a co-simulation FMU at the state it reaches at ``t0``.

    Parameters
    ----------
    fmu_path, step, t0, u0, inputs, outputs, parameters
        As :func:`mbfmu.cosim.fmu_linearize.linearize_fmu` (step [s], t0 [s]).
    exact : bool
        For an FMU built by mbfmu (and no ``parameters`` given), use the
        plant's exact linearization; ``False`` always uses ERA.
    **era_options
        ``n_markov``, ``order``, ``amplitude``, ``rtol``, ``tolerance`` of ERA.

    Returns
    -------
    control.StateSpace
        ``dt = step``, deviation variables around the operating point;
        ``sys.linearization.method`` says how it was obtained (``"ERA"`` or
        the exact method followed by ``" + ZOH"``).
    """
    from ..cosim.fmu_linearize import linearize_fmu as era_linearize
    if exact and not parameters:
        sys = _exact(Path(fmu_path), step, t0, u0, inputs, outputs)
        if sys is not None:
            return sys
    return era_linearize(fmu_path, step, t0, u0, inputs, outputs, parameters, **era_options)


def plant_of_fmu(path: str | Path) -> Any:
    """The plant an FMU built by mbfmu runs, rebuilt from the plant reference it carries.

    Parameters
    ----------
    path : str or Path
        The ``.fmu`` file.

    Raises
    ------
    InputError
        When the file is missing or the FMU names no plant this process can rebuild.
    """
    from ..cosim.fmu_unit import FmuUnit
    from ..errors import InputError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"no FMU file {str(path)!r}")
    return plant_of_unit(FmuUnit(path, "plant_of"))


def plant_of_unit(unit: Any) -> Any:
    """The plant of an :class:`~mbfmu.cosim.FmuUnit` built by mbfmu, from the
    plant reference and resources of the unit's extracted FMU, with the
    parameters set on the unit.

    Raises
    ------
    InputError
        When the FMU names no plant this process can rebuild.
    """
    from ..errors import InputError, MbfmuError
    from ..fmu.plantref import PlantRef, build_plant
    name = Path(unit.path).name
    if unit.plant_ref is None:
        raise InputError(f"{name} was not built by mbfmu from a plant: it names no plant to rebuild")
    ref = dict(unit.plant_ref)
    # parameters set on the unit (system.set("arm.arm_mass", 40)) are the FMU's: the plant must have them too
    values = {k: float(v) for k, v in getattr(unit, "values", {}).items()
              if k in unit.variables and unit.variables[k].causality == "parameter"}
    if values:
        ref["parameters"] = {**dict(ref.get("parameters") or {}), **values}
    try:
        return build_plant(PlantRef.from_dict(ref), Path(unit._unzipdir) / "resources")
    except (MbfmuError, ImportError, OSError) as exc:
        raise InputError(f"{name}: cannot rebuild its plant ({exc})") from exc


def _exact(path: Path, step: float | None, t0: float, u0: Any, inputs: Sequence[str] | None,
           outputs: Sequence[str] | None) -> control.StateSpace | None:
    """The exact model, or ``None`` when the FMU names no plant this process can rebuild."""
    from ..cosim.fmu_unit import FmuUnit
    from ..errors import MbfmuError
    from ..fmu.plantref import PlantRef, build_plant
    from .linearization import linearize

    if not path.is_file():
        return None  # ERA reports it
    unit = FmuUnit(path, "exact")
    ref = unit.plant_ref
    if ref is None:
        return None
    try:
        plant = build_plant(PlantRef.from_dict(ref), Path(unit._unzipdir) / "resources")
    except (MbfmuError, ImportError, OSError):
        return None
    ins, outs = [s.name for s in plant.inputs], [s.name for s in plant.outputs]
    if [n for n in unit.inputs] != ins or not set(outs) <= set(unit.outputs):
        return None  # signal names differ from the FMU's: identify the FMU as it is
    if step is None:
        de = unit.md.defaultExperiment
        step = float(de.stepSize) if de is not None and de.stepSize else 1e-2
    u = plant.default_inputs() if u0 is None else np.asarray(u0, float).reshape(-1)
    x0 = None if t0 == 0 else _state_at(unit, plant, t0, float(step), u)
    sysc = linearize(plant, x0, u, t=float(t0))
    sysd = control.c2d(sysc, float(step), method="zoh")
    keep_in = [ins.index(n) for n in (inputs or ins)]
    keep_out = [outs.index(n) for n in (outputs or outs)]
    sysd = control.ss(sysd.A, sysd.B[:, keep_in], sysd.C[keep_out], sysd.D[np.ix_(keep_out, keep_in)], float(step),
                      states=list(sysc.state_labels), inputs=[ins[i] for i in keep_in],
                      outputs=[outs[i] for i in keep_out], name=f"{plant.name}_lin")
    info = sysc.linearization
    info.method = f"{info.method} + ZOH"
    sysd.linearization = info
    return sysd


def _state_at(unit: Any, plant: Any, t0: float, step: float, u: np.ndarray) -> dict[str, float]:
    """The plant state the FMU reaches at ``t0`` with inputs ``u`` held, from its ``states.*`` variables."""
    names = [f"states.{s.name}" for s in plant.states]
    missing = [n for n in names if n not in unit.variables]
    if missing:
        raise ValueError(f"{unit.path.name}: no state variables {missing}")
    n0 = int(round(t0 / step))
    unit.setup(0.0, t0, step)
    try:
        unit.u[:len(u)] = list(u)
        unit.push()
        for k in range(n0):
            unit.do_step(k * step, step)
        values = unit.getter(names)()
    finally:
        unit.terminate()
    return {s.name: float(v) for s, v in zip(plant.states, values)}
