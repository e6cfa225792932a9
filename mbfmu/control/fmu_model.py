"""The best linear model of a co-simulation FMU, and which one it is.

:func:`fmu_unit_model` is the one place that models an FMU for every tool
(:func:`linearize_fmu`, :func:`~mbfmu.control.system_linearization.linearize_system`
and the tools built on it). It takes, in this order:

1. **the FMU's own directional derivatives** when it declares them (Model
   Exchange ``providesDirectionalDerivative`` of FMI 2.0,
   ``providesDirectionalDerivatives`` of FMI 3.0; mbfmu's native FMUs
   carry their exact C tangent there) *and* they pass the probe of
   :mod:`mbfmu.control.jacobian_check` (two random directions against central
   differences of the FMU, 1e-5 relative). When the probe fails, central
   differences of the FMU's derivatives and outputs are used instead, with a
   one-line warning naming the entries;
2. **its plant's exact linearization** (:func:`~mbfmu.control.linearization.linearize`)
   for an FMU built by mbfmu (either runtime) that names its plant;
3. a native mbfmu FMU's Model Exchange without directional derivatives: its
   central differences;
4. **ERA** from pulse responses (:func:`mbfmu.control.fmu_era.linearize_fmu`),
   only as the last resort, with its validated fit in the source.

The exact models (1-3) are continuous; at the communication step ``h`` they
are discretized by zero-order hold, which is what the FMU does between
communication points (inputs held) up to its integrator's error. ERA gives
the discrete model at ``h`` directly.

The source of the model is returned with it, and :func:`linearize_fmu`
stores it as ``sys.model_source`` (``"FMU directional derivatives (checked)"``,
``"central differences of the FMU"``, ``"plant's exact linearization
(analytic)"``, ``"ERA (validated fit 99.2 %)"``). The word *exact* is only
given after the check.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import control
import numpy as np

from ..cosim.signal_names import control_names

SOURCE_DIRECTIONAL = "FMU directional derivatives (checked)"
SOURCE_CENTRAL = "central differences of the FMU"
SOURCE_PLANT = "plant's exact linearization"


def linearize_fmu(fmu_path: str | Path, step: float | None = None, t0: float = 0.0, u0=None,
                  inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                  parameters: Mapping[str, Any] | None = None, *, exact: bool = True,
                  **era_options: Any) -> control.StateSpace:
    """Discrete-time linear model of a co-simulation FMU at the state it reaches at ``t0``.

    The best model available (:func:`fmu_unit_model`): the FMU's checked
    directional derivatives, else its plant's exact linearization, else ERA;
    exact ones discretized by zero-order hold at ``step``.

    Parameters
    ----------
    fmu_path, step, t0, u0, inputs, outputs, parameters
        As :func:`mbfmu.control.fmu_era.linearize_fmu` (step [s], t0 [s];
        ``u0`` the values of ``inputs``, default all real inputs).
    exact : bool
        ``False`` always uses ERA.
    **era_options
        ``n_markov``, ``order``, ``amplitude``, ``rtol``, ``tolerance``, ``min_fit`` of ERA.

    Returns
    -------
    control.StateSpace
        ``dt = step``, deviation variables around the operating point, names
        python-control accepts (dots written ``:``, :mod:`mbfmu.cosim.signal_names`);
        ``sys.model_source`` says where the model came from and
        ``sys.linearization.method`` how it was obtained (``"ERA"``, or the
        exact method followed by ``" + ZOH"``).
    """
    from ..cosim.fmi.fmu_defaults import input_start_values
    from ..errors import InputError
    path = Path(fmu_path)
    if not path.is_file():
        raise InputError(f"FMU file {str(path)!r} does not exist")
    step = _step(path, step)
    names = list(inputs) if inputs is not None else list(input_start_values(path))
    values = None
    if u0 is not None:
        u = np.asarray(u0, float).reshape(-1)
        if u.size != len(names) or not np.all(np.isfinite(u)):
            raise InputError(f"u0 must be {len(names)} finite values for inputs {names}")
        values = dict(zip(names, u))
    sys, source = fmu_unit_model(path, step, values, float(t0), parameters=parameters, inputs=inputs,
                                 outputs=outputs, exact=exact, **era_options)
    if not sys.isdtime(strict=True):
        sys = zoh(sys, step)
    sys.model_source = source
    return sys


def zoh(sysc: control.StateSpace, step: float) -> control.StateSpace:
    """Zero-order hold of a continuous model at ``step`` (s), names and ``.linearization`` kept.

    Parameters
    ----------
    sysc : control.StateSpace
        Continuous model.
    step : float
        Sample time, s.

    Returns
    -------
    control.StateSpace
        The discrete model; ``linearization.method`` gains ``" + ZOH"``.
    """
    sysd = control.c2d(sysc, float(step), method="zoh")
    sysd = control.ss(sysd.A, sysd.B, sysd.C, sysd.D, float(step), states=list(sysc.state_labels),
                      inputs=list(sysc.input_labels), outputs=list(sysc.output_labels), name=sysc.name)
    info = getattr(sysc, "linearization", None)
    if info is not None:
        info.method = f"{info.method} + ZOH"
        sysd.linearization = info
    return sysd


def fmu_unit_model(path: str | Path, step: float, u0: Mapping[str, float] | None = None, t: float = 0.0, *,
                   reached: Mapping[str, float] | None = None, parameters: Mapping[str, Any] | None = None,
                   inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                   exact: bool = True, **era_options: Any) -> tuple[control.StateSpace, str]:
    """The best linear model of an FMU at an operating point, and where it came from.

    Parameters
    ----------
    path : str or Path
        The FMU.
    step : float
        Communication step, s (ERA's sample time; the exact models are continuous).
    u0 : mapping, optional
        Input name -> operating value (FMU units); the others at their start values.
    t : float
        Time of the operating point, s.
    reached : mapping, optional
        The FMU's variable values at ``t`` in a run (a system's): its states
        are read from them; without, the FMU is run alone to ``t`` with the inputs held.
    parameters : mapping, optional
        Parameter values set on the FMU.
    inputs, outputs : sequence of str, optional
        The model's inputs and outputs in this order (default all real ones).
    exact : bool
        ``False``: ERA only.
    **era_options
        Options of :func:`mbfmu.control.fmu_era.linearize_fmu`.

    Returns
    -------
    (control.StateSpace, str)
        A continuous model (sources 1-3 of the module docs) or the discrete
        ERA model at ``step``, and its source.
    """
    from ..cosim.fmi.fmu_defaults import input_start_values
    from .fmu_era import linearize_fmu as era_linearize
    path = Path(path)
    u0 = dict(u0 or {})
    parameters = dict(parameters or {})
    if exact:
        for attempt in (lambda: _from_model_exchange(path, step, t, u0, reached, parameters, inputs, outputs, True),
                        lambda: _from_plant(path, step, t, u0, reached, parameters, inputs, outputs),
                        lambda: _from_model_exchange(path, step, t, u0, reached, parameters, inputs, outputs, False)):
            found = attempt()
            if found is not None:
                return found
    starts = input_start_values(path)
    names = list(inputs) if inputs is not None else list(starts)
    u = [float(u0.get(n, starts.get(n, 0.0))) for n in names]
    sysd = era_linearize(path, step, t, u, inputs, outputs, parameters or None, **era_options)
    return sysd, f"ERA (validated fit {100 * sysd.linearization.confidence:.1f} %)"


def _step(path: Path, step: float | None) -> float:
    """``step``, else the FMU's default experiment step, else 1e-2 s."""
    if step is not None:
        return float(step)
    from ..cosim.fmi.fmu_defaults import default_step
    return default_step(path)


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
    from ..cosim.fmi.fmu_open import open_fmu
    from ..errors import InputError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"no FMU file {str(path)!r}")
    return plant_of_unit(open_fmu(path, "plant_of"))


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


