"""The compiled fast path of the fixed-step master loop.

When every unit of a system is an FMI 2.0 or FMI 3.0 co-simulation FMU (with
event mode too, :mod:`.c_events`), an FMI 3.0 Scheduled Execution FMU
(:mod:`.c_scheduled`: C keeps its tick schedule), an FMI 2.0 or 3.0 Model
Exchange unit without clocks (C takes its step: ``me_do_step`` of
``csrc/me_step.c``, with the unit's solver context) or a
Python unit of :mod:`.c_units` (the blocks, LTI ControlUnits and discrete PIDs
evaluated in C; other FunctionUnits and ControlUnits called back through a
ctypes callback for their ``pull`` and ``do_step``, isolated units for their
``push`` too: :mod:`mbfmu.cosim.isolation.proxy`'s worker protocol), the
fixed-step Jacobi loop (input extrapolation of order 0, 1 or 2, multi-rate
units) and the Gauss-Seidel loop run in C (``csrc/fastloop.c``): the FMUs'
own getters, setters and ``doStep`` function pointers, connections as index
arrays, rows written into the master's preallocated buffer. Values are
converted per type exactly as the Python units convert them: FMI 2 Real,
Integer and Boolean; FMI 3 Float32/64, the integer types, Enumeration and
Boolean, whole arrays at a time, String values too: they travel as the codes
of their interned texts (:mod:`.typed`), and each String slot keeps its last
text and code, so Python is called only when a String value changes. Any
recorded subset is written by C: outputs from the output buffers, other
variables read from the FMUs per type; the connected outputs that are not
recorded are checked for non-finite values. Input unit conversions
(``input_conversion``: SSP unit conversions and linear transformations) are
applied as the units apply them. Algebraic loops are solved at each exchange
as :mod:`.loops` solves them (fixed-point sweeps, Newton with a
forward-difference Jacobian when they do not contract; the linear solve is
an LU with partial pivoting, so Newton's iterates may differ from numpy's in
the last bits). The semantics are those of the Python loop of
:mod:`mbfmu.cosim.master.run` (the tests compare the two bit for bit), and so
are its guards, applied between chunks of steps (about :data:`CHUNK_SECONDS` of
wall time each, whatever a step costs): the rows are checked for
non-finite values, streamed to the run's sink, and Ctrl-C or the run's
timeout stop it; other systems keep the Python loop. The loop also checks
the run's stop flag before every step and publishes how far it got, so the
run's watchdog (:mod:`.run_guard`) can stop it between two steps and keep
its rows when a unit is stuck inside a call.

The C loop can also pace the run to the wall clock (``realtime``, see
:mod:`mbfmu.cosim.master.realtime`) and step the units of a Jacobi step in
parallel threads (``threads``): the units are independent within a Jacobi
step (each reads only the inputs set at the exchange before it), so the
results are those of the serial loop bit for bit.

``MBFMU_PYTHON_LOOP=1`` in the environment (or ``ENABLED = False``)
switches the fast path off.
"""
from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import time
from typing import Any

import numpy as np

from ...errors import CosimError
from ..fmi.fmu3_unit import Fmu3Unit
from ..fmi.fmu3_clocked import ClockedFmu3Unit
from ..fmi.fmu_unit import FmuUnit, _status_error
from ..fmi.fmu_me import Fmu3MeUnit, FmuMeUnit
from .loops import NEWTON_ITERATIONS, loop_message
from ..units import ControlUnit
from ..typed import string_code, string_text
from . import c_events, c_scheduled, c_units

ENABLED = os.environ.get("MBFMU_PYTHON_LOOP", "") not in ("1", "true", "yes")
MAX_THREADS = 64
#: wall time, s, of one chunk of compiled steps: the rows are flushed to the sink and Ctrl-C,
#: the timeout and the progress bar are looked at between chunks
CHUNK_SECONDS = 0.25

_LOG = logging.getLogger("mbfmu.cosim")
_P = ctypes.c_void_p
_IP = ctypes.POINTER(ctypes.c_int)
_DP = ctypes.POINTER(ctypes.c_double)
_UP = ctypes.POINTER(ctypes.c_uint)

_C_STEP, _C_SET, _C_GET, _C_RANGE, _C_STOP, _C_PY, _C_DERIV, _C_RGET, _C_NAN, _C_LOOP, _C_UNIT, _C_SE, _C_EV, _C_ME = range(14)
_U_FMU, _U_CTRL, _U_BLOCK, _U_PY = range(4)
_MBC_LTI, _MBC_PID = 1, 2
_MBC_ERRORS = {1: "its step is not a whole number of samples", 2: "the step's matrix exponential is not finite",
               3: "no memory", 4: "its state is not finite after the step"}


