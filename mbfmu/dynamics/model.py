"""Model: the immutable description of a tree of bodies, and its builder.

Bodies are numbered away from the world (body 0), each after its parent: the
``parent`` array is Huston's lower-body array (``L(k)``). Repeated
entries mark branch bodies. A :class:`Model` is packed once into flat arrays
held by the compiled kernels; it never changes afterwards (build a new one
to change a parameter). Sizes: ``nbodies`` (including the world), ``nq``,
``nv``.

Example
-------
>>> import numpy as np
>>> from mbfmu.dynamics import ModelBuilder, Revolute, rnea
>>> b = ModelBuilder()
>>> link = b.add_body("link", parent="world", joint=Revolute(axis=(0, 1, 0)),
...                   mass=1.0, com=(0.5, 0, 0), inertia=np.eye(3) * 1e-3)
>>> model = b.build()
>>> model.nq, model.nv
(1, 1)
"""
from __future__ import annotations

import copy

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import InputError, ModelError, UnknownNameError
from . import _kernels, drives as _drives
from .joints import FREE, Fixed, Joint, SPHERICAL
from .spatial import check_inertia, spatial_inertia
from .symbolic import has_sym, is_recording, number, real_array, tile, value, zeros

_NO_LIMIT = 1e300  # the kernels take finite numbers only: this encodes "no limit"


@dataclass(frozen=True)
class Body:
    """One body and the joint to its parent (as stored in a :class:`Model`).

    Attributes
    ----------
    name : str
    parent : int
        Index of the parent body (0 = world).
    joint : Joint
    joint_name : str
    R_PJ : ndarray (3, 3)
        Rotation of the joint frame in the parent body frame.
    p_PJ : ndarray (3,)
        Origin of the joint frame in the parent body frame, m.
    mass : float
        kg.
    com : ndarray (3,)
        Centre of mass in the body frame, m.
    inertia : ndarray (3, 3)
        Rotational inertia about the centre of mass, body axes, kg m^2.
    """

    name: str
    parent: int
    joint: Joint
    joint_name: str
    R_PJ: np.ndarray
    p_PJ: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class JointForce:
    """Spring, damper and range limit acting in one joint's velocity coordinates.

    Torque (or force) on coordinate k: ``-stiffness (d - rest) - damping w``,
    plus a one-sided limit ``limit_stiffness * penetration`` (with
    ``limit_damping``, never pulling) outside ``[lower, upper]``. ``d`` is the
    joint coordinate (for a spherical joint, the rotation vector of its
    quaternion, rad), ``w`` the velocity coordinate. Each attribute is a
    number, or one number per velocity coordinate of the joint.

    Attributes
    ----------
    stiffness : float or sequence of float
        N m/rad (revolute, spherical) or N/m (prismatic).
    damping : float or sequence of float
        N m s/rad or N s/m.
    rest : float or sequence of float
        Coordinate at which the spring is relaxed, rad or m.
    lower, upper : float or sequence of float
        Range of the coordinate, rad or m (infinite: no limit).
    limit_stiffness : float or sequence of float
        Stiffness of the range limit, N m/rad or N/m.
    limit_damping : float or sequence of float
        Damping of the range limit, N m s/rad or N s/m.
    """

    stiffness: float | Sequence[float] = 0.0
    damping: float | Sequence[float] = 0.0
    rest: float | Sequence[float] = 0.0
    lower: float | Sequence[float] = -np.inf
    upper: float | Sequence[float] = np.inf
    limit_stiffness: float | Sequence[float] = 0.0
    limit_damping: float | Sequence[float] = 0.0


@dataclass(frozen=True)
class Spring:
    """Point-to-point spring-damper between two bodies.

    Tension ``stiffness (L - rest_length) + damping dL/dt`` (N) along the line
    between ``point_a`` on ``body_a`` and ``point_b`` on ``body_b`` (points in
    each body's frame, m). Body 0 is the world.

    Attributes
    ----------
    body_a, body_b : int
        The two bodies (0 is the world).
    point_a, point_b : tuple of float
        Attachment points in the frames of ``body_a`` and ``body_b``, m.
    stiffness : float
        N/m.
    damping : float
        N s/m.
    rest_length : float
        Length at which the tension is zero, m.
    name : str
        Label (for outputs and error messages).
    """

    body_a: int
    point_a: tuple
    body_b: int
    point_b: tuple
    stiffness: float
    damping: float = 0.0
    rest_length: float = 0.0
    name: str = ""


