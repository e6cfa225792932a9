"""Discrete LQR state feedback, with integral action, and the LQG servo.

All designs work on a discrete-time linear model at the controller's sample
time (``control.c2d(linearize(plant), h, "zoh")``), in the deviation
variables of that model: the controller outputs are input deviations
``du`` (add the operating input ``u0``), its state inputs are state
deviations, references are deviations of the tracked outputs from ``y0``.

Gains come from the discrete algebraic Riccati equation
``P = A'PA - A'PB (R + B'PB)^-1 B'PA + Q``, ``K = (R + B'PB)^-1 B'PA``,
solved with :func:`scipy.linalg.solve_discrete_are`.
"""
from __future__ import annotations

from typing import Sequence

import control
import numpy as np
from scipy.linalg import solve_discrete_are

from ..errors import InputError


def _discrete(sys: control.StateSpace, what: str) -> float:
    dt = sys.dt
    if not isinstance(sys, control.StateSpace) or dt in (None, 0, True) or not dt > 0:
        raise InputError(f"{what} needs a discrete-time control.StateSpace with numeric dt > 0 "
                         f"(use control.c2d(sys, h, 'zoh')), got dt = {dt!r}")
    return float(dt)


def _weights(Q, n: int, what: str) -> np.ndarray:
    Q = np.atleast_2d(np.asarray(Q, float))
    if Q.shape == (1, n) or Q.shape == (n, 1):
        Q = np.diag(Q.reshape(-1))
    if Q.shape == (1, 1) and n > 1:
        Q = Q[0, 0] * np.eye(n)
    if Q.shape != (n, n) or not np.all(np.isfinite(Q)):
        raise InputError(f"{what} must be a finite ({n}, {n}) matrix or {n} diagonal entries")
    return 0.5 * (Q + Q.T)


def carry_units(model: control.InputOutputSystem, design: control.InputOutputSystem) -> control.InputOutputSystem:
    """Give ``design`` the units of the signals it shares with ``model``.

    The units are ``model.signal_units`` (set by :func:`mbfmu.control.linearize`);
    a ``<output>_ref`` input takes its output's unit. A model that lost them
    (``control.c2d`` keeps labels, not attributes) passes none: give the
    plant as ``units=`` to :class:`~mbfmu.cosim.ControlUnit` or
    :func:`~mbfmu.control.export.export_fmu` instead.

    Parameters
    ----------
    model : control.InputOutputSystem
        The model the design was made on.
    design : control.InputOutputSystem
        The controller or filter; its ``signal_units`` are set.

    Returns
    -------
    control.InputOutputSystem
        ``design``.
    """
    known = dict(getattr(model, "signal_units", None) or {})
    labels = [*design.input_labels, *design.output_labels]
    units = {lab: known.get(lab, known.get(lab[:-len("_ref")] if lab.endswith("_ref") else "", ""))
             for lab in labels}
    design.signal_units = {lab: u for lab, u in units.items() if u}
    return design


def dlqr_gain(A, B, Q, R) -> tuple[np.ndarray, np.ndarray]:
    """State-feedback gain ``K`` (u = -K x) and Riccati solution ``P``.

    Parameters
    ----------
    A : ndarray, shape (n, n)
        Discrete-time state matrix.
    B : ndarray, shape (n, m)
        Input matrix.
    Q : ndarray, shape (n, n)
        State weight, symmetric positive semi-definite.
    R : ndarray, shape (m, m)
        Input weight, symmetric positive definite.

    Returns
    -------
    K : ndarray, shape (m, n)
        The gain.
    P : ndarray, shape (n, n)
        The stabilizing solution of the discrete algebraic Riccati equation.
    """
    P = solve_discrete_are(A, B, Q, R)
    K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
    return K, P


def _tracked(sys: control.StateSpace, track: Sequence[str] | None) -> list[int]:
    names = list(sys.output_labels)
    if track is None:
        return list(range(sys.noutputs))
    idx = []
    for t in track:
        if t not in names:
            raise InputError(f"tracked output {t!r} is not an output of {sys.name!r}: {names}")
        idx.append(names.index(t))
    return idx


