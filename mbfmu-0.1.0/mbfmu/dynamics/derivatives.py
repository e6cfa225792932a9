"""Exact first derivatives of the rigid-body dynamics (forward-mode tangents).

The recursive Newton-Euler algorithm is run once more in Python on *tangent
numbers*: every quantity carries its value and its directional derivatives
along ``D`` seed directions (the joint-space increments ``dq``, ``dv``,
``da``). Products follow the product rule, so the result is the exact
derivative of the same recursion the kernels evaluate (no step size, no
truncation error), as in forward-mode automatic differentiation of RNEA
(cf. Carpentier & Mansard, "Analytical derivatives of rigid body dynamics
algorithms", RSS 2018, whose results Pinocchio's ``computeRNEADerivatives``
returns).

Configuration derivatives are taken in the tangent space, as Pinocchio does:
a configuration increment ``dq`` (nv,) moves ``q`` to ``q (+) dq`` (see
:func:`integrate`), so for a spherical joint ``R(q (+) dq) = R(q) Exp(dq)``
(``dq`` in the body frame) and for a free joint additionally
``p(q (+) dq) = p + R(q) dq_lin``. For the other joints ``q (+) dq = q + dq``.

Forward dynamics derivatives follow from ``rnea(q, v, aba(q, v, tau)) = tau``:
``d(qdd)/dq = -M^-1 d(rnea)/dq``, ``d(qdd)/dv = -M^-1 d(rnea)/dv``,
``d(qdd)/dtau = M^-1``. :func:`forward_dynamics_derivatives` adds the
kernels' force elements (joint springs, dampers, range limits,
point-to-point spring-dampers and joint drives, with the laws of
``mb_passive_forces`` in ``csrc/algorithms.c`` and ``csrc/drives.c``), so it differentiates exactly what ``_kernels.rhs``
computes; models with sphere-plane contacts or cables are refused
(:class:`~mbfmu.errors.ModelError`).

Cost: O(N D) per call in Python with ``D = 3 nv``; meant for linearization
and control design, not for the simulation loop.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from . import _kernels
from .joints import FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL
from .model import Model, check_vector
from .spatial import rot_to_quat
from .spatial import skew as _skew3


# --------------------------------------------------------------------------- tangent numbers
class _Tan:
    """A value (any shape) with its derivatives along D directions.

    ``val`` has shape ``s``; ``dot`` has shape ``(D,) + s``.
    """

    __slots__ = ("val", "dot")

    def __init__(self, val, dot):
        self.val = np.asarray(val, float)
        self.dot = np.asarray(dot, float)

    def __add__(self, o):
        if isinstance(o, _Tan):
            return _Tan(self.val + o.val, self.dot + o.dot)
        return _Tan(self.val + o, self.dot)

    __radd__ = __add__

    def __neg__(self):
        return _Tan(-self.val, -self.dot)

    def __sub__(self, o):
        return self + (-o)

    def __rsub__(self, o):
        return (-self) + o

    def __mul__(self, o):
        if isinstance(o, _Tan):  # one of the two is a scalar
            if self.val.ndim == 0:
                return _Tan(self.val * o.val, _bcast(self.dot, o.val) * o.val + self.val * o.dot)
            return o * self
        if self.val.ndim == 0:
            return _Tan(self.val * o, _bcast(self.dot, o) * o)
        return _Tan(self.val * o, self.dot * o)

    __rmul__ = __mul__

    @property
    def T(self):
        return _Tan(self.val.T, np.swapaxes(self.dot, -1, -2))

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        return _Tan(self.val[idx], self.dot[(slice(None),) + idx])


def _bcast(d: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Scalar directions ``d`` (D,) shaped to broadcast against ``like``."""
    return d.reshape(d.shape + (1,) * np.ndim(like))


def _const(x, D: int) -> _Tan:
    x = np.asarray(x, float)
    return _Tan(x, np.zeros((D,) + x.shape))


def _mv(A, x):
    """Matrix-vector product of tangents (or constants)."""
    if not isinstance(A, _Tan):
        return _Tan(A @ x.val, x.dot @ A.T)
    if not isinstance(x, _Tan):
        return _Tan(A.val @ x, A.dot @ x)
    return _Tan(A.val @ x.val, A.dot @ x.val + x.dot @ A.val.T)


