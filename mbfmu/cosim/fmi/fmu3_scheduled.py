"""The FMI 3.0 Scheduled Execution unit: the master activates the FMU's model
partitions at their clocks.

``FmuUnit(path)`` returns this class for an FMI 3.0 FMU whose only
simulation interface is Scheduled Execution. Its partitions run at
communication points, in the order of their clocks' priorities (lower value
first), each with ``fmi3ActivateModelPartition(clock, t)``:

* a **periodic** input clock (``intervalVariability`` constant, fixed or
  tunable; fixed and tunable intervals without a declared value are read
  from the FMU after initialization) ticks at ``t0 + shift + i * interval``,
  ``i`` counted as an integer; interval and shift must be whole numbers of
  master steps (:mod:`mbfmu.cosim.fmi.clocks`);
* a **countdown** input clock ticks where the FMU schedules it: after the FMU
  calls the clock-update callback during an activation, the master reads the
  countdown intervals (``fmi3GetIntervalDecimal``); a changed interval ``d``
  schedules a tick at the activation time plus ``d`` (``d = 0``: in the same
  round, after the partitions of higher priority);
* a **triggered** input clock is a Boolean input of the unit: a true value at
  a communication point activates its partition there. Connect it to another
  unit's output clock, or to any Boolean signal;
* an **output clock** is a Boolean output: true at the communication point
  where it ticked (read once per round with ``fmi3GetClock``), false elsewhere.

At a communication point the unit takes its (non-clock) inputs, activates the
partitions due there and then latches its outputs, so a clocked output
reflects the inputs of the same instant (as a discrete controller's output
does). For the exchange order every output therefore depends on every input,
whatever the model structure declares (``feedthrough=`` overrides it). A unit with connected inputs activates when the master sets its
inputs (``push``); one without, when the master reads its outputs (``pull``).

The unit keeps the activations it made (``ticks``: count and last time per
clock; ``activations``: the latest (clock, time) pairs).

``FmuUnit(path, scheduling="preemptive", execution_time={clock: seconds})``
schedules the partitions preemptively instead, in simulated time: each
activation takes the execution time given for its clock (0 by default), a
partition of higher priority preempts a running one of lower priority, and the
FMU's ``lockPreemption``/``unlockPreemption`` critical sections are never
preempted (:mod:`mbfmu.cosim.fmi.se_preemptive`). ``schedule`` then lists each
finished activation (clock, tick, start, finish, where it was preempted) and
``partition_outputs`` the values of each partition's clocked outputs read as
its call returns.

The unit cannot be saved and restored (adaptive stepping and iterative coupling refuse it), and it
must not sit in an algebraic loop: its partitions run once per tick.
"""
from __future__ import annotations

import collections
import ctypes
import heapq
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ...errors import CosimError, InputError
from .clocks import PERIODIC, Clock, PeriodicTicks, steps_of
from .fmu3_clocked import INTERVAL_CHANGED, ClockedFmu3Unit
from .fmu_unit import _status_error
from .se_preemptive import Job, PreemptiveProcessor, take_execution_times

SCHEDULINGS = ("synchronous", "preemptive")

ACTIVATIONS_KEPT = 10_000  # (clock, time) pairs kept in ``activations``


