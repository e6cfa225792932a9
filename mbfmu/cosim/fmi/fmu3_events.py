"""The FMI 3.0 co-simulation unit with event mode (hybrid co-simulation).

``FmuUnit(path)`` returns this class for an FMI 3.0 co-simulation FMU that
declares clocks and ``hasEventMode="true"``. The unit instantiates it with
``eventModeUsed`` and, where the FMU declares ``mightReturnEarlyFromDoStep``,
``earlyReturnAllowed`` (``early_return=False`` turns that off).

Within a communication step ``fmi3DoStep`` may return early at an event
inside the step (``earlyReturn``, ``lastSuccessfulTime``) and ask for event
handling (``eventHandlingNeeded``). The unit then handles the event at the
time the FMU reached: ``fmi3EnterEventMode``, reads the output clocks
(``fmi3GetClock``), iterates ``fmi3UpdateDiscreteStates`` until the discrete
states settle, ``fmi3EnterStepMode``, and steps the rest of the communication
step from there (several events per step are handled one after the other).
Without early return the FMU reports its events at the end of the step.

An output clock is a Boolean output, true at the communication point that
ends the step in which it ticked; ``events`` keeps the time [s] of every
event with the clocks that ticked there. A triggered input clock is a
Boolean input: a true value at a communication point enters event mode there,
sets the inputs and the clock (``fmi3SetClock``) and updates the discrete
states. After initialization the FMU is in event mode (FMI 3.0): the unit
runs the same event iteration there before the first step.

A periodic input clock (``intervalVariability`` constant, fixed or tunable;
without a declared interval, the interval and shift the FMU gives after
initialization) ticks at ``t0 + shift + i * interval``, ``i`` counted
as an integer (never accumulated, so there is no drift). The unit ends a piece
of the step at each tick inside a communication step (an FMU that cannot take
variable step sizes must have its ticks on the master's grid), enters event mode there, sets the clock and the inputs
it holds over the step, and updates the discrete states; a tick on a
communication point ends the step that ends there, one at the start time comes
with the start inputs. ``ticks`` keeps the count and last time of each.

Countdown and changing input clocks are not run (refused by name). The unit
cannot be saved and restored.
"""
from __future__ import annotations

import collections
import ctypes
import math
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ...errors import CosimError, InputError
from .clocks import PERIODIC, TickSchedule, steps_of
from .fmu3_clocked import ClockedFmu3Unit
from .fmu_unit import _status_error

EVENT_ITERATIONS = 1000  # fmi3UpdateDiscreteStates calls allowed at one event before the run fails
EVENTS_KEPT = 100_000    # (time, clocks) entries kept in ``events``


