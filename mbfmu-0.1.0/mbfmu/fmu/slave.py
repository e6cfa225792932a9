"""The generic pythonfmu slave that runs any :class:`~mbfmu.plant.Plant`.

:class:`PlantSlave` is a thin adapter (pythonfmu's ``Fmi2Slave``): it builds
the plant from a :class:`~mbfmu.fmu.plantref.PlantRef`, registers the
plant's ports as FMU variables and calls the plant's own integrator
(``Plant.advance``) in :meth:`~PlantSlave.do_step`.

Variables, in value-reference order:

* inputs (``causality="input"``, continuous, start = the signal's start);
* parameters (``causality="parameter"``, ``variability="tunable"``): setting
  one rebuilds the plant; before the first step the state is reset to the new
  plant's ``initial_state()``, afterwards the state is kept;
* outputs (``causality="output"``, ``initial="calculated"``), computed with
  ``Plant.outputs_at(t, x, u)`` once per step (for engine sensors: one
  compiled call, the native FMU's sensor code) and again only when an input
  changes, so that direct feedthrough sees inputs set after the last step;
* the plant state as locals ``states.<name>`` (so a master can record it).

Nothing here raises into pythonfmu (which would turn any exception into
``fmi2Fatal`` and destroy the instance): failures are reported through
:meth:`PlantSlave.report`, which, inside a built FMU, reaches the loader shim
(``mbfmu_report``): the message goes to the host's logger and the FMI call in
progress returns ``fmi2Error``.

All values live in one array in value-reference order (inputs, parameters,
outputs, states) that the loader shim reads and writes (``mbfmu_attach``):
inside a built FMU, ``fmi2GetReal`` of fresh values and ``fmi2SetReal`` of
inputs within their bounds run no Python; anything else comes here.

The whole FMU state (time, plant state, inputs, parameters) is what
``_get_fmu_state`` saves, so a restored state continues bit-identically; it
serializes to JSON (Python floats round-trip exactly), and a serialized state
from a host is checked completely before any of it is applied
(:mod:`mbfmu.fmu.saved_state`).
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pythonfmu import Fmi2Slave
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Real

from ..plant import Plant
from .embed import check_embedded_modules
from .plantref import PlantRef, build_plant
from .saved_state import SavedState, check_state, state_from_bytes

INPUT, PARAMETER, OUTPUT, STATE = 0, 1, 2, 3
STATE_PREFIX = "states."
_REPORT = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)
# mbfmu_attach(values, n, fresh, nu, u_min, u_max)
_ATTACH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                           ctypes.c_void_p)
_WINDOWS = sys.platform == "win32"
PLATFORM, LIB_SUFFIX = ("win64", ".dll") if _WINDOWS else ("linux64", ".so")


def _loaded_symbol(lib: Path, name: str) -> int | None:
    """Address of ``name`` in ``lib`` if this process has already loaded it,
    without keeping a new reference to the library (the host must be able
    to unload the FMU)."""
    if _WINDOWS:
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        kernel32.GetModuleHandleW.restype = ctypes.c_void_p
        kernel32.GetProcAddress.restype = ctypes.c_void_p
        kernel32.GetProcAddress.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        handle = kernel32.GetModuleHandleW(str(lib))  # borrowed: no reference taken
        return kernel32.GetProcAddress(handle, name.encode()) if handle else None
    try:
        shim = ctypes.CDLL(str(lib), mode=os.RTLD_NOW | os.RTLD_NOLOAD)
    except OSError:
        return None  # not loaded by this process (e.g. the build itself)
    try:
        address = ctypes.cast(getattr(shim, name), ctypes.c_void_p).value
    except AttributeError:
        address = None
    dlclose = ctypes.CDLL(None).dlclose
    dlclose.argtypes = (ctypes.c_void_p,)
    dlclose(shim._handle)
    return address


def _shim_of(resources: Path, model_identifier: str, name: str = "mbfmu_report", prototype: Any = _REPORT) -> Any:
    """Function ``name`` of the loader shim of the FMU whose resources folder
    is ``resources``, if this process has loaded it, else None."""
    try:
        lib = resources.resolve().parent / "binaries" / PLATFORM / f"{model_identifier}{LIB_SUFFIX}"
        address = _loaded_symbol(lib, name) if lib.is_file() else None
    except OSError:
        return None
    return prototype(address) if address else None


def pin_module_dict(namespace: dict[str, Any]) -> None:
    """Add one reference to a module's ``__dict__`` (never released).

    pythonfmu 0.7's export library (``findClass`` in ``PySlaveInstance.cpp``)
    calls ``Py_DECREF`` on the *borrowed* result of ``PyModule_GetDict`` of
    the slave module at every ``fmi2Instantiate``. Without compensation the
    module's namespace is freed after the first instantiation: the second
    one fails ("module has no attribute ...") and the interpreter later
    touches freed memory (heap corruption at exit). The generated slave script
    pins its namespace once when imported and :class:`PlantSlave` once per
    instance, so the reference count never reaches zero; a surplus only makes
    the (already ``sys.modules``-owned) namespace immortal.
    """
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(namespace))


class _Text:
    """An object whose repr is always the same string object."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def __repr__(self) -> str:
        return self._text


