"""Discrete Kalman filter from a linear model (current-estimator form).

Model: ``x_{k+1} = A x_k + B u_k + G w_k``, ``y_k = C x_k + D u_k + v_k`` with
``cov(w) = Qn``, ``cov(v) = Rn``. With the a priori covariance ``P`` (the
stabilizing solution of the filter Riccati equation, or the k-th iterate of
its recursion)::

    M = P C' (C P C' + Rn)^-1                 (measurement-update gain)
    xhat_{k|k}   = xhat_{k|k-1} + M (y_k - C xhat_{k|k-1} - D u_k)
    xhat_{k+1|k} = A xhat_{k|k} + B u_k
    P+ = A (P - M C P) A' + G Qn G'

The predictor gain of python-control's ``dlqe`` is ``L = A M``.
"""
from __future__ import annotations

import control
import numpy as np
from scipy.linalg import solve_discrete_are

from ..errors import InputError
from .lqr import _discrete, _weights, carry_units


def kalman_gain(A, C, Qw, Rn) -> tuple[np.ndarray, np.ndarray]:
    """Steady-state ``(M, P)``: measurement-update gain and a priori covariance.

    Parameters
    ----------
    A : ndarray, shape (n, n)
        Discrete-time state matrix.
    C : ndarray, shape (ny, n)
        Output matrix.
    Qw : ndarray, shape (n, n)
        Process noise covariance already mapped to the states (``G Qn G'``).
    Rn : ndarray, shape (ny, ny)
        Measurement noise covariance, in the outputs' units squared.

    Returns
    -------
    M : ndarray, shape (n, ny)
        Measurement-update gain.
    P : ndarray, shape (n, n)
        A priori error covariance.
    """
    P = solve_discrete_are(A.T, C.T, Qw, Rn)
    M = P @ C.T @ np.linalg.inv(C @ P @ C.T + Rn)
    return M, P


def riccati_iterates(A, C, Qw, Rn, P0, n: int) -> list[np.ndarray]:
    """Gains ``M_k`` of the time-varying filter from the initial covariance ``P0``."""
    P = np.asarray(P0, float)
    gains = []
    for _ in range(n):
        M = P @ C.T @ np.linalg.inv(C @ P @ C.T + Rn)
        gains.append(M)
        P = A @ (P - M @ C @ P) @ A.T + Qw
        P = 0.5 * (P + P.T)
    return gains


def kalman_filter(sys: control.StateSpace, Qn, Rn, G=None, name: str = "kalman") -> control.StateSpace:
    """Steady-state Kalman filter of a discrete-time model.

    Parameters
    ----------
    sys : control.StateSpace
        Discrete-time model (deviation variables).
    Qn : array_like
        Process noise covariance (nw, nw) or diagonal; ``G`` maps it to the
        states (default identity: ``nw = n``).
    Rn : array_like
        Measurement noise covariance (ny, ny) or diagonal.
    G : array_like, optional
        Noise input matrix (n, nw).
    name : str
        Name of the python-control system (its unit name in a co-simulation).

    Returns
    -------
    control.StateSpace
        Inputs ``[plant inputs; plant outputs]``; outputs the current state
        estimate ``xhat_{k|k}`` named after the model's states (so it feeds
        :func:`~mbfmu.control.lqr.lqr_servo` by name); state the a priori
        estimate. Attributes ``M`` (update gain), ``L = A M`` (predictor gain,
        python-control's ``dlqe``), ``P`` (a priori covariance).
    """
    h = _discrete(sys, "kalman_filter")
    A, B, C, D = sys.A, sys.B, sys.C, sys.D
    n, ny = sys.nstates, sys.noutputs
    G = np.eye(n) if G is None else np.atleast_2d(np.asarray(G, float))
    if G.shape[0] != n:
        raise InputError(f"kalman_filter: G must have {n} rows, got {G.shape}")
    Q = _weights(Qn, G.shape[1], "Qn")
    R = _weights(Rn, ny, "Rn")
    M, P = kalman_gain(A, C, G @ Q @ G.T, R)
    L1 = np.eye(n) - M @ C
    Af = A @ L1
    Bf = np.hstack([B - A @ M @ D, A @ M])
    Cf = L1
    Df = np.hstack([-M @ D, M])
    # python-control forbids a state name equal to an output name: estimates are outputs
    kf = control.ss(Af, Bf, Cf, Df, h, inputs=list(sys.input_labels) + list(sys.output_labels),
                    outputs=list(sys.state_labels), states=[f"xhat[{k + 1}]" for k in range(n)], name=name)
    kf.M, kf.L, kf.P = M, A @ M, P
    return carry_units(sys, kf)