class Fmu3EventUnit(ClockedFmu3Unit):
    """An FMI 3.0 co-simulation FMU run with event mode (see the module docstring).

    Parameters
    ----------
    path, name, values, step, feedthrough, log, interface
        As for :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit`.
    early_return : bool, optional
        Let the FMU return early from a step at an event inside it (default: when the FMU
        declares ``mightReturnEarlyFromDoStep``).

    Attributes
    ----------
    events : collections.deque
        ``(time [s], names of the output clocks that ticked)`` of each event of the current run.
    ticks : dict[str, tuple[int, float]]
        Per periodic input clock: ticks in the current run and the time [s] of the last.
    """

    master_ticked = PERIODIC
    interface_name = "FMI 3.0 co-simulation with event mode"
    python_loop_why = "the master handles its events and clocks inside steps"

    def __init__(self, path: str | Path, name: str | None = None, values: Mapping[str, Any] | None = None,
                 step: float | None = None, feedthrough: Mapping[str, Iterable[str]] | None = None,
                 log: bool = False, interface: str | None = None, early_return: bool | None = None) -> None:
        super().__init__(path, name, values, step, feedthrough, log, interface)
        can = bool(getattr(self.md.coSimulation, "mightReturnEarlyFromDoStep", False))
        self.early_return = can if early_return is None else bool(early_return) and can
        self.events: collections.deque[tuple[float, tuple[str, ...]]] = collections.deque(maxlen=EVENTS_KEPT)

    @staticmethod
    def _check_interface(md: Any) -> None:
        if not str(md.fmiVersion).startswith("3.") or md.coSimulation is None:
            raise InputError(f"{md.modelName!r}: not an FMI 3.0 co-simulation FMU")
        if not getattr(md.coSimulation, "hasEventMode", False):
            clocks = [v.name for v in md.modelVariables if v.type == "Clock"]
            raise InputError(f"{md.modelName!r}: the FMU declares clocks ({', '.join(clocks)}) but no event mode "
                             "(hasEventMode), so its clocks cannot be run")

    # -- set-up --------------------------------------------------------------------------
    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.events.clear()
        self._pending = False
        self.ticks: dict[str, tuple[int, float]] = {}
        super().setup(t0, stop_time, step)

    def _plan_ticks(self, t0: float, step: float) -> None:
        """The periodic ticks (after initialization: the FMU may give the intervals)."""
        periodic = self._periodic_inputs()
        self._schedule = TickSchedule(periodic, t0, self.name)
        if not getattr(self.md.coSimulation, "canHandleVariableCommunicationStepSize", False):
            for c in periodic:  # a tick inside a step would need a shorter step: ticks on the grid only
                try:
                    steps_of(c.name, "interval", c.interval, step)
                    steps_of(c.name, "shift", c.shift, step)
                except InputError as exc:
                    raise InputError(f"unit {self.name!r}: {exc}, and the FMU cannot take the shorter steps "
                                     "that end at its ticks (canHandleVariableCommunicationStepSize)") from None

    def _instantiate(self, log_message: Callable[..., None]) -> Any:
        from fmpy.fmi3 import FMU3Slave

        fmu = FMU3Slave(guid=self.md.guid, unzipDirectory=self._unzipdir, modelIdentifier=self.model_identifier,
                        instanceName=self.name)
        fmu.instantiate(loggingOn=self.logging_on, eventModeUsed=True, earlyReturnAllowed=self.early_return,
                        logMessage=log_message)
        return fmu

    def _initialized(self, t0: float, step: float) -> None:
        f = self._fmu._functions
        self._f_enter_event = f["fmi3EnterEventMode"]
        self._f_enter_step = f["fmi3EnterStepMode"]
        self._f_update = f["fmi3UpdateDiscreteStates"]
        self._f_set_clock = f["fmi3SetClock"]
        self._update_flags = [ctypes.c_bool() for _ in range(5)] + [ctypes.c_double()]
        self._update_refs = [ctypes.byref(x) for x in self._update_flags]
        self._time = t0
        self._in_event = True  # FMI 3.0: exitInitializationMode leaves an FMU with event mode in event mode
        self._plan_ticks(t0, step)
        # the start time's periodic ticks wait for the start inputs where there are inputs
        self._event(t0, entered=True, kick=None if self._driven else self._due(t0))

    # -- events --------------------------------------------------------------------------
    def _due(self, t: float) -> list[int]:
        """Value references of the periodic input clocks due at ``t`` [s] (each tick is taken once)."""
        due = self._schedule.take_due(t, 8 * math.ulp(max(1.0, abs(t))))
        for c, at in due:
            n, _ = self.ticks.get(c.name, (0, at))
            self.ticks[c.name] = (n + 1, at)
        return [c.vr for c, _ in due]

    def _call(self, fn: Any, what: str, t: float, *args: Any) -> None:
        s = fn(self._fmu.component, *args)
        if s > 1:
            raise _status_error(self, what, s, t)

    def _event(self, t: float, entered: bool = False, kick: list[int] | None = None) -> None:
        """Handle an event at ``t`` [s]: event mode, output clocks, input clocks ``kick``
        (value references), discrete-state iteration, back to step mode."""
        if not entered:
            self._call(self._f_enter_event, "fmi3EnterEventMode", t)
        if kick:
            super().push()  # the clocked inputs, set in event mode
            vrs = (ctypes.c_uint * len(kick))(*kick)
            self._call(self._f_set_clock, "fmi3SetClock", t, vrs, len(kick), (ctypes.c_bool * len(kick))(
                *[True] * len(kick)))
        ticked = self._read_output_clocks(t)
        if ticked or kick or not entered:
            self.events.append((t, tuple(ticked)))
        flags = self._update_flags
        for _ in range(EVENT_ITERATIONS):
            self._call(self._f_update, "fmi3UpdateDiscreteStates", t, *self._update_refs)
            if flags[1].value and self._stop_at is None:  # terminateSimulation
                self._stop_at = t
            if not flags[0].value:  # discreteStatesNeedUpdate
                break
        else:
            raise CosimError(f"unit {self.name!r}: the discrete states did not settle in {EVENT_ITERATIONS} "
                             f"fmi3UpdateDiscreteStates calls at t = {t!r} s")
        self._call(self._f_enter_step, "fmi3EnterStepMode", t)

    # -- hot path ----------------------------------------------------------------------
    def push(self) -> None:
        kick = [c.vr for j, c in self._triggers if self.u[j] != 0.0] if self._pending or self._first else []
        if self._first:
            kick += self._due(self._time)
        self._pending = self._first = False
        if kick:
            self._event(self._time, kick=kick)
            super().pull()
        else:
            super().push()

    def _start_inputs(self) -> None:
        super()._start_inputs()
        self._first = True  # the exchange at the start time may tick the input clocks

    def do_step(self, t: float, h: float) -> None:
        if self._stop_at is not None:
            super().do_step(t, h)  # raises StopRequested
        end, tc = t + h, t
        self._clear_output_clocks()
        flags = self._flags
        while True:
            tick = self._schedule.next_time()
            # a piece ends at a periodic tick inside the step (tc + h: the time the FMU reaches)
            piece = tc + (tick - tc) if tc < tick < end - 8 * math.ulp(max(1.0, abs(end))) else end
            s = self._f_step(self._c, tc, piece - tc, self._no_prior, *self._flag_refs)
            if s > 1:
                raise _status_error(self, f"fmi3DoStep(h = {piece - tc!r} s)", s, tc)
            early, reached = flags[2].value, flags[3].value
            at = reached if early else piece
            if flags[1].value:  # terminateSimulation: keep this step, stop before the next
                self._stop_at = at
            handled = flags[0].value  # eventHandlingNeeded
            kick = self._due(at)
            if handled or kick:
                self._event(at, kick=kick)
            if (at >= end if early else piece == end) or self._stop_at is not None:
                break
            if early and not (reached > tc or handled):
                raise CosimError(f"unit {self.name!r}: fmi3DoStep returned early at t = {reached!r} s without "
                                 f"progress from t = {tc!r} s")
            tc = at
        self._time = end
        self._pending = True
