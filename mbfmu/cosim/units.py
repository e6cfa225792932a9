"""Co-simulation units: what the master steps.

Every unit looks the same to the master (:class:`Unit`): named inputs and
outputs with types and units, a direct-feedthrough map, ``do_step(t, h)``, a
preferred step, and get/set state where it can. The master talks to a unit
through two buffers, ``u`` (inputs, in ``inputs`` order) and ``y`` (outputs,
in ``outputs`` order): it writes ``u`` and calls :meth:`Unit.push`, it calls
:meth:`Unit.pull` and reads ``y``. This keeps the master loop free of name
look-ups.

Three kinds are provided:

* :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit` -- any FMI 2.0 co-simulation FMU,
  through fmpy (in :mod:`mbfmu.cosim.fmi.fmu_unit`);
* :class:`ControlUnit` -- any python-control system (``StateSpace``,
  ``TransferFunction``, ``NonlinearIOSystem``); continuous systems are
  discretized at the unit's step with zero-order hold, discrete ones run at
  their own ``dt``;
* :class:`FunctionUnit` -- a plain Python function ``y = f(t, u)``, with the
  source helpers of :mod:`mbfmu.cosim.sources`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import CosimError, InputError, unknown_name
from ..plant.signals import current_name, one_based

TYPES = ("Real", "Integer", "Boolean", "String")


@dataclass(frozen=True)
class Variable:
    """One scalar variable of a unit.

    Parameters
    ----------
    name : str
        Variable name as the unit spells it (FMI structured names allowed).
    causality : str
        ``"input"``, ``"output"``, ``"parameter"``, ``"calculatedParameter"``,
        ``"local"`` or ``"independent"``.
    type : str
        ``"Real"``, ``"Integer"``, ``"Boolean"`` or ``"String"``.
    unit : str or None
        Unit symbol (``"m"``, ``"N.m"``); ``None`` when not declared.
    start : float or None
        Start value; ``None`` when the unit declares none.
    vr : int or None
        FMI value reference (FMU units only).
    """

    name: str
    causality: str
    type: str = "Real"
    unit: str | None = None
    start: float | None = None
    vr: int | None = None


class Unit:
    """Base class of co-simulation units (the contract the master relies on).

    Attributes
    ----------
    name : str
        Unique name inside a system.
    variables : dict[str, Variable]
        All variables the unit exposes, by name.
    inputs, outputs : list[str]
        Names of the inputs and outputs, in buffer order.
    feedthrough : dict[str, tuple[str, ...]]
        For each output, the inputs it depends on directly (algebraically).
    step : float or None
        The unit's own step [s] (a divisor of the macro step), ``None`` to
        step at the macro step.
    can_rollback : bool
        Whether :meth:`get_state` / :meth:`set_state` work.
    can_interpolate_inputs : bool
        Whether :meth:`push_derivatives` is honoured.
    u, y : sequence of float
        Input and output buffers (see the module docstring).
    """

    name: str
    can_rollback: bool = False
    can_interpolate_inputs: bool = False
    step: float | None = None
    will_roll_back: bool = False  # set by the master before setup when it may restore earlier states

    def __init__(self, name: str, variables: Iterable[Variable], feedthrough: Mapping[str, Iterable[str]],
                 step: float | None = None) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise InputError(f"unit name {name!r} must be a non-empty string without '.'")
        self.name = name
        self.variables = {v.name: v for v in variables}
        self.inputs = [v.name for v in self.variables.values() if v.causality == "input"]
        self.outputs = [v.name for v in self.variables.values() if v.causality == "output"]
        self.feedthrough = {o: tuple(feedthrough.get(o, ())) for o in self.outputs}
        if step is not None and not (step > 0 and math.isfinite(step)):
            raise InputError(f"unit {name!r}: step {step!r} must be a positive finite number of seconds")
        self.step = step
        self.values: dict[str, Any] = {}   # parameters and start values set by name before a run
        self.u: Any = [0.0] * len(self.inputs)
        self.y: Any = [0.0] * len(self.outputs)

    # -- set-up --------------------------------------------------------------------
    def set(self, name: str, value: Any) -> None:
        """Set a parameter or start value by name before a run."""
        var = self.variable(name)
        if var.causality not in ("parameter", "input") and var.start is None:
            raise InputError(f"unit {self.name!r}: {name!r} is a {var.causality} without start value; it cannot be set")
        self.values[name] = value

    def variable(self, name: str) -> Variable:
        """The :class:`Variable` called ``name``; raises :class:`UnknownNameError`."""
        try:
            return self.variables[current_name(name, self.variables)]
        except KeyError:
            raise unknown_name(f"unit {self.name!r} has no variable {name!r}", name, self.variables) from None

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        """Instantiate and initialize for a run from ``t0`` [s]; ``step`` [s] is the unit's step."""
        raise NotImplementedError

    def terminate(self) -> None:
        """End the run and release run resources."""

    def connect_inputs(self, driven: Iterable[int]) -> None:
        """Told by the master before a run which inputs (positions) are connected;
        a unit may push only those."""

    # -- hot path -----------------------------------------------------------------
    def push(self) -> None:
        """Send the input buffer ``u`` to the unit."""

    def push_derivatives(self, d1: Sequence[float], d2: Sequence[float]) -> None:
        """Send first and second time derivatives of the inputs [unit/s, unit/s2]."""

    def pull(self) -> None:
        """Refresh the output buffer ``y`` from the unit."""
        raise NotImplementedError

    def do_step(self, t: float, h: float) -> None:
        """Advance from ``t`` to ``t + h`` [s] with the inputs last pushed."""
        raise NotImplementedError

    def getter(self, names: Sequence[str]) -> Callable[[], Sequence[float]]:
        """A function returning the current values of ``names`` (for recording)."""
        idx = []
        for n in names:
            self.variable(n)
            if n in self.outputs:
                idx.append(("y", self.outputs.index(n)))
            elif n in self.inputs:
                idx.append(("u", self.inputs.index(n)))
            else:
                raise InputError(f"unit {self.name!r}: cannot record {n!r} (a {self.variables[n].causality})")
        return lambda: [getattr(self, b)[i] for b, i in idx]

    # -- rollback -----------------------------------------------------------------
    def get_state(self) -> Any:
        """Save the unit's complete state (only if ``can_rollback``)."""
        raise CosimError(f"unit {self.name!r} cannot save its state (no rollback)")

    def set_state(self, state: Any) -> None:
        """Restore a state returned by :meth:`get_state`."""
        raise CosimError(f"unit {self.name!r} cannot restore a state (no rollback)")

    def free_state(self, state: Any) -> None:
        """Release a state returned by :meth:`get_state`."""

    def log_text(self) -> str:
        """The unit's recent log messages, one per line."""
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, inputs={self.inputs}, outputs={self.outputs})"


