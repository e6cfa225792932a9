"""Linear model of any co-simulation FMU: exact for FMUs that mbfmu built, ERA otherwise.

An FMI 2.0 FMU with Model Exchange is linearized from its own Jacobians
(:mod:`mbfmu.cosim.fmu_jacobian`): its directional derivatives when it provides
them (exact, no perturbation runs; any tool's FMU with continuous inputs), else,
for mbfmu's native FMUs, central differences of its derivatives and outputs
(with a warning); then discretized with zero-order hold at the communication
step.

Otherwise an FMU built by ``mbfmu build`` names its plant (its plant reference): the
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
        ``sys.linearization.method`` says how it was obtained (``"ERA"``, or
        ``"directional derivatives"``, ``"central difference of the FMU"`` or
        the plant's exact method, followed by ``" + ZOH"``).
    """
    from ..cosim.fmu_linearize import linearize_fmu as era_linearize
    if exact and not parameters:
        sys = _from_model_exchange(Path(fmu_path), step, t0, u0, inputs, outputs)
        if sys is not None:
            return sys
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


def _from_model_exchange(path: Path, step: float | None, t0: float, u0: Any, inputs: Sequence[str] | None,
                         outputs: Sequence[str] | None) -> control.StateSpace | None:
    """The ZOH model from the FMU's own Jacobians, or ``None`` without an FMI 2.0 Model Exchange interface."""
    import warnings

    from ..cosim.fmu_jacobian import DIRECTIONAL, ModelExchangeInstance, jacobians, model_exchange_description
    from ..cosim.fmu_jacobian import state_at as me_state_at
    from ..errors import InputError
    from .linearization import Linearization

    md = model_exchange_description(path)
    if md is None:
        return None
    # another tool's FMU without directional derivatives keeps ERA (its events and
    # discrete variables are outside a Jacobian); mbfmu's native FMUs fall back to differences
    if not md.modelExchange.providesDirectionalDerivative and not (md.generationTool or "").startswith("mbfmu"):
        return None
    if step is None:
        de = md.defaultExperiment
        step = float(de.stepSize) if de is not None and de.stepSize else 1e-2
    with ModelExchangeInstance(path) as inst:
        if inst.n == 0 or inst.other_inputs:
            return None
        u = inst.input_values() if u0 is None else np.asarray(u0, float).reshape(-1)
        x0 = me_state_at(inst, t0, float(step), u) if t0 else None
        jac = jacobians(inst, x0, u)
    if jac.method == DIRECTIONAL:
        method = "directional derivatives (exact)"
    else:
        method = "central difference of the FMU's derivatives and outputs"
        warnings.warn(f"{path.name} provides no directional derivatives (providesDirectionalDerivative="
                      f"false): its Jacobians are central differences", stacklevel=3)
    for names, kind, given in ((jac.inputs, "input", inputs), (jac.outputs, "output", outputs)):
        unknown = [n for n in (given or ()) if n not in names]
        if unknown:
            raise InputError(f"{path.name}: unknown {kind}s {unknown}; known: {names}")
    keep_in = [jac.inputs.index(n) for n in (inputs or jac.inputs)]
    keep_out = [jac.outputs.index(n) for n in (outputs or jac.outputs)]
    sysc = control.ss(jac.A, jac.B, jac.C, jac.D)
    sysd = control.c2d(sysc, float(step), method="zoh")
    sysd = control.ss(sysd.A, sysd.B[:, keep_in], sysd.C[keep_out], sysd.D[np.ix_(keep_out, keep_in)], float(step),
                      states=list(jac.states), inputs=[jac.inputs[i] for i in keep_in],
                      outputs=[jac.outputs[i] for i in keep_out], name=f"{path.stem}_lin")
    x0 = jac.x0
    step_rule = "" if jac.method == DIRECTIONAL else "h_k = eps^(1/3) max(1, |z_k|)"
    sysd.linearization = Linearization(
        method=f"{method} + ZOH", output_method=method, step=step_rule, t=float(t0), x0=x0, u0=jac.u0,
        y0=jac.y0[keep_out], xdot0=jac.xdot0, tangent=False, to_state=lambda dz: x0 + dz,
        from_state=lambda x: np.asarray(x, float) - x0,
        notes=f"{jac.evaluations} FMU evaluations; continuous-time A, B, C, D in .continuous")
    sysd.linearization.continuous = jac
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
