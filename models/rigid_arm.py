"""Rigid 3-DOF arm of Wang et al. (2009): base yaw, shoulder and elbow pitch.

Source: Wang Wenxi, Xiao Shide, Meng Wen, Meng Xiangyin and Zhang Weihua,
"Dynamic modeling and simulation of mechanic arm based on virtual prototype",
Application Research of Computers 26(1), 2009 (in Chinese).

The mechanism
-------------
World frame ``S`` as in the paper: origin at the centre of mass of the base,
``z`` up (against gravity). The base (a solid cylinder, radius 400 mm,
height 300 mm) turns about ``z`` (joint 1, angle ``theta1``); on its top face,
on the axis, the shoulder (joint 2) pitches the upper arm, and at the upper
arm's end the elbow (joint 3) pitches the forearm. Both arms are cylinders of
radius 200 mm and length 1000 mm with the centre of mass at mid-length. The
joints are frictionless. The model is built from standard DH parameters
(:func:`mbfmu.dynamics.dh.from_dh`):

====== ====== ========= ====== ===========
joint  a (m)  alpha     d (m)  theta
====== ====== ========= ====== ===========
1      0      +90 deg   h      theta1
2      l2     0         0      theta2
3      l3     0         0      theta3
====== ====== ========= ====== ===========

with ``h = base_height / 2`` (shoulder height above the origin, the paper's
``l0 + l1``) and ``l2 = l3 = link_length``. Tip position (the paper's eq. 3,
``pz`` derived here because the printed one lacks the upper-arm term)::

    px = cos(theta1) (l2 cos theta2 + l3 cos(theta2 + theta3))
    py = sin(theta1) (l2 cos theta2 + l3 cos(theta2 + theta3))
    pz = h + l2 sin theta2 + l3 sin(theta2 + theta3)

Readings of the paper's data (decisions)
----------------------------------------
* **Mass.** The paper says the arms "total 20 kg" (总量为20 kg). We read it as
  the total of the two arm links, 10 kg each (parameter ``arm_mass`` = 20 kg,
  split equally). Reason: the paper's link inertia 0.90 kg m^2 is then
  consistent with the links' size (a uniform 10 kg cylinder of radius 0.2 m
  and length 1 m has 0.93 kg m^2 about a transverse axis through its centre),
  while a 20 kg link of 1 m length would have at least 1.67 kg m^2. Set
  ``arm_mass=40`` for the other reading (20 kg per link).
* **Inertia axis.** 0.90 kg m^2 is taken about the link's centre of mass, for
  both transverse axes (it cannot be about the joint: that would make the
  inertia about the centre negative). The axial moment is the solid
  cylinder's ``m r^2 / 2`` (0.2 kg m^2).
* **Base.** The base turns with joint 1 (the paper calls it a homogeneous
  rigid body; it is the only part that joint 1 moves besides the arms). Its
  mass is not given: ``base_mass`` = 20 kg is our choice.
* **Shoulder height.** The paper does not print ``l0``, ``l1``: the shoulder
  sits on the base's top face, ``h = base_height / 2 = 0.15 m`` above the
  origin.

Helpers: closed-form :func:`fk`, :func:`ik` (both elbow solutions),
:func:`jacobian`, the quintic planner :func:`quintic_coefficients` /
:func:`quintic` and :func:`joint_trajectory` (joint positions, rates and
accelerations along a planned tip path, e.g. for computed-torque feedforward
with :func:`mbfmu.dynamics.rnea`).
"""
from __future__ import annotations

import math

import numpy as np

from mbfmu.dynamics import point_position, sensors
from mbfmu.dynamics.dh import DHRow, from_dh
from mbfmu.dynamics.spatial import rot_y
from mbfmu.errors import InputError
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.outputs import declare_outputs, measured, measured_vector
from mbfmu.plant.parameters import Declaration, Parameter
from mbfmu.plant import Shape
from mbfmu.plant.signals import vector

__all__ = ["RigidArm", "PLANT", "fk", "ik", "jacobian", "quintic_coefficients", "quintic",
           "joint_trajectory"]