def _vec3(x, what: str) -> np.ndarray:
    """``x`` as a finite 3-vector of floats (raises ModelError naming ``what``)."""
    try:
        arr = np.asarray(value(real_array(x)), dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ModelError(f"{what} = {x!r} must be a 3-vector of floats") from None
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} = {x!r} must be a finite 3-vector")
    return real_array(x).reshape(-1) if has_sym(x) else arr  # expressions kept while recording (symbolic.py)


def _scalar(x, what: str, positive: bool = False, signed: bool = False) -> float:
    """``x`` as a finite float >= 0 (> 0 with ``positive``, any sign with
    ``signed``); raises ModelError naming ``what``."""
    try:
        val = float(x)
    except (TypeError, ValueError):
        raise ModelError(f"{what} = {x!r} must be a number") from None
    if not np.isfinite(val) or (not signed and (val < 0 or (positive and val == 0))):
        rule = "" if signed else (" and > 0" if positive else " and >= 0")
        raise ModelError(f"{what} = {x!r} must be finite{rule}")
    return number(x) if has_sym(x) else val


def _check_element_body(body, where: str) -> int:
    if not isinstance(body, (int, np.integer)) or int(body) < 1:
        raise ModelError(f"{where}: body {body!r} must be a body index >= 1 (not the world)")
    return int(body)


@dataclass(frozen=True, eq=False)
class SpherePlaneContact:
    """Compliant contact of a sphere fixed on a body with a plane of the world.

    With the penetration ``d = radius - (normal . c_W - offset)`` (``c_W`` the
    sphere centre in the world, m) and ``v`` the world velocity of the body
    point deepest in the plane (``c - radius normal``), the force on that
    point is, while ``d > 0``,

    * normal: ``f_n = max(stiffness d - damping r(d) (normal . v), 0)``, never
      pulling, with ``r(d) = min(1, d / ramp)`` fading the damping in so the
      force is continuous at first touch;
    * friction (regularized Coulomb): ``-friction f_n v_t / sqrt(|v_t|^2 +
      slip_speed^2)``, ``v_t`` the tangential part of ``v``.

    Its elastic energy is ``1/2 stiffness max(d, 0)^2``; damping and friction
    only dissipate. Validated on construction (:class:`ModelError`).

    Attributes
    ----------
    body : int
        Body carrying the sphere (>= 1).
    center : ndarray (3,)
        Sphere centre in the body frame, m.
    radius : float
        m, > 0.
    normal : ndarray (3,)
        Plane normal in the world frame, pointing to the free side; stored
        normalized (nonzero).
    offset : float
        Plane position: ``normal . x = offset`` on the plane (unit normal), m.
    stiffness : float
        N/m, >= 0.
    damping : float
        N s/m, >= 0.
    friction : float
        Coulomb coefficient, >= 0.
    slip_speed : float
        Friction regularization speed, m/s, > 0.
    ramp : float
        Penetration over which the damping fades in, m, > 0.
    name : str
    """

    body: int
    center: np.ndarray
    radius: float
    normal: np.ndarray
    offset: float
    stiffness: float
    damping: float = 0.0
    friction: float = 0.0
    slip_speed: float = 1e-2
    ramp: float = 1e-3
    name: str = ""

    def __post_init__(self):
        where = f"contact {self.name!r}"
        n = _vec3(self.normal, f"{where}: normal")
        norm = float(np.linalg.norm(n))
        if norm == 0:
            raise ModelError(f"{where}: normal must be nonzero")
        vals = dict(body=_check_element_body(self.body, where),
                    center=_vec3(self.center, f"{where}: center"),
                    radius=_scalar(self.radius, f"{where}: radius (m)", positive=True),
                    normal=n if abs(norm - 1.0) <= 1e-15 else n / norm,  # unit normals kept bit for bit
                    offset=_scalar(self.offset, f"{where}: offset (m)", signed=True),
                    stiffness=_scalar(self.stiffness, f"{where}: stiffness (N/m)"),
                    damping=_scalar(self.damping, f"{where}: damping (N s/m)"),
                    friction=_scalar(self.friction, f"{where}: friction coefficient"),
                    slip_speed=_scalar(self.slip_speed, f"{where}: slip_speed (m/s)", positive=True),
                    ramp=_scalar(self.ramp, f"{where}: ramp (m)", positive=True))
        for key, val in vals.items():
            object.__setattr__(self, key, val)

    def packed(self) -> list:
        """The kernels' parameter row (``CT_*`` columns of ``csrc/mb.h``)."""
        return [self.body, *self.center, self.radius, *self.normal, self.offset, self.stiffness,
                self.damping, self.friction, self.slip_speed, self.ramp]


