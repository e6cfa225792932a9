"""FMI 3.0 co-simulation units with event mode in the compiled loop.

The C loop (``csrc/fastloop.c``) runs a
:class:`~mbfmu.cosim.fmi.fmu3_events.Fmu3EventUnit` as the unit runs itself
(its ``push``, ``do_step`` and ``_event``): the same FMU calls in the same
order. A step that returns early at an event is handled at the time the FMU
reached (event mode, output clocks, ``fmi3UpdateDiscreteStates`` until the
discrete states settle, step mode) and the rest of the step is stepped from
there; a triggered input clock true after a step ticks in an event at the
next exchange. This module describes the unit to C (:func:`describe`), hands
C's events and state back to the unit after the run (:func:`write_back`) and
turns a failure C reports into the unit's own error (:func:`error`).
"""
from __future__ import annotations

import ctypes
from typing import Any

from ...errors import CosimError
from ..fmi.clocks import PERIODIC
from ..fmi.fmu3_events import EVENT_ITERATIONS, EVENTS_KEPT, Fmu3EventUnit
from ..fmi.fmu_unit import _status_error
from .c_arrays import BP, DP, IP, UP, VP, c_array

# fl_failure.index of a C_EV failure (csrc/fastloop.c), with the call that failed
EV_ENTER_EVENT, EV_SET_CLOCK, EV_GET_CLOCK, EV_UPDATE, EV_SETTLE, EV_ENTER_STEP, EV_NO_PROGRESS = range(7)
_CALLS = {EV_ENTER_EVENT: "fmi3EnterEventMode", EV_SET_CLOCK: "fmi3SetClock", EV_GET_CLOCK: "fmi3GetClock",
          EV_UPDATE: "fmi3UpdateDiscreteStates", EV_ENTER_STEP: "fmi3EnterStepMode"}


class Events(ctypes.Structure):
    """``fl_ev``, field by field."""
    _fields_ = [("n_trig", ctypes.c_int), ("trig_j", IP), ("trig_vr", UP), ("kick_vr", UP), ("kick_val", BP),
                ("n_oclk", ctypes.c_int), ("oclk_j", IP), ("oclk_vr", UP), ("oclk_val", BP),
                ("enter_event", VP), ("enter_step", VP), ("update", VP), ("set_clock", VP), ("get_clock", VP),
                ("max_iterations", ctypes.c_int),
                ("time", ctypes.c_double), ("pending", ctypes.c_int), ("first", ctypes.c_int),
                ("n_ev", ctypes.c_longlong), ("ring_cap", ctypes.c_int), ("ring_t", DP),
                ("ring_clk", ctypes.POINTER(ctypes.c_ubyte))]


def compiled(u: Any) -> bool:
    """Whether the compiled loop runs ``u`` as a co-simulation unit with event mode (the
    class itself: a subclass may handle its events otherwise).

    Parameters
    ----------
    u : Unit
        A unit of the system.

    Returns
    -------
    bool
    """
    # periodic input clocks cut the steps at their ticks (fmu3_events.py): the C loop does not
    return type(u) is Fmu3EventUnit and not any(c.causality == "input" and c.kind in PERIODIC
                                                for c in u.clocks.values())


def describe(u: Fmu3EventUnit, keep: list) -> Events:
    """The C description of a unit with event mode set up for the run (after the
    master's first exchange).

    Parameters
    ----------
    u : Fmu3EventUnit
        The unit, set up.
    keep : list
        Buffers the description points into are appended (keep them alive for the run).

    Returns
    -------
    Events
    """
    f = u._fmu._functions
    e = Events()
    e.n_trig = len(u._triggers)
    e.trig_j = c_array(ctypes.c_int, [j for j, _ in u._triggers], keep)
    e.trig_vr = c_array(ctypes.c_uint, [c.vr for _, c in u._triggers], keep)
    e.kick_vr = c_array(ctypes.c_uint, [0] * e.n_trig, keep)
    e.kick_val = c_array(ctypes.c_bool, [True] * e.n_trig, keep)
    e.n_oclk = len(u._clock_out)
    e.oclk_j = c_array(ctypes.c_int, [j for j, _ in u._clock_out], keep)
    e.oclk_vr, e.oclk_val = u._out_clock_vr, u._out_clock_val
    e.enter_event, e.enter_step = ctypes.cast(u._f_enter_event, VP), ctypes.cast(u._f_enter_step, VP)
    e.update, e.set_clock = ctypes.cast(u._f_update, VP), ctypes.cast(u._f_set_clock, VP)
    e.get_clock = ctypes.cast(f["fmi3GetClock"], VP)
    e.max_iterations = EVENT_ITERATIONS
    e.time, e.pending, e.first = u._time, int(u._pending), int(getattr(u, "_first", False))
    e.ring_cap = EVENTS_KEPT
    ring_t, ring_clk = (ctypes.c_double * EVENTS_KEPT)(), (ctypes.c_ubyte * (EVENTS_KEPT * max(e.n_oclk, 1)))()
    keep += [ring_t, ring_clk]
    e.ring_t, e.ring_clk = ring_t, ring_clk
    keep.append(e)
    return e


def write_back(u: Fmu3EventUnit, e: Events) -> None:
    """Hand C's state of the run back to the unit: its time, pending clocks and events.

    Parameters
    ----------
    u : Fmu3EventUnit
        The unit C ran.
    e : Events
        Its C description after the run.
    """
    u._time, u._pending, u._first = float(e.time), bool(e.pending), bool(e.first)
    names = [c.name for _, c in u._clock_out]
    n, cap, w = int(e.n_ev), int(e.ring_cap), len(names)
    for a in range(max(0, n - cap), n):
        r = a % cap
        u.events.append((float(e.ring_t[r]), tuple(nm for m, nm in enumerate(names) if e.ring_clk[r * w + m])))


def error(u: Fmu3EventUnit, f: Any) -> BaseException:
    """The unit's own error for a ``C_EV`` failure C reported.

    Parameters
    ----------
    u : Fmu3EventUnit
        The unit that failed.
    f : ctypes.Structure
        The failure (``fl_failure``): what failed, its status, time and value.

    Returns
    -------
    BaseException
        The error the unit raises for that failure in the Python loop.
    """
    if f.index == EV_SETTLE:
        return CosimError(f"unit {u.name!r}: the discrete states did not settle in {EVENT_ITERATIONS} "
                          f"fmi3UpdateDiscreteStates calls at t = {f.t!r} s")
    if f.index == EV_NO_PROGRESS:
        return CosimError(f"unit {u.name!r}: fmi3DoStep returned early at t = {f.t!r} s without "
                          f"progress from t = {f.value!r} s")
    return _status_error(u, _CALLS[f.index], f.status, f.t)
