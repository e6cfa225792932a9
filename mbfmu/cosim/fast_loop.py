"""The compiled fast path of the fixed-step master loop.

When every unit of a system is an FMI 2.0 FMU exchanging Real values only,
the fixed-step Jacobi and Gauss-Seidel loops (no extrapolation, no
multi-rate, no algebraic loop, recording the outputs) run in C
(``csrc/fastloop.c``): the FMUs' own ``fmi2SetReal``, ``fmi2GetReal`` and
``fmi2DoStep`` function pointers, connections as index arrays, rows
written into the master's preallocated buffer. The semantics are those of
the Python loop of :mod:`mbfmu.cosim.master` (the tests compare the two bit
for bit), and so are its guards, applied between chunks of steps: the rows
are checked for non-finite values, streamed to the run's sink, and Ctrl-C or
the run's timeout stop it; other systems keep the Python loop. The loop also
checks the run's stop flag before every step and publishes how far it got, so
the run's watchdog (:mod:`.run_guard`) can stop it between two steps and keep
its rows when a unit is stuck inside a call. ``MBFMU_PYTHON_LOOP=1`` in the
environment (or ``ENABLED = False``) switches the fast path off.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
from typing import Any

import numpy as np

from .fmu_unit import FmuUnit, _status_error

ENABLED = os.environ.get("MBFMU_PYTHON_LOOP", "") not in ("1", "true", "yes")

_P = ctypes.c_void_p
_IP = ctypes.POINTER(ctypes.c_int)
_DP = ctypes.POINTER(ctypes.c_double)
_UP = ctypes.POINTER(ctypes.c_uint)


class _Unit(ctypes.Structure):
    _fields_ = [("component", _P), ("set_real", _P), ("get_real", _P), ("do_step", _P), ("no_prior", ctypes.c_int),
                ("n_push", ctypes.c_int), ("push_vr", _UP), ("push_idx", _IP), ("push_buf", _DP), ("u", _DP),
                ("n_out", ctypes.c_int), ("out_vr", _UP), ("y", _DP), ("n_in_conn", ctypes.c_int), ("in_conn", _IP)]


class _Failure(ctypes.Structure):
    _fields_ = [("unit", ctypes.c_int), ("call", ctypes.c_int), ("status", ctypes.c_int), ("step", ctypes.c_int)]


class _Control(ctypes.Structure):
    """Read by the run's watchdog while the loop may be stuck in an FMU call:
    ``stop`` (set to stop between steps), ``reached`` (rows written), ``unit``
    (index of the unit of the current call)."""
    _fields_ = [("stop", _IP), ("reached", ctypes.c_int), ("unit", ctypes.c_int)]


_LIB: Any = None


def _library() -> Any:
    """The compiled loop, or ``None`` when the package was built without it."""
    global _LIB
    if _LIB is None:
        spec = importlib.util.find_spec("mbfmu.cosim._fastloop")
        if spec is None or spec.origin is None:
            _LIB = False
            return None
        lib = ctypes.CDLL(spec.origin)
        lib.fl_run.restype = ctypes.c_int
        lib.fl_run.argtypes = [ctypes.POINTER(_Unit), ctypes.c_int, _IP, ctypes.c_int, _IP, ctypes.c_int,
                               ctypes.c_int, _IP, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                               ctypes.c_double, ctypes.c_double,
                               _IP, ctypes.c_int, _DP, ctypes.POINTER(_Failure), ctypes.POINTER(_Control)]
        _LIB = lib
    return _LIB or None


def eligible(master: Any) -> bool:
    """Whether ``master``'s run can take the compiled loop."""
    o = master.opts
    if not ENABLED or o.adaptive or o.iterative or o.extrapolation or any(m != 1 for m in master.sub.values()):
        return False
    if master._window:  # a recording streamed through a reused window: the Python loop hands it on
        return False
    for u in master.units:
        if type(u) is not FmuUnit or not u._real_out or u.input_conversion:
            return False
        if any(typ != "Real" for typ, *_ in u._in_groups):
            return False
    if any(loop is not None for *_, loop in master.plan):
        return False
    if any(vars_ != u.outputs for u, vars_, _ in master.groups):
        return False
    return _library() is not None


def _first_non_finite_row(rows: np.ndarray, first: int, end: int) -> int | None:
    """Index of the first row in ``rows[first:end]`` holding a non-finite value."""
    bad = ~np.isfinite(rows[first:end]).all(axis=1)
    return first + int(np.argmax(bad)) if bad.any() else None


def _ints(values: list[int]) -> Any:
    return (ctypes.c_int * max(len(values), 1))(*values)


