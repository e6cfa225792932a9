"""Preemptive scheduling of a Scheduled Execution FMU's model partitions, in
simulated time.

The unit's partitions share one simulated processor. Each activation (a *job*)
is released at its clock's tick and needs the execution time given for its
clock (simulated seconds; 0 by default). The processor always runs the
released job of highest priority (lowest ``priority`` value, then the clock's
declaration order, then the release order): a job released while one of lower
priority runs preempts it, which resumes when nothing of higher priority is
left. This is fixed-priority preemptive scheduling on one processor, the model
of the FMI 3.0 standard's Scheduled Execution (2.2.8.4).

How that reaches the FMU. A job's ``fmi3ActivateModelPartition(clock, tick
time)`` call starts when the job first gets the processor. The FMU hands
control to the importer only in its callbacks, so those are the places where
it can be preempted: ``lockPreemption`` (before the lock is taken),
``unlockPreemption`` (once the last lock is released) and ``clockUpdate``,
each only while no lock is held. A job with an execution time runs its call
on a worker thread up to its first such place and waits there (its
preemption point) until the schedule says it has finished; the jobs that
preempt it meanwhile run their calls while it waits, as under a real-time
operating system; then it runs the rest of its call. A job whose FMU calls no
callback does all its work where it starts. Only one thread runs FMU code at a
time and every hand-over is decided by the schedule, never by the operating
system, so a run is deterministic. The FMU's locks are honoured: a job is
never suspended while it holds one, so no other partition runs inside a
critical section.
"""
from __future__ import annotations

import heapq
import itertools
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ...errors import CosimError, InputError
from .clocks import Clock

HANDOVER_TIMEOUT = 600.0  # [s] wall clock: a partition that neither returns nor calls back in this long hangs


@dataclass(order=True)
class Job:
    """One activation of a model partition.

    Attributes
    ----------
    key : tuple
        (clock priority, clock declaration rank, release sequence number): the lower runs first.
    clock : Clock
        The partition's clock.
    release : float
        Tick time [s], passed to ``fmi3ActivateModelPartition``.
    remaining : float
        Execution time still needed [s].
    start, finish : float or None
        Simulated times [s] at which it first got the processor and finished.
    preempted_at : str or None
        The callback at which it waited while preempted (``"lockPreemption"``,
        ``"unlockPreemption"`` or ``"clockUpdate"``), ``None`` if it did not wait.
    """

    key: tuple
    clock: Clock = field(compare=False)
    release: float = field(compare=False)
    remaining: float = field(compare=False)
    start: float | None = field(default=None, compare=False)
    finish: float | None = field(default=None, compare=False)
    preempted_at: str | None = field(default=None, compare=False)
    status: int = field(default=0, compare=False)
    clock_updated: bool = field(default=False, compare=False)
    waiting: bool = field(default=False, compare=False)
    returned: bool = field(default=False, compare=False)
    seen: bool = field(default=False, compare=False)  # the master has handled its start
    read: bool = field(default=False, compare=False)  # the master has read its outputs after its call returned
    go_on: threading.Event = field(default_factory=threading.Event, compare=False)
    handed_back: threading.Event = field(default_factory=threading.Event, compare=False)
    thread: threading.Thread | None = field(default=None, compare=False)


