"""The Python units the compiled loop runs, and their C descriptions.

The compiled loop (:mod:`.fast_loop`) runs two kinds of Python unit without
calling Python:

* a :class:`~mbfmu.cosim.units.ControlUnit` holding a python-control
  ``StateSpace`` or ``TransferFunction`` (discrete at its ``dt``, or
  continuous: zero-order hold over the step, with the very matrices
  ``ControlUnit`` takes from :func:`control.c2d`), or a discrete PID of
  :func:`mbfmu.control.discrete_pid.pid` (recognised by its update function
  and the ``gains`` it carries), or a scheduled controller of
  :func:`mbfmu.control.scheduling.scheduled_controller` (its tables and
  interpolation, from the ``ScheduledLaw`` it evaluates), is stepped by the
  controller evaluator of the native controller FMUs
  (``mbfmu/fmu/native/ctrl/controller.c``);
* the static blocks of :mod:`.blocks` (``Gain``, ``Sum``, ``Offset``,
  ``Saturation``, ``Mux``, ``Demux``) are evaluated by the same file's
  ``mbc_block`` (called from ``csrc/fastloop.c``; a native controller FMU
  of an interconnection evaluates them there too).

Other FunctionUnits and ControlUnits (a general ``NonlinearIOSystem``) are
called back from C (:func:`called_back`): their own ``pull`` and ``do_step``;
so are isolated units (:mod:`mbfmu.cosim.isolation.proxy`), their ``push`` too:
C calls the proxy where the Python loop calls it, and the worker protocol, its
step timeout and its failures are the proxy's own.

Each is described here from the unit's own data (the python-control system,
the block's gains and limits), so the Python unit and the C evaluator work
from one description. The order of the floating-point operations is the
Python unit's; only the sums of matrix-vector products (``C x + D u``,
``Ad x + Bd u``, a scheduled controller's ``K(s) (x - x_ref)``, a matrix
``Gain``, a ``Sum`` of three or more inputs) may group differently from
numpy's, which may differ in the last bits.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import blocks
from ..isolation.proxy import IsolatedUnit
from ..units import ControlUnit, FunctionUnit, Unit

_DP = ctypes.POINTER(ctypes.c_double)

# controller.c's block operations (MBC_B_*: mbc_block, which csrc/fastloop.c calls)
B_GAIN, B_MATRIX, B_OFFSET, B_SAT, B_SUM, B_COPY = range(6)
MBC_LTI, MBC_PID, MBC_SCHED = 1, 2, 3
PID_GAINS = ("Kp", "Ki", "Kd", "Tf", "Tt", "u_min", "u_max")
BLOCKS = (blocks.Gain, blocks.Offset, blocks.Saturation, blocks.Sum, blocks.Mux, blocks.Demux)


class McDesc(ctypes.Structure):
    """controller.h's ``mbc_desc``, field by field."""
    _fields_ = [("kind", ctypes.c_int), ("nx", ctypes.c_int), ("nu", ctypes.c_int), ("ny", ctypes.c_int),
                ("np", ctypes.c_int), ("dt", ctypes.c_double), ("A", _DP), ("B", _DP), ("C", _DP), ("D", _DP),
                ("h0", ctypes.c_double), ("Ad0", _DP), ("Bd0", _DP), ("x0", _DP), ("p0", _DP),
                ("on_error", ctypes.c_int), ("ng", ctypes.c_int), ("nk", ctypes.c_int), ("sidx", ctypes.c_int),
                ("grid", _DP), ("K", _DP), ("xr", _DP), ("ur", _DP)]


def is_pid(sys: Any) -> bool:
    """Whether ``sys`` is a discrete PID made by :func:`mbfmu.control.discrete_pid.pid`."""
    upd = getattr(sys, "updfcn", None)
    gains = getattr(sys, "gains", None)
    return (getattr(upd, "__module__", None) == "mbfmu.control.discrete_pid"
            and getattr(upd, "__qualname__", None) == "pid.<locals>.update"
            and isinstance(gains, dict) and all(k in gains for k in PID_GAINS)
            and getattr(sys, "derivative_on", None) in ("measurement", "error")
            and sys.nstates == 3 and sys.ninputs == 2 and sys.noutputs == 1)


