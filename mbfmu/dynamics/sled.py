"""A sled frame and its sensors: kernel elements.

A model written in the frame of a sled that translates with acceleration
``a_s(t)`` along a fixed axis (a crash sled) is inertial up to that uniform
acceleration: every body gets the d'Alembert force ``-m a_s axis`` at its
centre of mass, i.e. a uniform, time-varying gravity ``g - a_s axis``.
:class:`SledFrame` describes ``a_s`` (an input plus a built-in half-sine
pulse). It is a compiled kernel element (``csrc/sled.h``): the Python plant
(:func:`advance`, :func:`rates`) and the native FMU runtime run the same C
code. Plug-in elements (``csrc/element.h``, such as the crash occupant's
HIC recorder) run in the sled frame too: their registry
(:func:`mbfmu.plant.elements.kernel_registry`) is passed along.

Sensors of the sled frame (with the engine's, :mod:`mbfmu.dynamics.sensors`):

* :class:`Accelerometer`: specific force (inertial acceleration minus
  gravity, what a triaxial accelerometer reads: +9.81 m/s2 up at rest) at a
  point of a body, sled axes, or its magnitude, m/s2;
* :class:`SledAcceleration`: ``a_s(t)``, m/s2;
* :class:`CableTension`: tension of one of the model's cables, N;
* :class:`PointDisplacement`: one coordinate of a body point minus a
  reference value, m.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ModelError, SimulationError
from . import _kernels, sensors as S
from .symbolic import real_array, value
from .integrators import ErrorControl, _failed

G = 9.80665  # m/s2, standard gravity (the unit "g")

ACCELEROMETER, SLED_ACCELERATION, CABLE_TENSION, DISPLACEMENT = 31, 32, 33, 34


@dataclass(frozen=True)
class SledFrame:
    """The model's world frame is a sled with acceleration ``a_s`` along ``axis``.

    ``a_s(t) = u[input] - peak sin(pi (t - start) / duration)`` on
    ``[start, start + duration]`` (a half-sine deceleration pulse; none when
    ``peak`` is 0), m/s2.

    Parameters
    ----------
    axis : tuple of 3 floats
        Unit direction of the sled's travel, world (sled) axes.
    input : int
        Index of the plant input added to the pulse (m/s2), -1 for none.
    peak : float
        Peak deceleration of the built-in pulse, m/s2 (>= 0).
    duration, start : float
        Pulse duration (> 0) and start time, s.
    """

    axis: tuple = (1.0, 0.0, 0.0)
    input: int = -1
    peak: float = 0.0
    duration: float = 0.1
    start: float = 0.0

    def parameters(self) -> np.ndarray:
        """The kernels' parameter block (``csrc/sled.h``, ``SL_N`` values)."""
        return real_array([*map(float, self.axis), self.peak, self.duration, self.start])

    def acceleration(self, t: float, u) -> float:
        """``a_s`` (m/s2) at time ``t`` (s) with inputs ``u``."""
        return _kernels.sled_acceleration(value(self.parameters()), self.input, float(t), np.asarray(u, float))


@dataclass(frozen=True)
class Accelerometer:
    """Specific force at ``point`` (body frame, m) of ``body``, sled axis
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
class SledAcceleration:
    """The sled's acceleration ``a_s(t)``, m/s2."""

    code = SLED_ACCELERATION


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


KINDS = (Accelerometer, SledAcceleration, CableTension, PointDisplacement)


def check(sensors: Sequence, model, nx: int, nu: int) -> None:
    """Raise ModelError naming the first sensor that does not fit the model
    (the sled kinds here, the engine's by :func:`mbfmu.dynamics.sensors.check`)."""
    engine = []
    for k, s in enumerate(sensors):
        if not isinstance(s, KINDS):
            engine.append(s)
            continue
        bad = ((isinstance(s, (Accelerometer, PointDisplacement))
                and (not 1 <= s.body < model.nbodies or len(s.point) != 3
                     or s.axis not in (range(4) if isinstance(s, Accelerometer) else range(3))))
               or (isinstance(s, CableTension) and not 0 <= s.index < len(model.cables)))
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
    """Sensors (engine and sled kinds) packed once for the kernels'
    ``mb_sled_sensors_eval``; call it for their values.

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

    def __call__(self, sled: SledFrame, t: float, x: np.ndarray, v: np.ndarray, u: np.ndarray,
                 tau: np.ndarray) -> np.ndarray:
        """Values at time ``t`` (s), state ``x``, velocities ``v``, inputs
        ``u`` and generalized forces ``tau`` (of the accelerometers' dynamics)."""
        mass, com, Ic = self.mass
        return _kernels.sled_sensors(self.model._h, self.rows, self.par, np.asarray(x, float), v,
                                     np.asarray(u, float), tau, float(t), sled.parameters(), sled.input,
                                     mass, com, Ic)


def rates(model, sled: SledFrame, elements: tuple | None, t: float, q: np.ndarray, y: np.ndarray,
          tau: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(dq/dt, dy/dt)`` in the sled frame at time ``t`` (s): ``y = v``, or with the plug-in
    elements of the kernel registry ``elements`` ``[v; their continuous; their discrete
    states]`` (the discrete states' rates zero)."""
    return _kernels.sled_rhs(model._h, q, y, tau, np.asarray(u, float), float(t), sled.parameters(), sled.input,
                             elements)


def advance(model, sled: SledFrame, elements: tuple | None, q: np.ndarray, y: np.ndarray, tau: np.ndarray,
            u: np.ndarray, t: float, dt: float, control: ErrorControl, first_step: float | None = None,
            what: str = "advance") -> tuple[np.ndarray, np.ndarray]:
    """``(q, y)`` after ``dt`` (s) from time ``t`` with ``u`` and ``tau`` held:
    the compiled error-controlled integrator on ``[q; y]`` (``y`` as :func:`rates`),
    stopped at every instant of the plug-in elements' sampling grids, where their
    discrete states are sampled (``mbn_element_advance``).

    Raises
    ------
    SimulationError
        Naming ``what`` and the interval, when the tolerance cannot be met.
    """
    try:
        return _kernels.sled_advance(model._h, q, y, tau, np.asarray(u, float), float(t), float(dt),
                                     control.options(first_step), sled.parameters(), sled.input, elements)
    except SimulationError as exc:
        raise _failed(what, t, dt, exc) from None
