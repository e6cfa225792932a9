"""Time integration of flexible systems, explicit or implicit.

Fine segment meshes and high modes make the equations stiff: the step of an
explicit method is bounded by the highest frequency (RK4: ``h < 2.8 /
omega_max``), whatever accuracy is wanted. :func:`simulate` offers

* ``"rk4"``: classical fixed-step RK4 (cheap per step, stability-limited);
* scipy's explicit ``"RK45"`` / ``"DOP853"`` (adaptive, also stability-limited);
* scipy's implicit ``"Radau"`` (order 5) and ``"BDF"`` (orders 1-5), fed with
  a Jacobian: ``jacobian="structural"`` (default) builds

      J = [[0, I], [-M(q)^-1 K, -M(q)^-1 D]]

  from the current mass matrix and the stiffness ``K`` and damping ``D`` of
  the linearization at the neutral configuration (exact for the elastic
  forces, which dominate the stiffness; velocity-product and geometric
  terms are left to the Newton iteration); ``jacobian="fd"`` lets scipy
  difference the right-hand side (exact to rounding, ``2 n`` evaluations).

Which integrator a plant uses is the plant's choice (``integrator`` argument
of :class:`~mbfmu.models.flexible_arm.FlexibleArm`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.integrate import solve_ivp

from ...errors import InputError, SimulationError
from .._docs import parameters
from .analysis import stiffness_matrix

METHODS = ("rk4", "RK45", "DOP853", "Radau", "BDF", "LSODA")


@dataclass
class Trajectory:
    """Result of :func:`simulate`.

    Attributes
    ----------
    t : ndarray, shape (n,)
        Output times, s.
    x : ndarray, shape (n, nq + nv)
        States ``[q; v]`` at those times (rad or m; rad/s or m/s).
    nfev : int
        Right-hand-side evaluations.
    njev : int
        Jacobian evaluations (implicit methods).
    """

    t: np.ndarray
    x: np.ndarray
    nfev: int
    njev: int


@parameters("system", "q0", step="float\n    Finite-difference step of the velocities, rad/s or m/s.")
def damping_matrix(system, q0=None, step: float = 1e-6) -> np.ndarray:
    """``D = -dF/dv`` at rest (central differences), (nv, nv)."""
    q0 = system.neutral() if q0 is None else np.asarray(q0, float)
    D = np.empty((system.nv, system.nv))
    for j in range(system.nv):
        dv = np.zeros(system.nv)
        dv[j] = step
        D[:, j] = -(system.generalized_forces(q0, dv) - system.generalized_forces(q0, -dv)) / (2 * step)
    return D


class StructuralJacobian:
    """Jacobian of ``d/dt [q; v]`` from ``M(q)`` and the rest linearization
    ``K``, ``D`` (needs nq == nv).

    Parameters
    ----------
    system : FlexibleSystem or RigidSystem
        The mechanism.
    q0 : array_like, shape (nq,), optional
        Configuration of the rest linearization (default: the neutral one).
    """

    def __init__(self, system, q0=None):
        if system.nq != system.nv:
            raise InputError("the structural Jacobian needs nq == nv (no ball or free joints)")
        self.system = system
        self.K = stiffness_matrix(system, q0)
        self.D = damping_matrix(system, q0)
        self.n = system.nv

    def __call__(self, t, x):
        n = self.n
        M = self.system.mass_matrix(x[:n])
        J = np.zeros((2 * n, 2 * n))
        J[:n, n:] = np.eye(n)
        J[n:, :n] = -np.linalg.solve(M, self.K)
        J[n:, n:] = -np.linalg.solve(M, self.D)
        return J


def simulate(system, x0, t_final: float, tau=None, method: str = "Radau", dt: float | None = None,
             rtol: float = 1e-6, atol: float = 1e-8, t_eval=None, prescribed: Callable | None = None,
             jacobian: str = "structural", events=None) -> Trajectory:
    """Integrate ``system`` from ``x0 = [q; v]`` over ``[0, t_final]`` s.

    Parameters
    ----------
    system : FlexibleSystem or RigidSystem
    x0 : array_like (nq + nv,)
    t_final : float
        s.
    tau : array_like (nv,) or callable ``tau(t, x) -> (nv,)``, optional
        Generalized input forces (N m or N).
    method : str
        One of ``"rk4"``, ``"RK45"``, ``"DOP853"``, ``"Radau"``, ``"BDF"``,
        ``"LSODA"``.
    dt : float
        Step of ``"rk4"`` (required for it), s; the output interval too.
    rtol, atol : float
        Tolerances of the adaptive methods.
    t_eval : array_like, optional
        Output times of the adaptive methods.
    prescribed : callable ``f(t) -> (indices, q, v, a)``, optional
        Driven coordinates (velocity indices; their q, v overwritten and
        their accelerations imposed; needs nq == nv).
    jacobian : str
        ``"structural"`` or ``"fd"`` for the implicit methods.
    events : callable or list of callables, optional
        Event functions ``g(t, x)`` of the adaptive methods, as for
        :func:`scipy.integrate.solve_ivp` (a terminal event ends the run
        there; the trajectory then stops at the last output time before it).
    """
    if method not in METHODS:
        raise InputError(f"unknown integrator {method!r}; choose from {', '.join(METHODS)}")
    x0 = np.asarray(x0, float)
    nq = system.nq
    if x0.size != nq + system.nv:
        raise InputError(f"x0 has {x0.size} values, expected {nq + system.nv}")
    if tau is None:
        tau_fn = lambda t, x: None
    elif callable(tau):
        tau_fn = tau
    else:
        tau_const = np.asarray(tau, float)
        tau_fn = lambda t, x: tau_const
    nfev = [0]

    def f(t, x):
        nfev[0] += 1
        pres = None
        if prescribed is not None:
            idx, qp, vp, ap = prescribed(t)
            x = np.array(x)
            x[np.asarray(idx)] = qp
            x[nq + np.asarray(idx)] = vp
            pres = (idx, ap)
        dx = system.rhs(t, x, tau_fn(t, x), None, pres)
        if prescribed is not None:
            dx[np.asarray(idx)] = vp
        return dx

    if method == "rk4":
        if events is not None:
            raise InputError("events need an adaptive method, not 'rk4'")
        if dt is None or not dt > 0:
            raise InputError("method 'rk4' needs a step dt > 0")
        n = int(np.ceil(t_final / dt - 1e-9))
        h = t_final / n
        X = np.empty((n + 1, x0.size))
        X[0] = x0
        x = x0.copy()
        for k in range(n):
            t = k * h
            k1 = f(t, x)
            k2 = f(t + h / 2, x + h / 2 * k1)
            k3 = f(t + h / 2, x + h / 2 * k2)
            k4 = f(t + h, x + h * k3)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            if not np.all(np.isfinite(x)):
                raise SimulationError(f"state became non-finite at t = {t + h} s (step too large?)")
            X[k + 1] = x
        return Trajectory(np.arange(n + 1) * h, X, nfev[0], 0)
    kwargs = {}
    njev = [0]
    if method in ("Radau", "BDF", "LSODA") and jacobian == "structural":
        jac = StructuralJacobian(system)

        def jfun(t, x):
            njev[0] += 1
            return jac(t, x)
        kwargs["jac"] = jfun
    elif jacobian not in ("structural", "fd"):
        raise InputError(f"jacobian {jacobian!r} must be 'structural' or 'fd'")
    sol = solve_ivp(f, (0.0, t_final), x0, method=method, rtol=rtol, atol=atol, t_eval=t_eval,
                    events=events, **kwargs)
    if not sol.success:
        raise SimulationError(f"{method} failed: {sol.message}")
    return Trajectory(sol.t, sol.y.T, nfev[0], njev[0] if kwargs else sol.njev)
