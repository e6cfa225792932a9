"""Master algorithms: fixed-step Jacobi and Gauss-Seidel, iterative and adaptive Jacobi.

Semantics (each reproduced by a plain loop in the tests):

* **Exchange** at a communication point ``t``: every unit's outputs are read;
  then, in the order derived from the declared output dependencies
  (:func:`~mbfmu.cosim.system.exchange_order`), each unit's inputs are set from
  its sources and, if it has direct feedthrough, its outputs are read again.
  Groups of units forming an algebraic loop are solved there by fixed-point
  (Gauss-Seidel) iteration, with a Newton fallback (finite-difference
  Jacobian) when the iteration does not contract (:mod:`.loops`); FMI 2.0
  allows setting inputs and reading outputs between steps, so this needs
  no rollback.
* **Initial propagation**: one exchange at the start time before the first
  step (as libcosim, OMSimulator, PyFMI and MasterSim do).
* **Jacobi**: every unit steps ``[t_n, t_n + H]`` with the inputs of the
  exchange at ``t_n``; then the exchange at ``t_{n+1}``.
* **Gauss-Seidel**: units step one after the other in ``order``; just
  before its step a unit's inputs are set from the current outputs of its
  sources (already advanced to ``t_{n+1}`` when they came earlier), and its
  outputs are read right after its step: one input set and one output read
  per unit per step. (Systems with an algebraic loop add the exchange at
  ``t_{n+1}``.)
* **Time** is counted in steps: ``t_n = t_0 + n (t_end - t_0) / N`` (the
  nearest double to the decimal grid point, 0.3 rather than 3 * 0.1) and the
  last point is the stop time exactly; a 10 s run at 1 ms takes exactly 10,000 steps.
  Each step passes ``communicationStepSize = t_{n+1} - t_n``, the difference of
  the two counted points, which floating point computes exactly (for
  ``t_n > 0``), so ``t_n + h`` is ``t_{n+1}`` to the last bit: an FMU that
  accumulates ``t += h`` stays on the master's grid for any number of steps,
  and the last step ends at the stop time exactly (FMUs told the stop time
  refuse a step that ends a rounding error past it). Sub-steps of multi-rate
  units are counted from ``t_n`` the same way.
* **Faults**: a unit's failure ends the run with a
  :class:`~mbfmu.errors.CosimError` naming the unit and the time, with the
  rows so far as ``exc.result``; an FMU that asks to stop (fmi2Discard with
  fmi2Terminated) ends the run at the last good time, normally, with the reason
  in ``result.summary``. Non-finite outputs stop the run naming the unit
  (unless ``allow_nan``). Ctrl-C, SIGTERM and the wall-clock ``timeout`` stop
  the run between two steps (never inside a unit) with
  :class:`~mbfmu.errors.RunInterrupted`; when a unit is stuck inside a call,
  the run's watchdog thread keeps the rows and ends the process (124 timeout,
  143 SIGTERM, 130 second Ctrl-C; :mod:`.run_guard`). Rows can be streamed to
  a :mod:`~mbfmu.cosim.recording.result` writer as the run goes (flushed at least every second).
* **Input extrapolation** (Jacobi, order 0, 1 or 2): the polynomial through
  the last ``order + 1`` exchanged values of each connection. With order 2
  and units that all roll back, the first step is taken twice (constant
  inputs, then the linear interpolation of the result) so the start-up does
  not spoil third order. Units that can interpolate inputs
  (``canInterpolateInputs``) get the value and its derivatives; others get
  the polynomial's mean over their step, which is second-order accurate at
  most. Only the connected inputs are set.
* **Multi-rate**: a unit with its own step ``h = H / m`` makes ``m`` steps per
  macro step (extrapolated inputs evaluated per sub-step).
* **Iterative** (Jacobi, ``iterative=True``): each step is rolled back and
  repeated until the linearly interpolated inputs agree with the outputs
  they produce at ``t_{n+1}``; refused when a unit cannot roll back.
* **Adaptive** (Jacobi): the error estimate is the difference between the
  exchanged value at ``t_{n+1}`` and its extrapolation over the step, scaled
  by ``atol + rtol |y|``; a step with estimate above 1 is rolled back
  (``getFMUstate``/``setFMUstate``) and repeated with a smaller step; the next
  step is ``H (0.9 / err)^(1/(order+1))`` clipped to [0.2, 5] times the last
  (and not larger than the last right after a rejection).
"""
from __future__ import annotations

