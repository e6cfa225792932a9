"""What a run checks between two steps: Ctrl-C, SIGTERM, a wall-clock limit, and memory.

:class:`RunGuard` turns SIGINT (Ctrl-C) and SIGTERM into a request that the
master honours between two steps, so the signal never lands inside a unit
(a KeyboardInterrupt raised inside a Python FMU makes it return fmi2Fatal).

A unit stuck inside a step (a C call that never returns) blocks Python's
signal handlers and every check between steps. So a watchdog thread keeps
the clock, hands the rows recorded so far to the run's sink once the master
has not got on for a whole flush period (so that they are on disk even if
the process is then killed with SIGKILL), and hears the signals through the interpreter's wakeup file
descriptor (written by the C-level handler even while the main thread is
stuck): when the timeout passes, on SIGTERM, or on a second Ctrl-C, it asks
the master to stop between steps and, if the master has made no progress
(no step, no row) for :data:`GRACE` seconds, it calls the run's ``on_stuck`` hook (which
keeps the rows so far) and ends the process with :data:`EXIT_CODES`
(124 timeout, 143 SIGTERM, 130 Ctrl-C).

:func:`check_recording_fits` refuses a recording that cannot fit in memory
before anything is allocated.
"""
from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import sys
import threading
import time as _time
from typing import Any, Callable

from ...errors import InputError

FLUSH_PERIOD = 1.0  # s of wall time between two hand-overs of rows to a sink
MEMORY_FRACTION = 0.5  # of the available memory a recording may take
GRACE = 0.5  # s the master has to stop between steps before the watchdog ends the process
EXIT_CODES = {"timeout": 124, "SIGTERM": 143, "SIGINT": 130}  # as timeout(1) and the shells report them


class RunGuard:
    """Stop requests (signals, wall-clock timeout) and the flush clock of one run.

    Parameters
    ----------
    timeout : float, optional
        Wall-clock limit of the run [s].
    period : float
        Wall time between two periodic checks that return True from :meth:`due` [s].
    on_stuck : callable, optional
        ``on_stuck(kind, reason)`` with ``kind`` one of ``"timeout"``,
        ``"SIGTERM"``, ``"SIGINT"``: called from the watchdog thread (holding
        :attr:`lock`) when the master does not stop between steps in time (a
        unit is stuck inside a step); it should keep what can be kept. The
        process then ends with ``EXIT_CODES[kind]``, unless it returns
        ``False`` (the master has its result and is ending the run itself: the
        watchdog waits 5 s more for that). Without it, no watchdog runs.
    progress : callable, optional
        Returns a value that changes whenever the master gets on (a step, a
        row): while it does, the master is not stuck and will stop at the
        next step, so the watchdog waits another :data:`GRACE`.
    on_quiet : callable, optional
        ``on_quiet()``: called from the watchdog thread (holding :attr:`lock`)
        every half ``period`` while ``progress`` has not changed since the
        previous half period (a unit inside a long or stuck call): it should
        hand the rows recorded so far to the sink, so that they are on disk
        within a period and survive even a SIGKILL.

    Attributes
    ----------
    signal : str or None
        Why the run was asked to stop (a signal or the timeout), ``None`` while it goes on.
    kind : str or None
        ``"timeout"``, ``"SIGTERM"`` or ``"SIGINT"`` for that request.
    """

    def __init__(self, timeout: float | None = None, period: float = FLUSH_PERIOD,
                 on_stuck: Callable[[str, str], bool | None] | None = None,
                 progress: Callable[[], Any] | None = None, on_quiet: Callable[[], None] | None = None) -> None:
        self.timeout = timeout
        self.period = period
        self.start = _time.perf_counter()
        self.deadline = None if timeout is None else self.start + timeout
        self.next = self.start + period
        self.signal: str | None = None
        self.kind: str | None = None
        self.on_stuck = on_stuck
        self.lock = threading.Lock()  # held by whoever writes the rows out: the master or the watchdog
        self.stop_flag = ctypes.c_int(0)  # 1 once a stop is requested (the compiled loop reads it every step)
        self.progress = progress
        self.on_quiet = on_quiet
        self._sigints = 0
        self._old: dict[int, Any] = {}
        self._watchdog: _Watchdog | None = None

    def __enter__(self) -> "RunGuard":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._on_signal)
        if self.on_stuck is not None:
            self._watchdog = _Watchdog(self)
            self._watchdog.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._watchdog is not None:
            self._watchdog.close()
            self._watchdog = None
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGINT:
            self._sigints += 1
            if self._sigints >= 2:
                raise KeyboardInterrupt  # the second Ctrl-C: do not wait for the step to end
        self.request("SIGINT" if signum == signal.SIGINT else "SIGTERM")

    def request(self, kind: str) -> None:
        """Ask the master to stop between steps (``kind`` as in :data:`EXIT_CODES`)."""
        if self.signal is not None and self.kind != "SIGINT":
            return  # the first reason stands
        self.kind = kind
        self.stop_flag.value = 1
        self.signal = {"SIGINT": "interrupted by Ctrl-C (SIGINT)", "SIGTERM": "terminated (SIGTERM)",
                       "timeout": f"wall-clock timeout of {self.timeout!r} s reached"}[kind]

    def due(self) -> bool:
        """Whether the master should flush and check for a stop now (cheap)."""
        if self.signal is not None:
            return True
        now = _time.perf_counter()
        if now >= self.next or (self.deadline is not None and now > self.deadline):
            self.next = now + self.period
            return True
        return False

    def stop_reason(self) -> str | None:
        """Why the run must stop now, or ``None``."""
        if self.signal is None and self.deadline is not None and _time.perf_counter() > self.deadline:
            self.request("timeout")
        return self.signal


