"""The plant contract: a mechanism with named ports, an integrator and geometry.

A :class:`Plant` is what every other layer sees of a model: the FMU adapter,
the linearizer, the co-simulation master (through the FMU) and the viewer. It
is deliberately small:

* ``inputs``, ``outputs``, ``parameters``, ``states``: tuples of
  :class:`~mbfmu.plant.signals.Signal` (names, SI units, start values, ranges);
* ``initial_state()``, ``derivatives(t, x, u)``, ``outputs_at(t, x, u)``;
* ``advance(t, x, u, dt)``: the plant's own integrator over one interval
  (what an FMU ``doStep`` calls), inputs held constant over the interval,
  error-controlled to ``error_control`` (``set_tolerance``); it raises
  :class:`~mbfmu.errors.SimulationError` rather than return a state that
  misses the tolerance;
* ``poses(x)``: world pose of every body, ``geometry``: shapes attached to
  bodies, for the viewer;
* ``feedthrough``: which outputs depend directly on which inputs.

Units: SI throughout; time in s. State vectors are float64 arrays of length
``len(states)``, input vectors of length ``len(inputs)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..dynamics.integrators import ErrorControl, advance_function
from ..errors import InputError, SimulationError
from .signals import Signal, index_of, names


@dataclass(frozen=True)
class Shape:
    """A visual shape rigidly attached to a body (for the viewer).

    Parameters
    ----------
    body : int
        Index of the body in the plant's model (0 is the world/ground).
    kind : str
        ``"box"`` (size = x, y, z edge lengths, m), ``"cylinder"`` (size =
        radius, length, m; axis along the shape frame's z), ``"sphere"``
        (size = radius, m), ``"capsule"`` (radius, length, m; axis z) or
        ``"beam"`` (a flexible beam drawn along its deflection; size =
        radius, length, m; axis x; see ``Plant.beam_deflection``) or
        ``"mesh"`` (a triangle mesh given in ``mesh``; size = its radius
        about the shape origin, m).
    size : tuple of float
        Dimensions in m, as above.
    R : ndarray, shape (3, 3)
        Orientation of the shape frame in the body frame.
    p : ndarray, shape (3,)
        Origin of the shape frame in the body frame, m.
    color : str
        Any matplotlib / CSS colour.
    name : str
        Label for the viewer.
    mesh : tuple of ndarray, optional
        For ``kind="mesh"``: vertices ``V`` (n, 3) in the shape frame, m,
        and counter-clockwise triangles ``F`` (m, 3), int.
    """

    body: int
    kind: str
    size: tuple[float, ...]
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))
    color: str = "#4c72b0"
    name: str = ""
    mesh: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)


class Plant:
    """Base class of every plant. Subclasses set the port tuples and
    implement :meth:`derivatives` and :meth:`outputs_at`; the rest has
    working defaults.

    Attributes
    ----------
    name : str
        Library name (``"rigid_arm"``); also the FMU's model name.
    description : str
        One paragraph for ``mbfmu list`` and the FMU.
    inputs, outputs, parameters, states : tuple of Signal
        The ports. ``parameters`` hold the values this instance was built
        with as their ``start``.
    feedthrough : dict
        Output name -> tuple of input names it depends on *directly* (at the
        same instant). Empty for a mechanical plant whose outputs are
        functions of the state only.
    default_step : float
        Suggested communication step, s.
    default_stop_time : float
        Suggested length of a run, s.
    internal_step : float
        First trial step of the plant's error-controlled integrator, s; the
        steps after it follow the tolerance.
    error_control : ErrorControl
        Tolerance (default rtol = atol = 1e-6) and step limits of
        :meth:`advance`; see :meth:`set_tolerance`.
    parameter_declaration : Declaration or None
        The parameters declared once (:mod:`mbfmu.plant.parameters`), from
        which the constructor, the checks and ``parameters`` come.
    """

    name: str = "plant"
    description: str = ""
    inputs: tuple[Signal, ...] = ()
    outputs: tuple[Signal, ...] = ()
    parameters: tuple[Signal, ...] = ()
    states: tuple[Signal, ...] = ()
    feedthrough: Mapping[str, tuple[str, ...]] = {}
    default_step: float = 1e-3
    default_stop_time: float = 10.0
    internal_step: float = 1e-3
    error_control: ErrorControl = ErrorControl()
    geometry: tuple[Shape, ...] = ()
    # the plant's parameters declared once (mbfmu.plant.parameters.Declaration), or None
    parameter_declaration = None

    def set_tolerance(self, tolerance: float) -> None:
        """Integrate :meth:`advance` to relative and absolute tolerance
        ``tolerance`` (absolute in each state's unit); what an FMU does with
        ``fmi2SetupExperiment``'s tolerance."""
        try:
            tol = float(tolerance)
        except (TypeError, ValueError):
            raise InputError(f"plant {self.name!r}: tolerance {tolerance!r} is not a number") from None
        if not (np.isfinite(tol) and tol > 0):
            raise InputError(f"plant {self.name!r}: tolerance {tolerance!r} must be finite and > 0")
        self.error_control = self.error_control.with_tolerance(tol)

    # ---- parameters ---------------------------------------------------
    def parameter_values(self) -> dict[str, float]:
        """Current parameter values by name (SI units)."""
        return {p.name: p.start for p in self.parameters}

    # ---- the dynamics ---------------------------------------------------
    def initial_state(self) -> np.ndarray:
        """State at t = 0, shape (len(states),)."""
        return np.array([s.start for s in self.states], dtype=float)

    def derivatives(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """State derivative dx/dt at time ``t`` (s), shape (len(states),)."""
        raise NotImplementedError

    def outputs_at(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Output vector at time ``t``, shape (len(outputs),)."""
        raise NotImplementedError

    def normalize_state(self, x: np.ndarray) -> np.ndarray:
        """Project ``x`` back onto the state manifold (unit quaternions,
        closed loops). Default: unchanged."""
        return x

    def advance(self, t: float, x: np.ndarray, u: np.ndarray, dt: float) -> np.ndarray:
        """State at ``t + dt`` from ``x`` at ``t`` with inputs ``u`` held.

        Default: the compiled error-controlled integrator
        (:func:`~mbfmu.dynamics.integrators.advance_function`) around
        :meth:`derivatives`, the state normalized after every accepted step.
        Subclasses replace it with fully compiled right-hand sides.

        Raises
        ------
        SimulationError
            When the tolerance cannot be met within the step limits.
        """
        u = np.asarray(u, float)
        norm = self.normalize_state if type(self).normalize_state is not Plant.normalize_state else None
        x = advance_function(lambda tk, xk: self.derivatives(tk, xk, u), t, x, dt, self.error_control,
                             self.internal_step, norm, what=f"plant {self.name!r}")
        if not np.all(np.isfinite(x)):
            raise SimulationError(f"plant {self.name!r}: state became non-finite between t={t} s and t={t + dt} s")
        return x

    # ---- for the viewer -------------------------------------------------
    def poses(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World pose of every body for state ``x``.

        Returns
        -------
        R : ndarray, shape (nbodies, 3, 3)
            Rotation of each body frame in the world frame (``R_WB``).
        p : ndarray, shape (nbodies, 3)
            Origin of each body frame in the world frame, m (``p_WB``).
        """
        raise NotImplementedError

    # ---- validation helpers ----------------------------------------------
    def check_inputs(self, u: Any) -> np.ndarray:
        """``u`` as a float array of the right size; raises naming the
        offending input for NaN/inf or a wrong size."""
        arr = np.asarray(u, dtype=float).reshape(-1)
        if arr.size != len(self.inputs):
            raise InputError(f"plant {self.name!r}: {arr.size} input values given, expected "
                             f"{len(self.inputs)} ({', '.join(names(self.inputs))})")
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"plant {self.name!r}: input {self.inputs[i].name!r} = {arr[i]} is not finite")
        return arr

    def check_state(self, x: Any) -> np.ndarray:
        """``x`` as a float array of the right size, finite."""
        arr = np.asarray(x, dtype=float).reshape(-1)
        if arr.size != len(self.states):
            raise InputError(f"plant {self.name!r}: state has {arr.size} values, expected {len(self.states)}")
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"plant {self.name!r}: state {self.states[i].name!r} = {arr[i]} is not finite")
        return arr

    def input_index(self, name: str) -> int:
        return index_of(self.inputs, name, "input")

    def output_index(self, name: str) -> int:
        return index_of(self.outputs, name, "output")

    def default_inputs(self) -> np.ndarray:
        """Start values of the inputs."""
        return np.array([s.start for s in self.inputs], dtype=float)

    def simulate(self, stop_time: float | None = None, step: float | None = None,
                 u: Sequence[float] | None = None, x0: np.ndarray | None = None):
        """Simulate with constant inputs; returns ``(time, X, Y)`` arrays.

        Parameters
        ----------
        stop_time : float, optional
            End time, s (default ``default_stop_time``).
        step : float, optional
            Output/communication step, s (default ``default_step``).
        u : sequence of float, optional
            Constant input vector (default: the inputs' start values).
        x0 : ndarray, optional
            Initial state (default ``initial_state()``).
        """
        stop_time = self.default_stop_time if stop_time is None else float(stop_time)
        step = self.default_step if step is None else float(step)
        n = int(round(stop_time / step))
        if n < 1 or abs(n * step - stop_time) > 1e-9 * max(1.0, stop_time):
            raise InputError(f"stop time {stop_time} s is not a positive whole number of steps {step} s")
        uu = self.default_inputs() if u is None else self.check_inputs(u)
        x = self.initial_state() if x0 is None else self.check_state(x0)
        time = np.arange(n + 1) * step
        X = np.empty((n + 1, len(self.states)))
        Y = np.empty((n + 1, len(self.outputs)))
        X[0] = x
        Y[0] = self.outputs_at(0.0, x, uu)
        for k in range(n):
            x = self.advance(time[k], x, uu, step)
            X[k + 1] = x
            Y[k + 1] = self.outputs_at(time[k + 1], x, uu)
        return time, X, Y
