"""A plant's FMU closed by a discrete python-control controller, run by the
co-simulation master.

:func:`simulate_fmu_loop` builds the :class:`~mbfmu.cosim.System` of a
sampled-data loop and runs it with :func:`mbfmu.cosim.simulate` at the
controller's sample time: the plant as its FMU (a native FMU of
:func:`mbfmu.fmu.build_fmu` runs entirely in C), the controller as a
:class:`~mbfmu.cosim.ControlUnit`, the reference signals as source units
(:mod:`mbfmu.cosim.sources`), and the operating-point offsets as
:class:`~mbfmu.cosim.Offset` blocks. Such a system takes the master's
compiled loop (:mod:`mbfmu.cosim.master.fast_loop`): the FMU, an LTI
controller and the blocks are stepped in C; a nonlinear controller and the
sources are called back from C once per step.

The wiring is :func:`mbfmu.control.sampled.simulate_loop`'s
(:func:`~mbfmu.control.sampled.loop_wiring`), and so are the samples: at
each ``t_k = k h`` the controller sees the plant outputs (minus
``y_offset``) and the references, its outputs plus ``u_offset`` are held on
the plant's inputs over ``[t_k, t_k + h]``. The result is a
:class:`~mbfmu.control.sampled.LoopResult` as ``simulate_loop`` returns it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..cosim import ControlUnit, FmuUnit, Offset, System, simulate
from ..cosim.blocks import port_names
from ..cosim.master.options import SimulationOptions
from ..errors import InputError
from ..plant import Plant
from .sampled import LoopResult, initial_controller_state, loop_wiring

PLANT, CONTROLLER, Y_OFFSET, U_OFFSET = "plant", "ctrl", "y_offset", "u_offset"


def reference_names(references: Sequence[Any]) -> list[str]:
    """The signals the source units ``references`` give (their outputs), checked.

    Raises
    ------
    InputError
        A reference unit with inputs, a name reserved for the loop's own
        units, or one signal given twice.
    """
    names: list[str] = []
    for r in references:
        if r.inputs:
            raise InputError(f"reference unit {r.name!r} has inputs {r.inputs}: a reference is a source")
        if r.name in (PLANT, CONTROLLER, Y_OFFSET, U_OFFSET):
            raise InputError(f"reference unit {r.name!r}: the name is taken by the loop's own units")
        for o in r.outputs:
            if o in names:
                raise InputError(f"reference signal {o!r} is given by two reference units")
            names.append(o)
    return names


def loop_system(plant: Plant, fmu: str | Path, controller: Any, stop_time: float, *,
                references: Sequence[Any] = (), values: Mapping[str, Any] | None = None,
                x0: np.ndarray | None = None, u_offset: np.ndarray | None = None,
                y_offset: np.ndarray | None = None, step: float | None = None) -> tuple[System, list[str], float]:
    """The co-simulation system of the sampled loop of :func:`simulate_fmu_loop`.

    Parameters
    ----------
    plant, fmu, controller, stop_time, references, values, x0, u_offset, y_offset, step
        As :func:`simulate_fmu_loop` takes them.

    Returns
    -------
    system : System
        Units ``plant`` (the FMU), ``ctrl`` (the controller), the references,
        and ``y_offset`` / ``u_offset`` blocks where an offset is not zero.
    record : list of str
        The columns :func:`simulate_fmu_loop` records.
    step : float
        The communication step (the controller's sample time), s.
    """
    out_names = [s.name for s in plant.outputs]
    in_names = [s.name for s in plant.inputs]
    refs = reference_names(references)
    w = loop_wiring(controller, out_names, in_names, refs, stop_time, step)
    if controller is None and references:
        raise InputError("references drive a controller's inputs: a loop without a controller takes none")
    u_base = plant.default_inputs() if u_offset is None else np.asarray(u_offset, float)
    y_off = np.zeros(len(out_names)) if y_offset is None else np.asarray(y_offset, float)
    if u_base.shape != (len(in_names),) or y_off.shape != (len(out_names),):
        raise InputError(f"u_offset needs {len(in_names)} values and y_offset {len(out_names)} "
                         f"(the plant's inputs and outputs), got {u_base.size} and {y_off.size}")
    for what, v in (("u_offset", u_base), ("y_offset", y_off)):
        if not np.isfinite(v).all():
            raise InputError(f"{what} holds a value that is not finite: {v.tolist()}")
    ctrl = None if controller is None else ControlUnit(CONTROLLER, controller,
                                                       x0=initial_controller_state(controller))
    driven = set(w.targets)
    start = {n: float(u_base[i]) for i, n in enumerate(in_names) if i not in driven}
    fmu_unit = FmuUnit(fmu, name=PLANT)
    missing = [f"states.{s.name}" for s in plant.states if f"states.{s.name}" not in fmu_unit.variables]
    if missing:
        raise InputError(f"FMU {Path(fmu).name!r} is not the FMU of plant {plant.name!r}: it has no {missing[0]}")
    for name, value in {**start, **state_start_values(plant, fmu_unit, x0), **dict(values or {})}.items():
        fmu_unit.set(name, value)
    units: list[Any] = [fmu_unit, *([] if ctrl is None else [ctrl]), *references]
    links: list[tuple[str, str]] = []
    measured = [(j, i) for j, (kind, i) in enumerate(w.sources) if kind == "y"]
    if measured and np.any(y_off[[i for _, i in measured]] != 0.0):
        # y - y0 as simulate_loop forms it: y + (-y0) is the same number
        units.append(Offset(Y_OFFSET, -y_off[[i for _, i in measured]]))
        ports = port_names("u", len(measured)), port_names("y", len(measured))
        for k, (j, i) in enumerate(measured):
            links += [(f"{PLANT}.{out_names[i]}", f"{Y_OFFSET}.{ports[0][k]}"),
                      (f"{Y_OFFSET}.{ports[1][k]}", f"{CONTROLLER}.{ctrl.inputs[j]}")]
    else:
        links += [(f"{PLANT}.{out_names[i]}", f"{CONTROLLER}.{ctrl.inputs[j]}") for j, i in measured]
    links += [(f"{r.name}.{n}", f"{CONTROLLER}.{ctrl.inputs[j]}") for r in references for n in r.outputs
              for j, (kind, name) in enumerate(w.sources) if kind == "r" and name == n]
    if w.targets and np.any(u_base[w.targets] != 0.0):
        units.append(Offset(U_OFFSET, u_base[w.targets]))
        ports = port_names("u", len(w.targets)), port_names("y", len(w.targets))
        for k, i in enumerate(w.targets):
            links += [(f"{CONTROLLER}.{ctrl.outputs[k]}", f"{U_OFFSET}.{ports[0][k]}"),
                      (f"{U_OFFSET}.{ports[1][k]}", f"{PLANT}.{in_names[i]}")]
    else:
        links += [(f"{CONTROLLER}.{ctrl.outputs[k]}", f"{PLANT}.{in_names[i]}") for k, i in enumerate(w.targets)]
    record = ([f"{PLANT}.states.{s.name}" for s in plant.states] + [f"{PLANT}.{n}" for n in out_names]
              + [f"{PLANT}.{n}" for n in in_names]
              + [f"{CONTROLLER}.{n}" for n in ([] if ctrl is None else ctrl.state_names)])
    return System(units, links), record, w.step


def state_start_values(plant: Plant, fmu_unit: FmuUnit, x0: np.ndarray | None) -> dict[str, float]:
    """The start values ``states.<name>`` that start the plant's FMU at state ``x0``
    (empty for None: the FMU's own initial state).

    Parameters
    ----------
    plant : Plant
        The plant the FMU was built from (its states, in order).
    fmu_unit : FmuUnit
        The plant's FMU.
    x0 : ndarray or None
        The initial state, in the units of the plant's states.

    Returns
    -------
    dict of str to float
        Variable name -> start value, set before initialization (the native
        FMU declares its states ``initial="exact"``).

    Raises
    ------
    InputError
        ``x0`` of the wrong size or not finite, or an FMU whose states are
        not start values (a pythonfmu FMU's are calculated).
    """
    if x0 is None:
        return {}
    x = plant.check_state(x0)
    names = [f"states.{s.name}" for s in plant.states]
    fixed = [n for n in names if fmu_unit.variable(n).start is None]
    if fixed:
        raise InputError(f"FMU {fmu_unit.path.name!r}: its state {fixed[0]} has no start value, so the loop cannot "
                         "start it at x0 (the native FMU's states are start values: build_fmu(..., "
                         "runtime='native'))")
    return {n: float(v) for n, v in zip(names, x)}


def simulate_fmu_loop(plant: Plant, fmu: str | Path, controller: Any, stop_time: float, *,
                      references: Sequence[Any] = (), values: Mapping[str, Any] | None = None,
                      x0: np.ndarray | None = None, u_offset: np.ndarray | None = None,
                      y_offset: np.ndarray | None = None, step: float | None = None,
                      options: SimulationOptions | None = None) -> LoopResult:
    """Close the FMU of ``plant`` with the discrete ``controller`` in the co-simulation master.

    The loop of :func:`mbfmu.control.sampled.simulate_loop` (same wiring,
    same samples), with the plant's FMU in place of the Python plant; with a
    native FMU the run takes the master's compiled loop.

    Parameters
    ----------
    plant : Plant
        The plant the FMU was built from (its signal names, default inputs
        and states; its parameters must be the FMU's, or be set by ``values``).
    fmu : str or Path
        The plant's FMU (:func:`mbfmu.fmu.build_fmu`, ``runtime="native"``
        for the compiled loop); its state variables ``states.*`` are recorded.
    controller : control.InputOutputSystem or None
        Discrete-time (``dt > 0``, the communication step); every input is a
        plant output or a reference signal, every output a plant input.
        None: the plant runs alone, its inputs held at ``u_offset``, sampled
        at ``step``.
    stop_time : float
        s, a whole number of samples.
    references : sequence of Unit
        Source units (no inputs; :mod:`mbfmu.cosim.sources`) whose outputs
        are named by the controller inputs they drive.
    values : mapping, optional
        FMU parameters and start values by variable name (an initial
        condition the plant takes as parameters, for example), set before
        the FMU's initialization; they win over ``x0``'s.
    x0 : ndarray, optional
        Plant initial state, as :func:`~mbfmu.control.sampled.simulate_loop`
        takes it: set as the start values of the FMU's states ``states.*``
        (a native FMU's states are start values a host may set before
        initialization; they win over the parameters that would give them).
        Default: the FMU's initial state.
    u_offset : ndarray, optional
        Added to the plant inputs (an ``Offset`` block after the controller);
        plant inputs not driven by the controller start at it. Default: the
        plant's default inputs.
    y_offset : ndarray, optional
        Subtracted from the plant outputs before the controller sees them (an
        ``Offset`` block).
    step : float, optional
        The sample time, s, of a loop without a controller.
    options : SimulationOptions, optional
        Master options (the recording is this function's).

    Returns
    -------
    LoopResult
        Its ``cosim`` holds the master's :class:`~mbfmu.cosim.Result`.
    """
    system, record, step = loop_system(plant, fmu, controller, stop_time, references=references, values=values,
                                       x0=x0, u_offset=u_offset, y_offset=y_offset, step=step)
    opts = SimulationOptions(progress=False) if options is None else options
    res = simulate(system, stop_time, step, options=opts, record=record)

    def columns(names: list[str]) -> np.ndarray:
        return np.column_stack([np.asarray(res[n], float) for n in names]) if names else \
            np.zeros((len(res.time), 0))
    nx, ny = len(plant.states), len(plant.outputs)
    nu = len(plant.inputs)
    return LoopResult(np.asarray(res.time, float), columns(record[:nx]), columns(record[nx:nx + ny]),
                      columns(record[nx + ny:nx + ny + nu]), columns(record[nx + ny + nu:]), cosim=res)


def native_plant_fmu(plant: Plant, folder: str | Path) -> Path:
    """Build the native FMU of library plant ``plant`` with its parameter values, for this platform.

    Parameters
    ----------
    plant : Plant
        A library plant (:func:`mbfmu.load_plant`); its current parameter
        values (SI units) become the FMU's.
    folder : str or Path
        Where ``<plant name>.fmu`` is written (replaced if there).

    Returns
    -------
    Path
        The FMU.
    """
    from ..fmu import build_fmu
    from ..fmu.slave import PLATFORM
    return build_fmu(plant.name, folder, runtime="native", platforms=(PLATFORM,),
                     parameters=dict(plant.parameter_values()), overwrite=True)
