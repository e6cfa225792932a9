"""The FMU unit: any FMI 2.0 co-simulation FMU, run through fmpy.

``FmuUnit(path)`` opens an FMI 3.0 co-simulation FMU as a
:class:`~mbfmu.cosim.fmi.fmu3_unit.Fmu3Unit` (same contract), and an FMI 3.0
FMU with Scheduled Execution only as a
:class:`~mbfmu.cosim.fmi.fmu3_scheduled.Fmu3ScheduledUnit`, and an FMI 3.0
co-simulation FMU with clocks as a
:class:`~mbfmu.cosim.fmi.fmu3_events.Fmu3EventUnit` (event mode).

Names are resolved to value references once; the hot path (:meth:`FmuUnit.push`,
:meth:`FmuUnit.pull`, :meth:`FmuUnit.do_step`) calls the FMU's C functions
directly with pre-allocated ctypes arrays, checking each status. A failing
call raises :class:`~mbfmu.errors.CosimError` naming the unit, the time and
the FMU's own log messages.
"""
from __future__ import annotations

import collections
import ctypes
import itertools
import logging
import re
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ...errors import CosimError, InputError, StopRequested
from ...untrusted.archive import open_zip
from .fmu_files import extract_shared, read_checked
from ..typed import string_code, string_text
from ..units import Unit, Variable

_LOG = logging.getLogger("mbfmu.cosim")


LOG_LINES_SHOWN = 10  # last log lines of a unit quoted in an error message
FMI2_TERMINATED = 3  # fmi2StatusKind fmi2Terminated


def _status_error(unit: "Unit", what: str, status: int, t: float | None = None) -> CosimError:
    label = {1: "warning", 2: "discard", 3: "error", 4: "fatal", 5: "pending"}.get(status, str(status))
    at = "" if t is None else f" at t = {t!r} s"
    if status == 4:  # FMI 2.0: no further call on this instance (see FmuUnit.terminate)
        unit._fatal = True
    log = unit.log_text(LOG_LINES_SHOWN)
    return CosimError(f"unit {unit.name!r}: {what} returned {label}{at}" + (f"; last unit log lines:\n{log}" if log else "; the unit logged nothing"))


_CTYPE = {"Real": ctypes.c_double, "Integer": ctypes.c_int, "Boolean": ctypes.c_int}
_BUF_CTYPE = dict(_CTYPE, String=ctypes.c_char_p)

# FMU log messages. fmpy's native logger proxy (which formats printf-style
# messages) forwards to ONE process-wide Python logger, the last one registered.
# So all FMU units share one logger that lives as long as the process, and
# messages are routed to their unit by the componentEnvironment key.
_LOGS: dict[int, "collections.deque[str]"] = {}
_LOG_KEYS = itertools.count(1)
_LOGGER: Any = None


def _route_log(env: Any, instance: bytes, status: int, category: bytes, message: bytes) -> None:
    log = _LOGS.get(env or 0)
    if log is None:
        return
    label = ["OK", "WARNING", "DISCARD", "ERROR", "FATAL", "PENDING"][status] if 0 <= status < 6 else str(status)
    cat = category.decode("utf-8", "replace") if category else ""
    log.append(f"[{label}] [{cat}] {message.decode('utf-8', 'replace') if message else ''}")


