"""Clocked controller units in a linear model: their exact discrete system, and the multirate loop.

A Scheduled Execution controller FMU (:class:`~mbfmu.cosim.fmi.fmu3_scheduled.Fmu3ScheduledUnit`)
with one periodic clock of interval ``T`` is a discrete system at ``T``: at each tick it
takes its inputs, latches ``y = C x + D u`` and updates ``x <- A x + B u``; between ticks its
outputs are held. :func:`clocked_unit_model` identifies that system from the FMU itself:
one run per input with a unit impulse at the first tick gives the Markov parameters
``D, C B, C A B, ...`` (``2 n + 4`` ticks, ``n`` the FMU's ``states.*`` variables), and
:func:`control.eigensys_realization` realizes them at order ``n``; noise-free Markov
parameters of an order-``n`` system are realized exactly (to rounding). The realization is
then checked against a second run of the FMU with another input sequence; when they
differ (the unit is not linear time-invariant at ``T``: limits, a schedule) it is refused.

:func:`lift` gives the loop the master runs when such a unit ticks every ``N`` macro steps
``h`` (``T = N h``): the system at ``h`` is periodic, one model for the tick step and one
for the hold steps, with the held outputs as states; over one period their product is a
linear time-invariant system at ``T`` from inputs held over the period to outputs read at
the ticks (the lifted system).
"""
from __future__ import annotations

import math
from typing import Any

import control as ct
import numpy as np

from ..errors import InputError

SOURCE_IDENTIFIED = "exact discrete system identified from unit impulses at its clock period (checked)"
CHECK_RTOL = 1e-9  # realization against a second run of the FMU, relative to the run's largest output


def clock_period(unit: Any) -> float | None:
    """The sample time [s] of a discrete controller FMU unit, else ``None``: the clock
    interval of a Scheduled Execution unit with one periodic input clock, or the sample
    time (default step) of a discrete native mbfmu controller (co-simulation, FMI 2 or 3).

    Parameters
    ----------
    unit : object
        A co-simulation unit.

    Returns
    -------
    float or None
        The sample time, s.
    """
    from ..cosim.fmi.clocks import PERIODIC
    from ..cosim.fmi.fmu3_scheduled import Fmu3ScheduledUnit
    from ..cosim.fmi.fmu_unit import FmuUnit
    if isinstance(unit, FmuUnit) and not isinstance(unit, Fmu3ScheduledUnit):
        md = getattr(unit, "md", None)
        native = str(getattr(md, "generationTool", "") or "").endswith("(native controller)")
        step = getattr(getattr(md, "defaultExperiment", None), "stepSize", None)
        if native and str(md.description or "").startswith("discrete") and step:
            return float(step)
        return None
    if not isinstance(unit, Fmu3ScheduledUnit):
        return None
    periodic = [c for c in unit.clocks.values() if c.causality == "input" and c.kind in PERIODIC]
    if len(periodic) != 1 or len(unit.clocks) != 1 or not periodic[0].interval:
        raise InputError(f"unit {unit.name!r}: a linear model needs a Scheduled Execution FMU with one periodic "
                         f"clock; it has {len(unit.clocks)} clocks")
    return float(periodic[0].interval)


def _run(unit: Any, period: float, inputs: np.ndarray) -> np.ndarray:
    """The unit's outputs at ticks ``0..K-1`` for inputs ``inputs[k]`` held at tick ``k`` (a fresh instance)."""
    from ..cosim import FunctionUnit, System, simulate
    from ..cosim.fmi.fmu_unit import FmuUnit
    fresh = FmuUnit(unit.path, "c", values=dict(getattr(unit, "values", {})) or None)
    n_in = len(fresh.inputs)

    def source(t: float, _u: np.ndarray) -> np.ndarray:
        k = int(round(t / period))
        return inputs[k] if k < len(inputs) else np.zeros(n_in)
    src = FunctionUnit("s", source, outputs=[f"w{j}" for j in range(n_in)])
    cons = [(f"s.w{j}", f"c.{v}") for j, v in enumerate(fresh.inputs)]
    result = simulate(System([src, fresh], cons), (len(inputs) - 1) * period, period,
                      record=[f"c.{v}" for v in fresh.outputs], progress=False)
    return np.column_stack([np.asarray(result[f"c.{v}"], float) for v in fresh.outputs])[:len(inputs)]