ELBOWS = ("up", "down")


# ---------------------------------------------------------------- kinematics
def fk(q, l2: float = 1.0, l3: float = 1.0, h: float = 0.15) -> np.ndarray:
    """Tip position (m) for joint angles ``q = (theta1, theta2, theta3)`` (rad).

    ``q`` may have shape (3,) or (n, 3); the result has the same shape.
    """
    q = np.asarray(q, float)
    t1, t2, t3 = q[..., 0], q[..., 1], q[..., 2]
    r = l2 * np.cos(t2) + l3 * np.cos(t2 + t3)
    return np.stack([np.cos(t1) * r, np.sin(t1) * r, h + l2 * np.sin(t2) + l3 * np.sin(t2 + t3)],
                    axis=-1)


def ik(p, l2: float = 1.0, l3: float = 1.0, h: float = 0.15, elbow: str = "up") -> np.ndarray:
    """Joint angles (rad) that put the tip at ``p`` (m), in closed form.

    Derivation: with ``r = sqrt(px^2 + py^2)`` and ``z = pz - h`` the arm is a
    planar two-link chain in the vertical plane at azimuth
    ``theta1 = atan2(py, px)``; the law of cosines gives
    ``cos theta3 = (r^2 + z^2 - l2^2 - l3^2) / (2 l2 l3)`` and
    ``theta2 = atan2(z, r) - atan2(l3 sin theta3, l2 + l3 cos theta3)``.

    Parameters
    ----------
    p : array_like (3,) or (n, 3)
        Tip position(s), m.
    l2, l3 : float
        Arm lengths, m.
    h : float
        Shoulder height above the origin, m.
    elbow : {"up", "down"}
        ``"up"``: elbow above the shoulder-tip line (``theta3 <= 0``);
        ``"down"``: below it (``theta3 >= 0``).

    Returns
    -------
    ndarray (3,) or (n, 3)
        ``theta1`` in (-pi, pi] (0 on the vertical axis, where it is free).

    Raises
    ------
    InputError
        A point out of reach (outside the shell ``|l2 - l3| <= distance from
        the shoulder <= l2 + l3``) or an unknown ``elbow``.
    """
    if elbow not in ELBOWS:
        raise InputError(f"elbow must be one of {ELBOWS}, got {elbow!r}")
    p = np.asarray(p, float)
    if p.shape[-1:] != (3,) or not np.all(np.isfinite(p)):
        raise InputError(f"tip position must be finite with 3 components, got shape {p.shape}")
    px, py, z = p[..., 0], p[..., 1], p[..., 2] - h
    r = np.hypot(px, py)
    c3 = (r ** 2 + z ** 2 - l2 ** 2 - l3 ** 2) / (2 * l2 * l3)
    tol = 1e-12
    if np.any(np.abs(c3) > 1 + tol):
        bad = np.atleast_2d(p)[np.flatnonzero(np.abs(np.atleast_1d(c3)) > 1 + tol)[0]]
        raise InputError(f"tip position {bad.tolist()} m is out of reach: its distance from the "
                         f"shoulder must lie in [{abs(l2 - l3):g}, {l2 + l3:g}] m")
    s3 = np.sqrt(np.clip(1 - c3 ** 2, 0.0, None)) * (-1.0 if elbow == "up" else 1.0)
    t3 = np.arctan2(s3, np.clip(c3, -1, 1))
    t2 = np.arctan2(z, r) - np.arctan2(l3 * s3, l2 + l3 * c3)
    t1 = np.where(r > 1e-12, np.arctan2(py, px), 0.0)
    return np.stack([t1, t2, t3], axis=-1)


def jacobian(q, l2: float = 1.0, l3: float = 1.0) -> np.ndarray:
    """Tip Jacobian ``d p / d q`` (m/rad), shape (3, 3), from :func:`fk`."""
    t1, t2, t3 = np.asarray(q, float)
    r = l2 * math.cos(t2) + l3 * math.cos(t2 + t3)
    dr2 = -l2 * math.sin(t2) - l3 * math.sin(t2 + t3)
    dr3 = -l3 * math.sin(t2 + t3)
    c1, s1 = math.cos(t1), math.sin(t1)
    return np.array([[-s1 * r, c1 * dr2, c1 * dr3],
                     [c1 * r, s1 * dr2, s1 * dr3],
                     [0.0, l2 * math.cos(t2) + l3 * math.cos(t2 + t3), l3 * math.cos(t2 + t3)]])


