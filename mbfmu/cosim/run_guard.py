"""What a run checks between two steps: Ctrl-C, a wall-clock limit, and memory.

:class:`RunGuard` turns SIGINT (Ctrl-C) and SIGTERM into a request that the
master honours between two steps, so the signal never lands inside a unit
(a KeyboardInterrupt raised inside a Python FMU makes it return fmi2Fatal).
A second Ctrl-C raises :class:`KeyboardInterrupt` at once, for a unit that
hangs. :func:`check_recording_fits` refuses a recording that cannot fit in
memory before anything is allocated.
"""
from __future__ import annotations

import signal
import threading
import time as _time
from typing import Any

from ..errors import InputError

FLUSH_PERIOD = 1.0  # s of wall time between two hand-overs of rows to a sink
MEMORY_FRACTION = 0.5  # of the available memory a recording may take


class RunGuard:
    """Stop requests (signals, wall-clock timeout) and the flush clock of one run.

    Parameters
    ----------
    timeout : float, optional
        Wall-clock limit of the run [s].
    period : float
        Wall time between two periodic checks that return True from :meth:`due` [s].
    """

    def __init__(self, timeout: float | None = None, period: float = FLUSH_PERIOD) -> None:
        self.timeout = timeout
        self.period = period
        self.start = _time.perf_counter()
        self.deadline = None if timeout is None else self.start + timeout
        self.next = self.start + period
        self.signal: str | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> "RunGuard":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # the second Ctrl-C: do not wait for the step to end
        self.signal = "interrupted by Ctrl-C (SIGINT)" if signum == signal.SIGINT else "terminated (SIGTERM)"

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
        if self.signal is not None:
            return self.signal
        if self.deadline is not None and _time.perf_counter() > self.deadline:
            return f"wall-clock timeout of {self.timeout!r} s reached"
        return None


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
