"""FMI 3.0 Scheduled Execution units in the compiled loop: their clocks and tick
schedule as ``csrc/fastloop.c`` steps them.

The C loop runs a :class:`~mbfmu.cosim.fmi.fmu3_scheduled.Fmu3ScheduledUnit`
as the unit runs itself (its ``do_step``, ``push``, ``pull`` and
``_activate``): the same FMU calls in the same order, the periodic ticks
counted in integers (tick ``i`` at ``t0 + shift + i * interval``), the
partitions of a round ordered by (priority, declaration order, time),
countdown clocks read after an activation in which the FMU called its
clock-update callback, output clocks read once per round. This module
describes the unit to C (:func:`describe`), hands C's tick counts,
activations and schedule back to the unit after the run (:func:`write_back`)
and turns a failure C reports into the unit's own error (:func:`error`).
"""
from __future__ import annotations

import ctypes
from typing import Any

from ...errors import CosimError, InputError
from ..fmi.clocks import GRID_TOLERANCE, steps_of
from ..fmi.fmu3_scheduled import ACTIVATIONS_KEPT, Fmu3ScheduledUnit
from ..fmi.fmu_unit import _status_error
from .c_arrays import DP, IP, LP, UP, VP, c_array

# fl_failure.index of a C_SE failure (csrc/fastloop.c)
SE_ACTIVATE, SE_INTERVAL, SE_GET_CLOCK, SE_OFF_GRID, SE_COUNTDOWN_GRID, SE_COUNTDOWN_BACK, SE_NO_MEMORY = range(7)


class Tick(ctypes.Structure):
    """``fl_tick``: a countdown tick scheduled at communication point ``k``."""
    _fields_ = [("k", ctypes.c_longlong), ("c", ctypes.c_int), ("t", ctypes.c_double)]


class Scheduled(ctypes.Structure):
    """``fl_se``, field by field."""
    _fields_ = [("n_clocks", ctypes.c_int), ("vr", UP), ("priority", DP),
                ("n_periodic", ctypes.c_int), ("per_clock", IP), ("per_every", LP), ("per_first", LP),
                ("per_base", DP), ("per_interval", DP),
                ("n_trig", ctypes.c_int), ("trig", IP),
                ("n_cd", ctypes.c_int), ("cd_clock", IP), ("cd_vr", UP), ("cd_interval", DP), ("cd_qualifier", IP),
                ("n_oclk", ctypes.c_int), ("oclk_j", IP), ("oclk_vr", UP), ("oclk_val", ctypes.POINTER(ctypes.c_bool)),
                ("activate", VP), ("get_interval", VP), ("get_clock", VP), ("clock_updated", IP),
                ("grid_tol", ctypes.c_double), ("driven", ctypes.c_int), ("t0", ctypes.c_double), ("H", ctypes.c_double),
                ("k", ctypes.c_longlong), ("t_now", ctypes.c_double), ("pending", ctypes.c_int),
                ("sched", ctypes.POINTER(Tick)), ("n_sched", ctypes.c_int), ("cap_sched", ctypes.c_int),
                ("count", LP), ("last", DP), ("first", LP), ("n_act", ctypes.c_longlong),
                ("ring_cap", ctypes.c_int), ("ring_c", IP), ("ring_t", DP),
                ("due", VP), ("cap_due", ctypes.c_int)]


def compiled(u: Any) -> bool:
    """Whether the compiled loop runs ``u`` as a Scheduled Execution unit (the class
    itself: a subclass may schedule its partitions otherwise).

    Parameters
    ----------
    u : Unit
        A unit of the system.

    Returns
    -------
    bool
    """
    # preemptive scheduling runs partitions on worker threads that call back into Python
    return type(u) is Fmu3ScheduledUnit and u.scheduling == "synchronous"