def scheduled_law(sys: Any) -> Any:
    """The ``ScheduledLaw`` a scheduled controller of
    :func:`mbfmu.control.scheduling.scheduled_controller` evaluates (``None``
    for any other system): its output function is the law's own ``output``,
    its tables have the shapes of its inputs and outputs."""
    law = getattr(sys, "law", None)
    out = getattr(sys, "outfcn", None)
    kind = type(law)
    if not (kind.__module__ == "mbfmu.control.scheduling" and kind.__qualname__ == "ScheduledLaw"
            and getattr(out, "__self__", None) is law and getattr(out, "__func__", None) is kind.output
            and getattr(sys, "nstates", None) == 0):
        return None
    g, m, n = law.gains.shape
    has_param = law.index == n
    if (law.grid.shape != (g,) or g < 1 or law.x_ref.shape != (n,) or law.u_ref.shape != (m,)
            or sys.noutputs != m or sys.ninputs != n + has_param or not -1 <= law.index <= n):
        return None
    return law


def evaluated_in_c(u: Any) -> bool:
    """Whether C evaluates the Python unit ``u`` itself (a block, an LTI ControlUnit,
    a discrete PID, a scheduled controller)."""
    if type(u) in BLOCKS:
        return True
    if type(u) is ControlUnit and not (u.discrete and u.sys.dt is True):
        return bool(u.linear or (u.discrete and (is_pid(u.sys) or scheduled_law(u.sys) is not None)))
    return False


def pushed(u: Any) -> bool:
    """Whether the compiled loop calls back the ``push`` (and ``push_derivatives``)
    of the unit ``u`` too: an isolated unit, whose inputs go to its worker process."""
    return isinstance(u, IsolatedUnit)


def called_back(u: Any) -> bool:
    """Whether the compiled loop can call the Python unit ``u`` back: a
    FunctionUnit or ControlUnit (its own ``pull`` and ``do_step``, once per
    exchange and step) whose ``push`` does nothing (the master's inputs are
    read from ``u`` when called), or an isolated unit (its own ``push``,
    ``push_derivatives``, ``pull`` and ``do_step``: its worker protocol, where
    the Python loop calls them); its buffers float arrays C can write."""
    own = (isinstance(u, (FunctionUnit, ControlUnit)) and type(u).push is Unit.push
           and not u.can_interpolate_inputs)
    return ((own or pushed(u))
            and all(isinstance(b, np.ndarray) and b.dtype == np.float64 and b.flags.c_contiguous
                    for b in (u.u, u.y)))


def why_not_in_c(u: Any) -> str | None:
    """Why the Python unit ``u`` cannot take the compiled loop (``None``: it can)."""
    if evaluated_in_c(u) or called_back(u):
        return None
    return f"unit {u.name!r} is not an in-process FMU (a Python unit)"


def _doubles(a: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=float))


def control_desc(u: ControlUnit, x: np.ndarray, step: float, steps: list[float], keep: list) -> tuple[McDesc, tuple]:
    """The ``mbc_desc`` of a ControlUnit set up for a run whose unit steps are ``steps`` (s).

    Parameters
    ----------
    u : ControlUnit
        The unit, after its ``setup``.
    x : numpy.ndarray
        The state buffer C steps, holding the run's start (``u.x``); the initial state.
    step : float
        The unit's step (s) at set-up (the build-time matrices of a continuous system).
    steps : list of float
        The distinct step sizes (s) of the run: a continuous system gets the
        matrices ``ControlUnit`` uses for each.
    keep : list
        Arrays the description points into are appended (keep them alive).

    Returns
    -------
    desc : McDesc
    zoh : tuple
        ``(h, Ad, Bd)`` arrays of the continuous system's step table (empty otherwise).
    """
    sys = u.sys
    d = McDesc()
    zoh: tuple = ()
    if u.linear:
        A, B, C, D = (_doubles(m) for m in (sys.A, sys.B, sys.C, sys.D))
        p0 = np.ones(1)
        d.kind, d.np = MBC_LTI, 1
        d.nx, d.nu, d.ny = u.nx, len(u.inputs), len(u.outputs)
        d.dt = float(sys.dt) if u.discrete else 0.0
        arrays = [A, B, C, D, p0]
        if not u.discrete:
            Ad0, Bd0 = (_doubles(m) for m in u._matrices(step))
            d.h0 = step
            hs = [h for h in steps if h > 0][:64]  # more sizes than that: controller.c's exponential
            mats = [u._matrices(h) for h in hs]
            zoh = (np.array(hs, float), _doubles([m[0] for m in mats]).reshape(-1),
                   _doubles([m[1] for m in mats]).reshape(-1))
            arrays += [Ad0, Bd0, *zoh]
            d.Ad0, d.Bd0 = (m.ctypes.data_as(_DP) for m in (Ad0, Bd0))
        d.A, d.B, d.C, d.D, d.p0 = (m.ctypes.data_as(_DP) for m in (A, B, C, D, p0))
    elif scheduled_law(sys) is not None:
        arrays = scheduled_desc(d, scheduled_law(sys))
        d.dt = float(sys.dt)
    else:
        g = sys.gains
        p0 = np.array([float(g[k]) for k in PID_GAINS])
        d.kind, d.nx, d.nu, d.ny, d.np = MBC_PID, 3, 2, 1, len(PID_GAINS)
        d.dt = float(sys.dt)
        d.on_error = int(sys.derivative_on == "error")
        arrays = [p0]
        d.p0 = p0.ctypes.data_as(_DP)
    d.x0 = x.ctypes.data_as(_DP)
    keep += arrays
    return d, zoh


