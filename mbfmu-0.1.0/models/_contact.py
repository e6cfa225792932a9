"""Compliant contact and tension-only cables, described as sets for the plant files.

A private module shared by the plant files (not a plant). A set describes
its contacts or cables as arrays; :meth:`SpherePlaneSet.elements` and
:meth:`CableSet.elements` turn them into the force elements of the kernels
(:class:`mbfmu.dynamics.model.SpherePlaneContact` and
:class:`mbfmu.dynamics.model.Cable`), which apply them in every dynamics call;
:func:`mbfmu.dynamics.element_forces` reads their forces and
:func:`mbfmu.dynamics.potential_energy` includes their elastic energy. The
vectorized numpy functions here, :func:`sphere_plane_forces` and
:func:`cable_forces`, evaluate the same laws from kinematics (world forces at
body points), for checks and diagnostics.

Force laws (both dissipative: the elastic energy ``1/2 k d^2`` or
``1/2 k (L - L0)^2`` plus the work done never grows):

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

from mbfmu.dynamics.model import Cable, SpherePlaneContact


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

    def elements(self) -> list[SpherePlaneContact]:
        """The contacts as force elements of the kernels (same law and values)."""
        return [SpherePlaneContact(int(b), c, r, n, o, k, d, mu, self.slip_speed, self.ramp)
                for b, c, r, n, o, k, d, mu in zip(self.body, self.center, self.radius, self.normal,
                                                   self.offset, self.stiffness, self.damping, self.friction)]


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

    def elements(self) -> list[Cable]:
        """The cables as force elements of the kernels (same law and values)."""
        return [Cable(a, int(b), p, L0, k, d, self.ramp)
                for a, b, p, L0, k, d in zip(self.anchor, self.body, self.point, self.rest_length,
                                             self.stiffness, self.damping)]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (..., 3) arrays (np.cross is slow on small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=np.result_type(a, b, float))
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