# ----------------------------------------------------------------------------------
# python-control unit
# ----------------------------------------------------------------------------------
def system_units(sys: Any, units: Any = None) -> dict[str, str]:
    """Unit symbol per signal label of a python-control system.

    The design's own (``sys.signal_units``, set by :func:`mbfmu.control.linearize`
    and the controllers designed on its model), overridden by ``units``: a
    mapping ``label -> unit``, or the plant the system was designed for
    (its states', inputs' and outputs' units by name: a controller labelled
    like the plant, ``q[1]`` in, ``tau[1]`` out, gets rad and N.m).

    Parameters
    ----------
    sys : control.InputOutputSystem
        The system.
    units : mapping or Plant, optional
        Units by label, or a plant.

    Returns
    -------
    dict
        Label -> unit symbol.
    """
    if units is not None and all(hasattr(units, a) for a in ("states", "inputs", "outputs")):
        signals = (*units.states, *units.inputs, *units.outputs, *getattr(units, "parameters", ()))
        units = {sig.name: sig.unit for sig in signals}
    return {**dict(getattr(sys, "signal_units", None) or {}), **dict(units or {})}



class ControlUnit(Unit):
    """A python-control system as a co-simulation unit.

    Parameters
    ----------
    name : str
        Unit name in the system.
    sys : control.StateSpace, control.TransferFunction or control.NonlinearIOSystem
        The system. Its signal and state labels become the unit's variable
        names, vectors counted from 1 as in FMI (:func:`mbfmu.plant.signals.one_based`):
        python-control's 0-based default labels ``u[0], y[0], x[0]`` become
        ``u[1], y[1], x[1]``; the mappings below take either.
    x0 : array_like, optional
        Initial state (default zeros).
    units : mapping or Plant, optional
        Unit symbol per signal name (for the system's unit checks), or the
        plant the system was designed for (:func:`system_units`); default
        the design's own ``sys.signal_units``. A signal left without a unit
        takes the unit of what it is connected to in a
        :class:`~mbfmu.cosim.System` (:meth:`~mbfmu.cosim.System.unit_symbols`).
    inputs_start : mapping or float, optional
        Start value of inputs (used when an input is left unconnected).
    substeps : int
        RK4 sub-steps per step for continuous *nonlinear* systems (default 10).
    feedthrough : mapping, optional
        Output -> inputs it depends on directly; for nonlinear systems the
        default is "every output on every input" unless ``outfcn`` is absent.
    step : float, optional
        The unit's own step [s]. Discrete systems default to their ``dt``.

    Notes
    -----
    Continuous linear systems are discretized with zero-order hold at the
    unit's step (:func:`control.c2d` with ``method="zoh"``), so a continuous
    plant driven by piecewise-constant inputs is reproduced exactly at the
    step points. Continuous nonlinear systems are integrated with classic
    Runge-Kutta (4th order) and ``substeps`` sub-steps, inputs held.
    Outputs are ``y = C x + D u`` (``outfcn(t, x, u)``) with the current inputs.
    """

    can_rollback = True

    def __init__(self, name: str, sys: Any, x0: Sequence[float] | None = None, units: Mapping[str, str] | None = None,
                 inputs_start: Mapping[str, float] | float | None = None, substeps: int = 10,
                 feedthrough: Mapping[str, Iterable[str]] | None = None, step: float | None = None) -> None:
        import control as ct

        if isinstance(sys, ct.TransferFunction):
            sys = ct.ss(sys)
        if not isinstance(sys, ct.InputOutputSystem):
            raise InputError(f"unit {name!r}: expected a python-control system, got {type(sys).__name__}")
        self.sys = sys
        self.linear = isinstance(sys, ct.StateSpace)
        # counted from 1, as FMI names (and the exported FMU) count: python-control's
        # 0-based default labels u[0], y[0], x[0] become u[1], y[1], x[1]
        # (the mappings below take either)
        ins = one_based(list(sys.input_labels))
        outs = one_based(list(sys.output_labels))
        self.state_names = one_based(list(sys.state_labels))
        rename = {**dict(zip(sys.state_labels, self.state_names)), **dict(zip(sys.input_labels, ins)),
                  **dict(zip(sys.output_labels, outs))}
        units = {rename.get(k, k): v for k, v in system_units(sys, units).items()}
        if isinstance(inputs_start, (int, float)):  # by the system's own labels: renamed once below
            inputs_start = {n: float(inputs_start) for n in sys.input_labels}
        inputs_start = {rename.get(k, k): v for k, v in (inputs_start or {}).items()}
        if feedthrough is not None:
            feedthrough = {rename.get(o, o): [rename.get(i, i) for i in v] for o, v in feedthrough.items()}
        variables = [Variable(n, "input", "Real", units.get(n), inputs_start.get(n)) for n in ins]
        variables += [Variable(n, "output", "Real", units.get(n), 0.0) for n in outs]
        variables += [Variable(n, "local", "Real", units.get(n), None) for n in self.state_names
                      if n not in ins and n not in outs]  # states named like a signal are reached as the signal
        if feedthrough is None:
            if self.linear:
                D = np.asarray(sys.D, dtype=float)
                feedthrough = {o: [ins[j] for j in range(len(ins)) if D[i, j] != 0.0] for i, o in enumerate(outs)}
            else:
                feedthrough = {o: ins for o in outs} if getattr(sys, "outfcn", True) is not None else {}
        self.discrete = bool(sys.isdtime(strict=True))
        if self.discrete and step is None and sys.dt is not True:
            step = float(sys.dt)
        if self.discrete and step is not None and sys.dt is not True and not math.isclose(step, float(sys.dt), rel_tol=1e-12):
            raise InputError(f"unit {name!r}: a discrete system runs at its own dt = {sys.dt} s, not at step {step} s")
        super().__init__(name, variables, feedthrough, step)
        self.nx = sys.nstates
        self.x0 = np.zeros(self.nx) if x0 is None else np.asarray(x0, dtype=float).reshape(self.nx)
        self.substeps = int(substeps)
        self.u = np.zeros(len(ins))
        self.y = np.zeros(len(outs))
        for j, n in enumerate(ins):
            if inputs_start.get(n) is not None:
                self.u[j] = inputs_start[n]
        self._disc: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def _matrices(self, h: float) -> tuple[np.ndarray, np.ndarray]:
        m = self._disc.get(h)
        if m is None:
            import control as ct
            d = self.sys if self.discrete else ct.c2d(self.sys, h, method="zoh")
            m = (np.asarray(d.A, float), np.asarray(d.B, float))
            self._disc[h] = m
        return m

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.t = t0
        self.x = self.x0.copy()
        for n, v in self.values.items():
            if n in self.inputs:
                self.u[self.inputs.index(n)] = float(v)
        if self.linear:
            self.C = np.asarray(self.sys.C, float)
            self.D = np.asarray(self.sys.D, float)
            self.Ad, self.Bd = self._matrices(step)
            self._h = step
        self.pull()

    def pull(self) -> None:
        if self.linear:
            self.y[:] = self.C @ self.x + self.D @ self.u
        else:
            self.y[:] = self.sys._out(self.t, self.x, self.u)

    def do_step(self, t: float, h: float) -> None:
        if self.linear:
            if h != self._h:
                self.Ad, self.Bd = self._matrices(h)
                self._h = h
            self.x = self.Ad @ self.x + self.Bd @ self.u
        elif self.discrete:
            self.x = np.asarray(self.sys._rhs(t, self.x, self.u), float)
        else:
            f, u, n = self.sys._rhs, self.u, self.substeps
            dt = h / n
            x = self.x
            for k in range(n):
                tk = t + k * dt
                k1 = f(tk, x, u)
                k2 = f(tk + dt / 2, x + dt / 2 * k1, u)
                k3 = f(tk + dt / 2, x + dt / 2 * k2, u)
                k4 = f(tk + dt, x + dt * k3, u)
                x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            self.x = np.asarray(x, float)
        self.t = t + h

    def getter(self, names: Sequence[str]) -> Callable[[], Sequence[float]]:
        states = {n: i for i, n in enumerate(self.state_names)
                  if self.variables.get(n) is not None and self.variables[n].causality == "local"}
        acc = []
        for n in names:
            if n in states:
                acc.append(("x", states[n]))
            elif n in self.outputs:
                acc.append(("y", self.outputs.index(n)))
            elif n in self.inputs:
                acc.append(("u", self.inputs.index(n)))
            else:
                self.variable(n)  # raises UnknownNameError listing the known names
        return lambda: [getattr(self, b)[i] for b, i in acc]

    def get_state(self) -> Any:
        return (self.t, self.x.copy(), self.u.copy())

    def set_state(self, state: Any) -> None:
        self.t, x, u = state
        self.x = x.copy()
        self.u[:] = u