def _mm(A, B):
    """Matrix-matrix product of tangents (or constants)."""
    if not isinstance(A, _Tan):
        return _Tan(A @ B.val, A @ B.dot)
    if not isinstance(B, _Tan):
        return _Tan(A.val @ B, A.dot @ B)
    return _Tan(A.val @ B.val, A.dot @ B.val + A.val @ B.dot)


def _cross(a, b):
    if not isinstance(a, _Tan):
        return _Tan(np.cross(a, b.val), np.cross(a, b.dot))
    if not isinstance(b, _Tan):
        return _Tan(np.cross(a.val, b), np.cross(a.dot, b))
    return _Tan(np.cross(a.val, b.val), np.cross(a.dot, b.val) + np.cross(a.val, b.dot))


def _vdot(a, b):
    return _Tan(a.val @ b.val, a.dot @ b.val + b.dot @ a.val)


def _skew_batch(w: np.ndarray) -> np.ndarray:
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1] = -w[..., 2]
    out[..., 0, 2] = w[..., 1]
    out[..., 1, 0] = w[..., 2]
    out[..., 1, 2] = -w[..., 0]
    out[..., 2, 0] = -w[..., 1]
    out[..., 2, 1] = w[..., 0]
    return out


def _skew(w: _Tan) -> _Tan:
    return _Tan(_skew_batch(w.val), _skew_batch(w.dot))


def _sin(x: _Tan) -> _Tan:
    return _Tan(np.sin(x.val), np.cos(x.val) * x.dot)


def _cos(x: _Tan) -> _Tan:
    return _Tan(np.cos(x.val), -np.sin(x.val) * x.dot)


def _recip(x: _Tan) -> _Tan:
    return _Tan(1.0 / x.val, -x.dot / x.val ** 2)


def _sqrt(x: _Tan) -> _Tan:
    s = np.sqrt(x.val)
    return _Tan(s, x.dot / (2.0 * s))


def _block(rows) -> _Tan:
    """Block matrix of tangents (all with the same D)."""
    val = np.block([[b.val for b in row] for row in rows])
    dot = np.concatenate([np.concatenate([b.dot for b in row], axis=-1) for row in rows], axis=-2)
    return _Tan(val, dot)


def _stack(parts) -> _Tan:
    return _Tan(np.concatenate([p.val for p in parts]), np.concatenate([p.dot for p in parts], axis=-1))


def _crm(v: _Tan) -> _Tan:
    """6x6 motion cross-product matrix ``v x`` of v = [w; u]."""
    W, U = _skew(v[:3]), _skew(v[3:])
    Z = _const(np.zeros((3, 3)), v.dot.shape[0])
    return _block([[W, Z], [U, W]])


def _crf(v: _Tan) -> _Tan:
    """6x6 force cross-product matrix ``v x* = -(v x)^T``."""
    return -_crm(v).T


# --------------------------------------------------------------------------- small SO(3) helpers
def _axis_rot(axis: np.ndarray, th: _Tan) -> _Tan:
    K = _skew3(axis)
    return _sin(th) * K + (1.0 - _cos(th)) * (K @ K) + np.eye(3)


def _quat_to_rot(e: np.ndarray) -> np.ndarray:
    w, x, y, z = e / np.linalg.norm(e)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_log(e: np.ndarray) -> np.ndarray:
    """Rotation vector (rad, norm <= pi) of the unit quaternion ``e = (w, x, y, z)``;
    the law of the kernels' joint springs."""
    w, xyz = e[0], np.asarray(e[1:4], float)
    s = np.linalg.norm(xyz)
    sign = -1.0 if w < 0 else 1.0
    ang = 2.0 * np.arctan2(s, abs(w))
    return (sign * ang / s if s > 1e-12 else 2.0 * sign) * xyz


