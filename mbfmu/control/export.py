"""Exporting a python-control system as an FMI 2.0 co-simulation FMU: :func:`export_fmu`.

The FMU is built by :func:`mbfmu.fmu.build_fmu` like any plant's: it carries
the system's spec (``resources/mbfmu_system_<name>.json``: matrices, signal
names, sample time, see :mod:`mbfmu.control.system_plant`) and a short
model file whose plant class (:class:`~mbfmu.control.system_plant.LinearSystemPlant`
or :class:`~mbfmu.control.system_plant.ReferencedSystemPlant`) loads it.

Signal names become FMI names (:func:`fmi_names`): a python-control label
that is already a valid FMI name is kept; 0-based vector labels
(python-control's defaults ``u[0], u[1]``) become FMI's 1-based structured
names (``u[1], u[2]``); other characters become ``_``; clashes get ``_2``,
``_3``. The mapping is in the spec (``label`` of every signal) and in the
description of every FMU variable.
"""
from __future__ import annotations

import hashlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import control
import numpy as np

from .. import __version__
from ..errors import InputError
from ..fmu import embed
from ..fmu.builder import build_fmu, identifier
from ..fmu.plantref import PlantRef
from ..cosim.units import system_units
from ..plant.signals import fmi_names as fmi_names  # re-exported: the module docstring names it here
from .signal_layout import signal_layout
from .system_plant import SPEC_FORMAT, SPEC_VERSION, plant_from_spec, rebuild
from .system_reference import known_reference, same_system


MODEL_TEMPLATE = '''"""python-control system {name!r}, exported by mbfmu {version}; do not edit.

Written by mbfmu.control.export_fmu. The system is in {json_name} next to
this file (sha256 {sha}).
"""
from pathlib import Path

from mbfmu.control.system_plant import {base}, load_spec
{factory_import}

class ExportedSystem({base}):
    spec_path = Path(__file__).with_name({json_name!r})
    default_spec = load_spec(spec_path, sha256={sha!r})
'''


def _entries(labels: Sequence[str], names: Sequence[str], units: Mapping[str, str],
             starts: Sequence[float]) -> list[dict[str, Any]]:
    return [{"name": n, "label": l, "unit": units.get(l, "1"), "start": float(s)}
            for l, n, s in zip(labels, names, starts)]


def _sample_time(sys: Any, step: float | None) -> tuple[Any, float, dict[str, Any]]:
    """(discrete system, dt, origin) for a linear or nonlinear system."""
    if step is not None and not (isinstance(step, (int, float)) and step > 0 and math.isfinite(step)):
        raise InputError(f"step {step!r} must be a positive finite number of seconds")
    if sys.isctime(strict=True):
        if step is None:
            raise InputError(f"system {sys.name!r} is continuous-time: give the sample time `step` [s] to "
                             "discretize it with zero-order hold")
        if not isinstance(sys, control.StateSpace):
            raise InputError(f"system {sys.name!r} is a continuous-time nonlinear system: it cannot be exported "
                             "(export a discrete-time system, or its linearization)")
        return control.c2d(sys, float(step), method="zoh"), float(step), {"continuous": True, "method": "zoh"}
    if sys.dt is True or sys.dt is None:
        if step is None:
            raise InputError(f"system {sys.name!r} is discrete with an unspecified sample time (dt=True): give `step`")
        return sys, float(step), {"continuous": False, "dt_given": True}
    if step is not None and not math.isclose(float(step), float(sys.dt), rel_tol=1e-12):
        raise InputError(f"system {sys.name!r} is discrete with dt = {sys.dt} s; it cannot run at step {step} s")
    return sys, float(sys.dt), {"continuous": False}


