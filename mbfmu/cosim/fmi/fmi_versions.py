"""What differs between FMI 2.0 and FMI 3.0, in one table.

:class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit` runs an FMU of either version the
same way; each difference it meets is a field of the version's
:class:`FmiVersion` here:

* the value types: the get/set call of each declared type (``fmi2GetReal``,
  ``fmi3GetFloat64``, FMI 2 Enumeration through ``fmi2GetInteger``), its C
  type, and how a master value (a float; a String's code) becomes a C value and
  back (:class:`ValueType`);
* the calls' shapes: FMI 3 get/set take the number of values (arrays), FMI 3
  ``fmi3DoStep`` returns flags (``terminateSimulation`` among them);
* what one version has and the other not: input derivatives
  (``fmi2SetRealInputDerivatives``), the stop request of FMI 2
  (``fmi2Discard`` with ``fmi2GetBooleanStatus(fmi2Terminated)``);
* fmpy's spelling of the same calls (``getFMUstate`` / ``getFMUState``,
  ``newDiscreteStates`` / ``updateDiscreteStates``) and how an instance is
  made, logs and is initialized.
"""
from __future__ import annotations

import collections
import ctypes
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..typed import string_code, string_text

FMI2_TERMINATED = 3  # fmi2StatusKind fmi2Terminated
STATUS_LABELS = ("OK", "WARNING", "DISCARD", "ERROR", "FATAL", "PENDING")


@dataclass(frozen=True)
class ValueType:
    """One declared variable type of an FMI version.

    Attributes
    ----------
    api : str
        The suffix of its get and set calls (``Real``: ``fmi2GetReal``).
    master : str
        The master's type: ``"Real"``, ``"Integer"``, ``"Boolean"`` or ``"String"``.
    ctype : type
        The ctypes type of one value.
    to_c : callable
        A master buffer value (float; a String's code) as the C value.
    from_c : callable
        A C value as a master buffer value.
    recorded : callable
        A C value as the recording getters give it.
    given : callable
        A value given by the user (``values=``) as the C value.
    code : int
        The value-type code of the compiled loop (``csrc/fastloop.c``).
    record_code : int
        Its code for the recording getters.
    """

    api: str
    master: str
    ctype: Any
    to_c: Callable[[float], Any]
    from_c: Callable[[Any], float]
    recorded: Callable[[Any], float]
    given: Callable[[Any], Any]
    code: int
    record_code: int


def _text_to_c(value: float) -> bytes:
    return string_text(value).encode("utf-8")


def _text_from_c(value: Any) -> float:
    return string_code((value or b"").decode("utf-8", "replace"))


def _text_given(value: Any) -> bytes:
    return ("" if value is None else str(value)).encode("utf-8")


def _rounded(value: float) -> int:
    return int(round(value))


def _fmi2_types() -> dict[str, ValueType]:
    c_int = ctypes.c_int
    real = ValueType("Real", "Real", ctypes.c_double, float, float, float, float, 0, 0)
    integer = ValueType("Integer", "Integer", c_int, _rounded, float, float, int, 11, 11)
    # an fmi2Boolean is an int: pulled as the FMU wrote it, recorded as 0 or 1 (as fmpy's getBoolean reads it)
    boolean = ValueType("Boolean", "Boolean", c_int, _rounded, float, lambda v: float(bool(v)),
                        lambda v: int(bool(v)), 12, 13)
    string = ValueType("String", "String", ctypes.c_char_p, _text_to_c, _text_from_c, _text_from_c, _text_given,
                       14, 14)
    return {"Real": real, "Integer": integer, "Enumeration": integer, "Boolean": boolean, "String": string}


def _fmi3_types() -> dict[str, ValueType]:
    def number(v: Any) -> float:
        return float(v or 0.0)

    def whole(v: Any) -> int:
        return int(round(float(v or 0.0)))

    types = {t: ValueType(t, "Real", c, float, float, float, number, code, code)
             for t, c, code in (("Float64", ctypes.c_double, 0), ("Float32", ctypes.c_float, 1))}
    ints = (("Int8", ctypes.c_int8, 2), ("UInt8", ctypes.c_uint8, 3), ("Int16", ctypes.c_int16, 4),
            ("UInt16", ctypes.c_uint16, 5), ("Int32", ctypes.c_int32, 6), ("UInt32", ctypes.c_uint32, 7),
            ("Int64", ctypes.c_int64, 8), ("UInt64", ctypes.c_uint64, 9))
    types.update({t: ValueType(t, "Integer", c, _rounded, float, float, whole, code, code) for t, c, code in ints})
    types["Enumeration"] = types["Int64"]
    types["Boolean"] = ValueType("Boolean", "Boolean", ctypes.c_bool, lambda v: v != 0.0, float, float,
                                 lambda v: float(v or 0.0) != 0.0, 10, 10)
    types["String"] = ValueType("String", "String", ctypes.c_char_p, _text_to_c, _text_from_c, _text_from_c,
                                _text_given, 14, 14)
    return types


