"""Model Exchange units: the master integrates an FMU's equations between
communication points.

``FmuUnit(path, interface="me")`` (or an FMU that has Model Exchange only)
gives :class:`FmuMeUnit` (FMI 2.0) or :class:`Fmu3MeUnit` (FMI 3.0): the
same unit contract as the co-simulation units, with ``do_step(t, h)``
carried out here.

* **Solver**: CVODE's BDF method with Newton iterations and a dense linear
  solver (SUNDIALS, as bundled with fmpy), fit for stiff FMUs; ``rtol``
  (default 1e-6) and ``atol`` (default ``rtol`` times each state's nominal
  value) per unit. The solver stops exactly at each communication point
  (``CVodeSetStopTime``), never evaluating the FMU beyond it, and restarts
  there when the unit's inputs are connected (the master changes them
  there, held constant over the step) or the run may roll back (so that a
  repeated step gives the same result to the bit).
* **Events**: state events are located by CVODE's root finding on the
  event indicators (to within its root tolerance, about 1e-14 s relative
  here); time events end an integration interval at the FMU's
  ``nextEventTime``; step events come from ``completedIntegratorStep``.
  At each event the FMU is put in event mode and ``newDiscreteStates`` /
  ``updateDiscreteStates`` is iterated until it needs no more; the solver
  restarts after it. The times and kinds of the events are kept in
  :attr:`FmuMeUnit.events`.
* **Stop requests**: ``terminateSimulation`` at an event ends the run at
  that step with :class:`~mbfmu.errors.StopRequested`.
* **Rollback** where the FMU can get and set its state: the saved state
  carries the unit's time and next time event; the solver restarts from
  the restored state, so iterative and adaptive runs work.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Iterable, Mapping

from ..errors import CosimError, InputError, StopRequested
from .fmu3_unit import Fmu3Unit
from .fmu_unit import FmuUnit, _callbacks, _LOG_KEYS, _LOGS

MAX_EVENT_ITERATIONS = 1000  # newDiscreteStates calls at one event before giving up
MAX_EVENTS_PER_STEP = 10_000  # events in one communication step before giving up (chattering)


class _NoInput:
    """fmpy's solver applies inputs in its root function; the master sets them instead."""

    @staticmethod
    def apply(time: float, continuous: bool = True, discrete: bool = True, after_event: bool = False) -> None:
        pass


def _set_stop_time(cvode_mem: Any, t_stop: float) -> None:
    """``CVodeSetStopTime`` (fmpy binds the library but not this function)."""
    from fmpy.sundials.libraries import sundials_cvode
    f = sundials_cvode.CVodeSetStopTime
    f.argtypes, f.restype = [ctypes.c_void_p, ctypes.c_double], ctypes.c_int
    if f(cvode_mem, t_stop) < 0:
        raise RuntimeError(f"CVodeSetStopTime({t_stop!r}) failed")


def _solver_class() -> type:
    from fmpy.sundials import CVodeSolver

    class _Solver(CVodeSolver):
        """fmpy's CVODE wrapper with a stop time and CVODE's own return flag."""

        def step_to(self, t_stop: float) -> tuple[bool, float]:
            """Integrate towards ``t_stop`` [s] without passing it; returns
            ``(root found, time reached)``."""
            from fmpy.sundials.cvode import CV_NORMAL, CV_ROOT_RETURN, CVode
            from fmpy.sundials.sundials_types import realtype
            if not self.discrete:
                self.get_x(self.px, self.nx)
            _set_stop_time(self.cvode_mem, t_stop)
            tret = realtype(0.0)
            flag = CVode(self.cvode_mem, t_stop, self.x, ctypes.byref(tret), CV_NORMAL)
            if flag < 0:
                info = self.error_info or (flag, "CVode", "", "no message")
                raise RuntimeError(f"CVODE failed (flag {flag}) in {info[1]}: {info[3]}")
            if not self.discrete:
                self.set_x(self.px, self.nx)
            return flag == CV_ROOT_RETURN, float(tret.value)

    return _Solver


