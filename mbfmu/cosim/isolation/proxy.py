"""Units in their own process: a crash or a hang inside a unit ends the run cleanly.

:class:`IsolatedUnit` wraps any unit (an :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit`
is rebuilt from its file; other units are pickled) and runs it in a worker
process (:mod:`.worker`) behind the same :class:`~mbfmu.cosim.units.Unit`
interface, like libcosim's proxyfmu. The master talks to it over a socket:
one round trip per step (the outputs come back with it), inputs are sent
ahead without waiting. A worker that dies (a segfaulting FMU) or whose step takes
longer than ``step_timeout`` is killed, and the run ends with a
:class:`~mbfmu.errors.CosimError` naming the unit and the time, with the
partial result attached (see :func:`~mbfmu.cosim.simulate`).

The worker runs in its own session, so Ctrl-C at the terminal reaches only
the master (which stops between steps), and it dies with the master.
"""
from __future__ import annotations

import itertools
import pickle
import select
import signal
import socket
import subprocess
import sys
import tempfile
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import CosimError, InputError, StopRequested
from ..units import Unit
from .worker import recv, send

SETUP_TIMEOUT = 120.0  # s for the worker to start and the unit to initialize
TERMINATE_TIMEOUT = 10.0  # s for a worker to end the unit before it is killed
STDERR_LINES = 10  # last lines of the worker's output quoted when it dies


def _recipe(unit: Unit) -> tuple:
    """How the worker rebuilds ``unit``: FMU units from their file, others pickled."""
    from ..fmi.fmu_unit import FmuUnit
    if isinstance(unit, FmuUnit):
        recipe = {"path": str(unit.path), "name": unit.name, "step": unit.step,
                  "feedthrough": {k: list(v) for k, v in unit.feedthrough.items()}}
        if getattr(unit, "interface", "cs") == "me":
            recipe.update(interface="me", rtol=unit.rtol, atol=unit.atol)
        # unit conversions and SSP linear transformations of its inputs
        conversions = {unit.inputs[j]: ab for j, ab in getattr(unit, "input_conversion", {}).items()}
        return ("fmu", {**recipe, "conversions": conversions} if conversions else recipe)
    try:
        return ("pickle", pickle.dumps(unit))
    except Exception as exc:
        raise InputError(f"unit {unit.name!r} cannot be isolated: it cannot be sent to a worker process "
                         f"({type(exc).__name__}: {exc}); define its functions at module level") from None


