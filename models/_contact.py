"""Compliant contact and tension-only cables for plants with Python-level forces.

Shared by the plant files (a private module: not a plant). All functions are
vectorized over the contacts / cables and return world-frame forces at
points; :func:`point_forces_to_fext` turns them into the body-frame spatial
forces ``f_ext`` (nbodies, 6, [n; f] about each body origin) the kernels take.

Force laws (both dissipative: the elastic energy plus the work done never
grows, see :func:`sphere_plane_energy` and :func:`cable_energy`):

* sphere against plane: normal force ``k d + c r(d) dd/dt`` (d the
  penetration, m; ``r(d) = min(1, d / ramp)`` so the force is continuous at
  first touch), never pulling; regularized Coulomb friction
  ``-mu F_n v_t / sqrt(|v_t|^2 + eps^2)``;
* cable (belt segment): tension ``k (L - L0) + c r(L - L0) dL/dt`` when
  longer than its rest length ``L0``, zero when slack, never compressive.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SpherePlaneSet:
    """Spheres fixed on bodies, each pressing on one plane of the ground frame.

    Attributes (n = number of contacts)
    -----------------------------------
    body : ndarray (n,) of int
    center : ndarray (n, 3)
        Sphere centre in the body frame, m.
    radius : ndarray (n,)
        m.
    normal : ndarray (n, 3)
        Unit outward normal of the plane (pointing to the free side), ground frame.
    offset : ndarray (n,)
        Plane position ``normal . p = offset`` for points p on it, m.
    stiffness, damping : ndarray (n,)
        N/m, N.s/m.
    friction : ndarray (n,)
        Coulomb coefficient.
    """

    body: np.ndarray
    center: np.ndarray
    radius: np.ndarray
    normal: np.ndarray
    offset: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    friction: np.ndarray
    ramp: float = 2e-3         # m, penetration over which the damping fades in
    slip_speed: float = 2e-2   # m/s, friction regularization eps


@dataclass(frozen=True)
class CableSet:
    """Tension-only spring-dampers from ground anchors to points on bodies.

    Attributes (n = number of cables): ``anchor`` (n, 3) ground frame, m;
    ``body`` (n,) int; ``point`` (n, 3) body frame, m; ``rest_length`` (n,) m;
    ``stiffness`` (n,) N/m; ``damping`` (n,) N.s/m.
    """

    anchor: np.ndarray
    body: np.ndarray
    point: np.ndarray
    rest_length: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    ramp: float = 2e-3  # m of stretch over which the damping fades in


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (..., 3) arrays (np.cross is slow on small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def _point_kinematics(R, p, vel, body, r_B):
    """World position and velocity of points ``r_B`` (body frame) on ``body``."""
    Rb = R[body]
    x = p[body] + np.einsum("nij,nj->ni", Rb, r_B)
    w = vel[body, :3]
    vo = vel[body, 3:]
    v = np.einsum("nij,nj->ni", Rb, vo + cross(w, r_B))
    return x, v


def sphere_plane_forces(c: SpherePlaneSet, R, p, vel):
    """World forces (n, 3) at the contact points, the points in body frames
    (n, 3) and the penetrations (n,) (negative: apart)."""
    centers_W = p[c.body] + np.einsum("nij,nj->ni", R[c.body], c.center)
    depth = c.radius - (np.einsum("ni,ni->n", c.normal, centers_W) - c.offset)
    r_B = c.center - np.einsum("nji,nj->ni", R[c.body], c.normal) * c.radius[:, None]
    _, v_pt = _point_kinematics(R, p, vel, c.body, r_B)
    vn = np.einsum("ni,ni->n", c.normal, v_pt)
    d = np.maximum(depth, 0.0)
    ramp = np.minimum(d / c.ramp, 1.0)
    fn = np.maximum(c.stiffness * d - c.damping * ramp * vn, 0.0)
    vt = v_pt - vn[:, None] * c.normal
    speed = np.sqrt(np.einsum("ni,ni->n", vt, vt) + c.slip_speed ** 2)
    F = fn[:, None] * c.normal - (c.friction * fn / speed)[:, None] * vt
    return F, r_B, depth


def sphere_plane_energy(c: SpherePlaneSet, R, p) -> float:
    """Elastic energy stored in the contacts, J."""
    centers_W = p[c.body] + np.einsum("nij,nj->ni", R[c.body], c.center)
    depth = c.radius - (np.einsum("ni,ni->n", c.normal, centers_W) - c.offset)
    d = np.maximum(depth, 0.0)
    return float(0.5 * np.sum(c.stiffness * d * d))


def cable_forces(c: CableSet, R, p, vel):
    """World forces (n, 3) on the body points and the tensions (n,), N."""
    x, v = _point_kinematics(R, p, vel, c.body, c.point)
    d = c.anchor - x
    L = np.sqrt(np.einsum("ni,ni->n", d, d))
    u = d / L[:, None]
    Ldot = -np.einsum("ni,ni->n", u, v)
    stretch = np.maximum(L - c.rest_length, 0.0)
    ramp = np.minimum(stretch / c.ramp, 1.0)
    T = np.maximum(c.stiffness * stretch + c.damping * ramp * Ldot, 0.0)
    return T[:, None] * u, T


def cable_lengths(c: CableSet, R, p) -> np.ndarray:
    """Current anchor-to-point lengths, m."""
    x = p[c.body] + np.einsum("nij,nj->ni", R[c.body], c.point)
    return np.linalg.norm(c.anchor - x, axis=1)


def cable_energy(c: CableSet, R, p) -> float:
    """Elastic energy stored in the stretched cables, J."""
    s = np.maximum(cable_lengths(c, R, p) - c.rest_length, 0.0)
    return float(0.5 * np.sum(c.stiffness * s * s))


def point_forces_to_fext(nbodies: int, R, body, r_B, F_W, out=None) -> np.ndarray:
    """Accumulate world forces ``F_W`` (n, 3) applied at body points ``r_B``
    (n, 3, body frame) into body-frame spatial forces (nbodies, 6) [n; f]."""
    f_ext = np.zeros((nbodies, 6)) if out is None else out
    f_B = np.einsum("nji,nj->ni", R[body], F_W)
    np.add.at(f_ext, body, np.hstack([cross(r_B, f_B), f_B]))
    return f_ext