def system_spec(sys: Any, step: float | None = None, name: str | None = None, x0: Sequence[float] | None = None,
                units: Mapping[str, str] | None = None, inputs_start: Mapping[str, float] | None = None,
                reference: tuple[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON-able spec of a system (see :mod:`mbfmu.control.system_plant`).

    Parameters are those of :func:`export_fmu`.
    """
    if isinstance(sys, control.TransferFunction):
        sys = control.ss(sys)
    if not isinstance(sys, control.InputOutputSystem):
        raise InputError(f"cannot export {type(sys).__name__}: expected a python-control StateSpace, "
                         "TransferFunction or NonlinearIOSystem")
    linear = isinstance(sys, control.StateSpace)
    dsys, dt, origin = _sample_time(sys, step)
    units = system_units(sys, units)
    inputs_start = dict(inputs_start or {})
    layout = signal_layout(sys, x0)
    ins, outs, states, x0 = layout.inputs, layout.outputs, layout.states, layout.x0
    in_names, out_names = layout.input_names, layout.output_names
    spec: dict[str, Any] = {
        "format": SPEC_FORMAT, "version": SPEC_VERSION,
        "name": identifier(name or sys.name or "system"),
        "dt": dt,
        "inputs": _entries(ins, in_names, units, [inputs_start.get(l, 0.0) for l in ins]),
        "outputs": _entries(outs, out_names, units, [0.0] * len(outs)),
        "states": _entries(states, layout.state_names, units, x0),
        "origin": {**origin, "python_control": control.__version__, "mbfmu": __version__},
    }
    if linear:
        if reference is not None:
            raise InputError("a linear system is exported from its matrices; `reference` is for nonlinear systems")
        spec["kind"] = "linear"
        for k in "ABCD":
            M = np.asarray(getattr(dsys, k), dtype=float)
            if not np.all(np.isfinite(M)):
                raise InputError(f"system {sys.name!r}: matrix {k} is not finite")
            spec[k] = M.tolist()
        return spec
    if reference is None:
        reference = known_reference(sys)
    if reference is None:
        raise InputError(
            f"system {sys.name!r} is a NonlinearIOSystem: its update and output functions are Python code that "
            "cannot be written into an FMU. Give reference=('module:function', kwargs) that rebuilds it where the "
            "FMU runs, or export a linear system (e.g. sys.linearize(x0, u0), or .linear() of mbfmu.control.pid)")
    factory, kwargs = reference[0], dict(reference[1])
    if str(factory).partition(":")[0] == "__main__":
        raise InputError(f"reference {factory!r}: a factory defined in __main__ (a script or notebook) cannot be "
                         "imported where the FMU runs; move it to a module file (the FMU then carries that file)")
    try:
        json.dumps(kwargs, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise InputError(f"reference {factory!r}: its keyword arguments must be JSON-able: {exc}") from None
    _check_rebuilds(sys, factory, kwargs)
    spec["kind"] = "reference"
    spec["factory"], spec["kwargs"] = factory, kwargs
    ft = {o: ins for o in outs} if getattr(sys, "outfcn", True) is not None else {}
    by_label = dict(zip(ins, in_names))
    spec["feedthrough"] = {n: [by_label[i] for i in ft.get(o, [])] for o, n in zip(outs, out_names)}
    return spec


def _check_rebuilds(sys: Any, factory: str, kwargs: Mapping[str, Any]) -> None:
    """Raise unless ``factory(**kwargs)`` has the labels of ``sys`` and the same
    update and output functions at random points."""
    try:
        other = rebuild(factory, kwargs)
    except Exception as exc:
        raise InputError(f"reference {factory!r} with {kwargs} does not rebuild the system: "
                         f"{type(exc).__name__}: {exc}") from exc
    if not same_system(sys, other):
        raise InputError(f"reference {factory!r} with {kwargs} builds a different system than {sys.name!r}")


def _export_native(sys: Any, dest: str | Path, name: str | None, *, step: float | None,
                   x0: Sequence[float] | None, units: Mapping[str, str] | None,
                   inputs_start: Mapping[str, float] | None, platforms: Sequence[str] | None, fmi_version: int,
                   scheduled: bool, overwrite: bool) -> Path:
    """A native (C only) controller FMU of a python-control system
    (:func:`mbfmu.control.native_export.native_spec`) or of a System of controllers
    and blocks (:func:`mbfmu.control.native_system.interconnection_spec`); the
    parameters are :func:`export_fmu`'s."""
    from ..cosim.system import System
    from ..fmu.native.controller import build_controller_fmu
    from .native_export import native_spec
    from .native_system import interconnection_spec
    if isinstance(sys, System):
        if x0 is not None or inputs_start:
            raise InputError("x0 and inputs_start are for one python-control system: give an interconnection's "
                             "units their initial states and input values")
        spec = interconnection_spec(sys, name, step, dict(units or {}))
    else:
        spec = native_spec(sys, step, name, x0, units, inputs_start)
    return build_controller_fmu(spec, dest, platforms, fmi_version, scheduled, overwrite)


def export_fmu(sys: Any, dest: str | Path = "fmus", name: str | None = None, *, step: float | None = None,
               x0: Sequence[float] | None = None, units: Mapping[str, str] | None = None,
               inputs_start: Mapping[str, float] | None = None,
               reference: tuple[str, Mapping[str, Any]] | None = None, overwrite: bool = False,
               runtime: str = "python", platforms: Sequence[str] | None = None, fmi: int = 2,
               scheduled: bool = False) -> Path:
    """Export a python-control system as an FMI 2.0 co-simulation FMU.

    With ``runtime="native"`` the FMU is C only (no Python where it runs;
    :mod:`mbfmu.control.native_export`): a ``StateSpace`` or
    ``TransferFunction``, discrete or continuous (held exactly over any
    communication step, ``step`` being the default one), a PID of
    :func:`mbfmu.control.pid`, a scheduled controller of
    :func:`mbfmu.control.schedule`, a discrete ``NonlinearIOSystem`` that
    traces through the expression tape (:mod:`mbfmu.control.traced`), or a
    :class:`~mbfmu.cosim.System` of these and the blocks, as one FMU
    (:mod:`mbfmu.control.native_system`).

    The FMU steps like :class:`mbfmu.cosim.units.ControlUnit` runs the same
    system, so swapping one for the other in a co-simulation gives the same
    result: each communication step is one sample (it must equal the sample
    time; another step size is refused with an FMI error status), inputs held
    over the step, ``x[k+1] = A x[k] + B u[k]``, outputs ``C x + D u`` from the
    current inputs (``ModelStructure`` declares the nonzero columns of ``D``
    as direct feedthrough).

    Parameters
    ----------
    sys : control.StateSpace, control.TransferFunction or control.NonlinearIOSystem
        Discrete-time with a numeric ``dt``, or continuous-time linear
        (discretized with zero-order hold at ``step``, like ``ControlUnit``),
        or discrete with ``dt=True`` (runs at ``step``).
    dest : str or Path
        Folder for ``<name>.fmu``, or the ``.fmu`` file.
    name : str, optional
        Model name (default ``sys.name``), made a C identifier.
    step : float, optional
        Sample time [s] for continuous systems and ``dt=True``; must equal
        ``dt`` for other discrete systems.
    x0 : array_like, optional
        Initial state (default zeros).
    units : mapping or Plant, optional
        Unit symbol per python-control signal label, or the plant the
        system was designed for (its signals' units by name;
        :func:`mbfmu.cosim.units.system_units`). Default: the design's own
        ``sys.signal_units`` (:func:`mbfmu.control.linearize` and the
        controllers designed on its model carry them), else ``"1"``.
    inputs_start : mapping, optional
        Start values of inputs by label (default 0).
    reference : (str, mapping), optional
        For a ``NonlinearIOSystem`` only: ``("module:function", kwargs)``
        that rebuilds it where the FMU runs (checked here on random states
        and inputs). A factory in the user's own module travels inside the
        FMU with the user modules it imports; one defined in ``__main__``
        is refused. Systems of :func:`mbfmu.control.pid` are recognized
        without it. Any other nonlinear system is refused
        (:class:`~mbfmu.errors.InputError`): its Python functions cannot be
        serialized generically; export its linearization instead.
    overwrite : bool
        Replace an existing FMU file (default: refuse it by name).
    runtime : {"python", "native"}
        ``"python"`` (default): a pythonfmu FMU running this module's
        plant; ``"native"``: a C-only FMU (linux64, and win64 where
        mingw-w64 is installed, with its ``sources/``).
    platforms : sequence of str, optional
        Native runtime only: the platforms to compile.
    fmi : {2, 3}
        FMI version; 3 (FMI 3.0 co-simulation) with the native runtime only.
    scheduled : bool
        Native runtime, ``fmi=3``, discrete systems: FMI 3.0 Scheduled
        Execution instead of co-simulation (one periodic input clock at
        ``dt``; each activation of its model partition is one sample).

    Returns
    -------
    Path
        The FMU file. Its variables are the system's inputs and outputs
        under their FMI names (:func:`fmi_names`) and its states as
        ``states.<name>``.

    Raises
    ------
    InputError
        Unsupported system, missing or inconsistent ``step``, bad ``x0``, or
        the FMU file exists.
    """
    if runtime not in ("python", "native"):
        raise InputError(f"runtime {runtime!r}: choose 'python' (pythonfmu) or 'native' (C only)")
    if runtime == "native":
        if reference is not None:
            raise InputError("reference is for the python runtime: the native runtime exports a controller from "
                             "its numbers (matrices, gains, tables, traced expressions)")
        return _export_native(sys, dest, name, step=step, x0=x0, units=units, inputs_start=inputs_start,
                              platforms=platforms, fmi_version=fmi, scheduled=scheduled, overwrite=overwrite)
    from ..cosim.system import System
    if isinstance(sys, System):
        raise InputError("an interconnection of controllers and blocks (a System) exports with runtime='native'")
    if fmi != 2 or scheduled:
        raise InputError(f"fmi={fmi!r}, scheduled={scheduled!r}: the python runtime writes FMI 2.0 co-simulation; "
                         "FMI 3.0 and Scheduled Execution need runtime='native'")
    if platforms is not None:
        raise InputError("platforms is for the native runtime (runtime='native')")
    spec = system_spec(sys, step, name, x0, units, inputs_start, reference)
    plant_from_spec(spec)  # refuses what the FMU could not load
    stem = spec["name"]
    text = json.dumps(spec, indent=1) + "\n"
    sha = hashlib.sha256(text.encode()).hexdigest()
    json_name = f"mbfmu_system_{stem}.json"
    base = "LinearSystemPlant" if spec["kind"] == "linear" else "ReferencedSystemPlant"
    factory_module = spec.get("factory", "").partition(":")[0]
    # a user module's factory is imported by the model file, so the FMU embeds it (mbfmu.fmu.embed)
    factory_import = (f"import {factory_module}  # noqa: F401  (the system factory travels with the FMU)\n"
                      if factory_module and embed.is_user_module(factory_module) else "")
    with tempfile.TemporaryDirectory(prefix="mbfmu_export_") as tmp:
        folder = Path(tmp)
        (folder / json_name).write_text(text)
        model = folder / f"{stem}.py"
        model.write_text(MODEL_TEMPLATE.format(name=stem, version=__version__, json_name=json_name, sha=sha,
                                               base=base, factory_import=factory_import))
        return build_fmu(PlantRef("file", str(model)), dest, resources={json_name: folder / json_name},
                         overwrite=overwrite)
