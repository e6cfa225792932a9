"""The FMI 3.0 unit: any FMI 3.0 co-simulation FMU, run through fmpy's ``FMU3Slave``.

Same contract and semantics as the FMI 2.0 :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit`
(``FmuUnit(path)`` returns this class for an FMI 3.0 file): fixed
communication steps, event mode not used (the FMU handles its events
inside ``fmi3DoStep``), no early return. FMI 3.0 types map onto the four
master types: Float32/Float64 are Real, the eight integer types and
Enumeration are Integer, Boolean and String keep their names. Arrays are
split into scalar variables named ``x[1]``, ``A[2,1]`` (1-based, row major)
and exchanged as whole arrays. Binary variables are left out (listed in
``skipped``). FMUs with clocks run as :mod:`mbfmu.cosim.fmi.fmu3_events` (event
mode) or :mod:`mbfmu.cosim.fmi.fmu3_scheduled` (Scheduled Execution); this class
refuses them, naming their clocks.

A request to stop (``terminateSimulation`` out of ``fmi3DoStep``) keeps the
step that asked (its outputs are read and recorded) and ends the run at
the next step with :class:`~mbfmu.errors.StopRequested` where that error
exists.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from ... import errors
from ...errors import CosimError, InputError
from .fmu_unit import FmuUnit, _status_error
from ..typed import string_code, string_text
from ..units import Variable

_REAL = ("Float32", "Float64")
_INTEGER = ("Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64", "Enumeration")
_CT = {"Float32": ctypes.c_float, "Float64": ctypes.c_double, "Int8": ctypes.c_int8, "UInt8": ctypes.c_uint8,
       "Int16": ctypes.c_int16, "UInt16": ctypes.c_uint16, "Int32": ctypes.c_int32, "UInt32": ctypes.c_uint32,
       "Int64": ctypes.c_int64, "UInt64": ctypes.c_uint64, "Enumeration": ctypes.c_int64,
       "Boolean": ctypes.c_bool, "String": ctypes.c_char_p}


def _master_type(fmi3_type: str) -> str:
    if fmi3_type in _REAL:
        return "Real"
    if fmi3_type in _INTEGER:
        return "Integer"
    return fmi3_type


def _api_name(fmi3_type: str) -> str:
    """The suffix of the fmi3Get/fmi3Set function for a variable type."""
    return "Int64" if fmi3_type == "Enumeration" else fmi3_type


def _to_c(fmi3_type: str, value: float) -> Any:
    """A master buffer value (float; String: code) as the C value of ``fmi3_type``."""
    if fmi3_type in _REAL:
        return value
    if fmi3_type == "Boolean":
        return value != 0.0
    if fmi3_type == "String":
        return string_text(value).encode("utf-8")
    return int(round(value))


def _from_c(fmi3_type: str, value: Any) -> float:
    if fmi3_type == "String":
        return string_code((value or b"").decode("utf-8", "replace"))
    return float(value)


def _parse_start(fmi3_type: str, text: Any, n: int) -> list[Any]:
    """``n`` start values from a model description start attribute (``None`` when absent)."""
    if text is None:
        return [None] * n
    if fmi3_type == "String":
        return [str(text)] * n
    items = str(text).split() if n > 1 else [str(text)]
    if fmi3_type == "Boolean":
        vals = [float(s in ("true", "1")) for s in items]
    else:
        vals = [float(s) for s in items]
    return (vals * n)[:n] if len(vals) < n else vals[:n]


class _Group:
    """Variables of one FMI 3 type exchanged in one call: value references, a C
    buffer with every element of those variables, and the buffer position of
    each unit buffer index."""

    def __init__(self, fmi3_type: str, vrs: list[int], n_values: int, slots: list[tuple[int, int]]) -> None:
        self.type = fmi3_type
        self.vr = (ctypes.c_uint * max(len(vrs), 1))(*vrs)
        self.n_vr = len(vrs)
        self.buf = (_CT[fmi3_type] * max(n_values, 1))()
        self.n = n_values
        self.slots = slots  # (buffer position, unit buffer index)


class Fmu3Unit(FmuUnit):
    """Any FMI 3.0 co-simulation FMU, run through fmpy (see the module docstring).

    Parameters are those of :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit`.
    """

    # -- model description ------------------------------------------------------------
    @staticmethod
    def _check_interface(md: Any) -> None:
        if not str(md.fmiVersion).startswith("3."):
            raise InputError(f"{md.modelName!r}: not an FMI 3.0 FMU (fmiVersion {md.fmiVersion})")
        if md.coSimulation is None:
            kinds = [k for k, i in (("model exchange", md.modelExchange),
                                    ("scheduled execution", getattr(md, "scheduledExecution", None))) if i is not None]
            raise InputError(f"{md.modelName!r}: the FMU has no co-simulation interface"
                             + (f" (it offers {' and '.join(kinds)} only)" if kinds else ""))
        clocks = [v.name for v in md.modelVariables if v.type == "Clock"]
        if clocks:
            raise InputError(f"{md.modelName!r}: the FMU has clocks ({', '.join(clocks)}); Fmu3Unit runs co-simulation "
                             "without event mode: open it with open_fmu(path), which runs its event mode")

    def _variables(self, md: Any) -> list[Variable]:
        by_vr = {v.valueReference: v for v in md.modelVariables}
        self._layout: dict[int, tuple[str, list[list[str]]]] = {}  # vr -> (FMI 3 type, names per element)
        self._element: dict[str, tuple[int, int]] = {}         # element name -> (vr, index)
        self._array_names: dict[str, list[str]] = {}            # array variable -> its element names
        self.skipped: list[str] = []
        variables = []
        for v in md.modelVariables:
            if v.type == "Binary":
                self.skipped.append(v.name)
                continue
            shape = [self._dimension(d, by_vr) for d in v.dimensions]
            n = math.prod(shape) if shape else 1
            names = [v.name] if not shape else [f"{v.name}[{','.join(str(i + 1) for i in idx)}]"
                                                for idx in _indices(shape)]
            if shape:
                self._array_names[v.name] = names
            if v.valueReference in self._layout:  # an alias: more names for the same elements
                for k, en in enumerate(names):
                    self._layout[v.valueReference][1][k].append(en)
            else:
                self._layout[v.valueReference] = (v.type, [[en] for en in names])
            unit = v.unit or (v.declaredType.unit if v.declaredType is not None else None)
            for k, (en, start) in enumerate(zip(names, _parse_start(v.type, v.start, n))):
                self._element[en] = (v.valueReference, k)
                variables.append(Variable(en, v.causality, _master_type(v.type), unit, start, v.valueReference))
        return variables

    @staticmethod
    def _dimension(d: Any, by_vr: Mapping[int, Any]) -> int:
        if d.start is not None:
            return int(d.start)
        ref = d.variable if d.variable is not None else by_vr.get(d.valueReference)
        if ref is None or ref.start is None:
            raise InputError(f"array dimension given by value reference {d.valueReference} has no start value")
        return int(ref.start)

    def _expand_declared(self, declared: dict[str, tuple[str, ...]]) -> None:
        arrays = self._array_names
        for out in [o for o in declared if o in arrays]:
            deps = declared.pop(out)
            for en in arrays[out]:
                declared[en] = deps
        for out, deps in declared.items():
            declared[out] = tuple(en for d in deps for en in arrays.get(d, [d]))

    @staticmethod
    def _declared_input_order(cs: Any) -> int:
        return 0  # FMI 3.0 has no input derivatives

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

    # -- set-up ----------------------------------------------------------------------
    def _bufs(self) -> None:
        self._n_in, self._n_out = len(self.inputs), len(self.outputs)
        self.u = (ctypes.c_double * max(self._n_in, 1))()
        self.y = (ctypes.c_double * max(self._n_out, 1))()
        self._out_groups3 = self._groups(self.outputs, range(self._n_out))
        self.connect_inputs(range(self._n_in))

    def _groups(self, names: Sequence[str], wanted: Iterable[int]) -> list[_Group]:
        """Groups over the variables holding the elements ``names[i]`` for ``i`` in
        ``wanted``; every element of such a variable has a slot (those in ``names``
        map to their index there)."""
        pos = {n: i for i, n in enumerate(names)}
        vrs = list(dict.fromkeys(self._element[names[i]][0] for i in wanted))
        by_type: dict[str, list[int]] = {}
        for vr in vrs:
            by_type.setdefault(self._layout[vr][0], []).append(vr)
        groups = []
        for typ, tvrs in by_type.items():
            slots, k = [], 0
            for vr in tvrs:
                for aliases in self._layout[vr][1]:
                    slots += [(k, pos.get(en, -1)) for en in aliases]
                    k += 1
            groups.append(_Group(typ, tvrs, k, slots))
        return groups

    def connect_inputs(self, driven: Iterable[int]) -> None:
        self._in_groups3 = self._groups(self.inputs, sorted(set(driven)))

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.terminate()
        self.log.clear()
        self._stop_at: float | None = None

        def log_message(env: Any, status: int, category: bytes, message: bytes) -> None:
            label = ["OK", "WARNING", "DISCARD", "ERROR", "FATAL"][status] if 0 <= status < 5 else str(status)
            self.log.append(f"[{label}] [{(category or b'').decode('utf-8', 'replace')}] "
                            f"{(message or b'').decode('utf-8', 'replace')}")

        try:
            fmu = self._instantiate(log_message)
            if self.logging_on and self.md.logCategories:
                fmu.setDebugLogging(True, [c.name for c in self.md.logCategories])
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: cannot instantiate {self.path.name}: {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._fmu = fmu
        f = fmu._functions
        self._c = fmu.component
        self._f_get = {t: f[f"fmi3Get{_api_name(t)}"] for t in _CT}
        self._f_set = {t: f[f"fmi3Set{_api_name(t)}"] for t in _CT}
        self._f_step = f["fmi3DoStep"]
        self._flags = [ctypes.c_bool(), ctypes.c_bool(), ctypes.c_bool(), ctypes.c_double()]
        self._flag_refs = [ctypes.byref(x) for x in self._flags]
        self._no_prior = not self.will_roll_back
        try:
            self._set_values(self.values)
            fmu.enterInitializationMode(tolerance=self.tolerance, startTime=t0, stopTime=stop_time)
            fmu.exitInitializationMode()
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: initialization failed: {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._initialized(t0, step)
        self._start_inputs()
        self.pull()

    def _instantiate(self, log_message: Callable[..., None]) -> Any:
        """A new instance of the FMU's interface (co-simulation here, without event mode)."""
        from fmpy.fmi3 import FMU3Slave

        fmu = FMU3Slave(guid=self.md.guid, unzipDirectory=self._unzipdir, modelIdentifier=self.model_identifier,
                        instanceName=self.name)
        fmu.instantiate(loggingOn=self.logging_on, eventModeUsed=False, earlyReturnAllowed=False,
                        logMessage=log_message)
        return fmu

    def _initialized(self, t0: float, step: float) -> None:
        """Hook called after initialization, before the start inputs are set (clocked units plan their ticks)."""

    def _set_values(self, values: Mapping[str, Any]) -> None:
        """Set parameters and start values, whole variables at a time."""
        by_vr: dict[int, dict[int, Any]] = {}
        for n, val in values.items():
            vr, k = self._element[n]
            by_vr.setdefault(vr, {})[k] = val
        for vr, given in by_vr.items():
            typ, names = self._layout[vr]
            vals = [given.get(k, self.variables[en[0]].start) for k, en in enumerate(names)]
            buf = (_CT[typ] * len(vals))(*[_to_c(typ, string_code("" if v is None else str(v)) if typ == "String"
                                           else float(v or 0.0))
                                           for v in vals])
            s = self._f_set[typ](self._c, (ctypes.c_uint * 1)(vr), 1, buf, len(vals))
            if s > 1:
                raise _status_error(self, f"fmi3Set{_api_name(typ)} of {names[0][0].split('[')[0]!r}", s)

    def terminate(self) -> None:
        if self._fmu is not None:
            fmu, self._fmu = self._fmu, None
            for call in (fmu.terminate, fmu.freeInstance):
                try:
                    call()
                except Exception:
                    pass

    # -- hot path ----------------------------------------------------------------------
    def push(self) -> None:
        u = self._converted_inputs() if self.input_conversion else self.u
        for g in self._in_groups3:
            buf, typ = g.buf, g.type
            for k, j in g.slots:
                if j >= 0:
                    buf[k] = _to_c(typ, u[j])
            s = self._f_set[typ](self._c, g.vr, g.n_vr, buf, g.n)
            if s > 1:
                raise _status_error(self, f"fmi3Set{_api_name(typ)}", s)

    def push_derivatives(self, d1: Sequence[float], d2: Sequence[float]) -> None:
        """FMI 3.0 has no input derivatives: nothing to send."""

    def pull(self) -> None:
        y = self.y
        for g in self._out_groups3:
            s = self._f_get[g.type](self._c, g.vr, g.n_vr, g.buf, g.n)
            if s > 1:
                raise _status_error(self, f"fmi3Get{_api_name(g.type)}", s)
            buf, typ = g.buf, g.type
            for k, j in g.slots:
                if j >= 0:
                    y[j] = _from_c(typ, buf[k])

    def do_step(self, t: float, h: float) -> None:
        if self._stop_at is not None:
            stop = getattr(errors, "StopRequested", None)  # faults' error class, once merged
            msg = f"unit {self.name!r} asked to stop (fmi3DoStep terminateSimulation) at t = {self._stop_at!r} s"
            raise stop(msg, unit=self.name, time=self._stop_at) if stop is not None else CosimError(msg)
        s = self._f_step(self._c, t, h, self._no_prior, *self._flag_refs)
        if s > 1:
            raise _status_error(self, f"fmi3DoStep(h = {h!r} s)", s, t)
        if self._flags[1].value:  # terminateSimulation: keep this step, stop before the next
            self._stop_at = t + h

    def getter(self, names: Sequence[str]) -> Callable[[], Sequence[float]]:
        for n in names:
            self.variable(n)  # raises UnknownNameError listing the known names
        groups = self._groups(list(names), range(len(names)))
        out = [0.0] * len(names)

        def get() -> list[float]:
            for g in groups:
                s = self._f_get[g.type](self._c, g.vr, g.n_vr, g.buf, g.n)
                if s > 1:
                    raise _status_error(self, f"fmi3Get{_api_name(g.type)}", s)
                for k, j in g.slots:
                    if j >= 0:
                        out[j] = _from_c(g.type, g.buf[k])
            return out
        return get

    # -- rollback ------------------------------------------------------------------------
    def get_state(self) -> Any:
        if not self.can_rollback:
            return super().get_state()
        return self._fmu.getFMUState()

    def set_state(self, state: Any) -> None:
        self._fmu.setFMUState(state)
        self._stop_at = None

    def free_state(self, state: Any) -> None:
        self._fmu.freeFMUState(state)


def _indices(shape: Sequence[int]) -> list[tuple[int, ...]]:
    """Row-major index tuples of an array of ``shape``."""
    out: list[tuple[int, ...]] = [()]
    for n in shape:
        out = [idx + (i,) for idx in out for i in range(n)]
    return out
