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
link on a free joint (legged robots). Damping, range limits, friction and the
servos are the kernels' force elements (``JointForce``, ``JointDrive``), so
the compiled integrators and the native FMU run them.

parameters
    Declared once in :data:`PARAMETERS` (units, defaults, bounds, as the
    library plants declare theirs, :mod:`mbfmu.plant.parameters`):
    ``payload_mass`` (kg, ``[0, inf)``): a point mass at the origin of the
    tool link (``payload_link``, default: the last link of the robot's serial
    chain, see :func:`default_payload_link`); ``gravity[1..3]`` (m/s^2, world
    frame, each in ``[-100, 100]``); ``damping_scale`` and ``friction_scale``
    (1, ``[0, inf)``) multiply the URDF's joint damping and friction. Default
    servo gains come from the robot without its payload, so a sweep of the
    payload keeps the controller.

    What depends on the options, and so is not in the declaration: which
    parameters the plant has (``damping_scale`` only with ``damping=True``,
    ``friction_scale`` only with ``friction=True``), the payload's link named
    in its description, and the initial state ``q0[1..nq]``, ``v0[1..nv]``
    (one per coordinate of the robot read, in the units of ``q[k]``,
    ``v[k]``, unbounded).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..dynamics import _kernels, sensors as S
from ..dynamics.algorithms import crba
from ..dynamics.drives import JointDrive
from ..dynamics.joints import Fixed, PRISMATIC, REVOLUTE
from ..dynamics.urdf import parse_floats, urdf_builder
from ..errors import InputError, ModelError, UnknownNameError
from .multibody import MultibodyPlant
from .parameters import Declaration, Parameter
from .signals import Signal

MODES = ("torque", "position", "velocity", "passive")
SERVO_BANDWIDTH = 2 * np.pi * 5.0  # rad/s: default servo gains give this natural frequency (critically damped)
GRAVITY_BOUND = 100.0  # m/s^2: |gravity[i]| at most about 10 g

#: The URDF robot's parameters (the option-dependent ones are explained in the module docstring).
PARAMETERS = Declaration(
    "urdf",
    Parameter("payload_mass", "kg", 0.0, "point mass carried at the origin of the tool link", "[0, inf)"),
    Parameter("gravity", "m/s2", (0.0, 0.0, -9.81), "gravity, world axis {i} (1 x, 2 y, 3 z)",
              f"[{-GRAVITY_BOUND:g}, {GRAVITY_BOUND:g}]", size=3),
    Parameter("damping_scale", "1", 1.0, "factor on the URDF's joint damping", "[0, inf)"),
    Parameter("friction_scale", "1", 1.0, "factor on the URDF's joint Coulomb friction", "[0, inf)"),
)


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


def _joint_table(root: ET.Element, model) -> list[_Joint]:
    """The model's 1-DOF joints with their URDF ``<limit effort>`` and ``<dynamics friction>``."""
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
        if fric < 0:
            raise InputError(f"{where}: friction {fric!r} is negative")
        out.append(_Joint(name, b, int(model.idx_v[b]), int(model.idx_q[b]), joint.code == REVOLUTE,
                          effort if effort and effort > 0 else None, fric))
    return out


def default_payload_link(model) -> str:
    """The tool link a payload sits on by default: the last link of the robot's
    kinematic chain, found by walking from the world into the one child whose
    subtree holds a moving joint, until none or several do (an arm's flange or
    hand, before frames or fingers; the trunk of a legged robot)."""
    moving = [b > 0 and model.joints[b].nv > 0 for b in range(model.nbodies)]
    for b in range(model.nbodies - 1, 0, -1):
        moving[model.parent[b]] = moving[model.parent[b]] or moving[b]
    b = 0
    while True:
        ahead = [c for c in model.children(b) if moving[c]]
        if len(ahead) != 1:
            return model.body_names[b] if b else model.body_names[model.children(0)[0]]
        b = ahead[0]


_DEFAULTS = {"actuation": "torque", "outputs": ["q", "v"], "poses": [], "twists": [], "floating_base": False,
             "damping": False, "friction": False, "limits": False, "gravity": [0.0, 0.0, -9.81], "q0": None,
             "v0": None, "name": None, "package_dirs": [], "mesh_faces": 12000, "friction_velocity": 1e-3,
             "internal_step": 1e-3, "default_step": 1e-2, "default_stop_time": 2.0, "payload_link": None,
             "skip_bad_meshes": False}
