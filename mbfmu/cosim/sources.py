"""Ready-made :class:`~mbfmu.cosim.units.FunctionUnit` sources and blocks.

Sources have no inputs and one output ``y`` evaluated at the unit's current
time; blocks (saturation) have an input ``u`` and direct feedthrough.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import InputError
from .blocks import Saturation
from .units import FunctionUnit


def step(name: str, t_step: float, height: float = 1.0, initial: float = 0.0, unit: str | None = None,
         output: str = "y") -> FunctionUnit:
    """``y = initial`` before ``t_step`` [s], ``initial + height`` from it on (output named ``output``)."""
    return FunctionUnit(name, lambda t, u: (initial + height if t >= t_step else initial,), outputs=(output,),
                        units={output: unit} if unit else None)


def ramp(name: str, t_start: float, slope: float, initial: float = 0.0, unit: str | None = None) -> FunctionUnit:
    """``y = initial + slope * max(t - t_start, 0)`` (slope in unit/s)."""
    return FunctionUnit(name, lambda t, u: (initial + slope * max(t - t_start, 0.0),), units={"y": unit} if unit else None)


def sine(name: str, amplitude: float, frequency: float, phase: float = 0.0, offset: float = 0.0,
         unit: str | None = None) -> FunctionUnit:
    """``y = offset + amplitude * sin(2 pi frequency t + phase)`` (frequency in Hz)."""
    w = 2 * math.pi * frequency
    return FunctionUnit(name, lambda t, u: (offset + amplitude * math.sin(w * t + phase),), units={"y": unit} if unit else None)


def crash_pulse(name: str, t0: float, duration: float, peak: float, unit: str | None = "m/s2") -> FunctionUnit:
    """Half-sine crash pulse: ``y = peak sin(pi (t - t0) / duration)`` on ``[t0, t0 + duration]``, else 0."""
    if duration <= 0:
        raise InputError(f"crash pulse {name!r}: duration {duration} s must be positive")

    def f(t: float, u: np.ndarray) -> tuple[float]:
        s = (t - t0) / duration
        return (peak * math.sin(math.pi * s) if 0.0 <= s <= 1.0 else 0.0,)
    return FunctionUnit(name, f, units={"y": unit} if unit else None)


def table(name: str, times: Sequence[float], values: Sequence[Sequence[float]] | Sequence[float],
          outputs: Sequence[str] = ("y",), units: dict[str, str] | None = None) -> FunctionUnit:
    """Trajectory from a table, linearly interpolated, held beyond its ends.

    ``values`` has one row per time (one column per output).
    """
    ts = np.asarray(times, float)
    vs = np.asarray(values, float).reshape(len(ts), -1)
    if vs.shape[1] != len(outputs):
        raise InputError(f"table {name!r}: {vs.shape[1]} columns for {len(outputs)} outputs")
    if len(ts) < 1 or np.any(np.diff(ts) < 0):
        raise InputError(f"table {name!r}: times must be non-empty and non-decreasing")
    cols = [vs[:, j] for j in range(vs.shape[1])]
    return FunctionUnit(name, lambda t, u: [np.interp(t, ts, c) for c in cols], outputs=outputs, units=units)


def saturation(name: str, lower: float, upper: float, unit: str | None = None) -> FunctionUnit:
    """``y = clip(u, lower, upper)`` (direct feedthrough; input start 0), see :class:`.blocks.Saturation`."""
    return Saturation(name, lower, upper, unit=unit, start=0.0)


def noise(name: str, sigma: float, dt: float, seed: int = 0, mean: float = 0.0, unit: str | None = None) -> FunctionUnit:
    """Gaussian noise held over samples of ``dt`` [s], reproducible from ``seed``.

    The sample in ``[k dt, (k+1) dt)`` depends only on ``(seed, k)``, so
    reruns, rollbacks and different macro steps see the same noise.
    """
    if dt <= 0:
        raise InputError(f"noise {name!r}: dt {dt} s must be positive")

    def f(t: float, u: np.ndarray) -> tuple[float]:
        k = int(math.floor(t / dt + 1e-9))
        return (mean + sigma * np.random.default_rng([seed, k & 0xFFFFFFFF]).standard_normal(),)
    return FunctionUnit(name, f, units={"y": unit} if unit else None)
