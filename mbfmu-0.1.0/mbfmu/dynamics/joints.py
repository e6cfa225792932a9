"""Joint types.

A joint connects a body to its parent. Its child frame (the body frame) moves
relative to the joint frame, which is fixed in the parent at the placement
given when the body is added. Sizes: ``nq`` configuration coordinates and
``nv`` velocity coordinates.

=========== === === ==========================================================
type        nq  nv  coordinates
=========== === === ==========================================================
Fixed       0   0   none
Revolute    1   1   angle about ``axis`` (rad)
Prismatic   1   1   displacement along ``axis`` (m)
Spherical   4   3   q: unit quaternion (w, x, y, z); v: angular velocity in the
                    body frame (rad/s)
FreeFlyer   7   6   q: position of the body origin in the joint frame (m) then
                    quaternion (w, x, y, z); v: body-frame spatial velocity
                    [w_B; v_B] (rad/s; m/s)
Universal   2   2   angle about ``axis1`` then about ``axis2`` (moved by the
                    first rotation), rad
Planar      3   3   x, y translation in the joint frame (m), then rotation
                    about its z axis (rad); v are the rates of q
=========== === === ==========================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError

# codes shared with csrc/mb.h (enum mb_joint_type)
FIXED, REVOLUTE, PRISMATIC, SPHERICAL, FREE, UNIVERSAL, PLANAR = range(7)


def _unit(axis, what: str) -> np.ndarray:
    a = np.asarray(axis, dtype=float).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
        raise ModelError(f"{what}: axis {axis!r} must be a finite, non-zero 3-vector")
    return a / np.linalg.norm(a)


@dataclass(frozen=True)
class Joint:
    """Base of the joint types; use the subclasses."""

    code: int = field(init=False, default=FIXED)
    nq: int = field(init=False, default=0)
    nv: int = field(init=False, default=0)

    @property
    def kind(self) -> str:
        return type(self).__name__.lower()

    def axes(self) -> tuple[np.ndarray, np.ndarray]:
        """(axis1, axis2) for the kernels (zeros where unused)."""
        return np.zeros(3), np.zeros(3)

    def neutral(self) -> np.ndarray:
        """The neutral configuration (zero displacement, identity rotation)."""
        return np.zeros(self.nq)

    def dof_labels(self) -> list[str]:
        """Labels of the velocity coordinates."""
        return [""] * self.nv

    def q_labels(self) -> list[str]:
        """Labels of the configuration coordinates."""
        return [""] * self.nq


@dataclass(frozen=True)
class Fixed(Joint):
    """A weld: no motion."""


@dataclass(frozen=True)
class Revolute(Joint):
    """Rotation about ``axis`` (joint frame), angle in rad.

    Attributes
    ----------
    axis : tuple of float
        Direction of the axis in the joint frame (normalized; dimensionless).
    """

    axis: tuple = (0.0, 0.0, 1.0)
    code: int = field(init=False, default=REVOLUTE)
    nq: int = field(init=False, default=1)
    nv: int = field(init=False, default=1)

    def axes(self):
        return _unit(self.axis, "revolute joint"), np.zeros(3)


@dataclass(frozen=True)
class Prismatic(Joint):
    """Translation along ``axis`` (joint frame), displacement in m.

    Attributes
    ----------
    axis : tuple of float
        Direction of the axis in the joint frame (normalized; dimensionless).
    """

    axis: tuple = (0.0, 0.0, 1.0)
    code: int = field(init=False, default=PRISMATIC)
    nq: int = field(init=False, default=1)
    nv: int = field(init=False, default=1)

    def axes(self):
        return _unit(self.axis, "prismatic joint"), np.zeros(3)


@dataclass(frozen=True)
class Spherical(Joint):
    """Ball joint: unit quaternion (w, x, y, z); body-frame angular velocity."""

    code: int = field(init=False, default=SPHERICAL)
    nq: int = field(init=False, default=4)
    nv: int = field(init=False, default=3)

    def neutral(self):
        return np.array([1.0, 0.0, 0.0, 0.0])

    def dof_labels(self):
        return ["wx", "wy", "wz"]

    def q_labels(self):
        return ["qw", "qx", "qy", "qz"]


@dataclass(frozen=True)
class FreeFlyer(Joint):
    """6-DOF floating base: position (m) and quaternion; body-frame twist."""

    code: int = field(init=False, default=FREE)
    nq: int = field(init=False, default=7)
    nv: int = field(init=False, default=6)

    def neutral(self):
        return np.array([0.0, 0, 0, 1.0, 0, 0, 0])

    def dof_labels(self):
        return ["wx", "wy", "wz", "vx", "vy", "vz"]

    def q_labels(self):
        return ["x", "y", "z", "qw", "qx", "qy", "qz"]


@dataclass(frozen=True)
class Universal(Joint):
    """Two successive rotations: about ``axis1``, then ``axis2`` (rad).

    Attributes
    ----------
    axis1 : tuple of float
        First axis, in the joint frame (dimensionless).
    axis2 : tuple of float
        Second axis, turned by the first rotation (dimensionless); not parallel to ``axis1``.
    """

    axis1: tuple = (1.0, 0.0, 0.0)
    axis2: tuple = (0.0, 1.0, 0.0)
    code: int = field(init=False, default=UNIVERSAL)
    nq: int = field(init=False, default=2)
    nv: int = field(init=False, default=2)

    def axes(self):
        a1 = _unit(self.axis1, "universal joint axis1")
        a2 = _unit(self.axis2, "universal joint axis2")
        if abs(float(a1 @ a2)) > 1 - 1e-9:
            raise ModelError("universal joint: axis1 and axis2 must not be parallel")
        return a1, a2

    def dof_labels(self):
        return ["1", "2"]

    q_labels = dof_labels


@dataclass(frozen=True)
class Planar(Joint):
    """Motion in the joint frame's x-y plane: x, y (m) then angle about z (rad)."""

    code: int = field(init=False, default=PLANAR)
    nq: int = field(init=False, default=3)
    nv: int = field(init=False, default=3)

    def dof_labels(self):
        return ["x", "y", "theta"]

    q_labels = dof_labels


JOINT_TYPES = {
    "fixed": Fixed, "revolute": Revolute, "prismatic": Prismatic, "spherical": Spherical,
    "free": FreeFlyer, "freeflyer": FreeFlyer, "universal": Universal, "planar": Planar,
}


def make_joint(kind: str, **kwargs) -> Joint:
    """Joint by type name (``"revolute"``, ``"prismatic"``, ``"spherical"``,
    ``"free"``, ``"fixed"``, ``"universal"``, ``"planar"``).

    Parameters
    ----------
    kind : str
        The type name, case-insensitive.
    **kwargs
        The joint's own attributes (``axis`` for revolute and prismatic joints).

    Returns
    -------
    Joint
    """
    try:
        cls = JOINT_TYPES[kind.lower()]
    except KeyError:
        raise ModelError(f"unknown joint type {kind!r}; known: {', '.join(sorted(JOINT_TYPES))}") from None
    return cls(**kwargs)
