"""``tune``: controller parameters tuned against time-domain requirements over real co-simulations.

Every cost evaluation is one closed-loop run of the target (a function that
builds the :class:`mbfmu.cosim.System` from the parameters, or any other
:func:`~mbfmu.studies.sweep` target) through :func:`~mbfmu.studies.sweep`, so
runs go to the study executors (local processes, or Dask with
``executor="dask://HOST:PORT"``) and, with ``cache=DIR``, into the study
cache: a tune run again with the same cache redoes no finished run (resume).

Requirements are metrics of :mod:`mbfmu.studies.metrics` (``overshoot``,
``settling_time``, ``rise_time``, ``peak``, ``itae``, ``ise``... on named
signals, or functions of the run's :class:`~mbfmu.cosim.Result`) with a bound:
``"overshoot:arm.q[2]:0.5<5%"``. The cost is the objective plus a penalty
``1e3 (1 + |objective|) * sum of relative violations``, a requirement that
cannot be evaluated (an unsettled response) counting as :data:`UNKNOWN_MISS`;
a failed run, or one whose objective cannot be computed, costs
:data:`FAILED_COST`. So any feasible point beats any infeasible one of
similar objective.

The search works on the unit cube (each parameter mapped linearly, or
logarithmically when its range spans a factor of 50 or more): scipy's
:func:`~scipy.optimize.differential_evolution` (seeded, deferred updating,
each generation evaluated as one batch of runs), then a Nelder-Mead polish
from the best point found, both within ``max_runs`` cost evaluations.

The best parameters are then checked off the tuning grid: run again at finer
communication steps (``verify_steps``, default one fifth of the tuning step),
outside ``max_runs``. The requirement table shows each metric at the tuning
step and at each verification step, and a requirement counts as *met* only
when it holds at the finest verification step: a gain that meets an
overshoot bound only because the sampling at the tuning step hides it is
reported as not met. A best parameter within :data:`BOUND_FRACTION` of its
range from a bound (of the logarithmic range for a log-scaled parameter) is
flagged: the optimum may lie outside the range. The *peak effort*, the largest
``|value|`` of each signal the controller drives into the plant
(:mod:`.effort`), is reported next to the requirements, in the signal's unit.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError, MbfmuError, RunInterrupted
from .metrics import Metric, as_metrics, parse_metric

#: a best parameter closer than this fraction of its range to a bound is flagged
BOUND_FRACTION = 0.02
#: the default verification step, as a fraction of the tuning step
VERIFY_FRACTION = 0.2
#: cost of a run that failed, or whose objective could not be evaluated
FAILED_COST = 1e12
#: relative miss counted for a requirement that could not be evaluated (e.g. a response that never settled)
UNKNOWN_MISS = 10.0
_REQ = re.compile(r"^(?P<metric>.+?)\s*(?P<op><=|>=|<|>)\s*(?P<bound>[-+0-9.eE]+)\s*(?P<unit>%|s|[A-Za-z./^0-9]*)?$")


@dataclass(frozen=True)
class Requirement:
    """A bound on a metric: ``metric < bound`` (or ``>``).

    Parameters
    ----------
    metric : Metric
        What is measured on the run's result.
    op : {"<", "<=", ">", ">="}
    bound : float
        In the metric's unit (% for overshoot, s for times).
    text : str
        The requirement as written.
    """

    metric: Metric
    op: str
    bound: float
    text: str

    def violation(self, value: float) -> float:
        """Relative amount by which ``value`` misses the bound (0 when met)."""
        scale = max(abs(self.bound), 1e-12)
        miss = value - self.bound if self.op in ("<", "<=") else self.bound - value
        return max(0.0, miss / scale)

    def met(self, value: float) -> bool:
        return bool(math.isfinite(value)) and self.violation(value) == 0.0


def parse_requirement(req: Any) -> Requirement:
    """A :class:`Requirement` from ``"KIND:VARIABLE<BOUND[%|s]"``, or
    ``(metric or function, op, bound)``."""
    if isinstance(req, Requirement):
        return req
    if isinstance(req, str):
        m = _REQ.match(req.strip())
        if not m:
            raise InputError(f"requirement {req!r}: expected KIND:VARIABLE<BOUND (e.g. 'overshoot:arm.q[2]<5%')")
        metric, = as_metrics(m.group("metric"))
        return Requirement(metric, m.group("op"), float(m.group("bound")), req.strip())
    if isinstance(req, (tuple, list)) and len(req) == 3 and req[1] in ("<", "<=", ">", ">="):
        metric, = as_metrics(req[0])
        return Requirement(metric, req[1], float(req[2]), f"{metric.name}{req[1]}{req[2]}")
    raise InputError(f"requirement {req!r}: give 'KIND:VARIABLE<BOUND' or (metric, '<', bound)")


@dataclass
class _Space:
    names: list[str]
    lo: np.ndarray
    hi: np.ndarray
    log: np.ndarray

    def to_params(self, z: np.ndarray) -> dict[str, float]:
        z = np.clip(np.asarray(z, float), 0.0, 1.0)
        lin = self.lo + (self.hi - self.lo) * z
        lg = np.exp(np.log(np.where(self.log, self.lo, 1.0)) + z * np.log(np.where(self.log, self.hi / self.lo, 1.0)))
        return {n: float(v) for n, v in zip(self.names, np.where(self.log, lg, lin))}

    def to_unit(self, p: Mapping[str, float]) -> np.ndarray:
        v = np.array([float(p[n]) for n in self.names])
        lin = (v - self.lo) / (self.hi - self.lo)
        lg = np.log(np.where(self.log, v, 1.0) / np.where(self.log, self.lo, 1.0)) / \
            np.log(np.where(self.log, self.hi / self.lo, 2.0))
        return np.where(self.log, lg, lin)


def _space(params: Mapping[str, Any]) -> _Space:
    if not isinstance(params, Mapping) or not params:
        raise InputError("tune: params must map each tuned name to its range (lo, hi)")
    names, lo, hi = [], [], []
    for n, rng in params.items():
        try:
            a, b = (float(v) for v in rng)
        except (TypeError, ValueError):
            raise InputError(f"tune: parameter {n!r}: give its range as (lo, hi), got {rng!r}") from None
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise InputError(f"tune: parameter {n!r}: range ({a!r}, {b!r}) must be finite with lo < hi")
        names.append(str(n)); lo.append(a); hi.append(b)
    lo_a, hi_a = np.array(lo), np.array(hi)
    return _Space(names, lo_a, hi_a, (lo_a > 0) & (hi_a / np.where(lo_a > 0, lo_a, 1.0) >= 50.0))


@dataclass
class TuneResult:
    """What :func:`tune` found.

    Attributes
    ----------
    best : dict
        The best parameters.
    best_cost, initial_cost : float
        Cost at ``best`` and at ``x0``.
    x0 : dict
        The starting parameters.
    requirements : list of dict
        One row per objective and requirement: ``name``, ``bound`` (text),
        ``initial``, ``best`` (values at the tuning step), ``verified`` (list
        of values, one per verification step), ``met_initial``, ``met_tuned``
        (at the tuning step) and ``met`` (at the finest verification step;
        at the tuning step when there is none) (bools).
    history : list of dict
        Every evaluation in order: ``params``, ``cost``, ``values`` (metric
        values), ``cached``, ``phase`` (``"initial"``, ``"global"``, ``"polish"``).
    runs : int
        Co-simulations run (cached ones excluded).
    objective : str
        Name of the minimized metric (``"requirements"`` when none).
    step : float
        Communication step of the tuning runs, s.
    verify_steps : list of float
        Steps of the verification runs of ``best``, s, coarsest first.
    effort : list of dict
        Peak effort: one row per effort signal: ``name`` (``"unit.var"``),
        ``unit``, ``initial``, ``best``, ``verified`` (max ``|value|`` at x0,
        at best, at each verification step).
    verify_errors : list of str
        Why a verification run failed ("" when it ran).
    ranges : dict
        Tuned name -> ``(lo, hi)``.
    at_bound : dict
        Tuned name -> ``"lower"`` or ``"upper"`` for each best parameter within
        :data:`BOUND_FRACTION` of its range from that bound.
    stopped_by : str
        ``"SIGINT"`` (Ctrl-C) or ``"SIGTERM"`` when the tuning was stopped
        before its end: ``best`` is then the best point evaluated so far
        ("" when it ran to its end).
    """

    best: dict[str, float]
    best_cost: float
    initial_cost: float
    x0: dict[str, float]
    requirements: list[dict[str, Any]]
    history: list[dict[str, Any]] = field(repr=False)
    runs: int = 0
    objective: str = ""
    step: float = math.nan
    verify_steps: list[float] = field(default_factory=list)
    effort: list[dict[str, Any]] = field(default_factory=list)
    verify_errors: list[str] = field(default_factory=list)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    at_bound: dict[str, str] = field(default_factory=dict)
    stopped_by: str = ""

    @property
    def improvement(self) -> float:
        """``initial_cost / best_cost`` (inf when the best cost is 0)."""
        return self.initial_cost / self.best_cost if self.best_cost > 0 else math.inf

    @property
    def met(self) -> bool:
        """Whether every requirement is met at ``best`` at the finest verification step."""
        return all(r["met"] for r in self.requirements if r["bound"])

    @property
    def met_tuned(self) -> bool:
        """Whether every requirement is met at ``best`` at the tuning step."""
        return all(r["met_tuned"] for r in self.requirements if r["bound"])

    def table(self) -> str:
        """The requirement table (at x0, at best at the tuning step and at each
        verification step), the peak effort and the tuned parameters, as text."""
        steps = [f"{'tuned':>12}"] + [f"{'at ' + _seconds(h):>12}" for h in self.verify_steps]
        lines = [f"{'requirement':<36} {'initial':>12} " + " ".join(steps) + "  met"]
        for r in self.requirements:
            name = r["name"] + (f" {r['bound']}" if r["bound"] else " (minimized)")
            met = ("yes" if r["met"] else "NO") if r["bound"] else ""
            values = " ".join(f"{v:>12.5g}" for v in (r["best"], *r["verified"]))
            lines.append(f"{name:<36} {r['initial']:>12.5g} {values}  {met}")
        for e in self.effort:
            name = f"peak effort |{e['name']}|" + (f" [{e['unit']}]" if e["unit"] else "")
            values = " ".join(f"{v:>12.5g}" for v in (e["best"], *e["verified"]))
            lines.append(f"{name:<36} {e['initial']:>12.5g} {values}")
        lines.append(f"{'cost':<36} {self.initial_cost:>12.5g} {self.best_cost:>12.5g}")
        lines.append(f"{'parameter':<36} {'initial':>12} {'tuned':>12}  range")
        for n, v in self.best.items():
            lo, hi = self.ranges.get(n, (math.nan, math.nan))
            flag = f"  AT ITS {self.at_bound[n].upper()} BOUND" if n in self.at_bound else ""
            lines.append(f"{n:<36} {self.x0[n]:>12.5g} {v:>12.5g}  [{lo:g}, {hi:g}]{flag}")
        if self.verify_steps:
            lines.append(f"(tuned at the step {_seconds(self.step)}; verified at "
                         f"{', '.join(_seconds(h) for h in self.verify_steps)}; 'met' is at "
                         f"{_seconds(self.verify_steps[-1])})")
        else:
            lines.append(f"(tuned at the step {_seconds(self.step)}; not verified at a finer step)")
        return "\n".join(lines)

    def summary(self) -> list[str]:
        """The verdict in sentences: requirements at the tuning and verification
        steps, parameters at a bound, peak effort."""
        out = []
        missed = [r for r in self.requirements if r["bound"] and not r["met"]]
        if not self.verify_steps:
            out.append(f"requirements {'met' if self.met else 'NOT met'} at the tuning step {_seconds(self.step)} "
                       "(not verified at a finer step)")
        elif self.met:
            out.append(f"requirements met at the tuning step {_seconds(self.step)} and at "
                       f"{', '.join(_seconds(h) for h in self.verify_steps)}")
        else:
            what = "; ".join(f"{r['name']} = {r['verified'][-1]:.5g} (needs {r['bound']})" for r in missed)
            where = _seconds(self.verify_steps[-1])
            if self.met_tuned:
                out.append(f"requirements met at the tuning step {_seconds(self.step)} but NOT at {where}: {what}; "
                           "the tuned parameters rely on the tuning step's sampling: tune at a finer step")
            else:
                out.append(f"requirements NOT met at {where}: {what}")
        for e in self.verify_errors:
            if e:
                out.append(f"verification run failed: {e}")
        for n, side in self.at_bound.items():
            lo, hi = self.ranges[n]
            out.append(f"{n} = {self.best[n]:.5g} is within {100 * BOUND_FRACTION:g} % of its {side} bound "
                       f"{lo if side == 'lower' else hi:g}: the best may lie outside the range; widen it")
        if self.effort:
            where = _seconds(self.verify_steps[-1]) if self.verify_steps else _seconds(self.step)
            out.append(f"peak effort at {where}: " + ", ".join(
                f"{e['name']} {(e['verified'] or [e['best']])[-1]:.4g}" + (f" {e['unit']}" if e["unit"] else "")
                for e in self.effort))
        return out

    def plot_history(self, path=None):
        """Cost of every evaluation and the best so far (log scale); saved to ``path`` when given."""
        import matplotlib.pyplot as plt
        costs = np.array([h["cost"] for h in self.history])
        fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
        k = np.arange(1, len(costs) + 1)
        ax.semilogy(k, costs, ".", color="0.6", label="evaluation")
        ax.semilogy(k, np.minimum.accumulate(costs), "C0", label="best so far")
        ax.set(xlabel="evaluation", ylabel="cost", title=f"tuning: {self.objective}")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig


def _seconds(h: float) -> str:
    """A step as text: ``0.002 s``."""
    return f"{h:g} s"


class _Evaluator:
    """Batches of parameter sets -> costs, through ``sweep`` on one executor."""

    def __init__(self, target, space: _Space, objective: Metric | None, reqs: list[Requirement], kw: dict,
                 executor, max_runs: int, bar, reported: Sequence[Metric] = ()) -> None:
        self.target, self.space, self.objective, self.reqs, self.kw = target, space, objective, reqs, kw
        self.executor, self.max_runs, self.bar = executor, max_runs, bar
        self.history: list[dict[str, Any]] = []
        self.stopped_by = ""
        self.memo: dict[tuple, dict[str, Any]] = {}
        self.runs = 0
        self.phase = "initial"
        self.metrics = ([objective] if objective else []) + [r.metric for r in reqs if r.metric is not objective]
        self.metric_map: dict[str, Metric] = {}
        for m in (*self.metrics, *reported):
            self.metric_map.setdefault(m.name, m)

    @property
    def left(self) -> int:
        return self.max_runs - len(self.history)

    def cost(self, values: Mapping[str, float], ok: bool) -> float:
        if not ok:
            return FAILED_COST
        obj = values.get(self.objective.name, math.nan) if self.objective else 0.0
        if not math.isfinite(obj):
            return FAILED_COST
        # a requirement that cannot be evaluated (an unsettled response) counts as missed by UNKNOWN_MISS,
        # so the objective still orders such points and the search can climb out of them
        penalty = sum(r.violation(v) if math.isfinite(v := values.get(r.metric.name, math.nan)) else UNKNOWN_MISS
                      for r in self.reqs)
        return float(obj + 1e3 * (1.0 + abs(obj)) * penalty) if penalty else float(obj)

    def batch(self, zs: Sequence[np.ndarray]) -> list[float]:
        """Costs of points of the unit cube."""
        return self.batch_params([self.space.to_params(z) for z in zs])

    def batch_params(self, params: Sequence[dict[str, float]]) -> list[float]:
        """Costs of parameter sets; a set equal to an earlier one to 12 digits
        (the unit-cube round trip of x0) is not run again."""
        from .study import sweep
        keys = [tuple(float(f"{v:.12g}") for v in p.values()) for p in params]
        todo = [p for k, p in dict(zip(keys, params)).items() if k not in self.memo]
        if todo:
            # a single run (the polish) runs here: a round trip to a worker costs more than it saves
            study = sweep(self.target, todo, metrics=self.metric_map, progress=False,
                          executor=self.executor if len(todo) > 1 else "serial", **self.kw)
            if study.interrupted:  # Ctrl-C or SIGTERM: keep the finished runs, stop the search
                self.stopped_by = study.stopped_by
                kept = [(p, r) for p, r in zip(todo, study.rows) if r["status"] != "cancelled"]
                todo, study.rows = [p for p, _ in kept], [r for _, r in kept]
            for row, p in zip(study.rows, todo):
                values = {m: float(row.get(m, math.nan)) for m in self.metric_map}
                cost = self.cost(values, row["status"] == "ok")
                self.memo[tuple(float(f"{v:.12g}") for v in p.values())] = dict(
                    values=values, cost=cost, cached=bool(row.get("cached")), error=row.get("error") or "")
                self.runs += 0 if row.get("cached") else 1
        out = []
        for k, p in zip(keys, params):
            e = self.memo.get(k)
            if e is None:  # cancelled
                raise _Stopped
            self.history.append(dict(params=dict(p), cost=e["cost"], values=e["values"], cached=e["cached"],
                                     phase=self.phase, error=e["error"]))
            out.append(e["cost"])
            if self.bar is not None:
                self.bar.update(1)
        if self.bar is not None:
            best = min(h["cost"] for h in self.history)
            self.bar.set_postfix_str(f"best cost {best:.5g}", refresh=False)
        return out


def tune(target: Any, params: Mapping[str, tuple[float, float]], *, stop_time: float,
         x0: Mapping[str, float] | None = None, objective: Any = None, constraints: Sequence[Any] = (),
         step: float | None = None, seed: int | None = 0, executor: Any = None, workers: int | None = None,
         max_runs: int = 200, cache: str | None = None, popsize: int = 6, polish: bool = True,
         record: str | Sequence[str] = "outputs", algorithm: str = "jacobi", timeout: float | None = None,
         progress: bool = True, verify_steps: Sequence[float] | None = None,
         effort: Sequence[str] | None = None) -> TuneResult:
    """Tune parameters of ``target`` against requirements on real closed-loop runs.

    Parameters
    ----------
    target : callable, str or path
        Any :func:`~mbfmu.studies.sweep` target; typically a function building
        the closed-loop :class:`mbfmu.cosim.System` from the tuned parameters
        (keyword arguments).
    params : mapping
        Tuned name -> ``(lo, hi)`` range (SI units of the parameter).
    stop_time : float
        End of each run, s.
    x0 : mapping, optional
        Starting parameters (default the middle of each range, geometric for
        log-scaled ones); its cost is ``initial_cost``.
    objective : str, Metric or callable, optional
        Metric to minimize (``"itae:arm.q[2]:1.0"``); default none (find a
        point meeting the constraints).
    constraints : sequence
        Requirements ``"KIND:VARIABLE<BOUND"`` (``%`` or ``s`` may follow
        the bound) or ``(metric, op, bound)`` with a metric spec or a function
        of the run's Result.
    step : float, optional
        Communication step of the tuning runs, s (default the target's own).
    seed : int, optional
        Seed of the global search (same seed, same result, on any executor).
    executor, workers
        Where runs execute (as :func:`~mbfmu.studies.sweep`): ``None``/``"local"``,
        ``"serial"``, a number of processes, ``"dask://HOST:PORT"``, a Client.
    max_runs : int
        Largest number of cost evaluations (global search and polish).
    cache : str or Path, optional
        Study cache folder: finished runs are kept there and not redone.
    popsize : int
        Population per parameter of differential evolution.
    polish : bool
        Polish the best point with Nelder-Mead.
    record, algorithm, timeout
        As :func:`~mbfmu.studies.sweep`.
    progress : bool
        Progress bar of the evaluations with the best cost so far.
    verify_steps : sequence of float, optional
        Communication steps, s, at which the best parameters are run again
        (one run each, beyond ``max_runs``); default one fifth of the tuning
        step; ``[]``: none. The requirements count as met when they hold at
        the finest of them.
    effort : sequence of str, optional
        Signals (``"unit.var"``) whose peak ``|value|`` is reported as the
        effort; default the plant inputs the controller drives
        (:func:`mbfmu.studies.effort.effort_signals`).

    Returns
    -------
    TuneResult
    """
    from scipy.optimize import differential_evolution, minimize
    from tqdm import tqdm

    from .executors import make_executor

    space = _space(params)
    if not (isinstance(max_runs, int) and max_runs >= 2):
        raise InputError(f"tune: max_runs = {max_runs!r} must be an integer >= 2")
    obj = as_metrics(objective)[0] if objective is not None else None
    reqs = [parse_requirement(c) for c in ([constraints] if isinstance(constraints, str) else constraints)]
    if obj is None and not reqs:
        raise InputError("tune: give an objective to minimize or requirements to meet (or both)")
    if x0 is None:
        start = {n: float(v) for n, v in space.to_params(np.full(len(space.names), 0.5)).items()}
    else:
        unknown = [n for n in x0 if n not in space.names]
        if unknown or set(space.names) - set(x0):
            raise InputError(f"tune: x0 must give exactly the tuned parameters {space.names}, got {list(x0)}")
        start = {n: float(x0[n]) for n in space.names}
        bad = [n for n, lo, hi in zip(space.names, space.lo, space.hi) if not lo <= start[n] <= hi]
        if bad:
            raise InputError(f"tune: x0 of {bad} is outside its range")
    loop = _Loop(target, start, stop_time, step, record, algorithm, timeout, verify_steps, effort)
    kw = dict(stop_time=stop_time, step=step, cache=cache, record=loop.record, algorithm=algorithm, timeout=timeout)
    ex = make_executor(executor, workers, 2)
    bar = tqdm(total=max_runs, unit="run", desc="tune", disable=not progress, dynamic_ncols=True)
    ev = _Evaluator(target, space, obj, reqs, kw, ex, max_runs, bar, loop.metrics)
    try:
        z0 = space.to_unit(start)
        initial_cost, = ev.batch_params([start])
        n = len(space.names)
        pop = max(5, popsize * n)
        polish_runs = min(max(10, 10 * n), (max_runs - 1) // 3) if polish else 0
        generations = max(0, (max_runs - 1 - polish_runs) // pop - 1)
        ev.phase = "global"
        if generations >= 1:
            def batch_map(fn, zs):
                zs = list(zs)
                return ev.batch(zs)
            de = differential_evolution(lambda z: ev.batch([z])[0], [(0.0, 1.0)] * n, seed=seed,
                                        popsize=max(1, pop // n), init="latinhypercube", maxiter=generations,
                                        polish=False, updating="deferred", workers=batch_map, x0=z0, tol=1e-8)
            z_best = de.x
        else:
            z_best = z0
        ev.phase = "polish"
        if polish and ev.left > 0:
            best_h = min(ev.history, key=lambda h: h["cost"])
            z_best = space.to_unit(best_h["params"])
            simplex = [z_best] + [np.clip(z_best + 0.05 * e * (1 if z_best[k] < 0.5 else -1), 0, 1)
                                  for k, e in enumerate(np.eye(n))]
            minimize(lambda z: ev.batch([z])[0], z_best, method="Nelder-Mead", bounds=[(0.0, 1.0)] * n,
                     options=dict(maxfev=ev.left, initial_simplex=np.array(simplex), xatol=1e-4, fatol=1e-9))
    except _Stopped:
        if not ev.history:
            raise _interrupted(ev.stopped_by) from None
        warnings.warn(f"tune {'terminated (SIGTERM)' if ev.stopped_by == 'SIGTERM' else 'interrupted'} after "
                      f"{len(ev.history)} evaluations: the best point so far is reported", stacklevel=2)
    finally:
        bar.close()
        if ex is not executor:
            ex.close()
    best_h = min(ev.history, key=lambda h: h["cost"])
    first = ev.history[0]
    # a tuning stopped by Ctrl-C or SIGTERM ends now: its best point is reported unverified
    verify_at = [] if ev.stopped_by else list(loop.verify_steps)
    checks = [_verify(target, best_h["params"], h, ev.metric_map, kw) for h in verify_at]
    verified = [values for values, _ in checks]

    def row(name: str) -> dict[str, Any]:
        return dict(name=name, initial=first["values"][name], best=best_h["values"][name],
                    verified=[v[name] for v in verified])
    rows = []
    if obj is not None:
        rows.append(dict(row(obj.name), bound="", met_initial=True, met_tuned=True, met=True))
    for r in reqs:
        x = row(r.metric.name)
        rows.append(dict(x, bound=f"{r.op} {r.bound:g}", met_initial=r.met(x["initial"]), met_tuned=r.met(x["best"]),
                         met=r.met((x["verified"] or [x["best"]])[-1])))
    efforts = [dict(row(m.name), name=m.variable, unit=loop.units.get(m.variable, "")) for m in loop.metrics]
    z = space.to_unit(best_h["params"])
    at_bound = {n: ("lower" if z[k] <= BOUND_FRACTION else "upper") for k, n in enumerate(space.names)
                if z[k] <= BOUND_FRACTION or z[k] >= 1.0 - BOUND_FRACTION}
    return TuneResult(best=dict(best_h["params"]), best_cost=best_h["cost"], initial_cost=initial_cost,
                      x0=start, requirements=rows, history=ev.history, runs=ev.runs,
                      objective=obj.name if obj else "requirements", step=loop.step,
                      verify_steps=verify_at, effort=efforts, verify_errors=[e for _, e in checks],
                      ranges={n: (float(a), float(b)) for n, a, b in zip(space.names, space.lo, space.hi)},
                      at_bound=at_bound, stopped_by=ev.stopped_by)


def _verify(target, params: Mapping[str, float], step: float, metrics: Mapping[str, Metric],
            kw: Mapping[str, Any]) -> tuple[dict[str, float], str]:
    """The metrics of one run of ``params`` at the communication step ``step``: ``(values, error)``."""
    from .study import sweep
    study = sweep(target, [dict(params)], metrics=metrics, progress=False, executor="serial", **{**kw, "step": step})
    row = study.rows[0]
    values = {m: float(row.get(m, math.nan)) if row["status"] == "ok" else math.nan for m in metrics}
    error = "" if row["status"] == "ok" else f"at {_seconds(step)}: {row.get('error') or row['status']}"
    return values, error


class _Loop:
    """What ``tune`` learns of the target before the search: the tuning step,
    the verification steps, the effort signals (with units and ``peak``
    metrics) and what to record so that they are."""

    def __init__(self, target, start: Mapping[str, float], stop_time: float, step: float | None, record,
                 algorithm: str, timeout: float | None, verify_steps, effort) -> None:
        from .study import _options
        from .targets import resolve
        opts = _options(stop_time, step, 0.0, record, algorithm, timeout)
        tgt = resolve(target)
        runner = tgt.runner()
        try:  # a function target builds its system here once, to find its step and effort signals
            system = runner.system_for(start)
            self.step = float(runner.step_for(start, opts))
        except MbfmuError:
            raise
        except Exception as exc:
            raise InputError(f"tune: the target {tgt.label!r} could not build its system at {dict(start)}: "
                             f"{type(exc).__name__}: {exc}") from None
        self.verify_steps = self._steps(verify_steps)
        if effort is None:
            from .effort import effort_signals
            signals = effort_signals(system, list(start)) if system is not None else []
        else:
            signals = [effort] if isinstance(effort, str) else [str(e) for e in effort]
        self.units: dict[str, str] = {}
        self.record = record
        if system is not None and signals:
            from ..cosim.master.run import recorded_variables
            from .effort import effort_units
            self.units = effort_units(system, signals)
            if record != "all":
                names = [f"{u.name}.{n}" for u, n in recorded_variables(system, record)]
                self.record = names + [n for n in signals if n not in names]
        self.metrics = [parse_metric(f"peak:{n}") for n in signals]

    def _steps(self, steps) -> list[float]:
        if steps is None:
            return [self.step * VERIFY_FRACTION]
        out = []
        for h in ([steps] if isinstance(steps, (int, float)) else steps):
            if not (isinstance(h, (int, float)) and math.isfinite(h) and h > 0):
                raise InputError(f"tune: verification step {h!r} must be a positive number of seconds")
            out.append(float(h))
        return sorted(set(out), reverse=True)



class _Stopped(Exception):
    """The runs of a batch were cancelled (Ctrl-C, SIGTERM): the search ends here."""


def _interrupted(kind: str) -> RunInterrupted:
    exc = RunInterrupted(f"tune {'terminated (SIGTERM)' if kind == 'SIGTERM' else 'interrupted (Ctrl-C)'} "
                         "before its first run finished")
    exc.kind = kind or "SIGINT"
    return exc
