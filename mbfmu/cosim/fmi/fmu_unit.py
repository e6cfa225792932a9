"""The FMU unit: any FMI 2.0 or 3.0 co-simulation FMU, run through fmpy.

One class runs both versions: what differs between them (the get/set call of
each type, the calls' shapes, input derivatives, how a stop is requested,
fmpy's spellings) is a field of the version's
:class:`~mbfmu.cosim.fmi.fmi_versions.FmiVersion`. ``FmuUnit(path)`` opens an
FMI 3.0 co-simulation FMU as a :class:`~mbfmu.cosim.fmi.fmu3_unit.Fmu3Unit`
(this class pinned to FMI 3.0), an FMI 3.0 FMU with Scheduled Execution only
as a :class:`~mbfmu.cosim.fmi.fmu3_scheduled.Fmu3ScheduledUnit`, and an FMI
3.0 co-simulation FMU with clocks as a
:class:`~mbfmu.cosim.fmi.fmu3_events.Fmu3EventUnit` (event mode).

Names are resolved to value references once; the hot path (:meth:`FmuUnit.push`,
:meth:`FmuUnit.pull`, :meth:`FmuUnit.do_step`) calls the FMU's C functions
directly with pre-allocated ctypes arrays, one call per value type, checking
each status. A failing call raises :class:`~mbfmu.errors.CosimError` naming
the unit, the time and the FMU's own log messages.

FMI 3.0 types map onto the four master types: Float32/Float64 are Real, the
eight integer types and Enumeration are Integer, Boolean and String keep their
names. Arrays are split into scalar variables named ``x[1]``, ``A[2,1]``
(1-based, row major) and exchanged as whole arrays. Binary variables are left
out (listed in ``skipped``). An FMI 3.0 request to stop (``terminateSimulation``
out of ``fmi3DoStep``) keeps the step that asked (its outputs are read and
recorded) and ends the run at the next step with
:class:`~mbfmu.errors.StopRequested`; an FMI 2.0 one (``fmi2Discard`` and
``fmi2Terminated``) ends it at the step that asked.
"""
from __future__ import annotations

import collections
import ctypes
import logging
import re
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ...errors import CosimError, InputError, StopRequested
from ...untrusted.archive import open_zip
from .fmi_versions import (FMI2, FMI2_TERMINATED, FmiVersion, ValueType, element_names, log_line, parse_start,
                           release_log)
from .fmu_files import extract_shared, read_checked
from ..typed import string_code
from ..units import Unit, Variable

_LOG = logging.getLogger("mbfmu.cosim")


LOG_LINES_SHOWN = 10  # last log lines of a unit quoted in an error message


def _status_error(unit: "Unit", what: str, status: int, t: float | None = None) -> CosimError:
    label = {1: "warning", 2: "discard", 3: "error", 4: "fatal", 5: "pending"}.get(status, str(status))
    at = "" if t is None else f" at t = {t!r} s"
    if status == 4:  # fatal: no further call on this instance (see FmuUnit.terminate)
        unit._fatal = True
    log = unit.log_text(LOG_LINES_SHOWN)
    return CosimError(f"unit {unit.name!r}: {what} returned {label}{at}" + (f"; last unit log lines:\n{log}" if log else "; the unit logged nothing"))


def _fmi_head(path: str | Path) -> tuple[str | None, bool, bool]:
    """``(fmiVersion, has co-simulation, has model exchange)`` of an FMU archive,
    read from the head of its description (``(None, False, False)`` when unreadable)."""
    version, cs, me, _, _ = _fmi_interfaces(path)
    return version, cs, me


def _fmi_interfaces(path: str | Path) -> tuple[str | None, bool, bool, bool, bool]:
    """:func:`_fmi_head`, whether the FMU has FMI 3.0 Scheduled Execution and whether
    the head of its description declares clocks."""
    try:
        with open_zip(path, f"FMU {str(path)!r}", "FMU") as z, z.open("modelDescription.xml") as f:
            head = f.read(1 << 16).decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile, InputError):
        return None, False, False, False, False  # reported by FmuUnit.__init__
    m = re.search(r'fmiVersion\s*=\s*"([^"]*)"', head)
    return (m.group(1) if m else None, re.search(r"<CoSimulation\b", head) is not None,
            re.search(r"<ModelExchange\b", head) is not None, re.search(r"<ScheduledExecution\b", head) is not None,
            re.search(r"<Clock\b", head) is not None)