def _callbacks(key: int) -> Any:
    """An ``fmi2CallbackFunctions`` struct logging to the unit registered under ``key``."""
    global _LOGGER
    from fmpy import calloc, free
    from fmpy.fmi2 import (fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE, fmi2CallbackFunctions,
                           fmi2CallbackLoggerTYPE)
    if _LOGGER is None:
        _LOGGER = fmi2CallbackLoggerTYPE(_route_log)
    cb = fmi2CallbackFunctions()
    cb.logger = _LOGGER
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    cb.componentEnvironment = key
    try:
        from fmpy.logging import addLoggerProxy
        addLoggerProxy(ctypes.byref(cb))
    except Exception:  # pragma: no cover - only the formatting of variadic messages is lost
        pass
    return cb


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
    Values are set after ``fmi2Instantiate`` and before
    ``fmi2EnterInitializationMode``. The FMU is extracted once, here, and
    instantiated anew for every run.
    """

    tolerance: float | None = None  # relative tolerance given to the FMU at set-up (None: the FMU's own)

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
        self.log: collections.deque[str] = collections.deque(maxlen=200)
        self.input_conversion: dict[int, tuple[float, float]] = {}
        self._bufs()

    # -- reading the model description (FMI 3 overrides these) -----------------------
    @staticmethod
    def _interface_element(md: Any) -> Any:
        """The description's element of the interface this unit runs (CoSimulation here)."""
        return md.coSimulation

    @staticmethod
    def _check_interface(md: Any) -> None:
        if md.fmiVersion != "2.0" or md.coSimulation is None:
            raise InputError(f"{md.modelName!r}: only FMI 2.0 and 3.0 co-simulation FMUs are supported "
                             f"(fmiVersion {md.fmiVersion}, coSimulation {'yes' if md.coSimulation else 'no'})")

    @staticmethod
    def _variables(md: Any) -> list[Variable]:
        """The FMU's variables; Enumeration counts as Integer; start values as
        floats (Boolean 0/1), text for String."""
        variables = []
        for v in md.modelVariables:
            start = v.start
            if start is not None and v.type in ("Real", "Integer", "Boolean", "Enumeration"):
                start = float(start in ("true", "1", True)) if v.type == "Boolean" else float(start)
            typ = "Integer" if v.type == "Enumeration" else v.type
            variables.append(Variable(v.name, v.causality, typ,
                                      v.unit or (v.declaredType.unit if v.declaredType is not None else None),
                                      start, v.valueReference))
        return variables

    def _expand_declared(self, declared: dict[str, tuple[str, ...]]) -> None:
        """Hook for units whose model variables are not scalars (FMI 3 arrays)."""

    @staticmethod
    def _declared_input_order(cs: Any) -> int:
        """Highest input-derivative order to send: none when the FMU cannot
        interpolate inputs, else 2 capped by a declared ``maxOutputDerivativeOrder``
        of 1 (OpenModelica FMUs declare 1 and refuse order 2)."""
        if not getattr(cs, "canInterpolateInputs", False):
            return 0
        declared = int(getattr(cs, "maxOutputDerivativeOrder", 0) or 0)
        return min(2, declared) if declared >= 1 else 2

    def _bufs(self) -> None:
        """Buffers: ``u`` and ``y`` are ctypes double arrays in input/output order
        (Integer and Boolean values are held as doubles)."""
        var = self.variables
        n_in, n_out = len(self.inputs), len(self.outputs)
        self._n_in, self._n_out = n_in, n_out
        self.u = (ctypes.c_double * max(n_in, 1))()
        self.y = (ctypes.c_double * max(n_out, 1))()
        self._out_vr = (ctypes.c_uint * max(n_out, 1))(*[var[n].vr for n in self.outputs])
        self._real_out = all(var[n].type == "Real" for n in self.outputs)
        self._out_groups = [(typ, [j for j, n in enumerate(self.outputs) if var[n].type == typ])
                            for typ in ("Real", "Integer", "Boolean", "String")]
        self.connect_inputs(range(n_in))

    def connect_inputs(self, driven: Iterable[int]) -> None:
        """Push only the inputs at positions ``driven`` (the connected ones; the
        others keep the values set before initialization)."""
        var = self.variables
        driven = sorted(set(driven))
        self._all_real_in = driven == list(range(self._n_in)) and all(var[n].type == "Real" for n in self.inputs)
        self._in_vr = (ctypes.c_uint * max(self._n_in, 1))(*[var[n].vr for n in self.inputs])
        self._in_groups = []
        for typ in ("Real", "Integer", "Boolean", "String"):
            idx = [j for j in driven if var[self.inputs[j]].type == typ]
            if idx:
                ct = _BUF_CTYPE[typ]
                self._in_groups.append((typ, idx, (ctypes.c_uint * len(idx))(*[var[self.inputs[j]].vr for j in idx]),
                                        (ct * len(idx))()))
        real = next((g for g in self._in_groups if g[0] == "Real"), None)
        self._der_idx = real[1] if real else []
        self._der_vr = real[2] if real else None
        nd = max(len(self._der_idx), 1)
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
        from fmpy.fmi2 import FMU2Slave

        self.terminate()
        self._fatal = False
        self.log.clear()
        self._log_key = next(_LOG_KEYS)
        _LOGS[self._log_key] = self.log
        cb = _callbacks(self._log_key)
        self._callbacks = cb  # must outlive the instance
        try:
            fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=self._unzipdir, modelIdentifier=self.model_identifier,
                            instanceName=self.name)
            fmu.instantiate(callbacks=cb, loggingOn=self.logging_on)
            if self.logging_on and self.md.logCategories:
                fmu.setDebugLogging(True, [c.name for c in self.md.logCategories])
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: cannot instantiate {self.path.name}: {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._fmu = fmu
        f = fmu._functions
        self._c = fmu.component
        self._doStep, self._getReal, self._setReal = f["fmi2DoStep"], f["fmi2GetReal"], f["fmi2SetReal"]
        self._set = {t: f[f"fmi2Set{t}"] for t in ("Real", "Integer", "Boolean", "String")}
        self._get = {t: f[f"fmi2Get{t}"] for t in ("Real", "Integer", "Boolean", "String")}
        self._setDer = f.get("fmi2SetRealInputDerivatives")
        self._no_prior = 0 if self.will_roll_back else 1  # fmi2DoStep's noSetFMUStatePriorToCurrentPoint
        try:
            fmu.setupExperiment(tolerance=self.tolerance, startTime=t0, stopTime=stop_time)
            self._set_values(self.values)
            fmu.enterInitializationMode()
            fmu.exitInitializationMode()
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: initialization failed: {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._start_inputs()
        self.pull()

    def _start_inputs(self) -> None:
        """The input buffer starts at the values set, else the start values."""
        for j, n in enumerate(self.inputs):
            start = self.values.get(n, self.variables[n].start)
            if self.variables[n].type == "String":
                self.u[j] = string_code("" if start is None else str(start))
            else:
                self.u[j] = float(start) if start is not None else 0.0

    def _set_values(self, values: Mapping[str, Any]) -> None:
        fmu = self._fmu
        for n, val in values.items():
            v = self.variables[n]
            if v.type == "Real":
                fmu.setReal([v.vr], [float(val)])
            elif v.type == "Integer":
                fmu.setInteger([v.vr], [int(val)])
            elif v.type == "Boolean":
                fmu.setBoolean([v.vr], [bool(val)])
            else:
                fmu.setString([v.vr], [str(val)])

    def terminate(self) -> None:
        if self._fmu is not None:
            fmu, self._fmu = self._fmu, None
            if getattr(self, "_fatal", False):
                # FMI 2.0 forbids every call after fmi2Fatal (fmi2Terminate and
                # fmi2FreeInstance on such an instance crash pythonfmu FMUs): leak it
                _LOGS.pop(self._log_key, None)
                return
            try:
                fmu.terminate()
            except Exception:
                pass
            try:
                fmu.freeInstance()
            except Exception:
                pass
            _LOGS.pop(self._log_key, None)

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
        if self._all_real_in:
            s = self._setReal(self._c, self._in_vr, self._n_in, u)
            if s > 1:
                raise _status_error(self, "fmi2SetReal", s)
            return
        for typ, idx, vr, buf in self._in_groups:
            if typ == "Real":
                for m, j in enumerate(idx):
                    buf[m] = u[j]
            elif typ == "String":
                for m, j in enumerate(idx):
                    buf[m] = string_text(u[j]).encode("utf-8")
            else:
                for m, j in enumerate(idx):
                    buf[m] = int(round(u[j]))
            s = self._set[typ](self._c, vr, len(idx), buf)
            if s > 1:
                raise _status_error(self, f"fmi2Set{typ}", s)

    def push_derivatives(self, d1: Sequence[float], d2: Sequence[float]) -> None:
        """First and second time derivatives of the connected Real inputs (in the
        master's units: a converted input's derivatives are scaled by its gain)."""
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
                raise _status_error(self, f"fmi2SetRealInputDerivatives (order {order})", s)

    def pull(self) -> None:
        if self._real_out:
            s = self._getReal(self._c, self._out_vr, self._n_out, self.y)
            if s > 1:
                raise _status_error(self, "fmi2GetReal", s)
            return
        y = self.y
        for typ, idx in self._out_groups:
            if not idx:
                continue
            vr = (ctypes.c_uint * len(idx))(*[self._out_vr[j] for j in idx])
            buf = (_BUF_CTYPE[typ] * len(idx))()
            s = self._get[typ](self._c, vr, len(idx), buf)
            if s > 1:
                raise _status_error(self, f"fmi2Get{typ}", s)
            if typ == "String":
                for m, j in enumerate(idx):
                    y[j] = string_code((buf[m] or b"").decode("utf-8", "replace"))
            else:
                for m, j in enumerate(idx):
                    y[j] = float(buf[m])

    def do_step(self, t: float, h: float) -> None:
        s = self._doStep(self._c, t, h, self._no_prior)
        if s > 1:
            raise self._step_error(s, t, h)

    def _step_error(self, status: int, t: float, h: float) -> CosimError:
        """The error for a failed ``fmi2DoStep``: :class:`StopRequested` when the
        FMU returned fmi2Discard and reports ``fmi2Terminated`` (it asks to stop)."""
        if status == 2:
            flag = ctypes.c_int(0)
            get = self._fmu._functions.get("fmi2GetBooleanStatus") if self._fmu is not None else None
            if get is not None and get(self._c, FMI2_TERMINATED, ctypes.byref(flag)) == 0 and flag.value:
                log = self.log_text(LOG_LINES_SHOWN)
                return StopRequested(f"unit {self.name!r} asked to stop (fmi2Terminated) in the step from t = {t!r} s"
                                     + (f"; last unit log lines:\n{log}" if log else ""), unit=self.name, time=t)
        return _status_error(self, f"fmi2DoStep(h = {h!r} s)", status, t)

    def getter(self, names: Sequence[str]) -> Callable[[], Sequence[float]]:
        vs = [self.variable(n) for n in names]
        bad = [v.name for v in vs if v.type not in _BUF_CTYPE]
        if bad:
            raise InputError(f"unit {self.name!r}: cannot record non-numeric variables {bad}")
        if all(v.type == "Real" for v in vs):
            vr = (ctypes.c_uint * len(vs))(*[v.vr for v in vs])
            buf = (ctypes.c_double * len(vs))()
            n = len(vs)

            def get() -> Sequence[float]:
                self._getReal(self._c, vr, n, buf)
                return buf
            return get

        def get_mixed() -> list[float]:
            out = []
            for v in vs:
                if v.type == "String":
                    out.append(string_code(self._fmu.getString([v.vr])[0].decode("utf-8", "replace")))
                    continue
                g = {"Real": self._fmu.getReal, "Integer": self._fmu.getInteger, "Boolean": self._fmu.getBoolean}[v.type]
                out.append(float(g([v.vr])[0]))
            return out
        return get_mixed

    # -- rollback -----------------------------------------------------------------
    def get_state(self) -> Any:
        if not self.can_rollback:
            return super().get_state()
        return self._fmu.getFMUstate()

    def set_state(self, state: Any) -> None:
        self._fmu.setFMUstate(state)

    def free_state(self, state: Any) -> None:
        self._fmu.freeFMUstate(state)


def validate(path: str | Path) -> list[str]:
    """Problems fmpy's validator finds in an FMU (``[]`` when it conforms)."""
    from fmpy.validation import validate_fmu
    return list(validate_fmu(str(path)))