# ----------------------------------------------------------- trajectory planner
def quintic_coefficients(p0, pf, T: float, v0=0.0, vf=0.0, a0=0.0, af=0.0) -> np.ndarray:
    """Coefficients ``c0..c5`` of ``p(t) = sum c_k t^k`` meeting position,
    velocity and acceleration at ``t = 0`` and ``t = T`` (Wang et al. 2009, sec. 1.2).

    Parameters
    ----------
    p0, pf : float or array_like (m,)
        Start and end positions, one column per Cartesian axis (m).
    T : float
        Duration, s (> 0).
    v0, vf, a0, af : float or array_like
        Boundary velocities (m/s) and accelerations (m/s^2); zero by default.

    Returns
    -------
    ndarray (6,) or (6, m)
    """
    if not (np.isfinite(T) and T > 0):
        raise InputError(f"trajectory duration T = {T!r} s must be finite and > 0")
    p0, pf, v0, vf, a0, af = np.broadcast_arrays(*(np.asarray(x, float) for x in (p0, pf, v0, vf, a0, af)))
    d = pf - p0
    return np.stack([p0, v0, a0 / 2,
                     (20 * d - (8 * vf + 12 * v0) * T - (3 * a0 - af) * T ** 2) / (2 * T ** 3),
                     (-30 * d + (14 * vf + 16 * v0) * T + (3 * a0 - 2 * af) * T ** 2) / (2 * T ** 4),
                     (12 * d - 6 * (vf + v0) * T + (af - a0) * T ** 2) / (2 * T ** 5)])


