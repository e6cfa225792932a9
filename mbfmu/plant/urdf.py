"""A robot's URDF as a plant in one call: :func:`plant_from_urdf`.

The plant is a :class:`~mbfmu.plant.multibody.MultibodyPlant` on the model
:func:`mbfmu.load_urdf` reads (body order and coordinates as Pinocchio's for
the same file), with named, unit-carrying ports:

inputs, per actuated joint (:class:`Servo` or a mode name per joint)
    ``tau[i]`` (N.m, or N for a prismatic joint) for torque-driven joints;
    ``q_ref[i]`` (rad or m) for position servos and ``v_ref[i]`` (rad/s or
    m/s) for velocity servos. A servo applies
    ``clip(kp (q_ref - q) - kd v, -limit, limit)`` (position) or
    ``clip(kd (v_ref - v), -limit, limit)`` (velocity). Each vector counts
    its own joints in model order; every signal's description names its joint.
outputs
    ``q[1..nq]`` and ``v[1..nv]`` (the configuration and velocity, named as
    the states so a replay can rebuild poses from them); for each link in
    ``poses``: ``<link>_p[1..3]`` (origin in the world, m) and
    ``<link>_quat[1..4]`` (``R_WB`` as a unit quaternion, scalar first); for
    each link in ``twists``: ``<link>_twist[1..6]``, [angular (rad/s);
    linear velocity of the link origin (m/s)], both in world coordinates.
geometry
    The URDF's ``<visual>`` elements (meshes and primitives with their
    colours, see :mod:`mbfmu.plant.urdf_visuals`), read when first asked for, so
    an FMU that never draws needs no mesh library.

Optional physics from the URDF: ``damping=True`` adds ``<dynamics damping>``
as viscous joint damping, ``friction=True`` ``<dynamics friction>`` as
Coulomb friction (smoothed over ``friction_velocity``), ``limits=True`` the
``<limit lower upper>`` range as stiff one-sided springs; servos' torque
limits default to ``<limit effort>``. ``floating_base=True`` puts the root
link on a free joint (legged robots).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..dynamics import _kernels
from ..dynamics.algorithms import crba, forward_kinematics
from ..dynamics.joints import PRISMATIC, REVOLUTE
from ..dynamics.urdf import load_urdf, parse_floats
from ..errors import InputError, ModelError, UnknownNameError
from .multibody import MultibodyPlant
from .signals import Signal

MODES = ("torque", "position", "velocity", "passive")
SERVO_BANDWIDTH = 2 * np.pi * 5.0  # rad/s: default servo gains give this natural frequency (critically damped)


@dataclass(frozen=True)
class Servo:
    """How one joint is driven.

    Parameters
    ----------
    mode : {"torque", "position", "velocity", "passive"}
        Input is the joint torque, a position or velocity set-point, or none.
    kp : float, optional
        Position gain, N.m/rad (N/m). Default: ``M_ii w^2`` with ``M_ii`` the
        joint's diagonal mass-matrix entry at the initial configuration and
        ``w = SERVO_BANDWIDTH``.
    kd : float, optional
        Velocity gain, N.m.s/rad (N.s/m). Default: ``2 M_ii w`` (critical
        damping with the default ``kp``).
    torque_limit : float, optional
        Saturation of the servo torque, N.m (N). Default: the URDF's
        ``<limit effort>``, else none.
    """

    mode: str = "torque"
    kp: float | None = None
    kd: float | None = None
    torque_limit: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError(f"servo mode {self.mode!r} is not one of {', '.join(MODES)}")
        for name in ("kp", "kd", "torque_limit"):
            v = getattr(self, name)
            if v is not None and not (np.isfinite(v) and v >= 0):
                raise InputError(f"servo {name} = {v!r} must be a finite number >= 0")


@dataclass(frozen=True)
class _Joint:
    """One actuatable joint of the robot (1-DOF, revolute or prismatic)."""

    name: str
    body: int
    iv: int      # velocity index
    iq: int      # configuration index
    revolute: bool
    effort: float | None
    friction: float


def _joint_table(path: str | os.PathLike, model) -> list[_Joint]:
    """The model's 1-DOF joints with their URDF ``<limit effort>`` and ``<dynamics friction>``."""
    text = str(path)
    root = ET.fromstring(text) if text.lstrip().startswith("<") else ET.parse(path).getroot()
    xml = {j.get("name"): j for j in root.findall("joint")}
    out = []
    for b in range(1, model.nbodies):
        joint = model.joints[b]
        if joint.code not in (REVOLUTE, PRISMATIC):
            continue
        name = model.joint_names[b]
        el = xml.get(name)
        lim = el.find("limit") if el is not None else None
        dyn = el.find("dynamics") if el is not None else None
        where = f"joint {name!r}"
        effort = float(parse_floats(lim.get("effort") if lim is not None else None, 1, (0.0,), f"{where} effort")[0])
        fric = float(parse_floats(dyn.get("friction") if dyn is not None else None, 1, (0.0,),
                                  f"{where} friction")[0])
        out.append(_Joint(name, b, int(model.idx_v[b]), int(model.idx_q[b]), joint.code == REVOLUTE,
                          effort if effort and effort > 0 else None, fric))
    return out


