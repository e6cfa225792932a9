"""The FMI 3.0 Model Exchange unit with clocks: the master integrates the FMU
and handles its clocks at the events of the integration.

``FmuUnit(path)`` returns this class for an FMI 3.0 FMU with clocks that runs
as Model Exchange (it has no co-simulation interface, or ``interface="me"``).
Integration, state and time events are those of
:class:`~mbfmu.cosim.fmi.fmu_me.Fmu3MeUnit`; the clocks come on top (FMI 3.0,
2.2.8 and 3.2):

* a **periodic** input clock (``intervalVariability`` constant, fixed or
  tunable) ticks at ``t0 + shift + i * interval``,
  ``i`` counted as an integer. The unit ends an integration interval at each
  tick, as at a time event, wherever it falls (ticks need not lie on the
  master's grid): ``fmi3EnterEventMode``, ``fmi3SetClock``, the clocked inputs
  of the clock (the values the master holds over the step), the output
  clocks and clocked outputs, then ``fmi3UpdateDiscreteStates`` until the
  discrete states settle. A tick on a communication point ends the step
  that ends there; a tick at the start time comes with the inputs of the
  start time.
* a **triggered** input clock is a Boolean input: a true value at a
  communication point enters event mode there, after the inputs are set.
* an **output clock** is read (``fmi3GetClock``) at every event, before each
  ``fmi3UpdateDiscreteStates``; it is a Boolean output, true at the
  communication point that ends the step in which it ticked.
* a **clocked variable** is read and set only while one of its clocks is
  active (FMI 3.0 forbids it elsewhere): a clocked output holds the value read
  at its clock's last tick (its start value before), a clocked input is sent
  at its clock's ticks only.

``activations`` keeps the latest (clock name, time [s]) pairs of input and
output clocks, ``ticks`` the count and last time per clock. Like the other
clocked units it cannot be saved and restored and must not sit in an
algebraic loop. A fixed or tunable clock without a declared interval takes the
interval and shift the FMU gives after initialization (``fmi3GetIntervalDecimal``,
``fmi3GetShiftDecimal``). Countdown and changing input clocks are refused by name.
"""
from __future__ import annotations

import collections
import math
from typing import Any, Iterable, Sequence

from ...errors import CosimError, InputError, StopRequested
from .clocks import PERIODIC, Clock, TickSchedule
from .fmu3_clocked import ClockedFmu3Unit
from .fmu3_unit import Fmu3Unit
from .fmu_me import Fmu3MeUnit

ACTIVATIONS_KEPT = 100_000  # (clock, time) pairs kept in ``activations``


def _tolerance(t: float) -> float:
    """How far [s] a tick may lie from the time reached and still be due there (rounding)."""
    return 8 * math.ulp(max(1.0, abs(t)))