def describe(u: Fmu3ScheduledUnit, keep: list, lib: Any) -> Scheduled:
    """The C description of a Scheduled Execution unit set up for the run (and after the
    master's first exchange): its clocks, and its tick schedule as the unit holds it.

    Parameters
    ----------
    u : Fmu3ScheduledUnit
        The unit, set up.
    keep : list
        Buffers the description points into are appended (keep them alive for the run).
    lib : ctypes.CDLL
        The compiled loop (its ``fl_se_schedule`` copies the schedule into C).

    Returns
    -------
    Scheduled
    """
    clocks = list(u.clocks.values())
    index = {c.name: i for i, c in enumerate(clocks)}  # the unit's rank: declaration order
    e = Scheduled()
    e.n_clocks = len(clocks)
    e.vr = c_array(ctypes.c_uint, [c.vr for c in clocks], keep)
    e.priority = c_array(ctypes.c_double, [float(c.priority) for c in clocks], keep)
    per = u._periodic
    e.n_periodic = len(per)
    e.per_clock = c_array(ctypes.c_int, [index[p.clock.name] for p in per], keep)
    e.per_every = c_array(ctypes.c_longlong, [p.every for p in per], keep)
    e.per_first = c_array(ctypes.c_longlong, [p.first for p in per], keep)
    e.per_base = c_array(ctypes.c_double, [p.t0 + p.clock.shift for p in per], keep)
    e.per_interval = c_array(ctypes.c_double, [p.clock.interval for p in per], keep)
    e.n_trig = len(u._triggers)
    e.trig = c_array(ctypes.c_int, [x for j, c in u._triggers for x in (j, index[c.name])], keep)
    cd = u._countdown
    e.n_cd = len(cd)
    e.cd_clock = c_array(ctypes.c_int, [index[c.name] for c in cd], keep)
    e.cd_vr, e.cd_interval, e.cd_qualifier = u._cd_vr, u._cd_interval, u._cd_qualifier
    e.n_oclk = len(u._clock_out)
    e.oclk_j = c_array(ctypes.c_int, [j for j, _ in u._clock_out], keep)
    e.oclk_vr, e.oclk_val = u._out_clock_vr, u._out_clock_val
    e.activate, e.get_interval = ctypes.cast(u._f_activate, VP), ctypes.cast(u._f_interval, VP)
    e.get_clock = ctypes.cast(u._fmu._functions["fmi3GetClock"], VP)
    e.clock_updated = ctypes.pointer(u._clock_flag)
    e.grid_tol, e.driven, e.t0, e.H = GRID_TOLERANCE, int(u._driven), u._t0, u._H
    e.k, e.t_now, e.pending = u._k, u._t_now, int(u._pending)
    for k, entries in u._scheduled.items():  # C grows its own copy of the schedule
        for c, t in entries:
            if lib.fl_se_schedule(ctypes.byref(e), k, index[c.name], t):
                raise CosimError(f"unit {u.name!r}: no memory for the schedule of its clocks")
    ticks = u.ticks
    e.count = c_array(ctypes.c_longlong, [ticks.get(c.name, (0, 0.0))[0] for c in clocks], keep)
    e.last = c_array(ctypes.c_double, [ticks.get(c.name, (0, 0.0))[1] for c in clocks], keep)
    e.first = c_array(ctypes.c_longlong, [-1] * len(clocks), keep)
    e.ring_cap = ACTIVATIONS_KEPT
    ring_c, ring_t = (ctypes.c_int * ACTIVATIONS_KEPT)(), (ctypes.c_double * ACTIVATIONS_KEPT)()
    keep += [ring_c, ring_t]
    e.ring_c, e.ring_t = ring_c, ring_t
    keep.append(e)
    return e


def write_back(u: Fmu3ScheduledUnit, e: Scheduled) -> None:
    """Hand C's state of the run back to the unit: its communication point, the
    countdown ticks still scheduled, tick counts and activations (call before
    ``fl_release``, which frees the schedule).

    Parameters
    ----------
    u : Fmu3ScheduledUnit
        The unit C ran.
    e : Scheduled
        Its C description after the run.
    """
    clocks = list(u.clocks.values())
    u._k, u._t_now, u._pending = int(e.k), float(e.t_now), bool(e.pending)
    u._scheduled = {}
    for m in range(e.n_sched):
        tk = e.sched[m]
        u._scheduled.setdefault(int(tk.k), []).append((clocks[tk.c], float(tk.t)))
    new = sorted((int(e.first[i]), i) for i in range(len(clocks)) if e.first[i] >= 0 and clocks[i].name not in u.ticks)
    for i, c in enumerate(clocks):
        if c.name in u.ticks:
            u.ticks[c.name] = (int(e.count[i]), float(e.last[i]))
    for _, i in new:  # first activated in this run: in the order of their first activation
        u.ticks[clocks[i].name] = (int(e.count[i]), float(e.last[i]))
    n, cap = int(e.n_act), int(e.ring_cap)
    for a in range(max(0, n - cap), n):
        r = a % cap
        u.activations.append((clocks[e.ring_c[r]].name, float(e.ring_t[r])))


def error(u: Fmu3ScheduledUnit, f: Any) -> BaseException:
    """The unit's own error for a ``C_SE`` failure C reported.

    Parameters
    ----------
    u : Fmu3ScheduledUnit
        The unit that failed.
    f : ctypes.Structure
        The failure (``fl_failure``): what failed, its status, time and value.

    Returns
    -------
    BaseException
        The error the unit raises for that failure in the Python loop.
    """
    clocks = list(u.clocks.values())
    what = f.index
    if what == SE_ACTIVATE:
        return _status_error(u, f"fmi3ActivateModelPartition of clock {clocks[f.group].name!r}", f.status, f.t)
    if what == SE_INTERVAL:
        return _status_error(u, "fmi3GetIntervalDecimal", f.status, f.t)
    if what == SE_GET_CLOCK:
        return _status_error(u, "fmi3GetClock", f.status, f.t)
    if what == SE_OFF_GRID:
        return CosimError(f"unit {u.name!r}: a step to t = {f.t!r} s leaves the grid of its clocks "
                          f"(t0 = {u._t0!r} s, step {u._H!r} s)")
    c = clocks[f.group]
    if what == SE_COUNTDOWN_GRID:
        try:
            steps_of(c.name, "countdown tick at", f.value, u._H)
        except InputError as exc:
            return CosimError(f"unit {u.name!r}: {exc} (set at t = {f.t!r} s)")
    if what == SE_COUNTDOWN_BACK:
        return CosimError(f"unit {u.name!r}: clock {c.name!r} was given a negative interval {f.value!r} s")
    return CosimError(f"unit {u.name!r}: no memory for the schedule of its clocks at t = {f.t!r} s")
