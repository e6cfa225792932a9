"""Spatial algebra conventions and small helpers (the one place they are stated).

Conventions used by every module of ``mbfmu.dynamics`` and by the C kernels:

* **Spatial vectors are ordered [angular; linear].** A motion vector is
  ``[w; v]`` (rad/s; m/s), a force vector ``[n; f]`` (N m; N), both about the
  origin of the frame they are expressed in.
* **Frames in names** (monogram notation): ``R_AB`` is the rotation of frame B
  in frame A (columns are B's axes in A coordinates), ``p_AB`` the origin of B
  in A coordinates (m), ``X_AB`` the pose (R_AB, p_AB). ``W`` is the world,
  ``P`` a parent body, ``J`` a joint's child frame, ``B`` a body.
* The body frame of body ``i`` coincides with the child frame of its joint.
* Quaternions (Euler parameters) are scalar first: ``(w, x, y, z)``.
* Spatial inertia about the body origin, body frame (Featherstone 2008,
  eq. 2.63): ``I = [Ic + m c~ c~^T, m c~; m c~^T, m 1]``, with ``c`` the
  centre of mass and ``Ic`` the rotational inertia about it.
"""
from __future__ import annotations

import numpy as np

from .symbolic import real_array, value, zeros

from ..errors import ModelError


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``v~`` with ``v~ u = v x u``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rot_axis(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix about the unit ``axis`` by ``angle`` (rad)."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    K = skew(a)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def rot_x(angle: float) -> np.ndarray:
    """Rotation about x by ``angle`` (rad)."""
    return rot_axis(np.array([1.0, 0, 0]), angle)


def rot_y(angle: float) -> np.ndarray:
    """Rotation about y by ``angle`` (rad)."""
    return rot_axis(np.array([0, 1.0, 0]), angle)


def rot_z(angle: float) -> np.ndarray:
    """Rotation about z by ``angle`` (rad)."""
    return rot_axis(np.array([0, 0, 1.0]), angle)


def rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF roll-pitch-yaw angles (rad) to a rotation: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    return rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)


def quat_to_rot(e: np.ndarray) -> np.ndarray:
    """Rotation matrix of the quaternion ``e = (w, x, y, z)`` (normalized first)."""
    w, x, y, z = np.asarray(e, float) / np.linalg.norm(e)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def rot_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)`` with ``w >= 0`` of a rotation matrix."""
    R = np.asarray(R, float)
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        e = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        e = np.empty(4)
        e[0] = (R[k, j] - R[j, k]) / s
        e[1 + i] = 0.25 * s
        e[1 + j] = (R[j, i] + R[i, j]) / s
        e[1 + k] = (R[k, i] + R[i, k]) / s
    e /= np.linalg.norm(e)
    return -e if e[0] < 0 else e


def spatial_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """6x6 spatial inertia about the body origin in body coordinates.

    Parameters
    ----------
    mass : float
        Mass, kg.
    com : array_like, shape (3,)
        Centre of mass in the body frame, m.
    inertia_com : array_like, shape (3, 3)
        Rotational inertia about the centre of mass, body axes, kg m^2.
    """
    c = real_array(com).reshape(3)
    Ic = real_array(inertia_com).reshape(3, 3)
    C = skew(c)
    I = zeros((6, 6))
    I[:3, :3] = Ic + mass * C @ C.T
    I[:3, 3:] = mass * C
    I[3:, :3] = mass * C.T
    I[3:, 3:] = mass * np.eye(3)
    return I


def check_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray, where: str) -> None:
    """Raise :class:`ModelError` naming ``where`` unless the rigid-body inertia
    is physical: finite, mass >= 0, inertia symmetric positive semi-definite,
    principal moments obeying the triangle inequality."""
    mass, com, Ic = float(mass), np.asarray(value(com), float), np.asarray(value(inertia_com), float)
    if not (np.isfinite(mass) and np.all(np.isfinite(com)) and np.all(np.isfinite(Ic))):
        raise ModelError(f"{where}: mass, centre of mass and inertia must be finite")
    if com.shape != (3,) or Ic.shape != (3, 3):
        raise ModelError(f"{where}: centre of mass must have 3 entries and inertia be 3x3")
    if mass < 0:
        raise ModelError(f"{where}: mass {mass} kg is negative")
    scale = max(np.abs(Ic).max(), 1e-300)
    if np.abs(Ic - Ic.T).max() > 1e-9 * scale:
        raise ModelError(f"{where}: inertia matrix is not symmetric")
    ev = np.linalg.eigvalsh(0.5 * (Ic + Ic.T))
    tol = 1e-9 * max(ev.max(), 0.0)
    if ev.min() < -tol:
        raise ModelError(f"{where}: inertia is not positive semi-definite (principal moments {ev})")
    a, b, c = np.sort(ev)
    if a + b < c - 1e-9 * max(c, 1e-300) * 10:
        raise ModelError(f"{where}: principal moments {ev} break the triangle inequality "
                         f"(I1 + I2 >= I3): no real mass distribution has them")
    if mass == 0 and ev.max() > 0:
        raise ModelError(f"{where}: a massless body cannot have rotational inertia")


def inertia_box(mass: float, size: tuple[float, float, float]) -> np.ndarray:
    """Rotational inertia about the centre of a solid box, kg m^2 (size in m)."""
    x, y, z = size
    return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])


def inertia_cylinder(mass: float, radius: float, length: float, axis: int = 2) -> np.ndarray:
    """Rotational inertia about the centre of a solid cylinder whose axis is
    the body axis ``axis`` (0, 1, 2), kg m^2."""
    Ia = 0.5 * mass * radius ** 2
    It = mass * (3 * radius ** 2 + length ** 2) / 12.0
    d = [It, It, It]
    d[axis] = Ia
    return np.diag(d)


def inertia_sphere(mass: float, radius: float) -> np.ndarray:
    """Rotational inertia of a solid sphere about its centre, kg m^2."""
    return 0.4 * mass * radius ** 2 * np.eye(3)