class Fmu3MeClockUnit(Fmu3MeUnit, ClockedFmu3Unit):
    """An FMI 3.0 Model Exchange FMU with clocks, integrated by the master (see the module docstring).

    Parameters are those of :class:`~mbfmu.cosim.fmi.fmu_me.Fmu3MeUnit`.

    Attributes
    ----------
    activations : collections.deque
        The latest (clock name, time [s]) pairs of the current run, oldest first.
    ticks : dict[str, tuple[int, float]]
        Per clock: ticks in the current run and the time [s] of the last.
    """

    master_ticked = PERIODIC
    interface_name = "FMI 3.0 model exchange with clocks"
    python_loop_why = "the master handles its clocks at the events of its integration"

    @staticmethod
    def _check_interface(md: Any) -> None:
        if not str(md.fmiVersion).startswith("3.") or md.modelExchange is None:
            raise InputError(f"{md.modelName!r}: no FMI 3.0 model exchange interface (fmiVersion {md.fmiVersion}, "
                             f"modelExchange {'yes' if md.modelExchange else 'no'})")

    # -- variables and buffers ----------------------------------------------------------
    def _variables(self, md: Any) -> list:
        kept = super()._variables(md)
        self._clocked: dict[str, frozenset[str]] = {}  # clocked variable element -> its clocks
        for v in md.modelVariables:
            if v.type != "Clock" and getattr(v, "clocks", None):
                for n in self._array_names.get(v.name, [v.name]):
                    self._clocked[n] = frozenset(c.name for c in v.clocks)
        return kept

    def _bufs(self) -> None:
        self.activations: collections.deque[tuple[str, float]] = collections.deque(maxlen=ACTIVATIONS_KEPT)
        self.ticks: dict[str, tuple[int, float]] = {}
        super()._bufs()
        self._held_in_buffers = frozenset(n for n in self._clocked if n in self.inputs or n in self.outputs)
        self._clocked_out = [(j, self._clocked[n]) for j, n in enumerate(self.outputs) if n in self._clocked]
        skip = {j for j, _ in self._clocked_out} | {j for j, _ in self._clock_out}
        self._out_groups = self._groups(self.outputs, [j for j in range(self._n_out) if j not in skip])

    def connect_inputs(self, driven: Sequence[int] | Any) -> None:
        driven = sorted(set(driven))
        super().connect_inputs(driven)
        clock_in = {j for j, _ in self._clock_in}
        self._clocked_in = [(j, self._clocked[self.inputs[j]]) for j in driven if self.inputs[j] in self._clocked]
        clocked = {j for j, _ in self._clocked_in}
        self._event_groups: dict[tuple[bool, tuple[int, ...]], list] = {}  # the groups read or sent at events
        self._in_groups = self._groups(self.inputs, [j for j in driven if j not in clock_in | clocked])

    def _exchange(self, names: Sequence[str], wanted: Iterable[int], read: bool) -> None:
        """Read outputs (``read``) or send inputs ``names[j]``, ``j`` in ``wanted``, now."""
        attr = "_out_groups" if read else "_in_groups"
        key = (read, tuple(wanted))
        groups = self._event_groups.get(key)
        if groups is None:
            groups = self._event_groups[key] = self._groups(names, key[1])
        kept = getattr(self, attr)
        setattr(self, attr, groups)
        try:
            Fmu3Unit.pull(self) if read else Fmu3Unit.push(self)
        finally:
            setattr(self, attr, kept)

    # -- set-up --------------------------------------------------------------------------
    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.activations.clear()
        self.ticks.clear()
        self._kicked: list[tuple[Clock, float]] = []
        self._active_in: frozenset[str] = frozenset()
        self._first = True  # until the first step: the start time's ticks may wait for the start inputs
        # the declared clocks checked before the FMU starts; those it gives, in the initial event
        self._schedule = TickSchedule([c for c in self.clocks.values() if c.causality == "input"
                                       and c.kind in PERIODIC and c.interval is not None], t0, self.name)
        for j, _ in self._clocked_out:  # held at the start values until their clock ticks
            start = self.variables[self.outputs[j]].start
            self.y[j] = float(start) if start is not None else 0.0
        super().setup(t0, stop_time, step)

    # -- events --------------------------------------------------------------------------
    def _note(self, name: str, t: float) -> None:
        n, _ = self.ticks.get(name, (0, t))
        self.ticks[name] = (n + 1, t)
        self.activations.append((name, t))

    def _event_update(self, kind: str) -> bool:
        if kind == "initial":
            self._schedule = TickSchedule(self._periodic_inputs(), self._t, self.name)
        # the start time's ticks wait for the start inputs where there are inputs (push)
        if kind != "initial" or not self._inputs_driven:
            due = self._schedule.take_due(self._t, _tolerance(self._t)) + self._kicked
            self._kicked = []
            if due:
                self._activate(due)
        changed = super()._event_update(kind)
        self._next_event = min(self._next_event, self._schedule.next_time())
        return changed

    def _activate(self, due: list[tuple[Clock, float]]) -> None:
        """Set the input clocks ``due`` (with their tick times [s]) and their clocked inputs."""
        self._me.setClock([c.vr for c, _ in due], [True] * len(due))
        for c, at in due:
            self._note(c.name, at)
        self._active_in = frozenset(c.name for c, _ in due)
        send = [j for j, clocks in self._clocked_in if clocks & self._active_in]
        if send:
            self._exchange(self.inputs, send, read=False)

    def _update_discrete(self) -> tuple:
        ticked = self._read_output_clocks(self._t)
        for name in ticked:
            self._note(name, self._t)
        active = self._active_in | frozenset(ticked)
        self._active_in = frozenset()  # fmi3UpdateDiscreteStates deactivates every clock
        read = [j for j, clocks in self._clocked_out if clocks & active]
        if read:
            self._exchange(self.outputs, read, read=True)
        return super()._update_discrete()

    # -- hot path ------------------------------------------------------------------------
    def push(self) -> None:
        super().push()
        kick = [(c, self._t) for j, c in self._triggers if self.u[j] != 0.0] if self._armed else []
        if self._first:  # the start time's ticks, with the start inputs
            kick += self._schedule.take_due(self._t, _tolerance(self._t))
        self._armed = self._first = False  # one kick per communication point, however often the inputs are set
        if kick:
            self._kick(kick)

    def _kick(self, due: list[tuple[Clock, float]]) -> None:
        """An event at the current communication point for the input clocks ``due``."""
        self._kicked = due
        try:
            self._me.enterEventMode()
            self._event_update("clock")
            self._me.enterContinuousTimeMode()
        except (CosimError, StopRequested):
            raise
        except Exception as exc:  # fmpy raises on an error status
            raise CosimError(f"unit {self.name!r}: the clock event at t = {self._t!r} s failed: {exc}"
                             + (f"; last unit log lines:\n{self.log_text(10)}" if self.log else "")) from exc
        self._restart()
        Fmu3Unit.pull(self)

    def do_step(self, t: float, h: float) -> None:
        self._clear_output_clocks()
        self._first = False
        super().do_step(t, h)
        self._armed = True

    def _start_inputs(self) -> None:
        super()._start_inputs()
        self._armed = True