def scheduled_desc(d: McDesc, law: Any) -> list[np.ndarray]:
    """Fill the ``MBC_SCHED`` fields of ``d`` (all but ``dt`` and ``x0``) from a ``ScheduledLaw``.

    Parameters
    ----------
    d : McDesc
        The description to fill.
    law : mbfmu.control.scheduling.ScheduledLaw
        The law's tables: grid, gains, x_ref, u_ref and the scheduling input.

    Returns
    -------
    list of numpy.ndarray
        The arrays ``d`` points into (keep them alive as long as ``d``).
    """
    g, m, n = law.gains.shape
    grid, K, xr, ur, p0 = (_doubles(a) for a in (law.grid, law.gains, law.x_ref, law.u_ref, np.ones(1)))
    d.kind, d.nx, d.nu, d.ny, d.np = MBC_SCHED, 0, n + (law.index == n), m, 1
    d.ng, d.nk, d.sidx = g, n, law.index
    d.grid, d.K, d.xr, d.ur, d.p0 = (a.ctypes.data_as(_DP) for a in (grid, K, xr, ur, p0))
    return [grid, K, xr, ur, p0]


def block_op(u: Any) -> tuple[int, np.ndarray, np.ndarray]:
    """``(operation, k, k2)`` of a block of :mod:`.blocks` for ``csrc/fastloop.c``:
    gains (element-wise, or an ``n_y x n_u`` matrix), offsets, lower and upper
    limits, or the signs of a Sum, as doubles."""
    ny = len(u.outputs)
    none = np.zeros(1)
    if isinstance(u, blocks.Gain):
        if u.k.ndim == 2:
            return B_MATRIX, _doubles(u.k).reshape(-1), none
        return B_GAIN, _doubles(np.broadcast_to(u.k, (ny,))), none
    if isinstance(u, blocks.Offset):
        return B_OFFSET, _doubles(np.broadcast_to(u.offset, (ny,))), none
    if isinstance(u, blocks.Saturation):
        return B_SAT, _doubles(np.broadcast_to(u.lower, (ny,))), _doubles(np.broadcast_to(u.upper, (ny,)))
    if isinstance(u, blocks.Sum):
        return B_SUM, np.array([1.0 if c == "+" else -1.0 for c in u.signs]), none
    return B_COPY, none, none


def step_sizes(t0: float, stop: float, n: int, sub: int) -> list[float]:
    """The distinct sub-step sizes (s) of a fixed-step run.

    Computed as both loops compute them: the step points counted from ``t0``
    (the last one ``stop``), each step the difference of two, its ``sub``
    sub-step points counted from the step's start (the last its end).

    Parameters
    ----------
    t0, stop : float
        Start and stop time (s).
    n : int
        Number of steps.
    sub : int
        Sub-steps per step of the unit.

    Returns
    -------
    list of float
        The distinct sub-step sizes (s), ascending.
    """
    span = stop - t0
    t = np.empty(n + 1)
    t[0] = t0
    t[1:] = t0 + np.arange(1, n + 1, dtype=float) * span / n
    t[n] = stop
    h = t[1:] - t[:-1]
    start = t[:-1]
    hs = h / sub
    prev = start
    sizes: set[float] = set()
    for s in range(sub):
        nxt = start + h if s == sub - 1 else start + (s + 1) * hs
        sizes.update(np.unique(nxt - prev).tolist())
        prev = nxt
    return sorted(sizes)
