"""Pacing a run to the wall clock (``realtime=FACTOR``).

With a factor ``f`` the master lets simulated time ``t`` be reached no
earlier than ``(t - t0) / f`` seconds of wall time after the first step
(``f = 1``: real time; ``f = 2``: twice as fast; ``f = 0.5``: slow motion).
After each step it sleeps until that deadline; a step that ends after its
deadline is an *overrun* (the units are slower than the pace asked for):
they are counted, with the worst lag behind the deadline, in the run's
summary (``realtime_overruns``, ``realtime_worst_lag``) and reported with
a warning, never dropped silently. The run does not skip steps to catch up:
results are those of the same run without pacing, bit for bit.

The compiled loop (:mod:`mbfmu.cosim.master.fast_loop`) paces in C with the same
clock (``CLOCK_MONOTONIC``, Python's :func:`time.monotonic`) and the same rule.
"""
from __future__ import annotations

import math
import time
from typing import Callable

from ...errors import InputError


def realtime_factor(value: float | bool | None) -> float | None:
    """The pacing factor of ``simulate(realtime=...)``: ``None``/``False`` off,
    ``True`` 1.0, else a positive finite number."""
    if value is None or value is False:
        return None
    if value is True:
        return 1.0
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"realtime = {value!r} must be a positive finite factor (1: real time, 2: twice as fast)")
    return float(value)


class Pacer:
    """Holds a run to ``factor`` simulated seconds per wall-clock second.

    Parameters
    ----------
    factor : float
        Simulated time per wall-clock time [s/s].
    t0 : float
        Start time of the run [s]; the wall clock starts at :meth:`start`.
    """

    def __init__(self, factor: float, t0: float) -> None:
        self.factor = float(factor)
        self.t0 = float(t0)
        self.overruns = 0
        self.worst_lag = 0.0
        self.start()

    def start(self) -> None:
        """Let simulated time ``t0`` be now."""
        self.wall0 = time.monotonic()

    def pace(self, t: float, stopping: Callable[[], bool] | None = None) -> None:
        """Wait until ``t`` [s] is due on the wall clock; count an overrun if it is past due.
        The wait is cut short when ``stopping()`` becomes true (checked every 50 ms)."""
        if t <= self.t0:
            return
        due = self.wall0 + (t - self.t0) / self.factor
        now = time.monotonic()
        if now > due:
            self.overruns += 1
            self.worst_lag = max(self.worst_lag, now - due)
            return
        while now < due and not (stopping is not None and stopping()):
            time.sleep(min(due - now, 0.05))
            now = time.monotonic()

    def report(self) -> str:
        """One line on the overruns (empty when there were none)."""
        if not self.overruns:
            return ""
        return (f"real time x{self.factor:g} not held: {self.overruns} steps ended late, worst lag "
                f"{self.worst_lag * 1e3:.3f} ms behind the wall clock")
