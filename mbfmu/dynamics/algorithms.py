"""Rigid-body algorithms, named like the math (RBDA / Pinocchio).

The O(N) recursions (``rnea``, ``aba``, ``crba``, kinematics, momentum) run in
the compiled kernels; this module validates nothing itself (the binding checks
sizes and finiteness and names the offending coordinate) and adds the
derived quantities that are not on a hot path: Jacobians, energies, centre of
mass, momenta, the Coriolis matrix.

All functions take the model first. ``f_ext`` is an optional (nbodies, 6)
array of spatial forces [n; f] applied to each body, expressed in the body
frame about its origin (N m; N); row 0 (the world) is ignored.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kernels
from ._docs import parameters
from .model import Model
from .spatial import skew
from .symbolic import matmul, value

_rnea = _kernels.rnea
_aba = _kernels.aba
_crba = _kernels.crba


@parameters("model", "q", "v", "a", "f_ext")
def rnea(model: Model, q, v, a, f_ext=None) -> np.ndarray:
    """Inverse dynamics, recursive Newton-Euler (RBDA Table 5.1).

    The same outward/inward passes in spatial-operator form: Liu Yunping,
    "Efficient inverse dynamics modelling of robots based on spatial operator
    algebra", Journal of Nanjing University of Information Science and
    Technology, 2011.

    Returns the generalized forces ``tau = M(q) a + C(q, v) v + g(q) - J^T f_ext``
    (N m or N per coordinate), shape (nv,).
    """
    return _rnea(model._h, q, v, a, f_ext)


@parameters("model", "q", "v", "tau", "f_ext")
def aba(model: Model, q, v, tau, f_ext=None) -> np.ndarray:
    """Forward dynamics, articulated-body algorithm in O(N) (RBDA Table 7.1).

    Returns the generalized accelerations ``a`` (nv,) with
    ``M(q) a + C(q, v) v + g(q) = tau + J^T f_ext``.
    """
    return _aba(model._h, q, v, tau, f_ext)


@parameters("model", "q", "v", "tau", "f_ext")
def forward_dynamics(model: Model, q, v, tau, f_ext=None) -> np.ndarray:
    """Forward dynamics by the route the tree's structure picks.

    On wide, shallow trees ``M(q) a = tau + J^T f_ext - C(q, v) v - g(q)``
    solved with the sparse ``L^T D L`` factorization of ``M`` (RBDA
    ch. 6: no fill-in along the branches), elsewhere the articulated-body
    algorithm (:func:`aba`); the rule (mean number of ancestor joints per
    coordinate) and the measurement behind it are in
    ``mbfmu/dynamics/csrc/algorithms.c``. The compiled integrators take the
    same route.

    Returns
    -------
    ndarray (nv,)
        Generalized accelerations ``a``, rad/s^2 or m/s^2; equal to
        :func:`aba`'s to rounding.
    """
    return _kernels.forward_dynamics(model._h, q, v, tau, f_ext)


@parameters("model", "q")
def crba(model: Model, q) -> np.ndarray:
    """Joint-space inertia matrix ``M(q)`` (nv, nv), composite-rigid-body
    algorithm (RBDA Table 6.2); symmetric, full.

    Only the entries of a joint and its ancestors are computed (the others
    are zero: branch-induced sparsity, RBDA ch. 6), in world-aligned
    coordinates about each tree's root body."""
    return _crba(model._h, q)


@parameters("model", "q", "v")
def nonlinear_effects(model: Model, q, v) -> np.ndarray:
    """``C(q, v) v + g(q)`` (nv,): the generalized forces that hold ``a = 0``."""
    return _rnea(model._h, q, v, np.zeros(model.nv))


@parameters("model", "q")
def gravity_torques(model: Model, q) -> np.ndarray:
    """``g(q)`` (nv,): the holding torques against gravity, ``rnea(q, 0, 0)``."""
    z = np.zeros(model.nv)
    return _rnea(model._h, q, z, z)


@parameters("model", "q", "v")
def coriolis_torques(model: Model, q, v) -> np.ndarray:
    """``C(q, v) v`` (nv,), without gravity."""
    return _rnea(model._h, q, v, np.zeros(model.nv), None, False)