def run(master: Any, t0: float, stop: float, n: int, progress: Any = None, summary: Any = None) -> int:
    """Take the ``n`` steps of a fixed-step run in C; rows go to ``master._rows``
    after the first one. ``progress.tick(t)`` is called between chunks of
    steps. Returns the number of steps taken; a failing FMU call raises its
    unit's error with the rows up to the failure kept. ``summary.steps`` (when
    given) counts the steps as they are taken, so an interrupted run reports them."""
    units = master.units
    pos = {u.name: i for i, u in enumerate(units)}
    keep: list[Any] = []
    structs = (_Unit * len(units))()
    for i, u in enumerate(units):
        f = u._fmu._functions
        real = next((g for g in u._in_groups if g[0] == "Real"), None)
        idx = real[1] if real else []
        conns = [x for j, src, k in master.inc[u.name] for x in (j, pos[src.name], k)]
        arrays = (real[2] if real else (ctypes.c_uint * 1)(), _ints(idx), (ctypes.c_double * max(len(idx), 1))(),
                  _ints(conns))
        keep.append(arrays)
        s = structs[i]
        s.component = u._c
        s.set_real, s.get_real, s.do_step = (ctypes.cast(f[n_], _P) for n_ in ("fmi2SetReal", "fmi2GetReal", "fmi2DoStep"))
        s.no_prior = u._no_prior
        s.n_push, s.push_vr, s.push_idx, s.push_buf = len(idx), ctypes.cast(arrays[0], _UP), arrays[1], arrays[2]
        s.u = ctypes.cast(u.u, _DP)
        s.n_out, s.out_vr, s.y = u._n_out, ctypes.cast(u._out_vr, _UP), ctypes.cast(u.y, _DP)
        s.n_in_conn, s.in_conn = len(master.inc[u.name]), arrays[3]
    pre = [pos[u.name] for u in master.pre_pull]
    plan = [x for u, _, repull, _ in master.plan for x in (pos[u.name], int(bool(repull)))]
    gs = master.opts.algorithm == "gauss-seidel"
    order = [pos[u.name] for u in master.gs_order] if gs else list(range(len(units)))
    rec: list[int] = []
    for u, vars_, _ in master.groups:
        for k in range(len(vars_)):
            rec += [pos[u.name], k]
    rows = master._rows
    assert rows.flags.c_contiguous and rows.shape[1] == 1 + len(rec) // 2
    fail = _Failure()
    ctl = _Control(ctypes.pointer(master.guard.stop_flag), 0, -1)
    master._fl_ctl = ctl
    args = (_ints(pre), len(pre), _ints(plan), len(plan) // 2, int(gs), _ints(order))
    tail = (_ints(rec), len(rec) // 2, rows[1:].ctypes.data_as(_DP), ctypes.byref(fail), ctypes.byref(ctl))
    chunk = max(256, n // 200)
    done = 0
    base = summary.steps if summary is not None else 0

    def count_steps() -> None:  # one step per recorded row after the first
        if summary is not None:
            summary.steps = base + master._nrows - 1

    while done < n:
        end = min(n, done + chunk)
        reached = _library().fl_run(structs, len(units), *args, done, end, n, t0, stop, master.H, *tail)
        master._nrows = 1 + reached
        if not master.opts.allow_nan:
            bad = _first_non_finite_row(master._rows, 1 + done, 1 + reached)
            if bad is not None:  # the run ends there, as in the Python loop: that row kept
                master._nrows = bad + 1
                count_steps()
                master._check_finite(master._rows[bad], float(master._rows[bad, 0]))
        count_steps()
        if reached < end and fail.unit < 0:  # stopped on request, between two steps
            done = reached
            master._fl_ctl = None
            master._between_steps(float(rows[done, 0]))  # raises RunInterrupted
        if reached < end:
            done = reached
            break
        done = end
        master._between_steps(float(rows[done, 0]))  # flush to the sink; Ctrl-C and the timeout
        if progress is not None:
            progress.calls = 255  # let the bar decide at every chunk (it looks every 256 ticks)
            progress.tick(float(rows[done, 0]))
    master._fl_ctl = None
    if done < n:
        u = units[fail.unit]
        t = t0 if fail.step == 0 else t0 + fail.step * (stop - t0) / n
        if fail.call == 0:
            step_error = getattr(u, "_step_error", None)  # faults' stop-request aware error, once merged
            raise (step_error(fail.status, t, master.H) if step_error is not None
                   else _status_error(u, f"fmi2DoStep(h = {master.H!r} s)", fail.status, t))
        raise _status_error(u, "fmi2SetReal" if fail.call == 1 else "fmi2GetReal", fail.status, t)
    return done