_DEFAULTS = {"actuation": "torque", "outputs": ["q", "v"], "poses": [], "twists": [], "floating_base": False,
             "damping": False, "friction": False, "limits": False, "gravity": [0.0, 0.0, -9.81], "q0": None,
             "v0": None, "name": None, "package_dirs": [], "mesh_faces": 12000, "friction_velocity": 1e-3,
             "internal_step": 1e-3, "default_step": 1e-2, "default_stop_time": 2.0}


def _json_options(**options: Any) -> dict[str, Any]:
    """The options that differ from the defaults, as JSON-able values (servos as dicts)."""
    def plain(a: Any) -> Any:
        if isinstance(a, Servo):
            return {"mode": a.mode, "kp": a.kp, "kd": a.kd, "torque_limit": a.torque_limit}
        if isinstance(a, Mapping):
            return {str(k): plain(v) for k, v in a.items()}
        return a
    return {k: plain(v) for k, v in options.items() if plain(v) != _DEFAULTS.get(k)}


def _servos(actuation: str | Servo | Mapping[str, str | Servo], joints: list[_Joint]) -> list[Servo]:
    def as_servo(a: Any, where: str) -> Servo:
        if isinstance(a, Servo):
            return a
        if isinstance(a, Mapping):  # a Servo written as a dict (how an FMU stores it)
            try:
                return Servo(**a)
            except TypeError as exc:
                raise InputError(f"actuation of {where}: {exc}") from None
        if isinstance(a, str):
            return Servo(a)
        raise InputError(f"actuation of {where}: {a!r} is neither a mode name ({', '.join(MODES)}) nor a Servo")

    if isinstance(actuation, Mapping) and not set(actuation) <= {"mode", "kp", "kd", "torque_limit"}:
        names = {j.name for j in joints}
        unknown = sorted(set(actuation) - names)
        if unknown:
            raise UnknownNameError(f"actuation names unknown joints {unknown}; the robot's joints: "
                                   f"{', '.join(j.name for j in joints)}")
        return [as_servo(actuation.get(j.name, "passive"), j.name) for j in joints]
    return [as_servo(actuation, "every joint") for _ in joints]