class _MeStepping:
    """The integration and event loop shared by the FMI 2 and FMI 3 units.

    A subclass provides ``_me`` (the fmpy model), ``_derivatives`` (the
    name of its derivative call) and ``_update_discrete()``.
    """

    rtol: float = 1e-6
    atol: float | None = None
    events: list[tuple[float, str]]

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

    def _me_options(self, rtol: float, atol: float | None) -> None:
        for name, v in (("rtol", rtol), ("atol", atol)):
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"model exchange {name} = {v!r} must be a positive finite number")
        self.rtol, self.atol = float(rtol), None if atol is None else float(atol)
        self.interface = "me"
        self.events = []

    def _me_start(self, t0: float, stop_time: float) -> None:
        """After initialization: the initial event iteration, then continuous-time mode and the solver."""
        me = self._me
        self.events = []
        self._t = float(t0)
        self._stop = float(stop_time)
        self._event_update("initial")
        me.enterContinuousTimeMode()
        nx = self._nx
        self._solver = _solver_class()(
            nx=nx, nz=self._nz, get_x=me.getContinuousStates, set_x=me.setContinuousStates,
            get_dx=getattr(me, self._derivatives), get_z=me.getEventIndicators,
            get_nominals=me.getNominalsOfContinuousStates, set_time=me.setTime, input=_NoInput(),
            startTime=self._t, maxStep=math.inf, relativeTolerance=self.rtol, maxNumSteps=100_000)
        self._set_abstol()

    def _set_abstol(self) -> None:
        if self.atol is not None and not self._solver.discrete:
            from fmpy.sundials.cvode import CVodeSVtolerances
            self._solver.npabstol[:] = self.atol
            CVodeSVtolerances(self._solver.cvode_mem, self.rtol, self._solver.abstol)

    def _restart(self) -> None:
        self._solver.reset(self._t)
        self._set_abstol()

    def _event_update(self, kind: str) -> None:
        """Event iteration at the current time (the FMU in event or initialization mode)."""
        for _ in range(MAX_EVENT_ITERATIONS):
            needed, terminate, _, _, defined, t_next = self._update_discrete()
            if terminate:
                raise StopRequested(f"unit {self.name!r} asked to stop (terminateSimulation) at a {kind} event "
                                    f"at t = {self._t!r} s", unit=self.name, time=self._t)
            if not needed:
                break
        else:
            raise CosimError(f"unit {self.name!r}: the event iteration at t = {self._t!r} s did not settle in "
                             f"{MAX_EVENT_ITERATIONS} newDiscreteStates calls")
        self._next_event = float(t_next) if defined else math.inf
        if kind != "initial":
            self.events.append((self._t, kind))

    def _me_advance(self, t: float, h: float) -> None:
        """Integrate from ``t`` to ``t + h`` [s], handling every event on the way."""
        me = self._me
        t_end = t + h
        if self._inputs_driven or self.will_roll_back:
            # the inputs were just set (the right-hand side jumped); or the step may be
            # repeated after a restore, which must give the same result to the bit
            me.setTime(self._t)
            self._restart()
        tiny = 4 * math.ulp(max(1.0, abs(t_end)))
        for _ in range(MAX_EVENTS_PER_STEP):
            t_stop = min(t_end, self._next_event)
            root = False
            if t_stop - self._t > tiny:
                root, self._t = self._solver.step_to(t_stop)
            else:  # a time event within rounding of here: no integration to do
                self._t = t_stop
            me.setTime(self._t)
            step_event, terminate = me.completedIntegratorStep(not self.will_roll_back) \
                if self._needs_completed else (False, False)
            if terminate:
                raise StopRequested(f"unit {self.name!r} asked to stop (completedIntegratorStep) at "
                                    f"t = {self._t!r} s", unit=self.name, time=self._t)
            time_event = self._t >= self._next_event - tiny
            if root or time_event or step_event:
                me.enterEventMode()
                self._event_update("state" if root else "time" if time_event else "step")
                me.enterContinuousTimeMode()
                self._restart()
            if self._t >= t_end - tiny:
                self._t = t_end
                me.setTime(t_end)
                return
        raise CosimError(f"unit {self.name!r}: more than {MAX_EVENTS_PER_STEP} events in the step from t = {t!r} s "
                         "(chattering?)")

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
        self._solver = None
        super().terminate()

    def do_step(self, t: float, h: float) -> None:
        try:
            self._me_advance(t, h)
        except (CosimError, StopRequested):
            raise
        except Exception as exc:  # fmpy raises on an error status; CVODE on a failed step
            raise CosimError(f"unit {self.name!r}: model exchange step from t = {t!r} s (h = {h!r} s) failed: {exc}"
                             + (f"; last unit log lines:\n{self.log_text(10)}" if self.log else "")) from exc

    def get_state(self) -> Any:
        return self._me_state(super().get_state())

    def set_state(self, state: Any) -> None:
        super().set_state(self._me_restore(state))
        self._me.setTime(self._t)
        self._restart()

    def free_state(self, state: Any) -> None:
        super().free_state(state[0])


