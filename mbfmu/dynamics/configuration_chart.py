"""The tangent chart of the configuration space: ``q (+) dq``.

Configuration derivatives are taken in the tangent space, as Pinocchio and
the native runtime's C tangents (:mod:`mbfmu.dynamics.tangents`) take them:
a configuration increment ``dq`` (nv,) moves ``q`` to ``q (+) dq`` (see
:func:`integrate`), so for a spherical joint ``R(q (+) dq) = R(q) Exp(dq)``
(``dq`` in the body frame, rad) and for a free joint additionally
``p(q (+) dq) = p + R(q) dq_lin`` (m). For the other joints
``q (+) dq = q + dq``. ``mbfmu.linearize`` writes linear models of plants
with quaternions in this chart.
"""
from __future__ import annotations

import numpy as np

from . import _kernels
from .joints import FREE, SPHERICAL
from .model import Model
from .spatial import quat_to_rot, rot_to_quat, skew


def quat_log(e: np.ndarray) -> np.ndarray:
    """The rotation vector of a unit quaternion.

    Parameters
    ----------
    e : ndarray
        ``(w, x, y, z)``.

    Returns
    -------
    ndarray
        (3,), rad, norm at most pi (the law of the kernels' joint springs).
    """
    w, xyz = e[0], np.asarray(e[1:4], float)
    s = np.linalg.norm(xyz)
    sign = -1.0 if w < 0 else 1.0
    ang = 2.0 * np.arctan2(s, abs(w))
    return (sign * ang / s if s > 1e-12 else 2.0 * sign) * xyz


def so3_log(R: np.ndarray) -> np.ndarray:
    """The rotation vector of a rotation matrix (through the quaternion, accurate for small angles).

    Parameters
    ----------
    R : ndarray
        (3, 3) rotation matrix.

    Returns
    -------
    ndarray
        (3,), rad, norm at most pi.
    """
    return quat_log(rot_to_quat(R))


def jr_inv(phi: np.ndarray) -> np.ndarray:
    """The inverse right Jacobian of SO(3): ``log(Exp(phi) Exp(d)) = phi + jr_inv(phi) d + O(d^2)``.

    Parameters
    ----------
    phi : ndarray
        (3,) rotation vector, rad.

    Returns
    -------
    ndarray
        (3, 3), dimensionless.
    """
    th = np.linalg.norm(phi)
    K = skew(phi)
    if th < 1e-6:
        return np.eye(3) + 0.5 * K + K @ K / 12.0
    coef = 1.0 / th ** 2 - (1.0 + np.cos(th)) / (2.0 * th * np.sin(th))
    return np.eye(3) + 0.5 * K + coef * K @ K


def integrate(model: Model, q, dq) -> np.ndarray:
    """``q (+) dq``: the configuration reached from ``q`` by a tangent increment.

    Parameters
    ----------
    model : Model
        The model.
    q : array_like
        (nq,) configuration (m, rad, quaternion entries).
    dq : array_like
        (nv,) tangent increment (m, rad), spent over a unit time by ``_kernels.integrate``.

    Returns
    -------
    ndarray
        (nq,) the configuration reached.
    """
    return _kernels.integrate(model._h, np.asarray(q, float), np.asarray(dq, float), 1.0)


def difference(model: Model, q0, q1) -> np.ndarray:
    """The inverse of :func:`integrate`: ``dq`` with ``integrate(q0, dq) == q1``.

    Parameters
    ----------
    model : Model
        The model.
    q0, q1 : array_like
        (nq,) configurations.

    Returns
    -------
    ndarray
        (nv,) tangent increment (m, rad).
    """
    q0 = np.asarray(q0, float)
    q1 = np.asarray(q1, float)
    out = np.zeros(model.nv)
    for i in range(1, model.nbodies):
        j = model.joints[i]
        iq, iv = model.idx_q[i], model.idx_v[i]
        if j.code == SPHERICAL:
            R0, R1 = quat_to_rot(q0[iq:iq + 4]), quat_to_rot(q1[iq:iq + 4])
            out[iv:iv + 3] = so3_log(R0.T @ R1)
        elif j.code == FREE:
            R0, R1 = quat_to_rot(q0[iq + 3:iq + 7]), quat_to_rot(q1[iq + 3:iq + 7])
            out[iv:iv + 3] = so3_log(R0.T @ R1)
            out[iv + 3:iv + 6] = R0.T @ (q1[iq:iq + 3] - q0[iq:iq + 3])
        else:
            out[iv:iv + j.nv] = q1[iq:iq + j.nq] - q0[iq:iq + j.nq]
    return out


def tangent_kinematics(model: Model, q, v) -> tuple[np.ndarray, np.ndarray]:
    """The linearized configuration rate in the chart of :func:`integrate`.

    With ``q = q0 (+) dq`` the increment moves as ``d(dq)/dt = f(dq, v)``.
    For joints whose ``qdot = v`` the derivatives are ``(0, 1)``; a spherical
    joint contributes ``-1/2 w~`` (``w`` its angular velocity), a free joint
    additionally ``-v_lin~`` in the rows of its position increment.

    Parameters
    ----------
    model : Model
        The model.
    q : array_like
        (nq,) configuration.
    v : array_like
        (nv,) generalized velocity (m/s, rad/s).

    Returns
    -------
    tuple of ndarray
        ``(df/d(dq), df/dv)`` at ``dq = 0``, each (nv, nv) (1/s and dimensionless).
    """
    v = np.asarray(v, float)
    nv = model.nv
    A = np.zeros((nv, nv))
    for i in range(1, model.nbodies):
        j = model.joints[i]
        iv = model.idx_v[i]
        if j.code in (SPHERICAL, FREE):
            A[iv:iv + 3, iv:iv + 3] = -0.5 * skew(v[iv:iv + 3])
            if j.code == FREE:
                A[iv + 3:iv + 6, iv:iv + 3] = -skew(v[iv + 3:iv + 6])
    return A, np.eye(nv)


def configuration_jacobian(model: Model, q) -> np.ndarray:
    """``d(q (+) dq)/d(dq)`` at ``dq = 0``: tangent increments to stored coordinates.

    Parameters
    ----------
    model : Model
        The model.
    q : array_like
        (nq,) configuration.

    Returns
    -------
    ndarray
        (nq, nv), quaternion entries included.
    """
    q = np.asarray(q, float)
    E = np.eye(model.nv)
    return np.column_stack([_kernels.qdot(model._h, q, E[:, k]) for k in range(model.nv)]) \
        if model.nv else np.zeros((model.nq, 0))
