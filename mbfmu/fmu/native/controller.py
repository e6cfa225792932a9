"""Native controller FMUs: :func:`build_controller_fmu`.

A linear controller (state space, discrete or continuous), mbfmu's discrete
PID or a gain-scheduled state feedback (gain tables interpolated at a
scheduling input) becomes an FMI 2.0 or 3.0 co-simulation FMU whose binary is C only. The
controller is evaluated by ``ctrl/controller.c`` (its C API is documented in
``ctrl/controller.h``; a compiled co-simulation loop can run the same
evaluator), the FMU instance and its state machine are
``ctrl/ctrl_component.c``, the FMI interfaces ``ctrl/ctrl_fmi2.c`` and
``ctrl/ctrl_fmi3.c`` over it, and the controller's numbers are generated into
``ctrl_data.c``. The FMU holds::

    modelDescription.xml
    binaries/linux64/<id>.so      (FMI 3: x86_64-linux; win64 / x86_64-windows where mingw-w64
                                  is installed; FMI 3 aarch64-linux where its cross compiler is)
    sources/                      the files of ctrl/ and ctrl_data.c (FMI 3: buildDescription.xml):
                                  cc -shared -fPIC -std=c99 -o <id>.so sources/*.c -lm

This module knows no python-control: :mod:`mbfmu.control.native_export`
turns a python-control design into a :class:`ControllerSpec`.
"""
from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterable, Sequence
from xml.etree.ElementTree import Element, SubElement

import numpy as np

from ... import __version__
from ...errors import InputError
from .. import modeldescription
from ..destination import fmu_destination
from ..units import parse_unit
from . import sources, toolchain
from .fmi3 import PLATFORM_TUPLES

CTRL_DIR = Path(__file__).parent / "ctrl"
DATA_FILE = "ctrl_data.c"
KINDS = {"lti": 1, "pid": 2, "sched": 3, "block": 4, "net": 5, "tape": 6}
MAX_PARAMETERS = 64  # ctrl_fmi2.c checks parameter sets on a fixed array


@dataclass(frozen=True)
class Signal:
    """One controller variable: FMI name, unit symbol ("1": none), start value, description."""

    name: str
    unit: str = "1"
    start: float = 0.0
    description: str = ""


