"""Gain scheduling: a controller designed on a grid of operating points, gains interpolated.

:func:`schedule` linearizes a plant at each point of a grid over one
scheduling variable (a state, such as the rigid arm's elbow angle, or a
parameter, such as the satellite's deployment fraction), holds the plant
there with :func:`~mbfmu.control.input_trim.trim_inputs`, calls the user's
``design`` on each linear model, and returns a :class:`Schedule`. Its
:meth:`Schedule.controller` is a discrete python-control system (so it runs
as a :class:`~mbfmu.cosim.ControlUnit`, evaluated in C by the compiled loop,
and exports as a native controller FMU with
:func:`~mbfmu.control.export.export_fmu` and ``runtime="native"``, or as a
pythonfmu one rebuilt there by reference from :func:`scheduled_controller`).
Its law and tables are one :class:`ScheduledLaw`, which the Python unit
evaluates and the C evaluator (``mbfmu/fmu/native/ctrl/controller.c``) reads::

    u = u_ref - K(s) (x - x_ref)

with ``x`` the measured plant state, ``x_ref`` the target state, ``u_ref``
the inputs that hold the plant at the target, and ``K(s)`` the gains
interpolated linearly (element by element, clamped at the grid's ends) at
the scheduling variable ``s``: the measured state, or an extra controller
input for a parameter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InputError, unknown_name
from ..plant import Plant


@dataclass
class Schedule:
    """Gains designed on a grid of operating points.

    Attributes
    ----------
    variable : str
        The scheduling variable (a state or a parameter name).
    kind : {"state", "parameter"}
    grid : ndarray (g,)
        Its values (SI units), increasing.
    gains : ndarray (g, m, n)
        One state-feedback gain per grid point.
    states, inputs : list of str
        Names of the plant's states (the controller's measured inputs) and
        inputs (the controller's outputs).
    x0, u0 : ndarray (g, n), (g, m)
        The operating point at each grid point (held state and its inputs).
    linear : list of control.StateSpace
        The linear model at each grid point.
    model_source : str
        Where the linear models came from (the plant's exact linearization and its method).
    """

    variable: str
    kind: str
    grid: np.ndarray
    gains: np.ndarray
    states: list[str]
    inputs: list[str]
    x0: np.ndarray
    u0: np.ndarray
    linear: list
    model_source: str = ""

    def __repr__(self) -> str:
        g = len(self.grid)
        span = f"{self.grid[0]:.4g} .. {self.grid[-1]:.4g}" if g else "empty"
        def names(items: list[str]) -> str:
            return ", ".join(items[:6]) + (f", ... {len(items) - 6} more" if len(items) > 6 else "")
        return (f"Schedule({self.kind} {self.variable!r}: {g} points, {span}; gains "
                f"{len(self.inputs)}x{len(self.states)} (inputs {names(self.inputs)}; states {names(self.states)}))")

    def gain(self, s: float) -> np.ndarray:
        """``K(s)``: the gains interpolated at ``s`` (clamped at the grid's ends)."""
        return _interpolate(self.grid, self.gains, float(s))

    def controller(self, x_ref: Sequence[float], u_ref: Sequence[float], dt: float, *, fixed_at: float | None = None,
                   name: str = "scheduled"):
        """The discrete controller ``u = u_ref - K(s) (x - x_ref)``.

        Parameters
        ----------
        x_ref : array_like (n,)
            Target state (SI units).
        u_ref : array_like (m,)
            Inputs holding the plant at the target (e.g. ``trim_inputs(...).u``).
        dt : float
            Sample time, s (the co-simulation step).
        fixed_at : float, optional
            Use the gain of this value of the scheduling variable at all
            times: the fixed controller to compare with.
        name : str
            System (and unit) name.

        Returns
        -------
        control.NonlinearIOSystem
            Inputs: the plant's state names (and the parameter, for a
            parameter schedule); outputs: the plant's input names. Its
            ``.reference`` rebuilds it (for :func:`~mbfmu.control.export.export_fmu`).
        """
        grid, gains = (self.grid, self.gains) if fixed_at is None else \
            (np.array([0.0]), self.gain(fixed_at)[None])
        index = self.states.index(self.variable) if self.kind == "state" and fixed_at is None else -1
        kwargs = dict(grid=grid.tolist(), gains=gains.tolist(), x_ref=[float(v) for v in x_ref],
                      u_ref=[float(v) for v in u_ref], dt=float(dt), states=list(self.states),
                      inputs=list(self.inputs), index=index,
                      parameter=self.variable if self.kind == "parameter" and fixed_at is None else "", name=name)
        return scheduled_controller(**kwargs)


def _interpolate(grid: np.ndarray, values: np.ndarray, s: float) -> np.ndarray:
    if len(grid) == 1:
        return values[0]
    k = int(np.clip(np.searchsorted(grid, s) - 1, 0, len(grid) - 2))
    w = float(np.clip((s - grid[k]) / (grid[k + 1] - grid[k]), 0.0, 1.0))
    return (1.0 - w) * values[k] + w * values[k + 1]


class ScheduledLaw:
    """The scheduled state-feedback law ``u = u_ref - K(s) (x - x_ref)``: its
    tables and its evaluation.

    The one description of a scheduled controller: the python-control
    system of :func:`scheduled_controller` evaluates it with :meth:`output`,
    and the compiled co-simulation loop and the native controller FMUs read
    its tables (``mbfmu/fmu/native/ctrl/controller.c``, ``MBC_SCHED``). The
    tables are read-only.

    Attributes
    ----------
    grid : ndarray (g,)
        Scheduling variable values (SI units), increasing.
    gains : ndarray (g, m, n)
        Gain per grid point.
    x_ref : ndarray (n,)
        Target state (SI units).
    u_ref : ndarray (m,)
        The inputs holding the plant at the target (SI units).
    index : int
        Position among the controller's inputs of the scheduling variable:
        a measured state (``< n``), the parameter input (``n``), or -1 (none:
        the gains at ``s = 0``).
    """

    def __init__(self, grid: np.ndarray, gains: np.ndarray, x_ref: np.ndarray, u_ref: np.ndarray, index: int):
        self.grid, self.gains, self.x_ref, self.u_ref = (np.array(a, dtype=float) for a in (grid, gains, x_ref, u_ref))
        for a in (self.grid, self.gains, self.x_ref, self.u_ref):
            a.setflags(write=False)
        self.index = int(index)

    def output(self, t: float, x: Any, u: Any, params: Any = None) -> np.ndarray:
        """The controller's outputs ``u_ref - K(s) (u[:n] - x_ref)`` for its inputs ``u``.

        Parameters
        ----------
        t : float
            Time, s (unused: the law does not depend on it).
        x : array_like
            The (empty) state.
        u : array_like
            The measured state (and the scheduling parameter last, for a parameter schedule).
        params : dict, optional
            python-control's parameters (unused).

        Returns
        -------
        ndarray (m,)
            The plant inputs (SI units).
        """
        u = np.asarray(u, float)
        s = u[self.index] if self.index >= 0 else 0.0
        return self.u_ref - _interpolate(self.grid, self.gains, s) @ (u[:len(self.x_ref)] - self.x_ref)

    @staticmethod
    def update(t: float, x: Any, u: Any, params: Any = None) -> np.ndarray:
        """The (empty) next state: the law is memoryless."""
        return np.zeros(0)


def scheduled_controller(grid: Sequence[float], gains: Sequence[Any], x_ref: Sequence[float],
                         u_ref: Sequence[float], dt: float, states: Sequence[str], inputs: Sequence[str],
                         index: int = -1, parameter: str = "", name: str = "scheduled"):
    """The scheduled state-feedback law as a discrete python-control system (no states).

    Parameters
    ----------
    grid : sequence of float (g,)
        Scheduling variable values, increasing.
    gains : nested sequence (g, m, n)
        Gain per grid point.
    x_ref, u_ref : sequence of float
        Target state and its holding inputs (SI units).
    dt : float
        Sample time, s.
    states, inputs : sequence of str
        Measured state names (inputs of the controller) and plant input names (its outputs).
    index : int
        Position in ``states`` of the scheduling variable (-1: the parameter input, or none).
    parameter : str
        Name of the extra input carrying a scheduling parameter ("" for none).
    name : str
        System name.

    Returns
    -------
    control.NonlinearIOSystem
        Its ``.law`` is the :class:`ScheduledLaw` it evaluates; its
        ``.reference`` rebuilds it.
    """
    import control
    g = np.asarray(grid, float)
    K = np.asarray(gains, float)
    xr, ur = np.asarray(x_ref, float), np.asarray(u_ref, float)
    n, m = len(states), len(inputs)
    if K.shape != (len(g), m, n) or xr.shape != (n,) or ur.shape != (m,):
        raise InputError(f"scheduled controller {name!r}: gains {K.shape}, x_ref {xr.shape}, u_ref {ur.shape} do "
                         f"not fit {len(g)} grid points, {n} states and {m} inputs")
    if len(g) > 1 and np.any(np.diff(g) <= 0):
        raise InputError(f"scheduled controller {name!r}: the grid must increase")
    if not parameter and not -1 <= int(index) < n:
        raise InputError(f"scheduled controller {name!r}: index {index} is not a state position (0 .. {n - 1}) "
                         "or -1")
    law = ScheduledLaw(g, K, xr, ur, n if parameter else int(index))
    from ..cosim.signal_names import control_names
    sys = control.nlsys(law.update, law.output, inputs=control_names(list(states) + ([parameter] if parameter else [])),
                        outputs=control_names(inputs), states=0, dt=float(dt), name=name)
    sys.law = law
    sys.reference = ("mbfmu.control.scheduling:scheduled_controller",
                     dict(grid=g.tolist(), gains=K.tolist(), x_ref=xr.tolist(), u_ref=ur.tolist(), dt=float(dt),
                          states=list(states), inputs=list(inputs), index=int(index), parameter=parameter, name=name))
    return sys


def _rebuild(plant: Plant, name: str, value: float) -> Plant:
    values = {p.name: p.start for p in plant.parameters}
    values[name] = float(value)
    from ..plant.library import construct
    return construct(type(plant), values, f"plant {plant.name!r}")


def schedule(plant: Plant, grid: Mapping[str, Sequence[float]], design: Callable[..., Any], *,
             state: Mapping[str, float] | None = None, u: Mapping[str, float] | None = None,
             t: float = 0.0) -> Schedule:
    """Design a controller on a grid of operating points.

    Parameters
    ----------
    plant : Plant
        The plant (a library plant, URDF plant...).
    grid : mapping
        One entry ``{name: values}``: a state name (``"q[3]"``, the plant is
        held at each value by :func:`~mbfmu.control.input_trim.trim_inputs`)
        or a parameter name (the plant is rebuilt with each value).
    design : callable
        ``design(linear, point) -> K``: the state-feedback gain (m, n) for the
        continuous linear model ``linear`` (a :class:`control.StateSpace`,
        deviation variables) at the operating point ``point``
        (``{"x": state, "u": inputs, name: value}``).
    state : mapping, optional
        The other states of every operating point (default the plant's initial ones).
    u : mapping, optional
        Inputs fixed during the trims (the others are solved for).
    t : float
        Time of the operating points, s.

    Returns
    -------
    Schedule
    """
    from .input_trim import trim_inputs
    from .linearization import linearize, operating_state
    if not isinstance(grid, Mapping) or len(grid) != 1:
        raise InputError("schedule: grid must map one scheduling variable to its values, e.g. {'q[3]': [...]}")
    (name, values), = grid.items()
    values = np.asarray(values, float).reshape(-1)
    if values.size < 1 or not np.all(np.isfinite(values)) or np.any(np.diff(values) <= 0):
        raise InputError(f"schedule: the values of {name!r} must be finite and increasing")
    state_names = [s.name for s in plant.states]
    param_names = [p.name for p in plant.parameters]
    if name in state_names:
        kind = "state"
    elif name in param_names:
        kind = "parameter"
    else:
        raise unknown_name(f"plant {plant.name!r} has no state or parameter {name!r}", name,
                           state_names + param_names)
    gains, xs, us, lins = [], [], [], []
    for value in values:
        p = _rebuild(plant, name, value) if kind == "parameter" else plant
        x = operating_state(p, dict(state or {}))
        if kind == "state":
            x[state_names.index(name)] = value
        free = None
        if u:
            free = [s.name for s in p.inputs if s.name not in u]
        hold = trim_inputs(p, state=x, u=u, free=free, t=t)
        if hold.residual > 1e-8 * (1.0 + float(np.abs(hold.x).max())):
            raise InputError(f"schedule: no inputs hold {plant.name!r} at {name} = {value:g} "
                             f"(residual {hold.residual:.3g})")
        lin = linearize(p, hold.x, hold.u, t=t)
        K = np.asarray(design(lin, {"x": hold.x, "u": hold.u, name: float(value)}), float)
        if K.shape != (len(p.inputs), lin.nstates):
            raise InputError(f"schedule: design returned a gain of shape {K.shape}; expected "
                             f"({len(p.inputs)}, {lin.nstates})")
        gains.append(K); xs.append(hold.x); us.append(hold.u); lins.append(lin)
    from .fmu_model import SOURCE_PLANT
    methods = sorted({lin.linearization.method for lin in lins})
    return Schedule(name, kind, values, np.array(gains), state_names, [s.name for s in plant.inputs],
                    np.array(xs), np.array(us), lins, f"{SOURCE_PLANT} ({', '.join(methods)})")
