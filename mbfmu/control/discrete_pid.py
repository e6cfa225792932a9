"""Discrete PID controller with derivative filter and anti-windup.

At sample ``k`` (period ``h``), with ``e_k = r_k - y_k``::

    P_k = Kp e_k
    D_k = a D_{k-1} + b (s_k - s_{k-1}),   a = Tf / (Tf + h),  b = Kd / (Tf + h)
    v_k = P_k + I_k + D_k,   u_k = sat(v_k, u_min, u_max)
    I_{k+1} = I_k + Ki h e_k + (h / Tt) (u_k - v_k)

with ``s = -y`` (derivative on the measurement, the default: no kick when
the reference steps) or ``s = e``. The derivative is a first-order filtered difference (backward Euler of
``Kd s / (Tf s + 1)``); the integrator is forward Euler; anti-windup is
back-calculation with tracking time ``Tt`` (Åström & Hägglund, *Advanced PID
Control*, 2006, sec. 3.5): while the output saturates the integrator is
pulled towards the value that makes ``v = u``. Without saturation the
transfer function from ``e`` to ``u`` (from ``-y`` to ``u`` with the
derivative on the measurement) is::

    C(z) = Kp + Ki h / (z - 1) + b (z - 1) / (z - a)
"""
from __future__ import annotations

import control
import numpy as np

from ..errors import InputError


def pid(Kp: float, Ki: float = 0.0, Kd: float = 0.0, dt: float = 0.01, Tf: float | None = None,
        u_min: float = -np.inf, u_max: float = np.inf, Tt: float | None = None,
        reference: str = "r", measurement: str = "y", output: str = "u",
        derivative_on: str = "measurement", name: str = "pid") -> control.NonlinearIOSystem:
    """Discrete PID as a python-control system (sample time ``dt``).

    Parameters
    ----------
    Kp, Ki, Kd : float
        Gains (units of u per unit of e; per s; times s).
    dt : float
        Sample time, s.
    Tf : float, optional
        Derivative filter time constant, s (default ``dt``).
    u_min, u_max : float
        Output limits.
    Tt : float, optional
        Anti-windup tracking time constant, s (default ``sqrt(Td Ti)`` when
        both exist, else ``10 dt``); ``np.inf`` disables anti-windup.
    reference, measurement, output : str
        Signal names (inputs are ``[reference, measurement]``).
    derivative_on : str
        ``"measurement"`` (D acts on ``-y``) or ``"error"`` (on ``e``).
    name : str
        Name of the python-control system (its unit name in a co-simulation).

    Returns
    -------
    control.NonlinearIOSystem
        States ``[I, D, s_prev]``; ``.linear()`` gives the unsaturated
        :class:`control.StateSpace` from ``e`` to ``u`` (the regulator's
        feedback path, ``C(z)`` above).
    """
    vals = dict(Kp=Kp, Ki=Ki, Kd=Kd, dt=dt)
    for k, v in vals.items():
        if not np.isfinite(v):
            raise InputError(f"pid: {k} = {v} must be finite")
    if dt <= 0:
        raise InputError(f"pid: dt = {dt} s must be > 0")
    Tf = dt if Tf is None else float(Tf)
    if Tf < 0:
        raise InputError(f"pid: Tf = {Tf} s must be >= 0")
    if u_min >= u_max:
        raise InputError(f"pid: u_min {u_min} must be below u_max {u_max}")
    if derivative_on not in ("measurement", "error"):
        raise InputError(f"pid: derivative_on = {derivative_on!r} must be 'measurement' or 'error'")
    on_error = derivative_on == "error"
    if Tt is None:
        Tt = np.sqrt((Kd / Kp) * (Kp / Ki)) if (Kp and Ki and Kd) else 10 * dt
    if Tt <= 0:
        raise InputError(f"pid: Tt = {Tt} s must be > 0")
    a = Tf / (Tf + dt)
    b = Kd / (Tf + dt)
    kt = 0.0 if np.isinf(Tt) else dt / Tt

    def parts(x, u):
        e = u[0] - u[1]
        s = e if on_error else -u[1]
        D = a * x[1] + b * (s - x[2])
        v = Kp * e + x[0] + D
        return e, s, D, v, min(max(v, u_min), u_max)

    def update(t, x, u, params=None):
        e, s, D, v, us = parts(x, u)
        return np.array([x[0] + Ki * dt * e + kt * (us - v), D, s])

    def out(t, x, u, params=None):
        return np.array([parts(x, u)[4]])

    sys = control.NonlinearIOSystem(update, out, inputs=[reference, measurement], outputs=[output],
                                    states=["I", "D", "s_prev"], dt=dt, name=name)

    def linear() -> control.StateSpace:
        # states [I, D, e_prev], input e, output u (no saturation)
        A = np.array([[1.0, 0.0, 0.0], [0.0, a, -b], [0.0, 0.0, 0.0]])
        B = np.array([[Ki * dt], [b], [1.0]])
        C = np.array([[1.0, a, -b]])
        D = np.array([[Kp + b]])
        return control.ss(A, B, C, D, dt, inputs=["e"], outputs=[output], states=["I", "D", "s_prev"])

    sys.linear = linear
    sys.gains = dict(Kp=Kp, Ki=Ki, Kd=Kd, Tf=Tf, Tt=Tt, u_min=u_min, u_max=u_max)
    sys.derivative_on = derivative_on
    return sys
