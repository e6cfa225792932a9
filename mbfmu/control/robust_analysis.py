"""Robustness under uncertainty: Monte Carlo on the linearized loop.

:func:`robustness` draws parameter sets from distributions
(:class:`~mbfmu.studies.Normal`, :class:`~mbfmu.studies.Uniform`, seeded, as a
study does), builds the linear loop of each, and reports, per sample, the
margins at a loop break and the closed-loop pole locations, then the worst
case and percentiles over the samples. Samples run on the study executors:
in this process, in local worker processes, or on a Dask cluster.

Two kinds of subject:

* a function of the parameters returning a :class:`mbfmu.cosim.System`: the
  loop is :func:`~mbfmu.control.system_linearization.linearize_system` of it
  (sampled or continuous), margins from
  :func:`~mbfmu.control.system_linearization.loop_analysis` at ``open_at``;
* a plant (or a library plant name) with a state-feedback ``gain``: the
  plant is rebuilt with each parameter set, held at ``state`` by
  :func:`~mbfmu.control.input_trim.trim_inputs`, linearized exactly, and
  closed by ``u = -K x`` (zero-order hold at ``dt``, or continuous); poles only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InputError, require_extra

#: the figures of each sample; the worst case is the minimum of the margins, the maximum of the pole figure
MARGINS = ("gain_margin", "phase_margin", "delay_margin", "disk_margin")
POLE_FIGURE = "pole_figure"


@dataclass
class RobustnessResult:
    """Margins and poles over the samples.

    Attributes
    ----------
    rows : list of dict
        One per sample: the parameters, the margins (when a loop was broken),
        ``pole_figure`` (spectral radius for a sampled loop, largest real part
        [1/s] for a continuous one), ``stable`` and ``poles`` (the closed-loop
        poles); with margins also ``conditionally_stable`` (a gain margin
        below 1) and ``margins_checked`` (every crossover holds its definition).
    parameters : list of str
        The sampled parameter names.
    sampled : bool
        Whether the loops are sampled (the pole figure is then a spectral radius).
    figures : list of str
        The figures computed per sample (margins, ``pole_figure``).
    unit_models : dict
        Unit (or plant) name -> where its linear model came from (the
        distinct sources over the samples, joined by ``" / "``).
    """

    rows: list[dict[str, Any]]
    parameters: list[str]
    sampled: bool
    figures: list[str] = field(default_factory=list)
    unit_models: dict[str, str] = field(default_factory=dict)

    def values(self, figure: str) -> np.ndarray:
        """The figure over the samples (NaN where it could not be computed)."""
        if figure not in self.figures:
            raise InputError(f"no figure {figure!r}; known: {', '.join(self.figures)}")
        return np.array([r.get(figure, math.nan) for r in self.rows], float)

    def percentiles(self, figure: str, q: Sequence[float] = (5, 50, 95)) -> dict[float, float]:
        """Percentiles of a figure (NaN samples left out)."""
        v = self.values(figure)
        v = v[np.isfinite(v)]
        return {float(p): float(np.percentile(v, p)) if v.size else math.nan for p in q}

    def worst(self, figure: str) -> dict[str, Any]:
        """The sample with the smallest margin, or with the largest pole figure."""
        v = self.values(figure)
        if not np.isfinite(v).any():
            raise InputError(f"{figure}: no sample has a finite value")
        k = int(np.nanargmax(v) if figure == POLE_FIGURE else np.nanargmin(v))
        return dict(self.rows[k], sample=k)

    @property
    def stable_fraction(self) -> float:
        """Fraction of the samples whose closed loop is stable."""
        return float(np.mean([bool(r["stable"]) for r in self.rows]))

    def summary(self) -> str:
        """Worst case and 5/50/95 percentiles of each figure, as text."""
        stable = f"stable: {100 * self.stable_fraction:.1f} %"
        lines = [f"{len(self.rows)} samples of {', '.join(self.parameters)}; {stable}"]
        lines += [f"model of {name}: {source}" for name, source in self.unit_models.items()]
        lines += [f"{'figure':<16} {'worst':>12} {'p5':>12} {'p50':>12} {'p95':>12}"]
        for f in self.figures:
            p = self.percentiles(f)
            w = self.worst(f)[f] if np.isfinite(self.values(f)).any() else math.nan
            lines.append(f"{f:<16} {w:>12.5g} {p[5.0]:>12.5g} {p[50.0]:>12.5g} {p[95.0]:>12.5g}")
        conditional = sum(bool(r.get("conditionally_stable")) for r in self.rows)
        if conditional:
            lines.append(f"{conditional} of {len(self.rows)} samples are conditionally stable (a gain margin below 1)")
        unchecked = sum(r.get("margins_checked") is False for r in self.rows)
        if unchecked:
            lines.append(f"CHECK FAILED: in {unchecked} samples a crossover does not hold |L| = 1 or phase -180 deg "
                         "to 1e-6; their margins are not reliable")
        return "\n".join(lines)


def _pole_figure(poles: np.ndarray, sampled: bool) -> tuple[float, bool]:
    if poles.size == 0:
        return (0.0 if sampled else -math.inf), True
    if sampled:
        r = float(np.abs(poles).max())
        return r, r < 1.0
    m = float(poles.real.max())
    return m, m < 0.0


class _SystemSample:
    """One sample of a system-building function (picklable by cloudpickle)."""

    def __init__(self, build, open_at, at, sampled, step):
        self.build, self.open_at, self.at, self.sampled, self.step = build, open_at, at, sampled, step

    def __call__(self, values: Mapping[str, Any]) -> dict[str, Any]:
        import warnings
        from .system_linearization import linearize_system, loop_analysis
        system = self.build(**values)
        out: dict[str, Any] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # python-control's margin-method notes
            if self.open_at:
                m = loop_analysis(system, self.open_at, self.at, sampled=self.sampled, step=self.step).margins()
                out.update({k: m[k] for k in MARGINS})
                out["conditionally_stable"], out["margins_checked"] = m["conditionally_stable"], m["checked"]
            closed = linearize_system(system, self.at, sampled=self.sampled, step=self.step)
            poles = np.asarray(closed.poles())
        out[POLE_FIGURE], out["stable"] = _pole_figure(poles, self.sampled)
        out["unit_models"] = dict(closed.unit_models)
        out["poles"] = poles
        return out


class _PlantSample:
    """One sample of a plant under state feedback."""

    def __init__(self, plant_cls, base: Mapping[str, float], gain, dt, state, u):
        self.plant_cls, self.base, self.gain, self.dt, self.state, self.u = plant_cls, dict(base), gain, dt, state, u

    def __call__(self, values: Mapping[str, Any]) -> dict[str, Any]:
        import control as ct
        from ..plant.library import construct
        from .input_trim import trim_inputs
        from .linearization import linearize
        plant = construct(self.plant_cls, {**self.base, **values}, "robustness sample")
        hold = trim_inputs(plant, state=self.state, u=self.u)
        lin = linearize(plant, hold.x, hold.u)
        K = np.asarray(self.gain, float)
        if self.dt:
            d = ct.c2d(ct.ss(lin.A, lin.B, np.eye(lin.nstates), 0), self.dt, "zoh")
            A = d.A - d.B @ K
        else:
            A = lin.A - lin.B @ K
        poles = np.linalg.eigvals(A)
        fig, stable = _pole_figure(poles, bool(self.dt))
        from .fmu_model import SOURCE_PLANT
        return {POLE_FIGURE: fig, "stable": stable, "poles": poles,
                "unit_models": {plant.name: f"{SOURCE_PLANT} ({lin.linearization.method})"}}


def _map(fn: Callable[[Any], Any], items: list, executor: Any, workers: int | None) -> list:
    """``[fn(i) for i in items]`` on the chosen executor, in order."""
    if executor in (None, "serial") or len(items) <= 1:
        return [fn(i) for i in items]
    if isinstance(executor, str) and (executor.startswith("dask://") or executor.startswith("tcp://")):
        distributed = require_extra("distributed", "a Dask executor")
        with distributed.Client(executor.replace("dask://", "tcp://"), timeout=30) as client:
            return client.gather(client.map(fn, items, pure=False))
    if type(executor).__name__ == "Client" and hasattr(executor, "map"):
        return executor.gather(executor.map(fn, items, pure=False))
    if executor == "local" or (isinstance(executor, int) and not isinstance(executor, bool)):
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

        import cloudpickle
        n = executor if isinstance(executor, int) else (workers or os.cpu_count() or 1)
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        payload = cloudpickle.dumps(fn)
        with ProcessPoolExecutor(max_workers=max(1, n), mp_context=multiprocessing.get_context(method)) as pool:
            return list(pool.map(_call_pickled, [payload] * len(items), items))
    raise InputError(f"executor {executor!r}: use None or 'serial', 'local', a number of processes, "
                     "'dask://HOST:PORT' or a distributed.Client")


def _call_pickled(payload: bytes, item: Any) -> Any:
    import cloudpickle
    return cloudpickle.loads(payload)(item)


def robustness(subject: Any, params: Mapping[str, Any], n: int = 100, *, seed: int | None = 0,
               open_at: Sequence[str] | str = (), at: float | None = None, sampled: bool = True,
               step: float | None = None, gain: Any = None, dt: float | None = None,
               state: Mapping[str, float] | None = None, u: Mapping[str, float] | None = None,
               executor: Any = None, workers: int | None = None, sampling: str = "random") -> RobustnessResult:
    """Monte Carlo of margins and closed-loop poles of a linearized loop.

    Parameters
    ----------
    subject : callable, Plant or str
        A function of the parameters (keyword arguments) returning a
        :class:`mbfmu.cosim.System`; or a plant (a library plant name) closed
        by the state-feedback ``gain``.
    params : mapping
        Parameter name -> distribution (:class:`~mbfmu.studies.Normal`,
        :class:`~mbfmu.studies.Uniform`), list of values or value (SI units).
    n : int
        Samples (per grid point when lists are given too).
    seed : int, optional
        Seed of the draws.
    open_at : str or sequence of str
        System subject: the connection where the margins are taken (none: poles only).
    at, sampled, step
        System subject: as :func:`~mbfmu.control.system_linearization.linearize_system`.
    gain : array_like (m, n), optional
        Plant subject: state-feedback gain ``u = -K (x - x0)``.
    dt : float, optional
        Plant subject: sample time of the feedback (zero-order hold), s;
        ``None`` for continuous feedback.
    state, u : mapping, optional
        Plant subject: the held state and fixed inputs of the operating point.
    executor, workers
        ``None``/``"serial"``, ``"local"`` or a number of processes,
        ``"dask://HOST:PORT"`` or a ``distributed.Client``.
    sampling : {"random", "lhs"}

    Returns
    -------
    RobustnessResult
    """
    from ..plant import Plant
    from ..studies.params import runs
    samples = runs(params, samples=n, seed=seed, sampling=sampling)
    if callable(subject) and not isinstance(subject, Plant):
        fn = _SystemSample(subject, [open_at] if isinstance(open_at, str) else list(open_at), at, sampled, step)
        is_sampled = sampled
        figures = (list(MARGINS) if open_at else []) + [POLE_FIGURE]
    else:
        from .input_trim import plant_of
        plant = plant_of(subject)
        if gain is None:
            raise InputError("robustness of a plant needs the state-feedback gain (gain=K)")
        unknown = [k for k in params if k not in {p.name for p in plant.parameters}]
        if unknown:
            raise InputError(f"plant {plant.name!r} has no parameters {unknown}")
        fn = _PlantSample(type(plant), {p.name: p.start for p in plant.parameters}, np.asarray(gain, float).tolist(),
                          dt, dict(state or {}) or None, u)
        is_sampled = bool(dt)
        figures = [POLE_FIGURE]
    outs = _map(fn, samples, executor, workers)
    sources: dict[str, list[str]] = {}
    for out in outs:
        for name, source in out.pop("unit_models", {}).items():
            if source not in sources.setdefault(name, []):
                sources[name].append(source)
    rows = [dict(values, **out) for values, out in zip(samples, outs)]
    return RobustnessResult(rows, list(params), is_sampled, figures,
                            {name: " / ".join(found) for name, found in sources.items()})
