"""Time integrators usable on any plant state.

* :func:`rk4_step`, :func:`integrate_rk4`: classical fixed-step Runge-Kutta 4.
* :class:`DormandPrince`: adaptive embedded Runge-Kutta 5(4) (Dormand & Prince
  1980) with per-component error control ``|err_i| <= atol + rtol |x_i|``,
  the step controller of Hairer, Norsett & Wanner (Solving ODEs I, II.4), and
  stepping to exact output times.
* :func:`symplectic_euler_canonical`: symplectic Euler in canonical
  variables (q, p) (Shimanovsky and Ivanov's state), with the implicit momentum
  update solved by fixed-point iteration.
* :class:`ErrorControl` with :func:`advance_rigid`,
  :func:`advance_flexible` and :func:`advance_function`: what every plant's
  ``advance`` runs, the compiled embedded pairs of ``csrc/adaptive.c``
  (Dormand-Prince 5(4) by default, Bogacki-Shampine 3(2) on request) over one
  communication interval, raising :class:`~mbfmu.errors.SimulationError` when
  the tolerance cannot be met within the step limits.

A ``normalize`` callback, when given, projects the state back onto its
manifold after every accepted step (unit quaternions).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..errors import InputError, SimulationError
from . import _kernels
from .model import Model

Rhs = Callable[[float, np.ndarray], np.ndarray]


def rk4_step(f: Rhs, t: float, x: np.ndarray, h: float) -> np.ndarray:
    """One classical RK4 step of size ``h`` (s) from ``(t, x)``."""
    k1 = f(t, x)
    k2 = f(t + h / 2, x + h / 2 * k1)
    k3 = f(t + h / 2, x + h / 2 * k2)
    k4 = f(t + h, x + h * k3)
    return x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def integrate_rk4(f: Rhs, x0, t_end: float, h: float, t0: float = 0.0,
                  normalize: Callable[[np.ndarray], np.ndarray] | None = None,
                  record: bool = True):
    """Fixed-step RK4 from ``t0`` to ``t_end`` with steps ``h`` (s).

    The number of steps is ``round((t_end - t0) / h)``, which must match
    ``h`` to 1e-9 relative; time is computed as ``t0 + k h`` (no drift).

    Returns
    -------
    t : ndarray (n + 1,)
    X : ndarray (n + 1, len(x0))
        Only the final state (shape (len(x0),)) when ``record`` is false.
    """
    n = int(round((t_end - t0) / h))
    if n < 1 or abs(n * h - (t_end - t0)) > 1e-9 * max(1.0, abs(t_end - t0)):
        raise InputError(f"integrate_rk4: interval {t_end - t0} s is not a whole number of steps {h} s")
    x = np.array(x0, dtype=float)
    X = np.empty((n + 1, x.size)) if record else None
    if record:
        X[0] = x
    for k in range(n):
        x = rk4_step(f, t0 + k * h, x, h)
        if normalize is not None:
            x = normalize(x)
        if record:
            X[k + 1] = x
    if not np.all(np.isfinite(x)):
        raise SimulationError("integrate_rk4: the state became non-finite (step too large?)")
    t = t0 + h * np.arange(n + 1)
    return (t, X) if record else (t, x)


# Dormand-Prince 5(4) tableau (Hairer, Norsett & Wanner, Table II.5.2)
_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
_A = [
    [],
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
]
_B5 = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_B4 = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])
_E = _B5 - _B4


@dataclass
class DormandPrince:
    """Adaptive Runge-Kutta 5(4) integrator with error control.

    Parameters
    ----------
    f : callable
        ``f(t, x) -> dx/dt``.
    rtol, atol : float
        Relative and absolute tolerance per component.
    h_max : float
        Largest step, s.
    normalize : callable, optional
        Projection applied to every accepted state.
    max_steps : int
        Refuse to take more steps than this in one :meth:`advance` call.

    Attributes
    ----------
    accepted, rejected : int
        Step counts since creation.
    h : float or None
        Step size proposed for the next step, s (kept between calls).
    """

    f: Rhs
    rtol: float = 1e-8
    atol: float = 1e-10
    h_max: float = np.inf
    normalize: Callable[[np.ndarray], np.ndarray] | None = None
    max_steps: int = 1_000_000
    accepted: int = 0
    rejected: int = 0
    h: float | None = None
    _k: list = field(default_factory=list, repr=False)

    def _initial_step(self, t: float, x: np.ndarray, f0: np.ndarray) -> float:
        scale = self.atol + self.rtol * np.abs(x)
        d0 = np.sqrt(np.mean((x / scale) ** 2))
        d1 = np.sqrt(np.mean((f0 / scale) ** 2))
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        x1 = x + h0 * f0
        d2 = np.sqrt(np.mean(((self.f(t + h0, x1) - f0) / scale) ** 2)) / h0
        h1 = max(1e-6, h0 * 1e-3) if max(d1, d2) <= 1e-15 else (0.01 / max(d1, d2)) ** 0.2
        return min(100 * h0, h1, self.h_max)

    def advance(self, t: float, x: np.ndarray, t_end: float) -> np.ndarray:
        """Integrate from ``(t, x)`` to exactly ``t_end`` (s); returns x(t_end)."""
        x = np.array(x, dtype=float)
        if t_end < t:
            raise InputError(f"DormandPrince.advance: t_end {t_end} s is before t {t} s")
        if t_end == t:
            return x
        k = [None] * 7
        k[0] = self.f(t, x)
        h = self.h if self.h else self._initial_step(t, x, k[0])
        steps = 0
        while t < t_end:
            if steps >= self.max_steps:
                raise SimulationError(f"DormandPrince: more than {self.max_steps} steps before t = {t_end} s "
                                      f"(stuck at t = {t} s, h = {h:g} s)")
            last = t + h >= t_end - 1e-12 * max(1.0, abs(t_end))
            hs = t_end - t if last else h
            for s in range(1, 7):
                xs = x + hs * sum(a * k[j] for j, a in enumerate(_A[s]) if a != 0.0)
                k[s] = self.f(t + _C[s] * hs, xs)
            x_new = xs  # stage 7 is at the 5th-order solution (FSAL)
            err = hs * sum(e * k[j] for j, e in enumerate(_E) if e != 0.0)
            scale = self.atol + self.rtol * np.maximum(np.abs(x), np.abs(x_new))
            en = float(np.sqrt(np.mean((err / scale) ** 2)))
            steps += 1
            if not np.isfinite(en):
                self.rejected += 1
                h = hs * 0.1
                continue
            if en <= 1.0:
                t = t_end if last else t + hs
                x = self.normalize(x_new) if self.normalize else x_new
                k[0] = k[6] if self.normalize is None else self.f(t, x)
                self.accepted += 1
                fac = 0.9 * en ** -0.2 if en > 0 else 5.0
                h_next = hs * min(5.0, max(0.2, fac))
                if not last:
                    h = min(h_next, self.h_max)
                else:
                    h = min(max(h, h_next), self.h_max)
            else:
                self.rejected += 1
                h = hs * max(0.2, 0.9 * en ** -0.2)
            if h < 1e-14 * max(1.0, abs(t)):
                raise SimulationError(f"DormandPrince: step size underflow at t = {t} s")
        self.h = h
        return x


def integrate_adaptive(f: Rhs, x0, times, rtol: float = 1e-8, atol: float = 1e-10,
                       normalize=None, h_max: float = np.inf):
    """States at the given output ``times`` (s) by :class:`DormandPrince`.

    Returns (X, integrator) with X of shape (len(times), len(x0)).
    """
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times.size < 1 or np.any(np.diff(times) < 0):
        raise InputError("integrate_adaptive: times must be a non-decreasing 1-D array")
    dp = DormandPrince(f, rtol=rtol, atol=atol, normalize=normalize, h_max=h_max)
    X = np.empty((times.size, np.size(x0)))
    x = np.array(x0, dtype=float)
    X[0] = x
    for i in range(1, times.size):
        x = dp.advance(times[i - 1], x, times[i])
        X[i] = x
    return X, dp


def symplectic_euler_canonical(model: Model, q: np.ndarray, p: np.ndarray, tau: np.ndarray,
                               h: float, iterations: int = 50, tol: float = 1e-13):
    """One symplectic Euler step in canonical variables (q, p), step ``h`` (s).

    ``p1 = p0 + h pdot(q0, p1)`` (implicit in p, solved by fixed-point
    iteration to ``tol`` relative), then ``q1 = q0 (+) h v(q0, p1)``. For
    joints with ``nq == nv`` this is the symplectic Euler method (Hairer,
    Lubich & Wanner, Geometric Numerical Integration, VI.3), whose energy
    error stays bounded instead of drifting.

    Returns
    -------
    q1, p1 : ndarray
    """
    hnd = model._h
    p1 = np.array(p, dtype=float)
    for _ in range(iterations):
        _, pdot, _ = _kernels.sweep(hnd, q, p1, tau)
        p_next = p + h * pdot
        if np.max(np.abs(p_next - p1)) <= tol * max(1.0, np.max(np.abs(p_next))):
            p1 = p_next
            break
        p1 = p_next
    else:
        raise SimulationError(f"symplectic Euler: momentum iteration did not converge in {iterations} "
                              f"iterations at step {h} s (reduce the step)")
    v1 = _kernels.minv(hnd, q, p1)
    q1 = _kernels.normalize(hnd, _kernels.integrate(hnd, q, v1, h))
    return q1, p1


METHODS = {"bs32": 0, "dp54": 1}


@dataclass(frozen=True)
class ErrorControl:
    """Tolerance and step limits of a plant's error-controlled ``advance``.

    Every accepted step keeps the embedded error estimate ``e`` within
    ``sqrt(mean_i (e_i / (atol + rtol max(|x0_i|, |x1_i|)))^2) <= 1`` over the
    state components (Hairer, Norsett & Wanner, Solving ODEs I, II.4).

    Parameters
    ----------
    rtol : float
        Relative tolerance (1). Default 1e-6; an FMU takes it from
        ``fmi2SetupExperiment``'s tolerance when the host defines one.
    atol : float
        Absolute tolerance in the units of each state component (rad, m,
        rad/s, m/s, ...). Default 1e-6; :meth:`with_tolerance` sets both.
    method : {"dp54", "bs32"}
        Dormand-Prince 5(4) (6 new evaluations per step; the default) or
        Bogacki-Shampine 3(2) (3 per step; cheaper only at loose tolerances
        and short intervals: at 1e-6 its lower order costs accuracy over long
        chaotic runs).
    max_steps : int
        Attempted steps per ``advance`` call before it gives up.
    max_step : float or None
        Largest step, s (None: the communication interval).
    min_step : float or None
        Smallest step, s, before it gives up (None: 1e-12 of the interval).
    """

    rtol: float = 1e-6
    atol: float = 1e-6
    method: str = "dp54"
    max_steps: int = 100_000
    max_step: float | None = None
    min_step: float | None = None

    def __post_init__(self):
        for name in ("rtol", "atol"):
            val = getattr(self, name)
            if not (isinstance(val, (int, float)) and np.isfinite(val) and val >= 0):
                raise InputError(f"error control: {name} = {val!r} must be a finite number >= 0")
        if self.rtol + self.atol <= 0:
            raise InputError("error control: rtol and atol cannot both be 0")
        if self.method not in METHODS:
            raise InputError(f"error control: method {self.method!r} is not one of {sorted(METHODS)}")
        if not (isinstance(self.max_steps, (int, np.integer)) and self.max_steps >= 1):
            raise InputError(f"error control: max_steps = {self.max_steps!r} must be an integer >= 1")
        for name in ("max_step", "min_step"):
            val = getattr(self, name)
            if val is not None and not (np.isfinite(val) and val > 0):
                raise InputError(f"error control: {name} = {val!r} must be None or a finite number > 0")

    def with_tolerance(self, tolerance: float) -> "ErrorControl":
        """A copy with ``rtol = atol = tolerance``."""
        return replace(self, rtol=float(tolerance), atol=float(tolerance))

    def options(self, first_step: float | None = None) -> tuple:
        """The options tuple of the compiled integrator (first trial step ``first_step``, s)."""
        return (float(self.rtol), float(self.atol), float(first_step or 0.0), float(self.max_step or 0.0),
                float(self.min_step or 0.0), int(self.max_steps), METHODS[self.method])


def _failed(what: str, t: float, dt: float, exc: SimulationError) -> SimulationError:
    return SimulationError(f"{what}: step from t = {t:.10g} s to {t + dt:.10g} s: {exc}")


def advance_rigid(model: Model, q: np.ndarray, y: np.ndarray, tau: np.ndarray, t: float, dt: float,
                  control: ErrorControl, first_step: float | None = None, fext=None,
                  canonical: bool = False, what: str = "advance"):
    """``(q, y)`` of a rigid model after ``dt`` (s) with ``tau`` (and ``fext``)
    held, error-controlled; ``y`` is ``v`` or, when ``canonical``, ``p``.

    Raises
    ------
    SimulationError
        Naming ``what`` and the interval, when the tolerance cannot be met
        within the step limits (or the model becomes singular).
    """
    try:
        q, y, _ = _kernels.adapt(model._h, q, y, tau, dt, control.options(first_step), fext, canonical)
    except SimulationError as exc:
        raise _failed(what, t, dt, exc) from None
    return q, y


def advance_flexible(handle, q: np.ndarray, v: np.ndarray, tau: np.ndarray, t: float, dt: float,
                     control: ErrorControl, first_step: float | None = None, fext=None,
                     what: str = "advance"):
    """As :func:`advance_rigid` for a flexible system's compiled handle
    (``FlexibleSystem._fh``), public coordinates ``(q, v)``."""
    try:
        q1, v1, _ = _kernels.flex_adapt(handle, q, v, tau, dt, control.options(first_step), fext)
    except SimulationError as exc:
        raise _failed(what, t, dt, _blown_up_within(handle, q, v, tau, fext, exc)) from None
    return q1, v1


def _blown_up_within(handle, q: np.ndarray, v: np.ndarray, tau: np.ndarray, fext, exc: SimulationError
                     ) -> SimulationError:
    """``exc``, or, when the right-hand side holds at the step's start state (so
    the failure came from a state the step itself produced), an error saying
    that the state blew up: a singular modal mass found then is a consequence
    of the overflow, not a beam without mass."""
    try:
        _kernels.flex_rhs(handle, q, v, tau, fext)
    except SimulationError:
        return exc
    tau = np.asarray(tau, float)
    big = f"; largest generalized force |tau| = {float(np.max(np.abs(tau))):.3g}" if tau.size else ""
    return SimulationError(f"the state has blown up within the step (the equations hold at its start state, "
                           f"largest |x| = {float(np.max(np.abs(np.concatenate([q, v])))):.3g}{big}, "
                           f"but fail at a state the step reached: {exc}); check the inputs and the step size")


def advance_function(f: Rhs, t: float, x: np.ndarray, dt: float, control: ErrorControl,
                     first_step: float | None = None,
                     normalize: Callable[[np.ndarray], np.ndarray] | None = None,
                     what: str = "advance") -> np.ndarray:
    """``x(t + dt)`` of ``dx/dt = f(t, x)`` (a Python right-hand side) by the
    same compiled error-controlled integrator; ``normalize`` projects every
    accepted state (unit quaternions)."""
    try:
        x, _ = _kernels.adapt_callback(f, normalize, float(t), np.asarray(x, float), dt,
                                       control.options(first_step))
    except SimulationError as exc:
        raise _failed(what, t, dt, exc) from None
    return x
