"""Issue 37.10: the native Model Exchange FMU refuses non-finite derivatives, naming the state.

Finite but huge states (1e308: a velocity squared overflows) gave NaN
derivatives with fmi2OK / fmi3OK, in FMI 2 and FMI 3; a co-simulation step
already refused non-finite results. Now ``GetDerivatives`` returns an error
naming the state whose derivative is not finite.
"""
from __future__ import annotations

import ctypes as C
import math

import numpy as np

from .ctypes_hosts import ERROR, LOGGER3, ME, OK

HUGE = 1e308


def _refuses_huge(status: int, dx, log: list[str]) -> None:
    assert status == ERROR, f"status {status} with derivatives {list(dx)}"
    assert "the derivative of state" in log[-1] and "is not finite" in log[-1], log[-1]


def test_fmi2_model_exchange_refuses_non_finite_derivatives_naming_the_state(host):  # noqa: F811 (a fixture imported from another module)
    h = host(ME)
    h.initialize()
    assert h("fmi2EnterContinuousTimeMode") == OK
    # the control: ordinary states give finite derivatives with OK
    x = np.full(h.nx, 0.1)
    dx = (C.c_double * h.nx)()
    assert h("fmi2SetContinuousStates", (C.c_double * h.nx)(*x), C.c_size_t(h.nx)) == OK
    assert h("fmi2GetDerivatives", dx, C.c_size_t(h.nx)) == OK and all(map(math.isfinite, dx))
    assert h("fmi2SetContinuousStates", (C.c_double * h.nx)(*np.full(h.nx, HUGE)), C.c_size_t(h.nx)) == OK
    _refuses_huge(h("fmi2GetDerivatives", dx, C.c_size_t(h.nx)), dx, h.log)
    states = [d.variable.derivative.name for d in h.md.derivatives]
    assert any(f"state {s} " in h.log[-1] for s in states), h.log[-1]
    # a derivative read as a variable is refused too, not handed out as NaN
    value = (C.c_double * 1)()
    vr = h.md.derivatives[0].variable.valueReference
    assert h("fmi2GetReal", (C.c_uint * 1)(vr), C.c_size_t(1), value) != OK


class MeHost3:
    """One FMI 3 Model Exchange instance through ctypes; ``log`` holds its messages."""

    def __init__(self, fmu):  # noqa: F811 (a fixture imported from another module)
        so, self.md = fmu
        self.lib = C.CDLL(str(so))
        self.log: list[str] = []
        self._logger = LOGGER3(lambda env, status, cat, msg: self.log.append(msg.decode()))
        f = self.lib.fmi3InstantiateModelExchange
        f.restype = C.c_void_p
        f.argtypes = [C.c_char_p, C.c_char_p, C.c_char_p, C.c_bool, C.c_bool, C.c_void_p, LOGGER3]
        self.c = C.c_void_p(f(b"m", self.md.instantiationToken.encode(), b"", False, False, None, self._logger))
        assert self.c.value, self.log

    def __call__(self, fn, *args):
        f = getattr(self.lib, fn)
        f.restype = C.c_int
        return f(self.c, *args)

    def close(self):
        self.lib.fmi3FreeInstance.restype = None
        self.lib.fmi3FreeInstance(self.c)


def test_fmi3_model_exchange_refuses_non_finite_derivatives_naming_the_state(fmu3):  # noqa: F811 (a fixture imported from another module)
    h = MeHost3(fmu3)
    try:
        assert h("fmi3EnterInitializationMode", C.c_bool(False), C.c_double(0), C.c_double(0), C.c_bool(False),
                 C.c_double(0)) == OK
        assert h("fmi3ExitInitializationMode") == OK
        flags = [C.c_bool() for _ in range(5)]
        assert h("fmi3UpdateDiscreteStates", *map(C.byref, flags), C.byref(C.c_double())) == OK
        assert h("fmi3EnterContinuousTimeMode") == OK
        count = C.c_size_t()
        assert h("fmi3GetNumberOfContinuousStates", C.byref(count)) == OK
        n = count.value
        dx = (C.c_double * n)()
        assert h("fmi3SetContinuousStates", (C.c_double * n)(*np.full(n, 0.1)), C.c_size_t(n)) == OK
        assert h("fmi3GetContinuousStateDerivatives", dx, C.c_size_t(n)) == OK and all(map(math.isfinite, dx))
        assert h("fmi3SetContinuousStates", (C.c_double * n)(*np.full(n, HUGE)), C.c_size_t(n)) == OK
        _refuses_huge(h("fmi3GetContinuousStateDerivatives", dx, C.c_size_t(n)), dx, h.log)
    finally:
        h.close()
