"""What the clocked FMI 3.0 units share: their clocks as the master's signals.

A clock the master ticks itself (periodic or countdown input clocks of a
Scheduled Execution FMU) is not a variable of the unit. A triggered input
clock is a Boolean input (true at a communication point: tick it there), an
output clock a Boolean output (true at the communication point that ends the
step, or the round of activations, in which it ticked). Output clocks are read
with ``fmi3GetClock`` by the unit itself, never through the value groups.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

from ...errors import InputError
from ...untrusted.archive import open_zip
from .clocks import PERIODIC, Clock, read_clocks
from .fmu3_unit import Fmu3Unit
from ..units import Variable

INTERVAL_CHANGED = 2  # fmi3IntervalQualifier fmi3IntervalChanged


class ClockedFmu3Unit(Fmu3Unit):
    """Base of the FMI 3.0 units with clocks (see the module docstring).

    Attributes
    ----------
    clocks : dict[str, Clock]
        The FMU's clocks by name (:class:`mbfmu.cosim.fmi.clocks.Clock`).
    """

    _held_in_buffers: frozenset[str] = frozenset()  # variables read from the unit's buffers, not the FMU
    master_ticked: tuple[str, ...] = ()  # intervalVariability of input clocks the master schedules itself
    interface_name = "FMI 3.0 with clocks"  # said where the run takes the Python loop
    python_loop_why = "the master handles its clocks"

    def _variables(self, md: Any) -> list[Variable]:
        with open_zip(self.path, f"FMU {str(self.path)!r}", "FMU") as z:
            self.clocks = {c.name: c for c in read_clocks(z.read("modelDescription.xml"))}
        kept = []
        for v in super()._variables(md):
            c = self.clocks.get(v.name)
            if c is None:
                kept.append(v)
            elif c.causality == "output" or (c.causality == "input" and c.kind == "triggered"):
                kept.append(Variable(v.name, c.causality, "Boolean", None, 0.0, v.vr))
            elif c.causality == "input" and c.kind not in self.master_ticked:
                raise InputError(f"{md.modelName!r}: input clock {c.name!r} has intervalVariability {c.kind!r}; "
                                 f"the master runs {' and '.join(self.master_ticked + ('triggered',))} input clocks "
                                 "of this kind of FMU")
        self._kept_inputs = [v.name for v in kept if v.causality == "input"]
        return kept

    def _expand_declared(self, declared: dict[str, tuple[str, ...]]) -> None:
        super()._expand_declared(declared)
        for out, deps in declared.items():  # input clocks the master ticks are not inputs
            declared[out] = tuple(d for d in deps if d in self._kept_inputs)

    def set(self, name: str, value: Any) -> None:
        """Set a parameter or start value by name before a run (not a clock)."""
        if name in self.clocks:
            raise InputError(f"unit {self.name!r}: {name!r} is a clock; the master ticks it")
        super().set(name, value)

    def _bufs(self) -> None:
        # the tick schedule and the clocks of a step are the master's and the unit's, not in the
        # FMU state: no rollback (adaptive stepping and iterative coupling refuse the unit)
        self.can_rollback = False
        self._n_in, self._n_out = len(self.inputs), len(self.outputs)
        self.u = (ctypes.c_double * max(self._n_in, 1))()
        self.y = (ctypes.c_double * max(self._n_out, 1))()
        self._clock_out = [(j, self.clocks[n]) for j, n in enumerate(self.outputs) if n in self.clocks]
        self._clock_in = [(j, self.clocks[n]) for j, n in enumerate(self.inputs) if n in self.clocks]
        clock_out = {j for j, _ in self._clock_out}
        self._out_groups = self._groups(self.outputs, [j for j in range(self._n_out) if j not in clock_out])
        self._out_clock_vr = (ctypes.c_uint * max(len(self._clock_out), 1))(*[c.vr for _, c in self._clock_out])
        self._out_clock_val = (ctypes.c_bool * max(len(self._clock_out), 1))()
        self.connect_inputs(range(self._n_in))

    def connect_inputs(self, driven: Sequence[int] | Any) -> None:
        driven = sorted(set(driven))
        self._driven = bool(driven)
        self._triggers = [(j, c) for j, c in self._clock_in if j in driven]
        clock_in = {j for j, _ in self._clock_in}
        self._in_groups = self._groups(self.inputs, [j for j in driven if j not in clock_in])

    def getter(self, names: Sequence[str]) -> Callable[[], Sequence[float]]:
        """A reader of ``names``; clocks read as their Boolean input or output buffer value."""
        clock_at = {n: (self.u, self.inputs.index(n)) if n in self.inputs else (self.y, self.outputs.index(n))
                    for n in names if n in self.clocks or n in self._held_in_buffers}
        if not clock_at:
            return super().getter(names)
        rest = [n for n in names if n not in clock_at]
        get_rest = super().getter(rest) if rest else (lambda: ())

        def get() -> list[float]:
            values = iter(get_rest())
            return [clock_at[n][0][clock_at[n][1]] if n in clock_at else next(values) for n in names]
        return get

    def _read_output_clocks(self, t: float) -> list[str]:
        """Read the output clocks (``fmi3GetClock``); those that tick set their output to 1.
        Returns the names of the clocks that ticked."""
        from .fmu_unit import _status_error

        if not self._clock_out:
            return []
        s = self._fmu._functions["fmi3GetClock"](self._fmu.component, self._out_clock_vr, len(self._clock_out),
                                                 self._out_clock_val)
        if s > 1:
            raise _status_error(self, "fmi3GetClock", s, t)
        ticked = []
        for (j, c), v in zip(self._clock_out, self._out_clock_val):
            if v:
                self.y[j] = 1.0
                ticked.append(c.name)
        return ticked

    def _periodic_inputs(self, ask_shift: bool = True) -> list[Clock]:
        """The periodic input clocks, each with its interval and shift [s]: as declared, or
        (a fixed or tunable clock without a declared interval) as the FMU gives them after
        initialization (``fmi3GetIntervalDecimal``, and ``fmi3GetShiftDecimal`` unless
        ``ask_shift`` is false: the declared shift is kept)."""
        from .fmu_unit import _status_error

        clocks = []
        for c in self.clocks.values():
            if c.causality != "input" or c.kind not in PERIODIC:
                continue
            if c.interval is None:
                f, vr = self._fmu._functions, (ctypes.c_uint * 1)(c.vr)
                val, q, shift = (ctypes.c_double * 1)(), (ctypes.c_int * 1)(), (ctypes.c_double * 1)()
                s = f["fmi3GetIntervalDecimal"](self._fmu.component, vr, 1, val, q)
                if s > 1:
                    raise _status_error(self, f"fmi3GetIntervalDecimal of clock {c.name!r}", s)
                if q[0] != INTERVAL_CHANGED:
                    raise InputError(f"unit {self.name!r}: clock {c.name!r} declares no interval and the FMU gives "
                                     "none after initialization")
                if ask_shift:
                    s = f["fmi3GetShiftDecimal"](self._fmu.component, vr, 1, shift)
                    if s > 1:
                        raise _status_error(self, f"fmi3GetShiftDecimal of clock {c.name!r}", s)
                c = Clock(c.name, c.vr, c.causality, c.kind, c.priority, float(val[0]),
                          float(shift[0]) if ask_shift else c.shift)
            clocks.append(c)
        return clocks

    def _clear_output_clocks(self) -> None:
        for j, _ in self._clock_out:
            self.y[j] = 0.0


def refuse_clocked_loops(loops: Sequence[Sequence[Any]]) -> None:
    """Raise :class:`~mbfmu.errors.InputError` when a clocked FMI 3.0 unit sits in an
    algebraic loop: its partitions and events run once per tick, so the loop could not
    be iterated to convergence.

    Parameters
    ----------
    loops : sequence of sequences of Unit
        The units of each algebraic loop of a system.
    """
    for block in loops:
        clocked = [u.name for u in block if isinstance(u, ClockedFmu3Unit)]
        if clocked:
            raise InputError(f"unit {clocked[0]!r} (FMI 3.0 with clocks) is in an algebraic loop with "
                             f"{[u.name for u in block if u.name != clocked[0]]}: its clocks tick once per "
                             "communication point and cannot be iterated; break the loop (a unit without direct "
                             "feedthrough)")