class _Group(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("fmi3", ctypes.c_int), ("fn", _P), ("vr", _UP), ("n_vr", ctypes.c_int),
                ("buf", _P), ("n_values", ctypes.c_int), ("n_slots", ctypes.c_int), ("slots", _IP), ("str", _P)]


class _Loop(ctypes.Structure):
    _fields_ = [("n_block", ctypes.c_int), ("block", _IP), ("n", ctypes.c_int), ("conns", _IP), ("z", _DP),
                ("F", _DP), ("g", _DP), ("zp", _DP), ("J", _DP), ("piv", _IP)]


class _Unit(ctypes.Structure):
    _fields_ = [("fmi3", ctypes.c_int), ("component", _P), ("do_step", _P), ("no_prior", ctypes.c_int),
                ("n_push", ctypes.c_int), ("push", ctypes.POINTER(_Group)),
                ("n_pull", ctypes.c_int), ("pull", ctypes.POINTER(_Group)),
                ("u", _DP), ("y", _DP), ("n_in_conn", ctypes.c_int), ("in_conn", _IP),
                ("sub", ctypes.c_int), ("n_x", ctypes.c_int), ("x_conn", _IP), ("interpolate", ctypes.c_int),
                ("max_order", ctypes.c_int), ("set_derivs", _P), ("n_der", ctypes.c_int), ("der_vr", _UP),
                ("der_idx", _IP), ("order1", _IP), ("order2", _IP), ("der_buf", _DP), ("d1", _DP), ("d2", _DP),
                ("refused_order2", ctypes.c_int), ("stop_requested", ctypes.c_int), ("stop_at", ctypes.c_double),
                ("conv_on", _IP), ("conv", _DP), ("n_rget", ctypes.c_int), ("rget", ctypes.POINTER(_Group)),
                ("kind", ctypes.c_int), ("ctrl", _P), ("n_zoh", ctypes.c_int), ("zoh_h", _DP), ("zoh_A", _DP),
                ("zoh_B", _DP), ("op", ctypes.c_int), ("n_u", ctypes.c_int), ("n_y", ctypes.c_int), ("k", _DP),
                ("k2", _DP), ("se", ctypes.POINTER(c_scheduled.Scheduled)),
                ("ev", ctypes.POINTER(c_events.Events)), ("me", _P), ("me_step", _P),
                ("py_push", ctypes.c_int)]


class _Failure(ctypes.Structure):
    _fields_ = [("unit", ctypes.c_int), ("call", ctypes.c_int), ("status", ctypes.c_int), ("step", ctypes.c_int),
                ("group", ctypes.c_int), ("index", ctypes.c_int), ("t", ctypes.c_double), ("h", ctypes.c_double),
                ("value", ctypes.c_double)]


_PY_CODE = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_char_p)
_PY_TEXT = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_double)
_PY_UNIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double, ctypes.c_double)


class _Control(ctypes.Structure):
    """Read by the run's watchdog while the loop may be stuck in an FMU call:
    ``stop`` (set to stop between steps), ``reached`` (rows written), ``unit``
    (index of the unit of the latest call), ``in_call`` (1 per unit while it is
    inside a call: with threads, the unit stuck need not be the latest)."""
    _fields_ = [("stop", _IP), ("reached", ctypes.c_int), ("unit", ctypes.c_int), ("in_call", _IP)]


def units_in_call(ctl: _Control, n_units: int) -> list[int]:
    """Indices of the units inside a call now (read while the loop may be stuck)."""
    if not ctl.in_call:
        return [ctl.unit] if 0 <= ctl.unit < n_units else []
    return [i for i in range(n_units) if ctl.in_call[i]]


class _System(ctypes.Structure):
    _fields_ = [("units", ctypes.POINTER(_Unit)), ("n_units", ctypes.c_int), ("pre_pull", _IP), ("n_pre", ctypes.c_int),
                ("plan", _IP), ("n_plan", ctypes.c_int), ("loops", ctypes.POINTER(_Loop)), ("loop_tol", ctypes.c_double),
                ("loop_max_iterations", ctypes.c_int), ("newton_iterations", ctypes.c_int),
                ("loop_iterations", ctypes.c_longlong), ("gauss_seidel", ctypes.c_int), ("gs_exchange", ctypes.c_int),
                ("order", _IP),
                ("rec", _IP), ("n_rec", ctypes.c_int), ("n_chk", ctypes.c_int), ("chk", _IP), ("rows", _DP),
                ("extrapolation", ctypes.c_int), ("n_conn", ctypes.c_int), ("conns", _IP), ("n_hist", ctypes.c_int),
                ("hist_t", _DP), ("hist_y", _DP), ("c0", _DP), ("c1", _DP), ("c2", _DP), ("startup", ctypes.c_int),
                ("py_code", _PY_CODE), ("py_text", _PY_TEXT), ("realtime", ctypes.c_double), ("wall0", ctypes.c_double),
                ("t_start", ctypes.c_double), ("overruns", ctypes.c_longlong), ("worst_lag", ctypes.c_double),
                ("threads", ctypes.c_int), ("unit_fail", ctypes.POINTER(_Failure)), ("fail", _Failure),
                ("ctl", ctypes.POINTER(_Control)), ("rec_ptr", ctypes.POINTER(_DP)),
                ("py_unit", _PY_UNIT)]