def _select(sysc: control.StateSpace, states: Sequence[str], ins: Sequence[str], outs: Sequence[str],
            inputs: Sequence[str] | None, outputs: Sequence[str] | None, name: str) -> control.StateSpace:
    """The columns ``inputs`` and rows ``outputs`` of ``sysc`` (all by default), named for python-control."""
    keep_in = [list(ins).index(n) for n in (inputs if inputs is not None else ins)]
    keep_out = [list(outs).index(n) for n in (outputs if outputs is not None else outs)]
    return control.ss(sysc.A, sysc.B[:, keep_in], sysc.C[keep_out], sysc.D[np.ix_(keep_out, keep_in)],
                      states=control_names(states), inputs=control_names([ins[i] for i in keep_in]),
                      outputs=control_names([outs[i] for i in keep_out]), name=name)


def _from_plant(path: Path, step: float, t: float, u0: Mapping[str, float], reached: Mapping[str, float] | None,
                parameters: Mapping[str, Any], inputs: Sequence[str] | None,
                outputs: Sequence[str] | None) -> tuple[control.StateSpace, str] | None:
    """The plant's exact continuous model, or ``None`` when the FMU names no plant
    this process can rebuild with the FMU's signals."""
    from ..cosim.fmi.fmu_open import open_fmu
    from ..errors import InputError, MbfmuError
    from .linearization import linearize
    from .system_plant import LinearSystemPlant, ReferencedSystemPlant

    unit = open_fmu(path, "exact", values=dict(parameters) or None)
    if unit.plant_ref is None:
        return None
    try:
        plant = plant_of_unit(unit)
    except MbfmuError:
        return None
    if isinstance(plant, LinearSystemPlant):  # an exported python-control system: its own matrices
        return control.ss(plant.A, plant.B, plant.C, plant.D, plant.dt), "exact (exported linear system)"
    if isinstance(plant, ReferencedSystemPlant):
        from .linearization import linearize_io_system
        u = [float(u0.get(n, 0.0)) for n in unit.inputs]
        return linearize_io_system(plant.system, plant.initial_state(), np.asarray(u), t), \
            "central difference (exported system)"
    ins, outs = [s.name for s in plant.inputs], [s.name for s in plant.outputs]
    if list(unit.inputs) != ins or not set(outputs if outputs is not None else unit.outputs) <= set(outs):
        return None  # signal names differ from the FMU's: model the FMU as it is
    if inputs is not None and not set(inputs) <= set(ins):
        return None
    u = plant.default_inputs().astype(float)
    for k, n in enumerate(ins):
        if n in u0:
            u[k] = float(u0[n])
    x0 = None
    if t > 0:
        if reached is None:
            x0 = _state_at(unit, plant, t, float(step), u)
        else:
            names = [f"states.{s.name}" for s in plant.states]
            if not all(n in reached for n in names):
                raise InputError(f"{path.name}: the FMU does not expose the plant state (states.*) reached at "
                                 f"t = {t} s; linearize at 0 or rebuild the FMU with mbfmu")
            x0 = np.array([reached[n] for n in names], float)
    sysc = linearize(plant, x0, u, t=float(t))
    sys = _select(sysc, list(sysc.state_labels), ins, outs, inputs, outputs, f"{plant.name}_lin")
    sys.linearization = sysc.linearization
    return sys, f"{SOURCE_PLANT} ({sysc.linearization.method})"