def clocked_unit_model(unit: Any) -> tuple[ct.StateSpace, str]:
    """The exact discrete linear system of a periodic Scheduled Execution unit, at its clock period.

    Parameters
    ----------
    unit : mbfmu.cosim.fmi.fmu3_scheduled.Fmu3ScheduledUnit
        The unit (its parameter values are used).

    Returns
    -------
    (control.StateSpace, str)
        The system, ``dt`` = the clock period [s], inputs and outputs in the unit's
        order, and its source label :data:`SOURCE_IDENTIFIED`.

    Raises
    ------
    InputError
        When the realization does not reproduce a second run of the FMU to
        :data:`CHECK_RTOL` (the unit is no linear time-invariant system at its period).
    """
    period = clock_period(unit)
    n = sum(1 for v in unit.variables if v.startswith("states."))
    m, p = len(unit.inputs), len(unit.outputs)
    K = 2 * n + 4  # Markov parameters 0..2n+3: Hankel matrices of n + 1 block rows and columns
    markov = np.zeros((p, m, K))
    for j in range(m):
        w = np.zeros((K, m))
        w[0, j] = 1.0
        markov[:, j, :] = _run(unit, period, w).T
    D = markov[:, :, 0]
    if n:
        # dt=True: python-control scales B by dt for unit-area impulse data; these are unit pulses
        sys, _ = ct.eigensys_realization(markov, n, m=n + 1, n=n + 1, dt=True)
        A, B, C = (np.asarray(M, float) for M in (sys.A, sys.B, sys.C))
    else:
        A, B, C = np.zeros((0, 0)), np.zeros((0, m)), np.zeros((p, 0))
    model = ct.ss(A, B, C, D, period)
    # the check: another input sequence, the FMU against the realization
    rng = np.random.default_rng(0)
    w = rng.standard_normal((K + 3, m))
    y_fmu = _run(unit, period, w)
    y_lin = np.atleast_2d(ct.forced_response(model, U=w.T, X0=np.zeros(n)).outputs).reshape(p, -1).T
    scale = max(float(np.abs(y_fmu).max()), 1e-300)
    err = float(np.abs(y_fmu - y_lin).max()) / scale
    if not err <= CHECK_RTOL:
        raise InputError(f"unit {unit.name!r}: its {n}-state linear system identified at the clock period {period} s "
                         f"misses a second run of the FMU by {err:.1e} (relative): it is not linear time-invariant "
                         "there (limits, a schedule, a nonlinear law)")
    return model, SOURCE_IDENTIFIED


def ticks_per_sample(dt: float, step: float, name: str) -> int:
    """``N`` with ``dt = N step``, or a one-line refusal naming the unit.

    Parameters
    ----------
    dt, step : float
        The unit's sample time and the macro step, s.
    name : str
        The unit, for the message.

    Returns
    -------
    int
    """
    N = int(round(dt / step))
    if N < 1 or not math.isclose(N * step, dt, rel_tol=1e-9):
        raise InputError(f"unit {name!r} is discrete with dt = {dt} s, not a whole number of macro steps {step} s")
    return N


def hold_over(sys: ct.StateSpace, N: int) -> ct.StateSpace:
    """A discrete system run ``N`` samples per macro step with its inputs held, at the macro step.

    Parameters
    ----------
    sys : control.StateSpace
        The discrete system at its sample time.
    N : int
        Samples per macro step.

    Returns
    -------
    control.StateSpace
        ``A^N``, ``sum_{i<N} A^i B``, ``C``, ``D`` at ``dt = N dt``.
    """
    A, B = np.asarray(sys.A, float), np.asarray(sys.B, float)
    Ad, Bd = np.eye(A.shape[0]), np.zeros_like(B)
    for _ in range(N):
        Ad, Bd = A @ Ad, A @ Bd + B
    return ct.ss(Ad, Bd, sys.C, sys.D, N * float(sys.dt))


def tick_and_hold(sys: ct.StateSpace, step: float) -> tuple[ct.StateSpace, ct.StateSpace]:
    """A discrete system at ``T`` as two systems at the macro step ``step``: its tick and its hold.

    The held output is a state ``yh``: at a tick ``y = C x + D u``, ``x <- A x + B u``,
    ``yh <- y``; at a hold ``y = yh`` and nothing changes.

    Parameters
    ----------
    sys : control.StateSpace
        The discrete system.
    step : float
        Macro step, s.

    Returns
    -------
    (control.StateSpace, control.StateSpace)
        Tick and hold models, ``dt = step``, states ``[x; yh]``.
    """
    A, B, C, D = (np.asarray(M, float) for M in (sys.A, sys.B, sys.C, sys.D))
    n, m, p = A.shape[0], B.shape[1], C.shape[0]
    tick = ct.ss(np.block([[A, np.zeros((n, p))], [C, np.zeros((p, p))]]), np.vstack([B, D]),
                 np.hstack([C, np.zeros((p, p))]), D, step)
    hold = ct.ss(np.eye(n + p), np.zeros((n + p, m)), np.hstack([np.zeros((p, n)), np.eye(p)]),
                 np.zeros((p, m)), step)
    return tick, hold


def lift(tick: ct.StateSpace, hold: ct.StateSpace, N: int) -> ct.StateSpace:
    """The periodic system (one tick step, then ``N - 1`` hold steps) over one period.

    Parameters
    ----------
    tick, hold : control.StateSpace
        The whole interconnection at the macro step ``h`` on a tick step and on a hold step
        (same states, inputs, outputs).
    N : int
        Macro steps per period.

    Returns
    -------
    control.StateSpace
        At ``dt = N h``: inputs held over the period, outputs read at the ticks.
    """
    h = float(tick.dt)
    A, B = np.asarray(tick.A, float), np.asarray(tick.B, float)
    Ah, Bh = np.asarray(hold.A, float), np.asarray(hold.B, float)
    for _ in range(N - 1):
        A, B = Ah @ A, Ah @ B + Bh
    return ct.ss(A, B, tick.C, tick.D, N * h)
