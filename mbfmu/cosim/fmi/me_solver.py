"""CVODE for a Model Exchange unit with its right-hand side, root function and
integration interval in C (``csrc/me_step.c``, the ``mbfmu.cosim._mestep`` library).

The solver is fmpy's bundled SUNDIALS 7 CVODE set up as fmpy's own
``CVodeSolver`` sets it up (BDF, Newton with a dense linear solver and
CVODE's difference-quotient Jacobian, absolute tolerance ``rtol`` times each
state's nominal value, a dummy state for an FMU without continuous states),
so that the two take the same steps; only the callbacks differ: CVODE calls
the FMU's ``SetTime``, ``SetContinuousStates``, ``GetDerivatives`` and
``GetEventIndicators`` directly instead of through Python, and one call of
:meth:`MeSolver.advance` integrates to the next communication point (or event)
and calls ``completedIntegratorStep`` there.
"""
from __future__ import annotations

import ctypes
import importlib.util
from typing import Any

from ...errors import CosimError

_P, _D, _I = ctypes.c_void_p, ctypes.c_double, ctypes.c_int

# result bits of me_advance (csrc/me_step.c)
ROOT, STEP_EVENT, TERMINATE, TIME_EVENT, REACHED = 1, 2, 4, 8, 16
_FAILED = -1000


class _Ctx(ctypes.Structure):
    _fields_ = [("fmi3", _I), ("c", _P), ("set_time", _P), ("set_x", _P), ("get_dx", _P), ("get_z", _P),
                ("completed", _P), ("cvode", _P), ("set_stop", _P), ("nv_data", _P), ("cvode_mem", _P), ("x", _P),
                ("nx", _I), ("nz", _I), ("discrete", _I), ("needs_completed", _I), ("no_prior", _I),
                ("stop_valid", _I), ("stop_time", _D), ("status", _I), ("failed_call", _I), ("t", _D),
                ("dq_jac", _P), ("mat_copy", _P), ("jac_cache", _P), ("jac_cached", _I), ("reuse_jac", _I),
                ("jac_computed", _I), ("jac_reused", _I),
                # me_do_step (the compiled master loop)
                ("enter_event", _P), ("enter_ct", _P), ("update", _P), ("get_x", _P), ("get_nominals", _P),
                ("reinit", _P), ("svtol", _P), ("abstol", _P), ("rtol", _D), ("atol", _D), ("next_event", _D),
                ("stop", _D), ("inputs_driven", _I), ("will_roll_back", _I), ("u", _P), ("u_last", _P),
                ("n_u", _I), ("u_last_valid", _I), ("dx_before", _P), ("dx_after", _P), ("max_iterations", _I),
                ("max_events", _I), ("restarts", _I), ("stop_kind", _I), ("reinit_flag", _I),
                ("n_ev", ctypes.c_longlong), ("cap_ev", ctypes.c_longlong), ("ev_t", ctypes.POINTER(_D)),
                ("ev_kind", ctypes.POINTER(_I))]


# further results of me_do_step (csrc/me_step.c) and the kinds of its events
STOP_COMPLETED, STOP_EVENT, UNSETTLED, CHATTER, NO_MEMORY, REINIT, SVTOL = range(-1001, -1008, -1)
EVENT_KINDS = ("initial", "state", "time", "step")


_LIB: Any = None


def _library() -> Any:
    global _LIB
    if _LIB is None:
        spec = importlib.util.find_spec("mbfmu.cosim._mestep")
        if spec is None or spec.origin is None:
            raise CosimError("model exchange units need mbfmu's compiled kernels (mbfmu.cosim._mestep is missing: "
                             "reinstall mbfmu)")
        lib = ctypes.CDLL(spec.origin)  # a CDLL call releases the GIL
        lib.me_advance.restype = _I
        lib.me_advance.argtypes = [ctypes.POINTER(_Ctx), _D, _D, _D, _I, _D]
        lib.me_free_events.restype = None
        lib.me_free_events.argtypes = [ctypes.POINTER(_Ctx)]
        _LIB = lib
    return _LIB


def _address(f: Any) -> int:
    """The address a ctypes function, pointer or ``c_void_p`` holds."""
    return f if isinstance(f, int) else ctypes.cast(f, _P).value