# -- FMI 2 logging ---------------------------------------------------------------------
# fmpy's native logger proxy (which formats printf-style messages) forwards to ONE
# process-wide Python logger, the last one registered. So all FMI 2 units share one
# logger that lives as long as the process, and messages are routed to their unit by
# the componentEnvironment key.
_LOGS: dict[int, "collections.deque[str]"] = {}
_LOG_KEYS = itertools.count(1)
_LOGGER: Any = None


def log_line(status: int, category: bytes | None, message: bytes | None) -> str:
    """One FMU log message as the unit keeps it: ``[STATUS] [category] text``."""
    label = STATUS_LABELS[status] if 0 <= status < len(STATUS_LABELS) else str(status)
    return (f"[{label}] [{(category or b'').decode('utf-8', 'replace')}] "
            f"{(message or b'').decode('utf-8', 'replace')}")


def _route_log(env: Any, instance: bytes, status: int, category: bytes, message: bytes) -> None:
    log = _LOGS.get(env or 0)
    if log is not None:
        log.append(log_line(status, category, message))


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


def release_log(unit: Any) -> None:
    """Stop routing FMI 2 log messages to ``unit`` (its instance is gone)."""
    _LOGS.pop(getattr(unit, "_log_key", None), None)


# -- instances ---------------------------------------------------------------------------
def _instantiate2(unit: Any, model: bool, log_message: Callable[..., None]) -> Any:
    from fmpy.fmi2 import FMU2Model, FMU2Slave

    unit._log_key = next(_LOG_KEYS)
    _LOGS[unit._log_key] = unit.log
    cb = _callbacks(unit._log_key)
    unit._callbacks = cb  # must outlive the instance
    fmu = (FMU2Model if model else FMU2Slave)(guid=unit.md.guid, unzipDirectory=unit._unzipdir,
                                               modelIdentifier=unit.model_identifier, instanceName=unit.name)
    fmu.instantiate(callbacks=cb, loggingOn=unit.logging_on)
    return fmu


def _instantiate3(unit: Any, model: bool, log_message: Callable[..., None]) -> Any:
    from fmpy.fmi3 import FMU3Model, FMU3Slave

    cls = FMU3Model if model else FMU3Slave
    fmu = cls(guid=unit.md.guid, unzipDirectory=unit._unzipdir, modelIdentifier=unit.model_identifier,
              instanceName=unit.name)
    if model:
        fmu.instantiate(loggingOn=unit.logging_on, logMessage=log_message)
    else:  # co-simulation without event mode (the clocked units instantiate their own)
        fmu.instantiate(loggingOn=unit.logging_on, eventModeUsed=False, earlyReturnAllowed=False,
                        logMessage=log_message)
    return fmu


def _initialize2(fmu: Any, tolerance: float | None, t0: float, stop_time: float,
                 set_values: Callable[[], None]) -> None:
    fmu.setupExperiment(tolerance=tolerance, startTime=t0, stopTime=stop_time)
    set_values()
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()


def _initialize3(fmu: Any, tolerance: float | None, t0: float, stop_time: float,
                 set_values: Callable[[], None]) -> None:
    set_values()
    fmu.enterInitializationMode(tolerance=tolerance, startTime=t0, stopTime=stop_time)
    fmu.exitInitializationMode()


def _sizes2(fmu: Any, md: Any) -> tuple[int, int]:
    return int(md.numberOfContinuousStates), int(md.numberOfEventIndicators)


def _sizes3(fmu: Any, md: Any) -> tuple[int, int]:
    return int(fmu.getNumberOfContinuousStates()), int(fmu.getNumberOfEventIndicators())