INTERFACES = (None, "cs", "me")


class _Group:
    """Variables of one value type exchanged in one call: value references, a C
    buffer with every element of those variables, and the unit buffer index of
    each buffer position (``slots``: ``(position, index)``, index -1 for an
    element the exchange does not carry)."""

    def __init__(self, vt: ValueType, vrs: list[int], n_values: int, slots: list[tuple[int, int]],
                 counted: bool) -> None:
        self.vt = vt
        self.vr = (ctypes.c_uint * max(len(vrs), 1))(*vrs)
        self.n_vr = len(vrs)
        self.buf = (vt.ctype * max(n_values, 1))()
        self.n = n_values
        self.slots = slots
        self.tail = (n_values,) if counted else ()  # FMI 3 calls take the number of values
        self.direct = False  # the unit's own double buffer serves as the call's (a 1:1 exchange)

    def covers(self, n: int) -> bool:
        """Whether this group carries unit buffer indices 0..n-1 as they are, doubles."""
        return (self.vt.ctype is ctypes.c_double and self.n == n == len(self.slots)
                and all(k == j for k, j in self.slots))


class FmuUnit(Unit):
    """An FMI 2.0 co-simulation FMU, run through fmpy; the base of every FMU unit.

    ``FmuUnit(path, ...)`` opens any FMU as :func:`~mbfmu.cosim.fmi.fmu_open.open_fmu`
    does (which picks the FMI 3.0 or model-exchange class the file needs).

    Parameters
    ----------
    path : str or Path
        The ``.fmu`` file.
    name : str, optional
        Unit name in the system (default: the FMU's model name).
    values : mapping, optional
        Parameters and start values by variable name.
    step : float, optional
        The unit's own step [s]; must divide the macro step.
    feedthrough : mapping, optional
        Overrides the output dependencies declared in the FMU's
        ``ModelStructure`` (where an output declares none, FMI 2.0 says it
        depends on every input).
    log : bool
        Instantiate with logging on and every log category of the FMU
        switched on (default off: FMUs that log each call make runs several
        times slower).
    interface : {None, "cs", "me"}
        Which FMI interface to run: co-simulation (the default when the FMU
        has it) or model exchange (the default for an FMU with model exchange
        only), integrated by the master (:mod:`.fmu_me`, which takes the
        solver tolerances ``rtol`` and ``atol``).

    Notes
    -----
    Values are set after the instance is made and before initialization
    (FMI 2.0: after ``fmi2SetupExperiment``). The FMU is extracted once, here,
    and instantiated anew for every run.
    """

    fmi: FmiVersion = FMI2  # the version this class runs (the table of its calls and differences)
    tolerance: float | None = None  # relative tolerance given to the FMU at set-up (None: the FMU's own)
    _der_idx: Sequence[int] = ()  # positions of the inputs whose derivatives are sent (FMI 2 Real inputs)

    # the factory module (:mod:`.fmu_open`) installs its class chooser here, so that ``FmuUnit(path)``
    # keeps opening any FMU (FMI 3, model exchange, ...) without this module importing its subclasses
    _choose: Callable[[str | Path, str | None], type] | None = None

    def __new__(cls, path: str | Path, *args: Any, **kwargs: Any) -> "FmuUnit":
        if cls is FmuUnit and FmuUnit._choose is not None:
            cls = FmuUnit._choose(path, kwargs.get("interface"))
        return super().__new__(cls)

    def __init__(self, path: str | Path, name: str | None = None, values: Mapping[str, Any] | None = None,
                 step: float | None = None, feedthrough: Mapping[str, Iterable[str]] | None = None,
                 log: bool = False, interface: str | None = None) -> None:
        self.interface = "cs"
        self.path = Path(path)
        if not self.path.exists():
            raise InputError(f"FMU file {str(self.path)!r} does not exist")
        md = read_checked(self.path)  # bounded, contained and its description checked before anything loads
        self._check_interface(md)
        self.md = md
        variables = self._variables(md)
        declared: dict[str, tuple[str, ...]] = {}
        inputs = [v.name for v in variables if v.causality == "input"]
        for o in md.outputs:
            if o.dependencies is None:
                declared[o.variable.name] = tuple(inputs)
            else:
                declared[o.variable.name] = tuple(d.name for d in o.dependencies if d.causality == "input")
        self._expand_declared(declared)
        for v in variables:
            if v.causality == "output" and v.name not in declared:
                declared[v.name] = tuple(inputs)
        if feedthrough is not None:
            declared.update({k: tuple(v) for k, v in feedthrough.items()})
        super().__init__(name or md.modelName, variables, declared, step)
        cs = self._interface_element(md)
        self.can_rollback = bool(getattr(cs, "canGetAndSetFMUstate", False) or getattr(cs, "canGetAndSetFMUState", False))
        self.can_interpolate_inputs = bool(getattr(cs, "canInterpolateInputs", False))
        self.max_input_order = self._declared_input_order(cs)
        self.logging_on = bool(log)
        self.model_identifier = cs.modelIdentifier
        for k, val in (values or {}).items():
            self.set(k, val)
        # a private folder shared by the units of the same FMU, removed at exit (mbfmu.untrusted.scratch),
        # not when the unit goes: Python FMUs (pythonfmu) import modules from their extracted resources
        self._unzipdir, self.extracted_bytes = extract_shared(
            self.path, not getattr(cs, "canBeInstantiatedOnlyOncePerProcess", False))
        self._fmu = None
        self._stop_at: float | None = None
        self.log: collections.deque[str] = collections.deque(maxlen=200)
        self.input_conversion: dict[int, tuple[float, float]] = {}
        self._bufs()

    # -- reading the model description ------------------------------------------------
    @staticmethod
    def _interface_element(md: Any) -> Any:
        """The description's element of the interface this unit runs (CoSimulation here)."""
        return md.coSimulation

    @staticmethod
    def _check_interface(md: Any) -> None:
        if md.fmiVersion != "2.0" or md.coSimulation is None:
            raise InputError(f"{md.modelName!r}: only FMI 2.0 and 3.0 co-simulation FMUs are supported "
                             f"(fmiVersion {md.fmiVersion}, coSimulation {'yes' if md.coSimulation else 'no'})")

    def _variables(self, md: Any) -> list[Variable]:
        """The FMU's variables, an array's elements one by one; master types
        (Enumeration and the integer types count as Integer); start values as
        floats (Boolean 0/1), text for String."""
        types = self.fmi.types
        by_vr = {v.valueReference: v for v in md.modelVariables}
        # (call type, vr) -> (declared type, names per element): FMI 2.0 value references are
        # unique per type only, and variables of one reference are aliases
        self._layout: dict[tuple[str, int], tuple[str, list[list[str]]]] = {}
        self._element: dict[str, tuple[tuple[str, int], int]] = {}  # element name -> (layout key, index)
        self._array_names: dict[str, list[str]] = {}                 # array variable -> its element names
        self.skipped: list[str] = []
        variables = []
        for v in md.modelVariables:
            if v.type == "Binary":
                self.skipped.append(v.name)
                continue
            vt = types.get(v.type)
            names = element_names(v, by_vr)
            if getattr(v, "dimensions", None):
                self._array_names[v.name] = names
            key = (vt.api if vt is not None else v.type, v.valueReference)
            if key in self._layout:  # an alias: more names for the same elements
                for k, en in enumerate(names):
                    self._layout[key][1][k].append(en)
            else:
                self._layout[key] = (v.type, [[en] for en in names])
            master = vt.master if vt is not None else v.type
            unit = v.unit or (v.declaredType.unit if v.declaredType is not None else None)
            for k, (en, start) in enumerate(zip(names, parse_start(v.start, master, len(names)))):
                self._element[en] = (key, k)
                variables.append(Variable(en, v.causality, master, unit, start, v.valueReference))
        return variables

    def _expand_declared(self, declared: dict[str, tuple[str, ...]]) -> None:
        """Dependencies on and of arrays as dependencies on and of their elements."""
        arrays = self._array_names
        for out in [o for o in declared if o in arrays]:
            deps = declared.pop(out)
            for en in arrays[out]:
                declared[en] = deps
        for out, deps in declared.items():
            declared[out] = tuple(en for d in deps for en in arrays.get(d, [d]))

    def _declared_input_order(self, cs: Any) -> int:
        """Highest input-derivative order to send: none when the version has no
        input derivatives or the FMU cannot interpolate inputs, else 2 capped by
        a declared ``maxOutputDerivativeOrder`` of 1 (OpenModelica FMUs declare 1
        and refuse order 2)."""
        if self.fmi.input_derivatives is None or not getattr(cs, "canInterpolateInputs", False):
            return 0
        declared = int(getattr(cs, "maxOutputDerivativeOrder", 0) or 0)
        return min(2, declared) if declared >= 1 else 2

    def set(self, name: str, value: Any) -> None:
        """Set a parameter or start value by name before a run (a whole array
        by its name with a sequence, or one element ``A[1,2]``)."""
        if name in self._array_names:
            names = self._array_names[name]
            vals = list(value) if isinstance(value, Iterable) and not isinstance(value, str) else [value]
            if len(vals) != len(names):
                raise InputError(f"unit {self.name!r}: {name!r} has {len(names)} elements, got {len(vals)} values")
            for en, val in zip(names, vals):
                super().set(en, val)
            return
        if self.variable(name).causality == "structuralParameter":
            raise InputError(f"unit {self.name!r}: {name!r} is a structural parameter; mbfmu keeps its start value")
        super().set(name, value)

    # -- buffers -----------------------------------------------------------------------
    def _bufs(self) -> None:
        """Buffers: ``u`` and ``y`` are ctypes double arrays in input/output order
        (Integer and Boolean values are held as doubles, String values as codes)."""
        self._n_in, self._n_out = len(self.inputs), len(self.outputs)
        self.u = (ctypes.c_double * max(self._n_in, 1))()
        self.y = (ctypes.c_double * max(self._n_out, 1))()
        self._out_groups = self._groups(self.outputs, range(self._n_out))
        if len(self._out_groups) == 1 and self._out_groups[0].covers(self._n_out):
            self._out_groups[0].direct = True
        self.connect_inputs(range(self._n_in))

    def _groups(self, names: Sequence[str], wanted: Iterable[int]) -> list[_Group]:
        """Groups over the variables holding the elements ``names[i]`` for ``i`` in
        ``wanted``; every element of such a variable has a slot (those in ``names``
        map to their index there)."""
        pos: dict[str, list[int]] = {}
        for i, n in enumerate(names):
            pos.setdefault(n, []).append(i)
        keys = list(dict.fromkeys(self._element[names[i]][0] for i in wanted))
        by_call: dict[str, list[tuple[str, int]]] = {}
        for key in keys:
            by_call.setdefault(key[0], []).append(key)
        groups = []
        for call_keys in by_call.values():
            slots, k = [], 0
            for key in call_keys:
                for aliases in self._layout[key][1]:
                    slots += [(k, i) for en in aliases for i in pos.get(en, [-1])]
                    k += 1
            vt = self.fmi.types[self._layout[call_keys[0]][0]]
            groups.append(_Group(vt, [key[1] for key in call_keys], k, slots, self.fmi.values_counted))
        return groups

    def connect_inputs(self, driven: Iterable[int]) -> None:
        """Push only the inputs at positions ``driven`` (the connected ones; the
        others keep the values set before initialization)."""
        driven = sorted(set(driven))
        self._in_groups = self._groups(self.inputs, driven)
        if len(self._in_groups) == 1 and self._in_groups[0].covers(self._n_in):
            self._in_groups[0].direct = True
        if self.fmi.input_derivatives is not None:
            var = self.variables
            self._der_idx = [j for j in driven if var[self.inputs[j]].type == "Real"]
            nd = max(len(self._der_idx), 1)
            self._der_vr = (ctypes.c_uint * nd)(*[var[self.inputs[j]].vr for j in self._der_idx])
            self._d_order1 = (ctypes.c_int * nd)(*([1] * len(self._der_idx)))
            self._d_order2 = (ctypes.c_int * nd)(*([2] * len(self._der_idx)))
            self._d_buf = (ctypes.c_double * nd)()

    @property
    def plant_ref(self) -> dict[str, Any] | None:
        """The plant reference of an FMU built by ``mbfmu build`` (``{"kind",
        "target", "class_name", "parameters"}``), or ``None``.

        Read from ``resources/mbfmu_plant.json`` or, failing that, from the
        ``plant_ref = {...}`` literal of the generated slave script (parsed as
        a literal, never executed), so results can name the plant behind
        each unit without this layer importing :mod:`mbfmu.fmu`.
        """
        import ast
        import json
        res = Path(self._unzipdir) / "resources"
        try:
            js = res / "mbfmu_plant.json"
            if js.is_file():
                ref = json.loads(js.read_text())
                return ref if isinstance(ref, dict) and "kind" in ref else None
            for py in sorted(res.glob("*.py")):
                for line in py.read_text(errors="replace").splitlines():
                    if line.strip().startswith("plant_ref = "):
                        ref = ast.literal_eval(line.split("=", 1)[1].strip())
                        if isinstance(ref, dict) and "kind" in ref:
                            return ref
        except (OSError, ValueError, SyntaxError):
            return None
        return None

    # -- set-up --------------------------------------------------------------------
    def log_text(self, last: int | None = None) -> str:
        """The unit's log messages (the last ``last`` of them), one per line."""
        lines = list(self.log)
        return "\n".join(lines[-last:] if last else lines)

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.terminate()
        self._fatal = False
        self.log.clear()
        self._stop_at = None

        def log_message(env: Any, status: int, category: bytes, message: bytes) -> None:
            self.log.append(log_line(status, category, message))

        try:
            fmu = self._instantiate(log_message)
            if self.logging_on and self.md.logCategories:
                fmu.setDebugLogging(True, [c.name for c in self.md.logCategories])
        except Exception as exc:
            me = " (model exchange)" if self.interface == "me" else ""
            raise self._setup_error(f"cannot instantiate {self.path.name}{me}", exc) from exc
        self._fmu = fmu
        self._c = fmu.component
        self._bind(fmu._functions)
        try:
            self.fmi.initialize(fmu, self._fmu_tolerance(), t0, stop_time, lambda: self._set_values(self.values))
        except Exception as exc:
            raise self._setup_error("initialization failed", exc) from exc
        self._initialized(t0, step)
        self._start_inputs()
        self.pull()

    def _fmu_tolerance(self) -> float | None:
        """The relative tolerance given to the FMU at set-up."""
        return self.tolerance

    def _setup_error(self, what: str, exc: BaseException) -> CosimError:
        """The error of a failed set-up step, with the unit's log."""
        return CosimError(f"unit {self.name!r}: {what}: {exc}" + (f"; unit log:\n{self.log_text()}" if self.log else ""))

    def _instantiate(self, log_message: Callable[..., None]) -> Any:
        """A new instance of the FMU's interface (FMI 3 co-simulation without event mode);
        ``log_message`` is the FMI 3 log callback (FMI 2 logs through its callbacks)."""
        return self.fmi.instantiate(self, self.interface == "me", log_message)

    def _bind(self, f: Mapping[str, Any]) -> None:
        """The instance's C functions that the hot path calls."""
        p = self.fmi.prefix
        calls = {vt.api for vt in self.fmi.types.values()}
        self._f_get = {api: f[f"{p}Get{api}"] for api in calls}
        self._f_set = {api: f[f"{p}Set{api}"] for api in calls}
        self._f_step = f.get(f"{p}DoStep")
        self._setDer = f.get(self.fmi.input_derivatives) if self.fmi.input_derivatives else None
        if self.fmi.step_flags:  # eventHandlingNeeded, terminateSimulation, earlyReturn, lastSuccessfulTime
            self._flags = [ctypes.c_bool(), ctypes.c_bool(), ctypes.c_bool(), ctypes.c_double()]
            self._flag_refs = [ctypes.byref(x) for x in self._flags]
        else:
            self._flags, self._flag_refs = [], []
        self._no_prior = int(not self.will_roll_back)  # the step's noSetFMUStatePriorToCurrentPoint

    def _initialized(self, t0: float, step: float) -> None:
        """Hook called after initialization, before the start inputs are set (clocked units plan their ticks)."""

    def _start_inputs(self) -> None:
        """The input buffer starts at the values set, else the start values."""
        for j, n in enumerate(self.inputs):
            start = self.values.get(n, self.variables[n].start)
            if self.variables[n].type == "String":
                self.u[j] = string_code("" if start is None else str(start))
            else:
                self.u[j] = float(start) if start is not None else 0.0

    def _set_values(self, values: Mapping[str, Any]) -> None:
        """Set parameters and start values, whole variables at a time."""
        by_key: dict[tuple[str, int], dict[int, Any]] = {}
        for n, val in values.items():
            key, k = self._element[n]
            by_key.setdefault(key, {})[k] = val
        for key, given in by_key.items():
            typ, names = self._layout[key]
            vt = self.fmi.types[typ]
            vals = [given.get(k, self.variables[en[0]].start) for k, en in enumerate(names)]
            buf = (vt.ctype * len(vals))(*[vt.given(v) for v in vals])
            s = self._f_set[vt.api](self._c, (ctypes.c_uint * 1)(key[1]), 1, buf,
                                    *((len(vals),) if self.fmi.values_counted else ()))
            if s > 1:
                raise _status_error(self, f"{self.fmi.call('Set', vt)} of {names[0][0].split('[')[0]!r}", s)

    def terminate(self) -> None:
        if self._fmu is not None:
            fmu, self._fmu = self._fmu, None
            if not getattr(self, "_fatal", False):
                # the standards forbid every call after a fatal status (fmi2Terminate and
                # fmi2FreeInstance on such an instance crash pythonfmu FMUs): leak it
                for call in (fmu.terminate, fmu.freeInstance):
                    try:
                        call()
                    except Exception:
                        pass
            release_log(self)

    def __del__(self) -> None:
        try:
            self.terminate()
        except Exception:
            pass

    # -- hot path -----------------------------------------------------------------
    def convert_input(self, name: str, gain: float, offset: float) -> None:
        """Send Real input ``name`` as ``gain u + offset`` (a unit conversion: the
        master's value is in the source's unit, the FMU's in its own)."""
        j = self.inputs.index(self.variable(name).name)
        self.input_conversion[j] = (float(gain), float(offset))
        self._u_sent = (ctypes.c_double * max(self._n_in, 1))()

    def _converted_inputs(self) -> Any:
        sent = self._u_sent
        ctypes.memmove(sent, self.u, ctypes.sizeof(sent))
        for j, (a, b) in self.input_conversion.items():
            sent[j] = a * sent[j] + b
        return sent

    def push(self) -> None:
        u = self._converted_inputs() if self.input_conversion else self.u
        c, f_set = self._c, self._f_set
        for g in self._in_groups:
            vt = g.vt
            if g.direct:
                buf = u
            else:
                buf, to_c = g.buf, vt.to_c
                for k, j in g.slots:
                    if j >= 0:
                        buf[k] = to_c(u[j])
            s = f_set[vt.api](c, g.vr, g.n_vr, buf, *g.tail)
            if s > 1:
                raise _status_error(self, self.fmi.call("Set", vt), s)

    def push_derivatives(self, d1: Sequence[float], d2: Sequence[float]) -> None:
        """First and second time derivatives of the connected Real inputs (in the
        master's units: a converted input's derivatives are scaled by its gain;
        nothing to send in FMI 3.0, which has no input derivatives)."""
        n = len(self._der_idx)
        if not n:
            return
        conv = self.input_conversion
        for order, d, buf in ((1, d1, self._d_order1), (2, d2, self._d_order2)):
            if d is None or order > self.max_input_order:
                continue
            for m, j in enumerate(self._der_idx):
                self._d_buf[m] = conv[j][0] * d[j] if j in conv else d[j]
            s = self._setDer(self._c, self._der_vr, n, buf, self._d_buf)
            if s > 1 and order > 1:  # learnt: this FMU takes lower orders only
                self.max_input_order = order - 1
                _LOG.warning("unit %r refused input derivatives of order %d; sending order %d at most",
                             self.name, order, order - 1)
            elif s > 1:
                raise _status_error(self, f"{self.fmi.input_derivatives} (order {order})", s)

    def pull(self) -> None:
        self._read(self._out_groups, self.y, False)

    def _read(self, groups: list[_Group], out: Any, recorded: bool) -> None:
        """Read ``groups`` into ``out`` (their slots' indices), checking each status."""
        c, f_get = self._c, self._f_get
        for g in groups:
            vt = g.vt
            s = f_get[vt.api](c, g.vr, g.n_vr, out if g.direct else g.buf, *g.tail)
            if s > 1:
                raise _status_error(self, self.fmi.call("Get", vt), s)
            if not g.direct:
                buf, from_c = g.buf, vt.recorded if recorded else vt.from_c
                for k, j in g.slots:
                    if j >= 0:
                        out[j] = from_c(buf[k])

    def do_step(self, t: float, h: float) -> None:
        if self._stop_at is not None:
            raise StopRequested(f"unit {self.name!r} asked to stop (fmi3DoStep terminateSimulation) at "
                                f"t = {self._stop_at!r} s", unit=self.name, time=self._stop_at)
        s = self._f_step(self._c, t, h, self._no_prior, *self._flag_refs)
        if s > 1:
            raise self._step_error(s, t, h)
        if self._flags and self._flags[1].value:  # terminateSimulation: keep this step, stop before the next
            self._stop_at = t + h

    def _step_error(self, status: int, t: float, h: float) -> CosimError:
        """The error for a failed step: :class:`StopRequested` when an FMI 2.0 FMU
        returned fmi2Discard and reports ``fmi2Terminated`` (it asks to stop)."""
        if status == 2 and self.fmi.terminated_status:
            flag = ctypes.c_int(0)
            get = self._fmu._functions.get("fmi2GetBooleanStatus") if self._fmu is not None else None
            if get is not None and get(self._c, FMI2_TERMINATED, ctypes.byref(flag)) == 0 and flag.value:
                log = self.log_text(LOG_LINES_SHOWN)
                return StopRequested(f"unit {self.name!r} asked to stop (fmi2Terminated) in the step from t = {t!r} s"
                                     + (f"; last unit log lines:\n{log}" if log else ""), unit=self.name, time=t)
        return _status_error(self, f"{self.fmi.prefix}DoStep(h = {h!r} s)", status, t)

    def getter(self, names: Sequence[str]) -> Callable[[], Sequence[float]]:
        vs = [self.variable(n) for n in names]  # raises UnknownNameError listing the known names
        bad = [v.name for v in vs if v.type not in ("Real", "Integer", "Boolean", "String")]
        if bad:
            raise InputError(f"unit {self.name!r}: cannot record non-numeric variables {bad}")
        groups = self._groups([v.name for v in vs], range(len(vs)))
        if len(groups) == 1 and groups[0].covers(len(vs)):
            g = groups[0]
            get_fn, c_args = self._f_get[g.vt.api], (g.vr, g.n_vr, g.buf, *g.tail)

            def get() -> Sequence[float]:
                s = get_fn(self._c, *c_args)
                if s > 1:
                    raise _status_error(self, self.fmi.call("Get", g.vt), s)
                return g.buf
            return get
        out = [0.0] * len(vs)

        def get_mixed() -> list[float]:
            self._read(groups, out, True)
            return out
        return get_mixed

    # -- rollback -----------------------------------------------------------------
    def get_state(self) -> Any:
        if not self.can_rollback:
            return super().get_state()
        return getattr(self._fmu, self.fmi.state_calls[0])()

    def set_state(self, state: Any) -> None:
        getattr(self._fmu, self.fmi.state_calls[1])(state)
        self._stop_at = None

    def free_state(self, state: Any) -> None:
        getattr(self._fmu, self.fmi.state_calls[2])(state)


def validate(path: str | Path) -> list[str]:
    """Problems fmpy's validator finds in an FMU (``[]`` when it conforms)."""
    from fmpy.validation import validate_fmu
    return list(validate_fmu(str(path)))