def _from_model_exchange(path: Path, step: float, t: float, u0: Mapping[str, float],
                         reached: Mapping[str, float] | None, parameters: Mapping[str, Any],
                         inputs: Sequence[str] | None, outputs: Sequence[str] | None,
                         declared: bool) -> tuple[control.StateSpace, str] | None:
    """The continuous model from the FMU's Model Exchange Jacobians, or ``None``.

    ``declared=True``: only an FMU that declares directional derivatives (they
    are probed, :func:`mbfmu.control.jacobian_check.checked_jacobians`);
    ``False``: an mbfmu FMU without them, by central differences (another
    tool's FMU without them keeps ERA: its events and discrete variables are
    outside a Jacobian).
    """
    import warnings

    from ..cosim.fmi.fmu3_me_instance import (Fmi3ModelExchangeInstance,
                                              fmi3_model_exchange_description,
                                              provides_directional_derivatives)
    from ..cosim.fmi.me_instance import ModelExchangeInstance, model_exchange_description
    from ..cosim.fmi.me_instance import state_at as me_state_at
    from .jacobian_check import checked_jacobians
    from .linearization import Linearization

    md, instance = model_exchange_description(path), ModelExchangeInstance
    if md is None:
        md, instance = fmi3_model_exchange_description(path), Fmi3ModelExchangeInstance
    if md is None:
        return None
    provides = bool(md.modelExchange.providesDirectionalDerivative) if instance is ModelExchangeInstance \
        else provides_directional_derivatives(path)
    if provides != declared or (not declared and not (md.generationTool or "").startswith("mbfmu")):
        return None
    with instance(path, parameters) as inst:
        if inst.n == 0 or inst.other_inputs:
            return None
        if not set(inputs if inputs is not None else ()) <= set(inst.inputs) \
                or not set(outputs if outputs is not None else ()) <= set(inst.outputs):
            return None
        u = inst.input_values()
        for k, n in enumerate(inst.inputs):
            if n in u0:
                u[k] = float(u0[n])
        x0 = None
        if t > 0:
            if reached is None:
                if instance is not ModelExchangeInstance:
                    return None  # reaching t in co-simulation is written for FMI 2
                x0 = me_state_at(inst, t, float(step), u)
            elif all(s in reached for s in inst.states):
                x0 = np.array([reached[s] for s in inst.states], float)
            else:
                return None  # the run did not record the FMU's states
        jac, checked = checked_jacobians(inst, x0, u, name=path.name)
    if checked:
        method, source = "directional derivatives (exact, checked)", SOURCE_DIRECTIONAL
    elif provides:
        method = "central difference of the FMU's derivatives and outputs"
        source = f"{SOURCE_CENTRAL} (its directional derivatives failed the check)"
    else:
        method = "central difference of the FMU's derivatives and outputs"
        source = f"{SOURCE_CENTRAL} (it provides no directional derivatives)"
        warnings.warn(f"{path.name} provides no directional derivatives (providesDirectionalDerivative="
                      "false): its Jacobians are central differences", stacklevel=4)
    sys = _select(control.ss(jac.A, jac.B, jac.C, jac.D), jac.states, jac.inputs, jac.outputs, inputs, outputs,
                  f"{path.stem}_lin")
    keep_out = [jac.outputs.index(n) for n in (outputs if outputs is not None else jac.outputs)]
    x_op = jac.x0
    sys.linearization = Linearization(
        method=method, output_method=method, step="" if checked else "h_k = eps^(1/3) max(1, |z_k|)",
        t=float(t), x0=x_op, u0=jac.u0, y0=jac.y0[keep_out], xdot0=jac.xdot0, tangent=False,
        to_state=lambda dz: x_op + dz, from_state=lambda x: np.asarray(x, float) - x_op,
        notes=f"{jac.evaluations} FMU evaluations; continuous-time A, B, C, D in .continuous")
    sys.linearization.continuous = jac
    return sys, source

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
