"""Holonomic constraints on a tree: loop closures and prescribed motion.

Constraints ``phi(q, t) = 0`` with Jacobian ``J = d phi / dq`` (in velocity
coordinates) add forces ``J^T lambda``. Two solution methods:

* ``"lagrange"``: solve ``[M J^T; J 0] [a; -lambda] = [tau - h; gamma]``;
* ``"nullspace"``: the orthogonal-complement method (Kane's equations): with
  ``C`` an orthonormal basis of the null space of ``J`` (``J C = 0``) and
  ``a = a_p + C z``, ``J a_p = gamma``: ``C^T M C z = C^T (tau - h - M a_p)``.

``gamma = -dJ/dt v`` comes from the body accelerations at zero joint
acceleration. Drift is controlled by Baumgarte stabilization
(``gamma - 2 alpha phi_dot - alpha^2 phi``) and, in :meth:`ConstrainedModel.project`,
by projecting positions (Gauss-Newton to ``tol``) and velocities
(mass-weighted) back onto the constraint manifold after each step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError, SimulationError
from . import _kernels
from .algorithms import body_accelerations, crba, frame_jacobian, nonlinear_effects
from .integrators import rk4_step
from .model import Model


@dataclass(frozen=True)
class PointConstraint:
    """Point ``p_A`` on ``body_a`` coincides with point ``p_B`` on ``body_b``
    (points in the bodies' frames, m), along the chosen world ``axes``
    (indices 0, 1, 2; default all three). A planar loop uses the two in-plane
    axes, since the third row would be identically satisfied (and singular)."""

    body_a: int | str
    p_A: Sequence[float]
    body_b: int | str
    p_B: Sequence[float]
    axes: Sequence[int] = (0, 1, 2)


@dataclass(frozen=True)
class PrescribedMotion:
    """Velocity coordinate ``index`` follows ``q(t)`` given by ``motion(t) ->
    (value, rate, acceleration)`` (rad or m and their rates)."""

    index: int
    motion: Callable[[float], tuple[float, float, float]]


def _point_world(model: Model, R, p, body: int, r: np.ndarray) -> np.ndarray:
    return p[body] + R[body] @ r


def _point_bias_acc(model: Model, R, vel, acc0, body: int, r: np.ndarray) -> np.ndarray:
    """World acceleration of a body point at zero joint acceleration (gravity excluded)."""
    if body == 0:
        return np.zeros(3)
    w, u = vel[body, :3], vel[body, 3:]
    al, a = acc0[body, :3], acc0[body, 3:]
    return R[body] @ (a + np.cross(al, r) + np.cross(w, u + np.cross(w, r)))


class ConstrainedModel:
    """A model plus holonomic constraints, with forward dynamics and drift control.

    Parameters
    ----------
    model : Model
    constraints : sequence of PointConstraint / PrescribedMotion
    method : {"lagrange", "nullspace"}
    baumgarte : float
        Stabilization rate alpha (1/s); 0 disables it.
    """

    def __init__(self, model: Model, constraints, method: str = "lagrange", baumgarte: float = 0.0):
        if method not in ("lagrange", "nullspace"):
            raise InputError(f"constraint method {method!r} is not 'lagrange' or 'nullspace'")
        self.model = model
        self.method = method
        self.alpha = float(baumgarte)
        self.points = []
        self.prescribed = []
        for c in constraints:
            if isinstance(c, PointConstraint):
                ba, bb = model.body_index(c.body_a), model.body_index(c.body_b)
                axes = tuple(int(k) for k in c.axes)
                if not axes or any(k not in (0, 1, 2) for k in axes):
                    raise InputError(f"point constraint axes {c.axes!r} must be a subset of (0, 1, 2)")
                self.points.append((ba, np.asarray(c.p_A, float), bb, np.asarray(c.p_B, float), axes))
            elif isinstance(c, PrescribedMotion):
                if not 0 <= c.index < model.nv:
                    raise InputError(f"prescribed coordinate {c.index} out of range (nv = {model.nv})")
                self.prescribed.append(c)
            else:
                raise InputError(f"unknown constraint {c!r}")
        self.m = sum(len(pc[4]) for pc in self.points) + len(self.prescribed)
        if model.nq != model.nv and self.m:
            raise InputError("constraints are supported on models without quaternion joints (nq == nv)")

    # ---- constraint functions ---------------------------------------------
    def phi(self, q, t: float = 0.0) -> np.ndarray:
        """Constraint violation (m; m or rad for prescribed motion), shape (m,)."""
        R, p, _ = _kernels.kinematics(self.model._h, q)
        out = []
        for ba, ra, bb, rb, axes in self.points:
            d = _point_world(self.model, R, p, bb, rb) - _point_world(self.model, R, p, ba, ra)
            out.extend(d[list(axes)])
        for c in self.prescribed:
            out.append(q[c.index] - c.motion(t)[0])
        return np.array(out)

    def jacobian(self, q) -> np.ndarray:
        """Constraint Jacobian J (m, nv)."""
        rows = []
        for ba, ra, bb, rb, axes in self.points:
            Jb = frame_jacobian(self.model, q, bb, rb)[3:] if bb else np.zeros((3, self.model.nv))
            Ja = frame_jacobian(self.model, q, ba, ra)[3:] if ba else np.zeros((3, self.model.nv))
            rows.append((Jb - Ja)[list(axes)])
        for c in self.prescribed:
            e = np.zeros((1, self.model.nv))
            e[0, c.index] = 1.0
            rows.append(e)
        return np.vstack(rows) if rows else np.zeros((0, self.model.nv))

    def gamma(self, q, v, t: float = 0.0) -> np.ndarray:
        """``-dJ/dt v`` plus the prescribed accelerations (m, ...)."""
        R, p, vel = _kernels.kinematics(self.model._h, q, v)
        acc0 = body_accelerations(self.model, q, v, np.zeros(self.model.nv))
        out = []
        for ba, ra, bb, rb, axes in self.points:
            d = _point_bias_acc(self.model, R, vel, acc0, bb, rb) - _point_bias_acc(self.model, R, vel, acc0, ba, ra)
            out.extend(-d[list(axes)])
        for c in self.prescribed:
            out.append(c.motion(t)[2])
        return np.array(out)

    def phi_dot(self, q, v, t: float = 0.0) -> np.ndarray:
        """Time derivative of phi."""
        J = self.jacobian(q)
        pd = J @ v
        for k, c in enumerate(self.prescribed):
            pd[len(pd) - len(self.prescribed) + k] -= c.motion(t)[1]
        return pd

    # ---- dynamics -------------------------------------------------------------
    def accelerations(self, q, v, tau, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Constrained accelerations ``a`` (nv,) and multipliers ``lambda`` (m,):
        the generalized constraint forces are ``J^T lambda``."""
        q = np.asarray(q, float)
        v = np.asarray(v, float)
        M = crba(self.model, q)
        rhs = np.asarray(tau, float) - nonlinear_effects(self.model, q, v)
        tau_p, f_p = _kernels.passive_forces(self.model._h, q, v, tau)  # drives read their commands in tau
        rhs = rhs + tau_p + self._spring_torques(q, f_p)
        if self.m == 0:
            return np.linalg.solve(M, rhs), np.zeros(0)
        J = self.jacobian(q)
        g = self.gamma(q, v, t)
        if self.alpha:
            g = g - 2 * self.alpha * self.phi_dot(q, v, t) - self.alpha ** 2 * self.phi(q, t)
        if self.method == "lagrange":
            n = self.model.nv
            K = np.zeros((n + self.m, n + self.m))
            K[:n, :n] = M
            K[:n, n:] = J.T
            K[n:, :n] = J
            sol = np.linalg.lstsq(K, np.concatenate([rhs, g]), rcond=None)[0]
            return sol[:n], -sol[n:]
        # orthogonal complement (null space) method
        U, s, Vt = np.linalg.svd(J)
        rank = int(np.sum(s > 1e-10 * max(s.max(), 1e-300)))
        C = Vt[rank:].T
        a_p = np.linalg.lstsq(J, g, rcond=None)[0]
        z = np.linalg.solve(C.T @ M @ C, C.T @ (rhs - M @ a_p))
        a = a_p + C @ z
        lam = np.linalg.lstsq(J.T, M @ a - rhs, rcond=None)[0]
        return a, lam

    def _spring_torques(self, q, f_p: np.ndarray) -> np.ndarray:
        if not (self.model.springs or self.model.contacts or self.model.cables):
            return np.zeros(self.model.nv)
        z = np.zeros(self.model.nv)
        # generalized forces of body wrenches: -rnea contribution of f_ext alone
        return -(_kernels.rnea(self.model._h, q, z, z, f_p, False))

    # ---- drift control ------------------------------------------------------
    def project(self, q, v, t: float = 0.0, tol: float = 1e-12, max_iter: int = 20):
        """Project ``(q, v)`` onto the constraint manifold: Gauss-Newton
        (minimum-norm) position correction until ``|phi| < tol``, then the
        mass-weighted velocity projection onto ``J v = phi_t``."""
        q = np.array(q, dtype=float)
        for _ in range(max_iter):
            ph = self.phi(q, t)
            if not ph.size or np.max(np.abs(ph)) < tol:
                break
            J = self.jacobian(q)
            q -= np.linalg.lstsq(J, ph, rcond=None)[0]
        else:
            raise SimulationError(f"constraint projection did not converge: |phi| = {np.max(np.abs(ph)):.3g}")
        if self.m:
            M = crba(self.model, q)
            J = self.jacobian(q)
            target = self.phi_dot(q, np.zeros(self.model.nv), t)  # -(prescribed rates)
            r = J @ v + target
            Minv_JT = np.linalg.solve(M, J.T)
            v = v - Minv_JT @ np.linalg.lstsq(J @ Minv_JT, r, rcond=None)[0]
        return q, np.asarray(v, float)

    def simulate(self, q0, v0, t_end: float, h: float, tau=None, project: bool = True):
        """RK4 with step ``h`` (s) from ``t = 0`` to ``t_end``, projecting after
        every step. Returns ``(t, Q, V)``."""
        n = int(round(t_end / h))
        nv = self.model.nv
        tau = np.zeros(nv) if tau is None else np.asarray(tau, float)
        q, v = (self.project(q0, v0) if project else (np.asarray(q0, float), np.asarray(v0, float)))
        Q = np.empty((n + 1, nv))
        V = np.empty((n + 1, nv))
        Q[0], V[0] = q, v

        def f(t, x):
            a, _ = self.accelerations(x[:nv], x[nv:], tau, t)
            return np.concatenate([x[nv:], a])

        x = np.concatenate([q, v])
        for k in range(n):
            x = rk4_step(f, k * h, x, h)
            if project:
                qn, vn = self.project(x[:nv], x[nv:], (k + 1) * h)
                x = np.concatenate([qn, vn])
            Q[k + 1], V[k + 1] = x[:nv], x[nv:]
        return h * np.arange(n + 1), Q, V