def so3_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector (rad, norm <= pi) of a rotation matrix (through the
    quaternion, accurate for small angles)."""
    return quat_log(rot_to_quat(R))


def jr_inv(phi: np.ndarray) -> np.ndarray:
    """Inverse right Jacobian of SO(3): ``log(Exp(phi) Exp(d)) = phi + jr_inv(phi) d + O(d^2)``."""
    th = np.linalg.norm(phi)
    K = _skew3(phi)
    if th < 1e-6:
        return np.eye(3) + 0.5 * K + K @ K / 12.0
    coef = 1.0 / th ** 2 - (1.0 + np.cos(th)) / (2.0 * th * np.sin(th))
    return np.eye(3) + 0.5 * K + coef * K @ K


# --------------------------------------------------------------------------- joint model
def _jcalc(joint, axes, q_i: np.ndarray, dq_i: _Tan, v_i: _Tan, D: int):
    """Joint transform (R_J, p_J), motion subspace S (6, nv_i) and its
    apparent time derivative Sr, as tangents. Mirrors ``jcalc`` of the kernels."""
    a1, a2 = axes
    code = joint.code
    nvi = joint.nv
    I3 = _const(np.eye(3), D)
    z3 = _const(np.zeros(3), D)
    if code == REVOLUTE:
        R = _axis_rot(a1, dq_i[0] + q_i[0])
        S = np.r_[a1, 0, 0, 0].reshape(6, 1)
        return R, z3, _const(S, D), _const(np.zeros((6, 1)), D)
    if code == PRISMATIC:
        S = np.r_[0, 0, 0, a1].reshape(6, 1)
        p = _Tan(a1 * q_i[0], np.outer(dq_i.dot[:, 0], a1))
        return I3, p, _const(S, D), _const(np.zeros((6, 1)), D)
    if code == SPHERICAL:
        R = _mm(_quat_to_rot(q_i), _skew(dq_i) + np.eye(3))
        S = np.zeros((6, 3))
        S[:3] = np.eye(3)
        return R, z3, _const(S, D), _const(np.zeros((6, 3)), D)
    if code == FREE:
        R0 = _quat_to_rot(q_i[3:7])
        R = _mm(R0, _skew(dq_i[:3]) + np.eye(3))
        p = _mv(R0, dq_i[3:6]) + q_i[:3]
        return R, p, _const(np.eye(6), D), _const(np.zeros((6, 6)), D)
    if code == UNIVERSAL:
        R1 = _axis_rot(a1, dq_i[0] + q_i[0])
        R2 = _axis_rot(a2, dq_i[1] + q_i[1])
        b = _mv(R2.T, a1)  # a1 seen in the body frame
        z31 = _const(np.zeros((3, 1)), D)
        S = _block([[_column(b), _const(a2.reshape(3, 1), D)], [z31, z31]])
        Sr = _block([[_column(_cross(b, a2) * v_i[1]), z31], [z31, z31]])
        return _mm(R1, R2), z3, S, Sr
    if code == PLANAR:
        th = dq_i[2] + q_i[2]
        s, c = _sin(th), _cos(th)
        zero = _const(0.0, D)
        one = _const(1.0, D)
        R = _mat([[c, -s, zero], [s, c, zero], [zero, zero, one]])
        p = _stack([_vec1(dq_i[0] + q_i[0]), _vec1(dq_i[1] + q_i[1]), _vec1(zero)])
        S = _mat([[zero, zero, zero], [zero, zero, zero], [zero, zero, one],
                  [c, s, zero], [-s, c, zero], [zero, zero, zero]])
        thd = v_i[2]
        Sr = _mat([[zero, zero, zero], [zero, zero, zero], [zero, zero, zero],
                   [-s * thd, c * thd, zero], [-c * thd, -s * thd, zero], [zero, zero, zero]])
        return R, p, S, Sr
    # fixed
    return I3, z3, _const(np.zeros((6, nvi)), D), _const(np.zeros((6, nvi)), D)


def _column(x: _Tan) -> _Tan:
    return _Tan(x.val[:, None], x.dot[..., None])


def _vec1(x: _Tan) -> _Tan:
    return _Tan(x.val.reshape(1), x.dot.reshape(-1, 1))


def _mat(rows) -> _Tan:
    val = np.array([[e.val for e in row] for row in rows])
    dot = np.stack([np.stack([e.dot for e in row], axis=-1) for row in rows], axis=-2)
    return _Tan(val, dot)


def _X_motion(E: _Tan, r: _Tan) -> _Tan:
    """Plücker transform parent -> body for motion vectors, [E 0; -E r~ E]."""
    Z = _const(np.zeros((3, 3)), E.dot.shape[0])
    return _block([[E, Z], [-_mm(E, _skew(r)), E]])


# --------------------------------------------------------------------------- the tangent RNEA
def _tangent_rnea(model: Model, q: np.ndarray, dq: _Tan, v: _Tan, a: _Tan, f_ext, passive: bool,
                  gravity: bool = True) -> _Tan:
    """``rnea(q (+) dq, v, a, f_ext) - passive(q (+) dq, v)`` as a tangent (nv,)."""
    D = dq.dot.shape[0]
    nb = model.nbodies
    g = model.gravity if gravity else np.zeros(3)
    zero6 = _const(np.zeros(6), D)
    a0 = _const(np.r_[0.0, 0.0, 0.0, -g], D)
    X = [None] * nb
    S = [None] * nb
    vel = [zero6] * nb
    acc = [a0] + [None] * (nb - 1)
    RW = [_const(np.eye(3), D)] + [None] * (nb - 1)
    pW = [_const(np.zeros(3), D)] + [None] * (nb - 1)
    for i in range(1, nb):
        j = model.joints[i]
        b = model.bodies[i - 1]
        p = int(model.parent[i])
        iq, iv, n = model.idx_q[i], model.idx_v[i], j.nv
        dq_i, v_i, a_i = dq[iv:iv + n], v[iv:iv + n], a[iv:iv + n]
        RJ, pJ, Si, Sr = _jcalc(j, j.axes(), q[iq:iq + j.nq], dq_i, v_i, D)
        Rpi = _mm(b.R_PJ, RJ)
        r = _mv(b.R_PJ, pJ) + b.p_PJ
        X[i] = _X_motion(Rpi.T, r)
        S[i] = Si
        RW[i] = _mm(RW[p], Rpi)
        pW[i] = pW[p] + _mv(RW[p], r)
        vJ = _mv(Si, v_i) if n else zero6
        cJ = _mv(Sr, v_i) if n else zero6
        vel[i] = _mv(X[i], vel[p]) + vJ
        c = cJ + _mv(_crm(vel[i]), vJ)
        acc[i] = _mv(X[i], acc[p]) + c + (_mv(Si, a_i) if n else zero6)

    fext = [zero6 if f_ext is None else _const(f_ext[k], D) for k in range(nb)]
    tau_p = _const(np.zeros(model.nv), D)
    if passive:
        tau_p = _joint_force_tangent(model, q, dq, v)
        _spring_tangent(model, RW, pW, vel, fext)

    f = [None] * nb
    for i in range(1, nb):
        Ii = model.inertias[i]
        f[i] = _mv(Ii, acc[i]) + _mv(_crf(vel[i]), _mv(Ii, vel[i])) - fext[i]
    tau_val = np.zeros(model.nv)
    tau_dot = np.zeros((D, model.nv))
    for i in range(nb - 1, 0, -1):
        iv, n = model.idx_v[i], model.joints[i].nv
        if n:
            t = _mv(S[i].T, f[i])
            tau_val[iv:iv + n] = t.val
            tau_dot[:, iv:iv + n] = t.dot
        p = int(model.parent[i])
        if p > 0:
            f[p] = f[p] + _mv(X[i].T, f[i])
    return _Tan(tau_val, tau_dot) - tau_p


def _joint_force_tangent(model: Model, q: np.ndarray, dq: _Tan, v: _Tan) -> _Tan:
    """Generalized forces of the joint springs, dampers and limits (``mb_passive_forces``)."""
    D = dq.dot.shape[0]
    val = np.zeros(model.nv)
    dot = np.zeros((D, model.nv))
    for i, jf in model.joint_forces.items():
        j = model.joints[i]
        iq, iv, n = model.idx_q[i], model.idx_v[i], j.nv
        if n == 0 or j.code == FREE:
            continue
        if j.code == SPHERICAL:
            phi = quat_log(q[iq:iq + 4] / np.linalg.norm(q[iq:iq + 4]))
            disp = _Tan(phi, dq[iv:iv + 3].dot @ jr_inv(phi).T)
        else:
            disp = dq[iv:iv + n] + q[iq:iq + n]
        P = {name: np.broadcast_to(np.asarray(getattr(jf, name), float), (n,)) for name in
             ("stiffness", "damping", "rest", "lower", "upper", "limit_stiffness", "limit_damping")}
        for k in range(n):
            d, w = disp[k], v[iv + k]
            t = -P["stiffness"][k] * (d - P["rest"][k]) - P["damping"][k] * w
            if d.val < P["lower"][k]:
                fl = P["limit_stiffness"][k] * (P["lower"][k] - d) - P["limit_damping"][k] * w
                if fl.val > 0:
                    t = t + fl
            elif d.val > P["upper"][k]:
                fl = P["limit_stiffness"][k] * (d - P["upper"][k]) + P["limit_damping"][k] * w
                if fl.val > 0:
                    t = t - fl
            val[iv + k] += t.val
            dot[:, iv + k] += t.dot
    return _Tan(val, dot)


def _drive_tangent(model: Model, q: np.ndarray, dq: _Tan, v: _Tan, tau: np.ndarray
                   ) -> tuple[_Tan, np.ndarray]:
    """What the joint drives add to the commanded ``tau`` (the law of
    ``mb_drive_forces``, ``csrc/drives.c``) as a tangent (nv,), and the
    derivative of each coordinate's generalized force by its command (nv,)."""
    from .drives import MODES
    D = dq.dot.shape[0]
    val = np.zeros(model.nv)
    dot = np.zeros((D, model.nv))
    gain = np.ones(model.nv)
    for i, d in model.drives.items():
        iq, iv = model.idx_q[i], model.idx_v[i]
        c, w = float(tau[iv]), v[iv]
        mode = MODES[d.mode]
        if mode == MODES["torque"]:
            f = _const(c, D)
        else:
            f = d.kp * (c - (dq[iv] + q[iq])) - d.kd * w if mode == MODES["position"] else d.kd * (c - w)
            if abs(float(f.val)) > d.torque_limit:  # saturated: the limit, whatever the state
                f, gain[iv] = _const(np.sign(f.val) * d.torque_limit, D), 0.0
            else:
                gain[iv] = d.kp if mode == MODES["position"] else d.kd
        if d.friction:
            th = np.tanh(w.val / d.friction_velocity)
            f = f - d.friction * _Tan(th, w.dot * (1.0 - th * th) / d.friction_velocity)
        val[iv] = f.val - c
        dot[:, iv] = f.dot
    return _Tan(val, dot), gain


