"""Linear model of a whole co-simulation system, with analysis points.

:func:`linearize_system` turns a :class:`mbfmu.cosim.System` (plant FMUs,
python-control units, blocks, function units) into one
:class:`control.StateSpace` from named inputs to named outputs, in deviation
variables about an operating point, with the loop broken at chosen
connections. :func:`loop_analysis` uses that to give the loop gain ``L`` at a
break, the sensitivity ``S`` and complementary sensitivity ``T``, margins (every
crossover, checked: :mod:`.crossovers`), the closed-loop stability verdict
(:mod:`.loop_verdict`) and plots.

How each unit's linear model is made:

* :class:`~mbfmu.cosim.ControlUnit`: its linear system exactly (a nonlinear
  one by :func:`control.linearize` at its operating state and inputs);
* :class:`~mbfmu.cosim.FunctionUnit` and the blocks of :mod:`mbfmu.cosim.blocks`
  (memoryless): their Jacobian ``dy/du`` by central differences
  (exact for Gain, Sum, Offset, Mux, Demux, and for Saturation inside its range);
* an :class:`~mbfmu.cosim.FmuUnit`: the best model available
  (:func:`~mbfmu.control.fmu_model.fmu_unit_model`) at the state of the
  operating point: its own directional derivatives when it declares them
  and they pass a probe against central differences (mbfmu's native FMUs),
  else its plant's exact linearization (FMUs built by mbfmu), else ERA from
  pulse responses at the communication step, with its validated fit. The
  source of each unit's model is in ``.unit_models``;
* an FMI 3.0 Scheduled Execution unit with one periodic clock (a controller
  FMU of ``mbfmu export-controller --scheduled``): the discrete system it is at
  its clock period ``T``, identified exactly from unit impulses and checked
  against a second run (:mod:`.multirate`); a discrete native mbfmu
  controller FMU for co-simulation likewise at its sample time (at a macro
  step of ``N`` samples: ``N`` samples with its inputs held).

**Multirate** (``sampled=True``, a Scheduled Execution unit with ``T = N H``,
``N > 1``): the master runs a periodic loop (the unit ticks, then holds its
outputs for ``N - 1`` steps); the model is that loop lifted over one period,
linear time-invariant at ``T``: inputs held over the period, outputs read at
the ticks, ``dt = T`` (:func:`.multirate.lift`).

The units are joined by :func:`control.interconnect`. **Sampling**
(``sampled=True``): every unit is taken at the macro step ``H`` as the
master's Jacobi algorithm runs it: a continuous unit by zero-order hold
(inputs held over the step), a discrete unit at its own sample time (which
must be ``H``, or a whole multiple for a Scheduled Execution unit), the memoryless units and the direct feedthroughs solved at
each communication point as the master's exchange does. The one-step delay of
the Jacobi coupling is then in the model: a unit's input over
``[t_n, t_{n+1}]`` is its sources' output at ``t_n``. ``sampled=False`` is the
continuous ideal: discrete controllers are mapped back by the inverse of
the Tustin map, FMUs identified by ERA by the inverse of the zero-order hold.
Input extrapolation, Gauss-Seidel and adaptive steps are not modelled.

Names: inputs are unit inputs ``"unit.var"`` (added to what drives them) or
connections ``"a.y->b.u"`` (the injection at ``b.u``); outputs are unit
outputs or connections (the value at ``a.y``). A vector port ``"arm.q"`` stands
for ``q[1]..q[n]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import control as ct
import numpy as np

from ..errors import InputError
from .linearization import linearize_io_system
from .system_ports import label, parse_connection, port_elements

_EPS3 = np.finfo(float).eps ** (1.0 / 3.0)


# ---------------------------------------------------------------------------- operating point
@dataclass
class UnitPoint:
    """A unit's operating point: its inputs and (where it has them) its state."""

    u: np.ndarray
    x: np.ndarray | None = None
    plant_state: np.ndarray | None = None
    reached: dict[str, float] | None = None  # an FMU's recorded variables at the point (t > 0)


