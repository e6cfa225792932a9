"""Output sensors of a flexible system, evaluated by the compiled kernels.

A plant around a :class:`~mbfmu.dynamics.flexible.FlexibleSystem` (or a
:class:`~mbfmu.dynamics.flexible.RigidSystem`, a tree without beams) describes
its outputs as sensors on the public state ``x = [q; v]`` (``q = [q_rigid;
eta]``, ``v = [v_rigid; eta_dot]``) and on the bodies of the system's
virtual tree. They are evaluated by ``csrc/flexsensors.c``, the same C code
the native FMU runtime runs, so the Python plant and the exported FMU share
one implementation.

Kinds (the rigid ones from :mod:`mbfmu.dynamics.sensors`, read here in the
flexible system's coordinates):

* :class:`~mbfmu.dynamics.sensors.StateValue`: ``x[index]``;
* :class:`~mbfmu.dynamics.sensors.Velocity`: ``v[index]``;
* :class:`StateCombination`: ``weights . x``, any output linear in the
  state (a modal tip deflection ``phi(L) . eta``, m; a root strain
  ``-c phi''(0) . eta``, 1);
* :class:`~mbfmu.dynamics.sensors.PointPosition`: a point fixed on a body
  of the virtual tree (``FlexibleSystem.model``), world axes, m;
* :class:`RelativePosition`: a point fixed on one body in the frame of
  another, m (a finite-segment beam's tip in its root frame);
* :class:`~mbfmu.dynamics.sensors.KineticEnergy`: ``1/2 v^T M v``, J;
* :class:`~mbfmu.dynamics.sensors.PotentialEnergy`: gravity (zero at the
  world origin) and force elements of the virtual tree plus the strain
  energy ``1/2 eta^T K eta`` of the beams, J.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...errors import ModelError
from .. import _kernels
from .. import sensors as S
from .. import symbolic

COMBINATION, RELATIVE = 20, 21  # csrc/flexsensors.h MB_SENS_COMBINATION, MB_SENS_RELATIVE


@dataclass(frozen=True)
class StateCombination:
    """``sum_k weights[k] x[k]`` over the public state ``x = [q; v]``
    (``nq + nv`` weights), in the unit of the output."""

    weights: tuple[float, ...]
    code = COMBINATION


@dataclass(frozen=True)
class RelativePosition:
    """Coordinate ``axis`` (0, 1, 2) of the point ``point`` (body frame, m)
    fixed on ``body``, in the frame of body ``frame`` relative to its
    origin, m."""

    body: int
    point: tuple[float, float, float]
    frame: int
    axis: int
    code = RELATIVE


KINDS = (S.StateValue, S.Velocity, StateCombination, S.PointPosition, RelativePosition, S.KineticEnergy,
         S.PotentialEnergy)


def check(sensors: Sequence, system) -> None:
    """Raise ModelError naming the first sensor that is not a flexible-system
    sensor or does not fit ``system``'s sizes."""
    nx, nb = system.nq + system.nv, system.model.nbodies
    for k, s in enumerate(sensors):
        bad = (not isinstance(s, KINDS)
               or (isinstance(s, S.StateValue) and not 0 <= s.index < nx)
               or (isinstance(s, S.Velocity) and not 0 <= s.index < system.nv)
               or (isinstance(s, StateCombination) and len(s.weights) != nx)
               or (isinstance(s, S.PointPosition) and (not 1 <= s.body < nb or s.axis not in (0, 1, 2)
                                                       or len(s.point) != 3))
               or (isinstance(s, RelativePosition) and (not 1 <= s.body < nb or not 1 <= s.frame < nb
                                                        or s.axis not in (0, 1, 2) or len(s.point) != 3))
               or (isinstance(s, S.PotentialEnergy) and s.elements))
        if bad:
            raise ModelError(f"the sensor of output {k + 1} ({s!r}) is not a sensor of the flexible system "
                             f"(states={nx}, virtual bodies={nb}; kinds: "
                             f"{', '.join(c.__name__ for c in KINDS)})")


def table(sensors: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """The C layout of ``sensors``: rows ``(code, index, axis, offset)``
    (n, 4) with the offset of each sensor's parameters in ``par`` (-1: none),
    and ``par`` (points, m; combination weights)."""
    rows, par = [], []
    at = 0
    for s in sensors:
        if isinstance(s, S.PointPosition):
            rows.append((s.code, s.body, s.axis, at))
            values = np.asarray(s.point, float)
        elif isinstance(s, RelativePosition):
            rows.append((s.code, s.body, s.axis + 3 * s.frame, at))  # csrc/flexsensors.h
            values = np.asarray(s.point, float)
        elif isinstance(s, StateCombination):
            rows.append((s.code, 0, 0, at))
            values = symbolic.real_array(s.weights)  # expressions kept in a recorded build (symbolic.py)
        else:
            rows.append((s.code, getattr(s, "index", 0), 0, -1))
            continue
        par.append(values)
        at += values.size
    return (np.array(rows, np.intc).reshape(len(rows), 4),
            np.concatenate(par) if par else np.zeros(0))


class FlexibleSensors:
    """The outputs of ``sensors`` on ``system``, computed by the kernels.

    Parameters
    ----------
    system : FlexibleSystem
    sensors : sequence of sensors (see the module docstring)

    Examples
    --------
    ``FlexibleSensors(system, sensors)(x, u)`` -> ndarray (len(sensors),).
    """

    def __init__(self, system, sensors: Sequence):
        check(sensors, system)
        self.system = system
        self.sensors = tuple(sensors)
        self.rows, par = table(self.sensors)
        self.par = np.asarray(symbolic.value(par), float)
        self.mass, self.com, self.Ic = S.mass_properties(system.model)

    def __call__(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Outputs at the public state ``x`` (nq + nv,) and inputs ``u``."""
        return _kernels.flex_sensors(self.system._fh, np.asarray(x, float), np.asarray(u, float),
                                     self.rows, self.par, self.mass, self.com, self.Ic)
