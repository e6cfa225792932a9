"""Scalar metrics of a run's result: signal statistics, step-response figures, user functions.

A metric is written ``KIND:VARIABLE`` (``"final:theta"``, ``"settling_time:y"``);
``VARIABLE`` is a recorded column (``"plant.y"``) or its name without the unit
prefix when that is unique (``"y"``). Kinds:

* ``final``, ``initial``, ``min``, ``max``, ``mean`` (time average, trapezoidal),
  ``rms`` (root of the time average of the square), ``peak`` (max ``|y|``):
  in the variable's unit;
* step-response figures from :func:`control.step_info`, of the response
  relative to its value at the start of the run (``y - y(t0)``, time from
  ``t0``): ``rise_time`` (10-90 %), ``settling_time`` (2 % band),
  ``peak_time`` [s]; ``overshoot``, ``undershoot`` [%]. The steady state is
  the value at the end of the run, or the one given as ``KIND:VARIABLE:FINAL``
  (``"overshoot:y:1.0"``: the response of a step to 1.0). A response that has
  not stayed inside the settling band for the last :data:`SETTLED_FRACTION` of
  the run is *not settled*: its settling time is NaN and the row's ``error``
  says so (a time at the run's end would look like an answer).
* integral criteria of the error ``e = y - y_final`` (the same steady state,
  time ``tau`` from the start of the run), trapezoidal: ``iae`` (``int |e|``),
  ``ise`` (``int e^2``), ``itae`` (``int tau |e|``).

A user metric is a function ``f(result) -> float`` (or a mapping of names to
floats, one column each) of the run's :class:`mbfmu.cosim.Result`; its column
is the function's name, or the key given in a ``{name: metric}`` mapping.
Metrics are evaluated where the study was started, from the stored results,
so adding one to a cached study does not simulate again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InputError, UnknownNameError, unknown_name
from ..plant.signals import current_name

STATS = ("final", "initial", "min", "max", "mean", "rms", "peak")
STEP = {"rise_time": "RiseTime", "settling_time": "SettlingTime", "peak_time": "PeakTime",
        "overshoot": "Overshoot", "undershoot": "Undershoot"}
#: integral error criteria of ``e = y - y_final`` over the run (final: the last value or KIND:VARIABLE:FINAL)
INTEGRAL = ("iae", "ise", "itae")
KINDS = STATS + tuple(STEP) + INTEGRAL
#: a response counts as settled only if it stays in the band for this fraction of the run at its end
SETTLED_FRACTION = 0.1


class NotSettled(ValueError):
    """A settling time asked of a response that has not settled within the run."""


def column(result: Any, name: str) -> np.ndarray:
    """Column ``name`` of ``result``: exact, or the unique ``"unit.name"``."""
    return result.data[resolve_column(name, result.names)]


def resolve_column(name: str, names: Sequence[str], context: str = "") -> str:
    """The recorded column ``name`` stands for: itself, or the unique
    ``"unit.name"`` (a renamed name such as ``qd[1]`` is accepted, with a
    warning); raises :class:`UnknownNameError`, prefixed by ``context``."""
    name = current_name(name, set(names) | {n.split(".", 1)[-1] for n in names})
    if name in names:
        return name
    hits = [n for n in names if n.split(".", 1)[-1] == name]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise UnknownNameError(f"{context}variable {name!r} is ambiguous: {', '.join(hits)}")
    raise unknown_name(f"{context}no recorded variable {name!r}", name, (n for n in names if n != "time"), "recorded")


@dataclass(frozen=True)
class Metric:
    """A named scalar of a result (see the module docstring).

    Parameters
    ----------
    name : str
        Column name of the metric in the study's table.
    fn : callable
        ``fn(result) -> float`` (in the unit of what it measures), or a mapping
        ``{suffix: float}`` giving the columns ``name.suffix``.
    """

    name: str
    fn: Callable[[Any], Any]
    variable: str | None = None  # the recorded variable a KIND:VARIABLE metric reads
    kind: str | None = None      # its KIND

    def unit(self, names: Sequence[str], units: Mapping[str, str]) -> str:
        """The metric's unit, from the recorded ``units`` (column -> unit) of
        ``names``: a time for the step times, % for over/undershoot, the
        variable's unit for the statistics, "" for a user function."""
        if self.kind in ("rise_time", "settling_time", "peak_time"):
            return "s"
        if self.kind in ("overshoot", "undershoot"):
            return "%"
        if self.kind in INTEGRAL:
            return ""  # the variable's unit times s (iae), squared times s (ise), times s^2 (itae)
        if self.variable is None:
            return ""
        col = self.variable if self.variable in names else next(
            (n for n in names if n.split(".", 1)[-1] == self.variable), None)
        return units.get(col, "") if col else ""

    def __call__(self, result: Any) -> dict[str, float]:
        value = self.fn(result)
        if isinstance(value, Mapping):
            return {f"{self.name}.{k}": float(v) for k, v in value.items()}
        return {self.name: float(value)}


def _stat(kind: str, t: np.ndarray, y: np.ndarray) -> float:
    if kind == "final":
        return float(y[-1])
    if kind == "initial":
        return float(y[0])
    if kind == "min":
        return float(np.min(y))
    if kind == "max":
        return float(np.max(y))
    if kind == "peak":
        return float(np.max(np.abs(y)))
    span = t[-1] - t[0]
    if span <= 0:
        return float(y[0]) if kind == "mean" else float(abs(y[0]))
    if kind == "mean":
        return float(np.trapezoid(y, t) / span)
    return float(math.sqrt(np.trapezoid(y * y, t) / span))