class _FinderType(type):
    @property
    def __mro__(cls) -> tuple:  # what pythonfmu's findClass reads, instead of the real one
        return _FINDER_MRO


_FINDER_MRO = (_Text(""), _Text("<class 'pythonfmu.fmi2slave.Fmi2Slave'>"))
#: The class pythonfmu 0.7 finds under the name ``P`` in the locals of its re-execution of the slave
#: script at every fmi2Instantiate (the generated script puts it there; the module's ``P`` is the
#: real slave class, which pythonfmu then takes). pythonfmu's ``findClass`` leaks, per class it
#: finds there and per entry of that class's ``__mro__``, the ``repr`` string and its UTF-8 bytes,
#: and the bytes of the name: 1.1-1.4 kB per instantiation with the real class (MRO of five).
#: This stand-in's ``__mro__`` is two objects whose reprs are fixed strings (no new string), the
#: first empty and the name one character (CPython's cached empty and one-byte bytes): what is left
#: is the list of the MRO, the bytes of one repr and the ``sys.path`` entry pythonfmu adds.
CLASS_FINDER = _FinderType("CLASS_FINDER", (), {})


class PlantSlave(Fmi2Slave):
    """FMI 2.0 co-simulation slave around one plant.

    Subclasses (written by :mod:`mbfmu.fmu.builder` into the FMU) set the
    class attributes below; pythonfmu passes ``instance_name``,
    ``resources`` (the FMU's resources folder) and ``visible``.

    Attributes
    ----------
    plant_ref : dict
        :meth:`PlantRef.to_dict` of the plant.
    model_identifier : str
        FMI model identifier (file name of the FMU binary).
    embedded_modules : list of str
        User modules the FMU carries in its resources (:mod:`mbfmu.fmu.embed`).
    """

    plant_ref: ClassVar[dict[str, Any]] = {}
    model_identifier: ClassVar[str] = ""
    embedded_modules: ClassVar[list[str]] = []

    def __init__(self, **kwargs: Any) -> None:
        module = sys.modules.get(type(self).__module__)
        if module is not None:
            pin_module_dict(module.__dict__)  # first: see pin_module_dict
        super().__init__(**kwargs)
        if self.resources and sys.path.count(self.resources) > 1:
            sys.path.remove(self.resources)  # pythonfmu prepends it at every instantiation
        self.errors: list[str] = []   # every message reported, for tests and debugging
        self._shim = self._find_shim()
        self._ref = PlantRef.from_dict(self.plant_ref)
        self._base = Path(self.resources) if self.resources else None
        try:
            plant = build_plant(self._ref, self._base)
            if self._base is not None:
                check_embedded_modules(self.embedded_modules, self._base)
        except Exception as exc:  # instantiation fails; say why first
            self.report(Fmi2Status.fatal, f"cannot build plant {self._ref.target!r}: {type(exc).__name__}: {exc}")
            raise
        self._set_plant(plant)
        self.modelName = self.model_identifier or plant.name
        self.description = plant.description or f"mbfmu plant {plant.name}"
        self.default_experiment = DefaultExperiment(start_time=0.0, stop_time=float(plant.default_stop_time),
                                                    step_size=float(plant.default_step))
        # every variable's value in value-reference order (inputs, parameters, outputs, states): the
        # vectors below are views into it, written in place, which the loader shim reads and writes
        nu, np_, ny, nx = self._nu, self._np, self._ny, self._nx
        self._values = np.zeros(nu + np_ + ny + nx)
        self._u, self._p = self._values[:nu], self._values[nu:nu + np_]
        self._yv, self._x = self._values[nu + np_:nu + np_ + ny], self._values[nu + np_ + ny:]
        self._fresh = np.zeros(1, dtype=np.int32)  # 1: self._yv holds the outputs at (t, x, u)
        self._u[:] = plant.default_inputs()
        self._p[:] = [s.start for s in plant.parameters]
        self._x[:] = plant.initial_state()
        self._t = 0.0
        self._stepped = False
        self._register()
        self._attach()

    # ---- set-up ---------------------------------------------------------
    def _find_shim(self) -> Any:
        """``mbfmu_report`` of this FMU's loader shim, or None outside a built FMU."""
        return self._shim_function("mbfmu_report", _REPORT)

    def _shim_function(self, name: str, prototype: Any) -> Any:
        if not self.resources or not self.model_identifier:
            return None
        return _shim_of(Path(self.resources), self.model_identifier, name, prototype)

    def _set_plant(self, plant: Plant) -> None:
        self.plant = plant
        if getattr(self, "_tolerance", None) is not None:  # fmi2SetupExperiment's, kept across rebuilds
            plant.set_tolerance(self._tolerance)
        self._nu, self._np = len(plant.inputs), len(plant.parameters)
        self._ny, self._nx = len(plant.outputs), len(plant.states)
        bounds = [(-math.inf if s.min is None else s.min, math.inf if s.max is None else s.max) for s in plant.inputs]
        if not hasattr(self, "_u_min"):
            self._u_min, self._u_max = np.zeros(self._nu), np.zeros(self._nu)
        self._u_min[:] = [lo for lo, _ in bounds]  # in place: the shim holds their addresses
        self._u_max[:] = [hi for _, hi in bounds]

    def _attach(self) -> None:
        """Give the loader shim the values and input bounds, so that it answers
        fmi2GetReal (outputs fresh) and fmi2SetReal of inputs in C, without
        Python (``mbfmu_attach`` in ``resources/shim.c``)."""
        attach = self._shim_function("mbfmu_attach", _ATTACH)
        if attach is not None:
            attach(self._values.ctypes.data, len(self._values), self._fresh.ctypes.data, self._nu,
                   self._u_min.ctypes.data, self._u_max.ctypes.data)

    def _register(self) -> None:
        """Register the plant's ports as FMU variables (value reference =
        registration order) and build the value-reference table."""
        plant = self.plant
        self._table: list[tuple[int, int]] = []
        groups = (
            (INPUT, plant.inputs, dict(causality=Fmi2Causality.input, variability=Fmi2Variability.continuous)),
            (PARAMETER, plant.parameters, dict(causality=Fmi2Causality.parameter,
                                               variability=Fmi2Variability.tunable, initial=Fmi2Initial.exact)),
            (OUTPUT, plant.outputs, dict(causality=Fmi2Causality.output, variability=Fmi2Variability.continuous,
                                         initial=Fmi2Initial.calculated)),
            (STATE, plant.states, dict(causality=Fmi2Causality.local, variability=Fmi2Variability.continuous,
                                       initial=Fmi2Initial.calculated)),
        )
        for kind, signals, attrs in groups:
            for i, sig in enumerate(signals):
                name = STATE_PREFIX + sig.name if kind == STATE else sig.name
                vr = len(self._table)
                self._table.append((kind, i))
                var = Real(name, description=sig.description or None,
                           getter=(lambda vr=vr: self.get_real([vr])[0]),
                           setter=(lambda v, vr=vr: self.set_real([vr], [v])), **attrs)
                self.register_variable(var, nested=False)

    def signals(self) -> list[tuple[int, Any]]:
        """``(kind, Signal)`` for every value reference, in order."""
        p = self.plant
        by_kind = {INPUT: p.inputs, PARAMETER: p.parameters, OUTPUT: p.outputs, STATE: p.states}
        return [(k, by_kind[k][i]) for k, i in self._table]

    # ---- reporting ------------------------------------------------------
    def report(self, status: Fmi2Status, message: str) -> None:
        """Report a problem: FMU log + status of the FMI call in progress.

        Parameters
        ----------
        status : Fmi2Status
            ``warning``, ``error`` or ``fatal``.
        message : str
            One readable sentence naming the variable/value/time involved.
        """
        self.errors.append(message)
        category = f"logStatus{Fmi2Status(status).name.capitalize()}"
        if self._shim is not None:
            self._shim(int(status), category.encode(), message.encode("utf-8", "replace"))
        else:
            self.log(message, Fmi2Status(status), category)

    def _bad_vr(self, vr: int) -> bool:
        if 0 <= vr < len(self._table):
            return False
        self.report(Fmi2Status.error, f"unknown value reference {vr} (this FMU has 0..{len(self._table) - 1})")
        return True

    # ---- FMI: values ------------------------------------------------------
    def _outputs(self) -> np.ndarray:
        """The outputs at (t, x, u), computed once (the plant's sensors, compiled) and kept until
        the time, state or inputs change."""
        if not self._fresh[0]:
            try:
                self._yv[:] = self.plant.outputs_at(self._t, self._x, self._u)
            except Exception as exc:
                self.report(Fmi2Status.error, f"plant {self.plant.name!r}: outputs failed at t={self._t} s: "
                                              f"{type(exc).__name__}: {exc}")
                self._yv[:] = math.nan
            self._fresh[0] = 1
        return self._yv

    def get_real(self, vrs: list[int]) -> list[float]:
        n = len(self._values)
        if not all(0 <= vr < n for vr in vrs):
            return [math.nan if self._bad_vr(vr) else self.get_real([vr])[0] for vr in vrs]
        self._outputs()
        return self._values[vrs].tolist()

    def set_real(self, vrs: list[int], values: list[float]) -> None:
        new_p = None
        for vr, value in zip(vrs, values):
            if self._bad_vr(vr):
                continue
            kind, i = self._table[vr]
            if kind == INPUT:
                sig = self.plant.inputs[i]
                try:
                    self._u[i] = sig.check(value)
                except ValueError as exc:
                    self.report(Fmi2Status.error, f"refused: {exc}; input keeps {self._u[i]} {sig.unit}")
                    continue
                self._fresh[0] = 0
            elif kind == PARAMETER:
                sig = self.plant.parameters[i]
                try:
                    v = sig.check(value)
                except ValueError as exc:
                    self.report(Fmi2Status.error, f"refused: {exc}; parameter keeps {self._p[i]} {sig.unit}")
                    continue
                if new_p is None:
                    new_p = self._p.copy()
                new_p[i] = v
            else:
                what = "output" if kind == OUTPUT else "state"
                self.report(Fmi2Status.error, f"{what} {self.signals()[vr][1].name!r} cannot be set")
        if new_p is not None and not np.array_equal(new_p, self._p):
            self._apply_parameters(new_p)

    def _named(self, p: np.ndarray) -> dict[str, float]:
        return dict(zip((s.name for s in self.plant.parameters), p.tolist()))

    def _plant_with(self, p: np.ndarray) -> tuple[Plant, PlantRef]:
        """The plant rebuilt with parameter vector ``p`` and its reference;
        raises if the plant refuses them or its ports or states would change."""
        ref = self._ref.with_parameters(self._named(p))
        plant = build_plant(ref, self._base)
        for what in ("inputs", "outputs", "parameters"):
            if [s.name for s in getattr(plant, what)] != [s.name for s in getattr(self.plant, what)]:
                raise ValueError(f"the new parameters change the plant's {what}, fixed by the FMU")
        if [s.name for s in plant.states] != [s.name for s in self.plant.states]:
            raise ValueError("the new parameters change the plant's states, fixed by the FMU")
        return plant, ref

    def _apply_parameters(self, p: np.ndarray) -> bool:
        """Rebuild the plant with parameter vector ``p``; False (reported) if refused."""
        try:
            plant, ref = self._plant_with(p)
            x = self._x if self._stepped else plant.initial_state()
        except Exception as exc:
            self.report(Fmi2Status.error, f"refused parameters {self._named(p)}: "
                                          f"{type(exc).__name__}: {exc}; the previous values are kept")
            return False
        self._set_plant(plant)
        self._ref = ref
        self._p[:], self._x[:], self._fresh[0] = p, x, 0
        return True

    # ---- FMI: life cycle ----------------------------------------------------
    def setup_experiment(self, start_time: float = 0.0, stop_time: float | None = None,
                         tolerance: float | None = None) -> None:
        if not math.isfinite(start_time):
            self.report(Fmi2Status.error, f"start time {start_time} is not finite")
            return
        self._t = float(start_time)
        self._fresh[0] = 0
        if tolerance is not None:  # defined by the host: advance's tolerance, else the plant's default
            if not (math.isfinite(tolerance) and tolerance > 0):
                self.report(Fmi2Status.error, f"tolerance {tolerance} must be finite and > 0")
                return
            self._tolerance = float(tolerance)
            self.plant.set_tolerance(self._tolerance)

    def exit_initialization_mode(self) -> None:
        self._fresh[0] = 0

    def do_step(self, current_time: float, step_size: float) -> bool:
        """Advance the plant from ``current_time`` by ``step_size`` (s) with the
        inputs held; on failure the state is kept and an error is reported."""
        if not (math.isfinite(current_time) and math.isfinite(step_size) and step_size > 0):
            self.report(Fmi2Status.error, f"refused step from t={current_time} s of size {step_size} s")
            return True
        try:  # the inputs were checked when set (here or in the shim): finite, within their bounds
            with np.errstate(all="ignore"):  # overflow shows as a non-finite state below
                x = np.asarray(self.plant.advance(current_time, self._x, self._u, step_size), dtype=float)
            if x.shape != self._x.shape or not np.isfinite(x).all():
                raise FloatingPointError("the state became non-finite")
        except Exception as exc:
            self.report(Fmi2Status.error, f"plant {self.plant.name!r}: step from t={current_time} s "
                                          f"to {current_time + step_size} s failed: {type(exc).__name__}: {exc}")
            return True
        self._x[:], self._t, self._fresh[0], self._stepped = x, current_time + step_size, 0, True
        self._outputs()  # once per step, so that fmi2GetReal is answered without Python
        return True

    # ---- FMU state --------------------------------------------------------
    def _get_fmu_state(self) -> dict[str, Any]:
        return SavedState(self.plant.name, self._t, self._stepped, self._x, self._u, self._p).to_dict()

    def _set_fmu_state(self, state: Any) -> None:
        """Restore ``state``, checked completely first: a refused state is
        reported (fmi2Error) and the FMU keeps the state it had."""
        try:
            if isinstance(state, dict) and "refused" in state and state.get("format") is None:
                raise ValueError(state["refused"])  # what _fmu_state_from_bytes refused
            new = check_state(state)
            if new.plant != self.plant.name:
                raise ValueError(f"not a state of plant {self.plant.name!r}")
            if new.p.shape != self._p.shape or new.u.shape != self._u.shape:
                raise ValueError("wrong number of parameters or inputs")
            if new.x.shape != self._x.shape:
                raise ValueError("wrong number of states")
            for sig, v in (*zip(self.plant.inputs, new.u), *zip(self.plant.parameters, new.p)):
                sig.check(v)  # the bounds a set_real would apply
            plant, ref = self.plant, self._ref
            if not np.array_equal(new.p, self._p):
                try:
                    plant, ref = self._plant_with(new.p)
                except Exception as exc:
                    raise ValueError(f"refused parameters {self._named(new.p)}: {type(exc).__name__}: {exc}") \
                        from None
        except Exception as exc:  # never into pythonfmu, which would make it fmi2Fatal
            self.report(Fmi2Status.error, f"cannot restore FMU state: {exc}")
            return
        # every check passed: only now does anything change
        if plant is not self.plant:
            self._set_plant(plant)
        self._ref = ref
        self._p[:], self._x[:], self._u[:], self._t = new.p, new.x, new.u, new.t
        self._stepped, self._fresh[0] = new.stepped, 0

    @staticmethod
    def _fmu_state_to_bytes(state: dict[str, Any]) -> bytes:
        return json.dumps(state).encode("utf-8")

    @classmethod
    def _fmu_state_from_bytes(cls, data: bytes) -> dict[str, Any]:
        """The state in ``data``, checked (:mod:`mbfmu.fmu.saved_state`); a
        refused one is reported (fmi2Error) and kept as a marker that
        ``_set_fmu_state`` refuses again."""
        try:
            return state_from_bytes(data).to_dict()
        except Exception as exc:  # never into pythonfmu, which would make it fmi2Fatal
            message = f"cannot read serialized FMU state: {exc}"
            shim = cls._class_shim()
            if shim is not None:
                shim(int(Fmi2Status.error), b"logStatusError", message.encode("utf-8", "replace"))
            return {"format": None, "refused": str(exc)}

    @classmethod
    def _class_shim(cls) -> Any:
        """``mbfmu_report`` of the FMU the class was loaded from (called by
        pythonfmu on the class, without an instance), or None."""
        module = sys.modules.get(cls.__module__)
        where = getattr(module, "__file__", None)
        if not where or not cls.model_identifier:
            return None
        return _shim_of(Path(where).parent, cls.model_identifier)
