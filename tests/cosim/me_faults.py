"""Faults injected into a Model Exchange unit's solver: the FMU's derivative call made to fail."""
from __future__ import annotations

import ctypes

from mbfmu.cosim.fmi import me_solver

_GET_DX = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.c_size_t)


def fail_derivative_calls_from(monkeypatch, first: int) -> list:
    """From its ``first``-th evaluation on, the FMU's derivative call returns fmiError (3); the
    wrapper sits in the solver's C context, so CVODE sees it as the FMU's own call. Returns the
    list that keeps the callbacks alive for the test."""
    keep = []
    original_init = me_solver.MeSolver.__init__

    def failing_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        real = _GET_DX(self.ctx.get_dx)
        count = {"n": 0}

        def fail_late(c, dx, n):
            count["n"] += 1
            return 3 if count["n"] >= first else real(c, dx, n)
        cb = _GET_DX(fail_late)
        keep.append(cb)
        self.ctx.get_dx = ctypes.cast(cb, ctypes.c_void_p).value
    monkeypatch.setattr(me_solver.MeSolver, "__init__", failing_init)
    return keep