@dataclass(frozen=True, eq=False)
class Cable:
    """Tension-only spring-damper from a world anchor to a point on a body.

    With ``L`` the anchor-to-point length and the stretch ``s = max(L -
    rest_length, 0)``, the tension is ``max(stiffness s + damping r(s) dL/dt,
    0)`` (N) along the cable, ``r(s) = min(1, s / ramp)``: zero when slack,
    never compressive. Elastic energy ``1/2 stiffness s^2``. Validated on
    construction (:class:`ModelError`).

    Attributes
    ----------
    anchor : ndarray (3,)
        Anchor point in the world frame, m.
    body : int
        Body carrying the attachment point (>= 1).
    point : ndarray (3,)
        Attachment point in the body frame, m.
    rest_length : float
        m, >= 0.
    stiffness : float
        N/m, >= 0.
    damping : float
        N s/m, >= 0.
    ramp : float
        Stretch over which the damping fades in, m, > 0.
    name : str
    """

    anchor: np.ndarray
    body: int
    point: np.ndarray
    rest_length: float
    stiffness: float
    damping: float = 0.0
    ramp: float = 1e-3
    name: str = ""

    def __post_init__(self):
        where = f"cable {self.name!r}"
        vals = dict(anchor=_vec3(self.anchor, f"{where}: anchor"),
                    body=_check_element_body(self.body, where), point=_vec3(self.point, f"{where}: point"),
                    rest_length=_scalar(self.rest_length, f"{where}: rest_length (m)"),
                    stiffness=_scalar(self.stiffness, f"{where}: stiffness (N/m)"),
                    damping=_scalar(self.damping, f"{where}: damping (N s/m)"),
                    ramp=_scalar(self.ramp, f"{where}: ramp (m)", positive=True))
        for key, val in vals.items():
            object.__setattr__(self, key, val)

    def packed(self) -> list:
        """The kernels' parameter row (``CB_*`` columns of ``csrc/mb.h``)."""
        return [*self.anchor, self.body, *self.point, self.rest_length, self.stiffness, self.damping,
                self.ramp]