@dataclass
class ControllerSpec:
    """What a native controller FMU computes (see ``ctrl/controller.h``).

    Attributes
    ----------
    name : str
        Model name (a C identifier: the model identifier).
    kind : str
        ``"lti"``, ``"pid"``, ``"sched"``, ``"block"`` (a static block of
        :mod:`mbfmu.cosim.blocks`), ``"net"`` (an interconnection of the
        others) or ``"tape"`` (a traced nonlinear system).
    dt : float
        Sample time [s] of a discrete controller; 0 for a continuous one
        (zero-order hold over the communication step).
    inputs, outputs, states, parameters : list of Signal
        In the evaluator's order (PID: inputs reference, measurement; output
        u; states I, D, s_prev; parameters Kp, Ki, Kd, Tf, Tt, u_min, u_max).
    A, B, C, D : ndarray
        LTI matrices (discrete ones when ``dt > 0``).
    h0 : float
        Continuous LTI: the default communication step [s]; ``Ad0``, ``Bd0``
        are its zero-order-hold matrices computed at build time.
    Ad0, Bd0 : ndarray or None
    on_error : bool
        PID: the derivative acts on the error (else on minus the measurement).
    grid, gains, x_ref, u_ref : ndarray
        Scheduled: the grid (g,) of the scheduling variable, increasing, the
        gains (g, ny, nk) at its points, the target (nk,) of the first nk
        inputs and the outputs u_ref (ny,) there: ``y = u_ref - gain K(s)
        (u[:nk] - x_ref)``.
    sidx : int
        Scheduled: the input that is the scheduling variable (-1: none).
    op, k, k2 : int, ndarray, ndarray
        Block: the operation (``controller.h``'s ``MBC_B_*``) and its gains,
        offsets, limits or signs.
    subs : list of ControllerSpec
        Net: the controllers and blocks, in evaluation order (each one's
        direct-feedthrough inputs come from the net's inputs or earlier
        units); the net's states and parameters are theirs, in order.
    src, out : list of int
        Net: where each sub-unit input (concatenated) and each net output
        comes from: -1 the constant ``su0``, ``j < nu`` the net's input
        ``j``, ``nu + o`` the ``o``-th sub-unit output (concatenated).
    su0 : list of float
        Net: the constant of each sub-unit input whose ``src`` is -1.
    tape : symbolic.Tape or None
        Tape: the expression tape, leaves (t, x, u) (:mod:`mbfmu.control.traced`).
    tout : list of int
        Tape: its nodes of the next state, then of the outputs.
    feedthrough : dict of int to list of int
        Output index -> input indices it depends on directly.
    description : str
        Written into the model description.
    """

    name: str
    kind: str
    dt: float
    inputs: list[Signal]
    outputs: list[Signal]
    states: list[Signal]
    parameters: list[Signal]
    A: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    B: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    C: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    D: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    h0: float = 0.0
    Ad0: np.ndarray | None = None
    Bd0: np.ndarray | None = None
    on_error: bool = False
    grid: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gains: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    x_ref: np.ndarray = field(default_factory=lambda: np.zeros(0))
    u_ref: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sidx: int = -1
    op: int = 0
    k: np.ndarray = field(default_factory=lambda: np.zeros(0))
    k2: np.ndarray = field(default_factory=lambda: np.zeros(0))
    subs: list = field(default_factory=list)
    src: list = field(default_factory=list)
    out: list = field(default_factory=list)
    su0: list = field(default_factory=list)
    tape: Any = None
    tout: list = field(default_factory=list)
    feedthrough: dict[int, list[int]] = field(default_factory=dict)
    description: str = ""


def _c_double(v: float) -> str:
    v = float(v)
    if math.isinf(v):
        return "HUGE_VAL" if v > 0 else "-HUGE_VAL"
    return v.hex()


def _c_array(name: str, values: Iterable[float]) -> str:
    vals = [_c_double(v) for v in values] or ["0"]
    rows = [", ".join(vals[k:k + 4]) for k in range(0, len(vals), 4)]
    return f"static const double {name}[] = {{\n    " + ",\n    ".join(rows) + "\n};\n"


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _check(spec: ControllerSpec) -> None:
    if not spec.name.isidentifier():
        raise InputError(f"controller name {spec.name!r} must be a C identifier")
    if len(spec.parameters) > MAX_PARAMETERS:
        raise InputError(f"controller {spec.name!r}: {len(spec.parameters)} parameters, at most {MAX_PARAMETERS}")
    _check_numbers(spec)
    names = [s.name for s in spec.inputs + spec.outputs + spec.states + spec.parameters]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"controller {spec.name!r}: variable names used twice: {dup}")