# ----------------------------------------------------------------------------------
# Python function unit
# ----------------------------------------------------------------------------------
class FunctionUnit(Unit):
    """A plain Python function ``y = f(t, u)`` as a unit (sources, saturation, ...).

    Parameters
    ----------
    name : str
        Unit name.
    fn : callable
        ``fn(t, u) -> sequence`` with ``t`` in s and ``u`` the input values
        (a numpy array in ``inputs`` order); returns the outputs in order.
    inputs, outputs : sequence of str
        Signal names.
    units : mapping, optional
        Unit symbol per signal.
    inputs_start : mapping, optional
        Start values of inputs.
    feedthrough : bool
        Whether outputs depend directly on inputs (default True when there
        are inputs).
    """

    can_rollback = True

    def __init__(self, name: str, fn: Callable[[float, np.ndarray], Sequence[float]], inputs: Sequence[str] = (),
                 outputs: Sequence[str] = ("y",), units: Mapping[str, str] | None = None,
                 inputs_start: Mapping[str, float] | None = None, feedthrough: bool | None = None) -> None:
        units = dict(units or {})
        inputs_start = dict(inputs_start or {})
        if not callable(fn):
            raise InputError(f"unit {name!r}: fn must be callable")
        variables = [Variable(n, "input", "Real", units.get(n), inputs_start.get(n)) for n in inputs]
        variables += [Variable(n, "output", "Real", units.get(n), 0.0) for n in outputs]
        ft = bool(inputs) if feedthrough is None else feedthrough
        super().__init__(name, variables, {o: list(inputs) if ft else [] for o in outputs})
        self.fn = fn
        self._u0 = np.array([inputs_start.get(n) or 0.0 for n in inputs], float)
        self.u = self._u0.copy()
        self.y = np.zeros(len(outputs))
        self.t = 0.0

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.t = t0
        self.u[:] = self._u0  # a re-run starts from the start values, not from the last run's inputs
        for n, v in self.values.items():
            if n in self.inputs:
                self.u[self.inputs.index(n)] = float(v)
        self.pull()

    def pull(self) -> None:
        y = self.fn(self.t, self.u)
        self.y[:] = y
        bad = ~np.isfinite(self.y)
        if bad.any():
            raise CosimError(f"unit {self.name!r}: output {self.outputs[int(np.argmax(bad))]!r} is not finite at t = {self.t!r} s")

    def do_step(self, t: float, h: float) -> None:
        self.t = t + h

    def get_state(self) -> Any:
        return (self.t, self.u.copy())

    def set_state(self, state: Any) -> None:
        self.t, u = state
        self.u[:] = u