class IsolatedUnit(Unit):
    """``unit`` run in a worker process (same variables, feedthrough, step, rollback).

    Parameters
    ----------
    unit : Unit
        The unit to isolate; its values set so far are carried over.
    step_timeout : float, optional
        Wall-clock limit of one step, output read or variable read [s];
        the worker is killed when it passes it.
    """

    def __init__(self, unit: Unit, step_timeout: float | None = None) -> None:
        if isinstance(unit, IsolatedUnit):
            raise InputError(f"unit {unit.name!r} is isolated already")
        self._recipe = _recipe(unit)
        super().__init__(unit.name, unit.variables.values(), unit.feedthrough, unit.step)
        self.values = dict(unit.values)
        self.can_rollback = unit.can_rollback
        self.can_interpolate_inputs = unit.can_interpolate_inputs
        self.path = getattr(unit, "path", "")
        self.plant_ref = getattr(unit, "plant_ref", None)
        self.inner_type = type(unit).__name__
        self.step_timeout = step_timeout
        self.u = np.zeros(len(self.inputs))
        self.y = np.zeros(len(self.outputs))
        self._driven: list[int] = list(range(len(self.inputs)))
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._stderr: Any = None
        self._busy = False
        self._fresh = False  # y holds the unit's current outputs (no input sent since they were read)
        self._keys = itertools.count(1)

    # -- the worker ------------------------------------------------------------------
    def _start(self) -> None:
        parent, child = socket.socketpair()
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "mbfmu.cosim.isolation.worker", str(child.fileno())],
                                          pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                                          stdout=self._stderr, stderr=self._stderr, start_new_session=True)
        finally:
            child.close()
        self._sock = parent
        self._call("init", self._recipe, what="start-up", timeout=SETUP_TIMEOUT)

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _output_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        first = next((k for k, ln in enumerate(lines) if ln.startswith("Fatal Python error")), None)
        return "\n".join(lines[first: first + STDERR_LINES] if first is not None else lines[-STDERR_LINES:])

    def _died(self, what: str, t: float | None) -> CosimError:
        try:
            rc = self._proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self._kill()
            rc = self._proc.returncode
        how = f"signal {-rc} ({signal.Signals(-rc).name})" if rc < 0 else f"exit status {rc}"
        tail = self._output_tail()
        at = "" if t is None else f" at t = {t!r} s"
        return CosimError(f"unit {self.name!r}: its worker process died ({how}) during {what}{at}"
                          + (f"; last lines of its output:\n{tail}" if tail else ""))

    def _send(self, *msg: Any) -> None:
        try:
            send(self._sock, msg)
        except OSError:
            raise self._died(msg[0], None) from None

    def _call(self, op: str, *args: Any, what: str | None = None, t: float | None = None,
              timeout: float | None = None) -> Any:
        """One request and its reply (``timeout`` [s]: default the step timeout)."""
        what = what or op
        timeout = self.step_timeout if timeout is None else timeout
        self._busy = True
        self._send(op, *args)
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            self._kill()
            at = "" if t is None else f" at t = {t!r} s"
            raise CosimError(f"unit {self.name!r}: {what}{at} took more than the step timeout of {timeout!r} s; "
                             "its worker process was killed")
        try:
            reply = recv(self._sock)
        except (EOFError, OSError):
            raise self._died(what, t) from None
        self._busy = False
        if reply[0] == "ok":
            return reply[1]
        _, kind, message, unit, time = reply
        if kind == "StopRequested":
            raise StopRequested(message, unit=unit, time=time)
        if kind in ("CosimError", "InputError", "UnknownNameError") and message.startswith(f"unit {self.name!r}"):
            raise CosimError(message)
        raise CosimError(f"unit {self.name!r}: {what} failed" + (f" at t = {t!r} s" if t is not None else "")
                         + f": {kind}: {message}")

    # -- set-up ----------------------------------------------------------------------
    def connect_inputs(self, driven: Sequence[int]) -> None:
        self._driven = sorted(set(driven))

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.terminate()
        self._start()
        u, y = self._call("setup", dict(self.values), self.will_roll_back, self._driven, t0, stop_time, step,
                          what="initialization", t=t0, timeout=SETUP_TIMEOUT)
        self.u[:] = u[: len(self.inputs)]
        self.y[:] = y[: len(self.outputs)]
        self._fresh = True

    def terminate(self) -> None:
        if self._proc is None:
            return
        try:
            if not self._busy and self._proc.poll() is None:
                self._call("terminate", timeout=TERMINATE_TIMEOUT)
        except CosimError:
            pass
        finally:
            self._kill()
            self._sock.close()
            self._stderr.close()
            self._proc = self._sock = self._stderr = None
            self._busy = False

    def __del__(self) -> None:
        try:
            self.terminate()
        except Exception:
            pass

    # -- hot path --------------------------------------------------------------------
    def push(self) -> None:
        self._send("push", self.u.tolist())
        self._fresh = False

    def push_derivatives(self, d1: Sequence[float], d2: Sequence[float]) -> None:
        self._send("derivs", list(d1), list(d2))

    def pull(self) -> None:
        if not self._fresh:  # outputs read since the last step or input change are still current
            self.y[:] = self._call("pull", what="reading the outputs")
            self._fresh = True

    def do_step(self, t: float, h: float) -> None:
        self.y[:] = self._call("step", t, h, what=f"the step of {h!r} s", t=t)
        self._fresh = True

    def getter(self, names: Sequence[str]) -> Callable[[], Sequence[float]]:
        for n in names:
            self.variable(n)
        key = next(self._keys)
        self._call("getter", key, list(names), timeout=SETUP_TIMEOUT)
        return lambda: self._call("get", key, what="reading recorded variables")

    def log_text(self, last: int | None = None) -> str:
        if self._proc is None or self._busy or self._proc.poll() is not None:
            return ""
        try:
            lines = self._call("log").splitlines()
        except CosimError:
            return ""
        return "\n".join(lines[-last:] if last else lines)

    # -- rollback --------------------------------------------------------------------
    def get_state(self) -> Any:
        if not self.can_rollback:
            return super().get_state()
        return self._call("save", what="saving the state")

    def set_state(self, state: Any) -> None:
        key, u = state
        self._call("restore", key, what="restoring the state")
        self.u[:] = u[: len(self.inputs)]
        self._fresh = False

    def free_state(self, state: Any) -> None:
        self._send("free", state[0])


def isolated_system(system: Any, which: bool | Sequence[str], step_timeout: float | None) -> Any:
    """A copy of ``system`` whose units run isolated: every FMU unit (``which=True``;
    units in Python run in the master's process), or the units named in ``which``."""
    from ..fmi.fmu_unit import FmuUnit
    from ..system import System
    names = [n for n, u in system.units.items() if isinstance(u, FmuUnit)] if which is True else list(which)
    unknown = [n for n in names if n not in system.units]
    if unknown:
        raise InputError(f"cannot isolate unknown units {unknown}; known: {', '.join(system.units)}")
    units = []
    for name, u in system.units.items():
        if isinstance(u, IsolatedUnit):
            if step_timeout is not None and u.step_timeout is None:
                u.step_timeout = step_timeout
            units.append(u)
        else:
            units.append(IsolatedUnit(u, step_timeout) if name in names else u)
    out = System(units)
    out.connections = list(system.connections)
    out.experiment = dict(system.experiment)
    return out


def isolate(unit: Unit, step_timeout: float | None = None) -> IsolatedUnit:
    """``unit`` in its own worker process (``isolate=True`` for one unit); see :class:`IsolatedUnit`."""
    return IsolatedUnit(unit, step_timeout)
