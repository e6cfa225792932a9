"""Linearization, natural frequencies and static deflection of either beam
method (a :class:`FlexibleSystem` or a :class:`RigidSystem`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import InputError
from .._docs import parameters


@parameters("system", "q0", step="float\n    Finite-difference step of the coordinates, rad or m.")
def stiffness_matrix(system, q0=None, step: float = 1e-6) -> np.ndarray:
    """``K = -dF/dq`` at rest (v = 0, no input) by central differences of the
    restoring forces (springs, modal stiffness, gravity), (nv, nv).
    Coordinates must be minimal (no quaternions)."""
    if system.nq != system.nv:
        raise InputError("stiffness_matrix needs nq == nv (no ball or free joints)")
    q0 = system.neutral() if q0 is None else np.asarray(q0, float)
    v0 = np.zeros(system.nv)
    K = np.empty((system.nv, system.nv))
    for j in range(system.nv):
        dq = np.zeros(system.nq)
        dq[j] = step
        Fp = system.generalized_forces(q0 + dq, v0)
        Fm = system.generalized_forces(q0 - dq, v0)
        K[:, j] = -(Fp - Fm) / (2 * step)
    return 0.5 * (K + K.T)


@parameters("system", "q0", fixed="sequence of int\n    Velocity coordinates held at zero.",
            n="int, optional\n    Return only the ``n`` lowest.")
def natural_frequencies(system, q0=None, fixed: Sequence[int] = (), n: int | None = None) -> np.ndarray:
    """Undamped natural frequencies (rad/s, ascending) of the system
    linearized about ``q0`` at rest: eigenvalues of ``M^-1 K`` with ``M`` the
    mass matrix and ``K`` from :func:`stiffness_matrix`. Coordinates listed
    in ``fixed`` are held. Rigid-body modes give frequencies near zero."""
    q0 = system.neutral() if q0 is None else np.asarray(q0, float)
    M = system.mass_matrix(q0)
    K = stiffness_matrix(system, q0)
    keep = np.setdiff1d(np.arange(system.nv), np.asarray(fixed, int))
    Lc = np.linalg.cholesky(M[np.ix_(keep, keep)])
    A = np.linalg.solve(Lc, np.linalg.solve(Lc, K[np.ix_(keep, keep)]).T)  # L^-1 K L^-T
    lam = np.sort(np.linalg.eigvalsh(0.5 * (A + A.T)))
    w = np.sqrt(np.clip(lam, 0.0, None))
    return w if n is None else w[:n]


@parameters("system", "body", "p_BP", "q0", fixed="sequence of int\n    Velocity coordinates held at zero.",
            force_W="array_like, shape (3,)\n    The force in world coordinates, N.")
def static_response(system, body, p_BP, force_W, q0=None, fixed: Sequence[int] = ()) -> np.ndarray:
    """Linear static displacement ``dq`` under a world force ``force_W`` (N)
    applied at point ``p_BP`` of ``body``: ``K dq = J^T f`` (coordinates in
    ``fixed`` held)."""
    q0 = system.neutral() if q0 is None else np.asarray(q0, float)
    K = stiffness_matrix(system, q0)
    Q = system.point_jacobian(q0, body, p_BP).T @ np.asarray(force_W, float)
    keep = np.setdiff1d(np.arange(system.nv), np.asarray(fixed, int))
    dq = np.zeros(system.nv)
    dq[keep] = np.linalg.solve(K[np.ix_(keep, keep)], Q[keep])
    return dq