def _spring_tangent(model: Model, RW, pW, vel, fext) -> None:
    """Add the point-to-point spring-damper wrenches to ``fext`` (body frames)."""
    for s in model.springs:
        ba, bb = s.body_a, s.body_b
        pa, pb = np.asarray(s.point_a, float), np.asarray(s.point_b, float)
        Pa = pW[ba] + _mv(RW[ba], pa)
        Pb = pW[bb] + _mv(RW[bb], pb)
        Va = _mv(RW[ba], _cross(vel[ba][:3], pa) + vel[ba][3:])
        Vb = _mv(RW[bb], _cross(vel[bb][:3], pb) + vel[bb][3:])
        d = Pb - Pa
        L = _sqrt(_vdot(d, d))
        if L.val < 1e-12:
            continue
        u = d * _recip(L)
        Ld = _vdot(Vb - Va, u)
        F = s.stiffness * (L - s.rest_length) + s.damping * Ld
        Fw = u * F
        if ba > 0:
            t = _mv(RW[ba].T, Fw)
            fext[ba] = fext[ba] + _stack([_cross(pa, t), t])
        if bb > 0:
            t = -_mv(RW[bb].T, Fw)
            fext[bb] = fext[bb] + _stack([_cross(pb, t), t])


def _seeds(model: Model, v: np.ndarray, a: np.ndarray):
    nv = model.nv
    E = np.eye(3 * nv)
    dq = _Tan(np.zeros(nv), E[:, :nv])
    vT = _Tan(v, E[:, nv:2 * nv])
    aT = _Tan(a, E[:, 2 * nv:])
    return dq, vT, aT