class FmuMeUnit(_MeStepping, FmuUnit):
    """An FMI 2.0 Model Exchange FMU, integrated by the master (see the module docstring).

    Parameters
    ----------
    path, name, values, step, feedthrough, log
        As for :class:`~mbfmu.cosim.fmu_unit.FmuUnit`.
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
    """

    _derivatives = "getDerivatives"

    @staticmethod
    def _check_interface(md: Any) -> None:
        if md.fmiVersion != "2.0" or md.modelExchange is None:
            raise InputError(f"{md.modelName!r}: no FMI 2.0 model exchange interface (fmiVersion {md.fmiVersion}, "
                             f"modelExchange {'yes' if md.modelExchange else 'no'})")

    def _update_discrete(self) -> tuple:
        return self._me.newDiscreteStates()

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        from fmpy.fmi2 import FMU2Model

        self.terminate()
        self._fatal = False
        self.log.clear()
        self._log_key = next(_LOG_KEYS)
        _LOGS[self._log_key] = self.log
        cb = _callbacks(self._log_key)
        self._callbacks = cb
        self._nx = int(self.md.numberOfContinuousStates)
        self._nz = int(self.md.numberOfEventIndicators)
        self._needs_completed = bool(getattr(self.md.modelExchange, "needsCompletedIntegratorStep", True))
        try:
            fmu = FMU2Model(guid=self.md.guid, unzipDirectory=self._unzipdir, modelIdentifier=self.model_identifier,
                            instanceName=self.name)
            fmu.instantiate(callbacks=cb, loggingOn=self.logging_on)
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: cannot instantiate {self.path.name} (model exchange): {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._fmu = self._me = fmu
        f = fmu._functions
        self._c = fmu.component
        self._getReal, self._setReal = f["fmi2GetReal"], f["fmi2SetReal"]
        self._set = {t: f[f"fmi2Set{t}"] for t in ("Real", "Integer", "Boolean", "String")}
        self._get = {t: f[f"fmi2Get{t}"] for t in ("Real", "Integer", "Boolean", "String")}
        self._setDer = None
        try:
            fmu.setupExperiment(tolerance=self.rtol, startTime=t0, stopTime=stop_time)
            self._set_values(self.values)
            fmu.enterInitializationMode()
            fmu.exitInitializationMode()
            self._t = float(t0)
            self._me_start(t0, stop_time)
        except (CosimError, StopRequested):
            raise
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: initialization failed: {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._start_inputs()
        self.pull()



class Fmu3MeUnit(_MeStepping, Fmu3Unit):
    """An FMI 3.0 Model Exchange FMU, integrated by the master (see :class:`FmuMeUnit`)."""

    _derivatives = "getContinuousStateDerivatives"

    @staticmethod
    def _check_interface(md: Any) -> None:
        if not md.fmiVersion.startswith("3.") or md.modelExchange is None:
            raise InputError(f"{md.modelName!r}: no FMI 3.0 model exchange interface (fmiVersion {md.fmiVersion}, "
                             f"modelExchange {'yes' if md.modelExchange else 'no'})")

    def _update_discrete(self) -> tuple:
        return self._me.updateDiscreteStates()

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        from fmpy.fmi3 import FMU3Model

        self.terminate()
        self.log.clear()
        self._stop_at = None

        def log_message(env: Any, status: int, category: bytes, message: bytes) -> None:
            label = ["OK", "WARNING", "DISCARD", "ERROR", "FATAL"][status] if 0 <= status < 5 else str(status)
            self.log.append(f"[{label}] [{(category or b'').decode('utf-8', 'replace')}] "
                            f"{(message or b'').decode('utf-8', 'replace')}")

        try:
            fmu = FMU3Model(guid=self.md.guid, unzipDirectory=self._unzipdir, modelIdentifier=self.model_identifier,
                            instanceName=self.name)
            fmu.instantiate(loggingOn=self.logging_on, logMessage=log_message)
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: cannot instantiate {self.path.name} (model exchange): {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._fmu = self._me = fmu
        f = fmu._functions
        self._c = fmu.component
        from .fmu3_unit import _CT, _api_name
        self._f_get = {t: f[f"fmi3Get{_api_name(t)}"] for t in _CT}
        self._f_set = {t: f[f"fmi3Set{_api_name(t)}"] for t in _CT}
        self._needs_completed = bool(getattr(self.md.modelExchange, "needsCompletedIntegratorStep", True))
        try:
            self._set_values(self.values)
            fmu.enterInitializationMode(tolerance=self.rtol, startTime=t0, stopTime=stop_time)
            fmu.exitInitializationMode()
            self._nx = int(fmu.getNumberOfContinuousStates())
            self._nz = int(fmu.getNumberOfEventIndicators())
            self._t = float(t0)
            self._me_start(t0, stop_time)
        except (CosimError, StopRequested):
            raise
        except Exception as exc:
            raise CosimError(f"unit {self.name!r}: initialization failed: {exc}"
                             + (f"; unit log:\n{self.log_text()}" if self.log else "")) from exc
        self._start_inputs()
        self.pull()
