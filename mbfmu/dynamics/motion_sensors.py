"""Sensors of the dynamics: kernel sensors that read the solved motion.

They are evaluated by the kernels (``csrc/element.h``'s ``mbn_motion_sensors_eval``),
in the Python plant and in the native FMU runtime alike, with the plant's plug-in
elements' forces and, when the plant registers a frame element (a moving frame
such as the crash occupant's sled, ``element.h``), in that frame: the dynamics
then runs under the gravity ``g - a(t, u)``, ``a`` the frame's acceleration.

* :class:`Accelerometer`: specific force (inertial acceleration minus
  gravity, what a triaxial accelerometer reads: +9.81 m/s2 up at rest) at a
  point of a body, world (frame) axes, or its magnitude, m/s2;
* :class:`FrameAcceleration`: one component of the frame element's
  acceleration ``a``, m/s2 (0 without a frame element);
* :class:`CableTension`: tension of one of the model's cables, N;
* :class:`PointDisplacement`: one coordinate of a body point minus a
  reference value, m.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ModelError
from . import _kernels, sensors as S
from .symbolic import real_array, value

G = 9.80665  # m/s2, standard gravity (the unit "g")

# the kernels' codes (csrc/element.h's MBN_SENS_*)
ACCELEROMETER, FRAME_ACCELERATION, CABLE_TENSION, DISPLACEMENT = 31, 32, 33, 34


@dataclass(frozen=True)
class Accelerometer:
    """Specific force at ``point`` (body frame, m) of ``body``, world (frame) axis
    ``axis`` (0-2) or the magnitude (``axis`` 3), m/s2."""

    body: int
    point: tuple
    axis: int
    code = ACCELEROMETER

    @property
    def index(self) -> int:
        """The body (the kernels' ``mb_sensor.index``)."""
        return self.body

    def parameters(self) -> np.ndarray:
        """The sensor's parameters for the kernels: the point (expressions while recording, symbolic.py)."""
        return real_array(self.point)


@dataclass(frozen=True)
class FrameAcceleration:
    """Component ``axis`` (0-2, world axes) of the acceleration of the plant's frame
    element (its ``frame_accel``, ``csrc/element.h``), m/s2; 0 without a frame element."""

    axis: int = 0
    code = FRAME_ACCELERATION


@dataclass(frozen=True)
class CableTension:
    """Tension of cable ``index`` (0-based, the model's order), N."""

    index: int
    code = CABLE_TENSION


@dataclass(frozen=True)
class PointDisplacement:
    """World coordinate ``axis`` of ``point`` (body frame, m) of ``body``
    minus ``reference``, m."""

    body: int
    point: tuple
    axis: int
    reference: float = 0.0
    code = DISPLACEMENT

    @property
    def index(self) -> int:
        """The body (the kernels' ``mb_sensor.index``)."""
        return self.body

    def parameters(self) -> np.ndarray:
        """The sensor's parameters for the kernels: the point, then the reference."""
        return real_array([*self.point, self.reference])


KINDS = (Accelerometer, FrameAcceleration, CableTension, PointDisplacement)


def check(sensors: Sequence, model, nx: int, nu: int) -> None:
    """Raise ModelError naming the first sensor that does not fit the model
    (the kinds here, the engine's by :func:`mbfmu.dynamics.sensors.check`)."""
    engine = []
    for k, s in enumerate(sensors):
        if not isinstance(s, KINDS):
            engine.append(s)
            continue
        bad = ((isinstance(s, (Accelerometer, PointDisplacement))
                and (not 1 <= s.body < model.nbodies or len(s.point) != 3
                     or s.axis not in (range(4) if isinstance(s, Accelerometer) else range(3))))
               or (isinstance(s, CableTension) and not 0 <= s.index < len(model.cables))
               or (isinstance(s, FrameAcceleration) and s.axis not in range(3)))
        if bad:
            raise ModelError(f"the sensor of output {k + 1} ({s!r}) does not fit the model "
                             f"(nbodies={model.nbodies}, cables={len(model.cables)})")
    S.check(engine, model.nbodies, nx, model.nv, nu)


def sensor_row(s, nv: int, nu: int) -> tuple[int, int, int, np.ndarray | None]:
    """``(code, index, axis, parameters or None)`` of a sensor for the kernels' ``mb_sensor``."""
    if isinstance(s, S.PointPosition):
        return s.code, s.body, s.axis, np.asarray(s.point, float)
    if isinstance(s, S.Linear):
        return s.code, 0, 0, np.r_[s.gain, np.asarray(s.weights, float)]
    par = s.parameters() if hasattr(s, "parameters") else None
    return s.code, int(getattr(s, "index", 0)), int(getattr(s, "axis", 0)), par


class CompiledSensors:
    """Sensors (engine kinds and these) packed once for the kernels'
    ``mbn_motion_sensors_eval``; call it for their values.

    Parameters
    ----------
    sensors : sequence
        The plant's output sensors.
    model : Model
    nu : int
        Number of plant inputs.
    """

    def __init__(self, sensors: Sequence, model, nu: int):
        rows, par, at = [], [], 0
        for s in sensors:
            code, index, axis, p = sensor_row(s, model.nv, nu)
            rows.append((code, index, axis, at if p is not None else -1))
            if p is not None:
                par.append(p)
                at += p.size
        self.model = model
        self.rows = np.array(rows, dtype=np.int32).reshape(-1, 4)
        self.par = np.asarray(value(np.concatenate(par)), float) if par else np.zeros(1)
        self.mass = S.mass_properties(model)

    def __call__(self, t: float, x: np.ndarray, v: np.ndarray, u: np.ndarray, tau: np.ndarray,
                 elements: tuple | None = None) -> np.ndarray:
        """Values at time ``t`` (s), state ``x``, velocities ``v``, inputs ``u`` and
        generalized forces ``tau`` (of the accelerometers' dynamics), with the plug-in
        elements of the kernel registry ``elements`` (their states after ``[q; v]`` in
        ``x``; a frame element among them sets the frame), or none."""
        mass, com, Ic = self.mass
        return _kernels.motion_sensors(self.model._h, self.rows, self.par, np.asarray(x, float), v,
                                       np.asarray(u, float), tau, float(t), mass, com, Ic, elements)