class Fmu3ScheduledUnit(ClockedFmu3Unit):
    """An FMI 3.0 Scheduled Execution FMU, run through fmpy (see the module docstring).

    Parameters
    ----------
    path, name, values, step, feedthrough, log, interface
        As for :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit`.
    scheduling : {"synchronous", "preemptive"}, optional
        How the partitions share the unit's time (see the module docstring).
    execution_time : mapping of str to float, optional
        Preemptive scheduling only: simulated execution time [s] per input clock name.

    Attributes
    ----------
    clocks : dict[str, Clock]
        The FMU's clocks by name.
    ticks : dict[str, tuple[int, float]]
        Per input clock: activations made in the current run and the time [s] of the last.
    activations : collections.deque
        The last (clock name, activation time [s]) pairs, oldest first.
    scheduling : str
        ``"synchronous"`` (partitions run one after the other at their ticks) or
        ``"preemptive"`` (see the module docstring).
    execution_time : dict[str, float]
        Preemptive scheduling: execution time per input clock [s] (others take 0).
    schedule : collections.deque
        Preemptive scheduling: ``(clock, tick [s], start [s], finish [s], preempted at)``
        of each finished activation, oldest first; ``preempted at`` names the FMU callback
        where it waited while preempted, or is ``None``.
    partition_outputs : dict[str, collections.deque]
        Preemptive scheduling: per clock, ``(tick [s], {output: value})`` of the outputs
        declared ``clocks=`` that clock, read as each activation's call returns.
    """

    master_ticked = PERIODIC + ("countdown",)
    interface_name = "FMI 3.0 Scheduled Execution"
    python_loop_why = "the master activates its model partitions at their clock ticks"

    def __init__(self, path: str | Path, name: str | None = None, values: Mapping[str, Any] | None = None,
                 step: float | None = None, feedthrough: Mapping[str, Iterable[str]] | None = None,
                 log: bool = False, interface: str | None = None, scheduling: str = "synchronous",
                 execution_time: Mapping[str, float] | None = None) -> None:
        super().__init__(path, name, values, step, feedthrough, log, interface)
        if scheduling not in SCHEDULINGS:
            raise InputError(f"unit {self.name!r}: scheduling {scheduling!r} is not one of {', '.join(SCHEDULINGS)}")
        self.scheduling = scheduling
        if scheduling == "preemptive":  # worker threads and callbacks into Python: never the compiled loop
            self.python_loop_why = "the master schedules its partitions preemptively, in simulated time"
        self.execution_time = take_execution_times(self.name, self.clocks, execution_time)
        if self.execution_time and scheduling != "preemptive":
            raise InputError(f"unit {self.name!r}: execution_time needs scheduling='preemptive' (synchronous "
                             "partitions take no time)")
        self._processor: PreemptiveProcessor | None = None
        self.schedule: collections.deque[tuple[str, float, float, float, str | None]] = \
            collections.deque(maxlen=ACTIVATIONS_KEPT)
        self.partition_outputs: dict[str, collections.deque[tuple[float, dict[str, float]]]] = {}

    # -- model description ------------------------------------------------------------
    @staticmethod
    def _check_interface(md: Any) -> None:
        if not str(md.fmiVersion).startswith("3.") or getattr(md, "scheduledExecution", None) is None:
            raise InputError(f"{md.modelName!r}: not an FMI 3.0 Scheduled Execution FMU")

    @staticmethod
    def _interface_element(md: Any) -> Any:
        return md.scheduledExecution

    def _expand_declared(self, declared: dict[str, tuple[str, ...]]) -> None:
        # an activation latches the outputs of its tick with the inputs of that tick, so for the
        # order of the exchange every output follows every input, whatever the model structure
        # says (a controller with D = 0 declares none, and its outputs were read a tick late)
        for out in declared:
            declared[out] = tuple(self._kept_inputs)

    def _bufs(self) -> None:
        self._countdown = [c for c in self.clocks.values() if c.causality == "input" and c.kind == "countdown"]
        self._cd_vr = (ctypes.c_uint * max(len(self._countdown), 1))(*[c.vr for c in self._countdown])
        self._cd_interval = (ctypes.c_double * max(len(self._countdown), 1))()
        self._cd_qualifier = (ctypes.c_int * max(len(self._countdown), 1))()
        self._rank = {c.name: k for k, c in enumerate(self.clocks.values())}
        self._clock_flag = ctypes.c_int(0)  # set with _clock_updated, for the compiled loop
        self.ticks: dict[str, tuple[int, float]] = {}
        self.activations: collections.deque[tuple[str, float]] = collections.deque(maxlen=ACTIVATIONS_KEPT)
        super()._bufs()

    # -- set-up --------------------------------------------------------------------------
    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self._t0, self._H = t0, step
        self._k, self._t_now, self._pending = 0, t0, True
        self._scheduled: dict[int, list[tuple[Clock, float]]] = {}
        self._clock_updated = False
        self.ticks.clear()
        self.activations.clear()
        self.schedule.clear()
        if self._processor is not None:
            self._processor.drain()
            self._processor = None
        if self.scheduling == "preemptive":  # before the FMU starts: a unit without inputs activates in setup
            self._processor = PreemptiveProcessor(self._call_partition, self._after_call, self.execution_time,
                                                  1e-9 * step)
            self._processor.reset(t0)
            self._clocked_outputs = self._outputs_by_clock()
            self.partition_outputs = {c: collections.deque(maxlen=ACTIVATIONS_KEPT) for c in self._clocked_outputs}
        super().setup(t0, stop_time, step)

    def _outputs_by_clock(self) -> dict[str, tuple[list[str], Callable[[], Any]]]:
        """Per input clock: its partition's outputs (declared ``clocks=`` it) and a reader of them."""
        by_clock: dict[str, list[str]] = {}
        for v in self.md.modelVariables:
            if v.causality == "output" and v.name not in self.clocks and v.name in self.outputs:
                for c in getattr(v, "clocks", None) or ():
                    by_clock.setdefault(c.name, []).append(v.name)
        return {c: (names, self.getter(names)) for c, names in by_clock.items()
                if c in self.clocks and self.clocks[c].causality == "input"}

    def terminate(self) -> None:
        if self._processor is not None:  # no partition may be left inside the FMU when it is freed
            try:
                self._processor.drain()
            except CosimError:
                pass
        super().terminate()

    def _instantiate(self, log_message: Callable[..., None]) -> Any:
        """A Scheduled Execution instance whose clock-update callback reaches this unit
        (fmpy's own ``instantiate`` passes one that does nothing)."""
        from fmpy.fmi3 import (FMU3ScheduledExecution, fmi3Boolean, fmi3ClockUpdateCallback, fmi3InstanceEnvironment,
                               fmi3LockPreemptionCallback, fmi3LogMessageCallback, fmi3UnlockPreemptionCallback)

        def clock_update(env: Any) -> None:
            self._clock_updated = True
            self._clock_flag.value = 1  # what the compiled loop reads (master/c_scheduled.py)
            if self._processor is not None:
                self._processor.clock_update()

        def lock() -> None:
            if self._processor is not None:
                self._processor.lock()

        def unlock() -> None:
            if self._processor is not None:
                self._processor.unlock()

        fmu = FMU3ScheduledExecution(guid=self.md.guid, unzipDirectory=self._unzipdir,
                                     modelIdentifier=self.model_identifier, instanceName=self.name)
        fmu.logMessage = fmi3LogMessageCallback(log_message)  # kept alive on the fmpy object
        fmu.clockUpdate = fmi3ClockUpdateCallback(clock_update)
        fmu.lockPreemption = fmi3LockPreemptionCallback(lock)
        fmu.unlockPreemption = fmi3UnlockPreemptionCallback(unlock)
        fmu.component = fmu.fmi3InstantiateScheduledExecution(
            self.name.encode("utf-8"), self.md.guid.encode("utf-8"),
            (os.path.join(self._unzipdir, "resources") + os.path.sep).encode("utf-8"), fmi3Boolean(False),
            fmi3Boolean(self.logging_on), fmi3InstanceEnvironment(), fmu.logMessage, fmu.clockUpdate,
            fmu.lockPreemption, fmu.unlockPreemption)
        if not fmu.component:
            raise CosimError("fmi3InstantiateScheduledExecution returned NULL")
        return fmu

    def _initialized(self, t0: float, step: float) -> None:
        f = self._fmu._functions
        self._f_activate = f["fmi3ActivateModelPartition"]
        self._f_interval = f["fmi3GetIntervalDecimal"]
        self._periodic = []
        for c in self._periodic_inputs(ask_shift=False):  # a fixed or tunable interval the FMU decides: asked
            try:
                self._periodic.append(PeriodicTicks(c, t0, step))
            except InputError as exc:
                raise InputError(f"unit {self.name!r}: {exc}") from None

    # -- hot path ----------------------------------------------------------------------
    def push(self) -> None:
        if self._processor is not None and self._pending:
            self._processor.advance(self._t_now)  # partitions finishing up to now ran with the inputs before
        super().push()
        if self._pending:
            self._activate()

    def pull(self) -> None:
        if self._pending and not self._driven:
            self._activate()
        else:
            super().pull()

    def do_step(self, t: float, h: float) -> None:
        """Advance to ``t + h`` [s]: the partitions due there run when the master next
        sets the inputs (or reads the outputs of a unit without inputs)."""
        end = t + h
        k = round((end - self._t0) / self._H)
        if abs(self._t0 + k * self._H - end) > 1e-9 * max(self._H, abs(end)):
            raise CosimError(f"unit {self.name!r}: a step to t = {end!r} s leaves the grid of its clocks "
                             f"(t0 = {self._t0!r} s, step {self._H!r} s)")
        self._clear_output_clocks()
        self._k, self._t_now, self._pending = k, end, True

    def _activate(self) -> None:
        """Activate every partition due at the current communication point, by priority."""
        self._pending = False
        k, comp = self._k, self._fmu.component
        due: list[tuple[float, int, Clock, float]] = []
        for p in self._periodic:
            ta = p.tick_at(k)
            if ta is not None:
                due.append((p.clock.priority, self._rank[p.clock.name], p.clock, ta))
        for j, c in self._triggers:
            if self.u[j] != 0.0:
                due.append((c.priority, self._rank[c.name], c, self._t_now))
        for c, ta in self._scheduled.pop(k, ()):
            due.append((c.priority, self._rank[c.name], c, ta))
        if self._processor is not None:
            self._run_preemptive(due)
            return
        if not due:
            super().pull()
            return
        heapq.heapify(due)
        while due:
            _, _, c, ta = heapq.heappop(due)
            self._clock_updated = False
            s = self._f_activate(comp, c.vr, ta)
            if s > 1:
                raise _status_error(self, f"fmi3ActivateModelPartition of clock {c.name!r}", s, ta)
            n, _ = self.ticks.get(c.name, (0, ta))
            self.ticks[c.name] = (n + 1, ta)
            self.activations.append((c.name, ta))
            if self._clock_updated and self._countdown:
                for cd, at in self._countdowns_set(ta):
                    if at == ta:
                        heapq.heappush(due, (cd.priority, self._rank[cd.name], cd, at))
        self._read_output_clocks(self._t_now)
        super().pull()

    # -- preemptive scheduling -----------------------------------------------------------
    def _run_preemptive(self, due: list[tuple[float, int, Clock, float]]) -> None:
        """Release the activations due now on the unit's simulated processor and run it to now."""
        proc = self._processor
        proc.advance(self._t_now)
        for _, rank, c, ta in sorted(due, key=lambda d: d[:2]):
            proc.release(c, rank, ta)
        proc.advance(self._t_now)
        self._read_output_clocks(self._t_now)
        super().pull()

    def _call_partition(self, c: Clock, ta: float) -> int:
        return self._f_activate(self._fmu.component, c.vr, ta)

    def _after_call(self, job: Job) -> None:
        """A job's FMU call handed control back (waiting while preempted, or returned)."""
        c, ta = job.clock, job.release
        if job.returned and job.status > 1:
            raise _status_error(self, f"fmi3ActivateModelPartition of clock {c.name!r}", job.status, ta)
        if not job.seen:  # its call has just begun
            job.seen = True
            n, _ = self.ticks.get(c.name, (0, ta))
            self.ticks[c.name] = (n + 1, ta)
            self.activations.append((c.name, ta))
        if job.finish is not None:
            self.schedule.append((c.name, ta, job.start, job.finish, job.preempted_at))
        if job.clock_updated and self._countdown:
            job.clock_updated = False
            for cd, at in self._countdowns_set(ta):
                self._processor.release(cd, self._rank[cd.name], at)
        if job.returned and not job.read:
            job.read = True
            if c.name in self._clocked_outputs:
                names, get = self._clocked_outputs[c.name]
                self.partition_outputs[c.name].append((ta, dict(zip(names, get()))))

    def _countdowns_set(self, ta: float) -> list[tuple[Clock, float]]:
        """Countdown clocks whose interval the FMU changed during the activation at ``ta`` [s]:
        those due at ``ta`` itself are returned, later ones are scheduled."""
        n = len(self._countdown)
        s = self._f_interval(self._fmu.component, self._cd_vr, n, self._cd_interval, self._cd_qualifier)
        if s > 1:
            raise _status_error(self, "fmi3GetIntervalDecimal", s, ta)
        now = []
        for c, d, q in zip(self._countdown, self._cd_interval, self._cd_qualifier):
            if q != INTERVAL_CHANGED:
                continue
            if d == 0.0:
                now.append((c, ta))
                continue
            try:
                j = steps_of(c.name, "countdown tick at", ta + d - self._t0, self._H)
            except InputError as exc:
                raise CosimError(f"unit {self.name!r}: {exc} (set at t = {ta!r} s)") from None
            if d < 0.0:
                raise CosimError(f"unit {self.name!r}: clock {c.name!r} was given a negative interval {d!r} s")
            if j <= self._k:  # only preemptive: the partition that set it had run past the tick
                raise CosimError(f"unit {self.name!r}: clock {c.name!r}: the countdown tick at t = {ta + d!r} s was "
                                 f"set by a partition ticking at {ta!r} s that ran until after it (at "
                                 f"{self._processor.now!r} s); give that partition less execution time")
            self._scheduled.setdefault(j, []).append((c, ta + d))
        return now