def operating_point(system, at: float | None, step: float) -> tuple[dict[str, UnitPoint], float]:
    """Each unit's inputs and state at time ``at`` of a run of ``system`` (0: the start).

    The run is the master's (Jacobi, macro step ``step``), recording every
    variable; a python-control unit's state is read from the unit at the end
    of the run, an mbfmu FMU's plant state from its ``states.*`` variables.
    """
    from ..cosim import simulate
    from ..cosim.fmi.fmu_unit import FmuUnit
    from ..cosim.units import ControlUnit
    t_at = 0.0 if at is None else float(at)
    if not (math.isfinite(t_at) and t_at >= 0):
        raise InputError(f"at = {at!r}: give a time of the run in s (>= 0)")
    n = max(1, int(round(t_at / step)))
    if t_at > 0 and not math.isclose(n * step, t_at, rel_tol=1e-9):
        raise InputError(f"at = {t_at!r} s is not a whole number of steps of {step!r} s")
    result = simulate(system, stop_time=t_at if t_at > 0 else step, step=step, record="all", progress=False)
    row = len(result.time) - 1 if t_at > 0 else 0
    points: dict[str, UnitPoint] = {}
    for name, unit in system.units.items():
        u = np.array([_value(result, unit, name, v, row) for v in unit.inputs], float)
        x = None
        plant_state = reached = None
        if isinstance(unit, ControlUnit):
            x = unit.x.copy() if t_at > 0 else unit.x0.copy()
        elif isinstance(unit, FmuUnit) and t_at > 0:
            reached = {v: float(result[f"{name}.{v}"][row]) for v in unit.variables if f"{name}.{v}" in result.names}
            states = [v for v in unit.variables if v.startswith("states.")]
            if states and all(v in reached for v in states):
                plant_state = np.array([reached[v] for v in states], float)
        points[name] = UnitPoint(u, x, plant_state, reached)
    return points, t_at


def _value(result, unit, name: str, var: str, row: int) -> float:
    col = f"{name}.{var}"
    if col in result.names:
        return float(result[col][row])
    start = unit.values.get(var, unit.variables[var].start)
    return 0.0 if start is None else float(start)


# ---------------------------------------------------------------------------- unit models
def _d2c(sysd: ct.StateSpace) -> ct.StateSpace:
    """Continuous system whose zero-order hold at ``dt`` is ``sysd`` (matrix log)."""
    from scipy.linalg import logm
    n, m = sysd.nstates, sysd.ninputs
    if n == 0:
        return ct.ss(np.zeros((0, 0)), np.zeros((0, m)), np.zeros((sysd.noutputs, 0)), sysd.D)
    M = np.zeros((n + m, n + m))
    M[:n, :n], M[:n, n:], M[n:, n:] = sysd.A, sysd.B, np.eye(m)
    L = logm(M) / float(sysd.dt)
    if np.iscomplexobj(L):
        if np.abs(L.imag).max() > 1e-9 * max(1.0, np.abs(L.real).max()):
            raise InputError(f"system {sysd.name!r} has a pole on the negative real axis: it is no zero-order hold "
                             "of a continuous system; use sampled=True")
        L = L.real
    return ct.ss(L[:n, :n], L[:n, n:], sysd.C, sysd.D)


