"""The options of a co-simulation run as one frozen, keyword-only value.

:func:`~mbfmu.cosim.simulate` takes them as ``options=SimulationOptions(...)``
or as the same names given as keywords (the keywords replace the fields of
``options`` when both are given). Every field is documented here, once.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

from ...errors import InputError
from .fast_loop import MAX_THREADS

ALGORITHMS = ("jacobi", "gauss-seidel")
# the input extrapolation of an adaptive run that does not choose one: the error estimate
# compares each exchanged value with its extrapolation, so order 0 would bound the change of
# the signals per step (497,986 steps for 0.5 s on the tests' three-mass chain, 180 with 2)
ADAPTIVE_EXTRAPOLATION = 2


@dataclass(frozen=True, kw_only=True)
class SimulationOptions:
    """How :func:`~mbfmu.cosim.simulate` runs a system (all SI: times in s).

    Built by keyword only (``SimulationOptions(adaptive=True, rtol=1e-6)``);
    a changed copy is ``dataclasses.replace(options, rtol=1e-8)``. Each value
    is checked when the options are made (one-line
    :class:`~mbfmu.errors.InputError`).

    Attributes
    ----------
    start_time : float
        Start of the interval [s]. For fixed steps ``stop_time - start_time``
        must be a whole number of steps.
    algorithm : {"jacobi", "gauss-seidel"}
        Master algorithm (see :mod:`mbfmu.cosim.master.run`).
    order : sequence of str, optional
        Gauss-Seidel stepping order (default: the order units were added).
    extrapolation : {0, 1, 2}, optional
        Input extrapolation order (Jacobi only). Default: 0 for fixed steps,
        2 with ``adaptive`` (see ``rtol``).
    adaptive : bool
        Adaptive macro step with rollback (Jacobi; all units must roll back);
        the run's ``step`` is then the initial step.
    rtol, atol : float
        Tolerances of the adaptive error estimate (relative [-]; absolute in
        the connected signals' units). The estimate is the gap between each
        exchanged value at the end of a step and its extrapolation over the
        step, so with ``extrapolation=0`` it bounds the change of the signals
        per step (very small steps: an adaptive run takes order 2 unless told
        otherwise).
    min_step, max_step : float, optional
        Bounds of the adaptive step [s].
    loop_tolerance : float
        Relative tolerance of algebraic-loop solutions [-].
    loop_max_iterations : int
        Fixed-point iterations before giving up (a non-contracting iteration
        switches to Newton earlier).
    record : "outputs", "all" or sequence of str, optional
        Variables to record at the macro steps: all outputs (default), all
        inputs, outputs and Real locals (a plant FMU's ``states.*``, which the
        viewer replays), or ``"unit.var"`` names (any variable).
    progress : bool, optional
        Progress bar: ``None`` shows one when the run will take more than ~3 s.
    iterative : bool
        Implicit (iterative) Jacobi coupling: each step is repeated with rollback
        until the inputs, interpolated linearly over the step, agree with the
        outputs they produce (second order, stable for stiffer couplings).
        Needs every unit to roll back.
    max_steps : int
        Adaptive stepping gives up (with an error) after this many steps.
    allow_nan : bool
        Let non-finite outputs through (default: the run stops with an error
        naming the unit and the variable).
    timeout : float, optional
        Wall-clock limit of the run [s]. The run stops between two steps
        (:class:`~mbfmu.errors.RunInterrupted`, status ``"timeout"``). When a
        unit is stuck inside a call, a watchdog thread writes the rows so far
        to ``sink`` and ends the process with status 124 about half a second
        after the limit (SIGTERM and a second Ctrl-C likewise, with 143 and
        130; see :mod:`mbfmu.cosim.master.run_guard`). To have only a stuck unit
        killed and the run go on to its error, isolate it with ``step_timeout``.
    step_timeout : float, optional
        Wall-clock limit of one step of one isolated unit [s]: a unit
        that passes it is killed and the run ends naming it. Implies
        ``isolate=True`` unless ``isolate`` names units.
    isolate : bool or sequence of str
        Run all FMU units (``True``) or the named units in worker processes
        (:mod:`mbfmu.cosim.isolation.proxy`): a unit that crashes or hangs ends the
        run cleanly instead of taking the master down.
    sink : writer, optional
        Rows are streamed to it as the run goes (``start(names, meta)``,
        ``write(rows)``, ``finish(result)``; see
        :func:`~mbfmu.cosim.recording.result.open_writer`), flushed at least every
        second of wall time, also on failure and interrupt.
    log : bool, optional
        FMU logging: ``True`` instantiates every FMU with logging and all its
        log categories on, ``False`` off; ``None`` keeps each unit's own
        setting (off unless the unit was made with ``log=True``).
    rollback_tolerance : float
        Adaptive and iterative runs first probe every unit's state restore
        (:mod:`mbfmu.cosim.master.rollback_probe`): a step repeated after a restore
        must give the same outputs and states to the bit, else the run is
        refused, naming the unit and the relative difference measured. A
        positive value [-] accepts restores that differ up to it (relative);
        the accepted differences are noted in ``result.meta["rollback"]``.
        The run also checks each rollback it relies on: the first iteration
        of every iterative step, and every step adaptive stepping rejects, is
        repeated from the restored state with the same inputs, and each
        unit's outputs must agree within this tolerance, else the run is
        refused naming the unit, the time and the difference (Dymola's
        Controller passes the probe but restores inexactly once it has
        stepped with input slopes).
    realtime : float or bool, optional
        Pace the run to the wall clock: ``FACTOR`` simulated seconds per
        wall-clock second [s/s] (``True``: 1). Steps that end late are
        counted, with the worst lag, in ``result.summary`` and a warning
        (:mod:`mbfmu.cosim.master.realtime`).
    threads : int
        Threads stepping the units of a Jacobi step in parallel (compiled
        loop, all-FMU systems; results bit-identical to serial; a run that
        takes the Python loop steps serially and warns). Units must be
        safe to step concurrently (FMUs of distinct instances are).
    """

    start_time: float = 0.0
    algorithm: str = "jacobi"
    order: Sequence[str] | None = None
    extrapolation: int | None = None
    adaptive: bool = False
    rtol: float = 1e-4
    atol: float = 1e-6
    min_step: float | None = None
    max_step: float | None = None
    loop_tolerance: float = 1e-12
    loop_max_iterations: int = 100
    record: Sequence[str] | str | None = None
    progress: bool | None = None
    iterative: bool = False
    max_steps: int = 1_000_000
    allow_nan: bool = False
    timeout: float | None = None
    step_timeout: float | None = None
    isolate: bool | Sequence[str] = False
    sink: Any = None
    log: bool | None = None
    rollback_tolerance: float = 0.0
    realtime: float | bool | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        from .realtime import realtime_factor
        algorithm, extrapolation, adaptive, iterative = self.algorithm, self.extrapolation, self.adaptive, self.iterative
        if algorithm not in ALGORITHMS:
            raise InputError(f"algorithm {algorithm!r} is not one of {ALGORITHMS}")
        if extrapolation is not None and extrapolation not in (0, 1, 2):
            raise InputError(f"extrapolation order {extrapolation!r} must be 0, 1 or 2")
        if algorithm == "gauss-seidel" and (extrapolation or adaptive or iterative):
            raise InputError("extrapolation, adaptive stepping and iterative coupling are offered with the Jacobi "
                             "algorithm only")
        if iterative and adaptive:
            raise InputError("iterative coupling and adaptive stepping cannot be combined")
        realtime_factor(self.realtime)
        threads = self.threads
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
            raise InputError(f"threads = {threads!r} must be a whole number from 1 to {MAX_THREADS}")
        if threads > 1 and algorithm == "gauss-seidel":
            raise InputError("threads step the units of a Jacobi step in parallel; Gauss-Seidel steps them one after "
                             "the other")
        start_time = self.start_time
        if not isinstance(start_time, (int, float)) or not math.isfinite(start_time):
            raise InputError(f"start_time = {start_time!r} must be a finite number of seconds")
        rollback_tolerance = self.rollback_tolerance
        if not (isinstance(rollback_tolerance, (int, float)) and 0 <= rollback_tolerance < 1):
            raise InputError(f"rollback_tolerance = {rollback_tolerance!r} must be a relative difference in [0, 1)")
        for name in ("rtol", "atol", "timeout", "step_timeout"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"{name} = {v!r} must be a positive finite number")

    def resolved(self) -> SimulationOptions:
        """These options with the defaults that depend on others filled in: the
        extrapolation order (2 when adaptive, else 0), the pacing factor
        (``None`` or a float) and the rollback tolerance as a float."""
        from .realtime import realtime_factor
        extrapolation = self.extrapolation
        if extrapolation is None:
            extrapolation = ADAPTIVE_EXTRAPOLATION if self.adaptive else 0
        return dataclasses.replace(self, extrapolation=extrapolation, realtime=realtime_factor(self.realtime),
                                   rollback_tolerance=float(self.rollback_tolerance))


FIELDS = tuple(f.name for f in dataclasses.fields(SimulationOptions))


def simulation_options(options: SimulationOptions | None, keywords: dict[str, Any]) -> SimulationOptions:
    """``options`` (default: all defaults) with the fields named in ``keywords``
    replaced: the rule of :func:`~mbfmu.cosim.simulate` when both are given."""
    if options is None:
        options = SimulationOptions()
    elif not isinstance(options, SimulationOptions):
        raise InputError(f"options = {type(options).__name__} must be a mbfmu.cosim.SimulationOptions")
    unknown = sorted(set(keywords) - set(FIELDS))
    if unknown:
        raise InputError(f"unknown simulate options {', '.join(unknown)} (the options are: {', '.join(FIELDS)})")
    return dataclasses.replace(options, **keywords) if keywords else options