class URDFPlant(MultibodyPlant):
    """A robot read from a URDF file; build it with :func:`plant_from_urdf`."""

    description = "A robot read from a URDF file."

    def __init__(self, urdf: str | os.PathLike, *, actuation: str | Servo | Mapping[str, str | Servo] = "torque",
                 outputs: Sequence[str] = ("q", "v"), poses: Sequence[str] = (), twists: Sequence[str] = (),
                 floating_base: bool = False, damping: bool = False, friction: bool = False,
                 limits: bool = False, gravity: Sequence[float] = (0.0, 0.0, -9.81),
                 q0: Sequence[float] | None = None, v0: Sequence[float] | None = None,
                 name: str | None = None, package_dirs: Sequence[str | os.PathLike] = (),
                 mesh_faces: int = 12000, friction_velocity: float = 1e-3,
                 internal_step: float = 1e-3, default_step: float = 1e-2, default_stop_time: float = 2.0):
        self.urdf = str(urdf)
        self.options = _json_options(actuation=actuation, outputs=list(outputs), poses=list(poses),
                                     twists=list(twists), floating_base=floating_base, damping=damping,
                                     friction=friction, limits=limits, gravity=list(map(float, gravity)),
                                     q0=None if q0 is None else list(map(float, q0)),
                                     v0=None if v0 is None else list(map(float, v0)), name=name,
                                     package_dirs=[str(d) for d in package_dirs], mesh_faces=int(mesh_faces),
                                     friction_velocity=float(friction_velocity),
                                     internal_step=float(internal_step), default_step=float(default_step),
                                     default_stop_time=float(default_stop_time))
        model = load_urdf(urdf, floating_base=floating_base, gravity=gravity, use_damping=damping,
                          use_limits=limits)
        self.joint_table = _joint_table(urdf, model)
        self.servos = _servos(actuation, self.joint_table)
        self.name = name or _identifier(model.name)
        self.package_dirs = tuple(str(d) for d in package_dirs)
        self.mesh_faces = int(mesh_faces)
        self.internal_step, self.default_step = float(internal_step), float(default_step)
        self.default_stop_time = float(default_stop_time)
        self.friction_velocity = float(friction_velocity)
        if not self.friction_velocity > 0:
            raise InputError(f"friction_velocity = {friction_velocity!r} m/s (rad/s) must be > 0")

        groups = {"torque": [], "position": [], "velocity": []}
        for j, s in zip(self.joint_table, self.servos):
            if s.mode in groups:
                groups[s.mode].append(j)
        nu = sum(len(g) for g in groups.values())
        B = np.zeros((model.nv, nu))
        self.inputs = ()
        col = 0
        self._servo_cols: list[tuple[int, _Joint, Servo]] = []
        units = {"torque": ("N.m", "N"), "position": ("rad", "m"), "velocity": ("rad/s", "m/s")}
        base = {"torque": "tau", "position": "q_ref", "velocity": "v_ref"}
        what = {"torque": "torque", "position": "position set-point", "velocity": "velocity set-point"}
        servo_of = dict(zip((j.name for j in self.joint_table), self.servos))
        for mode in ("torque", "position", "velocity"):
            for k, j in enumerate(groups[mode], start=1):
                unit = units[mode][0 if j.revolute else 1]
                self.inputs += (Signal(f"{base[mode]}[{k}]", unit, f"{what[mode]} of joint {j.name}", 0.0,
                                       kind="input"),)
                if mode == "torque":
                    B[j.iv, col] = 1.0
                else:
                    self._servo_cols.append((col, j, servo_of[j.name]))
                col += 1
        super().__init__(model, B, q0=q0, v0=v0)
        self._gains = self._servo_gains()
        self._frictions = [(j.iv, j.friction) for j in self.joint_table if friction and j.friction > 0]
        self._python_forces = bool(self._servo_cols or self._frictions)
        q_init = self.initial_state()[:model.nq]
        self.inputs = tuple(  # position servos hold the initial configuration by default
            Signal(s.name, s.unit, s.description, float(q_init[self._servo_cols_joint(i).iq]), kind="input")
            if s.name.startswith("q_ref[") else s for i, s in enumerate(self.inputs))
        self.outputs = self._output_signals(outputs, poses, twists)
        source = "URDF text" if self.urdf.lstrip().startswith("<") else f"the URDF file {Path(self.urdf).name}"
        self.description = (f"{model.name}: a robot read from {source} "
                            f"({model.nbodies - 1} links, {model.nv} degrees of freedom"
                            f"{', floating base' if floating_base else ''}).")
        self._geometry = None

    def reference(self) -> dict[str, Any]:
        """How to rebuild this plant (a ``"urdf"`` :class:`~mbfmu.fmu.plantref.PlantRef` as a dict):
        what ``mbfmu.build_fmu(plant)`` embeds in the FMU."""
        if self.urdf.lstrip().startswith("<"):
            raise InputError(f"robot {self.name!r} was read from URDF text, which an FMU cannot rebuild from; "
                             "write the URDF to a file and use plant_from_urdf(path)")
        return {"kind": "urdf", "target": str(Path(self.urdf).resolve()), "class_name": "", "parameters": {},
                "options": self.options}

    # ---- construction helpers -----------------------------------------------
    def _servo_cols_joint(self, col: int) -> _Joint:
        return next(j for c, j, _ in self._servo_cols if c == col)

    def _servo_gains(self) -> list[tuple[int, int, int, str, float, float, float]]:
        """Per servo: (input column, v index, q index, mode, kp, kd, limit)."""
        if not self._servo_cols:
            return []
        M = crba(self.model, self.initial_state()[:self.model.nq])
        out = []
        for col, j, s in self._servo_cols:
            m = max(float(M[j.iv, j.iv]), 1e-9)
            kp = m * SERVO_BANDWIDTH ** 2 if s.kp is None else float(s.kp)
            kd = 2 * m * SERVO_BANDWIDTH if s.kd is None else float(s.kd)
            limit = s.torque_limit if s.torque_limit is not None else j.effort
            out.append((col, j.iv, j.iq, s.mode, kp, kd, np.inf if limit is None else float(limit)))
        return out

    def _output_signals(self, outputs: Sequence[str], poses: Sequence[str],
                        twists: Sequence[str]) -> tuple[Signal, ...]:
        bad = [o for o in outputs if o not in ("q", "v")]
        if bad:
            raise InputError(f"outputs {bad}: choose among 'q' and 'v' (link poses: poses=[...], twists=[...])")
        sig: list[Signal] = []
        x0 = self.initial_state()
        self._state_out = [i for i, s in enumerate(self.states) if s.name.split("[")[0] in outputs]
        sig += [Signal(self.states[i].name, self.states[i].unit, self.states[i].description, float(x0[i]),
                       kind="output") for i in self._state_out]
        self._pose_links = [self.model.body_index(_link(self.model, n)) for n in poses]
        self._twist_links = [self.model.body_index(_link(self.model, n)) for n in twists]
        R, p = self.poses(x0)
        for n, b in zip(poses, self._pose_links):
            quat = _quaternion(R[b])
            sig += [Signal(f"{n}_p[{i + 1}]", "m", f"origin of link {n} in the world, {'xyz'[i]}", float(p[b, i]),
                           kind="output") for i in range(3)]
            sig += [Signal(f"{n}_quat[{i + 1}]", "1", f"orientation of link {n} in the world, quaternion "
                           f"{'wxyz'[i]} (scalar first)", float(quat[i]), kind="output") for i in range(4)]
        labels = [("rad/s", "angular velocity", "xyz"), ("m/s", "velocity of the origin", "xyz")]
        for n in twists:
            for i in range(6):
                unit, what, axes = labels[i // 3]
                sig.append(Signal(f"{n}_twist[{i + 1}]", unit, f"{what} of link {n}, world {axes[i % 3]}", 0.0,
                                  kind="output"))
        if not sig:
            raise InputError("the plant would have no outputs: ask for outputs=('q', 'v'), poses or twists")
        names = [s.name for s in sig]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InputError(f"output names repeated: {dup}")
        return tuple(sig)

    # ---- physics --------------------------------------------------------------
    def applied_forces(self, t: float, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        """Servo torques and Coulomb friction, generalized forces (nv,)."""
        tau = np.zeros(self.model.nv)
        for col, iv, iq, mode, kp, kd, limit in self._gains:
            if mode == "position":
                f = kp * (u[col] - q[iq]) - kd * v[iv]
            else:
                f = kd * (u[col] - v[iv])
            tau[iv] += min(max(f, -limit), limit)
        for iv, fc in self._frictions:
            tau[iv] -= fc * np.tanh(v[iv] / self.friction_velocity)
        return tau, None

    def outputs_at(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        y = [np.asarray(x, dtype=float)[self._state_out]]
        if self._pose_links or self._twist_links:
            q, v = self.split(x)
            R, p, vel = _kernels.kinematics(self.model._h, q, v)
            for b in self._pose_links:
                y += [p[b], _quaternion(R[b])]
            for b in self._twist_links:
                y += [R[b] @ vel[b, :3], R[b] @ vel[b, 3:]]
        return np.concatenate(y)

    # ---- viewer ----------------------------------------------------------------
    @property
    def geometry(self):
        """Visual shapes of the URDF (meshes decimated to ``mesh_faces`` triangles in all)."""
        if self._geometry is None:
            from .urdf_visuals import visual_shapes
            self._geometry = visual_shapes(self.urdf, self.model, self.package_dirs, self.mesh_faces)
        return self._geometry

    @property
    def pose_states(self) -> tuple[str, ...]:
        """The states that :meth:`poses` reads (the configuration ``q``)."""
        return tuple(s.name for s in self.states[:self.model.nq])


def _link(model, name: str) -> str:
    if name not in model.body_names:
        raise UnknownNameError(f"unknown link {name!r}; the robot's links: {', '.join(model.body_names)}")
    return name


def _identifier(name: str) -> str:
    import re
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name) or "robot"
    return ident if re.match(r"[A-Za-z_]", ident) else f"robot_{ident}"


def _quaternion(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w >= 0, of rotation matrix ``R`` (Shepperd's method)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr >= max(R[0, 0], R[1, 1], R[2, 2]):
        s = 2 * np.sqrt(1 + tr)
        q = np.array([s / 4, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        s = 2 * np.sqrt(1 + R[0, 0] - R[1, 1] - R[2, 2])
        q = np.array([(R[2, 1] - R[1, 2]) / s, s / 4, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s])
    elif R[1, 1] >= R[2, 2]:
        s = 2 * np.sqrt(1 + R[1, 1] - R[0, 0] - R[2, 2])
        q = np.array([(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, s / 4, (R[1, 2] + R[2, 1]) / s])
    else:
        s = 2 * np.sqrt(1 + R[2, 2] - R[0, 0] - R[1, 1])
        q = np.array([(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, s / 4])
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def plant_from_urdf(path: str | os.PathLike, **options: Any) -> URDFPlant:
    """A plant from a URDF file, with named, unit-carrying ports.

    Parameters
    ----------
    path : str or PathLike
        The URDF file (``package://`` mesh URIs are resolved as in
        :func:`mbfmu.plant.urdf_files.resolve_uri`).
    actuation : str, Servo or mapping, keyword-only
        ``"torque"`` (default), ``"position"``, ``"velocity"`` or
        ``"passive"`` for every joint, one :class:`Servo` for every joint,
        or ``{joint name: mode or Servo}`` (joints not named are passive).
    outputs : sequence of {"q", "v"}
        Configuration and/or velocity outputs (default both).
    poses, twists : sequence of str
        Links whose world pose (position, quaternion) / twist are outputs.
    floating_base : bool
        Put the root link on a free joint.
    damping, friction, limits : bool
        Use the URDF's ``<dynamics damping>``, ``<dynamics friction>`` and
        ``<limit lower upper>``.
    gravity : (3,) m/s^2
    q0, v0 : array_like, optional
        Initial configuration and velocity (default: neutral, at rest).
    name : str, optional
        Plant (and FMU) name; default: the URDF's robot name.
    package_dirs : sequence of path
        Where to look for ``package://`` URIs beyond the default search.
    mesh_faces : int
        Triangle budget of all visual meshes together (the replay's size).

    Returns
    -------
    URDFPlant

    Examples
    --------
    >>> plant = plant_from_urdf("ur5_robot.urdf", actuation="position", poses=["tool0"])  # doctest: +SKIP
    """
    if not (str(path).lstrip().startswith("<") or Path(path).is_file()):
        raise InputError(f"URDF file {str(path)!r} does not exist")
    try:
        return URDFPlant(path, **options)
    except TypeError as exc:
        raise InputError(f"plant_from_urdf: {exc}") from None