def _d2c_tustin(sysd: ct.StateSpace) -> ct.StateSpace:
    """Continuous system whose Tustin (bilinear) discretization at ``dt`` is
    ``sysd``: the continuous equivalent of a discrete controller (defined for
    poles at ``z = 0``, unlike the inverse of the zero-order hold)."""
    n, T = sysd.nstates, float(sysd.dt)
    A, B, C, D = (np.asarray(m, float) for m in (sysd.A, sysd.B, sysd.C, sysd.D))
    if n == 0:
        return ct.ss(np.zeros((0, 0)), np.zeros((0, sysd.ninputs)), np.zeros((sysd.noutputs, 0)), D)
    E = A + np.eye(n)
    if np.linalg.cond(E) > 1e12:
        raise InputError(f"system {sysd.name!r} has a pole at z = -1: it has no continuous equivalent; "
                         "use sampled=True")
    Ei = np.linalg.inv(E)
    return ct.ss(2.0 / T * (np.eye(n) - 2.0 * Ei), 2.0 / T * Ei @ B, 2.0 * C @ Ei, D - C @ Ei @ B)


def _static(unit, t: float, u0: np.ndarray) -> ct.StateSpace:
    y0 = np.asarray(unit.fn(t, u0.copy()), float)
    D = np.zeros((len(y0), len(u0)))
    for k in range(len(u0)):
        h = _EPS3 * max(1.0, abs(u0[k]))
        up, um = u0.copy(), u0.copy()
        up[k] += h
        um[k] -= h
        D[:, k] = (np.asarray(unit.fn(t, up), float) - np.asarray(unit.fn(t, um), float)) / (2 * h)
    D[np.abs(D) < 1e-9 * max(1.0, np.abs(D).max(initial=0.0))] = 0.0  # exact zeros of the blocks stay zero
    return ct.ss(np.zeros((0, 0)), np.zeros((0, len(u0))), np.zeros((len(y0), 0)), D)


def _fmu_model(unit, point: UnitPoint, t: float, step: float) -> tuple[ct.StateSpace, str]:
    """The best model of an FMU unit (:func:`~mbfmu.control.fmu_model.fmu_unit_model`) in its port order."""
    from .fmu_model import fmu_unit_model
    parameters = {k: v for k, v in getattr(unit, "values", {}).items()
                  if k in unit.variables and unit.variables[k].causality == "parameter"}
    sys, how = fmu_unit_model(unit.path, step, dict(zip(unit.inputs, point.u)), t, reached=point.reached,
                              parameters=parameters, inputs=list(unit.inputs), outputs=list(unit.outputs))
    if sys.ninputs != len(unit.inputs) or sys.noutputs != len(unit.outputs):
        raise InputError(f"unit {unit.name!r}: its model has other ports than the unit's")
    return sys, how


def unit_model(unit, point: UnitPoint, t: float, step: float, sampled: bool) -> tuple[ct.StateSpace, str]:
    """``(model, method)``: the unit's linear model in its input/output order,
    discrete at ``step`` when ``sampled``, continuous otherwise."""
    from ..cosim.fmi.fmu_unit import FmuUnit
    from ..cosim.units import ControlUnit, FunctionUnit
    if isinstance(unit, ControlUnit):
        if unit.linear:
            sys = ct.ss(unit.sys.A, unit.sys.B, unit.sys.C, unit.sys.D, unit.sys.dt)
            how = "exact"
        else:
            sys = linearize_io_system(unit.sys, point.x, point.u, t)
            how = "central difference"
        if unit.discrete:
            if sampled and sys.dt is not True and not math.isclose(float(sys.dt), step, rel_tol=1e-9):
                raise InputError(f"unit {unit.name!r} is discrete with dt = {sys.dt} s, not the macro step {step} s: "
                                 "multi-rate loops are not modelled; use a step equal to its dt")
            if sys.dt is True:
                sys = ct.ss(sys.A, sys.B, sys.C, sys.D, step)
            return (sys if sampled else _d2c_tustin(sys)), how + " (Tustin equivalent)" * (not sampled)
    elif isinstance(unit, FunctionUnit):
        sys, how = _static(unit, t, point.u.copy()), "memoryless (central difference)"
    elif isinstance(unit, FmuUnit):
        from .multirate import clock_period, clocked_unit_model, ticks_per_sample
        if clock_period(unit) is not None:
            sys, how = clocked_unit_model(unit)
            if not sampled:
                return _d2c_tustin(sys), how + " (Tustin equivalent)"
            if float(sys.dt) < step * (1 - 1e-9):  # a co-simulation FMU runs N samples per step, inputs held
                from .multirate import hold_over
                return hold_over(sys, ticks_per_sample(step, float(sys.dt), unit.name)), how
            ticks_per_sample(float(sys.dt), step, unit.name)
            return sys, how  # at its own period; linearize_system lifts a multirate loop
        sys, how = _fmu_model(unit, point, t, step)
        if sys.isdtime(strict=True):
            if sampled and not math.isclose(float(sys.dt), step, rel_tol=1e-9):
                raise InputError(f"unit {unit.name!r} is discrete with dt = {sys.dt} s, not the macro step {step} s")
            if sampled:
                return sys, how
            return (_d2c(sys) if how.startswith("ERA") else _d2c_tustin(sys)), how
    else:
        raise InputError(f"unit {unit.name!r}: no linear model for a {type(unit).__name__}")
    if sampled:
        return (ct.c2d(sys, step, method="zoh") if sys.nstates else ct.ss(sys.A, sys.B, sys.C, sys.D, step)), how
    return sys, how