def _check_numbers(spec: ControllerSpec) -> None:
    """What the evaluator needs of a spec (of a net's sub-units too)."""
    if spec.kind not in KINDS:
        raise InputError(f"controller kind {spec.kind!r}: the native runtime has {', '.join(KINDS)}")
    if not (spec.dt >= 0 and math.isfinite(spec.dt)):
        raise InputError(f"controller {spec.name!r}: sample time {spec.dt!r} s must be >= 0 and finite")
    nx, nu, ny = len(spec.states), len(spec.inputs), len(spec.outputs)
    if spec.kind == "lti":
        for k, shape in (("A", (nx, nx)), ("B", (nx, nu)), ("C", (ny, nx)), ("D", (ny, nu))):
            M = np.asarray(getattr(spec, k), float)
            if M.shape != shape or not np.all(np.isfinite(M)):
                raise InputError(f"controller {spec.name!r}: matrix {k} must be {shape[0]}x{shape[1]} finite values")
        if spec.dt == 0 and not spec.h0 > 0 and nx:
            raise InputError(f"controller {spec.name!r} is continuous: give its default step h0 [s]")
    elif spec.kind == "sched":
        _check_schedule(spec)
    elif spec.kind == "block":
        if nx or spec.parameters or spec.dt or any(np.any(np.isnan(a)) for a in (spec.k, spec.k2)):
            raise InputError(f"block {spec.name!r}: a block has no states, no parameters, no sample time")
    elif spec.kind == "net":
        _check_net(spec)
    elif spec.kind == "tape":
        leaves = sum(1 for n in spec.tape.nodes if n[0] == 1) if spec.tape is not None else -1  # PARAM nodes
        if leaves != 1 + nx + nu or len(spec.tout) != nx + ny or spec.parameters or spec.dt <= 0:
            raise InputError(f"controller {spec.name!r}: a traced system has a tape of (t, x, u), its nodes of "
                             "the next state and the outputs, no parameters and dt > 0")
    elif (nu, ny, nx, len(spec.parameters)) != (2, 1, 3, 7) or spec.dt <= 0:
        raise InputError(f"controller {spec.name!r}: a PID has 2 inputs, 1 output, 3 states, 7 parameters and dt > 0")
    for s in spec.inputs + spec.states + spec.parameters:
        if not math.isfinite(s.start):
            raise InputError(f"controller {spec.name!r}: start value of {s.name!r} must be finite")


def _check_net(spec: ControllerSpec) -> None:
    for sub in spec.subs:
        _check_numbers(sub)
    n_in = sum(len(s.inputs) for s in spec.subs)
    n_sig = len(spec.inputs) + sum(len(s.outputs) for s in spec.subs)
    bad = None
    if [s.start for s in spec.states] != [x.start for sub in spec.subs for x in sub.states] or \
            [p.start for p in spec.parameters] != [p.start for sub in spec.subs for p in sub.parameters]:
        bad = "its states and parameters are not its units' in order"
    elif len(spec.src) != n_in or len(spec.su0) != n_in or len(spec.out) != len(spec.outputs):
        bad = f"{len(spec.src)} sources for {n_in} unit inputs, {len(spec.out)} for {len(spec.outputs)} outputs"
    elif not all(-1 <= j < n_sig for j in spec.src) or not all(0 <= j < n_sig for j in spec.out):
        bad = "a source is not an input or a unit's output"
    elif not all(math.isfinite(v) for v in spec.su0):
        bad = "the constant inputs must be finite"
    if bad:
        raise InputError(f"controller {spec.name!r}: {bad}")


def _check_schedule(spec: ControllerSpec) -> None:
    K, grid = np.asarray(spec.gains, float), np.asarray(spec.grid, float)
    nu, ny = len(spec.inputs), len(spec.outputs)
    bad = None
    if K.ndim != 3 or grid.shape != (K.shape[0],) or K.shape[0] < 1 or K.shape[1] != ny:
        bad = f"gains {K.shape} do not fit {grid.size} grid points and {ny} outputs"
    elif nu - K.shape[2] not in (0, 1) or not -1 <= spec.sidx < nu:
        bad = f"{nu} inputs do not fit gains of {K.shape[2]} columns and scheduling input {spec.sidx}"
    elif np.shape(spec.x_ref) != (K.shape[2],) or np.shape(spec.u_ref) != (ny,):
        bad = f"x_ref {np.shape(spec.x_ref)} and u_ref {np.shape(spec.u_ref)} do not fit the gains {K.shape}"
    elif not all(np.all(np.isfinite(a)) for a in (K, grid, spec.x_ref, spec.u_ref)):
        bad = "grid, gains, x_ref and u_ref must be finite"
    elif np.any(np.diff(grid) <= 0):
        bad = "the grid must increase"
    elif spec.states or len(spec.parameters) != 1 or spec.dt <= 0:
        bad = "a scheduled controller has no states, one parameter (its gain) and dt > 0"
    if bad:
        raise InputError(f"controller {spec.name!r}: {bad}")


