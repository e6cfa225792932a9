"""SI unit strings as FMI 2.0 ``<Unit>`` definitions.

A plant's signals carry units as FMI writes them (``"rad"``, ``"N.m"``,
``"m/s2"``, ``"kg.m2"``, ``"N.m.s/rad"``; ``"1"`` for dimensionless). This
module turns such a string into the exponents of FMI's ``<BaseUnit>`` (kg, m,
s, A, K, mol, cd, rad) and a factor, so that the FMU's ``UnitDefinitions``
say what each unit is and a tool can convert between them.

Grammar: ``term ("." term)* ("/" term ("." term)*)*`` where a term is a
symbol followed by an optional integer exponent (``m2``, ``s-1``); every
``/`` divides by the term group after it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

BASE = ("kg", "m", "s", "A", "K", "mol", "cd", "rad")

# symbol -> (factor, exponents over BASE)
_SYMBOLS: dict[str, tuple[float, tuple[int, ...]]] = {
    "kg": (1.0, (1, 0, 0, 0, 0, 0, 0, 0)),
    "g": (1e-3, (1, 0, 0, 0, 0, 0, 0, 0)),
    "m": (1.0, (0, 1, 0, 0, 0, 0, 0, 0)),
    "mm": (1e-3, (0, 1, 0, 0, 0, 0, 0, 0)),
    "s": (1.0, (0, 0, 1, 0, 0, 0, 0, 0)),
    "A": (1.0, (0, 0, 0, 1, 0, 0, 0, 0)),
    "K": (1.0, (0, 0, 0, 0, 1, 0, 0, 0)),
    "mol": (1.0, (0, 0, 0, 0, 0, 1, 0, 0)),
    "cd": (1.0, (0, 0, 0, 0, 0, 0, 1, 0)),
    "rad": (1.0, (0, 0, 0, 0, 0, 0, 0, 1)),
    "deg": (math.pi / 180.0, (0, 0, 0, 0, 0, 0, 0, 1)),
    "N": (1.0, (1, 1, -2, 0, 0, 0, 0, 0)),
    "J": (1.0, (1, 2, -2, 0, 0, 0, 0, 0)),
    "W": (1.0, (1, 2, -3, 0, 0, 0, 0, 0)),
    "Pa": (1.0, (1, -1, -2, 0, 0, 0, 0, 0)),
    "Hz": (1.0, (0, 0, -1, 0, 0, 0, 0, 0)),
    "V": (1.0, (1, 2, -3, -1, 0, 0, 0, 0)),
    "1": (1.0, (0, 0, 0, 0, 0, 0, 0, 0)),
}

_TERM = re.compile(r"^([A-Za-z]+|1)(-?[0-9]+)?$")


@dataclass(frozen=True)
class UnitDefinition:
    """An FMI unit: its name, factor and SI base exponents.

    ``exponents`` is ``None`` when the string could not be parsed; the unit is
    then declared by name only (still valid FMI).
    """

    name: str
    factor: float = 1.0
    exponents: tuple[int, ...] | None = None

    def base_unit_attributes(self) -> dict[str, str] | None:
        """Attributes of the ``<BaseUnit>`` element, or None."""
        if self.exponents is None:
            return None
        attrs = {b: str(e) for b, e in zip(BASE, self.exponents) if e != 0}
        if self.factor != 1.0:
            attrs["factor"] = repr(self.factor)
        return attrs


def parse_unit(name: str) -> UnitDefinition:
    """Parse an FMI unit string into a :class:`UnitDefinition`.

    Examples
    --------
    >>> parse_unit("N.m").exponents
    (1, 2, -2, 0, 0, 0, 0, 0)
    >>> parse_unit("rad/s2").base_unit_attributes()
    {'s': '-2', 'rad': '1'}
    """
    groups = name.split("/")
    factor = 1.0
    exps = [0] * len(BASE)
    for g, group in enumerate(groups):
        sign = 1 if g == 0 else -1
        for term in group.split("."):
            m = _TERM.match(term.strip())
            if not m or m.group(1) not in _SYMBOLS:
                return UnitDefinition(name)
            f, e = _SYMBOLS[m.group(1)]
            power = sign * (int(m.group(2)) if m.group(2) else 1)
            factor *= f ** power
            exps = [a + power * b for a, b in zip(exps, e)]
    return UnitDefinition(name, factor, tuple(exps))