import logging
import math
import time as _time
from typing import Any, Sequence

import numpy as np

from ...errors import CosimError, InputError, RunInterrupted, StopRequested
from ..recording.result import Result, RunSummary
from .run_guard import RunGuard
from . import fast_loop
from .adaptive import AdaptiveLoop
from .fixed import FixedLoop
from .iterative import IterativeStep
from .recorded import Recording, recorded_variables as recorded_variables
from .loops import solve_loop
from ..fmi.fmu3_clocked import refuse_clocked_loops
from .realtime import Pacer
from .rollback_probe import probe_rollback
from .options import SimulationOptions, simulation_options
from ..system import System, exchange_order, self_loops
from ..units import Unit

_LOG = logging.getLogger("mbfmu.cosim")


class _Master(Recording, FixedLoop, AdaptiveLoop, IterativeStep):
    """One co-simulation run: the exchange between units, input extrapolation and
    rollback here; recording (:mod:`.recorded`), the fixed-step loop
    (:mod:`.fixed`), the adaptive loop (:mod:`.adaptive`) and the
    iterative step (:mod:`.iterative`) in their modules."""

    def __init__(self, system: System, step: float, opts: SimulationOptions,
                 record: Sequence[str] | str | None) -> None:
        opts = opts.resolved()
        self.system = system
        self.units: list[Unit] = list(system.units.values())
        self.H = step
        self.opts = opts
        self.blocks = exchange_order(system)
        loops_self = self_loops(system)
        self.simple = [len(b) == 1 and b[0] not in loops_self for b in self.blocks]
        refuse_clocked_loops([[system.units[n] for n in b] for b, s in zip(self.blocks, self.simple) if not s])
        self.ft = {u.name: any(u.feedthrough.values()) for u in self.units}
        # connections per destination unit: (j, source unit, source index)
        self.inc: dict[str, list[tuple[int, Unit, int]]] = {u.name: [] for u in self.units}
        self.conns = []
        for c in system.connections:
            src, dst = system.units[c.src_unit], system.units[c.dst_unit]
            self.inc[dst.name].append((dst.inputs.index(c.dst_var), src, src.outputs.index(c.src_var)))
            self.conns.append((dst, dst.inputs.index(c.dst_var), src, src.outputs.index(c.src_var)))
        # Integer, Boolean and String signals are held, never extrapolated
        self.held = np.array([src.variables[src.outputs[k]].type != "Real" for _, _, src, k in self.conns], bool)
        # per unit: indices into self.conns of its incoming connections (for extrapolation)
        self.conn_of = {u.name: [i for i, c in enumerate(self.conns) if c[0] is u] for u in self.units}
        self.sub = {u.name: (1 if u.step is None else int(round(step / u.step))) for u in self.units}
        self.loop_iterations = 0
        self._record_setup(record)
        self._unchecked = [] if opts.allow_nan else self._unrecorded_sources()
        self._plan_pulls()
        self._rows = np.empty((0, len(self.names)))
        self._nrows = 0
        self._first_row = 0  # rows before the buffer's first (streamed to the sink only)
        self._window = False
        self.pacer: Pacer | None = None
        if opts.adaptive or opts.iterative:
            bad = [u.name for u in self.units if not u.can_rollback]
            if bad:
                what = "adaptive stepping" if opts.adaptive else "iterative coupling"
                raise CosimError(f"{what} needs rollback, but units {bad} cannot save and restore their "
                                 "state (FMUs: canGetAndSetFMUstate=\"false\")")
            multi = [u.name for u in self.units if u.step is not None]
            if multi and opts.adaptive:
                raise CosimError(f"adaptive stepping cannot run multi-rate units {multi}: give them no own step")
        self._rollback_note: str | None = None
        self._python_loop: str | None = None  # why the run took the Python loop (None: compiled, or not yet run)
        self._forced_steps: dict[str, float] = {}
        self.hist_t: list[float] = []
        self.hist_y: list[np.ndarray] = []
        if opts.algorithm == "gauss-seidel":
            names = list(opts.order) if opts.order is not None else list(system.units)
            unknown = [n for n in names if n not in system.units]
            missing = [n for n in system.units if n not in names]
            if unknown or missing or len(set(names)) != len(names):
                raise InputError(f"Gauss-Seidel order {names} must name every unit once "
                                 f"(unknown: {unknown or 'none'}, missing: {missing or 'none'})")
            self.gs_order = [system.units[n] for n in names]

    # -- exchange -----------------------------------------------------------------
    def _set_inputs(self, u: Unit) -> None:
        uu = u.u
        for j, src, k in self.inc[u.name]:
            uu[j] = src.y[k]

    def _plan_pulls(self) -> None:
        """Units whose outputs must be read at the start of an exchange: all but those
        re-read later in the exchange anyway (after their inputs are set) whose
        connected outputs all have direct feedthrough (so nobody reads them earlier)."""
        repulled = {b[0] for b, simple in zip(self.blocks, self.simple)
                    if simple and self.inc[b[0]] and self.ft[b[0]]}
        sourced: dict[str, set[str]] = {}
        for c in self.system.connections:
            sourced.setdefault(c.src_unit, set()).add(c.src_var)
        self.pre_pull = [u for u in self.units if u.name not in repulled
                         or any(not u.feedthrough[o] for o in sourced.get(u.name, ()))]
        # the exchange as a flat plan: (unit, its connections, read outputs again, None)
        # for a unit, (None, None, None, [units]) for an algebraic loop
        self.plan: list[tuple] = []
        for b, simple in zip(self.blocks, self.simple):
            if not simple:
                self.plan.append((None, None, None, [self.system.units[n] for n in b]))
            elif self.inc[b[0]]:
                u = self.system.units[b[0]]
                self.plan.append((u, self.inc[b[0]], self.ft[b[0]], None))
        self.loops = {}
        for b, simple in zip(self.blocks, self.simple):
            if not simple:
                names = set(b)
                self.loops[tuple(b)] = [(u, j, src, k) for u in (self.system.units[n] for n in b)
                                        for (j, src, k) in self.inc[u.name] if src.name in names]

    def exchange(self, t: float) -> None:
        for u in self.pre_pull:
            u.pull()
        for u, inc, repull, loop in self.plan:
            if loop is None:
                uu = u.u
                for j, src, k in inc:
                    uu[j] = src.y[k]
                u.push()
                if repull:
                    u.pull()
            else:
                self._solve_loop(loop, t)

    def _solve_loop(self, block: list[Unit], t: float) -> None:
        self.loop_iterations += solve_loop(block, self.loops[tuple(u.name for u in block)], self._set_inputs, t,
                                           self.opts.loop_tolerance, self.opts.loop_max_iterations)

    # -- extrapolation ------------------------------------------------------------
    def _push_history(self, t: float) -> None:
        if self.opts.extrapolation <= 0 and not self.opts.adaptive and not self.opts.iterative:
            return
        y = np.array([src.y[k] for _, _, src, k in self.conns], float)
        self.hist_t.insert(0, t)
        self.hist_y.insert(0, y)
        del self.hist_t[3:], self.hist_y[3:]

    def _coeffs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Monomial coefficients (in tau = t - t_n) of each connection's extrapolation."""
        k = min(self.opts.extrapolation, len(self.hist_t) - 1)
        Y0 = self.hist_y[0]
        z = np.zeros_like(Y0)
        if k <= 0:
            return Y0, z, z
        t0, t1 = self.hist_t[0], self.hist_t[1]
        a = np.where(self.held, 0.0, (Y0 - self.hist_y[1]) / (t0 - t1))
        if k == 1:
            return Y0, a, z
        t2 = self.hist_t[2]
        a12 = (self.hist_y[1] - self.hist_y[2]) / (t1 - t2)
        b = np.where(self.held, 0.0, (a - a12) / (t0 - t2))
        return Y0, a - b * (t1 - t0), b

    def _save(self) -> list:
        return [(u, u.get_state(), list(u.u)) for u in self.units]

    def _restore(self, saved: list, free: bool) -> None:
        for u, s, uu in saved:
            u.set_state(s)
            if free:
                u.free_state(s)
            for j, v in enumerate(uu):
                u.u[j] = v
            u.push()

    def _own_outputs(self) -> list:
        """Each unit's outputs read right after its step, before the exchange changes its inputs."""
        own = []
        for u in self.units:
            u.pull()
            own.append([float(v) for v in u.y])
        return own

    def _check_repeat(self, t: float, first: list, again: list, what: str = "iterative") -> None:
        """Refuse the run, naming the unit, when a step repeated after restoring its
        saved state (same inputs, same input slopes) does not give the outputs of the
        step taken from the state itself, beyond ``rollback_tolerance`` (relative).
        The start-up probe cannot see every such restore: Dymola's Controller
        repeats exactly there but not once its limiter is active."""
        tol = self.opts.rollback_tolerance
        for u, ya, yb in zip(self.units, first, again):
            if not u.outputs:
                continue
            d, k = max(((0.0 if a == b else abs(a - b) / max(abs(a), abs(b)), k)
                        for k, (a, b) in enumerate(zip(ya, yb))), key=lambda e: e[0])
            a, b = ya[k], yb[k]
            if not d <= tol:
                raise CosimError(f"unit {u.name!r} failed the rollback check at t = {t!r} s: the step repeated "
                                 f"after restoring its saved state gave {u.outputs[k]} = {b!r} instead of {a!r} "
                                 f"(relative difference {d:.3g}, rollback_tolerance {tol!r}); its state "
                                 f"save/restore cannot be trusted, so the {what} run is refused")

    def _startup_coeffs(self, t: float, h: float, coeffs: tuple) -> tuple:
        """First step with quadratic extrapolation: there is no history yet, so
        take a trial step with constant inputs, roll back, and use the linear
        interpolation between the values at ``t`` and ``t + h`` instead (keeps
        the start-up error at third order)."""
        saved = self._save()
        for u in self.units:
            self._step_unit(u, t, h, coeffs)
        self.exchange(t + h)
        y1 = np.array([src.y[k] for _, _, src, k in self.conns], float)
        self._restore(saved, free=True)
        self.exchange(t)
        c0 = coeffs[0]
        return c0, (y1 - c0) / h, np.zeros_like(c0)

    def _step_unit(self, u: Unit, t: float, h: float, coeffs: tuple | None) -> None:
        m = self.sub[u.name]
        hs = h / m
        idx = self.conn_of[u.name] if coeffs is not None else ()
        ts_next = t
        for s in range(m):
            # sub-step points counted from t, the last one t + h: each sub-step is the
            # difference of its two points (see the fixed loop)
            ts = ts_next
            ts_next = t + h if s == m - 1 else t + (s + 1) * hs
            if idx:
                c0, c1, c2 = coeffs
                a = s * hs
                if u.can_interpolate_inputs:
                    d1 = [0.0] * len(u.inputs)
                    d2 = [0.0] * len(u.inputs)
                    for i in idx:
                        j = self.conns[i][1]
                        u.u[j] = c0[i] + c1[i] * a + c2[i] * a * a
                        d1[j] = c1[i] + 2 * c2[i] * a
                        d2[j] = 2 * c2[i]
                    u.push()
                    u.push_derivatives(d1, d2)
                else:
                    b = a + hs
                    for i in idx:
                        u.u[self.conns[i][1]] = c0[i] + c1[i] * (a + b) / 2 + c2[i] * (a * a + a * b + b * b) / 3
                    u.push()
            self._where = (u, ts)
            u.do_step(ts, ts_next - ts)

    # -- runs ---------------------------------------------------------------------
    def run(self, t0: float, stop: float) -> Result:
        opts = self.opts
        rollback = opts.adaptive or opts.iterative or (
            opts.extrapolation == 2 and all(u.can_rollback for u in self.units))
        summary = RunSummary()
        start_wall = _time.perf_counter()
        self._summary, self._start_wall = summary, start_wall
        self._where: tuple[Unit, float] | None = None  # the unit in a call and its time, for a stuck run
        self._sink_done = False
        self._fl_ctl = None  # the compiled loop's shared progress while it runs
        self.guard = RunGuard(opts.timeout, on_stuck=self._on_stuck, progress=self._progress_mark,
                              on_quiet=self._flush_while_in_a_call)
        self._flushed = 0
        if opts.sink is not None:
            opts.sink.start(self.names, self._meta())
        try:
            self.guard.__enter__()
            for u in self.units:
                u.will_roll_back = rollback
                u.connect_inputs([j for j, _, _ in self.inc[u.name]])
                u.setup(t0, stop, self.H if u.step is None else u.step)
            self.exchange(t0)  # the initial output-to-input propagation
            if opts.adaptive or opts.iterative:  # every unit must really restore a saved state
                measured = probe_rollback(self.units, t0, self.H, opts.rollback_tolerance,
                                          derivatives=opts.iterative or opts.extrapolation > 0)
                inexact = {n: d for n, d in measured.items() if d > 0}
                if inexact:  # accepted by the tolerance: said in the result
                    self._rollback_note = ("restores accepted within rollback_tolerance "
                                           f"{opts.rollback_tolerance!r}: " + ", ".join(
                                               f"{n} {d:.2g}" for n, d in inexact.items()))
            recs = self._recorders()
            start_wall = self._start_wall = _time.perf_counter()
            if opts.realtime:
                self.pacer = Pacer(opts.realtime, t0)
            try:
                if opts.adaptive:
                    self._run_adaptive(t0, stop, recs, summary)
                else:
                    self._run_fixed(t0, stop, recs, summary)
            except StopRequested as exc:  # the run ends at the last good time
                summary.status, summary.message = "stopped", str(exc).split("; last unit log lines", 1)[0]
        except (CosimError, KeyboardInterrupt) as exc:  # keep what was recorded so far
            summary.status = ("timeout" if isinstance(exc, RunInterrupted) and exc.kind == "timeout"
                              else "interrupted" if isinstance(exc, (RunInterrupted, KeyboardInterrupt))
                              else "failed")
            summary.message = str(exc) or "interrupted"
            result = self._result(self._rows[: self._nrows], summary, start_wall)
            exc.result = result  # type: ignore[attr-defined]
            self._finish_sink(result)
            raise
        finally:
            self.guard.__exit__(None, None, None)
            for u in self.units:  # also those set up before a failing one
                u.terminate()
        result = self._result(self._rows[: self._nrows], summary, start_wall)
        self._finish_sink(result)
        return result

    def _note_loop(self) -> str | None:
        """Why this run takes the Python loop (``None``: the compiled one); said once in the log."""
        why = self._python_loop = fast_loop.python_loop_reason(self)
        if why is not None:
            _LOG.info("the run takes the Python loop: %s", why)
        return why


