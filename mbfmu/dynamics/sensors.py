"""Output sensors: plant outputs described by the engine's elements.

A plant whose outputs are a tuple of sensors (``MultibodyPlant.sensors``)
needs no Python code to compute them: the same description is evaluated here
(for the Python plant) and by the compiled native FMU runtime
(``mbfmu/fmu/native/csrc/sensors.c``), so a plant exported with
``--runtime native`` has the same outputs.

Every sensor reads the state ``x = [q; y]`` (``y`` = velocities ``v`` or, in
canonical variables, momenta ``p``), the velocities ``v`` and the inputs
``u``. Units: SI (m, rad, m/s, rad/s, J).

Kinds (the integer codes are the C runtime's ``MBN_SENS_*``):

* :class:`StateValue`: one entry of ``x`` (``q[k]`` or ``y[k]``);
* :class:`Velocity`: one velocity coordinate ``v[k]`` (rad/s or m/s; from the
  momenta in canonical variables);
* :class:`PointPosition`: one world coordinate of a point fixed on a body, m;
* :class:`KineticEnergy`: ``1/2 v^T M(q) v``, J;
* :class:`PotentialEnergy`: gravity (zero at the world origin) plus the
  energy stored in the model's force elements, J;
* :class:`Linear`: ``gain * (a . [v; u])``, a gain times a weighted sum of
  velocities and inputs (a motor torque ``k (omega_0 - gamma_1_dot)``);
* :class:`Quaternion`: one element of a joint's unit quaternion (normalized);
* :class:`Momentum`: total angular momentum about the world origin (N m s)
  or linear momentum (N s), one world axis;
* :class:`BodyQuaternion`: one element of a body's world orientation as a
  unit quaternion (scalar first, w >= 0);
* :class:`BodyTwist`: one world component of a body's angular velocity
  (rad/s) or of the velocity of its origin (m/s).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ModelError
from . import _kernels

STATE, VELOCITY, POINT, KINETIC, POTENTIAL, LINEAR, QUATERNION, MOMENTUM, BODY_QUATERNION, BODY_TWIST = range(1, 11)


@dataclass(frozen=True)
class StateValue:
    """Entry ``index`` (0-based) of the state vector ``x = [q; y]``."""

    index: int
    code = STATE


@dataclass(frozen=True)
class Velocity:
    """Velocity coordinate ``v[index]`` (0-based), rad/s or m/s."""

    index: int
    code = VELOCITY


@dataclass(frozen=True)
class PointPosition:
    """World coordinate ``axis`` (0, 1, 2 = x, y, z) of the point ``point``
    (body frame, m) of body ``body``, m."""

    body: int
    point: tuple[float, float, float]
    axis: int
    code = POINT


@dataclass(frozen=True)
class KineticEnergy:
    """Kinetic energy ``1/2 v^T M v`` of all bodies, J."""

    code = KINETIC


@dataclass(frozen=True)
class PotentialEnergy:
    """Gravitational potential energy (zero at the world origin) plus the
    elastic energy of joint springs, limits, springs, contacts and cables,
    and (``elements=True``) of the plant's plug-in elements (``csrc/element.h``'s
    energy: a satellite's engaged hinge latches), J."""

    elements: bool = False
    code = POTENTIAL

    @property
    def index(self) -> int:
        return int(self.elements)


@dataclass(frozen=True)
class Quaternion:
    """Element ``component`` (0 = w) of the quaternion at ``q[index:index + 4]``, normalized."""

    index: int
    component: int
    code = QUATERNION

    @property
    def axis(self) -> int:
        return self.component


@dataclass(frozen=True)
class Momentum:
    """Total momentum of all bodies, world axes: ``axis`` 0-2 the angular
    momentum about the world origin (N m s), 3-5 the linear momentum (N s)."""

    axis: int
    code = MOMENTUM


@dataclass(frozen=True)
class Linear:
    """``gain * (sum_k weights[k] z[k])`` with ``z = [v; u]`` (velocities,
    then inputs). ``weights`` has ``nv + nu`` entries."""

    gain: float
    weights: tuple[float, ...]
    code = LINEAR