class PreemptiveProcessor:
    """The simulated processor of one unit (see the module docstring).

    Parameters
    ----------
    activate : callable
        ``activate(clock, time) -> status``: the FMU's ``fmi3ActivateModelPartition``.
    after_call : callable
        ``after_call(job)``: called on the master's thread each time a job's FMU call
        hands control back (at its preemption point and when it returns), to read the
        countdown clocks it set and check its status.
    execution_time : dict[str, float]
        Execution time per clock name [s]; clocks not named take 0.
    tolerance : float
        [s] completion times this close to a time count as reached.
    """

    def __init__(self, activate: Callable[[Clock, float], int], after_call: Callable[[Job], None],
                 execution_time: dict[str, float], tolerance: float) -> None:
        self._activate, self._after_call = activate, after_call
        self._execution_time, self._tol = execution_time, tolerance
        self._seq = itertools.count()
        self._ready: list[Job] = []  # released, not started
        self._started: list[Job] = []  # started, not finished (preempted or waiting out their time)
        self._local = threading.local()
        self.lock_depth = 0
        self.now = 0.0
        self.finished: list[Job] = []

    def reset(self, t0: float) -> None:
        """Start a run at ``t0`` [s] (jobs left from a previous run are let finish first)."""
        self.drain()
        self.lock_depth, self.now, self.finished = 0, t0, []

    # -- the master's side ------------------------------------------------------------
    def release(self, clock: Clock, rank: int, time: float) -> None:
        """Release an activation of ``clock`` ticking at ``time`` [s]."""
        job = Job((clock.priority, rank, next(self._seq)), clock, time, self._execution_time.get(clock.name, 0.0))
        heapq.heappush(self._ready, job)

    def advance(self, t: float) -> None:
        """Run the processor up to ``t`` [s]: jobs start, are preempted and finish in
        priority order; the jobs due at ``t`` itself with no time left run too."""
        while True:
            job = min(self._ready[:1] + self._started, default=None)
            if job is None:
                self.now = max(self.now, t)
                return
            if job.start is None:
                heapq.heappop(self._ready)
                job.start = self.now
                self._start(job)
                continue
            if self.now + job.remaining <= t + self._tol:
                self.now += job.remaining
                job.remaining = 0.0
                self._finish(job)
                continue
            job.remaining -= t - self.now
            self.now = t
            return

    def drain(self) -> None:
        """Let every started job run the rest of its FMU call (before the FMU is terminated);
        the jobs not started are dropped."""
        self._ready.clear()
        for job in list(self._started):
            if job.waiting:
                self._resume(job)
            if job.thread is not None:
                job.thread.join(HANDOVER_TIMEOUT)
        self._started.clear()

    def _start(self, job: Job) -> None:
        if job.remaining <= 0.0:  # no time: its call runs here and now, on the master's thread
            self._local.job = job
            try:
                job.status = self._activate(job.clock, job.release)
            finally:
                self._local.job = None
            job.returned, job.finish = True, self.now
            self.finished.append(job)
            self._after_call(job)
            return
        self._started.append(job)
        job.thread = threading.Thread(target=self._run, args=(job,), daemon=True,
                                      name=f"mbfmu partition {job.clock.name}")
        job.thread.start()
        self._wait(job)
        self._after_call(job)

    def _finish(self, job: Job) -> None:
        self._started.remove(job)
        job.finish = self.now
        if job.waiting:
            self._resume(job)
        self.finished.append(job)
        self._after_call(job)

    def _resume(self, job: Job) -> None:
        job.handed_back.clear()
        job.waiting = False
        job.go_on.set()
        self._wait(job)

    def _wait(self, job: Job) -> None:
        if not job.handed_back.wait(HANDOVER_TIMEOUT):
            raise CosimError(f"partition of clock {job.clock.name!r} (tick at t = {job.release!r} s) neither returned "
                             f"nor called back within {HANDOVER_TIMEOUT:g} s")

    # -- the worker's side ---------------------------------------------------------------
    def _run(self, job: Job) -> None:
        self._local.job = job
        try:
            job.status = self._activate(job.clock, job.release)
        except BaseException:  # noqa: BLE001 - reported through the status, on the master's thread
            job.status = 4
        job.returned = True
        job.handed_back.set()

    def preemption_point(self, where: str) -> None:
        """Called from the FMU's callbacks: a job with time left that holds no lock waits
        here (once) until the schedule lets it finish."""
        job = getattr(self._local, "job", None)
        if job is None or job.thread is not threading.current_thread() or job.preempted_at is not None \
                or self.lock_depth != 0 or job.finish is not None:
            return
        job.preempted_at, job.waiting = where, True
        job.handed_back.set()
        job.go_on.wait()

    def clock_update(self) -> None:
        """The FMU's ``clockUpdate`` callback."""
        job = getattr(self._local, "job", None)
        if job is not None:
            job.clock_updated = True
        self.preemption_point("clockUpdate")

    def lock(self) -> None:
        """The FMU's ``lockPreemption`` callback."""
        self.preemption_point("lockPreemption")
        self.lock_depth += 1

    def unlock(self) -> None:
        """The FMU's ``unlockPreemption`` callback."""
        self.lock_depth = max(self.lock_depth - 1, 0)
        self.preemption_point("unlockPreemption")


def take_execution_times(unit_name: str, clocks: dict[str, Clock], times: Any) -> dict[str, float]:
    """Check the execution times given per input clock.

    Parameters
    ----------
    unit_name : str
        The unit, named in errors.
    clocks : dict[str, Clock]
        The FMU's clocks by name.
    times : mapping of str to float, or None
        Execution time per input clock name [s].

    Returns
    -------
    dict[str, float]
        The times [s], each finite and not negative.

    Raises
    ------
    InputError
        A name that is not an input clock, or a time that is not a finite number >= 0.
    """
    out: dict[str, float] = {}
    for name, value in dict(times or {}).items():
        c = clocks.get(name)
        if c is None or c.causality != "input":
            raise InputError(f"unit {unit_name!r}: execution_time names {name!r}, which is not an input clock "
                             f"(input clocks: {', '.join(n for n, k in clocks.items() if k.causality == 'input')})")
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise InputError(f"unit {unit_name!r}: execution time of clock {name!r} is not a number: {value!r}") \
                from None
        if not math.isfinite(v) or v < 0.0:
            raise InputError(f"unit {unit_name!r}: execution time of clock {name!r} must be finite and >= 0 s, "
                             f"got {v!r}")
        out[name] = v
    return out