def step_info(t: np.ndarray, y: np.ndarray, final: float | None = None, settling: float = 0.02,
              rise: tuple[float, float] = (0.1, 0.9)) -> dict:
    """:func:`control.step_info` of ``y(t)`` taken relative to ``y(t0)``, times from ``t0``.

    Parameters
    ----------
    t, y : ndarray
        Time [s] and response.
    final : float, optional
        Steady-state value of ``y`` (default: its last value).
    settling : float
        Settling band, a fraction of the step.
    rise : (float, float)
        Rise-time limits, fractions of the step.
    """
    import control
    dy = np.asarray(y, float) - y[0]
    step = (dy[-1] if final is None else float(final) - y[0])
    if not np.isfinite(step) or step == 0.0:
        return {k: math.nan for k in STEP.values()}
    return control.step_info(dy, np.asarray(t, float) - t[0], yfinal=step, SettlingTimeThreshold=settling,
                             RiseTimeLimits=rise)


def integral_error(kind: str, t: np.ndarray, y: np.ndarray, final: float | None = None) -> float:
    """``iae``, ``ise`` or ``itae`` of ``e = y - final`` (default the last value of ``y``), time from ``t[0]``.

    Parameters
    ----------
    kind : {"iae", "ise", "itae"}
    t, y : ndarray
        Time [s] and signal.
    final : float, optional
        The value ``y`` should reach.
    """
    t = np.asarray(t, float)
    e = np.asarray(y, float) - (y[-1] if final is None else float(final))
    f = {"iae": np.abs(e), "ise": e * e, "itae": (t - t[0]) * np.abs(e)}[kind]
    return float(np.trapezoid(f, t))


def parse_metric(spec: str) -> Metric:
    """A :class:`Metric` from ``"KIND:VARIABLE"`` (step figures: ``"KIND:VARIABLE[:FINAL]"``)."""
    kind, sep, var = str(spec).partition(":")
    kind, var = kind.strip(), var.strip()
    if not sep or not var or kind not in KINDS:
        raise InputError(f"metric {spec!r}: expected KIND:VARIABLE with KIND one of {', '.join(KINDS)}")
    final = None
    if kind in STEP and var.count(":") == 1:
        var, text = (p.strip() for p in var.split(":"))
        try:
            final = float(text)
        except ValueError:
            raise InputError(f"metric {spec!r}: the steady-state value {text!r} is not a number") from None

    if kind in (*STEP, *INTEGRAL) and var.count(":") == 1 and final is None:
        var, text = (p.strip() for p in var.split(":"))
        try:
            final = float(text)
        except ValueError:
            raise InputError(f"metric {spec!r}: the steady-state value {text!r} is not a number") from None
    if kind in STATS:
        def fn(result: Any) -> float:
            return _stat(kind, result.time, column(result, var))
    elif kind in INTEGRAL:
        def fn(result: Any) -> float:
            return integral_error(kind, result.time, column(result, var), final)
    elif kind == "settling_time":
        def fn(result: Any) -> float:
            t = result.time
            ts = float(step_info(t, column(result, var), final)[STEP[kind]])
            if not math.isfinite(ts) or ts > (1 - SETTLED_FRACTION) * (t[-1] - t[0]):
                until = f"until {ts:.4g} s, " if math.isfinite(ts) else ""
                raise NotSettled(f"not settled: outside the 2 % band {until}within the last "
                                 f"{100 * SETTLED_FRACTION:g} % of the run (stop later, or check the loop)")
            return ts
    else:
        def fn(result: Any) -> float:
            return float(step_info(result.time, column(result, var), final)[STEP[kind]])
    return Metric(str(spec).strip(), fn, var, kind)


def as_metrics(metrics: Any) -> list[Metric]:
    """Metrics from a spec string, a function, a list of those, or a ``{name: spec or function}`` mapping."""
    if metrics is None:
        return []
    if isinstance(metrics, Mapping):
        out = []
        for name, m in metrics.items():
            base = m if isinstance(m, Metric) else parse_metric(m) if isinstance(m, str) else None
            fn = base.fn if base is not None else m
            if not callable(fn):
                raise InputError(f"metric {name!r}: {m!r} is neither KIND:VARIABLE nor a function")
            out.append(Metric(str(name), fn, base.variable if base is not None else None,
                              base.kind if base is not None else None))
        return _unique(out)
    if isinstance(metrics, (str, Metric)) or callable(metrics):
        metrics = [metrics]
    out = []
    for m in metrics:
        if isinstance(m, Metric):
            out.append(m)
        elif isinstance(m, str):
            out.append(parse_metric(m))
        elif callable(m):
            out.append(Metric(getattr(m, "__name__", "metric"), m))
        else:
            raise InputError(f"metric {m!r} is neither KIND:VARIABLE nor a function of the result")
    return _unique(out)


def _unique(ms: Sequence[Metric]) -> list[Metric]:
    names = [m.name for m in ms]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"metric names used twice: {', '.join(dup)} (name them with a mapping)")
    return list(ms)


def check_variables(metrics: Sequence[Metric], names: Sequence[str]) -> None:
    """Refuse, by name, a metric whose variable is not among the recorded
    columns ``names`` (exact, or a unique ``"unit.name"`` suffix), before any run."""
    for m in metrics:
        if m.variable is not None:
            resolve_column(m.variable, names, f"metric {m.name!r}: ")


def evaluate(metrics: Sequence[Metric], result: Any) -> tuple[dict[str, float], list[str]]:
    """Every metric on ``result``: ``(values, errors)``; a failing metric gives NaN and an error line."""
    values: dict[str, float] = {}
    errors: list[str] = []
    for m in metrics:
        try:
            values.update(m(result))
        except Exception as exc:
            values[m.name] = math.nan
            errors.append(f"metric {m.name!r}: {exc}")
    return values, errors
