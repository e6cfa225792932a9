"""Serial chains from Denavit-Hartenberg parameters.

Standard (distal) DH convention, as in Craig's "Introduction to Robotics",
ch. 3, in its *standard* (Paul/Spong) form: the frame of link ``i`` sits on
the axis of joint ``i + 1`` and

    ``T_{i-1,i} = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``

with ``theta_i = q_i + theta`` for a revolute joint and ``d_i = q_i + d`` for a
prismatic one (the row's ``theta`` / ``d`` are then constant offsets).

Mapping to the engine. A body frame of :class:`~mbfmu.dynamics.Model` is the
child frame of its joint, which moves about/along the joint axis ``z_{i-1}``.
Because ``Rz(theta)`` and ``Tz(d)`` commute, ``T_{i-1,i}`` splits into

    ``[Tz(d) Rz(theta_offset)]  *  Rz(q_i)  *  [Tx(a_i) Rx(alpha_i)]``
       (joint placement)          (joint)      (DH frame i in body frame i)

so body ``i`` of the model has its origin on joint axis ``i`` (the proximal
end of the link, where a drawing of the link starts) and the DH frame ``i``
sits at ``Tx(a_i) Rx(alpha_i)`` in it (:func:`dh_frame_in_body`). Link inertias
are given, as in most robotics tables, in DH frame ``i``; :func:`from_dh`
moves them into the body frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..errors import ModelError
from .joints import Prismatic, Revolute
from .model import Model, ModelBuilder
from .spatial import rot_x, rot_z
from .symbolic import real_array

JOINT_KINDS = ("revolute", "prismatic")


@dataclass(frozen=True)
class DHRow:
    """One link of a serial chain in standard DH parameters.

    Parameters
    ----------
    a : float
        Link length, distance along ``x_i`` from ``z_{i-1}`` to ``z_i``, m.
    alpha : float
        Link twist, angle about ``x_i`` from ``z_{i-1}`` to ``z_i``, rad.
    d : float
        Link offset along ``z_{i-1}``, m (a constant offset added to the joint
        coordinate for a prismatic joint).
    theta : float
        Joint angle about ``z_{i-1}``, rad (a constant offset added to the
        joint coordinate for a revolute joint).
    joint : str
        ``"revolute"`` or ``"prismatic"``.
    mass : float
        Link mass, kg.
    com : array_like (3,)
        Centre of mass in DH frame ``i``, m.
    inertia : array_like (3, 3) or (3,)
        Rotational inertia about the centre of mass, DH frame ``i`` axes
        (a 3-vector is a diagonal), kg m^2.
    name : str
        Body name (default ``link<i>``); the joint is named ``joint<i>``.
    """

    a: float = 0.0
    alpha: float = 0.0
    d: float = 0.0
    theta: float = 0.0
    joint: str = "revolute"
    mass: float = 0.0
    com: Sequence[float] = (0.0, 0.0, 0.0)
    inertia: Sequence = field(default_factory=lambda: np.zeros((3, 3)))
    name: str = ""


def dh_transform(a: float, alpha: float, d: float, theta: float) -> np.ndarray:
    """Homogeneous transform ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``, shape (4, 4).

    Written out element by element (Spong, Hutchinson & Vidyasagar, "Robot
    Modeling and Control", eq. 3.10) so that it is independent of the
    engine's rotation helpers.

    Parameters
    ----------
    a : float
        Link length along the new x axis [m].
    alpha : float
        Link twist about the new x axis [rad].
    d : float
        Offset along the previous z axis [m].
    theta : float
        Joint angle about the previous z axis [rad].
    """
    ct, st = np.cos(theta), np.sin(theta)
    ca, sa = np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def _as_row(row, i: int) -> DHRow:
    if isinstance(row, DHRow):
        r = row
    elif isinstance(row, Mapping):
        unknown = set(row) - set(DHRow.__dataclass_fields__)
        if unknown:
            raise ModelError(f"DH row {i}: unknown field(s) {sorted(unknown)}; known: "
                             f"{', '.join(DHRow.__dataclass_fields__)}")
        r = DHRow(**row)
    else:
        raise ModelError(f"DH row {i}: expected a DHRow or a mapping, got {type(row).__name__}")
    for fname in ("a", "alpha", "d", "theta", "mass"):
        val = getattr(r, fname)
        try:
            ok = np.isfinite(float(val))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ModelError(f"DH row {i}: {fname} = {val!r} is not a finite number")
    if r.joint not in JOINT_KINDS:
        raise ModelError(f"DH row {i}: joint {r.joint!r} is not one of {JOINT_KINDS}")
    return r


def dh_rows(rows: Sequence) -> list[DHRow]:
    """Validated copy of ``rows`` (DHRow instances or mappings of its fields)."""
    if len(rows) == 0:
        raise ModelError("a DH chain needs at least one row")
    return [_as_row(r, i) for i, r in enumerate(rows, start=1)]


def dh_frame_in_body(row: DHRow) -> tuple[np.ndarray, np.ndarray]:
    """Pose ``(R_BF, p_BF)`` of DH frame ``i`` in the model's body frame ``i``:
    ``Tx(a) Rx(alpha)``."""
    return rot_x(row.alpha), real_array([row.a, 0.0, 0.0])


def dh_forward_kinematics(rows: Sequence, q, base: np.ndarray | None = None) -> np.ndarray:
    """World transforms of the DH frames ``0..n`` by plain chaining.

    Parameters
    ----------
    rows : sequence of DHRow
    q : array_like (n,)
        Joint coordinates (rad or m).
    base : ndarray (4, 4), optional
        Pose of DH frame 0 in the world (identity).

    Returns
    -------
    ndarray (n + 1, 4, 4)
        ``T[0]`` is frame 0, ``T[n]`` the last link's frame (its origin is the
        tip of the chain).
    """
    rows = dh_rows(rows)
    q = np.asarray(q, float).reshape(-1)
    if q.size != len(rows):
        raise ModelError(f"{q.size} joint coordinates for {len(rows)} DH rows")
    T = np.empty((len(rows) + 1, 4, 4))
    T[0] = np.eye(4) if base is None else np.asarray(base, float)
    for i, (r, qi) in enumerate(zip(rows, q), start=1):
        theta = r.theta + (qi if r.joint == "revolute" else 0.0)
        d = r.d + (qi if r.joint == "prismatic" else 0.0)
        T[i] = T[i - 1] @ dh_transform(r.a, r.alpha, d, theta)
    return T


def from_dh(rows: Sequence, gravity: Sequence[float] = (0.0, 0.0, -9.81),
            base: np.ndarray | None = None, name: str = "dh") -> Model:
    """Build a serial-chain :class:`Model` from standard DH parameters.

    Parameters
    ----------
    rows : sequence of DHRow (or mappings with its fields)
        One row per joint, base to tip.
    gravity : array_like (3,)
        m/s^2, world frame.
    base : ndarray (4, 4), optional
        Pose of DH frame 0 in the world (``sA0`` in Wang et al. 2009, the rigid arm's source); identity by
        default.
    name : str
        Model name.

    Returns
    -------
    Model
        Bodies ``1..n`` are the links; body ``i``'s frame is the joint frame
        described in the module docstring, so DH frame ``i`` is at
        :func:`dh_frame_in_body` in it and the chain's tip is the point
        ``(a_n, 0, 0)`` of body ``n``.

    Raises
    ------
    ModelError
        Non-finite parameters, unknown joint type, non-physical inertia, a
        joint that moves no mass.
    """
    rows = dh_rows(rows)
    T0 = np.eye(4) if base is None else np.asarray(base, float)
    if T0.shape != (4, 4) or not np.all(np.isfinite(T0)) or \
            np.abs(T0[3] - [0, 0, 0, 1]).max() > 1e-12:
        raise ModelError("base must be a finite 4x4 homogeneous transform")
    b = ModelBuilder(gravity=gravity, name=name)
    # pose of the previous DH frame in the previous body frame
    R_prev, p_prev = T0[:3, :3], T0[:3, 3]
    parent = "world"
    for i, r in enumerate(rows, start=1):
        body = r.name or f"link{i}"
        # constant part of Rz(theta) Tz(d): the whole of it is the offset
        R_fix, p_fix = rot_z(r.theta), real_array([0.0, 0.0, r.d])
        joint = (Revolute if r.joint == "revolute" else Prismatic)(axis=(0.0, 0.0, 1.0))
        R_PJ = R_prev @ R_fix
        p_PJ = p_prev + R_prev @ p_fix
        R_BF, p_BF = dh_frame_in_body(r)
        I = real_array(r.inertia)
        if I.shape == (3,):
            I = np.diag(I)
        if I.shape != (3, 3):
            raise ModelError(f"DH row {i} ({body!r}): inertia must be 3x3 or a 3-vector")
        com = real_array(r.com).reshape(-1)
        if com.shape != (3,):
            raise ModelError(f"DH row {i} ({body!r}): com must have 3 entries")
        b.add_body(body, parent, joint, r.mass, p_BF + R_BF @ com, R_BF @ I @ R_BF.T,
                   R_PJ=R_PJ, p_PJ=p_PJ, joint_name=f"joint{i}")
        R_prev, p_prev = R_BF, p_BF
        parent = body
    return b.build()
