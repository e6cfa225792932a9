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
  a :mod:`.recording` writer as the run goes (flushed at least every second).
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
import sys
import time as _time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import CosimError, InputError, RunInterrupted, StopRequested
from .recording import Result, RunSummary, make_array
from .run_guard import RunGuard, check_recording_fits
from . import fast_loop
from .loops import solve_loop
from .fmu3_clocked import refuse_clocked_loops
from .realtime import Pacer, realtime_factor
from .rollback_probe import probe_rollback
from .system import System, exchange_order, self_loops
from .units import Unit

_LOG = logging.getLogger("mbfmu.cosim")

ALGORITHMS = ("jacobi", "gauss-seidel")
# the input extrapolation of an adaptive run that does not choose one: the error estimate
# compares each exchanged value with its extrapolation, so order 0 would bound the change of
# the signals per step (497,986 steps for 0.5 s on the tests' three-mass chain, 180 with 2)
ADAPTIVE_EXTRAPOLATION = 2


@dataclass
class Options:
    """Master options (see :func:`simulate` for their meaning)."""

    algorithm: str = "jacobi"
    order: Sequence[str] | None = None
    extrapolation: int = 0
    adaptive: bool = False
    rtol: float = 1e-4
    atol: float = 1e-6
    min_step: float | None = None
    max_step: float | None = None
    loop_tolerance: float = 1e-12
    loop_max_iterations: int = 100
    progress: bool | None = None
    iterative: bool = False
    max_steps: int = 1_000_000
    allow_nan: bool = False
    timeout: float | None = None
    sink: Any = None
    rollback_tolerance: float = 0.0
    realtime: float | None = None
    threads: int = 1