def augment_integral(sys: control.StateSpace, track: Sequence[str] | None = None
                     ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """``(Aa, Ba, idx)`` of the plant with integrators of the tracking error
    ``xi_{k+1} = xi_k + h (r_k - y_k)`` of the outputs ``track``."""
    h = _discrete(sys, "augment_integral")
    idx = _tracked(sys, track)
    n, p = sys.nstates, len(idx)
    Ct, Dt = sys.C[idx], sys.D[idx]
    Aa = np.block([[sys.A, np.zeros((n, p))], [-h * Ct, np.eye(p)]])
    Ba = np.vstack([sys.B, -h * Dt])
    return Aa, Ba, idx


def lqr_servo(sys: control.StateSpace, Q, R, Qi=None, track: Sequence[str] | None = None,
              name: str = "lqr") -> control.StateSpace:
    """LQR state feedback with integral action on the tracked outputs.

    Parameters
    ----------
    sys : control.StateSpace
        Discrete-time plant model (deviation variables).
    Q : array_like
        State weight (n, n) or its diagonal.
    R : array_like
        Input weight (m, m) or its diagonal.
    Qi : array_like, optional
        Weight of the integrated tracking errors (p, p) or diagonal; ``None``
        gives plain LQR (no integrators, no reference inputs).
    track : sequence of str, optional
        Names of the tracked outputs (default: all outputs).
    name : str
        Name of the python-control system (its unit name in a co-simulation).

    Returns
    -------
    control.StateSpace
        Discrete (dt of ``sys``): inputs ``[<output>_ref ...] + state names``,
        outputs the plant input names (deviations), states ``xi[...]``;
        ``u = -Kx x - Ki xi``. Attributes ``K`` (full augmented gain), ``Kx``,
        ``Ki``, ``P``.
    """
    h = _discrete(sys, "lqr_servo")
    n, m = sys.nstates, sys.ninputs
    Rm = _weights(R, m, "R")
    if Qi is None:
        K, P = dlqr_gain(sys.A, sys.B, _weights(Q, n, "Q"), Rm)
        ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, n)), np.zeros((m, 0)), -K, h,
                          inputs=list(sys.state_labels), outputs=list(sys.input_labels), name=name)
        ctrl.K, ctrl.Kx, ctrl.Ki, ctrl.P = K, K, np.zeros((m, 0)), P
        return carry_units(sys, ctrl)
    Aa, Ba, idx = augment_integral(sys, track)
    p = len(idx)
    Qa = np.zeros((n + p, n + p))
    Qa[:n, :n] = _weights(Q, n, "Q")
    Qa[n:, n:] = _weights(Qi, p, "Qi")
    K, P = dlqr_gain(Aa, Ba, Qa, Rm)
    Kx, Ki = K[:, :n], K[:, n:]
    Ct, Dt = sys.C[idx], sys.D[idx]
    if np.any(Dt):
        raise InputError("lqr_servo: tracked outputs with direct feedthrough are not supported")
    refs = [f"{sys.output_labels[i]}_ref" for i in idx]
    # xi+ = xi + h r - h Ct x ;  u = -Ki xi - Kx x
    A = np.eye(p)
    B = np.hstack([h * np.eye(p), -h * Ct])
    C = -Ki
    D = np.hstack([np.zeros((m, p)), -Kx])
    ctrl = control.ss(A, B, C, D, h, inputs=refs + list(sys.state_labels), outputs=list(sys.input_labels),
                      states=[f"xi[{k + 1}]" for k in range(p)], name=name)
    ctrl.K, ctrl.Kx, ctrl.Ki, ctrl.P = K, Kx, Ki, P
    return carry_units(sys, ctrl)


def lqg_servo(sys: control.StateSpace, lqr: control.StateSpace, kalman: control.StateSpace,
              track: Sequence[str] | None = None, name: str = "lqg") -> control.StateSpace:
    """Output-feedback servo: Kalman filter (current estimator) + LQR with
    integral action of the *measured* tracking error.

    Inputs ``[<output>_ref ...] + output names``; outputs the plant input
    names (deviations); states ``[xhat[...] (a priori estimate); xi[...]]``.
    ``kalman`` is the system of :func:`mbfmu.control.kalman.kalman_filter`
    (its gain ``M``), ``lqr`` the one of :func:`lqr_servo`. Requires ``D = 0``.

    Parameters
    ----------
    sys : control.StateSpace
        Discrete-time plant model (deviation variables), ``D = 0``.
    lqr : control.StateSpace
        The servo of :func:`lqr_servo` designed on ``sys`` (its ``Kx``, ``Ki``).
    kalman : control.StateSpace
        The filter of :func:`~mbfmu.control.kalman.kalman_filter` on ``sys``.
    track : sequence of str, optional
        Names of the tracked outputs (default: all outputs), as in ``lqr``.
    name : str
        Name of the python-control system (its unit name in a co-simulation).

    Returns
    -------
    control.StateSpace
        Discrete, with the sample time of ``sys``.
    """
    h = _discrete(sys, "lqg_servo")
    if np.any(sys.D):
        raise InputError("lqg_servo: the plant model must have no direct feedthrough (D = 0)")
    A, B, C = sys.A, sys.B, sys.C
    n, m, ny = sys.nstates, sys.ninputs, sys.noutputs
    M = kalman.M
    Kx, Ki = lqr.Kx, lqr.Ki
    idx = _tracked(sys, track)
    p = len(idx)
    if Ki.shape[1] != p:
        raise InputError(f"lqg_servo: the LQR has {Ki.shape[1]} integrators, {p} outputs are tracked")
    In = np.eye(n)
    L1 = In - M @ C                      # xc = L1 xhat + M y
    Sy = np.zeros((p, ny))
    Sy[np.arange(p), idx] = 1.0
    # u = -Kx L1 xhat - Ki xi - Kx M y
    Cu = np.hstack([-Kx @ L1, -Ki])
    Du = np.hstack([np.zeros((m, p)), -Kx @ M])
    # xhat+ = A xc + B u ; xi+ = xi + h (r - y_t)
    Axx = A @ L1 + B @ Cu[:, :n]
    Axi = B @ Cu[:, n:]
    Bx = np.hstack([np.zeros((n, p)), A @ M + B @ Du[:, p:]])
    Aa = np.block([[Axx, Axi], [np.zeros((p, n)), np.eye(p)]])
    Ba = np.vstack([Bx, np.hstack([h * np.eye(p), -h * Sy])])
    refs = [f"{sys.output_labels[i]}_ref" for i in idx]
    ctrl = control.ss(Aa, Ba, Cu, Du, h, inputs=refs + list(sys.output_labels),
                      outputs=list(sys.input_labels),
                      states=[f"xhat[{k + 1}]" for k in range(n)] + [f"xi[{k + 1}]" for k in range(p)],
                      name=name)
    return carry_units(sys, ctrl)