def _desc_source(spec: ControllerSpec, prefix: str) -> str:
    """C text defining ``static const mbc_desc <prefix>DESC`` and the arrays it points to."""
    flat = lambda M: np.asarray(M, float).reshape(-1)  # noqa: E731 (row-major)
    lti, sched, block, net = (spec.kind == k for k in ("lti", "sched", "block", "net"))
    has_zoh = lti and spec.dt == 0 and spec.Ad0 is not None
    P = prefix
    parts = [_desc_source(sub, f"{P}S{i}_") for i, sub in enumerate(spec.subs if net else [])]
    if net:
        ints = lambda name, v: (f"static const int {name}[] = {{" + ", ".join(map(str, v or [0])) + "};\n")  # noqa: E731
        parts += ["static const mbc_desc *const " + P + "SUBS[] = {" +
                  ", ".join(f"&{P}S{i}_DESC" for i in range(len(spec.subs))) + "};\n",
                  ints(P + "SRC", spec.src), ints(P + "OUT", spec.out), _c_array(P + "SU0", spec.su0)]
    tape_fields = ""
    if spec.kind == "tape":
        from .build import _c_array as typed_array, _c_string as c_string
        from .tape import tape_source
        n_out = len(spec.tout)
        text, _ = tape_source(SimpleNamespace(tape=spec.tape, out_d=np.arange(n_out), out_node=np.array(spec.tout)),
                              typed_array, _c_double, c_string)
        parts.append(text)
        tape_fields = "    .tape = &TAPE, .tout = TP_OUT_N,\n"
    parts += [
        _c_array(P + "A", flat(spec.A) if lti else []), _c_array(P + "B", flat(spec.B) if lti else []),
        _c_array(P + "C", flat(spec.C) if lti else []), _c_array(P + "D", flat(spec.D) if lti else []),
        _c_array(P + "AD0", flat(spec.Ad0)) + _c_array(P + "BD0", flat(spec.Bd0)) if has_zoh else "",
        _c_array(P + "X0", [s.start for s in spec.states]), _c_array(P + "P0", [s.start for s in spec.parameters]),
        _c_array(P + "GRID", flat(spec.grid) if sched else []), _c_array(P + "KS", flat(spec.gains) if sched else []),
        _c_array(P + "XR", flat(spec.x_ref) if sched else []), _c_array(P + "UR", flat(spec.u_ref) if sched else []),
        _c_array(P + "K1", flat(spec.k) if block else []), _c_array(P + "K2", flat(spec.k2) if block else []),
        f"static const mbc_desc {P}DESC = {{\n"
        f"    .kind = {KINDS[spec.kind]}, .nx = {len(spec.states)}, .nu = {len(spec.inputs)}, "
        f".ny = {len(spec.outputs)}, .np = {len(spec.parameters)},\n"
        f"    .dt = {_c_double(spec.dt)}, .A = {P}A, .B = {P}B, .C = {P}C, .D = {P}D,\n"
        f"    .h0 = {_c_double(spec.h0 if has_zoh else 0.0)}, .Ad0 = {P + 'AD0' if has_zoh else 'NULL'}, "
        f".Bd0 = {P + 'BD0' if has_zoh else 'NULL'},\n"
        f"    .x0 = {P}X0, .p0 = {P}P0, .on_error = {int(spec.on_error)},\n"
        f"    .ng = {np.shape(spec.grid)[0] if sched else 0}, "
        f".nk = {np.shape(spec.gains)[2] if sched else 0}, .sidx = {int(spec.sidx) if sched else -1},\n"
        f"    .grid = {P}GRID, .K = {P}KS, .xr = {P}XR, .ur = {P}UR,\n"
        f"    .op = {int(spec.op) if block else 0}, .k = {P}K1, .k2 = {P}K2,\n"
        + (f"    .nsub = {len(spec.subs)}, .sub = {P}SUBS, .src = {P}SRC, .su0 = {P}SU0, .out = {P}OUT,\n"
           if net else "") + tape_fields + "};\n",
    ]
    return "\n".join(p for p in parts if p)