@dataclass(frozen=True)
class BodyQuaternion:
    """Element ``component`` (0 = w) of the world orientation ``R_WB`` of body
    ``body`` as a unit quaternion, scalar first with ``w >= 0``."""

    body: int
    component: int
    code = BODY_QUATERNION

    @property
    def index(self) -> int:
        return self.body

    @property
    def axis(self) -> int:
        return self.component


@dataclass(frozen=True)
class BodyTwist:
    """World component ``axis`` of the twist of body ``body``: 0-2 its angular
    velocity (rad/s), 3-5 the velocity of its origin (m/s)."""

    body: int
    axis: int
    code = BODY_TWIST

    @property
    def index(self) -> int:
        return self.body


KINDS = (StateValue, Velocity, PointPosition, KineticEnergy, PotentialEnergy, Linear, Quaternion, Momentum,
         BodyQuaternion, BodyTwist)
Sensor = (StateValue | Velocity | PointPosition | KineticEnergy | PotentialEnergy | Linear | Quaternion | Momentum
          | BodyQuaternion | BodyTwist)


def points(sensors: Sequence[Sensor]) -> list[tuple[int, np.ndarray]]:
    """The distinct (body, point) pairs of the point sensors, in first-use order."""
    seen: list[tuple[int, np.ndarray]] = []
    for s in sensors:
        if isinstance(s, PointPosition) and not any(b == s.body and np.array_equal(p, s.point)
                                                     for b, p in seen):
            seen.append((s.body, np.asarray(s.point, float)))
    return seen


def check(sensors: Sequence[Sensor], nbodies: int, nx: int, nv: int, nu: int) -> None:
    """Raise ModelError naming the first sensor that does not fit the model sizes."""
    for k, s in enumerate(sensors):
        bad = ((isinstance(s, StateValue) and not 0 <= s.index < nx)
               or (isinstance(s, Velocity) and not 0 <= s.index < nv)
               or (isinstance(s, PointPosition) and (not 1 <= s.body < nbodies or s.axis not in (0, 1, 2)
                                                     or len(s.point) != 3))
               or (isinstance(s, Linear) and len(s.weights) != nv + nu)
               or (isinstance(s, Quaternion) and (not 0 <= s.index <= nx - 4 or s.component not in range(4)))
               or (isinstance(s, Momentum) and s.axis not in range(6))
               or (isinstance(s, BodyQuaternion) and (not 1 <= s.body < nbodies or s.component not in range(4)))
               or (isinstance(s, BodyTwist) and (not 1 <= s.body < nbodies or s.axis not in range(6)))
               or not isinstance(s, KINDS))
        if bad:
            raise ModelError(f"the sensor of output {k + 1} ({s!r}) does not fit the model "
                             f"(nbodies={nbodies}, states={nx}, nv={nv}, inputs={nu})")


