"""Joint drives: servo actuation and Coulomb friction of 1-DOF joints, kernel force elements.

A :class:`JointDrive` on a revolute or prismatic joint reads its *command*
``c`` from the generalized forces the plant applies (``tau = B u``, entry of
the joint's velocity coordinate) and replaces it by the drive's torque
(N m, or N for a prismatic joint), computed in C (``csrc/drives.h``) by every
integrator and by the native FMU runtime:

``"torque"``
    ``f = c`` (the command is the torque itself);
``"position"``
    ``f = clip(kp (c - q) - kd v, -torque_limit, torque_limit)``, ``c`` a
    position set-point (rad or m);
``"velocity"``
    ``f = clip(kd (c - v), -torque_limit, torque_limit)``, ``c`` a velocity
    set-point (rad/s or m/s);

and in every mode Coulomb friction smoothed over ``friction_velocity``,
``f -= friction tanh(v / friction_velocity)``, opposes the motion.

Declare drives with :meth:`mbfmu.dynamics.ModelBuilder.add_joint_drive`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .joints import PRISMATIC, REVOLUTE

MODES = {"torque": 0, "position": 1, "velocity": 2}
NO_LIMIT = 1e300  # the kernels take finite numbers only: this encodes "no torque limit"
COLUMNS = 8  # DR_N of csrc/drives.h: iv, iq, mode, kp, kd, limit, friction, friction velocity


@dataclass(frozen=True)
class JointDrive:
    """A servo and/or Coulomb friction acting in one 1-DOF joint (law: module docstring).

    Attributes
    ----------
    mode : {"torque", "position", "velocity"}
        What the joint's command is: the torque itself, or a servo set-point.
    kp : float
        Position gain, N m/rad (N/m), >= 0 (position servos).
    kd : float
        Velocity gain, N m s/rad (N s/m), >= 0 (position and velocity servos).
    torque_limit : float
        Saturation of the servo torque, N m (N), >= 0; ``inf``: none.
    friction : float
        Coulomb friction torque, N m (N), >= 0.
    friction_velocity : float
        Velocity over which the friction is smoothed (``tanh``), rad/s (m/s), > 0.
    """

    mode: str = "torque"
    kp: float = 0.0
    kd: float = 0.0
    torque_limit: float = np.inf
    friction: float = 0.0
    friction_velocity: float = 1e-3

    def __post_init__(self):
        if self.mode not in MODES:
            raise ModelError(f"joint drive mode {self.mode!r} is not one of {', '.join(MODES)}")
        for name in ("kp", "kd", "friction"):
            v = float(getattr(self, name))
            if not (np.isfinite(v) and v >= 0):
                raise ModelError(f"joint drive {name} = {getattr(self, name)!r} must be finite and >= 0")
        if not float(self.torque_limit) >= 0:
            raise ModelError(f"joint drive torque_limit = {self.torque_limit!r} must be >= 0 (inf: none)")
        if not (np.isfinite(self.friction_velocity) and self.friction_velocity > 0):
            raise ModelError(f"joint drive friction_velocity = {self.friction_velocity!r} must be finite and > 0")

    def row(self, iv: int, iq: int) -> list[float]:
        """The kernels' parameter row (``DR_*`` columns of ``csrc/drives.h``)."""
        return [iv, iq, MODES[self.mode], float(self.kp), float(self.kd),
                min(float(self.torque_limit), NO_LIMIT), float(self.friction), float(self.friction_velocity)]


def pack(model, drives: dict) -> np.ndarray:
    """The drive rows (n, 8) of ``drives`` ({body index: JointDrive}) on ``model``, in body order."""
    rows = []
    for i in sorted(drives):
        d = drives[i]
        if not isinstance(d, JointDrive):
            raise ModelError(f"joint drive on body {i}: expected a JointDrive, got {d!r}")
        if not 1 <= i < model.nbodies:
            raise ModelError(f"joint drive on body index {i}: no such body")
        if model.joints[i].code not in (REVOLUTE, PRISMATIC):
            raise ModelError(f"joint drive on body {model.body_names[i]!r}: its joint is not revolute or "
                             "prismatic")
        rows.append(d.row(int(model.idx_v[i]), int(model.idx_q[i])))
    return np.array(rows, dtype=float).reshape(-1, COLUMNS)