class _Watchdog(threading.Thread):
    """Keeps the deadline and hears SIGINT/SIGTERM while the main thread may be
    stuck in a C call; see the module docstring."""

    def __init__(self, guard: RunGuard) -> None:
        super().__init__(name="mbfmu-run-watchdog", daemon=True)
        self.guard = guard
        self._closed = threading.Event()
        # socket pairs, not pipes: select() and set_wakeup_fd take sockets on every platform
        self._wake_r, self._wake_w = socket.socketpair()  # close() wakes the thread up
        self._sig: tuple[socket.socket, socket.socket] | None = None
        self._old_wakeup = -1
        if threading.current_thread() is threading.main_thread():
            # the C-level signal handler writes the signal number here, whatever Python does
            r, w = socket.socketpair()
            w.setblocking(False)
            try:
                self._old_wakeup = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
                self._sig = (r, w)
            except ValueError:  # pragma: no cover - not the main thread after all
                r.close(), w.close()

    def close(self) -> None:
        self._closed.set()
        try:
            self._wake_w.send(b"x")
        except OSError:  # pragma: no cover
            pass
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5.0)
        if self._sig is not None:
            try:
                signal.set_wakeup_fd(self._old_wakeup)
            except ValueError:  # pragma: no cover
                pass
            for sock in self._sig:
                sock.close()
            self._sig = None
        self._wake_r.close(), self._wake_w.close()

    def run(self) -> None:
        g = self.guard
        sig_r = self._sig[0] if self._sig is not None else None
        fds = [self._wake_r] + ([sig_r] if sig_r is not None else [])
        interrupts = 0
        act_at: float | None = None  # when to end the process if the master has not stopped
        act_kind = ""
        hint_at: float | None = None  # when to say that a second Ctrl-C is needed
        last_mark: Any = None  # the master's progress when the stop was requested
        quiet = g.on_quiet is not None and g.progress is not None
        # the master's progress is looked at every half period: rows recorded before it stopped
        # getting on are handed over within one period
        quiet_at = _time.perf_counter() + g.period / 2 if quiet else None
        quiet_mark: Any = g.progress() if quiet else None  # type: ignore[misc]
        while not self._closed.is_set():
            now = _time.perf_counter()
            waits = [t - now for t in (g.deadline if g.kind is None else None, act_at, hint_at, quiet_at)
                     if t is not None]
            ready, _, _ = select.select(fds, [], [], max(0.0, min(waits)) if waits else None)
            if self._closed.is_set():
                return
            if sig_r is not None and sig_r in ready:
                for signum in sig_r.recv(64):
                    if signum == signal.SIGTERM:
                        g.request("SIGTERM")
                        if act_at is None:
                            act_kind, act_at = "SIGTERM", _time.perf_counter() + GRACE
                            last_mark = g.progress() if g.progress is not None else None
                    elif signum == signal.SIGINT:
                        interrupts += 1
                        g.request("SIGINT")  # the compiled loop sees it before its next step
                        if interrupts >= 2:  # the second Ctrl-C: stop now, stuck or not
                            act_kind, act_at = "SIGINT", _time.perf_counter() + GRACE / 2
                        else:
                            hint_at = _time.perf_counter() + 2 * GRACE
            now = _time.perf_counter()
            if quiet_at is not None and now >= quiet_at:
                quiet_at = now + g.period / 2
                mark = g.progress()  # type: ignore[misc]
                if mark == quiet_mark:
                    self._hand_over_rows()
                quiet_mark = mark
            if g.deadline is not None and g.kind is None and now >= g.deadline:
                g.request("timeout")
                act_kind, act_at = "timeout", now + GRACE
                last_mark = g.progress() if g.progress is not None else None
            if hint_at is not None and act_at is None and _time.perf_counter() >= hint_at:
                hint_at = None
                print("mbfmu: a unit does not return from its call; press Ctrl-C again to end the run "
                      "(the rows so far are kept)", file=sys.stderr, flush=True)
            if act_at is not None and _time.perf_counter() >= act_at and not self._closed.is_set():
                mark = g.progress() if g.progress is not None else None
                if mark is not None and mark != last_mark and act_kind != "SIGINT":
                    last_mark, act_at = mark, _time.perf_counter() + GRACE  # on its way to the stop
                    continue
                self._end_process(act_kind)
                return

    def _hand_over_rows(self) -> None:
        """The master has not got on for a whole period: its rows so far go to the sink now."""
        g = self.guard
        if not g.lock.acquire(timeout=0.1):  # the master is writing rows itself
            return
        try:
            if not self._closed.is_set():
                g.on_quiet()  # type: ignore[misc]
        except Exception as exc:  # the run goes on; its own flush will meet the problem again
            print(f"mbfmu: could not write the rows so far: {exc}", file=sys.stderr)
        finally:
            g.lock.release()

    def _end_process(self, kind: str) -> None:
        """The master did not stop between steps: keep the rows and end the process."""
        g = self.guard
        code = EXIT_CODES[g.kind or kind]
        if g.lock.acquire(timeout=2.0):  # else the master is stuck writing rows: end without them
            if self._closed.is_set():  # the run ended meanwhile
                g.lock.release()
                return
            try:
                ending = g.on_stuck(g.kind or kind, g.signal or kind)  # type: ignore[misc]
            except BaseException as exc:  # the process ends anyway; say why the rows may be missing
                ending = True
                print(f"mbfmu: could not keep the rows of the stuck run: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
            if ending is False:  # the master has written its result and is ending the run itself
                g.lock.release()
                if self._closed.wait(5.0):
                    return
        try:
            sys.stderr.flush()
            sys.stdout.flush()
        finally:
            os._exit(code)


def _address_space_left() -> float:
    """What the process's address-space limit (``ulimit -v``) leaves [bytes]."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return float("inf")
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        return float(max(soft - used, 0))
    except (ImportError, OSError, ValueError):
        return float("inf")


def available_memory() -> float:
    """Memory available to a new allocation [bytes]: MemAvailable on Linux, within ``ulimit -v``."""
    free = float("inf")
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024.0
                    break
    except (OSError, ValueError, IndexError):
        import os
        try:
            free = float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):  # pragma: no cover - no way to know
            pass
    return min(free, _address_space_left())


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def check_recording_fits(nrows: int, ncols: int, streaming: bool) -> bool:
    """Whether ``nrows`` x ``ncols`` float64 values fit in memory.

    Returns False when they do not but the rows are streamed (the master then
    keeps a window only); raises :class:`InputError` when they do not and are
    not streamed.
    """
    need = float(nrows) * ncols * 8
    limit = MEMORY_FRACTION * available_memory()
    if need <= limit:
        return True
    if streaming:
        return False
    raise InputError(f"the recording of {nrows:.4g} rows x {ncols} columns needs {_gib(need)}, more than "
                     f"{MEMORY_FRACTION:.0%} of the available memory ({_gib(limit / MEMORY_FRACTION)}): use a longer "
                     "step, record fewer variables, or stream the rows to a file (-o run.csv)")
