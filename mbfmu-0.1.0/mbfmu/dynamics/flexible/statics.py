"""Nonlinear static equilibrium of a flexible or rigid system.

:func:`static_equilibrium` solves ``F(q, v = 0) = 0`` for the generalized
forces ``F`` of the system's own equations of motion (modal and joint
stiffness, gravity, springs, constant inputs): Newton's method on the
tangent stiffness ``-dF/dq`` by central differences, with a backtracking
line search on the residual. Geometric nonlinearity is whatever the model
carries (large rotations of frames and sub-beams, foreshortening), so the
static solution of a sub-beam chain is its large-deflection statics.
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError, SimulationError


def tangent_stiffness(system, q, tau=None, step: float = 1e-7) -> np.ndarray:
    """``-dF/dq`` at ``q`` and rest by central differences, (nv, nv), in
    N/m, N m/rad or modal units (not symmetrized: dead loads on rotating
    frames make it unsymmetric).

    Parameters
    ----------
    system : FlexibleSystem or RigidSystem
        The mechanism (``nq == nv``).
    q : array_like (nq,)
        Configuration, m or rad (modal coordinates for beams).
    tau : array_like (nv,), optional
        Constant generalized forces, N or N m.
    step : float
        Finite-difference step of the coordinates.
    """
    q = np.asarray(q, float)
    v0 = np.zeros(system.nv)
    K = np.empty((system.nv, system.nv))
    for j in range(system.nv):
        dq = np.zeros(system.nq)
        dq[j] = step
        K[:, j] = -(system.generalized_forces(q + dq, v0, tau) - system.generalized_forces(q - dq, v0, tau)) / (2 * step)
    return K


def static_equilibrium(system, q0=None, tau=None, tol: float = 1e-10, max_iter: int = 60) -> np.ndarray:
    """Configuration ``q`` at which the system rests: ``F(q, 0, tau) = 0``.

    Parameters
    ----------
    system : FlexibleSystem or RigidSystem
        Minimal coordinates (``nq == nv``).
    q0 : array_like (nq,), optional
        Start of the iteration (default the neutral configuration); for
        large loads, continue from the solution at a smaller load.
    tau : array_like (nv,), optional
        Constant generalized forces, N or N m (modal forces for beams).
    tol : float
        Convergence when the largest Newton update is below ``tol`` times
        ``max(1, |q|_inf)``.
    max_iter : int
        Newton iterations allowed.

    Returns
    -------
    ndarray (nq,)

    Raises
    ------
    InputError
        Quaternion coordinates.
    SimulationError
        No convergence within ``max_iter`` iterations, or a singular tangent
        stiffness (a mechanism with a free rigid motion and no load holding it).
    """
    if system.nq != system.nv:
        raise InputError("static_equilibrium needs nq == nv (no ball or free joints)")
    q = system.neutral() if q0 is None else np.array(q0, float)
    v0 = np.zeros(system.nv)
    r = system.generalized_forces(q, v0, tau)
    for _ in range(max_iter):
        try:
            dq = np.linalg.solve(tangent_stiffness(system, q, tau), r)
        except np.linalg.LinAlgError:
            raise SimulationError("static_equilibrium: the tangent stiffness is singular (a free rigid "
                                  "motion the loads do not hold?)") from None
        lam, norm0 = 1.0, float(np.linalg.norm(r))
        while True:
            q_new = q + lam * dq
            r_new = system.generalized_forces(q_new, v0, tau)
            if np.linalg.norm(r_new) < norm0 or lam < 1e-3:
                break
            lam *= 0.5
        q, r = q_new, r_new
        if lam * np.max(np.abs(dq)) <= tol * max(1.0, float(np.max(np.abs(q)))):
            return q
    raise SimulationError(f"static_equilibrium: no convergence in {max_iter} Newton iterations "
                          f"(residual {float(np.linalg.norm(r)):.3g}); apply the load in steps")