@parameters("model", "q", b="array_like, shape (nv,)\n    Generalized forces to map, N m or N.")
def minv(model: Model, q, b) -> np.ndarray:
    """``M(q)^-1 b`` in O(N) without forming M (articulated-body passes)."""
    return _kernels.minv(model._h, q, b)


@dataclass
class Kinematics:
    """Result of :func:`forward_kinematics` (the Data half of Model/Data).

    Attributes
    ----------
    R_WB : ndarray (nbodies, 3, 3)
        Rotation of each body frame in the world.
    p_WB : ndarray (nbodies, 3)
        Origin of each body frame in the world, m.
    v_B : ndarray (nbodies, 6) or None
        Spatial velocity of each body in its own frame [w; v], rad/s; m/s.
    """

    R_WB: np.ndarray
    p_WB: np.ndarray
    v_B: np.ndarray | None = None


@parameters("model", "q", v="array_like, shape (nv,), optional\n    Joint velocities, rad/s or m/s; the body velocities are computed only when given.")
def forward_kinematics(model: Model, q, v=None) -> Kinematics:
    """World poses of all bodies (and body velocities when ``v`` is given),
    by chaining ``X_W,k = X_W,L(k) X_L(k),k`` along Huston's lower-body array."""
    R, p, vel = _kernels.kinematics(model._h, q, v)
    return Kinematics(R, p, vel)


@parameters("model", "q", "v")
def body_velocities(model: Model, q, v) -> np.ndarray:
    """Spatial velocity of every body in its own frame, (nbodies, 6)."""
    return _kernels.kinematics(model._h, q, v)[2]


@parameters("model", "q", "v", "a")
def body_accelerations(model: Model, q, v, a) -> np.ndarray:
    """Spatial acceleration of every body in its own frame (gravity not
    included), (nbodies, 6): the apparent derivative of the body velocity."""
    return _kernels.body_accelerations(model._h, q, v, a)


@parameters("model", "q", "v", "a", bodies="array_like of int, shape (n,)\n    Body indices.", points="array_like, shape (n, 3)\n    The points in their bodies' frames, m.")
def point_accelerations(model: Model, q, v, a, bodies, points) -> np.ndarray:
    """Inertial acceleration (gravity not included) of body-fixed points,
    world frame, m/s^2, (n, 3).

    ``bodies`` (n,) are body indices and ``points`` (n, 3) the points in
    their body frames, m. An accelerometer at a point reads the specific
    force, this minus the gravity vector.
    """
    return _kernels.point_accelerations(model._h, q, v, a, np.asarray(bodies, dtype=np.intp), points)


def _X_motion(R_WB: np.ndarray, p_WB: np.ndarray) -> np.ndarray:
    """6x6 motion transform from world to body coordinates, ``^B X_W``."""
    E = R_WB.T
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(p_WB)
    return X


def _ancestors(model: Model, body: int) -> list[int]:
    out = []
    i = body
    while i > 0:
        out.append(i)
        i = int(model.parent[i])
    return out


def _world_jacobian(model: Model, q, body: int, p_WP: np.ndarray | None, R, p, S) -> np.ndarray:
    """Rows [w; v_P] in world coordinates for the point at world position p_WP
    (the body origin when None)."""
    P = p[body] if p_WP is None else p_WP
    J = np.zeros((6, model.nv))
    for j in _ancestors(model, body):
        n = model.joints[j].nv
        if n == 0:
            continue
        w = R[j] @ S[j, :n, :3].T
        u = R[j] @ S[j, :n, 3:].T
        sl = slice(model.idx_v[j], model.idx_v[j] + n)
        J[:3, sl] = w
        J[3:, sl] = u + np.cross(w.T, P - p[j]).T
    return J


@parameters("model", "q", "body")
def body_jacobian(model: Model, q, body: int | str) -> np.ndarray:
    """Body Jacobian (6, nv): ``v_B = J v`` with ``v_B`` the body's spatial
    velocity [w; v] in its own frame (origin at the body frame)."""
    i = model.body_index(body)
    S, _ = _kernels.subspaces(model._h, q, np.zeros(model.nv))
    R, p, _ = _kernels.kinematics(model._h, q)
    J = _world_jacobian(model, q, i, None, R, p, S)
    J[:3] = R[i].T @ J[:3]
    J[3:] = R[i].T @ J[3:]
    return J