# ---------------------------------------------------------------------------- the entry point
def _names(items: Sequence[str] | str | None) -> list[str]:
    if items is None:
        return []
    return [items] if isinstance(items, str) else list(items)


def _check_periods(system, step: float) -> None:
    """Refuse, by name, a discrete co-simulation controller FMU whose sample time is longer than the
    macro step (it refuses the step; a Scheduled Execution FMU may tick every whole number of steps)."""
    from ..cosim.fmi.fmu3_scheduled import Fmu3ScheduledUnit
    from .multirate import clock_period
    for unit in system.units.values():
        period = clock_period(unit)
        if period is not None and not isinstance(unit, Fmu3ScheduledUnit) and step < period * (1 - 1e-9):
            raise InputError(f"unit {unit.name!r} is a co-simulation FMU with sample time {period} s: it cannot run "
                             f"at a macro step of {step} s (a Scheduled Execution FMU may tick slower than the step)")


def linearize_system(system, at: float | None = None, inputs: Sequence[str] | str = (),
                     outputs: Sequence[str] | str = (), open_at: Sequence[str] | str = (), *,
                     sampled: bool = False, step: float | None = None) -> ct.StateSpace:
    """Linear model of a co-simulation system from named inputs to named outputs.

    Parameters
    ----------
    system : mbfmu.cosim.System
        The system, as the master would run it.
    at : float, optional
        Time of the operating point, s: the state a run of the system reaches
        there (default 0: the start values and initial states).
    inputs : str or sequence of str
        Unit inputs ``"unit.var"`` (an additive input at that port) or
        connections ``"a.y->b.u"`` (the injection at ``b.u``); vectors whole.
    outputs : str or sequence of str
        Unit outputs ``"unit.var"`` or connections (the value at their source).
    open_at : str or sequence of str
        Connections ``"a.y->b.u"`` where the loop is broken: ``b.u`` is then
        driven by the injection only (named in ``inputs`` to excite it).
    sampled : bool
        ``True``: the discrete loop the master runs at ``step`` (zero-order
        hold, Jacobi coupling); ``False``: the continuous ideal.
    step : float, optional
        Macro step, s (default the system's experiment step).

    Returns
    -------
    control.StateSpace
        Deviation variables; inputs and outputs labelled ``"unit:var"``
        (python-control allows no dots in names; connections by their target
        and source ports), states ``"unit:state"``; ``.signal_units`` maps each label to its unit and
        ``.unit_models`` each unit to how its model was made.
    """
    from ..cosim.fmi.fmu_unit import FmuUnit
    from ..cosim.system import System
    from ..cosim.units import ControlUnit
    if not isinstance(system, System):
        raise InputError(f"linearize_system needs a mbfmu.cosim.System, got {type(system).__name__}")
    if step is None:
        step = system.experiment.get("step")
        if step is None:
            raise InputError("linearize_system: give the macro step (step=..., s); the system has none")
    step = float(step)
    if not (step > 0 and math.isfinite(step)):
        raise InputError(f"step = {step!r} must be a positive number of seconds")
    system.validate(step)
    opened = [c for text in _names(open_at) for c in parse_connection(system, text)]
    in_ports: list[tuple[str, str]] = []
    for text in _names(inputs):
        in_ports += [(c.dst_unit, c.dst_var) for c in parse_connection(system, text)] if "->" in text else \
            port_elements(system, text)
    out_ports: list[tuple[str, str]] = []
    for text in _names(outputs):
        out_ports += [(c.src_unit, c.src_var) for c in parse_connection(system, text)] if "->" in text else \
            port_elements(system, text)
    for u, v in in_ports:
        if v not in system.units[u].inputs:
            raise InputError(f"{u}.{v} is not an input of unit {u!r}: inputs= takes unit inputs or connections")
    for u, v in out_ports:
        if v not in system.units[u].outputs:
            raise InputError(f"{u}.{v} is not an output of unit {u!r}: outputs= takes unit outputs or connections")
    _check_periods(system, step)
    points, t_at = operating_point(system, at, step)
    models, how, states, names = [], {}, [], []
    holds: list[Any] = []  # per unit: its hold model when it ticks slower than the macro step, else None
    period = 1
    for name, unit in system.units.items():
        if not unit.inputs and not isinstance(unit, (ControlUnit, FmuUnit)):
            how[name] = "source (no deviation)"  # a memoryless source: its deviation is zero
            continue
        k = len(names)
        names.append(name)
        m, how[name] = unit_model(unit, points[name], t_at, step, sampled)
        labels = list(m.state_labels) if m.nstates else []
        hold = None
        if sampled and not math.isclose(float(m.dt), step, rel_tol=1e-9):
            from .multirate import tick_and_hold, ticks_per_sample
            n_ticks = ticks_per_sample(float(m.dt), step, name)
            if period not in (1, n_ticks):
                raise InputError(f"unit {name!r} ticks every {n_ticks} macro steps, another unit every {period}: "
                                 "one clock period per linear model")
            period = n_ticks
            m, hold = tick_and_hold(m, step)
            labels += [f"held:{v}" for v in unit.outputs]
        states += [label(name, s) for s in labels]
        signals = dict(name=f"s{k}", inputs=[f"u{j}" for j in range(len(unit.inputs))],
                       outputs=[f"y{j}" for j in range(len(unit.outputs))])
        models.append(ct.ss(m.A, m.B, m.C, m.D, m.dt, **signals))
        holds.append(None if hold is None else ct.ss(hold.A, hold.B, hold.C, hold.D, hold.dt, **signals))
    idx = {n: k for k, n in enumerate(names)}

    for u, v in [*in_ports, *out_ports]:
        if u not in idx:
            raise InputError(f"{u}.{v}: unit {u!r} is a source without inputs; it has no linear model")

    def sig(unit: str, var: str, side: str) -> str:
        u = system.units[unit]
        j = (u.inputs if side == "u" else u.outputs).index(var)
        return f"s{idx[unit]}.{side}{j}"
    open_set = {id(c) for c in opened}
    connections = [[sig(c.dst_unit, c.dst_var, "u"), sig(c.src_unit, c.src_var, "y")]
                   for c in system.connections if id(c) not in open_set and c.src_unit in idx]
    inplist = [sig(u, v, "u") for u, v in in_ports]
    outlist = [sig(u, v, "y") for u, v in out_ports]
    joined = ct.interconnect(models, connections=connections or False, inplist=inplist or None,
                             outlist=outlist or None, check_unused=False)
    if period > 1:  # a multirate loop: one tick step and period - 1 hold steps, lifted to the clock period
        from .multirate import lift
        held = ct.interconnect([hm if hm is not None else m for m, hm in zip(models, holds)],
                               connections=connections or False, inplist=inplist or None,
                               outlist=outlist or None, check_unused=False)
        joined = lift(joined, held, period)
        step = period * step
    B = joined.B if in_ports else np.zeros((joined.nstates, 0))
    C = joined.C if out_ports else np.zeros((0, joined.nstates))
    D = joined.D if (in_ports and out_ports) else np.zeros((len(out_ports), len(in_ports)))
    in_labels = [label(u, v) for u, v in in_ports]
    out_labels = [label(u, v) for u, v in out_ports]
    result = ct.ss(joined.A, B, C, D, step if sampled else 0, states=states or None,
                   inputs=in_labels or None, outputs=out_labels or None, name="system_lin")
    symbols = system.unit_symbols()
    result.signal_units = {label(u, v): symbols[f"{u}.{v}"] for u, v in [*in_ports, *out_ports]}
    result.unit_models = how
    result.operating_time = t_at
    return result


