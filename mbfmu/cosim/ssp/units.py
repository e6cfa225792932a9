"""Units as SSP 1.0 and FMI define them: SI base-unit exponents, factor and offset.

A value ``v`` in a unit ``(exponents, factor, offset)`` is ``factor v + offset``
in the SI unit with those exponents. Two units convert into each other when
their exponents agree; :func:`conversion` returns the affine map between
them, and refuses incompatible units by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...errors import CosimError

BASE = ("kg", "m", "s", "A", "K", "mol", "cd", "rad")


@dataclass(frozen=True)
class UnitDef:
    """One unit: exponents of the SI base units (``BASE`` order), factor and offset."""

    exponents: tuple[int, ...]
    factor: float = 1.0
    offset: float = 0.0

    def to_xml(self, parent: Any, name: str, ns: str) -> Any:
        """Append ``<ssc:Unit name><ssc:BaseUnit .../></ssc:Unit>`` to ``parent``."""
        from lxml import etree
        u = etree.SubElement(parent, f"{{{ns}}}Unit", name=name)
        b = etree.SubElement(u, f"{{{ns}}}BaseUnit")
        for k, e in zip(BASE, self.exponents):
            if e:
                b.set(k, str(e))
        if self.factor != 1.0:
            b.set("factor", repr(self.factor))
        if self.offset != 0.0:
            b.set("offset", repr(self.offset))
        return u


def _exp(**kw: int) -> tuple[int, ...]:
    return tuple(kw.get(k, 0) for k in BASE)


# units every tool knows by name: SI base units and a few coherent derived ones
KNOWN: dict[str, UnitDef] = {
    "1": UnitDef(_exp()), "kg": UnitDef(_exp(kg=1)), "m": UnitDef(_exp(m=1)), "s": UnitDef(_exp(s=1)),
    "A": UnitDef(_exp(A=1)), "K": UnitDef(_exp(K=1)), "mol": UnitDef(_exp(mol=1)), "cd": UnitDef(_exp(cd=1)),
    "rad": UnitDef(_exp(rad=1)), "N": UnitDef(_exp(kg=1, m=1, s=-2)), "N.m": UnitDef(_exp(kg=1, m=2, s=-2)),
    "m/s": UnitDef(_exp(m=1, s=-1)), "m/s2": UnitDef(_exp(m=1, s=-2)), "rad/s": UnitDef(_exp(rad=1, s=-1)),
    "rad/s2": UnitDef(_exp(rad=1, s=-2)), "kg.m2": UnitDef(_exp(kg=1, m=2)), "N/m": UnitDef(_exp(kg=1, s=-2)),
    "N.s/m": UnitDef(_exp(kg=1, s=-1)), "W": UnitDef(_exp(kg=1, m=2, s=-3)), "J": UnitDef(_exp(kg=1, m=2, s=-2)),
    "Pa": UnitDef(_exp(kg=1, m=-1, s=-2)), "Hz": UnitDef(_exp(s=-1)), "V": UnitDef(_exp(kg=1, m=2, s=-3, A=-1)),
}


def read_units(parent: Any, ns: Mapping[str, str]) -> dict[str, UnitDef]:
    """Unit definitions in an ``ssd:Units`` / ``ssv:Units`` element (``{}`` for ``None``)."""
    out: dict[str, UnitDef] = {}
    if parent is None:
        return out
    for u in parent.findall("ssc:Unit", ns):
        b = u.find("ssc:BaseUnit", ns)
        if b is None:
            continue
        out[u.get("name")] = _checked(u.get("name"), UnitDef(tuple(int(b.get(k, "0")) for k in BASE),
                                                              float(b.get("factor", "1")), float(b.get("offset", "0"))))
    return out


def _checked(name: str, unit: UnitDef) -> UnitDef:
    """``unit`` unless its factor is zero or not finite, or its offset not finite
    (a conversion divides by the factor)."""
    import math
    if not (math.isfinite(unit.factor) and unit.factor != 0.0 and math.isfinite(unit.offset)):
        raise CosimError(f"unit {str(name)[:60]!r}: BaseUnit factor={unit.factor!r} offset={unit.offset!r}; "
                         "the factor must be finite and non-zero and the offset finite")
    return unit


def fmu_units(md: Any) -> dict[str, UnitDef]:
    """Unit definitions of an FMU's ``UnitDefinitions`` that give their base units."""
    out = {}
    for u in getattr(md, "unitDefinitions", None) or []:
        b = u.baseUnit
        if b is None:
            continue
        factor = 1.0 if b.factor is None else float(b.factor)
        out[u.name] = _checked(u.name, UnitDef(tuple(int(getattr(b, k, 0) or 0) for k in BASE), factor,
                                               float(b.offset or 0.0)))
    return out


def conversion(src: str | None, dst: str | None, defs: Mapping[str, UnitDef], what: str) -> tuple[float, float] | None:
    """``(gain, offset)`` with ``v_dst = gain v_src + offset``, or ``None`` when no
    conversion is needed (same unit, or a side without unit).

    Raises
    ------
    CosimError
        When a unit has no definition, or the two are incompatible; ``what``
        names the value or connection in the message.
    """
    if not src or not dst or src == dst:
        return None
    missing = [u for u in (src, dst) if u not in defs and u not in KNOWN]
    if missing:
        raise CosimError(f"{what}: unit {missing[0]!r} has no definition (add it to the SSD's Units)")
    a, b = defs.get(src) or KNOWN[src], defs.get(dst) or KNOWN[dst]
    if a.exponents != b.exponents:
        raise CosimError(f"{what}: incompatible units {src!r} and {dst!r}")
    gain = a.factor / b.factor
    offset = (a.offset - b.offset) / b.factor
    if gain == 1.0 and offset == 0.0:
        return None
    return gain, offset