def data_source(spec: ControllerSpec, guid: str, scheduled: bool = False) -> str:
    """The C text of ``ctrl_data.c``: ``MBC_FMU`` for this controller (``scheduled``:
    FMI 3 Scheduled Execution)."""
    names = [s.name for s in spec.inputs + spec.outputs + spec.states + spec.parameters]
    parts = [
        f"/* controller {spec.name!r}: data of an mbfmu native controller FMU, generated by mbfmu {__version__}; "
        "do not edit. */\n#include <math.h>\n#include <stddef.h>\n#include \"ctrl_fmu.h\"\n\n",
        _desc_source(spec, ""),
        _c_array("U0", [s.start for s in spec.inputs]),
        "static const char *const NAMES[] = {\n    " + ",\n    ".join(_c_string(n) for n in names) + "\n};\n",
        f"const mbc_fmu MBC_FMU = {{\n    .model = {_c_string(spec.name)}, .guid = {_c_string(guid)}, .desc = &DESC, "
        f".u0 = U0, .names = NAMES, .scheduled = {int(scheduled)},\n}};\n",
    ]
    return "\n".join(parts)


def runtime_files() -> list[Path]:
    """The C files every native controller FMU compiles (its data file aside), sorted by
    name: ``ctrl/``, the expression tape's evaluator and the glibc baseline it is built
    with; then the FMI headers with their license (:func:`.toolchain.fmi_files`)."""
    shared = [CTRL_DIR.parent / "csrc" / "tape.c", CTRL_DIR.parent / "csrc" / "tape.h",
              CTRL_DIR.parents[2] / "dynamics" / "csrc" / "glibc_baseline.h"]
    own = sorted([p for p in CTRL_DIR.iterdir() if p.suffix in (".c", ".h")] + shared, key=lambda p: p.name)
    return own + toolchain.fmi_files()


def _real(parent: Element, sig: Signal, start: bool) -> None:
    attrs = {}
    if sig.unit and sig.unit != "1":
        attrs["unit"] = sig.unit
    if start:
        attrs["start"] = repr(float(sig.start))
    SubElement(parent, "Real", attrs)