class _Progress:
    """A tqdm bar over simulated time, shown when forced or when the run is
    projected to last more than ``after`` seconds of wall time."""

    def __init__(self, t0: float, stop: float, mode: bool | None, after: float = 3.0) -> None:
        self.t0, self.stop, self.mode, self.after = t0, stop, mode, after
        self.wall0 = _time.perf_counter()
        self.bar = None
        self.calls = 0

    def tick(self, t: float) -> None:
        self.calls += 1
        if self.mode is False or self.calls & 255:
            return
        if self.bar is None:
            el = _time.perf_counter() - self.wall0
            done = (t - self.t0) / (self.stop - self.t0)
            if self.mode or (done > 0 and el * (1 - done) / done > self.after):
                from tqdm import tqdm
                self.bar = tqdm(total=self.stop - self.t0, unit="s", unit_scale=True, leave=False,
                                desc="co-simulation",
                                bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]")
        if self.bar is not None:
            self.bar.update(t - self.t0 - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _Master:
    def __init__(self, system: System, step: float, opts: Options, record: Sequence[str] | str | None) -> None:
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

    # -- recording ----------------------------------------------------------------
    def _record_setup(self, record: Sequence[str] | str | None) -> None:
        wanted = recorded_variables(self.system, record)
        # the columns are filled unit by unit (one getter call per unit), so the names
        # follow the same grouping, first appearance of each unit first
        order = list(dict.fromkeys(u.name for u, _ in wanted))
        wanted.sort(key=lambda uv: order.index(uv[0].name))
        self.names = ["time"] + [f"{u.name}.{n}" for u, n in wanted]
        symbols = self.system.unit_symbols()  # a variable without its own unit: its connections'
        self.col_units = {f"{u.name}.{n}": symbols[f"{u.name}.{n}"] or None for u, n in wanted}
        self.col_types = {f"{u.name}.{n}": u.variables[n].type for u, n in wanted if u.variables[n].type != "Real"}
        groups: dict[str, list[str]] = {}
        for u, n in wanted:
            groups.setdefault(u.name, []).append(n)
        self.groups = []  # (unit, var names, first column)
        col = 1
        for un, vars_ in groups.items():
            self.groups.append((self.system.units[un], vars_, col))
            col += len(vars_)

    def _recorders(self) -> tuple[list, list]:
        """(views, getters): numpy views on output buffers recorded as they are,
        and getter functions for everything else, each with its columns."""
        views, getters = [], []
        for u, vars_, col in self.groups:
            if all(v in u.outputs for v in vars_):  # read from the output buffer: no extra unit call
                y = u.y
                view = y if isinstance(y, np.ndarray) else (np.ctypeslib.as_array(y)[:len(u.outputs)] if not isinstance(y, list) else None)
                if view is not None:
                    if vars_ != u.outputs:
                        idx = np.array([u.outputs.index(v) for v in vars_])
                        getters.append((lambda view=view, idx=idx: view[idx], col, col + len(vars_)))
                    else:
                        views.append((view, col, col + len(vars_)))
                    continue
            getters.append((u.getter(vars_), col, col + len(vars_)))
        return views, getters

    def _unrecorded_sources(self) -> list[tuple[Unit, int]]:
        """Connected outputs that are not recorded (checked for NaN apart)."""
        rec = set(self.names)
        return [(src, k) for _, _, src, k in self.conns if f"{src.name}.{src.outputs[k]}" not in rec]

    def _check_finite(self, row: np.ndarray, t: float) -> None:
        if not np.isfinite(row).all():
            j = int(np.argmax(~np.isfinite(row)))
            name = self.names[j]
            unit, var = name.split(".", 1) if "." in name else (name, name)
            raise CosimError(f"unit {unit!r}: {var!r} is {float(row[j])!r} at t = {t!r} s (pass allow_nan=True to let "
                             "non-finite values through)")
        for src, k in self._unchecked:
            if not math.isfinite(src.y[k]):
                raise CosimError(f"unit {src.name!r}: output {src.outputs[k]!r} is {src.y[k]!r} at t = {t!r} s "
                                 "(pass allow_nan=True to let non-finite values through)")

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

    def _iterative_step(self, t: float, h: float, t_new: float) -> None:
        """One implicit (iterative) Jacobi step: inputs over the step are the linear
        interpolation between the consistent values at ``t`` and a guess at ``t + h``;
        the step is rolled back and repeated with the exchanged values as the new guess
        until they agree to ``loop_tolerance`` (fixed-point iteration)."""
        c0, c1, c2 = self._coeffs()
        guess = c0 + c1 * h + c2 * h * h  # extrapolated start guess
        saved = self._save()
        tol = max(self.opts.loop_tolerance, 1e-14)
        try:
            for it in range(self.opts.loop_max_iterations):
                coeffs = (c0, (guess - c0) / h, np.zeros_like(c0))
                for u in self.units:
                    self._step_unit(u, t, h, coeffs)
                if it < 2:  # each unit's outputs after its step, its inputs still those of the step
                    own = self._own_outputs()
                self.exchange(t_new)
                self.loop_iterations += 1
                y = np.array([src.y[k] for _, _, src, k in self.conns], float)
                if it == 0:  # repeat the first iteration, same inputs, from the restored state:
                    first = own  # the restore must give the step taken from the state itself
                    self._restore(saved, free=False)
                    continue
                if it == 1:
                    self._check_repeat(t, first, own)
                gap = np.abs(y - guess) / (1.0 + np.abs(y))
                if np.all(gap <= tol):
                    return
                guess = y
                self._restore(saved, free=False)
            worst = int(np.argmax(gap))  # of the last iteration (guess is y by now)
            dst, j, src, k = self.conns[worst]
            raise CosimError(f"iterative coupling did not converge in {self.opts.loop_max_iterations} iterations "
                             f"at t = {t!r} s (worst: {src.name}.{src.outputs[k]} -> {dst.name}.{dst.inputs[j]}); "
                             "use a smaller step")
        finally:
            for u, st, _ in saved:
                u.free_state(st)

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

    def _flush(self, upto: int | None = None) -> None:
        """Hand the rows recorded since the last flush (up to row ``upto``) to the sink
        (the caller holds ``guard.lock``, or is the master outside the watchdog's reach)."""
        n = self._nrows if upto is None else upto  # read once: the master may record a row meanwhile
        if self.opts.sink is not None and n > self._flushed:
            self.opts.sink.write(self._rows[self._flushed: n])
            self._flushed = n

    def _flush_while_in_a_call(self) -> None:
        """From the watchdog (``guard.lock`` held), the master inside one call for a
        whole flush period: the rows so far go to the sink, also those the compiled
        loop has written (up to its first non-finite row when NaN is not allowed)."""
        if self._sink_done:
            return
        n = self._nrows
        ctl = self._fl_ctl
        if ctl is not None:
            n = max(n, 1 + ctl.reached)
            if not self.opts.allow_nan:
                bad = fast_loop._first_non_finite_row(self._rows, self._flushed, n)
                n = n if bad is None else bad + 1
        self._flush(n)

    def _finish_sink(self, result: Result) -> None:
        with self.guard.lock:
            self._finish_sink_locked(result)

    def _finish_sink_locked(self, result: Result) -> None:
        if self._sink_done:
            return
        self._sink_done = True  # also without a sink: the result is made, the run is ending
        if self.opts.sink is not None:
            try:
                self._flush()
            finally:
                self.opts.sink.finish(result)

    def _result(self, rows: np.ndarray, summary: RunSummary, start_wall: float) -> Result:
        summary.wall_time = _time.perf_counter() - start_wall
        summary.end_time = float(rows[-1, 0]) if len(rows) else math.nan
        span = summary.end_time - float(rows[0, 0]) if len(rows) else 0.0
        summary.real_time_factor = span / summary.wall_time if summary.wall_time > 0 else math.inf
        summary.loop_iterations = self.loop_iterations
        if self.pacer is not None:  # never silent: the summary and a warning tell the overruns
            summary.realtime = self.pacer.factor
            summary.realtime_overruns, summary.realtime_worst_lag = self.pacer.overruns, self.pacer.worst_lag
            if self.pacer.overruns:
                _LOG.warning("%s", self.pacer.report())
        meta = self._meta()
        if self._first_row > 0:
            meta["first_row"] = self._first_row  # earlier rows were streamed to the sink only
        return Result(make_array(self.names, rows, self.col_types), summary, meta)

    def _meta(self) -> dict[str, Any]:
        """Metadata of the run: algorithm, step, column units, values, components, plants."""
        meta = {"algorithm": self.opts.algorithm, "step": self.H, "extrapolation": self.opts.extrapolation,
                "adaptive": self.opts.adaptive, "units": self.col_units, "types": self.col_types,
                "values": {f"{u.name}.{k}": v for u in self.units for k, v in u.values.items()},
                "components": {u.name: {"type": type(u).__name__, "source": str(getattr(u, "path", ""))}
                               for u in self.units}}
        if self._rollback_note:
            meta["rollback"] = self._rollback_note
        if self._python_loop:
            meta["python_loop"] = self._python_loop
        if self._forced_steps:
            meta["adaptive_forced_steps"] = self._forced_steps
        plants = {u.name: u.plant_ref for u in self.units if getattr(u, "plant_ref", None)}
        if plants:  # the viewer rebuilds poses from these (mbfmu.viewer.results)
            meta["plants"] = plants
        return meta

    def _allocate(self, nrows: int) -> None:
        """The row buffer: all ``nrows`` rows when they fit in memory, else (streaming
        to a sink) a window that is handed to the sink and reused."""
        ncols = len(self.names)
        if self.opts.sink is not None and hasattr(self.opts.sink, "reserve"):
            self.opts.sink.reserve(nrows, ncols)
        fits = check_recording_fits(nrows, ncols, streaming=self.opts.sink is not None)
        self._window = not fits
        self._rows = np.empty((nrows if fits else 1 << 16, ncols))
        self._nrows = 0
        self._first_row = 0

    def _record(self, t: float, recs: list) -> None:
        if self._nrows == len(self._rows):
            if self._window:  # streamed: pass the window on and start it again
                with self.guard.lock:
                    self._flush()
                    self._first_row += self._nrows
                    self._nrows = self._flushed = 0
            else:
                self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        row = self._rows[self._nrows]
        row[0] = t
        views, getters = recs
        for view, a, b in views:
            row[a:b] = view
        for get, a, b in getters:
            row[a:b] = get()
        self._nrows += 1
        if not self.opts.allow_nan:
            self._check_finite(row, t)
        if self.pacer is not None:
            self.pacer.pace(t, lambda: bool(self.guard.stop_flag.value))
        if self.guard.due():
            self._between_steps(t)

    def _between_steps(self, t: float) -> None:
        """Periodic work between two steps: flush rows; stop on Ctrl-C, SIGTERM or timeout."""
        with self.guard.lock:
            self._flush()
        reason = self.guard.stop_reason()
        if reason:
            exc = RunInterrupted(f"{reason} at t = {t!r} s")
            exc.kind = self.guard.kind or "SIGINT"
            raise exc

    def _progress_mark(self) -> tuple:
        """Changes with every step or row (read by the watchdog thread)."""
        ctl = self._fl_ctl
        return (self._first_row, self._nrows, self._where, ctl.reached if ctl is not None else -1)

    def _on_stuck(self, kind: str, reason: str) -> bool:
        """Called by the run's watchdog thread (with ``guard.lock`` held) when the
        master did not stop between steps in time: a unit is stuck inside a call.
        Keeps the rows so far (flushed to the sink with the summary) and says so
        on stderr; the watchdog then ends the process. Returns False (nothing
        done) when the master has already handed its result over."""
        if self._sink_done:
            return False
        where = self._where
        ctl = self._fl_ctl
        n = self._nrows
        stuck = [where[0]] if where is not None else []
        if ctl is not None:  # the compiled loop: its rows are counted in C
            n = self._nrows = max(n, 1 + ctl.reached)  # so that the flush below hands them over
            stuck = [self.units[i] for i in fast_loop.units_in_call(ctl, len(self.units))]
            where = (None, float(self._rows[n - 1, 0])) if stuck else None
        summary = RunSummary(**vars(self._summary))
        summary.steps = self._first_row + n - 1 if n else 0
        summary.status = "timeout" if kind == "timeout" else "interrupted"
        names = ", ".join(repr(u.name) for u in stuck)
        inside = ("a unit was inside a call" if where is None
                  else f"unit {names} was inside a call from t = {where[1]!r} s" if len(stuck) == 1
                  else f"units {names} were inside calls from t = {where[1]!r} s")
        summary.message = f"{reason} while {inside}; the process was ended"
        result = self._result(self._rows[:n], summary, self._start_wall)
        self._finish_sink_locked(result)
        path = getattr(self.opts.sink, "path", None)
        kept = (f"the {len(result)} rows so far are in {str(path)!r}" if path is not None and len(result)
                else f"{len(result)} rows recorded, none kept (no output file)" if self.opts.sink is None
                else "no rows were recorded")
        from .run_guard import EXIT_CODES
        print(f"mbfmu: {summary.message}; {kept}; exit status {EXIT_CODES[kind]}", file=sys.stderr)
        return True


    def _run_fixed(self, t0: float, stop: float, recs: list, summary: RunSummary) -> np.ndarray:
        H = self.H
        n = int(round((stop - t0) / H))
        span = stop - t0
        self._allocate(n + 1)
        self._record(t0, recs)
        self._push_history(t0)
        progress = _Progress(t0, stop, self.opts.progress)
        try:
            why = self._note_loop()
            if why is None:  # all-FMU fixed-step runs: the same loop in C
                fast_loop.run(self, t0, stop, n, progress, summary)
            else:
                if self.opts.threads > 1:
                    _LOG.warning("threads=%d not used: the run takes the Python loop (%s)", self.opts.threads, why)
                self._fixed_loop(t0, stop, n, span, recs, summary, progress)
        finally:
            self._fl_ctl = None
            progress.close()

    def _fixed_loop(self, t0: float, stop: float, n: int, span: float, recs: list, summary: RunSummary,
                    progress: "_Progress") -> None:
        extrap = self.opts.extrapolation > 0 or any(m > 1 for m in self.sub.values())
        gs = self.opts.algorithm == "gauss-seidel"
        gs_exchange = gs and not all(self.simple)  # algebraic loops are solved in the exchange
        units = self.gs_order if gs else self.units
        simple_units = [(u, u.do_step) for u in units]
        t = t0
        for k in range(n):
            # both points counted, never accumulated; h is their difference, so that
            # t + h is t_next to the bit (an FMU that sums its steps stays on the grid)
            t_next = stop if k == n - 1 else t0 + (k + 1) * span / n
            h = t_next - t
            if gs:
                for u in units:
                    if self.inc[u.name]:
                        self._set_inputs(u)
                        u.push()
                    self._step_unit(u, t, h, None)
                    u.pull()
            elif self.opts.iterative:
                self._iterative_step(t, h, t_next)
            elif extrap:
                coeffs = self._coeffs() if self.opts.extrapolation > 0 else None
                if k == 0 and self.opts.extrapolation == 2 and all(u.can_rollback for u in units):
                    coeffs = self._startup_coeffs(t, h, coeffs)
                for u in units:
                    self._step_unit(u, t, h, coeffs)
            else:
                for u, step in simple_units:
                    self._where = (u, t)
                    step(t, h)
            t = t_next
            if (not gs and not self.opts.iterative) or gs_exchange:
                self.exchange(t)
            summary.steps += 1
            self._record(t, recs)
            self._push_history(t)
            progress.tick(t)

    def _warn_forced(self) -> None:
        f = self._forced_steps
        if f:
            import warnings
            warnings.warn(f"adaptive stepping accepted {f['count']} steps at the minimum step whose error estimate "
                          f"was above the tolerance (worst {f['worst_error']:.3g} times it, first at t = "
                          f"{f['first_time']!r} s): the result does not meet rtol/atol there; lower min_step or "
                          "loosen the tolerances (result.meta['adaptive_forced_steps'])", RuntimeWarning, stacklevel=4)

    def _note_loop(self) -> str | None:
        """Why this run takes the Python loop (``None``: the compiled one); said once in the log."""
        why = self._python_loop = fast_loop.python_loop_reason(self)
        if why is not None:
            _LOG.info("the run takes the Python loop: %s", why)
        return why

    def _run_adaptive(self, t0: float, stop: float, recs: list, summary: RunSummary) -> np.ndarray:
        o = self.opts
        self._note_loop()
        hmin = o.min_step if o.min_step is not None else (stop - t0) * 1e-9
        hmax = o.max_step if o.max_step is not None else (stop - t0)
        self._allocate(1024)
        self._window = self.opts.sink is not None and not check_recording_fits(o.max_steps + 1, len(self.names), True)
        self._record(t0, recs)
        self._push_history(t0)
        t, h = t0, min(self.H, hmax)
        p = max(self.opts.extrapolation, 0) + 1
        progress = _Progress(t0, stop, self.opts.progress)
        try:
            self._adaptive_loop(t0, stop, t, h, hmin, hmax, p, recs, summary, progress)
        finally:
            progress.close()
        self._warn_forced()

    def _adaptive_loop(self, t0: float, stop: float, t: float, h: float, hmin: float, hmax: float, p: int,
                       recs: list, summary: RunSummary, progress: "_Progress") -> None:
        o = self.opts
        rejected_last = False
        while t < stop:
            if summary.steps + summary.rejected_steps >= o.max_steps:
                raise CosimError(f"adaptive stepping took {o.max_steps} steps and reached only t = {t!r} s "
                                 f"(step {h!r} s); loosen the tolerances or raise min_step")
            last = t + h >= stop - 1e-12 * (stop - t0)
            if last:
                h = stop - t  # shrinks the step (it never grows it: a rejected last step makes progress)
            elif stop - (t + h) < hmin:  # no sliver shorter than min_step at the end: split the rest in two
                h = (stop - t) / 2
            saved = self._save()
            coeffs = self._coeffs()
            for u in self.units:
                self._step_unit(u, t, h, coeffs)
            own = self._own_outputs()
            t_new = stop if last else t + h
            self.exchange(t_new)
            y_new = np.array([src.y[k] for _, _, src, k in self.conns], float)
            c0, c1, c2 = coeffs
            pred = c0 + c1 * h + c2 * h * h
            scale = o.atol + o.rtol * np.maximum(np.abs(y_new), np.abs(c0))
            err = float(np.max(np.abs(y_new - pred) / scale)) if len(y_new) else 0.0
            fac = min(5.0, max(0.2, 0.9 * (1.0 / err) ** (1.0 / p))) if err > 0 else 5.0
            if err <= 1.0 or h <= hmin:
                if err > 1.0:  # the tolerance is not met even at the smallest step: say so
                    f = self._forced_steps
                    f["count"] = f.get("count", 0) + 1
                    f["worst_error"] = max(f.get("worst_error", 0.0), err)
                    f.setdefault("first_time", t)
                for u, s, _ in saved:
                    u.free_state(s)
                t = t_new
                summary.steps += 1
                self._record(t, recs)
                self._push_history(t)
                progress.tick(t)
                h = min(hmax, max(hmin, h * (min(fac, 1.0) if rejected_last else fac)))
                rejected_last = False
            else:  # the retry starts from the restored state: the rejected step repeated
                self._restore(saved, free=False)  # from it must give what it gave
                for u in self.units:
                    self._step_unit(u, t, h, coeffs)
                self._check_repeat(t, own, self._own_outputs(), "adaptive")
                self._restore(saved, free=True)
                self.exchange(t)
                summary.rejected_steps += 1
                rejected_last = True
                h = max(hmin, h * min(fac, 0.5))


def recorded_variables(system, record: Sequence[str] | str | None) -> list[tuple[Unit, str]]:
    """The ``(unit, variable)`` pairs a run of ``system`` records, in column
    order: ``"outputs"`` (default), ``"all"`` (inputs, outputs and Real locals,
    a plant FMU's ``states.*`` among them) or the named ``"unit.var"`` list."""
    wanted: list[tuple[Unit, str]] = []
    if record is None or record == "outputs" or record == "all":
        for u in system.units.values():
            if record == "all":
                wanted += [(u, n) for n in u.inputs]
            wanted += [(u, n) for n in u.outputs]
            if record == "all":
                wanted += [(u, n) for n, v in u.variables.items() if v.causality == "local" and v.type == "Real"]
        return wanted
    from .system import split_name
    bad = []
    for full in record:
        un, var = split_name(full)
        if un not in system.units or var not in system.units[un].variables:
            bad.append(full)
        else:
            wanted.append((system.units[un], var))
    if bad:
        raise InputError(f"cannot record unknown variables: {', '.join(bad)}")
    return wanted


def simulate(system: System, stop_time: float, step: float, *, start_time: float = 0.0,
             algorithm: str = "jacobi", order: Sequence[str] | None = None, extrapolation: int | None = None,
             adaptive: bool = False, rtol: float = 1e-4, atol: float = 1e-6, min_step: float | None = None,
             max_step: float | None = None, loop_tolerance: float = 1e-12, loop_max_iterations: int = 100,
             record: Sequence[str] | str | None = None, progress: bool | None = None,
             iterative: bool = False, max_steps: int = 1_000_000, allow_nan: bool = False,
             timeout: float | None = None, step_timeout: float | None = None,
             isolate: bool | Sequence[str] = False, sink: Any = None, log: bool | None = None,
             rollback_tolerance: float = 0.0, realtime: float | bool | None = None,
             threads: int = 1) -> Result:
    """Co-simulate ``system`` from ``start_time`` to ``stop_time``.

    Parameters
    ----------
    system : System
        Validated here (every problem reported at once).
    stop_time, start_time : float
        Interval [s]. For fixed steps ``stop_time - start_time`` must be a
        whole number of steps.
    step : float
        Macro (communication) step [s]; the initial step when ``adaptive``.
    algorithm : {"jacobi", "gauss-seidel"}
        Master algorithm (see the module docstring).
    order : sequence of str, optional
        Gauss-Seidel stepping order (default: the order units were added).
    extrapolation : {0, 1, 2}, optional
        Input extrapolation order (Jacobi only). Default: 0 for fixed steps,
        2 with ``adaptive`` (see ``rtol``).
    adaptive : bool
        Adaptive macro step with rollback (Jacobi; all units must roll back).
    rtol, atol : float
        Tolerances of the adaptive error estimate (relative; absolute in the
        connected signals' units). The estimate is the gap between each
        exchanged value at the end of a step and its extrapolation over the
        step, so with ``extrapolation=0`` it bounds the change of the signals
        per step (very small steps: an adaptive run takes order 2 unless told
        otherwise).
    min_step, max_step : float, optional
        Bounds of the adaptive step [s].
    loop_tolerance : float
        Relative tolerance of algebraic-loop solutions.
    loop_max_iterations : int
        Fixed-point iterations before giving up (a non-contracting iteration
        switches to Newton earlier).
    record : "outputs", "all" or sequence of str
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
        130; see :mod:`.run_guard`). To have only a stuck unit killed and the
        run go on to its error, isolate it with ``step_timeout``.
    step_timeout : float, optional
        Wall-clock limit of one step of one isolated unit [s]: a unit
        that passes it is killed and the run ends naming it. Implies
        ``isolate=True`` unless ``isolate`` names units.
    isolate : bool or sequence of str
        Run all FMU units (``True``) or the named units in worker processes
        (:mod:`.isolation`): a unit that crashes or hangs ends the run
        cleanly instead of taking the master down.
    sink : writer, optional
        Rows are streamed to it as the run goes (``start(names, meta)``,
        ``write(rows)``, ``finish(result)``; see
        :func:`~mbfmu.cosim.recording.open_writer`), flushed at least every
        second of wall time, also on failure and interrupt.
    log : bool, optional
        FMU logging: ``True`` instantiates every FMU with logging and all its
        log categories on, ``False`` off; ``None`` keeps each unit's own
        setting (off unless the unit was made with ``log=True``).
    rollback_tolerance : float
        Adaptive and iterative runs first probe every unit's state restore
        (:mod:`.rollback_probe`): a step repeated after a restore must give
        the same outputs and states to the bit, else the run is refused,
        naming the unit and the relative difference measured. A positive
        value accepts restores that differ up to it (relative); the accepted
        differences are noted in ``result.meta["rollback"]``. The run also
        checks each rollback it relies on: the first iteration of every
        iterative step, and every step adaptive stepping rejects, is repeated
        from the restored state with the same inputs, and each unit's outputs
        must agree within this tolerance, else the run is refused naming the
        unit, the time and the difference (Dymola's Controller passes the
        probe but restores inexactly once it has stepped with input slopes).
    realtime : float or bool, optional
        Pace the run to the wall clock: ``FACTOR`` simulated seconds per
        wall-clock second (``True``: 1). Steps that end late are counted,
        with the worst lag, in ``result.summary`` and a warning
        (:mod:`.realtime`).
    threads : int
        Threads stepping the units of a Jacobi step in parallel (compiled
        loop, all-FMU systems; results bit-identical to serial; a run that
        takes the Python loop steps serially and warns). Units must be
        safe to step concurrently (FMUs of distinct instances are).

    Returns
    -------
    Result
        Structured array (``time`` first), summary and metadata. When a unit
        fails or the run is interrupted, the :class:`~mbfmu.errors.CosimError`
        raised carries the results up to there as ``exc.result``. When a unit
        asks to stop, the result ends at the last good time and
        ``result.summary.status`` is ``"stopped"``.
    """
    if algorithm not in ALGORITHMS:
        raise InputError(f"algorithm {algorithm!r} is not one of {ALGORITHMS}")
    if extrapolation is None:
        extrapolation = ADAPTIVE_EXTRAPOLATION if adaptive else 0
    if extrapolation not in (0, 1, 2):
        raise InputError(f"extrapolation order {extrapolation!r} must be 0, 1 or 2")
    if algorithm == "gauss-seidel" and (extrapolation or adaptive or iterative):
        raise InputError("extrapolation, adaptive stepping and iterative coupling are offered with the Jacobi "
                         "algorithm only")
    if iterative and adaptive:
        raise InputError("iterative coupling and adaptive stepping cannot be combined")
    realtime = realtime_factor(realtime)
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= fast_loop.MAX_THREADS:
        raise InputError(f"threads = {threads!r} must be a whole number from 1 to {fast_loop.MAX_THREADS}")
    if threads > 1 and algorithm == "gauss-seidel":
        raise InputError("threads step the units of a Jacobi step in parallel; Gauss-Seidel steps them one after the other")
    for name, v in (("stop_time", stop_time), ("start_time", start_time), ("step", step)):
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"{name} = {v!r} must be a finite number of seconds")
    if not (isinstance(rollback_tolerance, (int, float)) and 0 <= rollback_tolerance < 1):
        raise InputError(f"rollback_tolerance = {rollback_tolerance!r} must be a relative difference in [0, 1)")
    for name, v in (("rtol", rtol), ("atol", atol), ("timeout", timeout), ("step_timeout", step_timeout)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise InputError(f"{name} = {v!r} must be a positive finite number")
    if step <= 0:
        raise InputError(f"step {step!r} s must be positive")
    if stop_time <= start_time:
        raise InputError(f"stop_time {stop_time!r} s must be after start_time {start_time!r} s")
    if not adaptive:
        n = (stop_time - start_time) / step
        if abs(n - round(n)) > 1e-9 * max(1.0, n):
            raise InputError(f"the interval {stop_time - start_time!r} s is not a whole number of steps of {step!r} s")
    system.validate(None if adaptive else step)
    if log is not None:
        for u in system.units.values():
            if hasattr(u, "logging_on"):
                u.logging_on = bool(log)
    if isolate or step_timeout is not None:
        from .isolation import isolated_system
        system = isolated_system(system, True if isolate is False else isolate, step_timeout)
    opts = Options(algorithm, order, extrapolation, adaptive, rtol, atol, min_step, max_step, loop_tolerance,
                   loop_max_iterations, progress, iterative, max_steps, allow_nan, timeout, sink,
                   float(rollback_tolerance), realtime=realtime, threads=threads)
    return _Master(system, float(step), opts, record).run(float(start_time), float(stop_time))
