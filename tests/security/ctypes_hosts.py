"""Hosts that call a native FMU's binary through ctypes, so that the calls are exactly
those written (fmpy's wrappers would check some arguments first): FMI 2 (CS and ME)
and FMI 3 co-simulation, their status codes and callback types."""
from __future__ import annotations

import ctypes as C


OK, WARNING, DISCARD, ERROR, FATAL = range(5)  # fmi2Status / fmi3Status
ME, CS = 0, 1  # fmi2Type

LOGGER = C.CFUNCTYPE(None, C.c_void_p, C.c_char_p, C.c_int, C.c_char_p, C.c_char_p)


class Callbacks(C.Structure):
    _fields_ = [("logger", LOGGER), ("allocateMemory", C.c_void_p), ("freeMemory", C.c_void_p),
                ("stepFinished", C.c_void_p), ("componentEnvironment", C.c_void_p)]


class EventInfo(C.Structure):
    _fields_ = [("newDiscreteStatesNeeded", C.c_int), ("terminateSimulation", C.c_int),
                ("nominalsOfContinuousStatesChanged", C.c_int), ("valuesOfContinuousStatesChanged", C.c_int),
                ("nextEventTimeDefined", C.c_int), ("nextEventTime", C.c_double)]


class Host:
    """One instance of the FMU through ctypes; ``log`` holds its messages."""

    def __init__(self, fmu, kind=CS):
        so, self.md = fmu
        self.lib = C.CDLL(str(so))
        self.log: list[str] = []
        self._logger = LOGGER(lambda env, name, status, cat, msg: self.log.append(msg.decode()))
        self._cb = Callbacks(self._logger, None, None, None, None)
        self.lib.fmi2Instantiate.restype = C.c_void_p
        self.c = C.c_void_p(self.lib.fmi2Instantiate(b"t", kind, self.md.guid.encode(), b"", C.byref(self._cb),
                                                     0, 0))
        assert self.c.value, self.log
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.nx = len(self.md.derivatives)

    def __call__(self, fn, *args):
        f = getattr(self.lib, fn)
        f.restype = C.c_int
        return f(self.c, *args)

    def get(self, vrs):
        n = len(vrs)
        values = (C.c_double * n)()
        status = self("fmi2GetReal", (C.c_uint * n)(*vrs), C.c_size_t(n), values)
        return status, list(values)

    def set(self, vrs, values):
        n = len(vrs)
        return self("fmi2SetReal", (C.c_uint * n)(*vrs), C.c_size_t(n), (C.c_double * n)(*values))

    def initialize(self):
        assert self("fmi2SetupExperiment", 0, C.c_double(0.0), C.c_double(0.0), 0, C.c_double(0.0)) == OK
        assert self("fmi2EnterInitializationMode") == OK
        assert self("fmi2ExitInitializationMode") == OK

    def step(self, t, h):
        return self("fmi2DoStep", C.c_double(t), C.c_double(h), 1)

    def close(self):
        self.lib.fmi2FreeInstance.restype = None
        self.lib.fmi2FreeInstance(self.c)


# ---------------------------------------------------------------- FMI 3
LOGGER3 = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_char_p, C.c_char_p)


class Host3:
    """One FMI 3 co-simulation instance through ctypes; ``log`` holds its messages."""

    def __init__(self, fmu):
        so, self.md = fmu
        self.lib = C.CDLL(str(so))
        self.log: list[str] = []
        self._logger = LOGGER3(lambda env, status, cat, msg: self.log.append(msg.decode()))
        f = self.lib.fmi3InstantiateCoSimulation
        f.restype = C.c_void_p
        f.argtypes = [C.c_char_p, C.c_char_p, C.c_char_p, C.c_bool, C.c_bool, C.c_bool, C.c_bool, C.c_void_p,
                      C.c_size_t, C.c_void_p, LOGGER3, C.c_void_p]
        self.c = C.c_void_p(f(b"t", self.md.instantiationToken.encode(), b"", False, False, False, False, None, 0,
                              None, self._logger, None))
        assert self.c.value, self.log
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}

    def __call__(self, fn, *args):
        f = getattr(self.lib, fn)
        f.restype = C.c_int
        return f(self.c, *args)

    def init(self):
        return self("fmi3EnterInitializationMode", C.c_bool(False), C.c_double(0), C.c_double(0), C.c_bool(False),
                    C.c_double(0))

    def step(self, t, h):
        flags = [C.c_bool() for _ in range(3)]
        return self("fmi3DoStep", C.c_double(t), C.c_double(h), C.c_bool(True), *map(C.byref, flags),
                    C.byref(C.c_double()))

    def set_tau(self, values):
        return self("fmi3SetFloat64", (C.c_uint32 * 1)(self.vr["tau"]), C.c_size_t(1),
                    (C.c_double * len(values))(*values), C.c_size_t(len(values)))

    def close(self):
        self.lib.fmi3FreeInstance.restype = None
        self.lib.fmi3FreeInstance(self.c)