def quintic(p0, pf, T: float, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rest-to-rest quintic tip path from ``p0`` to ``pf`` (m) in ``T`` s.

    Returns position (m), velocity (m/s) and acceleration (m/s^2) at times
    ``t`` (s), each of shape ``(len(t), 3)`` (or (3,) for a scalar ``t``).
    Before 0 and after ``T`` the tip rests at ``p0`` / ``pf``.
    """
    c = quintic_coefficients(p0, pf, T)
    t = np.asarray(t, float)
    tc = np.clip(t, 0.0, T)[..., None]
    moving = ((t >= 0) & (t <= T))[..., None]
    pos = sum(c[k] * tc ** k for k in range(6))
    vel = sum(k * c[k] * tc ** (k - 1) for k in range(1, 6)) * moving
    acc = sum(k * (k - 1) * c[k] * tc ** (k - 2) for k in range(2, 6)) * moving
    return pos, vel, acc


def joint_trajectory(p0, pf, T: float, t, l2: float = 1.0, l3: float = 1.0, h: float = 0.15,
                     elbow: str = "up") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint angles, rates and accelerations that move the tip along the
    quintic path :func:`quintic` (rad, rad/s, rad/s^2; each (len(t), 3)).

    The path is mapped through cylindrical coordinates: the azimuth and
    radius follow from ``(px, py)`` and their derivatives, then the planar
    two-link chain is inverted with its 2x2 Jacobian. Raises
    :class:`InputError` where the path leaves the workspace or crosses the
    vertical axis or a stretched/folded arm (singular configurations).
    """
    P, V, A = (np.atleast_2d(a) for a in quintic(p0, pf, T, np.atleast_1d(t)))
    q = ik(P, l2, l3, h, elbow)
    x, y, xd, yd, xdd, ydd = P[:, 0], P[:, 1], V[:, 0], V[:, 1], A[:, 0], A[:, 1]
    r = np.hypot(x, y)
    if np.any(r < 1e-9):
        raise InputError("the tip path crosses the vertical axis, where theta1 is undefined")
    rd = (x * xd + y * yd) / r
    t1d = (x * yd - y * xd) / r ** 2
    rdd = (xd ** 2 + yd ** 2 + x * xdd + y * ydd - rd ** 2) / r
    t1dd = (x * ydd - y * xdd) / r ** 2 - 2 * rd * t1d / r
    zd, zdd = V[:, 2], A[:, 2]
    t2, t23 = q[:, 1], q[:, 1] + q[:, 2]
    # planar chain: [r; z] = [l2 c2 + l3 c23; l2 s2 + l3 s23]
    J = np.empty((len(r), 2, 2))
    J[:, 0, 0] = -l2 * np.sin(t2) - l3 * np.sin(t23)
    J[:, 0, 1] = -l3 * np.sin(t23)
    J[:, 1, 0] = l2 * np.cos(t2) + l3 * np.cos(t23)
    J[:, 1, 1] = l3 * np.cos(t23)
    if np.any(np.abs(np.linalg.det(J)) < 1e-9):
        raise InputError("the tip path passes a stretched or folded arm (singular Jacobian)")
    w = np.linalg.solve(J, np.stack([rd, zd], axis=1)[..., None])[..., 0]
    w2, w23 = w[:, 0], w[:, 0] + w[:, 1]
    bias = np.stack([-l2 * np.cos(t2) * w2 ** 2 - l3 * np.cos(t23) * w23 ** 2,
                     -l2 * np.sin(t2) * w2 ** 2 - l3 * np.sin(t23) * w23 ** 2], axis=1)
    wd = np.linalg.solve(J, (np.stack([rdd, zdd], axis=1) - bias)[..., None])[..., 0]
    qd = np.column_stack([t1d, w])
    qdd = np.column_stack([t1dd, wd])
    return q, qd, qdd


# --------------------------------------------------------------------- plant
PARAMETERS = Declaration(
    "rigid_arm",
    Parameter("link_length", "m", 1.0, "length of each arm", "(0, inf)"),
    Parameter("link_radius", "m", 0.2, "radius of each arm", "(0, inf)"),
    Parameter("arm_mass", "kg", 20.0, "total mass of the two arms (split equally)", "(0, inf)"),
    Parameter("link_inertia", "kg.m2", 0.90,
              "transverse moment of inertia of each arm about its centre of mass", "(0, inf)"),
    Parameter("base_radius", "m", 0.4, "radius of the turning base", "(0, inf)"),
    Parameter("base_height", "m", 0.3, "height of the turning base", "(0, inf)"),
    Parameter("base_mass", "kg", 20.0, "mass of the turning base", "(0, inf)"),
    Parameter("gravity", "m/s2", 9.81, "gravitational acceleration along -z", "[0, inf)"),
    Parameter("theta1_0", "rad", 0.0, "initial base yaw angle"),
    Parameter("theta2_0", "rad", math.pi / 4, "initial shoulder pitch angle"),
    Parameter("theta3_0", "rad", -math.pi / 4, "initial elbow pitch angle"),
)


class RigidArm(MultibodyPlant):
    """3-DOF rigid arm of Wang et al. (2009) (base yaw, shoulder and elbow pitch).

    Its parameters (keywords, SI units, defaults, bounds) are :data:`PARAMETERS`:
    the paper's values (arms 1 m long, 0.2 m radius, 20 kg for the two, 0.90
    kg m^2 each; base 0.4 m by 0.3 m), a 20 kg base (our choice), gravity along
    -z, initial angles 0, 45 deg, -45 deg.
    """

    name = "rigid_arm"
    parameter_declaration = PARAMETERS
    description = ("Rigid 3-DOF arm of Wang et al., 'Dynamic modeling and simulation of mechanic arm based "
                   "on virtual prototype' (2009): turning base (yaw) and two pitch joints, DH model, "
                   "frictionless joints, joint torques in.")
    default_step = 0.01
    default_stop_time = 5.0
    internal_step = 1e-3

    @PARAMETERS.constructor
    def __init__(self, p):
        link_length, link_radius, arm_mass, link_inertia = p.link_length, p.link_radius, p.arm_mass, p.link_inertia
        base_radius, base_height, base_mass, gravity = p.base_radius, p.base_height, p.base_mass, p.gravity
        m_link = arm_mass / 2
        axial = 0.5 * m_link * link_radius ** 2
        if axial > 2 * link_inertia:  # a condition on two parameters: a guard of the tape
            raise InputError(
                f"plant {self.name!r}: parameter 'link_inertia' = {link_inertia} kg m^2 is too small for "
                f"a {m_link:g} kg arm of radius {link_radius:g} m (axial moment {axial:g} kg m^2 needs a "
                f"transverse moment of at least {axial / 2:g} kg m^2)")
        self.l2 = self.l3 = link_length
        self.h = base_height / 2
        base_axial = 0.5 * base_mass * base_radius ** 2
        base_trans = base_mass * (3 * base_radius ** 2 + base_height ** 2) / 12
        link = dict(a=link_length, joint="revolute", mass=m_link, com=(-link_length / 2, 0.0, 0.0),
                    inertia=(axial, link_inertia, link_inertia))
        rows = [DHRow(a=0.0, alpha=math.pi / 2, d=self.h, mass=base_mass, com=(0.0, -self.h, 0.0),
                      inertia=(base_trans, base_axial, base_trans), name="base"),
                DHRow(**link, name="upper_arm"), DHRow(**link, name="forearm")]
        model = from_dh(rows, gravity=(0.0, 0.0, -gravity), name=self.name)
        super().__init__(model, np.eye(3), q0=[p.theta1_0, p.theta2_0, p.theta3_0])

        self.parameters = PARAMETERS.signals(p)
        self.inputs = vector("tau", 3, "input", "N.m", "torque of joint {i}")
        q0 = self.initial_state()[:3]
        tip0 = fk(q0, self.l2, self.l3, self.h)
        # each output with the engine sensor that computes it (in Python and in the native FMU)
        self.outputs, self.sensors = declare_outputs(
            measured_vector("q", 3, "rad", "angle of joint {i}", sensors.StateValue, start=q0),
            measured_vector("v", 3, "rad/s", "rate of joint {i}", sensors.Velocity),
            measured_vector("tip_position", 3, "m", "tip position, world axis {i}",
                            lambda k: sensors.PointPosition(3, (self.l3, 0.0, 0.0), k), start=tip0),
            measured("kinetic_energy", "J", "kinetic energy", sensors.KineticEnergy()),
            measured("potential_energy", "J", "gravitational potential energy (zero at the base's centre of mass)",
                     sensors.PotentialEnergy(), start=self.energies(self.initial_state())[1]))
        self.feedthrough = {}
        arm = dict(kind="cylinder", size=(link_radius, link_length), R=rot_y(math.pi / 2),
                   p=np.array([link_length / 2, 0.0, 0.0]))
        shaft = dict(kind="cylinder", size=(0.5 * link_radius, 2.4 * link_radius), color="#444444")
        self.geometry = (
            Shape(1, "cylinder", (base_radius, base_height), p=np.array([0.0, 0.0, -self.h]),
                  color="#8c8c8c", name="base"),
            Shape(2, color="#4c72b0", name="upper_arm", **arm),
            Shape(3, color="#dd8452", name="forearm", **arm),
            Shape(2, name="shoulder_shaft", **shaft),
            Shape(3, name="elbow_shaft", **shaft),
        )

    # ---- kinematics of this instance ------------------------------------
    def fk(self, q) -> np.ndarray:
        """Tip position (m) for joint angles ``q`` (rad), closed form."""
        return fk(q, self.l2, self.l3, self.h)

    def ik(self, p, elbow: str = "up") -> np.ndarray:
        """Joint angles (rad) for tip position ``p`` (m); see :func:`ik`."""
        return ik(p, self.l2, self.l3, self.h, elbow)

    def tip_position(self, q) -> np.ndarray:
        """Tip position (m) from the multibody model's kinematics."""
        return point_position(self.model, q, 3, (self.l3, 0.0, 0.0))



PLANT = RigidArm