def _inputs(model: Model, q, v, a, f_ext):
    q = check_vector(q, model.nq, "q")
    q = _kernels.normalize(model._h, q)
    v = check_vector(v, model.nv, "v")
    a = check_vector(a, model.nv, "a")
    if f_ext is not None:
        f_ext = np.asarray(f_ext, float)
        if f_ext.shape != (model.nbodies, 6) or not np.all(np.isfinite(f_ext)):
            from ..errors import InputError
            raise InputError(f"f_ext must be a finite ({model.nbodies}, 6) array, got shape {f_ext.shape}")
    return q, v, a, f_ext


# --------------------------------------------------------------------------- public API
def rnea_derivatives(model: Model, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of the inverse dynamics ``tau = rnea(q, v, a, f_ext)``.

    Parameters
    ----------
    model : Model
    q : array_like (nq,)
        Configuration (quaternions are normalized first).
    v, a : array_like (nv,)
        Joint velocities and accelerations (rad/s, m/s; rad/s^2, m/s^2).
    f_ext : ndarray (nbodies, 6), optional
        Body-frame external wrenches [n; f] (N m; N), held fixed in the body frames.

    Returns
    -------
    dtau_dq : ndarray (nv, nv)
        With respect to the tangent-space configuration increment (N m/rad, N/m, ...).
    dtau_dv : ndarray (nv, nv)
        N m s/rad, N s/m, ...
    dtau_da : ndarray (nv, nv)
        The joint-space inertia ``M(q)`` (kg m^2, kg).

    The same three matrices as Pinocchio's ``computeRNEADerivatives``.
    Force elements (springs, dampers) are not included; see
    :func:`forward_dynamics_derivatives`.
    """
    q, v, a, f_ext = _inputs(model, q, v, a, f_ext)
    dq, vT, aT = _seeds(model, v, a)
    tau = _tangent_rnea(model, q, dq, vT, aT, f_ext, passive=False)
    nv = model.nv
    J = tau.dot.T  # (nv, 3 nv)
    return J[:, :nv], J[:, nv:2 * nv], J[:, 2 * nv:]


def aba_derivatives(model: Model, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of the forward dynamics ``qdd = aba(q, v, tau, f_ext)``.

    Returns ``(dqdd_dq, dqdd_dv, dqdd_dtau)``, each (nv, nv), with
    ``dqdd_dq = -M^-1 d(rnea)/dq`` and ``dqdd_dv = -M^-1 d(rnea)/dv``
    evaluated at ``a = qdd``, and ``dqdd_dtau = M^-1``: the matrices of
    Pinocchio's ``computeABADerivatives``. No force elements (see
    :func:`forward_dynamics_derivatives`).
    """
    q, v, tau, f_ext = _inputs(model, q, v, tau, f_ext)
    qdd = _kernels.aba(model._h, q, v, tau, f_ext)
    dq_, dv_, M = rnea_derivatives(model, q, v, qdd, f_ext)
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + Minv.T)
    return -Minv @ dq_, -Minv @ dv_, Minv