def description_xml(spec: ControllerSpec, guid: str, units: Sequence[str], fmi_version: int = 2,
                    scheduled: bool = False) -> Element:
    """The ``modelDescription.xml`` of the controller (its root element), FMI 2.0 or 3.0.

    FMI 2 value references are the evaluator's scalar indices; FMI 3's are
    those plus 1 (0 is the time), with flat naming (FMI 3's structured
    names would read ``u[1]`` as an array element). ``scheduled``: FMI 3
    Scheduled Execution, with one periodic input clock ``sample`` at the
    sample time (the last value reference) that the outputs and states
    are clocked by.
    """
    discrete = spec.dt > 0
    step = spec.dt if discrete else spec.h0
    three = fmi_version == 3
    ident = dict(instantiationToken=guid) if three else dict(guid=guid)
    root = Element("fmiModelDescription", fmiVersion="3.0" if three else "2.0", modelName=spec.name, **ident,
                   description=spec.description, generationTool=f"mbfmu {__version__} (native controller)",
                   variableNamingConvention="flat" if three else "structured")
    if not three:
        root.set("numberOfEventIndicators", "0")
    flags = dict(modelIdentifier=spec.name, canHandleVariableCommunicationStepSize="true")
    if three:
        flags.update(canGetAndSetFMUState="true", canSerializeFMUState="true", providesDirectionalDerivatives="false",
                     providesAdjointDerivatives="false")
        if scheduled:
            del flags["canHandleVariableCommunicationStepSize"]
        else:
            flags.update(hasEventMode="false", providesIntermediateUpdate="false",
                         canReturnEarlyAfterIntermediateUpdate="false")
    else:
        flags.update(needsExecutionTool="false", canInterpolateInputs="false",
                     canBeInstantiatedOnlyOncePerProcess="false", canGetAndSetFMUstate="true",
                     canSerializeFMUstate="true", canNotUseMemoryManagementFunctions="true",
                     providesDirectionalDerivative="false")
    cs = SubElement(root, "ScheduledExecution" if scheduled else "CoSimulation", flags)
    if not three:
        files = SubElement(cs, "SourceFiles")
        for name in units:
            SubElement(files, "File", name=name)
    signals = spec.inputs + spec.outputs + spec.states + spec.parameters
    used = list(dict.fromkeys(s.unit for s in signals if s.unit and s.unit != "1"))
    if used:
        ud = SubElement(root, "UnitDefinitions")
        for name in used:
            u = SubElement(ud, "Unit", name=name)
            attrs = parse_unit(name).base_unit_attributes()
            if attrs is not None:
                SubElement(u, "BaseUnit", attrs)
    cats = SubElement(root, "LogCategories")
    for cat in ("logStatusWarning", "logStatusError"):
        SubElement(cats, "Category", name=cat)
    experiment = SubElement(root, "DefaultExperiment", startTime="0.0")
    if step > 0:
        experiment.set("stepSize", repr(float(step)))
    mv = SubElement(root, "ModelVariables")
    first = 1 if three else 0
    if three:
        SubElement(mv, "Float64", name="time", valueReference="0", causality="independent", variability="continuous",
                   description="simulation time, s")
    vr = first
    clock_vr = first + len(spec.inputs + spec.outputs + spec.states + spec.parameters)
    state_var = "discrete" if discrete else "continuous"
    for group, causality, variability in ((spec.inputs, "input", "continuous"),
                                          (spec.outputs, "output", "continuous"),
                                          (spec.states, "local", state_var),
                                          (spec.parameters, "parameter", "tunable")):
        for s in group:
            attrs = dict(name=s.name, valueReference=str(vr), causality=causality, variability=variability)
            if causality == "local":
                attrs["initial"] = "exact"
            if s.description:
                attrs["description"] = s.description
            if three:
                if s.unit and s.unit != "1":
                    attrs["unit"] = s.unit
                if causality != "output":
                    attrs["start"] = repr(float(s.start))
                if scheduled and causality in ("output", "local"):
                    attrs.update(variability="discrete", clocks=str(clock_vr))
                SubElement(mv, "Float64", attrs)
            else:
                _real(SubElement(mv, "ScalarVariable", attrs), s, start=causality != "output")
            vr += 1
    if scheduled:
        SubElement(mv, "Clock", name="sample", valueReference=str(clock_vr), causality="input",
                   intervalVariability="constant", intervalDecimal=repr(float(spec.dt)), priority="0",
                   description="the controller's sample clock: each tick is one sample")
    ms = SubElement(root, "ModelStructure")
    nu = len(spec.inputs)
    outputs = range(nu + first, nu + first + len(spec.outputs))
    deps = [" ".join(str(j + first if three else j + 1) for j in sorted(spec.feedthrough.get(i, [])))
            for i in range(len(spec.outputs))]
    if scheduled:
        deps = [" ".join(filter(None, [str(clock_vr), d])) for d in deps]
    if three:
        for ref, d in zip(outputs, deps):
            SubElement(ms, "Output", valueReference=str(ref), dependencies=d)
        for ref in outputs if not scheduled else ():  # clocked outputs are no initial unknowns
            SubElement(ms, "InitialUnknown", valueReference=str(ref))
    elif spec.outputs:
        outs, init = SubElement(ms, "Outputs"), SubElement(ms, "InitialUnknowns")
        for ref, d in zip(outputs, deps):
            SubElement(outs, "Unknown", index=str(ref + 1), dependencies=d)
            SubElement(init, "Unknown", index=str(ref + 1))
    return root


