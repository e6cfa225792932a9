"""Each output declared together with the sensor that computes it.

A plant's outputs are signals (``q[1]``, ``tip_position[3]``, 1-based as
every name) and its ``sensors`` the engine elements that compute them
(:mod:`mbfmu.dynamics.sensors`, evaluated in Python and by the native FMU),
one per output, in the same order. Declared as two lists they could drift
apart; declared here they come in pairs:

>>> from mbfmu.dynamics import sensors
>>> outputs, probes = declare_outputs(
...     measured_vector("q", 2, "rad", "angle of joint {i}", sensors.StateValue),
...     measured("kinetic_energy", "J", "kinetic energy", sensors.KineticEnergy()))
>>> [s.name for s in outputs], probes[1]
(['q[1]', 'q[2]', 'kinetic_energy'], StateValue(index=1))

The one place where a name's 1-based number meets an array's 0-based index is
:func:`measured_vector`: element ``base[i + 1]`` is measured by ``sensor(i)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import InputError
from .signals import Signal


@dataclass(frozen=True)
class Measured:
    """One output and its sensor.

    Parameters
    ----------
    signal : Signal
        The output (kind ``"output"``).
    sensor : object
        The engine sensor that computes it.
    """

    signal: Signal
    sensor: Any


def measured(name: str, unit: str, description: str, sensor, start: float = 0.0) -> tuple[Measured]:
    """The scalar output ``name`` computed by ``sensor``.

    Parameters
    ----------
    name : str
        FMI name of the output.
    unit : str
        SI unit (``"J"``, ``"m/s2"``; ``"1"`` dimensionless).
    description : str
        One line.
    sensor : object
        The engine sensor (:mod:`mbfmu.dynamics.sensors`) that computes it.
    start : float
        Value before the first step, in ``unit``.

    Returns
    -------
    tuple of Measured
        One pair, for :func:`declare_outputs`.
    """
    return (Measured(Signal(name, unit, description, float(start), kind="output"), sensor),)


def measured_vector(base: str, n: int, unit: str | Sequence[str], description: str | Sequence[str],
                    sensor: Callable[[int], Any], start: float | Sequence[float] = 0.0) -> tuple[Measured, ...]:
    """Outputs ``base[1]`` to ``base[n]``: element ``base[i + 1]`` computed by
    ``sensor(i)``, ``i`` the 0-based index.

    Parameters
    ----------
    base : str
        The vector's name.
    n : int
        Its length.
    unit, description : str or sequence of str
        One for all elements or one per element; ``{i}`` in a description is
        the 1-based number of the name.
    sensor : callable
        ``sensor(i)``: the engine sensor of element ``i`` (0-based).
    start : float or sequence of float
        Values before the first step, in the unit.

    Returns
    -------
    tuple of Measured
        The pairs, for :func:`declare_outputs`.
    """
    units, texts, starts = ([x] * n if isinstance(x, (str, int, float)) else list(x)
                            for x in (unit, description, start))
    if not len(units) == len(texts) == len(starts) == n:
        raise InputError(f"output vector {base!r}: {len(units)} units, {len(texts)} descriptions and "
                         f"{len(starts)} start values for {n} elements")
    return tuple(Measured(Signal(f"{base}[{i + 1}]", units[i], texts[i].format(i=i + 1), float(starts[i]),
                                 kind="output"), sensor(i)) for i in range(n))


def declare_outputs(*groups: Sequence[Measured]) -> tuple[tuple[Signal, ...], tuple]:
    """``(outputs, sensors)`` of a plant from its :func:`measured` groups, in order.

    Parameters
    ----------
    *groups : sequence of Measured
        From :func:`measured` and :func:`measured_vector`.

    Returns
    -------
    outputs : tuple of Signal
    sensors : tuple
        One sensor per output, in the same order.
    """
    pairs = [m for group in groups for m in group]
    return tuple(m.signal for m in pairs), tuple(m.sensor for m in pairs)
