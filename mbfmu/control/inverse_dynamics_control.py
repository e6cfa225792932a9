"""Computed-torque (inverse-dynamics) control of a rigid tree.

At each sample the commanded acceleration
``a_cmd = qdd_ref + Kp (q_ref - q) + Kd (qd_ref - qd)`` is turned into joint
forces by the engine's recursive Newton-Euler algorithm, with the model's
force elements (joint springs, dampers, point springs) compensated::

    tau = rnea(q, qd, a_cmd, f_passive) - tau_passive(q, qd)

With a perfect model and continuous feedback the tracking error obeys
``e'' + Kd e' + Kp e = 0`` (Spong, Hutchinson & Vidyasagar, *Robot Modeling
and Control*, 2006, sec. 8.3). Sampled at ``dt`` with a zero-order hold,
this holds up to ``O(dt)`` terms.
"""
from __future__ import annotations


import control
import numpy as np

from ..dynamics import _kernels
from ..dynamics.model import Model
from ..errors import InputError


def _gain(K, n: int, what: str) -> np.ndarray:
    K = np.asarray(K, float)
    if K.ndim == 0:
        K = K * np.eye(n)
    elif K.ndim == 1:
        K = np.diag(K)
    if K.shape != (n, n) or not np.all(np.isfinite(K)):
        raise InputError(f"computed_torque: {what} must be a scalar, {n} values or ({n}, {n})")
    return K


def computed_torque(model: Model, Kp, Kd, dt: float, tau_max=None,
                    measured: tuple[str, str] = ("q", "v"), reference: tuple[str, str, str] = (
                        "q_ref", "qd_ref", "qdd_ref"), output: str = "tau",
                    name: str = "computed_torque") -> control.NonlinearIOSystem:
    """Computed-torque controller as a static discrete-time python-control system.

    Parameters
    ----------
    model : Model
        The controller's model of the plant (no quaternion joints: nq == nv).
    Kp, Kd : scalar, (nv,) or (nv, nv)
        Gains, 1/s^2 and 1/s.
    dt : float
        Sample time, s.
    tau_max : scalar or (nv,), optional
        Symmetric limit of the joint forces (N m or N).
    measured, reference, output : names
        Vector base names; inputs are ``ref_q[1..nv], ref_qd[..], ref_qdd[..],
        q[..], v[..]`` (with the given bases), outputs ``tau[1..nv]``.
    name : str
        Name of the python-control system (its unit name in a co-simulation).

    Returns
    -------
    control.NonlinearIOSystem
        Static (no states), discrete with sample time ``dt``.
    """
    if model.nq != model.nv:
        raise InputError("computed_torque: quaternion joints are not supported (nq != nv)")
    if not dt > 0:
        raise InputError(f"computed_torque: dt = {dt} s must be > 0")
    n = model.nv
    Kp, Kd = _gain(Kp, n, "Kp"), _gain(Kd, n, "Kd")
    lim = None if tau_max is None else np.broadcast_to(np.asarray(tau_max, float), (n,))
    h = model._h

    def vec(base):
        return [f"{base}[{k + 1}]" for k in range(n)]

    inputs = vec(reference[0]) + vec(reference[1]) + vec(reference[2]) + vec(measured[0]) + vec(measured[1])

    def out(t, x, u, params=None):
        qr, vr, ar, q, v = (u[k * n:(k + 1) * n] for k in range(5))
        a_cmd = ar + Kp @ (qr - q) + Kd @ (vr - v)
        tau_p, f_p = _kernels.passive_forces(h, q, v)
        tau = _kernels.rnea(h, q, v, a_cmd, f_p) - tau_p
        return tau if lim is None else np.clip(tau, -lim, lim)

    sys = control.NonlinearIOSystem(None, out, inputs=inputs, outputs=vec(output), dt=dt, name=name)
    sys.gains = dict(Kp=Kp, Kd=Kd, tau_max=lim)
    return sys