# the constructor's arguments that are parameter signals (recorded as parameters, not options)
_PARAMETERS = tuple(PARAMETERS.names())


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
                 limits: bool = False, gravity: Sequence[float] = PARAMETERS["gravity"].default,
                 q0: Sequence[float] | None = None, v0: Sequence[float] | None = None,
                 name: str | None = None, package_dirs: Sequence[str | os.PathLike] = (),
                 mesh_faces: int = 12000, friction_velocity: float = 1e-3,
                 internal_step: float = 1e-3, default_step: float = 1e-2, default_stop_time: float = 2.0,
                 payload_mass: float = PARAMETERS["payload_mass"].default, payload_link: str | None = None,
                 damping_scale: float = PARAMETERS["damping_scale"].default,
                 friction_scale: float = PARAMETERS["friction_scale"].default, skip_bad_meshes: bool = False):
        self.urdf = str(urdf)
        self.options = _json_options(actuation=actuation, outputs=list(outputs), poses=list(poses),
                                     twists=list(twists), floating_base=floating_base, damping=damping,
                                     friction=friction, limits=limits,
                                     q0=None if q0 is None else list(map(float, q0)),
                                     v0=None if v0 is None else list(map(float, v0)), name=name,
                                     package_dirs=[str(d) for d in package_dirs], mesh_faces=int(mesh_faces),
                                     friction_velocity=float(friction_velocity),
                                     internal_step=float(internal_step), default_step=float(default_step),
                                     default_stop_time=float(default_stop_time), payload_link=payload_link,
                                     skip_bad_meshes=bool(skip_bad_meshes))
        values = Declaration(name or "urdf", *PARAMETERS).resolve(
            dict(gravity=gravity, payload_mass=payload_mass, damping_scale=damping_scale,
                 friction_scale=friction_scale))
        builder, root = urdf_builder(urdf, floating_base=floating_base, gravity=values["gravity"],
                                     use_damping=damping, use_limits=limits, damping_scale=values["damping_scale"])
        bare = builder.build()  # the robot alone: its joints, and the inertia the default servo gains use
        self.joint_table = _joint_table(root, bare)
        self.servos = _servos(actuation, self.joint_table)
        self.name = name or _identifier(bare.name)
        self.package_dirs = tuple(str(d) for d in package_dirs)
        self.skip_bad_meshes = bool(skip_bad_meshes)
        self.mesh_faces = int(mesh_faces)
        self.internal_step, self.default_step = float(internal_step), float(default_step)
        self.default_stop_time = float(default_stop_time)
        self.friction_velocity = float(friction_velocity)
        if not (np.isfinite(self.friction_velocity) and self.friction_velocity > 0):
            raise InputError(f"friction_velocity = {friction_velocity!r} m/s (rad/s) must be > 0")
        self.payload_link = default_payload_link(bare) if payload_link is None else _link(bare, payload_link)
        builder.add_body(_unique(f"{self.payload_link}_payload", bare.body_names), self.payload_link, Fixed(),
                         mass=values["payload_mass"])

        groups = {"torque": [], "position": [], "velocity": []}
        for j, s in zip(self.joint_table, self.servos):
            if s.mode in groups:
                groups[s.mode].append(j)
        nu = sum(len(g) for g in groups.values())
        B = np.zeros((bare.nv, nu))
        inputs = []
        col = 0
        units = {"torque": ("N.m", "N"), "position": ("rad", "m"), "velocity": ("rad/s", "m/s")}
        base = {"torque": "tau", "position": "q_ref", "velocity": "v_ref"}
        what = {"torque": "torque", "position": "position set-point", "velocity": "velocity set-point"}
        for mode in ("torque", "position", "velocity"):
            for k, j in enumerate(groups[mode], start=1):
                unit = units[mode][0 if j.revolute else 1]
                inputs.append((Signal(f"{base[mode]}[{k}]", unit, f"{what[mode]} of joint {j.name}", 0.0,
                                      kind="input"), j))
                B[j.iv, col] = 1.0  # the joint's command: its torque, or its servo's set-point (drives.py)
                col += 1
        gains = _servo_gains(bare, q0, self.joint_table, self.servos)
        self.servo_gains = gains  # per servo joint: kp, kd, torque limit (shown by mbfmu list NAME)
        fric = values["friction_scale"] if friction else 0.0
        for j, s in zip(self.joint_table, self.servos):
            if s.mode in ("position", "velocity") or (friction and j.friction > 0):
                kp, kd, limit = gains.get(j.name, (0.0, 0.0, np.inf))
                builder.add_joint_drive(j.body, JointDrive(s.mode if s.mode != "passive" else "torque", kp, kd,
                                                           limit, fric * j.friction, self.friction_velocity))
        super().__init__(builder.build(), B, q0=q0, v0=v0)
        q_init = self.initial_state()[:self.model.nq]
        self.inputs = tuple(  # position servos hold the initial configuration by default
            Signal(sig.name, sig.unit, sig.description, float(q_init[j.iq]), kind="input")
            if sig.name.startswith("q_ref[") else sig for sig, j in inputs)
        self.parameters = _parameter_signals(values, self.payload_link, damping, friction) + \
            self._initial_state_signals()
        self.outputs, self.sensors = self._output_signals(outputs, poses, twists)
        source = "URDF text" if self.urdf.lstrip().startswith("<") else f"the URDF file {Path(self.urdf).name}"
        if "example-robot-data" in Path(self.urdf).parts:
            source += " of example-robot-data"
        self.description = (f"Robot {bare.name!r} read from {source} "
                            f"({bare.nbodies - 1} links, {bare.nv} degrees of freedom"
                            f"{', floating base' if floating_base else ''}).")
        self._geometry = None

    def reference(self) -> dict[str, Any]:
        """How to rebuild this plant (a ``"urdf"`` :class:`~mbfmu.fmu.plantref.PlantRef` as a dict):
        what ``mbfmu.build_fmu(plant)`` embeds in the FMU.

        The servos' gains are recorded as numbers: a default gain comes from
        the mass matrix at the initial configuration, and an FMU started
        elsewhere (parameters ``q0[k]``) keeps the gains it was built with.
        """
        if self.urdf.lstrip().startswith("<"):
            raise InputError(f"robot {self.name!r} was read from URDF text, which an FMU cannot rebuild from; "
                             "write the URDF to a file and use plant_from_urdf(path)")
        options = dict(self.options)
        if self.servo_gains:
            options["actuation"] = {
                j.name: ({"mode": s.mode, "kp": self.servo_gains[j.name][0], "kd": self.servo_gains[j.name][1],
                          "torque_limit": (self.servo_gains[j.name][2] if np.isfinite(self.servo_gains[j.name][2])
                                           else None)}
                         if j.name in self.servo_gains else s.mode)
                for j, s in zip(self.joint_table, self.servos)}
        return {"kind": "urdf", "target": str(Path(self.urdf).resolve()), "class_name": "",
                "parameters": self.parameter_values(), "options": options}

    def _initial_state_signals(self) -> tuple[Signal, ...]:
        """Parameters ``q0[k]``, ``v0[k]``: where the robot starts (its
        configuration and velocity coordinates, units of ``q[k]``, ``v[k]``)."""
        nq = self.model.nq
        q = np.asarray(self.initial_state()[:nq], float)
        qs, vs = self.states[:nq], self.states[nq:nq + self.model.nv]
        return tuple(
            [Signal(f"q0[{k + 1}]", st.unit, f"initial value of {st.name}", float(q[k]), kind="parameter")
             for k, st in enumerate(qs)]
            + [Signal(f"v0[{k + 1}]", st.unit, f"initial value of {st.name}", float(self.initial_velocity[k]),
                      kind="parameter") for k, st in enumerate(vs)])

    # ---- construction helpers -----------------------------------------------
    def _output_signals(self, outputs: Sequence[str], poses: Sequence[str],
                        twists: Sequence[str]) -> tuple[tuple[Signal, ...], tuple]:
        """The output signals and the engine sensors that compute them."""
        bad = [o for o in outputs if o not in ("q", "v")]
        if bad:
            raise InputError(f"outputs {bad}: choose among 'q' and 'v' (link poses: poses=[...], twists=[...])")
        sig: list[Signal] = []
        sensors: list = []
        for i, st in enumerate(self.states):
            if st.name.split("[")[0] in outputs:
                sig.append(Signal(st.name, st.unit, st.description, 0.0, kind="output"))
                sensors.append(S.StateValue(i))
        for n in poses:
            b = self.model.body_index(_link(self.model, n))
            sig += [Signal(f"{n}_p[{i + 1}]", "m", f"origin of link {n} in the world, {'xyz'[i]}", 0.0,
                           kind="output") for i in range(3)]
            sensors += [S.PointPosition(b, (0.0, 0.0, 0.0), i) for i in range(3)]
            sig += [Signal(f"{n}_quat[{i + 1}]", "1", f"orientation of link {n} in the world, quaternion "
                           f"{'wxyz'[i]} (scalar first)", 0.0, kind="output") for i in range(4)]
            sensors += [S.BodyQuaternion(b, i) for i in range(4)]
        labels = [("rad/s", "angular velocity", "xyz"), ("m/s", "velocity of the origin", "xyz")]
        for n in twists:
            b = self.model.body_index(_link(self.model, n))
            for i in range(6):
                unit, what, axes = labels[i // 3]
                sig.append(Signal(f"{n}_twist[{i + 1}]", unit, f"{what} of link {n}, world {axes[i % 3]}", 0.0,
                                  kind="output"))
                sensors.append(S.BodyTwist(b, i))
        if not sig:
            raise InputError("the plant would have no outputs: ask for outputs=('q', 'v'), poses or twists")
        names = [s.name for s in sig]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InputError(f"output names repeated: {dup}")
        sensors = tuple(sensors)
        x0 = self.initial_state()
        y0 = S.evaluate(sensors, self.model, x0, self.initial_velocity, self.default_inputs())
        return tuple(Signal(s.name, s.unit, s.description, float(y), kind="output") for s, y in zip(sig, y0)), \
            sensors

    # ---- viewer ----------------------------------------------------------------
    @property
    def geometry(self):
        """Visual shapes of the URDF (meshes decimated to ``mesh_faces`` triangles in all)."""
        if self._geometry is None:
            from .urdf_visuals import visual_shapes
            self._geometry = visual_shapes(self.urdf, self.model, self.package_dirs, self.mesh_faces,
                                           skip_bad_meshes=self.skip_bad_meshes)
        return self._geometry

    @property
    def pose_states(self) -> tuple[str, ...]:
        """The states that :meth:`poses` reads (the configuration ``q``)."""
        return tuple(s.name for s in self.states[:self.model.nq])


def _link(model, name: str) -> str:
    if name not in model.body_names:
        raise UnknownNameError(f"unknown link {name!r}; the robot's links: {', '.join(model.body_names)}")
    return name


def _unique(name: str, taken: Sequence[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _servo_gains(model, q0, joints: list[_Joint], servos: list[Servo]) -> dict[str, tuple[float, float, float]]:
    """Per servo joint: (kp, kd, torque limit); default gains from the mass
    matrix of ``model`` at the initial configuration ``q0`` (neutral if None)."""
    if not any(s.mode in ("position", "velocity") for s in servos):
        return {}
    q = model.neutral() if q0 is None else np.asarray(q0, float).reshape(-1)
    if q.size != model.nq or not np.all(np.isfinite(q)):
        raise InputError(f"initial q has {q.size} values (nq={model.nq}) or is not finite")
    M = crba(model, _kernels.normalize(model._h, q))
    out = {}
    for j, s in zip(joints, servos):
        if s.mode not in ("position", "velocity"):
            continue
        m = max(float(M[j.iv, j.iv]), 1e-9)
        kp = m * SERVO_BANDWIDTH ** 2 if s.kp is None else float(s.kp)
        kd = 2 * m * SERVO_BANDWIDTH if s.kd is None else float(s.kd)
        limit = s.torque_limit if s.torque_limit is not None else j.effort
        out[j.name] = (kp, kd, np.inf if limit is None else float(limit))
    return out


def _parameter_signals(values: Mapping[str, Any], link: str, damping: bool, friction: bool
                       ) -> tuple[Signal, ...]:
    """The declared parameters this robot has (its options choose the scales), the payload's link named."""
    present = {"damping_scale": damping, "friction_scale": friction}
    return tuple(replace(s, description=f"point mass carried at the origin of link {link}")
                 if s.name == "payload_mass" else s
                 for s in PARAMETERS.signals(values) if present.get(s.name, True))


def _identifier(name: str) -> str:
    import re
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name) or "robot"
    return ident if re.match(r"[A-Za-z_]", ident) else f"robot_{ident}"


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
    except ModelError as exc:  # name the file: the message names a body or joint of it
        name = "URDF text" if str(path).lstrip().startswith("<") else Path(path).name
        if name in str(exc) or str(path) in str(exc):
            raise
        raise type(exc)(f"{name}: {exc}") from None