_LIB: Any = None


def _library() -> Any:
    """The compiled loop, or ``None`` when the package was built without it."""
    global _LIB
    if _LIB is None:
        spec = importlib.util.find_spec("mbfmu.cosim._fastloop")
        if spec is None or spec.origin is None:
            _LIB = False
            return None
        lib = ctypes.CDLL(spec.origin)  # a CDLL call releases the GIL: Python FMUs and threads can run
        lib.fl_run.restype = ctypes.c_int
        lib.fl_run.argtypes = [ctypes.POINTER(_System), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                               ctypes.c_double, ctypes.c_double]
        lib.fl_release.restype = None
        lib.fl_release.argtypes = [ctypes.POINTER(_System)]
        lib.fl_ctrl_new.restype = _P
        lib.fl_ctrl_new.argtypes = [ctypes.POINTER(c_units.McDesc), _DP, _DP, _DP]
        lib.fl_se_schedule.restype = ctypes.c_int
        lib.fl_se_schedule.argtypes = [ctypes.POINTER(c_scheduled.Scheduled), ctypes.c_longlong, ctypes.c_int,
                                       ctypes.c_double]
        lib.fl_ctrl_free.restype = None
        lib.fl_ctrl_free.argtypes = [_P]
        _LIB = lib
    return _LIB or None


def python_loop_reason(master: Any) -> str | None:
    """Why ``master``'s run keeps the Python loop (``None``: it takes the compiled loop)."""
    o = master.opts
    if not ENABLED:
        return "the compiled loop is switched off (MBFMU_PYTHON_LOOP)"
    if o.adaptive or o.iterative:
        return "adaptive stepping and iterative coupling run in Python"
    if master._window:  # a recording streamed through a reused window: the Python loop hands it on
        return "the recording is streamed through a window"
    for u in master.units:
        if isinstance(u, ClockedFmu3Unit) and not (c_scheduled.compiled(u) or c_events.compiled(u)):
            return f"unit {u.name!r} runs {u.interface_name}: {u.python_loop_why}, which only the Python loop does"
        if not _is_fmu(u):
            why = c_units.why_not_in_c(u)
            if why is not None:
                return why
    for u, vars_, _ in master.groups:
        if not _is_fmu(u) and not c_units.evaluated_in_c(u):
            states = [v for v in vars_ if v not in u.outputs and v not in u.inputs]
            if states:
                return f"the recording holds {u.name}.{states[0]}, a state of a Python unit"
    if _library() is None:
        return "the package was built without the compiled loop"
    return None


def _is_fmu(u: Any) -> bool:
    """Whether C runs ``u`` as an FMU (its own calls through fmpy's function pointers)."""
    return type(u) in (FmuUnit, Fmu3Unit, FmuMeUnit, Fmu3MeUnit) or c_scheduled.compiled(u) or c_events.compiled(u)


def _is_me(u: Any) -> bool:
    """Whether C steps ``u`` as a Model Exchange unit (``me_do_step`` in ``csrc/me_step.c``)."""
    return type(u) in (FmuMeUnit, Fmu3MeUnit)


def eligible(master: Any) -> bool:
    """Whether ``master``'s run can take the compiled loop."""
    return python_loop_reason(master) is None


def _first_non_finite_row(rows: np.ndarray, first: int, end: int) -> int | None:
    """Index of the first row in ``rows[first:end]`` holding a non-finite value."""
    bad = ~np.isfinite(rows[first:end]).all(axis=1)
    return first + int(np.argmax(bad)) if bad.any() else None


def _ints(values: list[int]) -> Any:
    return (ctypes.c_int * max(len(values), 1))(*values)