def simulate(system: System, stop_time: float, step: float, *, options: SimulationOptions | None = None,
             **keywords: Any) -> Result:
    """Co-simulate ``system`` from ``options.start_time`` to ``stop_time``.

    Parameters
    ----------
    system : System
        Validated here (every problem reported at once).
    stop_time : float
        End of the interval [s]. For fixed steps ``stop_time - start_time``
        must be a whole number of steps.
    step : float
        Macro (communication) step [s]; the initial step when ``adaptive``.
    options : SimulationOptions, optional
        How to run (algorithm, tolerances, recording, limits; each field
        documented in :class:`~mbfmu.cosim.SimulationOptions`). Default: all
        defaults.
    **keywords
        Any field of :class:`~mbfmu.cosim.SimulationOptions` by name
        (``simulate(system, 2.0, 0.01, adaptive=True, rtol=1e-6)``). With
        ``options`` too, the keywords replace its fields of the same name
        (``dataclasses.replace(options, **keywords)``). An unknown name is an
        :class:`~mbfmu.errors.InputError` listing the fields.

    Returns
    -------
    Result
        Structured array (``time`` first), summary and metadata. When a unit
        fails or the run is interrupted, the :class:`~mbfmu.errors.CosimError`
        raised carries the results up to there as ``exc.result``. When a unit
        asks to stop, the result ends at the last good time and
        ``result.summary.status`` is ``"stopped"``.
    """
    opts = simulation_options(options, keywords).resolved()
    start_time = opts.start_time
    for name, v in (("stop_time", stop_time), ("step", step)):
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"{name} = {v!r} must be a finite number of seconds")
    if step <= 0:
        raise InputError(f"step {step!r} s must be positive")
    if stop_time <= start_time:
        raise InputError(f"stop_time {stop_time!r} s must be after start_time {start_time!r} s")
    if not opts.adaptive:
        n = (stop_time - start_time) / step
        if abs(n - round(n)) > 1e-9 * max(1.0, n):
            raise InputError(f"the interval {stop_time - start_time!r} s is not a whole number of steps of {step!r} s")
    system.validate(None if opts.adaptive else step)
    if opts.log is not None:
        for u in system.units.values():
            if hasattr(u, "logging_on"):
                u.logging_on = bool(opts.log)
    if opts.isolate or opts.step_timeout is not None:
        from ..isolation.proxy import isolated_system
        system = isolated_system(system, True if opts.isolate is False else opts.isolate, opts.step_timeout)
    return _Master(system, float(step), opts, opts.record).run(float(start_time), float(stop_time))