def forward_dynamics_derivatives(model: Model, q, v, tau, f_ext=None
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Derivatives of the plant dynamics ``vdot = rhs(q, v, tau, f_ext)`` of
    the kernels, *including* the model's force elements (joint springs,
    dampers, range limits, point-to-point spring-dampers).

    Returns
    -------
    vdot : ndarray (nv,)
    dvdot_dq : ndarray (nv, nv)
        With respect to the tangent-space increment of ``q``.
    dvdot_dv : ndarray (nv, nv)
    dvdot_dtau : ndarray (nv, nv)
        ``M(q)^-1``; with joint drives (:mod:`~mbfmu.dynamics.drives`),
        whose commands ``tau`` holds, ``M^-1`` times each coordinate's
        derivative of its drive torque by its command (``kp``, ``kd``, 0
        when saturated, 1 for torque drives).

    At a range limit's boundary the one-sided derivative of the branch
    active at ``q`` is returned (the law is not differentiable there).
    """
    if model.contacts or model.cables:
        raise ModelError(f"forward_dynamics_derivatives: model {model.name!r} has sphere-plane contacts "
                         "or cables, whose derivatives are not implemented")
    q, v, tau, f_ext = _inputs(model, q, v, tau, f_ext)
    _, vdot = _kernels.rhs(model._h, q, v, tau, f_ext)
    dq, vT, aT = _seeds(model, v, vdot)
    res = _tangent_rnea(model, q, dq, vT, aT, f_ext, passive=True)
    gain = None
    if model.drives:
        added, gain = _drive_tangent(model, q, dq, vT, tau)
        res = res - added
    nv = model.nv
    J = res.dot.T
    M = J[:, 2 * nv:]
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + Minv.T)
    return vdot, -Minv @ J[:, :nv], -Minv @ J[:, nv:2 * nv], Minv if gain is None else Minv * gain


def integrate(model: Model, q, dq) -> np.ndarray:
    """``q (+) dq``: the configuration reached from ``q`` by the tangent
    increment ``dq`` (nv,), the chart in which all configuration derivatives
    of this module are taken (``_kernels.integrate`` over a unit time)."""
    return _kernels.integrate(model._h, np.asarray(q, float), np.asarray(dq, float), 1.0)


def difference(model: Model, q0, q1) -> np.ndarray:
    """Inverse of :func:`integrate`: the increment ``dq`` (nv,) with
    ``integrate(q0, dq) == q1``."""
    q0 = np.asarray(q0, float)
    q1 = np.asarray(q1, float)
    out = np.zeros(model.nv)
    for i in range(1, model.nbodies):
        j = model.joints[i]
        iq, iv = model.idx_q[i], model.idx_v[i]
        if j.code == SPHERICAL:
            R0, R1 = _quat_to_rot(q0[iq:iq + 4]), _quat_to_rot(q1[iq:iq + 4])
            out[iv:iv + 3] = so3_log(R0.T @ R1)
        elif j.code == FREE:
            R0, R1 = _quat_to_rot(q0[iq + 3:iq + 7]), _quat_to_rot(q1[iq + 3:iq + 7])
            out[iv:iv + 3] = so3_log(R0.T @ R1)
            out[iv + 3:iv + 6] = R0.T @ (q1[iq:iq + 3] - q0[iq:iq + 3])
        else:
            out[iv:iv + j.nv] = q1[iq:iq + j.nq] - q0[iq:iq + j.nq]
    return out


def tangent_kinematics(model: Model, q, v) -> tuple[np.ndarray, np.ndarray]:
    """Linearization of the configuration rate in the chart of :func:`integrate`.

    With ``q = q0 (+) dq``, the increment moves as ``d(dq)/dt = f(dq, v)``;
    returns ``(df/d(dq), df/dv)`` at ``dq = 0``, each (nv, nv). For joints
    whose ``qdot = v`` this is ``(0, 1)``; a spherical joint contributes
    ``-1/2 w~`` (``w`` its angular velocity), a free joint additionally
    ``-v_lin~`` in the rows of its position increment.
    """
    v = np.asarray(v, float)
    nv = model.nv
    A = np.zeros((nv, nv))
    for i in range(1, model.nbodies):
        j = model.joints[i]
        iv = model.idx_v[i]
        if j.code in (SPHERICAL, FREE):
            w = v[iv:iv + 3]
            A[iv:iv + 3, iv:iv + 3] = -0.5 * _skew3(w)
            if j.code == FREE:
                A[iv + 3:iv + 6, iv:iv + 3] = -_skew3(v[iv + 3:iv + 6])
    return A, np.eye(nv)


def configuration_jacobian(model: Model, q) -> np.ndarray:
    """``d(q (+) dq)/d(dq)`` at ``dq = 0``, shape (nq, nv): maps tangent
    increments to changes of the stored coordinates (quaternion entries
    included)."""
    q = np.asarray(q, float)
    E = np.eye(model.nv)
    return np.column_stack([_kernels.qdot(model._h, q, E[:, k]) for k in range(model.nv)]) \
        if model.nv else np.zeros((model.nq, 0))