class _Build:
    """The C description of a run, and every buffer it points into (kept alive here)."""

    def __init__(self, master: Any, t0: float, stop: float, n: int) -> None:
        self.keep: list[Any] = []
        self.ctrls: list[int] = []
        self.master = master
        self.t0, self.stop, self.n = t0, stop, n
        units = master.units
        pos = {u.name: i for i, u in enumerate(units)}
        self.units = (_Unit * len(units))()
        self.errors: list[BaseException] = []
        self.group_names: list[tuple[list[str], list[str]]] = []
        # recorded columns: read from a unit's output buffer, or (a group that is not all
        # outputs, as Master._recorders reads it) from the FMU by the unit's getter groups
        rec: list[int] = []
        rec_ptr: list[Any] = []  # per column: the double read (an input or state of a unit evaluated in C)
        self.getter_cols: list[list[tuple[list[str], int, list[int]]]] = [[] for _ in units]
        self.states: dict[str, np.ndarray] = {}  # ControlUnits' states as C steps them
        for u, vars_, col in master.groups:
            if all(v in u.outputs for v in vars_):
                rec += [x for v in vars_ for x in (pos[u.name], u.outputs.index(v))]
                rec_ptr += [None] * len(vars_)
            elif not _is_fmu(u):
                for v in vars_:
                    if v in u.outputs:
                        rec += [pos[u.name], u.outputs.index(v)]
                        rec_ptr.append(None)
                    else:
                        rec += [-2, 0]
                        rec_ptr.append(self._address(u, v))
            else:
                clocks = getattr(u, "clocks", {})  # read from the unit's buffers, as its getter reads them
                for v in vars_:
                    if v not in clocks:
                        rec += [-1, -1]
                        rec_ptr.append(None)
                    elif v in u.outputs:
                        rec += [pos[u.name], u.outputs.index(v)]
                        rec_ptr.append(None)
                    else:
                        rec += [-2, 0]
                        rec_ptr.append(ctypes.cast(ctypes.addressof(u.u) + 8 * u.inputs.index(v), _DP))
                wanted = [j for j, v in enumerate(vars_) if v not in clocks]
                if wanted:
                    self.getter_cols[pos[u.name]].append((vars_, col - 1, wanted))
        self.rget_names: list[list[str]] = [[] for _ in units]
        for i, u in enumerate(units):
            self._unit(self.units[i], u, [x for j, src, k in master.inc[u.name] for x in (j, pos[src.name], k)])
            self._record_getters(self.units[i], u, i)
        S = self.system = _System()
        S.units, S.n_units = self.units, len(units)
        pre = [pos[u.name] for u in master.pre_pull]
        plan: list[int] = []
        self.loops: list[list[tuple]] = []  # the loops' connections (unit, j, source, k), for errors
        for u, _, repull, block in master.plan:
            if block is None:
                plan += [pos[u.name], int(bool(repull))]
            else:
                plan += [-1 - len(self.loops), 0]
                self.loops.append(master.loops[tuple(v.name for v in block)])
        S.loops = self._arr((_Loop * max(len(self.loops), 1))())
        for L, block, conns in zip(S.loops, [b for *_, b in master.plan if b is not None], self.loops):
            n = len(conns)
            L.n_block, L.block = len(block), self._arr(_ints([pos[v.name] for v in block]))
            L.n, L.conns = n, self._arr(_ints([x for v, j, src, k in conns for x in (pos[v.name], j, pos[src.name], k)]))
            L.z, L.F, L.g, L.zp, L.J = (self._arr((ctypes.c_double * max(m, 1))()) for m in (n, n, n, n, n * n))
            L.piv = self._arr(_ints([0] * n))
        S.loop_tol, S.loop_max_iterations = master.opts.loop_tolerance, master.opts.loop_max_iterations
        S.newton_iterations = NEWTON_ITERATIONS
        gs = master.opts.algorithm == "gauss-seidel"
        order = [pos[u.name] for u in master.gs_order] if gs else list(range(len(units)))
        S.pre_pull, S.n_pre = self._arr(_ints(pre)), len(pre)
        S.plan, S.n_plan = self._arr(_ints(plan)), len(plan) // 2
        S.gauss_seidel, S.order = int(gs), self._arr(_ints(order))
        S.gs_exchange = int(gs and bool(self.loops))
        S.rec, S.n_rec = self._arr(_ints(rec)), len(rec) // 2
        S.rec_ptr = self._arr((_DP * max(len(rec_ptr), 1))(*[p or _DP() for p in rec_ptr]))
        chk = [x for src, k in master._unchecked for x in (pos[src.name], k)]
        S.chk, S.n_chk = self._arr(_ints(chk)), len(chk) // 2
        rows = master._rows
        assert rows.flags.c_contiguous and rows.shape[1] == 1 + len(rec) // 2
        S.rows = rows[1:].ctypes.data_as(_DP)
        # extrapolation: the connections in the master's order, the history of their values
        nc = len(master.conns)
        S.extrapolation = master.opts.extrapolation
        S.n_conn = nc
        S.conns = self._arr(_ints([x for (dst, j, src, k), held in zip(master.conns, master.held)
                                   for x in (pos[dst.name], j, pos[src.name], k, int(held))]))
        self.hist_t = np.zeros(3)
        self.hist_y = np.zeros((3, max(nc, 1)))
        self.coeffs = np.zeros((3, max(nc, 1)))
        for r, (t, y) in enumerate(zip(master.hist_t, master.hist_y)):
            self.hist_t[r], self.hist_y[r, :nc] = t, y
        S.n_hist = len(master.hist_t)
        S.hist_t, S.hist_y = self.hist_t.ctypes.data_as(_DP), self.hist_y.ctypes.data_as(_DP)
        S.c0, S.c1, S.c2 = (self.coeffs[r].ctypes.data_as(_DP) for r in range(3))
        self.texts: dict[float, Any] = {}
        self.callbacks = (_PY_CODE(self._code), _PY_TEXT(self._text), _PY_UNIT(self._py_unit))
        S.py_code, S.py_text, S.py_unit = self.callbacks
        pacer = getattr(master, "pacer", None)
        if pacer is not None:
            S.realtime, S.wall0, S.t_start = pacer.factor, pacer.wall0, pacer.t0
            S.overruns, S.worst_lag = pacer.overruns, pacer.worst_lag
        threads = int(getattr(master.opts, "threads", 1) or 1)
        S.threads = 1 if gs else max(1, min(threads, len(units), MAX_THREADS))
        self.unit_fail = (_Failure * len(units))()
        S.unit_fail = self.unit_fail
        self.in_call = (ctypes.c_int * max(len(units), 1))()
        self.ctl = _Control(ctypes.pointer(master.guard.stop_flag), 0, -1,
                            ctypes.cast(self.in_call, _IP))
        S.ctl = ctypes.pointer(self.ctl)

    def _state(self, u: Any) -> np.ndarray:
        """The state buffer C steps for the ControlUnit ``u`` (made at its first use)."""
        x = self.states.get(u.name)
        if x is None:
            x = self.states[u.name] = np.ascontiguousarray(u.x, dtype=float).copy()
        return x

    def _address(self, u: Any, name: str) -> Any:
        """The address of the double a unit evaluated in C keeps ``name`` in
        (an input in its input buffer, a ControlUnit's state in the state buffer C steps)."""
        u.variable(name)
        if name in u.inputs:
            return ctypes.cast(u.u.ctypes.data + 8 * u.inputs.index(name), _DP)
        x = self._state(u)
        return ctypes.cast(x.ctypes.data + 8 * u.state_names.index(name), _DP)

    def _c_unit(self, s: _Unit, u: Any) -> None:
        """A Python unit evaluated in C (a ControlUnit's controller, or a block),
        or called back (its own ``pull`` and ``do_step``)."""
        m = self.master
        s.u, s.y = u.u.ctypes.data_as(_DP), u.y.ctypes.data_as(_DP)
        s.n_u, s.n_y = len(u.inputs), len(u.outputs)
        if not c_units.evaluated_in_c(u):
            s.kind = _U_PY
            if c_units.pushed(u):  # an isolated unit: its inputs (and their derivatives) sent to its worker
                s.py_push = 1
                s.interpolate = int(bool(u.can_interpolate_inputs))
                n_in = max(len(u.inputs), 1)
                d1, d2 = (ctypes.c_double * n_in)(), (ctypes.c_double * n_in)()
                self.keep += [d1, d2]
                s.d1, s.d2 = d1, d2
            return
        if isinstance(u, c_units.BLOCKS):
            op, k, k2 = c_units.block_op(u)
            self.keep += [k, k2]
            s.kind, s.op, s.k, s.k2 = _U_BLOCK, op, k.ctypes.data_as(_DP), k2.ctypes.data_as(_DP)
            return
        step = m.H if u.step is None else u.step
        steps = [] if u.discrete or not u.linear else c_units.step_sizes(self.t0, self.stop, self.n, m.sub[u.name])
        x = self._state(u)
        desc, zoh = c_units.control_desc(u, x, step, steps, self.keep)
        self.keep.append(desc)
        if zoh:
            s.n_zoh = len(zoh[0])
            s.zoh_h, s.zoh_A, s.zoh_B = (a.ctypes.data_as(_DP) for a in zoh)
        ctrl = _library().fl_ctrl_new(ctypes.byref(desc), s.u, s.y, x.ctypes.data_as(_DP))
        if not ctrl:
            raise CosimError(f"unit {u.name!r}: no memory for its compiled controller")
        self.ctrls.append(ctrl)
        s.kind, s.ctrl = _U_CTRL, ctrl

    def free(self) -> None:
        """Release the controllers C made for the run."""
        for c in self.ctrls:
            _library().fl_ctrl_free(c)
        self.ctrls = []

    def _arr(self, a: Any) -> Any:
        self.keep.append(a)
        return a

    def _py_unit(self, i: int, call: int, t: float, h: float) -> int:
        """A Python unit's ``pull`` (call 0) or ``do_step`` (call 1) for C, or (call 2) the
        step of a controller C evaluates from the state C holds, when its new state is
        not finite (ControlUnit keeps it; controller.c does not), or an isolated unit's
        ``push`` (call 3) or ``push_derivatives`` (call 4); 1 when it raised."""
        u = self.master.units[i]
        try:
            if call == 0:
                u.pull()
            elif call == 3:
                u.push()
            elif call == 4:
                s, n = self.units[i], len(u.inputs)
                u.push_derivatives(s.d1[:n], s.d2[:n])
            elif call == 2:  # a controller whose state left the finite numbers: the Python unit's step
                x = self.states[u.name]
                u.x = x.copy()
                u.do_step(t, h)
                x[:] = u.x
            else:
                self.master._where = (u, t)
                u.do_step(t, h)
            return 0
        except BaseException as exc:  # re-raised by run() once C has returned
            self.errors.append(exc)
            return 1

    def _code(self, text: bytes) -> float:
        """The code of a String value C read (C cannot intern texts); -1 when it fails."""
        try:
            return string_code(text.decode("utf-8", "replace"))
        except BaseException as exc:  # re-raised by run() once C has returned
            self.errors.append(exc)
            return -1.0

    def _text(self, code: float) -> int | None:
        """The address of the text of a String code, kept for the run (``None`` when it fails)."""
        try:
            buf = self.texts.get(code)
            if buf is None:
                buf = self.texts[code] = ctypes.create_string_buffer(string_text(code).encode("utf-8"))
            return ctypes.addressof(buf)
        except BaseException as exc:  # re-raised by run() once C has returned
            self.errors.append(exc)
            return None

    def _group(self, g: _Group, typ: int, fmi3: int, fn: Any, vr: Any, n_vr: int, buf: Any, n_values: int,
               slots: list[tuple[int, int]]) -> None:
        flat = _ints([x for k, j in slots if j >= 0 for x in (k, j)])
        self.keep += [fn, vr, buf, flat]
        g.type, g.fmi3, g.fn = typ, fmi3, ctypes.cast(fn, _P)
        g.vr, g.n_vr = ctypes.cast(vr, _UP), n_vr
        g.buf, g.n_values = ctypes.cast(buf, _P), n_values
        g.n_slots, g.slots = sum(1 for _, j in slots if j >= 0), flat

    def _unit(self, s: _Unit, u: Any, conns: list[int]) -> None:
        m = self.master
        if not _is_fmu(u):
            self.group_names.append(([], []))
            self._c_unit(s, u)
            s.n_in_conn, s.in_conn = len(conns) // 3, self._arr(_ints(conns))
            s.sub = m.sub[u.name]
            x = m.conn_of[u.name]
            s.n_x, s.x_conn = len(x), self._arr(_ints(x))
            return
        fmi3 = u.fmi.values_counted  # the calls' shapes (csrc/fastloop.c): FMI 3 passes the number of values
        push: list[tuple] = []  # (type code, function, vr, n_vr, buf, n_values, slots)
        pull: list[tuple] = []
        names: tuple[list[str], list[str]] = ([], [])
        for groups, out, fns, verb in ((u._in_groups, push, u._f_set, "Set"), (u._out_groups, pull, u._f_get, "Get")):
            for g in groups:
                out.append((g.vt.code, fns[g.vt.api], g.vr, g.n_vr, g.buf, g.n, g.slots))
                names[verb == "Get"].append(u.fmi.call(verb, g.vt))
        s.do_step = None if _is_me(u) else ctypes.cast(u._f_step, _P)
        self.group_names.append(names)
        for field, groups in (("push", push), ("pull", pull)):
            arr = (_Group * max(len(groups), 1))()
            for g, args in zip(arr, groups):
                self._group(g, args[0], int(fmi3), *args[1:])
            self.keep.append(arr)
            setattr(s, field, arr)
            setattr(s, "n_" + field, len(groups))
        s.fmi3, s.component, s.no_prior = int(fmi3), u._c, int(bool(u._no_prior))
        s.u, s.y = ctypes.cast(u.u, _DP), ctypes.cast(u.y, _DP)
        s.n_in_conn, s.in_conn = len(conns) // 3, self._arr(_ints(conns))
        s.sub = m.sub[u.name]
        x = m.conn_of[u.name]
        s.n_x, s.x_conn = len(x), self._arr(_ints(x))
        s.interpolate = int(bool(u.can_interpolate_inputs))
        n_in = max(len(u.inputs), 1)
        d1, d2 = (ctypes.c_double * n_in)(), (ctypes.c_double * n_in)()
        self.keep += [d1, d2]
        s.d1, s.d2 = d1, d2
        if u._der_idx and u.max_input_order > 0 and u._setDer is not None:
            s.max_order = u.max_input_order
            s.set_derivs = ctypes.cast(u._setDer, _P)
            s.n_der, s.der_vr = len(u._der_idx), ctypes.cast(u._der_vr, _UP)
            s.der_idx = self._arr(_ints(u._der_idx))
            s.order1, s.order2 = u._d_order1, u._d_order2
            s.der_buf = ctypes.cast(u._d_buf, _DP)
        if u._stop_at is not None:
            s.stop_requested, s.stop_at = 1, u._stop_at
        if c_scheduled.compiled(u):
            s.se = ctypes.pointer(c_scheduled.describe(u, self.keep, _library()))
        if c_events.compiled(u):
            s.ev = ctypes.pointer(c_events.describe(u, self.keep))
        if _is_me(u):
            s.me, s.me_step = u.compiled_step(), u._solver.do_step_address
        if u.input_conversion:
            on, conv = [0] * len(u.inputs), [1.0, 0.0] * len(u.inputs)
            for j, (a, b) in u.input_conversion.items():
                on[j], conv[2 * j], conv[2 * j + 1] = 1, a, b
            s.conv_on, s.conv = self._arr(_ints(on)), self._arr((ctypes.c_double * len(conv))(*conv))

    def _record_getters(self, s: _Unit, u: Any, i: int) -> None:
        """The unit's recorded variables read from the FMU (as ``u.getter`` reads
        them), one group per type; slots map buffer positions to row columns."""
        if not _is_fmu(u):
            return
        groups: list[tuple] = []
        names = self.rget_names[i]
        for vars_, col, wanted in self.getter_cols[i]:
            for g in u._groups([u.variable(v).name for v in vars_], wanted):
                slots = [(k, col + j) for k, j in g.slots if j >= 0]
                groups.append((g.vt.record_code, u._f_get[g.vt.api], g.vr, g.n_vr, g.buf, g.n, slots))
                names.append(u.fmi.call("Get", g.vt))
        arr = (_Group * max(len(groups), 1))()
        for g, args in zip(arr, groups):
            self._group(g, args[0], int(u.fmi.values_counted), *args[1:])
        self.keep.append(arr)
        s.rget, s.n_rget = arr, len(groups)

    def write_back(self) -> None:
        """Hand what C learnt back to the Python objects (history, stop requests,
        refused derivative orders, real-time statistics, clock ticks); before
        ``fl_release``, which frees the clocks' schedules."""
        m, S = self.master, self.system
        for u, s in zip(m.units, self.units):
            if s.se:
                c_scheduled.write_back(u, s.se.contents)
            if s.ev:
                c_events.write_back(u, s.ev.contents)
            if s.me:
                u.compiled_back()
        n, nc = S.n_hist, S.n_conn
        m.loop_iterations += int(S.loop_iterations)
        S.loop_iterations = 0
        m.hist_t = [float(self.hist_t[r]) for r in range(n)]
        m.hist_y = [self.hist_y[r, :nc].copy() for r in range(n)]
        t = float(m._rows[m._nrows - 1, 0])
        for u in m.units:  # the Python units evaluated in C: where C left them
            if not _is_fmu(u) and c_units.evaluated_in_c(u):
                u.t = t
                if u.name in self.states:
                    u.x = self.states[u.name].copy()
        for u, s in zip(m.units, self.units):
            if s.refused_order2 and u.max_input_order > s.max_order:
                u.max_input_order = s.max_order
                _LOG.warning("unit %r refused input derivatives of order %d; sending order %d at most",
                             u.name, s.max_order + 1, s.max_order)
            if isinstance(u, FmuUnit) and s.stop_requested:
                u._stop_at = s.stop_at
        pacer = getattr(m, "pacer", None)
        if pacer is not None:
            pacer.overruns, pacer.worst_lag = int(S.overruns), float(S.worst_lag)

    def error(self) -> BaseException:
        """The error of the failure C reported."""
        f = self.system.fail
        u = self.master.units[f.unit]
        names = self.group_names[f.unit]
        if f.call == _C_UNIT:
            if isinstance(u, ControlUnit):
                return CosimError(f"unit {u.name!r}: {_MBC_ERRORS.get(f.status, 'failed')} "
                                  f"(step from t = {f.t!r} s, h = {f.h!r} s)")
            return CosimError(f"unit {u.name!r}: output {u.outputs[f.index]!r} is not finite at t = {f.t!r} s")
        if f.call == _C_SE:
            return c_scheduled.error(u, f)
        if f.call == _C_EV:
            return c_events.error(u, f)
        if f.call == _C_ME:
            return u.compiled_error(f.status, f.t, f.h)
        if f.call == _C_PY:  # the String callbacks (or memory for their values) failed
            return self.errors[0] if self.errors else CosimError(f"unit {u.name!r}: no memory for String values")
        if f.call == _C_STOP:
            u._stop_at = self.units[f.unit].stop_at
            try:
                u.do_step(f.t, f.h)  # raises the unit's own stop request
            except BaseException as exc:
                return exc
            return CosimError(f"unit {u.name!r} asked to stop at t = {f.t!r} s")  # pragma: no cover
        if f.call == _C_STEP:
            return u._step_error(f.status, f.t, f.h)
        if f.call == _C_RANGE:
            return CosimError(f"unit {u.name!r}: input {u.inputs[f.index]!r} = {f.value!r} at t = {f.t!r} s "
                              f"has no integer value ({names[0][f.group][4:]})")
        if f.call == _C_LOOP:
            why = ("the loop's Jacobian is singular" if f.index == 0 else
                   f"no convergence after {NEWTON_ITERATIONS} Newton iterations (residual {f.value:.3g})")
            return CosimError(loop_message(self.loops[f.group], f.t, why))
        if f.call == _C_RGET:
            return _status_error(u, self.rget_names[f.unit][f.group], f.status, f.t)
        if f.call == _C_DERIV:
            return _status_error(u, f"fmi2SetRealInputDerivatives (order {f.group})", f.status, f.t)
        return _status_error(u, names[0 if f.call == _C_SET else 1][f.group], f.status, f.t)


