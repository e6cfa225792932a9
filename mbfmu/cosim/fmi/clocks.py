"""FMI 3.0 clocks as the master sees them: what a model description declares,
and when each clock ticks on the master's communication grid.

The master activates clocked model partitions at communication points only.
A periodic clock's interval and shift must therefore be whole numbers of
master steps; its ticks are counted as integers (tick ``i`` of a clock with
interval ``T`` and shift ``s`` is at ``t0 + s + i * T``), never accumulated,
so the ten-millionth tick of a 1 ms clock is still at ``i * 0.001`` s.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from ...errors import InputError

PERIODIC = ("constant", "fixed", "tunable")  # intervals the master schedules itself
GRID_TOLERANCE = 1e-9  # relative: how far a clock's interval may lie from a whole number of steps


@dataclass(frozen=True)
class Clock:
    """One ``<Clock>`` variable of an FMI 3.0 model description.

    Parameters
    ----------
    name : str
        Variable name.
    vr : int
        Value reference.
    causality : str
        ``"input"`` or ``"output"``.
    kind : str
        ``intervalVariability``: ``constant``, ``fixed``, ``tunable``, ``changing``,
        ``countdown`` or ``triggered``.
    priority : float
        Lower values run first when several partitions are due at one time
        (FMI 3.0, 2.2.8.4); a clock without one has ``inf`` and sorts last.
    interval : float or None
        ``intervalDecimal`` (or ``intervalCounter / resolution``) [s]; ``None`` when not declared.
    shift : float
        ``shiftDecimal`` (or ``shiftCounter / resolution``) [s].
    """

    name: str
    vr: int
    causality: str
    kind: str
    priority: float
    interval: float | None
    shift: float


def read_clocks(xml_text: str | bytes) -> list[Clock]:
    """The clocks declared in a model description's text, in declaration order.

    Parameters
    ----------
    xml_text : str or bytes
        The ``modelDescription.xml`` of an FMI 3.0 FMU.

    Returns
    -------
    list of Clock
    """
    root = ET.fromstring(xml_text)
    clocks = []
    for node in root.iterfind("ModelVariables/Clock"):
        name = node.get("name", "")
        try:
            resolution = int(node.get("resolution", "1"))
            interval = (float(node.get("intervalDecimal")) if node.get("intervalDecimal") is not None
                        else int(node.get("intervalCounter")) / resolution if node.get("intervalCounter") is not None
                        else None)
            shift = (float(node.get("shiftDecimal")) if node.get("shiftDecimal") is not None
                     else int(node.get("shiftCounter", "0")) / resolution)
            vr = int(node.get("valueReference", ""))
            priority = float(int(node.get("priority"))) if node.get("priority") is not None else math.inf
        except (TypeError, ValueError, ZeroDivisionError) as exc:
            raise InputError(f"clock {name!r}: malformed attribute in the model description ({exc})") from None
        clocks.append(Clock(name, vr, node.get("causality", "local"), node.get("intervalVariability", ""),
                            priority, interval, shift))
    return clocks


def steps_of(clock: str, what: str, seconds: float, step: float) -> int:
    """``seconds`` as a whole number of master steps ``step`` (both s); an
    :class:`~mbfmu.errors.InputError` naming ``clock`` when it is not one.

    Parameters
    ----------
    clock : str
        Clock name, for the message.
    what : str
        What ``seconds`` is (``"interval"``, ``"shift"``), for the message.
    seconds, step : float
        The span and the master's communication step [s].

    Returns
    -------
    int
    """
    if not (math.isfinite(seconds) and seconds >= 0):
        raise InputError(f"clock {clock!r}: {what} {seconds!r} s must be a finite number >= 0")
    n = round(seconds / step)
    if abs(n * step - seconds) > GRID_TOLERANCE * max(seconds, step):
        raise InputError(f"clock {clock!r}: {what} {seconds!r} s is not a whole number of master steps "
                         f"({step!r} s); the master activates model partitions at communication points only")
    return n


@dataclass
class PeriodicTicks:
    """The ticks of one periodic clock on the master grid, counted in integers.

    Parameters
    ----------
    clock : Clock
        The clock (its interval [s] must be set).
    t0, step : float
        Start time and master communication step [s].
    """

    clock: Clock
    t0: float
    step: float

    def __post_init__(self) -> None:
        c = self.clock
        if c.interval is None or c.interval <= 0:
            raise InputError(f"clock {c.name!r}: a periodic clock needs an interval > 0 s, got {c.interval!r}")
        self.every = steps_of(c.name, "interval", c.interval, self.step)
        self.first = steps_of(c.name, "shift", c.shift, self.step)
        if self.every < 1:
            raise InputError(f"clock {c.name!r}: interval {c.interval!r} s is shorter than the master step "
                             f"{self.step!r} s")

    def tick_at(self, k: int) -> float | None:
        """Activation time [s] of the tick at communication point ``k`` (``None``: no tick there)."""
        i, r = divmod(k - self.first, self.every)
        if k < self.first or r:
            return None
        return self.t0 + self.clock.shift + i * self.clock.interval


class TickSchedule:
    """The ticks of periodic input clocks at any time (not only on the master grid), for
    the units that enter event mode where a tick falls (Model Exchange, co-simulation with
    event mode). Tick ``i`` of a clock is at ``t0 + shift + i * interval``, ``i`` counted
    as an integer (never accumulated).

    Parameters
    ----------
    clocks : list of Clock
        Periodic input clocks (their intervals [s] must be set and > 0).
    t0 : float
        Start time [s].
    unit : str
        Unit name, for messages.
    """

    def __init__(self, clocks: list[Clock], t0: float, unit: str) -> None:
        for c in clocks:
            if c.interval is None or not (math.isfinite(c.interval) and c.interval > 0):
                raise InputError(f"unit {unit!r}: periodic input clock {c.name!r} needs a declared interval > 0 s "
                                 f"(intervalDecimal or intervalCounter), got {c.interval!r}")
            if not (math.isfinite(c.shift) and c.shift >= 0):
                raise InputError(f"unit {unit!r}: clock {c.name!r}: shift {c.shift!r} s must be a finite number >= 0")
        self.clocks, self.t0 = list(clocks), float(t0)
        self.count = [0] * len(self.clocks)

    def time_of(self, k: int) -> float:
        """Time [s] of the next tick of clock ``k`` (its index in ``clocks``)."""
        c = self.clocks[k]
        return self.t0 + c.shift + self.count[k] * c.interval

    def next_time(self) -> float:
        """Time [s] of the next tick of any clock (``inf`` without clocks)."""
        return min((self.time_of(k) for k in range(len(self.clocks))), default=math.inf)

    def take_due(self, t: float, tolerance: float) -> list[tuple[Clock, float]]:
        """The clocks whose next tick is at ``t`` [s] within ``tolerance`` [s] (or before), with
        their exact tick times; each counts that tick as done."""
        due = []
        for k, c in enumerate(self.clocks):
            at = self.time_of(k)
            if at <= t + tolerance:
                due.append((c, at))
                self.count[k] += 1
        return due