class MeSolver:
    """CVODE integrating an instantiated FMU in continuous-time mode (fmpy ``FMU2Model`` or ``FMU3Model``).

    Parameters
    ----------
    fmu : fmpy.fmi2.FMU2Model or fmpy.fmi3.FMU3Model
        The FMU, initialized, in continuous-time mode at ``t0``.
    fmi3 : bool
        Whether ``fmu`` is an FMI 3.0 FMU.
    nx, nz : int
        Numbers of continuous states and event indicators.
    t0 : float
        Start time [s].
    rtol : float
        Relative tolerance.
    needs_completed : bool
        Whether the FMU needs ``completedIntegratorStep`` after each integration interval.
    no_prior : bool
        ``completedIntegratorStep``'s ``noSetFMUStatePriorToCurrentPoint`` (false in a run that may roll back).
    """

    def __init__(self, fmu: Any, fmi3: bool, nx: int, nz: int, t0: float, rtol: float,
                 needs_completed: bool, no_prior: bool = True) -> None:
        from fmpy.sundials import (CV_BDF, SUN_COMM_NULL, CVodeCreate, CVodeInit, CVodeRootInit,
                                   CVodeSetLinearSolver, CVodeSetMaxNumSteps, CVodeSetMaxStep,
                                   CVodeSetNoInactiveRootWarn, CVodeSVtolerances, CVRhsFn, CVRootFn, N_VNew_Serial,
                                   NV_DATA_S, SUNContext, SUNContext_Create, SUNContext_PushErrHandler,
                                   SUNDenseMatrix, SUNErrHandlerFn, SUNLinSol_Dense)
        from fmpy.sundials.libraries import sundials_core, sundials_cvode
        import numpy as np

        lib = _library()
        self._fmu, self.rtol, self.error_info = fmu, float(rtol), None
        self.discrete = nx == 0
        self.nx, self.nz = max(nx, 1), nz
        self.sunctx = SUNContext()
        self._ok(SUNContext_Create(SUN_COMM_NULL, ctypes.byref(self.sunctx)), "SUNContext_Create")
        self.x = N_VNew_Serial(self.nx, self.sunctx)
        self.abstol = N_VNew_Serial(self.nx, self.sunctx)
        self.px, self.pabstol = NV_DATA_S(self.x), NV_DATA_S(self.abstol)
        self.npabstol = np.ctypeslib.as_array(self.pabstol, (self.nx,))
        self._read_states()
        self.cvode_mem = CVodeCreate(CV_BDF, self.sunctx)

        f = fmu._functions
        p = "fmi3" if fmi3 else "fmi2"
        names = tuple(p + n for n in ("SetTime", "SetContinuousStates",
                                      "GetContinuousStateDerivatives" if fmi3 else "GetDerivatives",
                                      "GetEventIndicators", "CompletedIntegratorStep", "GetContinuousStates",
                                      "GetNominalsOfContinuousStates", "EnterEventMode",
                                      "EnterContinuousTimeMode",
                                      "UpdateDiscreteStates" if fmi3 else "NewDiscreteStates"))
        self._names = names
        set_stop = sundials_cvode.CVodeSetStopTime
        self.ctx = _Ctx(fmi3=int(fmi3), c=_address(fmu.component), set_time=_address(f[names[0]]),
                        set_x=_address(f[names[1]]), get_dx=_address(f[names[2]]), get_z=_address(f[names[3]]),
                        completed=_address(f[names[4]]), cvode=_address(sundials_cvode.CVode),
                        set_stop=_address(set_stop), nv_data=_address(sundials_core.N_VGetArrayPointer),
                        cvode_mem=_address(self.cvode_mem), x=_address(self.x), nx=self.nx, nz=nz, discrete=int(self.discrete),
                        needs_completed=int(needs_completed), no_prior=int(no_prior), t=float(t0))
        for field, name in zip(("get_x", "get_nominals", "enter_event", "enter_ct", "update"), names[5:]):
            setattr(self.ctx, field, _address(f[name]))
        self.ctx.reinit = _address(sundials_cvode.CVodeReInit)
        self.ctx.svtol = _address(sundials_cvode.CVodeSVtolerances)
        self.ctx.abstol = _address(self.abstol)
        self.ctx.rtol = self.rtol
        self._dx = (ctypes.c_double * (2 * self.nx))()
        self.ctx.dx_before, self.ctx.dx_after = ctypes.addressof(self._dx), ctypes.addressof(self._dx) + 8 * self.nx
        self.do_step_address = _address(lib.me_do_step)
        self._advance = lib.me_advance
        self._pctx = ctypes.byref(self.ctx)
        # the C callbacks, as the ctypes function types fmpy's bindings declare
        self._rhs = CVRhsFn(_address(lib.me_rhs))
        self._roots = CVRootFn(_address(lib.me_roots))
        self._ehfun = SUNErrHandlerFn(self._error_handler)
        set_user_data = sundials_cvode.CVodeSetUserData
        set_user_data.argtypes, set_user_data.restype = [_P, _P], _I
        self._ok(CVodeInit(self.cvode_mem, self._rhs, float(t0), self.x), "CVodeInit")
        self._ok(set_user_data(self.cvode_mem, ctypes.addressof(self.ctx)), "CVodeSetUserData")
        self._ok(CVodeSVtolerances(self.cvode_mem, self.rtol, self.abstol), "CVodeSVtolerances")
        self._ok(CVodeRootInit(self.cvode_mem, nz, self._roots), "CVodeRootInit")
        self.A = SUNDenseMatrix(self.nx, self.nx, self.sunctx)
        self.LS = SUNLinSol_Dense(self.x, self.A, self.sunctx)
        self._ok(CVodeSetLinearSolver(self.cvode_mem, self.LS, self.A), "CVodeSetLinearSolver")
        # CVODE's own difference-quotient Jacobian, kept for the first request after a restart
        clone, set_jac = sundials_core.SUNMatClone, sundials_cvode.CVodeSetJacFn
        clone.argtypes, clone.restype = [_P], _P
        set_jac.argtypes, set_jac.restype = [_P, _P], _I
        self._jac_cache = clone(_address(self.A))
        if not self._jac_cache:
            raise CosimError("SUNMatClone failed setting up CVODE (no memory)")
        self.ctx.jac_cache = self._jac_cache
        self.ctx.dq_jac = _address(sundials_cvode.cvLsDQJac)
        self.ctx.mat_copy = _address(sundials_core.SUNMatCopy)
        self._ok(set_jac(self.cvode_mem, _address(lib.me_jac)), "CVodeSetJacFn")
        self._ok(CVodeSetMaxStep(self.cvode_mem, float("inf")), "CVodeSetMaxStep")
        self._ok(CVodeSetMaxNumSteps(self.cvode_mem, 100_000), "CVodeSetMaxNumSteps")
        self._ok(CVodeSetNoInactiveRootWarn(self.cvode_mem), "CVodeSetNoInactiveRootWarn")
        self._ok(SUNContext_PushErrHandler(self.sunctx, self._ehfun, None), "SUNContext_PushErrHandler")

    def describe_step(self, t: float, next_event: float, stop: float, restarts: int, inputs_driven: bool,
                      will_roll_back: bool, atol: float | None, u: Any, u_last: bytes | None,
                      max_iterations: int, max_events: int) -> None:
        """Set the context for ``me_do_step`` (``csrc/me_step.c``), the unit's communication step in C.

        Parameters
        ----------
        t, next_event, stop : float
            The unit's time, its FMU's next time event (inf: none) and the run's stop time [s].
        restarts : int
            CVODE restarts so far.
        inputs_driven, will_roll_back : bool
            Whether inputs are connected; whether the run may restore earlier states.
        atol : float or None
            The absolute tolerance (``None``: ``rtol`` times each state's nominal).
        u : ctypes array of c_double
            The unit's input buffer.
        u_last : bytes or None
            The inputs of the unit's last step (``None``: none yet).
        max_iterations, max_events : int
            Event iteration calls per event, events per step before giving up.
        """
        ctx = self.ctx
        ctx.t, ctx.next_event, ctx.stop, ctx.restarts = t, next_event, stop, restarts
        ctx.inputs_driven, ctx.will_roll_back = int(inputs_driven), int(will_roll_back)
        ctx.atol = 0.0 if atol is None else atol
        n = len(u)
        self._u_last = (ctypes.c_double * n).from_buffer_copy(u_last if u_last is not None and len(u_last) == 8 * n
                                                               else bytes(8 * n))
        ctx.u, ctx.u_last, ctx.n_u = ctypes.addressof(u), ctypes.addressof(self._u_last), n
        ctx.u_last_valid = int(u_last is not None)
        ctx.max_iterations, ctx.max_events = max_iterations, max_events
        ctx.n_ev = 0

    def step_events(self) -> list[tuple[float, str]]:
        """The events ``me_do_step`` met since ``describe_step`` (time [s] and kind)."""
        ctx = self.ctx
        return [(ctx.ev_t[k], EVENT_KINDS[ctx.ev_kind[k]]) for k in range(ctx.n_ev)]

    def inputs_sent(self) -> bytes | None:
        """The inputs of the last step ``me_do_step`` took (``None``: none yet)."""
        return bytes(self._u_last) if self.ctx.u_last_valid else None

    def step_error(self, code: int) -> Exception:
        """The exception of a failed FMU call or CVODE failure, as ``advance`` raises it.

        Parameters
        ----------
        code : int
            ``me_do_step``'s result.

        Returns
        -------
        Exception
            fmpy's ``FMICallException`` (with its ``status``) or a ``RuntimeError``.
        """
        try:
            self._raise(code)
        except Exception as exc:  # noqa: BLE001 (handed to the caller)
            return exc
        return RuntimeError(f"CVODE failed (flag {code})")  # pragma: no cover

    @staticmethod
    def _ok(flag: int, call: str) -> None:
        if flag != 0:
            raise CosimError(f"{call} failed (flag {flag}) setting up CVODE")

    def _error_handler(self, line, func, file, msg, err_code, err_user_data, sunctx) -> None:
        self.error_info = (err_code, (func or b"").decode("utf-8", "replace"), "",
                           (msg or b"").decode("utf-8", "replace"))

    def _read_states(self) -> None:
        """The FMU's states and nominals into CVODE's state and absolute tolerance."""
        if self.discrete:
            self.npabstol[:] = 1.0
            ctypes.memmove(self.px, (ctypes.c_double * 1)(1.0), 8)
        else:
            self._fmu.getContinuousStates(self.px, self.nx)
            self._fmu.getNominalsOfContinuousStates(self.pabstol, self.nx)
        self.npabstol *= self.rtol

    def reset(self, time: float, reuse_jacobian: bool = False) -> None:
        """Restart CVODE at ``time`` [s] from the FMU's states (its nominals scale the absolute tolerance);
        ``reuse_jacobian``: its first Newton iteration takes the last Jacobian computed (CVODE computes
        a new one where Newton does not converge with it)."""
        from fmpy.sundials import CVodeReInit
        self._read_states()
        self._ok(CVodeReInit(self.cvode_mem, float(time), self.x), "CVodeReInit")
        self.ctx.stop_valid = 0
        self.ctx.t = float(time)
        self.ctx.reuse_jac = int(reuse_jacobian)

    def set_abstol(self, atol: float) -> None:
        """An absolute tolerance ``atol`` for every state instead of ``rtol`` times its nominal."""
        from fmpy.sundials import CVodeSVtolerances
        if not self.discrete:
            self.npabstol[:] = atol
            self._ok(CVodeSVtolerances(self.cvode_mem, self.rtol, self.abstol), "CVodeSVtolerances")

    def advance(self, t: float, t_end: float, next_event: float, stop: float, interpolate: bool,
                tiny: float) -> tuple[int, float]:
        """Integrate from ``t`` towards ``t_end`` [s] as ``me_advance`` in ``csrc/me_step.c`` does: to
        ``min(t_end, next_event)``, past ``t_end`` (up to the next event or ``stop``) where ``interpolate``;
        the FMU is left at the time and states reached. Returns the result bits (:data:`ROOT`,
        :data:`STEP_EVENT`, :data:`TERMINATE`, :data:`TIME_EVENT`, :data:`REACHED`) and the time reached [s].

        Raises fmpy's ``FMICallException`` for a failed FMU call (its ``status`` says which
        status), ``RuntimeError`` when CVODE fails.
        """
        ctx = self.ctx
        ctx.t = t
        bits = self._advance(self._pctx, t_end, next_event, stop, interpolate, tiny)
        if bits < 0:
            self._raise(bits)
        return bits, ctx.t

    def _raise(self, flag: int) -> None:
        from fmpy.fmi1 import FMICallException
        ctx = self.ctx
        if ctx.status:
            raise FMICallException(function=self._names[ctx.failed_call - 1], status=ctx.status)
        if flag == _FAILED:
            raise RuntimeError(f"CVodeSetStopTime({ctx.stop_time!r}) failed")
        info = self.error_info or (flag, "CVode", "", "no message")
        raise RuntimeError(f"CVODE failed (flag {flag}) in {info[1]}: {info[3]}")

    def __del__(self) -> None:
        try:
            self._free()
        except Exception:  # noqa: BLE001 (at interpreter exit the modules may be gone)
            pass

    def _free(self) -> None:
        from fmpy.sundials import CVodeFree
        from fmpy.sundials.libraries import sundials_core
        if getattr(self, "ctx", None) is not None and self.ctx.cap_ev:
            _library().me_free_events(ctypes.byref(self.ctx))
        mem = getattr(self, "cvode_mem", None)
        if mem:
            CVodeFree(ctypes.byref(ctypes.c_void_p(mem)))
            self.cvode_mem = None
        for name, attr in (("SUNLinSolFree", "LS"), ("SUNMatDestroy", "A"), ("SUNMatDestroy", "_jac_cache"), ("N_VDestroy", "x"),
                           ("N_VDestroy", "abstol")):
            obj = getattr(self, attr, None)
            if obj:
                fn = getattr(sundials_core, name)
                fn.argtypes, fn.restype = [_P], None if name != "SUNLinSolFree" else _I
                fn(obj)
                setattr(self, attr, None)
        if getattr(self, "sunctx", None):
            free = sundials_core.SUNContext_Free
            free.argtypes, free.restype = [_P], _I
            free(ctypes.byref(self.sunctx))
            self.sunctx = None