def mass_properties(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Body masses (nbodies,), kg, centres of mass (nbodies, 3), m, and
    rotational inertias about them (nbodies, 3, 3), kg m^2; world body zero."""
    mass = np.array([0.0] + [b.mass for b in model.bodies])
    com = np.array([np.zeros(3)] + [b.com for b in model.bodies])
    Ic = np.array([np.zeros((3, 3))] + [b.inertia for b in model.bodies])
    return mass, com, Ic


def rows(sensors: Sequence[Sensor], nv: int, nu: int) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' description of ``sensors`` (``mb_sensor``, ``csrc/sensors.h``):
    rows (n, 4) of (code, index, axis, offset into the parameters or -1), and the parameters."""
    table, par, at = [], [], 0
    for s in sensors:
        if isinstance(s, PointPosition):
            p = np.asarray(s.point, float)
            table.append((s.code, s.body, s.axis, at))
        elif isinstance(s, Linear):
            p = np.r_[s.gain, np.asarray(s.weights, float)]
            table.append((s.code, 0, 0, at))
        elif isinstance(s, KINDS):
            p = None
            table.append((s.code, int(getattr(s, "index", 0)), int(getattr(s, "axis", 0)), -1))
        else:
            raise ModelError(f"unknown output sensor {s!r}")
        if p is not None:
            par.append(p)
            at += p.size
    return (np.array(table, dtype=np.int32).reshape(-1, 4),
            np.concatenate(par) if par else np.zeros(1))


class PackedSensors:
    """Sensors packed once for the kernels' ``mb_sensors_eval``, the code the
    native FMU runs: one compiled call evaluates all of them.

    Parameters
    ----------
    sensors : sequence of Sensor
    model : mbfmu.dynamics.Model
    nu : int
        Number of plant inputs.

    Raises
    ------
    InputError, ModelError
        A sensor does not fit the model.
    """

    def __init__(self, sensors: Sequence[Sensor], model, nu: int):
        table, par = rows(sensors, model.nv, nu)
        mass, com, Ic = mass_properties(model)
        self.size = model.nq + model.nv  # the state entries read
        self._packed = _kernels.sensors_pack(model._h, table, par, int(nu), mass, com, Ic)

    def __call__(self, x: np.ndarray, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Values at state ``x`` (``[q; y]``, then states the sensors do not read), velocities ``v``
        and inputs ``u`` (a plant adds its plug-in elements' energy, ``PotentialEnergy(elements=True)``)."""
        return _kernels.sensors_eval(self._packed, x[:self.size], v, u)


def evaluate(sensors: Sequence[Sensor], model, x: np.ndarray, v: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Values of ``sensors`` at state ``x`` with velocities ``v`` and inputs ``u``.

    Parameters
    ----------
    sensors : sequence of Sensor
    model : mbfmu.dynamics.Model
    x : ndarray (nq + nv,)
        State ``[q; y]``.
    v : ndarray (nv,)
        Velocities, rad/s or m/s.
    u : ndarray (nu,)
        Inputs.

    The plug-in elements' energy of ``PotentialEnergy(elements=True)`` is the plant's to add
    (:meth:`mbfmu.plant.multibody.MultibodyPlant.outputs_at`).
    """
    from .algorithms import kinetic_energy, potential_energy, point_position

    q = x[:model.nq]
    cache: dict = {}
    out = np.empty(len(sensors))
    z = None
    for k, s in enumerate(sensors):
        if isinstance(s, StateValue):
            out[k] = x[s.index]
        elif isinstance(s, Velocity):
            out[k] = v[s.index]
        elif isinstance(s, PointPosition):
            key = (s.body, tuple(s.point))
            if key not in cache:
                cache[key] = point_position(model, q, s.body, s.point)
            out[k] = cache[key][s.axis]
        elif isinstance(s, KineticEnergy):
            out[k] = kinetic_energy(model, q, v)
        elif isinstance(s, PotentialEnergy):
            out[k] = potential_energy(model, q)
        elif isinstance(s, Quaternion):
            e = q[s.index:s.index + 4]
            out[k] = e[s.component] / np.linalg.norm(e)
        elif isinstance(s, Momentum):
            if "momentum" not in cache:  # the kernels' sensor code, shared with the native FMU
                mass, com, Ic = mass_properties(model)
                cache["momentum"] = _kernels.momenta(model._h, q, v, mass, com, Ic)
            out[k] = cache["momentum"][s.axis]
        elif isinstance(s, (BodyQuaternion, BodyTwist)):
            key = ("frame", s.body)
            if key not in cache:  # the kernels' sensor code, shared with the native FMU
                cache[key] = _kernels.body_frame(model._h, q, v, s.body)
            quat, twist = cache[key]
            out[k] = quat[s.component] if isinstance(s, BodyQuaternion) else twist[s.axis]
        elif isinstance(s, Linear):
            if z is None:
                z = np.concatenate([v, np.asarray(u, float)])
            acc = 0.0
            for w, val in zip(s.weights, z):
                if w != 0.0:
                    acc += w * val
            out[k] = s.gain * acc
        else:
            raise ModelError(f"unknown output sensor {s!r}")
    return out