def build_controller_fmu(spec: ControllerSpec, dest: str | Path = "fmus",
                         platforms: Iterable[str] | None = None, fmi_version: int = 2,
                         scheduled: bool = False, overwrite: bool = False) -> Path:
    """Build the native co-simulation FMU (FMI 2.0 or 3.0) of a controller.

    Parameters
    ----------
    spec : ControllerSpec
        What the controller computes, its variables and units.
    dest : str or Path
        Folder for ``<name>.fmu``, or the ``.fmu`` file.
    platforms : iterable of str, optional
        FMU platforms to compile (default ``linux64``, and ``win64`` where
        mingw-w64 is installed).
    fmi_version : {2, 3}
        FMI 2.0 or FMI 3.0 co-simulation (the same binary serves both; the
        sources differ only in ``ctrl_data.c``, FMI 3 adds
        ``sources/buildDescription.xml``).
    scheduled : bool
        FMI 3.0 Scheduled Execution instead of co-simulation (a discrete
        controller only): one periodic input clock at the sample time,
        each activation one sample.
    overwrite : bool
        Replace an existing FMU file (default: refuse it by name).

    Returns
    -------
    Path
        The FMU file.

    Raises
    ------
    InputError
        An inconsistent spec, or the FMU file exists and ``overwrite`` is false.
    ModelError
        A platform has no toolchain, or compilation failed.
    """
    _check(spec)
    if fmi_version not in (2, 3):
        raise InputError(f"FMI version {fmi_version!r}: a native controller FMU is FMI 2 or 3")
    if scheduled and (fmi_version != 3 or spec.dt <= 0):
        raise InputError(f"controller {spec.name!r}: Scheduled Execution is FMI 3 (fmi_version=3) and needs a "
                         "discrete controller (its sample time is the clock's interval)")
    if platforms is None:
        platforms = ("linux64",) + (("win64",) if toolchain.available("win64") else ()) \
            + (toolchain.default_cross_platforms(fmi_version))
    platforms = tuple(dict.fromkeys(platforms))
    if not platforms:
        raise InputError("a native controller FMU needs at least one platform (linux64, win64)")
    if fmi_version == 2 and toolchain.FMI3_ONLY.intersection(platforms):
        raise InputError(f"platform {sorted(toolchain.FMI3_ONLY.intersection(platforms))[0]} is FMI 3 only: build "
                         "with fmi_version=3")
    for platform in platforms:
        toolchain.compiler(platform)
    digest = hashlib.sha256(data_source(spec, "", scheduled).encode()).hexdigest()
    guid = "{%s}" % uuid.uuid5(uuid.NAMESPACE_URL, f"mbfmu-controller:{spec.name}:{digest}")
    text = data_source(spec, guid, scheduled)
    fmu_path = fmu_destination(dest, spec.name, overwrite)
    with tempfile.TemporaryDirectory(prefix="mbfmu_ctrl_") as tmp:
        root = Path(tmp)
        src = root / "sources"
        src.mkdir()
        units = []
        for path in runtime_files():
            shutil.copyfile(path, src / path.name)
            if path.suffix == ".c":
                units.append(path.name)
        (src / DATA_FILE).write_text(text)
        units.append(DATA_FILE)
        xml = description_xml(spec, guid, units, fmi_version, scheduled)
        if fmi_version == 3:
            (src / sources.BUILD_DESCRIPTION).write_bytes(sources.build_description(spec.name, units))
        binaries = {}
        for platform in platforms:
            suffix = toolchain.PLATFORMS[platform][1]
            out = root / f"{spec.name}_{platform}{suffix}"
            toolchain.compile_binary(platform, src, units, out)
            folder = PLATFORM_TUPLES[platform] if fmi_version == 3 else platform
            binaries[f"binaries/{folder}/{spec.name}{suffix}"] = out
        part = fmu_path.with_suffix(".fmu.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("modelDescription.xml", modeldescription.to_bytes(xml))
            for name, path in binaries.items():
                z.write(path, name)
            for path in sorted(src.iterdir()):
                z.write(path, f"sources/{path.name}")
        os.replace(part, fmu_path)
    return fmu_path