@dataclass(frozen=True)
class FmiVersion:
    """The calls and differences of one FMI version (see the module docstring).

    Attributes
    ----------
    number : int
        2 or 3.
    prefix : str
        The prefix of its C functions (``"fmi2"``).
    types : mapping
        Declared type name -> :class:`ValueType`.
    values_counted : bool
        Get and set calls take the number of values after the buffer.
    step_flags : bool
        ``DoStep`` returns its flags through pointers (FMI 3:
        eventHandlingNeeded, terminateSimulation, earlyReturn, lastSuccessfulTime).
    input_derivatives : str or None
        The C function that sets Real input derivatives, if the version has one.
    terminated_status : bool
        A step that returns Discard may be the FMU's request to stop, read with
        ``GetBooleanStatus(Terminated)``.
    state_calls : tuple of str
        fmpy's names of get, set and free FMU state.
    discrete_update : str
        fmpy's name of the Model Exchange event iteration call.
    derivatives : str
        fmpy's name of the Model Exchange state derivatives call.
    instantiate : callable
        ``(unit, model_exchange, log_message) -> fmpy instance``.
    initialize : callable
        ``(fmu, tolerance, t0, stop_time, set_values)``: set-up to the end of initialization.
    sizes : callable
        ``(fmu, md) -> (continuous states, event indicators)`` of a Model Exchange instance.
    """

    number: int
    prefix: str
    types: Mapping[str, ValueType]
    values_counted: bool
    step_flags: bool
    input_derivatives: str | None
    terminated_status: bool
    state_calls: tuple[str, str, str]
    discrete_update: str
    derivatives: str
    instantiate: Callable[[Any, bool, Callable[..., None]], Any]
    initialize: Callable[[Any, float | None, float, float, Callable[[], None]], None]
    sizes: Callable[[Any, Any], tuple[int, int]]

    def call(self, verb: str, vt: ValueType) -> str:
        """The C function name of ``verb`` (``"Get"``/``"Set"``) for a value type."""
        return f"{self.prefix}{verb}{vt.api}"


FMI2 = FmiVersion(2, "fmi2", _fmi2_types(), values_counted=False, step_flags=False,
                  input_derivatives="fmi2SetRealInputDerivatives", terminated_status=True,
                  state_calls=("getFMUstate", "setFMUstate", "freeFMUstate"), discrete_update="newDiscreteStates",
                  derivatives="getDerivatives", instantiate=_instantiate2, initialize=_initialize2, sizes=_sizes2)
FMI3 = FmiVersion(3, "fmi3", _fmi3_types(), values_counted=True, step_flags=True, input_derivatives=None,
                  terminated_status=False, state_calls=("getFMUState", "setFMUState", "freeFMUState"),
                  discrete_update="updateDiscreteStates", derivatives="getContinuousStateDerivatives",
                  instantiate=_instantiate3, initialize=_initialize3, sizes=_sizes3)


def version_of(md: Any) -> FmiVersion | None:
    """The :class:`FmiVersion` of a model description, or None for another version."""
    version = str(md.fmiVersion)
    return FMI2 if version == "2.0" else FMI3 if version.startswith("3.") else None


def parse_start(text: Any, vt_master: str, n: int) -> list[Any]:
    """``n`` start values of a variable from its model description ``start``
    (``None`` when absent): floats (Boolean 0/1), text for String; an array's
    values are separated by white space.

    Parameters
    ----------
    text : str, bool, number or None
        The start attribute as fmpy read it.
    vt_master : str
        The master type of the variable.
    n : int
        Number of elements.

    Returns
    -------
    list
        ``n`` values.
    """
    if text is None:
        return [None] * n
    if vt_master == "String":
        return [str(text)] * n
    items = str(text).split() if n > 1 else [str(text)]
    if vt_master == "Boolean":
        vals = [float(s.lower() in ("true", "1")) for s in items]
    else:
        vals = [float(s) for s in items]
    return (vals * n)[:n] if len(vals) < n else vals[:n]


def dimension(d: Any, by_vr: Mapping[int, Any]) -> int:
    """The size of one array dimension (FMI 3), given or taken from the start of
    the variable it names."""
    from ...errors import InputError
    if d.start is not None:
        return int(d.start)
    ref = d.variable if d.variable is not None else by_vr.get(d.valueReference)
    if ref is None or ref.start is None:
        raise InputError(f"array dimension given by value reference {d.valueReference} has no start value")
    return int(ref.start)


def indices(shape: list[int] | tuple[int, ...]) -> list[tuple[int, ...]]:
    """Row-major index tuples of an array of ``shape``."""
    out: list[tuple[int, ...]] = [()]
    for n in shape:
        out = [idx + (i,) for idx in out for i in range(n)]
    return out


def element_names(v: Any, by_vr: Mapping[int, Any]) -> list[str]:
    """The scalar names of a variable: its name, or ``x[1]``, ``A[2,1]`` for the
    elements of an array (1-based, row major)."""
    shape = [dimension(d, by_vr) for d in (getattr(v, "dimensions", None) or ())]
    return [v.name] if not shape else [f"{v.name}[{','.join(str(i + 1) for i in idx)}]" for idx in indices(shape)]