def run(master: Any, t0: float, stop: float, n: int, progress: Any = None, summary: Any = None) -> int:
    """Take the ``n`` steps of a fixed-step run in C; rows go to ``master._rows``
    after the first one. ``progress.tick(t)`` is called between chunks of
    steps. Returns the number of steps taken; a failing FMU call raises its
    unit's error with the rows up to the failure kept. ``summary.steps`` (when
    given) counts the steps as they are taken, so an interrupted run reports them."""
    b = _Build(master, t0, stop, n)
    S = b.system
    master._fl_ctl = b.ctl  # the watchdog reads how far the loop got
    o = master.opts
    if o.extrapolation == 2 and all(u.can_rollback for u in master.units):
        h0 = master.H if n > 1 else stop - t0
        c = master._startup_coeffs(t0, h0, master._coeffs())  # the trial step with rollback, in Python
        for r in range(3):
            b.coeffs[r, :S.n_conn] = c[r]
        S.startup = 1
        for u, s in zip(master.units, b.units):  # the trial step moved the ME units on in Python
            if s.me:
                u.compiled_step()
    pacer = getattr(master, "pacer", None)
    most = max(256, n // 200)
    chunk = min(256, most)
    if pacer is not None:  # guards at least every 0.1 s of wall time
        chunk = most = max(1, min(most, int(0.1 * pacer.factor / master.H)))
    done = 0
    base = summary.steps if summary is not None else 0
    rows = master._rows

    def count_steps() -> None:  # one step per recorded row after the first
        if summary is not None:
            summary.steps = base + master._nrows - 1

    try:
        while done < n:
            end = min(n, done + chunk)
            started = time.perf_counter()
            reached = _library().fl_run(ctypes.byref(S), done, end, n, t0, stop, master.H)
            if pacer is None:  # chunks of about CHUNK_SECONDS of wall time, whatever a step costs
                took = max(time.perf_counter() - started, 1e-9)
                chunk = max(1, min(most, int(chunk * CHUNK_SECONDS / took)))
            master._nrows = 1 + reached
            if not o.allow_nan:
                bad = _first_non_finite_row(master._rows, 1 + done, 1 + reached)
                if bad is not None:  # the run ends there, as in the Python loop: that row kept
                    master._nrows = bad + 1
                    count_steps()
                    master._check_finite(master._rows[bad], float(master._rows[bad, 0]))
            count_steps()
            if S.fail.unit >= 0 and S.fail.call == _C_NAN:  # a connected output that is not recorded
                master._check_finite(master._rows[reached], float(master._rows[reached, 0]))
                raise CosimError("the compiled loop stopped on a non-finite output")  # pragma: no cover
            if reached < end and S.fail.unit < 0:  # stopped on request, between two steps
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
    finally:
        master._fl_ctl = None
        b.write_back()
        _library().fl_release(ctypes.byref(S))
        b.free()
        if summary is not None:
            summary.threads = S.threads
    if done < n:
        raise b.error()
    return done
