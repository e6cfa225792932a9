"""Model Exchange units: the master integrates an FMU's equations between
communication points.

``FmuUnit(path, interface="me")`` (or an FMU that has Model Exchange only)
gives :class:`FmuMeUnit` (FMI 2.0) or :class:`Fmu3MeUnit` (FMI 3.0): the
same unit contract as the co-simulation units, with ``do_step(t, h)``
carried out here.

* **Solver**: CVODE's BDF method with Newton iterations and a dense linear
  solver (SUNDIALS, as bundled with fmpy, set up as fmpy sets it up), fit for
  stiff FMUs, its right-hand side, root function and integration interval in
  C (:mod:`.me_solver`): no Python call per evaluation. After a restart CVODE's
  first Newton iteration takes the last Jacobian computed (it computes a new one
  where Newton does not converge with it), except in a run that may roll back;
  ``rtol``
  (default 1e-6) and ``atol`` (default ``rtol`` times each state's nominal
  value) per unit. One integration runs across communication points; CVODE
  is reinitialized (:attr:`FmuMeUnit.restarts`) only

  - at an event (see below),
  - when an input changed value since the last step: the master holds
    inputs constant over a step, so a new value is a jump of the right-hand
    side (inputs that are set to the value they had cost no restart),
  - at a state set from outside (``set_state``), and at the start of every
    step of a run that may roll back (so that a repeated step gives the same
    result to the bit).

  A unit without connected inputs lets CVODE step past a communication point
  and reads the FMU there at CVODE's interpolated solution (its dense output,
  of the method's order; the FMU is then evaluated at that time and state),
  as fmpy's own loop does; it still stops exactly at the FMU's next time
  event and at the run's stop time. A unit with connected inputs stops
  exactly at each communication point (``CVodeSetStopTime``), never
  evaluating the FMU beyond it, as its next inputs are not known yet.
* **Events**: state events are located by CVODE's root finding on the
  event indicators (to within its root tolerance, about 1e-14 s relative
  here); time events end an integration interval at the FMU's
  ``nextEventTime``; step events come from ``completedIntegratorStep``.
  At each event the FMU is put in event mode and ``newDiscreteStates`` /
  ``updateDiscreteStates`` is iterated until it needs no more; the solver
  restarts after it, except after a time event that changed neither the
  continuous states nor their derivatives (bit for bit, at the event): a
  discrete state that does not feed the dynamics, such as a sampled
  recorder's history, then costs no restart. The times and kinds of the events are kept in
  :attr:`FmuMeUnit.events`.
* **Stop requests**: ``terminateSimulation`` at an event ends the run at
  that step with :class:`~mbfmu.errors.StopRequested`.
* **Compiled loop**: in :mod:`mbfmu.cosim.master.fast_loop` the step above is
  taken in C (``me_do_step`` in ``csrc/me_step.c``): the same FMU and CVODE
  calls in the same order, so the same events, restarts and results bit for bit
  (the units' ``compiled_step``, ``compiled_back`` and ``compiled_error``).
* **Rollback** where the FMU can get and set its state: the saved state
  carries the unit's time and next time event; the solver restarts from
  the restored state, so iterative and adaptive runs work.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Iterable, Mapping

from ...errors import CosimError, InputError, StopRequested
from .fmu3_unit import Fmu3Unit
from .fmi_versions import release_log, version_of
from .fmu_unit import FmuUnit
from .me_solver import REACHED, ROOT, STEP_EVENT, TERMINATE, TIME_EVENT, MeSolver

MAX_EVENT_ITERATIONS = 1000  # newDiscreteStates calls at one event before giving up
MAX_EVENTS_PER_STEP = 10_000  # events in one communication step before giving up (chattering)


class _MeStepping:
    """The integration and event loop of the Model Exchange units, on top of an
    FMU unit class (its ``fmi`` version table names the calls that differ)."""

    rtol: float = 1e-6
    atol: float | None = None
    events: list[tuple[float, str]]
    restarts: int = 0
    jacobians: tuple[int, int] = (0, 0)

    def __init__(self, path: Any, name: str | None = None, values: Mapping[str, Any] | None = None,
                 step: float | None = None, feedthrough: Mapping[str, Iterable[str]] | None = None,
                 log: bool = False, interface: str | None = "me", rtol: float = 1e-6,
                 atol: float | None = None) -> None:
        self._me_options(rtol, atol)
        super().__init__(path, name, values, step, feedthrough, log)
        self.interface = "me"

    @staticmethod
    def _interface_element(md: Any) -> Any:
        return md.modelExchange

    @classmethod
    def _check_interface(cls, md: Any) -> None:
        number = cls.fmi.number
        if version_of(md) is not cls.fmi or md.modelExchange is None:
            raise InputError(f"{md.modelName!r}: no FMI {number}.0 model exchange interface (fmiVersion {md.fmiVersion}, "
                             f"modelExchange {'yes' if md.modelExchange else 'no'})")
        clocks = [v.name for v in md.modelVariables if v.type == "Clock"]
        if clocks:
            raise InputError(f"{md.modelName!r}: the FMU has clocks ({', '.join(clocks)}); {cls.__name__} runs model "
                             "exchange without clocks: open it with open_fmu(path, interface='me'), which runs them")

    def _fmu_tolerance(self) -> float:
        """The relative tolerance given to the FMU at set-up: the solver's ``rtol``."""
        return self.rtol

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.terminate()
        self._error = False
        self._needs_completed = bool(getattr(self.md.modelExchange, "needsCompletedIntegratorStep", True))
        self._run_stop = float(stop_time)
        super().setup(t0, stop_time, step)

    def _initialized(self, t0: float, step: float) -> None:
        """After initialization: the sizes, the initial event iteration and the solver."""
        self._me = self._fmu
        try:
            self._nx, self._nz = self.fmi.sizes(self._fmu, self.md)
            self._t = float(t0)
            self._me_start(t0, self._run_stop)
        except (CosimError, StopRequested):
            raise
        except Exception as exc:
            raise self._setup_error("initialization failed", exc) from exc

    def _update_discrete(self) -> tuple:
        """The event iteration's call: ``(needed, terminate, nominals changed, values changed,
        next event time defined, next event time)``."""
        return getattr(self._me, self.fmi.discrete_update)()

    def _me_options(self, rtol: float, atol: float | None) -> None:
        for name, v in (("rtol", rtol), ("atol", atol)):
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"model exchange {name} = {v!r} must be a positive finite number")
        self.rtol, self.atol = float(rtol), None if atol is None else float(atol)
        self.interface = "me"
        self.events = []
        self.restarts = 0

    def _me_start(self, t0: float, stop_time: float) -> None:
        """After initialization: the initial event iteration, then continuous-time mode and the solver."""
        me = self._me
        self.events = []
        self.restarts = 0
        self._u_sent_last: bytes | None = None
        self._t = float(t0)
        self._stop = float(stop_time)
        self._event_update("initial")
        me.enterContinuousTimeMode()
        nx = self._nx
        self._solver = MeSolver(me, isinstance(self, Fmu3Unit), nx, self._nz, self._t, self.rtol,
                                self._needs_completed, no_prior=not self.will_roll_back)
        self._set_abstol()
        self._dx_before = (ctypes.c_double * max(nx, 1))()
        self._dx_after = (ctypes.c_double * max(nx, 1))()

    def _set_abstol(self) -> None:
        if self.atol is not None:
            self._solver.set_abstol(self.atol)

    def _restart(self, reuse_jacobian: bool = True) -> None:
        # not in a run that may roll back: a repeated step must find the solver as it was
        self._solver.reset(self._t, reuse_jacobian and not self.will_roll_back)
        self._set_abstol()
        self.restarts += 1

    def _derivatives_into(self, buf: Any) -> None:
        if self._nx:
            getattr(self._me, self.fmi.derivatives)(buf, self._nx)

    def _inputs_changed(self) -> bool:
        """Whether a connected input has a new value since the last step (a jump of the right-hand side)."""
        if not self._inputs_driven:
            return False
        sent = bytes(self.u)
        changed = sent != self._u_sent_last
        self._u_sent_last = sent
        return changed

    def _event_update(self, kind: str) -> bool:
        """Event iteration at the current time (the FMU in event or initialization mode);
        returns whether the continuous states or their nominals changed."""
        states_changed = False
        for _ in range(MAX_EVENT_ITERATIONS):
            needed, terminate, nominals, values, defined, t_next = self._update_discrete()
            states_changed = states_changed or bool(nominals) or bool(values)
            if terminate:
                raise self._stop_error(f"terminateSimulation) at a {kind} event")
            if not needed:
                break
        else:
            raise self._unsettled_error()
        self._next_event = float(t_next) if defined else math.inf
        if kind != "initial":
            self.events.append((self._t, kind))
        return states_changed

    def _me_advance(self, t: float, h: float) -> None:
        """Integrate from ``t`` to ``t + h`` [s], handling every event on the way."""
        me = self._me
        t_end = t + h
        if (self._inputs_driven and self._inputs_changed()) or self.will_roll_back:
            # an input jumped; or the step may be repeated after a restore, which must
            # give the same result to the bit
            me.setTime(self._t)
            self._restart()
        # past the communication point only where nothing can change there
        interpolate = not (self._inputs_driven or self.will_roll_back)
        tiny = 4 * math.ulp(max(1.0, abs(t_end)))
        advance = self._solver.advance
        for _ in range(MAX_EVENTS_PER_STEP):
            # to the communication point or the next event (C: csrc/me_step.c), the FMU left there
            bits, self._t = advance(self._t, t_end, self._next_event, self._stop, interpolate, tiny)
            if bits & TERMINATE:
                raise self._stop_error("completedIntegratorStep)")
            if bits & (ROOT | TIME_EVENT | STEP_EVENT):
                root, time_event = bits & ROOT, bits & TIME_EVENT
                # a time event alone may leave the dynamics as they were (a sampled recorder):
                # then the integration goes on
                smooth = bool(time_event) and not (bits & (ROOT | STEP_EVENT))
                if smooth:
                    self._derivatives_into(self._dx_before)
                me.enterEventMode()
                changed = self._event_update("state" if root else "time" if time_event else "step")
                me.enterContinuousTimeMode()
                if smooth and not changed:
                    self._derivatives_into(self._dx_after)
                    smooth = bytes(self._dx_before) == bytes(self._dx_after)
                if not (smooth and not changed):
                    self._restart()
            if bits & REACHED:
                if self._t != t_end:
                    self._t = t_end
                    me.setTime(t_end)
                return
        raise self._chatter_error(t)

    def _stop_error(self, cause: str) -> StopRequested:
        return StopRequested(f"unit {self.name!r} asked to stop ({cause} at t = {self._t!r} s", unit=self.name,
                             time=self._t)

    def _unsettled_error(self) -> CosimError:
        return CosimError(f"unit {self.name!r}: the event iteration at t = {self._t!r} s did not settle in "
                          f"{MAX_EVENT_ITERATIONS} newDiscreteStates calls")

    def _chatter_error(self, t: float) -> CosimError:
        return CosimError(f"unit {self.name!r}: more than {MAX_EVENTS_PER_STEP} events in the step from t = {t!r} s "
                          "(chattering?)")

    # -- the compiled master loop: the step in C (me_do_step, csrc/me_step.c) ------------
    def compiled_step(self) -> int:
        """Hand the unit's state to its solver's C context for ``me_do_step``, the
        communication step ``do_step`` takes, in C.

        Returns
        -------
        int
            The address of the context (``me_ctx`` in ``csrc/me_step.c``).
        """
        if getattr(self, "_error", False) or self._solver is None:
            raise CosimError(f"unit {self.name!r} failed earlier; no further call is made on it")
        self._solver.describe_step(self._t, self._next_event, self._stop, self.restarts,
                                   getattr(self, "_inputs_driven", False), self.will_roll_back, self.atol, self.u,
                                   self._u_sent_last, MAX_EVENT_ITERATIONS, MAX_EVENTS_PER_STEP)
        return ctypes.addressof(self._solver.ctx)

    def compiled_back(self) -> None:
        """Take back what ``me_do_step`` did: the unit's time, next time event, restarts and events."""
        s = self._solver
        if s is None:
            return
        ctx = s.ctx
        self._t, self._next_event, self.restarts = ctx.t, ctx.next_event, ctx.restarts
        self.events += s.step_events()
        ctx.n_ev = 0
        if self._inputs_driven:
            self._u_sent_last = s.inputs_sent()

    def compiled_error(self, code: int, t: float, h: float) -> BaseException:
        """The error ``do_step`` raises for a failure of ``me_do_step`` (after ``compiled_back``).

        Parameters
        ----------
        code : int
            ``me_do_step``'s result (a CVODE flag or an ``ME_*`` result, below 0).
        t, h : float
            Start [s] and size [s] of the step that failed.

        Returns
        -------
        BaseException
            The unit's error (a StopRequested where the FMU asked to stop).
        """
        from .me_solver import CHATTER, EVENT_KINDS, NO_MEMORY, REINIT, STOP_COMPLETED, STOP_EVENT, SVTOL, UNSETTLED
        s = self._solver
        if code == STOP_COMPLETED:
            return self._stop_error("completedIntegratorStep)")
        if code == STOP_EVENT:
            return self._stop_error(f"terminateSimulation) at a {EVENT_KINDS[s.ctx.stop_kind]} event")
        if code == UNSETTLED:
            return self._unsettled_error()
        if code == CHATTER:
            return self._chatter_error(t)
        if code == NO_MEMORY:
            return CosimError(f"unit {self.name!r}: no memory for its events at t = {self._t!r} s")
        if code in (REINIT, SVTOL):
            call = "CVodeReInit" if code == REINIT else "CVodeSVtolerances"
            return CosimError(f"{call} failed (flag {s.ctx.reinit_flag}) setting up CVODE")
        return self._step_failed(s.step_error(code), t, h)

    def _step_failed(self, exc: Exception, t: float, h: float) -> CosimError:
        """The error of a step whose FMU call or CVODE failed (``exc``); after an error status
        the unit takes no further call."""
        status = getattr(exc, "status", None)
        if status in (3, 4):  # fmi2Error / fmi2Fatal: the FMU takes no further call but its freeing
            self._error = True
            self._fatal = getattr(self, "_fatal", False) or status == 4
            self._solver = None
        err = CosimError(f"unit {self.name!r}: model exchange step from t = {t!r} s (h = {h!r} s) failed: {exc}"
                         + (f"; last unit log lines:\n{self.log_text(10)}" if self.log else ""))
        err.__cause__ = exc
        return err

    # -- rollback: the FMU's state and the unit's own time ----------------------------
    def _me_state(self, fmu_state: Any) -> Any:
        return (fmu_state, self._t, self._next_event, len(self.events))

    def _me_restore(self, state: Any) -> Any:
        fmu_state, self._t, self._next_event, n_events = state
        del self.events[n_events:]
        return fmu_state

    def connect_inputs(self, driven: Iterable[int]) -> None:
        driven = list(driven)
        self._inputs_driven = bool(driven)
        super().connect_inputs(driven)

    def terminate(self) -> None:
        if getattr(self, "_solver", None) is not None:
            self.jacobians = (self._solver.ctx.jac_computed, self._solver.ctx.jac_reused)
        self._solver = None
        if getattr(self, "_error", False) and self._fmu is not None:
            # after an error status the FMU takes no terminate call, only its freeing (none after fatal)
            fmu, self._fmu = self._fmu, None
            if not getattr(self, "_fatal", False):
                try:
                    fmu.freeInstance()
                except Exception:
                    pass
            release_log(self)
            return
        super().terminate()

    def do_step(self, t: float, h: float) -> None:
        if getattr(self, "_error", False):
            raise CosimError(f"unit {self.name!r} failed earlier; no further call is made on it")
        try:
            self._me_advance(t, h)
        except (CosimError, StopRequested):
            raise
        except Exception as exc:  # fmpy raises on an error status; CVODE on a failed step
            raise self._step_failed(exc, t, h) from exc

    def get_state(self) -> Any:
        return self._me_state(super().get_state())

    def set_state(self, state: Any) -> None:
        super().set_state(self._me_restore(state))
        self._me.setTime(self._t)
        self._restart(reuse_jacobian=False)

    def free_state(self, state: Any) -> None:
        super().free_state(state[0])


class FmuMeUnit(_MeStepping, FmuUnit):
    """An FMI 2.0 Model Exchange FMU, integrated by the master (see the module docstring).

    Parameters
    ----------
    path, name, values, step, feedthrough, log
        As for :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit`.
    interface : str, optional
        ``"me"`` (what this class runs).
    rtol : float
        Relative tolerance of the solver.
    atol : float, optional
        Absolute tolerance of the solver, in the states' units (default
        ``rtol`` times each state's nominal value).

    Attributes
    ----------
    events : list of (float, str)
        The events of the last run: time [s] and ``"state"``, ``"time"`` or ``"step"``.
    restarts : int
        How many times the solver was reinitialized in the last run (at events, input
        jumps, restored states).
    jacobians : tuple of int
        The Jacobians of the last run, once it ended: how many CVODE computed (by
        difference quotients) and how many restarts took the last one computed instead.
    """


class Fmu3MeUnit(_MeStepping, Fmu3Unit):
    """An FMI 3.0 Model Exchange FMU, integrated by the master (see :class:`FmuMeUnit`)."""