# ---------------------------------------------------------------------------- loop analysis
@dataclass
class LoopAnalysis:
    """The loop broken at a connection: ``L``, ``S``, ``T``, margins, plots.

    ``L`` is the loop gain with the negative-feedback sign convention: with
    the loop broken at ``a.y->b.u``, an injection ``w`` at ``b.u`` comes back
    at ``a.y`` as ``-L w``. ``S = (I + L)^-1``, ``T = L (I + L)^-1``.

    Attributes
    ----------
    L, S, T : control.StateSpace
    open_at : list of str
        The connections where the loop is broken.
    units : dict
        Unit of each signal of ``L`` (input side, output side).
    unit_models : dict
        Unit name -> where its linear model came from (as
        :func:`linearize_system`'s ``.unit_models``).
    system : mbfmu.cosim.System
        The analysed system (for the co-simulation check of :meth:`verdict`).
    at, step : float
        Operating time and macro step, s.
    """

    L: ct.StateSpace
    S: ct.StateSpace
    T: ct.StateSpace
    open_at: list[str]
    units: dict[str, str] = field(default_factory=dict)
    unit_models: dict[str, str] = field(default_factory=dict)
    system: Any = field(default=None, repr=False)
    at: float = 0.0
    step: float | None = None

    @property
    def siso(self) -> bool:
        return self.L.ninputs == 1 and self.L.noutputs == 1

    def frequencies(self, n: int = 2000) -> np.ndarray:
        """Frequency grid for the disk margin, rad/s (up to the Nyquist frequency for a discrete loop)."""
        w_hi = (math.pi / float(self.L.dt)) * 0.999 if self.L.isdtime(strict=True) else 1e4
        return np.logspace(-3, math.log10(w_hi), n)

    def _one_loop(self) -> None:
        if not self.siso:
            raise InputError(f"margins are for one loop: L has {self.L.ninputs} inputs and {self.L.noutputs} "
                             "outputs; break one connection (or use control.disk_margins on L)")

    def crossovers(self):
        """Every gain and phase crossover of ``L``, refined and checked
        (:func:`~mbfmu.control.crossovers.find_crossovers`).

        Returns
        -------
        mbfmu.control.crossovers.Crossovers
        """
        from .crossovers import find_crossovers
        self._one_loop()
        return find_crossovers(self.L)

    def margins(self) -> dict[str, Any]:
        """Classical and disk margins of a single loop.

        The disk margins (:func:`control.disk_margins` on :meth:`frequencies`)
        are the primary robustness figure. The classical margins come from
        every crossover of ``L`` (:meth:`crossovers`: an adaptive search up to
        the Nyquist frequency of a sampled loop, each crossover checked to
        ``|L| = 1`` or phase -180 deg within 1e-6); the headline ones are the
        worst: the smallest ``|phase margin|``, the gain margin closest to 1
        in dB, the smallest delay margin.

        Returns
        -------
        dict
            ``gain_margin`` (factor; inf without a phase crossover),
            ``phase_margin`` (deg) and ``phase_margin_rad`` (rad),
            ``gain_crossover`` and ``phase_crossover`` (rad/s, NaN without
            one), ``delay_margin`` (s; 0 when the closed loop is unstable),
            ``delay_margin_steps`` (sampled: whole steps of extra delay
            tolerated, else None), ``disk_margin`` (alpha),
            ``disk_gain_margin`` (factor), ``disk_phase_margin`` (deg),
            ``closed_loop_stable``, ``conditionally_stable``, ``checked``
            (every crossover holds its definition), ``gain_crossovers`` and
            ``phase_crossovers`` (all of them:
            :class:`~mbfmu.control.crossovers.GainCrossover`,
            :class:`~mbfmu.control.crossovers.PhaseCrossover`), ``notes``
            (sentences: several crossovers, conditional stability, failed checks).
        """
        c = self.crossovers()
        dm, dgm, dpm = ct.disk_margins(self.L, self.frequencies())
        g, p = c.worst_gain, c.worst_phase
        return {"gain_margin": p.gain_margin if p else math.inf,
                "phase_margin": g.phase_margin_deg if g else math.inf,
                "phase_margin_rad": g.phase_margin if g else math.inf,
                "gain_crossover": g.frequency if g else math.nan,
                "phase_crossover": p.frequency if p else math.nan,
                "delay_margin": c.delay_margin, "delay_margin_steps": c.delay_margin_steps,
                "disk_margin": float(dm), "disk_gain_margin": float(dgm), "disk_phase_margin": float(dpm),
                "closed_loop_stable": c.closed_loop_stable, "conditionally_stable": c.conditionally_stable,
                "checked": c.verified, "gain_crossovers": list(c.gain), "phase_crossovers": list(c.phase),
                "notes": c.sentences()}

    def verdict(self, cosim: bool = True, steps: int = 200):
        """Closed-loop stability from the eigenvalues of the closed loop,
        checked by a linear simulation and (``cosim``, for one scalar break in
        a system) a short co-simulation of the real system, both from a
        small perturbation (:mod:`~mbfmu.control.loop_verdict`).

        Parameters
        ----------
        cosim : bool
            Also run the co-simulation check (two runs of ``steps`` steps past
            the operating time, plus one sampled linearization).
        steps : int
            Length of the co-simulation check, in macro steps.

        Returns
        -------
        mbfmu.control.loop_verdict.StabilityVerdict
        """
        from .loop_verdict import cosim_check, stability_verdict
        dt = float(self.L.dt) if self.L.isdtime(strict=True) else None
        v = stability_verdict(self.S.A, dt)
        if not cosim or self.system is None or len(self.open_at) != 1 or self.step is None:
            return v
        # with the loop closed, an injection w at the break comes back at its source as -T w
        sampled_here = dt is not None and math.isclose(dt, self.step, rel_tol=1e-12)
        at, step, connection = self.at, self.step, self.open_at[0]

        def closed_loop() -> ct.StateSpace:  # repeats the units' modelling, sampled at the step
            return linearize_system(self.system, at, inputs=connection, outputs=connection, sampled=True, step=step)
        v.cosim_check, v.doubtful_units, note = cosim_check(self.system, connection, at, step, self.unit_models,
                                                            closed_loop=-self.T if sampled_here else closed_loop,
                                                            steps=steps)
        if dt is None:
            note += " (the co-simulation is compared with the loop sampled at the step)"
        v.notes.append(f"co-simulation: {note}")
        return v

    def gain_label(self) -> str:
        """The axis label of ``|L|``: a loop gain maps a signal back onto
        itself, so it is dimensionless when its input and output units match
        (``"|L| [1] (N.m/N.m)"``); ``"|L| [out/in]"`` otherwise."""
        unit_in, unit_out = (list(self.units.values()) + ["", ""])[:2]
        if unit_in == unit_out:
            return f"|L| [1] ({unit_out}/{unit_in})" if unit_in and unit_in != "1" else "|L| [1]"
        return f"|L| [{unit_out or '1'}/{unit_in or '1'}]"

    def plot(self, path=None):
        """Bode plot of ``L`` (magnitude, phase; frequency in rad/s) and its
        Nyquist plot, side by side; saved to ``path`` when given. Returns the figure."""
        import matplotlib.pyplot as plt
        fig = plt.figure(figsize=(11, 4.5), layout="constrained")
        sub = fig.subfigures(1, 2)
        w = self.frequencies(600)
        resp = ct.frequency_response(self.L, w, squeeze=False)
        mag, phase = resp.magnitude, resp.phase
        ax_m, ax_p = sub[0].subplots(2, 1, sharex=True)
        deg = np.degrees(np.unwrap(phase[0, 0]))
        below = np.flatnonzero(mag[0, 0] < 1.0)
        k = below[0] if below.size else len(deg) - 1
        deg -= 360.0 * math.ceil(deg[k] / 360.0)  # the phase at the gain crossover in (-360, 0]: -180 means something
        ax_m.loglog(w, mag[0, 0]); ax_m.axhline(1.0, color="0.6", lw=0.8)
        ax_p.semilogx(w, deg); ax_p.axhline(-180.0, color="0.6", lw=0.8)
        ax_m.set(ylabel=self.gain_label(), title=f"loop gain at {', '.join(self.open_at)}")
        ax_p.set(xlabel="frequency [rad/s]", ylabel="phase [deg]")
        for a in (ax_m, ax_p):
            a.grid(alpha=0.3, which="both")
        ax_n = sub[1].subplots()
        Lw = mag[0, 0] * np.exp(1j * phase[0, 0])
        ax_n.plot(Lw.real, Lw.imag, "C0"); ax_n.plot(Lw.real, -Lw.imag, "C0--", lw=0.8)
        ax_n.plot([-1], [0], "r+", ms=12)
        reach = float(np.abs(Lw[k:]).max()) if k < len(Lw) else 2.0
        lim = min(max(2.0, 1.2 * reach), 10.0)  # around -1: the low-frequency branch would hide it
        ax_n.set(xlabel="Re L", ylabel="Im L", title="Nyquist (around -1)", xlim=(-lim, lim), ylim=(-lim, lim))
        ax_n.grid(alpha=0.3)
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig


def loop_analysis(system, open_at: Sequence[str] | str, at: float | None = None, *, sampled: bool = False,
                  step: float | None = None) -> LoopAnalysis:
    """Loop gain, sensitivities and margins of ``system`` broken at ``open_at``.

    Parameters
    ----------
    system : mbfmu.cosim.System
    open_at : str or sequence of str
        Connections ``"a.y->b.u"`` (whole vectors allowed) where the loop is
        broken and the loop gain is taken.
    at, sampled, step
        As :func:`linearize_system`.

    Returns
    -------
    LoopAnalysis
    """
    opened = _names(open_at)
    if not opened:
        raise InputError("loop_analysis: name the connection to break (open_at='a.y->b.u')")
    open_sys = linearize_system(system, at, inputs=opened, outputs=opened, open_at=opened, sampled=sampled,
                                step=step)
    L = -open_sys
    L.signal_units = open_sys.signal_units
    n = L.ninputs
    eye = ct.ss(np.zeros((0, 0)), np.zeros((0, n)), np.zeros((n, 0)), np.eye(n), L.dt)
    S = ct.feedback(eye, L)
    T = ct.feedback(L, eye)
    used_step = float(step if step is not None else system.experiment["step"])
    return LoopAnalysis(L, S, T, opened, dict(open_sys.signal_units), dict(open_sys.unit_models), system,
                        open_sys.operating_time, used_step)