class ModelBuilder:
    """Assemble a model body by body (the Python builder API).

    Parameters
    ----------
    gravity : array_like, shape (3,)
        Gravity in the world frame, m/s^2; default (0, 0, -9.81).
    name : str
        Model name.
    """

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, -9.81), name: str = "model"):
        self.name = name
        self.gravity = real_array(gravity)
        self.bodies: list[Body] = []
        self.joint_forces: dict[int, JointForce] = {}
        self.drives: dict[int, _drives.JointDrive] = {}
        self.springs: list[Spring] = []
        self.contacts: list[SpherePlaneContact] = []
        self.cables: list[Cable] = []
        self._index = {"world": 0}

    def body_index(self, body: int | str) -> int:
        """Index of ``body`` given by name or index (0 / ``"world"`` = world)."""
        if isinstance(body, (int, np.integer)):
            i = int(body)
            if not 0 <= i <= len(self.bodies):
                raise UnknownNameError(f"no body with index {i} (there are {len(self.bodies)} bodies)")
            return i
        try:
            return self._index[body]
        except KeyError:
            raise UnknownNameError(f"unknown body {body!r}; known: {', '.join(self._index)}") from None

    def add_body(self, name: str, parent: int | str, joint: Joint,
                 mass: float = 0.0, com: Sequence[float] = (0.0, 0.0, 0.0),
                 inertia: np.ndarray | Sequence[float] = np.zeros((3, 3)),
                 R_PJ: np.ndarray | None = None, p_PJ: Sequence[float] = (0.0, 0.0, 0.0),
                 joint_name: str | None = None) -> int:
        """Add a body attached to ``parent`` by ``joint``; returns its index.

        Parameters
        ----------
        name : str
            Unique body name.
        parent : int or str
            Parent body (index or name; ``"world"`` or 0 for the ground).
        joint : Joint
            Joint type instance (``Revolute(axis=...)``, ...).
        mass : float
            kg.
        com : array_like (3,)
            Centre of mass in the body frame, m.
        inertia : array_like (3, 3) or (3,)
            Rotational inertia about the centre of mass (a 3-vector is a
            diagonal), kg m^2.
        R_PJ : ndarray (3, 3), optional
            Orientation of the joint frame in the parent frame (identity).
        p_PJ : array_like (3,)
            Position of the joint frame in the parent frame, m.
        joint_name : str, optional
            Defaults to the body name.
        """
        if not isinstance(name, str) or not name:
            raise ModelError(f"body name {name!r} must be a non-empty string")
        if name in self._index:
            raise ModelError(f"body {name!r} is defined twice")
        if not isinstance(joint, Joint):
            raise ModelError(f"body {name!r}: joint must be a Joint instance, got {joint!r}")
        parent_i = self.body_index(parent)
        where = f"body {name!r}"
        I = real_array(inertia)
        if I.shape == (3,):
            I = np.diag(I)
        check_inertia(float(mass), value(real_array(com)).reshape(-1), value(I), where)
        R = np.eye(3) if R_PJ is None else real_array(R_PJ)
        p = real_array(p_PJ).reshape(-1)
        Rv = np.asarray(value(R), float)
        if R.shape != (3, 3) or not np.all(np.isfinite(Rv)) or np.abs(Rv.T @ Rv - np.eye(3)).max() > 1e-9 \
                or np.linalg.det(Rv) < 0:
            raise ModelError(f"{where}: joint placement R_PJ is not a rotation matrix")
        if p.shape != (3,) or not np.all(np.isfinite(np.asarray(value(p), float))):
            raise ModelError(f"{where}: joint placement p_PJ must be a finite 3-vector")
        joint.axes()  # validates axes now, naming the joint type
        body = Body(name, parent_i, joint, joint_name or name, R, p, mass if is_recording() else float(mass),
                    real_array(com).reshape(3), I)
        self.bodies.append(body)
        self._index[name] = len(self.bodies)
        return len(self.bodies)

    def add_joint_force(self, body: int | str, force: JointForce) -> None:
        """Attach a spring/damper/limit to the joint of ``body``."""
        self.joint_forces[self.body_index(body)] = force

    def add_joint_drive(self, body: int | str, drive: _drives.JointDrive) -> None:
        """Attach a servo and/or Coulomb friction (:class:`~mbfmu.dynamics.drives.JointDrive`)
        to the 1-DOF joint of ``body``."""
        if not isinstance(drive, _drives.JointDrive):
            raise ModelError(f"add_joint_drive: expected a JointDrive, got {drive!r}")
        self.drives[self.body_index(body)] = drive

    def add_spring(self, body_a: int | str, point_a: Sequence[float], body_b: int | str,
                   point_b: Sequence[float], stiffness: float, damping: float = 0.0,
                   rest_length: float = 0.0, name: str = "") -> None:
        """Add a point-to-point spring-damper (N/m, N s/m, m)."""
        vals = np.asarray(value(real_array(np.r_[point_a, point_b, stiffness, damping, rest_length])), float)
        if not np.all(np.isfinite(vals)) or len(point_a) != 3 or len(point_b) != 3:
            raise ModelError(f"spring {name!r}: points must be 3-vectors and all values finite")
        if stiffness < 0 or damping < 0 or rest_length < 0:
            raise ModelError(f"spring {name!r}: stiffness, damping and rest length must be >= 0")
        self.springs.append(Spring(self.body_index(body_a), tuple(point_a), self.body_index(body_b),
                                   tuple(point_b), number(stiffness), number(damping), number(rest_length),
                                   name))

    def add_contact_sphere_plane(self, body: int | str, center_B: Sequence[float], radius: float,
                                 normal_W: Sequence[float], offset: float, stiffness: float,
                                 damping: float = 0.0, friction: float = 0.0, slip_speed: float = 1e-2,
                                 ramp: float = 1e-3, name: str = "") -> SpherePlaneContact:
        """Add a compliant sphere-plane contact (law: :class:`SpherePlaneContact`).

        Parameters
        ----------
        body : int or str
            Body carrying the sphere (not the world).
        center_B : array_like (3,)
            Sphere centre in the body frame, m.
        radius : float
            m, > 0.
        normal_W : array_like (3,)
            Plane normal in the world frame, towards the free side (normalized).
        offset : float
            ``normal . x = offset`` on the plane, m.
        stiffness, damping : float
            N/m and N s/m, >= 0.
        friction : float
            Coulomb coefficient, >= 0.
        slip_speed : float
            Friction regularization speed, m/s, > 0.
        ramp : float
            Penetration over which the damping fades in, m, > 0.
        name : str

        Returns
        -------
        SpherePlaneContact
        """
        c = SpherePlaneContact(self._element_body(body), center_B, radius, normal_W, offset, stiffness,
                               damping, friction, slip_speed, ramp, name)
        self.contacts.append(c)
        return c

    def add_cable(self, anchor_W: Sequence[float], body: int | str, point_B: Sequence[float],
                  rest_length: float, stiffness: float, damping: float = 0.0, ramp: float = 1e-3,
                  name: str = "") -> Cable:
        """Add a tension-only cable from a world anchor to a body point (law: :class:`Cable`).

        Parameters
        ----------
        anchor_W : array_like (3,)
            Anchor in the world frame, m.
        body : int or str
            Body carrying the attachment point (not the world).
        point_B : array_like (3,)
            Attachment point in the body frame, m.
        rest_length : float
            m, >= 0.
        stiffness, damping : float
            N/m and N s/m, >= 0.
        ramp : float
            Stretch over which the damping fades in, m, > 0.
        name : str

        Returns
        -------
        Cable
        """
        c = Cable(anchor_W, self._element_body(body), point_B, rest_length, stiffness, damping, ramp, name)
        self.cables.append(c)
        return c

    def _element_body(self, body: int | str) -> int:
        i = self.body_index(body)
        if i == 0:
            raise ModelError("contacts and cables attach to a body, not the world")
        return i

    def build(self) -> "Model":
        """Validate and pack the model."""
        return Model(self.bodies, self.gravity, self.joint_forces, self.springs, self.name,
                     contacts=self.contacts, cables=self.cables, drives=self.drives)


