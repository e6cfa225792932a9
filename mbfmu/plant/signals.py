"""Signal specifications: the one description of a plant's ports.

A :class:`Signal` names one scalar: an input, an output, a tunable parameter or
a state. One list of them per plant feeds the FMU's model variables, the
python-control system's signal names and the co-simulation master's
connections, so a name is spelled in exactly one place.

Vector quantities follow FMI's structured naming convention with 1-based
indices: ``q[1]``, ``tau[3]``, ``tip_position[2]`` (see :func:`vector`).
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import InputError, unknown_name

KINDS = ("input", "output", "parameter", "state")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[1-9][0-9]*\])?$")


@dataclass(frozen=True)
class Signal:
    """One named scalar port of a plant.

    Parameters
    ----------
    name : str
        FMI-structured name, e.g. ``"q[2]"`` or ``"kinetic_energy"``.
    unit : str
        SI unit symbol as FMI writes it (``"rad"``, ``"N.m"``, ``"m/s2"``);
        ``"1"`` for dimensionless.
    description : str
        One line for humans; becomes the FMU variable's description.
    start : float
        Start value (inputs and parameters: default; outputs: value before the
        first step).
    min, max : float or None
        Physical range; ``None`` where unbounded.
    kind : str
        One of ``"input"``, ``"output"``, ``"parameter"``, ``"state"``.
    min_open, max_open : bool
        The bound itself is refused (a mass: ``min=0`` open); FMI's own
        ``min``/``max`` are inclusive, so the FMU checks these ends itself.
    """

    name: str
    unit: str = "1"
    description: str = ""
    start: float = 0.0
    min: float | None = None
    max: float | None = None
    kind: str = "output"
    min_open: bool = False
    max_open: bool = False

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise InputError(f"signal name {self.name!r} is not an FMI structured name like 'x' or 'q[1]'")
        if self.kind not in KINDS:
            raise InputError(f"signal {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if not math.isfinite(self.start):
            raise InputError(f"signal {self.name!r}: start value {self.start!r} is not finite")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise InputError(f"signal {self.name!r}: min {self.min} > max {self.max}")

    def check(self, value: float) -> float:
        """Return ``value`` as float, or raise naming this signal if it is
        NaN, infinite or outside ``[min, max]``."""
        v = float(value)
        if not math.isfinite(v):
            raise InputError(f"{self.kind} {self.name!r} = {value!r} is not finite")
        if self.min is not None and (v <= self.min if self.min_open else v < self.min):
            raise InputError(f"{self.kind} {self.name!r} = {v} is {'at or ' if self.min_open else ''}below "
                             f"its minimum {self.min} {self.unit}")
        if self.max is not None and (v >= self.max if self.max_open else v > self.max):
            raise InputError(f"{self.kind} {self.name!r} = {v} is {'at or ' if self.max_open else ''}above "
                             f"its maximum {self.max} {self.unit}")
        return v


def vector(base: str, n: int, kind: str, unit: str = "1", description: str = "",
           start: float | Sequence[float] = 0.0, min: float | None = None,
           max: float | None = None) -> tuple[Signal, ...]:
    """Signals ``base[1] .. base[n]`` (FMI's 1-based structured names).

    ``description`` may contain ``{i}`` for the 1-based index.
    """
    starts = [start] * n if isinstance(start, (int, float)) else list(start)
    if len(starts) != n:
        raise InputError(f"vector {base!r}: {len(starts)} start values for {n} elements")
    return tuple(
        Signal(f"{base}[{i + 1}]", unit, description.format(i=i + 1), float(starts[i]), min, max, kind)
        for i in range(n)
    )


def names(signals: Iterable[Signal]) -> list[str]:
    """The names of ``signals`` in order."""
    return [s.name for s in signals]


def index_of(signals: Sequence[Signal], name: str, what: str = "signal") -> int:
    """Position of ``name`` in ``signals`` (a :data:`RENAMED` name is accepted,
    with a warning); raises :class:`UnknownNameError` listing the closest
    known names when it is absent."""
    known = [s.name for s in signals]
    name = current_name(name, known)
    for i, s in enumerate(known):
        if s == name:
            return i
    raise unknown_name(f"unknown {what} {name!r}", name, known)


#: Vector names renamed before mbfmu 0.1.0 -> their current names. The library
#: plants called joint rates ``qd[i]`` while URDF robots called them ``v[i]``;
#: both are ``v[i]`` now, and the old name is accepted (with a
#: DeprecationWarning) until mbfmu 0.2.
RENAMED = {"qd": "v"}


def current_name(name: str, known: Iterable[str]) -> str:
    """``name`` itself when ``known`` has it or it was never renamed; else the
    current name of a :data:`RENAMED` one (``qd[2]`` -> ``v[2]``, also
    prefixed ``arm.qd[2]`` -> ``arm.v[2]`` and the bare vector ``qd`` -> ``v``),
    with a DeprecationWarning, when ``known`` has that."""
    known = known if isinstance(known, (set, frozenset, dict)) else set(known)
    if name in known:
        return name
    prefix, _, tail = name.rpartition(".")
    m = _ELEMENT.match(tail)
    base, index = (m.group(1), f"[{m.group(2)}]") if m else (tail, "")
    if base not in RENAMED:
        return name
    renamed = f"{prefix}.{RENAMED[base]}{index}" if prefix else f"{RENAMED[base]}{index}"
    if renamed not in known and not any(k.startswith(renamed + "[") for k in known):
        return name
    warnings.warn(f"{name!r} is called {renamed!r} now; the old name is accepted until mbfmu 0.2",
                  DeprecationWarning, stacklevel=3)
    return renamed


_FMI_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[1-9][0-9]*\])?$")
_ELEMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\[([0-9]+)\]$")


def one_based(labels: Sequence[str]) -> list[str]:
    """``labels`` with every vector written from index 0 renumbered from 1, as
    FMI structured names count (python-control's defaults ``u[0], u[1]``
    become ``u[1], u[2]``); every other label is kept as it is.

    >>> one_based(["u[0]", "u[1]", "q[1]_ref", "e"])
    ['u[1]', 'u[2]', 'q[1]_ref', 'e']
    """
    zero_based = {m.group(1) for m in map(_ELEMENT.match, labels) if m and int(m.group(2)) == 0}
    out = []
    for label in labels:
        m = _ELEMENT.match(label)
        out.append(f"{m.group(1)}[{int(m.group(2)) + 1}]" if m and m.group(1) in zero_based else label)
    return out


def fmi_names(labels: Sequence[str], taken: Iterable[str] = ()) -> list[str]:
    """Valid, unique FMI variable names for python-control signal labels:
    :func:`one_based`, then other characters replaced by ``_`` and clashes
    given ``_2``, ``_3``.

    Parameters
    ----------
    labels : sequence of str
        python-control labels (``sys.input_labels`` ...).
    taken : iterable of str
        Names already used (they are avoided).

    Examples
    --------
    >>> fmi_names(["u[0]", "u[1]", "e", "q dot"], taken=["e"])
    ['u[1]', 'u[2]', 'e_2', 'q_dot']
    """
    used = set(taken)
    out = []
    for name in one_based(labels):
        if not _FMI_NAME.match(name):
            name = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "signal"
            name = name if re.match(r"[A-Za-z_]", name) else f"s_{name}"
        if name in used:
            flat = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
            k = 2
            while f"{flat}_{k}" in used:
                k += 1
            name = f"{flat}_{k}"
        used.add(name)
        out.append(name)
    return out