@parameters("model", "q", "body", p_BF="array_like, shape (3,)\n    Origin of the frame F in the body frame, m.")
def frame_jacobian(model: Model, q, body: int | str, p_BF=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Jacobian (6, nv) of a frame F fixed on ``body`` at ``p_BF`` (m, body
    frame), world-aligned: rows are [w_W; v_F,W], the angular velocity and the
    velocity of F's origin, both in world coordinates."""
    i = model.body_index(body)
    S, _ = _kernels.subspaces(model._h, q, np.zeros(model.nv))
    R, p, _ = _kernels.kinematics(model._h, q)
    return _world_jacobian(model, q, i, p[i] + R[i] @ np.asarray(p_BF, float), R, p, S)


@parameters("model", "q", "body", "p_BP")
def point_jacobian(model: Model, q, body: int | str, p_BP=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Jacobian (3, nv) of the world-frame velocity of point ``p_BP`` (m,
    body frame) on ``body``."""
    return frame_jacobian(model, q, body, p_BP)[3:]


@parameters("model", "q", "body", "p_BP")
def point_position(model: Model, q, body: int | str, p_BP=(0.0, 0.0, 0.0)) -> np.ndarray:
    """World position (m) of point ``p_BP`` given in the frame of ``body``."""
    i = model.body_index(body)
    R, p, _ = _kernels.kinematics(model._h, q)
    return p[i] + R[i] @ np.asarray(p_BP, float)


def _com_world(model: Model, R: np.ndarray, p: np.ndarray) -> np.ndarray:
    coms = np.array([np.zeros(3)] + [b.com for b in model.bodies])
    return p + np.einsum("bij,bj->bi", R, coms)


@parameters("model", "q")
def center_of_mass(model: Model, q) -> np.ndarray:
    """World position of the centre of mass of all bodies, m."""
    # one sequence of operations for numbers and for the parameters' expressions (symbolic.py):
    # the native FMU's tape then gives the plant's bits
    R = _kernels.kinematics(model._h, value(q))[0]
    masses = [0.0] + [b.mass for b in model.bodies]
    p = _positions(model, R, q)
    coms = [p[i] + matmul(R[i], np.zeros(3) if i == 0 else model.bodies[i - 1].com) for i in range(len(p))]
    return sum(masses[i] * coms[i] for i in range(len(p))) / sum(masses[1:])


def _positions(model: Model, R: np.ndarray, q) -> list:
    """World positions of the body frames chained from the joint placements, with the
    world orientations ``R`` of the kernels (free and planar joints: the kernels' positions)."""
    from .joints import PLANAR, PRISMATIC, FREE
    p_kernel = _kernels.kinematics(model._h, value(q))[1]
    out = [np.zeros(3)]
    for i, b in enumerate(model.bodies, start=1):
        if b.joint.code in (FREE, PLANAR):
            out.append(p_kernel[i])
            continue
        offset = b.p_PJ
        if b.joint.code == PRISMATIC:
            offset = offset + np.asarray(value(b.R_PJ), float) @ b.joint.axes()[0] * q[model.idx_q[i]]
        out.append(out[b.parent] + matmul(R[b.parent], offset))
    return out


@parameters("model", "q", "v")
def kinetic_energy(model: Model, q, v) -> float:
    """Kinetic energy ``1/2 v^T M v``, J (summed body by body, O(N))."""
    vel = _kernels.kinematics(model._h, q, v)[2]
    I = model.inertias
    return 0.5 * float(np.einsum("bi,bij,bj->", vel, I, vel))


@parameters("model", "q", include_springs="bool\n    Add the elastic energy of the force elements.")
def potential_energy(model: Model, q, include_springs: bool = True) -> float:
    """Gravitational potential energy (zero at the world origin) plus, with
    ``include_springs``, the energy stored in joint springs, joint limits,
    point-to-point springs, sphere-plane contacts and cables, J."""
    R, p, _ = _kernels.kinematics(model._h, q)
    masses = np.array([0.0] + [b.mass for b in model.bodies])
    pe = -float(masses @ (_com_world(model, R, p) @ model.gravity))
    if include_springs:
        pe += _kernels.passive_energy(model._h, q)
    return pe


@dataclass(frozen=True)
class ElementForces:
    """Forces of the contacts and cables of a model at one state (all world frame).

    Attributes
    ----------
    contact_force : ndarray (ncontacts, 3)
        Force of each contact on its body, N (zero when apart).
    contact_point : ndarray (ncontacts, 3)
        Where it acts: the sphere point deepest along minus the plane normal, m.
    penetration : ndarray (ncontacts,)
        m; negative when apart.
    cable_tension : ndarray (ncables,)
        N, >= 0.
    cable_length : ndarray (ncables,)
        Anchor-to-point length, m.
    """

    contact_force: np.ndarray
    contact_point: np.ndarray
    penetration: np.ndarray
    cable_tension: np.ndarray
    cable_length: np.ndarray


@parameters("model", "q", "v")
def element_forces(model: Model, q, v) -> ElementForces:
    """Contact forces and cable tensions at ``(q, v)``, as the kernels apply
    them (the model's :class:`~mbfmu.dynamics.model.SpherePlaneContact` and
    :class:`~mbfmu.dynamics.model.Cable` laws)."""
    return ElementForces(*_kernels.elements(model._h, q, v))


@parameters("model", "q", "v")
def momentum(model: Model, q, v) -> tuple[np.ndarray, np.ndarray]:
    """Total linear momentum (kg m/s) and angular momentum about the world
    origin (kg m^2/s), both in world coordinates."""
    R, p, vel = _kernels.kinematics(model._h, q, v)
    L = np.zeros(3)
    H = np.zeros(3)
    for i, b in enumerate(model.bodies, start=1):
        w_W = R[i] @ vel[i, :3]
        c_W = p[i] + R[i] @ b.com
        v_c = R[i] @ (vel[i, 3:] + np.cross(vel[i, :3], b.com))
        L += b.mass * v_c
        H += R[i] @ b.inertia @ R[i].T @ w_W + b.mass * np.cross(c_W, v_c)
    return L, H


@parameters("model", "q", "v")
def coriolis_matrix(model: Model, q, v) -> np.ndarray:
    """Coriolis matrix ``C(q, v)`` (nv, nv) with ``C v`` the velocity-product
    torques and ``dM/dt - 2 C`` skew-symmetric.

    Uses ``C = sum_i J_i^T (I_i dJ_i/dt + (I_i v_i)xbar* J_i)`` with body
    Jacobians ``J_i`` in body coordinates, where ``(h)xbar* m = m x* h`` is
    skew-symmetric in ``m`` (cf. Echeandia & Wensing 2021). O(N^2); for
    analysis, not for the simulation loop.
    """
    q = np.asarray(q, float)
    v = np.asarray(v, float)
    S, Sr = _kernels.subspaces(model._h, q, v)
    R, p, vel = _kernels.kinematics(model._h, q, v)
    X_iW = [_X_motion(R[i], p[i]) for i in range(model.nbodies)]
    X_Wi = [np.linalg.inv(X) for X in X_iW]
    C = np.zeros((model.nv, model.nv))

    def crm(m):
        w, u = m[:3], m[3:]
        out = np.zeros((6, 6))
        out[:3, :3] = skew(w)
        out[3:, 3:] = skew(w)
        out[3:, :3] = skew(u)
        return out

    for i in range(1, model.nbodies):
        J = np.zeros((6, model.nv))
        Jd = np.zeros((6, model.nv))
        vi = vel[i]
        for j in _ancestors(model, i):
            n = model.joints[j].nv
            Xij = X_iW[i] @ X_Wi[j]
            Sj = S[j, :n].T
            sl = slice(model.idx_v[j], model.idx_v[j] + n)
            J[:, sl] = Xij @ Sj
            Jd[:, sl] = Xij @ (crm(vel[j]) @ Sj + Sr[j, :n].T) - crm(vi) @ Xij @ Sj
        I = model.inertias[i]
        h = I @ vi
        # (h)xbar*: the matrix B with B m = m x* h
        n_, f_ = h[:3], h[3:]
        B = np.zeros((6, 6))
        B[:3, :3] = -skew(n_)
        B[:3, 3:] = -skew(f_)
        B[3:, :3] = -skew(f_)
        C += J.T @ (I @ Jd + B @ J)
    return C
