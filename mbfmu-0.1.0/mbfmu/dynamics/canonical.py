"""Canonical variables: generalized coordinates q and momenta p (Shimanovsky and Ivanov 2013).

``p = M(q) v`` is, joint by joint, the projection of the momentum of the
subtree the joint carries onto the joint's motion subspace: ``p_i = S_i^T H_i``.
Both directions run in O(N) without forming M:

* :func:`generalized_momentum`: a backward pass summing subtree momenta;
* :func:`canonical_derivatives`: the "sweep" of Shimanovsky and Ivanov: ``v = M^-1 p`` by
  the articulated-body passes, then
  ``dp_i/dt = tau_i + S_i^T (F_i - v_i x* H_i) + Sring_i^T H_i``, where
  ``F_i`` is the gravity and external force on the subtree of i and ``Sring``
  the apparent time derivative of the motion subspace (derived from
  ``d/dt (S_i . H_i)`` with ``dH_i/dt`` equal to the net force on the subtree).

The equations are those of V. A. Shimanovsky and V. N. Ivanov, "Equations of
motion of systems of coupled rigid bodies in canonical variables" (Bulletin of
Perm University, 2013), ``p_dot = (A_dot^T - A^T Omega) y + Q``, written with
spatial vectors.
"""
from __future__ import annotations

import numpy as np

from . import _kernels
from .model import Model


def generalized_momentum(model: Model, q, v) -> np.ndarray:
    """``p = M(q) v`` (nv,) in O(N): N m s for rotational, N s for translational
    coordinates."""
    return _kernels.momentum(model._h, q, v)


def velocity_from_momentum(model: Model, q, p) -> np.ndarray:
    """``v = M(q)^-1 p`` (nv,) in O(N)."""
    return _kernels.minv(model._h, q, p)


def canonical_derivatives(model: Model, q, p, tau, f_ext=None):
    """The O(N) canonical sweep.

    Parameters
    ----------
    q : array_like (nq,)
    p : array_like (nv,)
        Generalized momenta.
    tau : array_like (nv,)
        Generalized forces (joint torques/forces), N m or N.
    f_ext : array_like (nbodies, 6), optional
        Body wrenches [n; f], body frame.

    Returns
    -------
    qdot : ndarray (nq,)
        Configuration rate.
    pdot : ndarray (nv,)
        Momentum rate.
    v : ndarray (nv,)
        Generalized velocity.

    Notes
    -----
    Joint force elements of the model (springs, dampers) are *not* added
    here; add ``_kernels.passive_forces`` to ``tau``/``f_ext`` as
    :class:`~mbfmu.plant.multibody.MultibodyPlant` does.
    """
    return _kernels.sweep(model._h, q, p, tau, f_ext)