def _per_dof(value, n: int, what: str) -> np.ndarray:
    arr = np.broadcast_to(real_array(value), (n,)) if np.ndim(value) == 0 else real_array(value).reshape(-1)
    if arr.shape != (n,):
        raise ModelError(f"{what}: {arr.size} values for {n} joint coordinates")
    return np.array(arr)


class Model:
    """Immutable multibody model packed for the compiled kernels.

    Build with :class:`ModelBuilder`, :func:`mbfmu.load_urdf` or
    :func:`mbfmu.dynamics.dh.from_dh`.

    Attributes
    ----------
    name : str
    nbodies : int
        Number of bodies including the world body 0.
    nq, nv : int
        Configuration and velocity sizes.
    parent : ndarray (nbodies,) of int
        Lower-body array; ``parent[0] = -1``.
    bodies : tuple of Body
        Bodies 1..nbodies-1 (``bodies[i - 1]`` is body i).
    body_names : tuple of str
        ``body_names[i]`` names body i (``"world"`` for 0).
    idx_q, idx_v : ndarray (nbodies,) of int
        First configuration / velocity coordinate of each body's joint.
    gravity : ndarray (3,)
        m/s^2, world frame.
    joint_forces : dict
        Body index -> JointForce.
    springs : tuple of Spring
    contacts : tuple of SpherePlaneContact
    cables : tuple of Cable
    drives : dict
        Body index -> :class:`~mbfmu.dynamics.drives.JointDrive`.
    """

    def __init__(self, bodies: Sequence[Body], gravity, joint_forces=None, springs=(), name="model",
                 contacts=(), cables=(), drives=None):
        self.name = name
        self.bodies = tuple(bodies)
        self.gravity = real_array(gravity).reshape(-1)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(np.asarray(value(self.gravity), float))):
            raise ModelError("gravity must be a finite 3-vector (m/s^2)")
        self.joint_forces = dict(joint_forces or {})
        self.springs = tuple(springs)
        self.contacts = tuple(contacts)
        self.cables = tuple(cables)
        self.drives = dict(drives or {})
        nb = len(self.bodies) + 1
        self.nbodies = nb
        self.parent = np.array([-1] + [b.parent for b in self.bodies], dtype=np.int32)
        self._check_tree()
        self.body_names = ("world",) + tuple(b.name for b in self.bodies)
        self.joint_names = ("",) + tuple(b.joint_name for b in self.bodies)
        joints = [Fixed()] + [b.joint for b in self.bodies]
        self.joints = tuple(joints)
        nqi = np.array([j.nq for j in joints], dtype=np.int32)
        nvi = np.array([j.nv for j in joints], dtype=np.int32)
        self.idx_q = np.concatenate([[0], np.cumsum(nqi)[:-1]]).astype(int)
        self.idx_v = np.concatenate([[0], np.cumsum(nvi)[:-1]]).astype(int)
        self.nq = int(nqi.sum())
        self.nv = int(nvi.sum())
        self.q_names = tuple(self._labels(nqi, "q_labels"))
        self.v_names = tuple(self._labels(nvi, "dof_labels"))

        axis1 = np.zeros((nb, 3))
        axis2 = np.zeros((nb, 3))
        Rtree = tile(np.eye(3), (nb, 1, 1))
        ptree = zeros((nb, 3))
        inertia = zeros((nb, 6, 6))
        for i, b in enumerate(self.bodies, start=1):
            axis1[i], axis2[i] = b.joint.axes()
            Rtree[i], ptree[i] = b.R_PJ, b.p_PJ
            inertia[i] = spatial_inertia(b.mass, b.com, b.inertia)
        self._check_mass()
        dof_force = self._pack_joint_forces()
        springs_arr = real_array([[s.body_a, *s.point_a, s.body_b, *s.point_b, s.stiffness, s.damping,
                                   s.rest_length] for s in self.springs]).reshape(-1, 11)
        for s in self.springs:
            for bi in (s.body_a, s.body_b):
                if not 0 <= bi < nb:
                    raise ModelError(f"spring {s.name!r}: body index {bi} out of range")
        contacts_arr = self._pack_elements(self.contacts, SpherePlaneContact, 14)
        cables_arr = self._pack_elements(self.cables, Cable, 11)
        # the flat arrays held by the kernels (also what a native FMU compiles in)
        self.packed = dict(parent=self.parent, jtype=np.array([j.code for j in joints], dtype=np.int32),
                           nqi=nqi, nvi=nvi, axis1=axis1, axis2=axis2, Rtree=Rtree, ptree=ptree,
                           inertia=inertia, gravity=self.gravity, dof_force=dof_force,
                           springs=springs_arr, contacts=contacts_arr, cables=cables_arr)
        pk = self.packed
        self._h = _kernels.new_model(
            nb, pk["parent"], pk["jtype"], nqi, nvi, axis1, axis2, value(Rtree), value(ptree), value(inertia),
            value(self.gravity),
            value(dof_force), len(self.springs), value(springs_arr), len(self.contacts), value(contacts_arr),
            len(self.cables), value(cables_arr), self.q_names, self.v_names, self.body_names)
        pk["drives"] = _drives.pack(self, self.drives)
        if len(pk["drives"]):
            _kernels.set_drives(self._h, len(pk["drives"]), pk["drives"])
        self.inertias = inertia
        self.inertias.setflags(write=False)
        self.mass = float(sum(b.mass for b in self.bodies))
        self.has_quaternions = any(j.code in (SPHERICAL, FREE) for j in joints)

    # ---- construction helpers ---------------------------------------------
    def _check_tree(self) -> None:
        for i, b in enumerate(self.bodies, start=1):
            if not 0 <= b.parent < i:
                raise ModelError(f"body {i} ({b.name!r}): parent {b.parent} must be an earlier body "
                                 f"(0..{i - 1}); the parent array must describe a tree numbered away "
                                 "from the world")

    def _labels(self, sizes, method: str) -> list[str]:
        out = []
        for i, b in enumerate(self.bodies, start=1):
            labels = getattr(b.joint, method)()
            for lab in labels:
                out.append(f"{b.joint_name}.{lab}" if lab else b.joint_name)
        return out

    def _check_mass(self) -> None:
        """Every joint with a degree of freedom must carry mass (else M is singular)."""
        carried = np.array([0.0] + [b.mass for b in self.bodies])
        for i in range(self.nbodies - 1, 0, -1):
            carried[self.parent[i]] += carried[i]
        for i, b in enumerate(self.bodies, start=1):
            if b.joint.nv > 0 and carried[i] <= 0:
                raise ModelError(f"body {i} ({b.name!r}): its joint moves no mass (the subtree is "
                                 "massless), so the mass matrix would be singular")

    def _pack_elements(self, elements, kind: type, ncols: int) -> np.ndarray:
        """Parameter rows of contacts or cables (checked: type and body index)."""
        for e in elements:
            if not isinstance(e, kind):
                raise ModelError(f"expected {kind.__name__} elements, got {e!r}")
            if not 1 <= e.body < self.nbodies:
                raise ModelError(f"{kind.__name__} {e.name!r}: body index {e.body} out of range "
                                 f"1..{self.nbodies - 1}")
        return real_array([e.packed() for e in elements]).reshape(-1, ncols)

    def _pack_joint_forces(self) -> np.ndarray:
        dof = zeros((self.nv, 7))
        dof[:, 3] = -_NO_LIMIT
        dof[:, 4] = _NO_LIMIT
        for i, jf in self.joint_forces.items():
            if not 1 <= i < self.nbodies:
                raise ModelError(f"joint force on body index {i}: no such body")
            j = self.joints[i]
            n = j.nv
            where = f"joint force on body {self.body_names[i]!r}"
            if j.code == FREE:
                raise ModelError(f"{where}: a free joint takes no joint spring")
            cols = [jf.stiffness, jf.damping, jf.rest, jf.lower, jf.upper, jf.limit_stiffness,
                    jf.limit_damping]
            vals = [_per_dof(c, n, where) for c in cols]
            nums = [np.asarray(value(v), float) for v in vals]  # checks on the numbers (symbolic.py)
            for k in (0, 1, 5, 6):
                if np.any(nums[k] < 0) or not np.all(np.isfinite(nums[k])):
                    raise ModelError(f"{where}: stiffness and damping must be finite and >= 0")
            if np.any(nums[3] > nums[4]):
                raise ModelError(f"{where}: lower limit above upper limit")
            for k in (3, 4):  # a limit given as an expression stays one (it is finite)
                vals[k] = vals[k] if has_sym(vals[k]) else np.clip(vals[k], -_NO_LIMIT, _NO_LIMIT)
            s = self.idx_v[i]
            dof[s:s + n] = np.stack(vals, axis=1)
        return dof

    # ---- conveniences ---------------------------------------------------
    def body_index(self, body: int | str) -> int:
        """Index of a body given by name or index."""
        if isinstance(body, (int, np.integer)):
            if not 0 <= int(body) < self.nbodies:
                raise UnknownNameError(f"no body {int(body)} in model {self.name!r} ({self.nbodies} bodies)")
            return int(body)
        try:
            return self.body_names.index(body)
        except ValueError:
            raise UnknownNameError(f"unknown body {body!r} in model {self.name!r}; known: "
                                   f"{', '.join(self.body_names)}") from None

    def neutral(self) -> np.ndarray:
        """Neutral configuration (zeros, identity quaternions), shape (nq,)."""
        return np.concatenate([j.neutral() for j in self.joints]) if self.nq else np.zeros(0)

    def children(self, i: int) -> list[int]:
        """Bodies whose parent is ``i``."""
        return [int(k) for k in np.flatnonzero(self.parent == i)]

    def with_gravity(self, gravity: Sequence[float]) -> "Model":
        """A copy of the model with another gravity vector (m/s^2)."""
        return Model(self.bodies, gravity, self.joint_forces, self.springs, self.name,
                     contacts=self.contacts, cables=self.cables, drives=self.drives)

    def for_thread(self) -> "Model":
        """The same model with a kernel workspace of its own, for another thread.

        The compiled kernels release the GIL while they run; calls on one
        model take turns (each holds its workspace), while calls on two
        ``for_thread`` copies of it run in parallel and share the packed,
        read-only description.

        Returns
        -------
        Model
            A shallow copy whose kernel handle shares this model's packed
            description and owns a new workspace.
        """
        twin = copy.copy(self)
        twin._h = _kernels.share(self._h)
        return twin

    def __repr__(self) -> str:
        return f"Model({self.name!r}, nbodies={self.nbodies}, nq={self.nq}, nv={self.nv})"


def check_vector(x, n: int, what: str) -> np.ndarray:
    """``x`` as a finite float vector of length ``n`` (raises InputError)."""
    arr = np.asarray(x, dtype=float).reshape(-1)
    if arr.size != n:
        raise InputError(f"{what} has {arr.size} values, expected {n}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what} contains non-finite values")
    return arr
