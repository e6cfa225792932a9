"""SSP 1.0 transformations of a value on its way through a connection or a parameter mapping.

``ssc:LinearTransformation`` (``target = factor source + offset``, after any
unit conversion, for Real values), ``ssc:BooleanMappingTransformation`` and
``ssc:IntegerMappingTransformation`` (tables of ``MapEntry source target``;
a value the table does not list passes unchanged). A chain of them (a
connection through system connectors) composes into one transformation of
the same kind (:func:`compose`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import CosimError

SSC = "http://ssp-standard.org/SSP1/SystemStructureCommon"
# transformation element -> the connector / parameter types it is valid for
VALID_TYPES = {"LinearTransformation": ("Real",), "BooleanMappingTransformation": ("Boolean",),
               "IntegerMappingTransformation": ("Integer", "Enumeration")}


@dataclass(frozen=True)
class Linear:
    """``target = factor source + offset`` (Real values).

    ``suppress_units`` records that no unit conversion precedes it (the SSP
    ``suppressUnitConversion`` of the connection or mapping entry).
    """

    factor: float = 1.0
    offset: float = 0.0
    suppress_units: bool = False
    tag = "LinearTransformation"

    def apply(self, value: Any) -> float:
        """The target value of source value ``value``."""
        return self.factor * float(value) + self.offset

    def affine(self) -> tuple[float, float]:
        """``(gain, offset)``: ``target = gain source + offset``."""
        return self.factor, self.offset

    def then(self, other: "Linear") -> "Linear":
        """This one, then ``other``."""
        return Linear(other.factor * self.factor, other.factor * self.offset + other.offset, self.suppress_units)

    def to_xml(self, parent: Any) -> Any:
        """Append the ``ssc:LinearTransformation`` element to ``parent``."""
        from lxml import etree
        e = etree.SubElement(parent, f"{{{SSC}}}{self.tag}")
        if self.factor != 1.0:
            e.set("factor", repr(float(self.factor)))
        if self.offset != 0.0:
            e.set("offset", repr(float(self.offset)))
        return e


@dataclass(frozen=True)
class Mapping:
    """A table of values (``kind`` ``"Boolean"`` or ``"Integer"``); unlisted values pass unchanged."""

    kind: str
    entries: tuple[tuple[Any, Any], ...] = field(default=())

    @property
    def tag(self) -> str:
        return f"{self.kind}MappingTransformation"

    def _table(self) -> dict:
        return dict(self.entries)

    def apply(self, value: Any) -> Any:
        """The target value of source value ``value`` (itself when the table does not list it)."""
        v = bool(value) if self.kind == "Boolean" else int(value)
        return self._table().get(v, v)

    def affine(self) -> tuple[float, float] | None:
        """``(gain, offset)`` on 0/1 for a Boolean table (every such table is
        affine there); ``None`` for Integer tables."""
        if self.kind != "Boolean":
            return None
        f0, f1 = float(self.apply(False)), float(self.apply(True))
        return f1 - f0, f0

    def then(self, other: "Mapping") -> "Mapping":
        """This table, then ``other``."""
        a, b = self._table(), other._table()
        out = {k: b.get(v, v) for k, v in a.items()}
        out.update({k: v for k, v in b.items() if k not in a})
        return Mapping(self.kind, tuple(sorted(out.items())))

    def to_xml(self, parent: Any) -> Any:
        """Append the ``ssc:<kind>MappingTransformation`` element to ``parent``."""
        from lxml import etree
        e = etree.SubElement(parent, f"{{{SSC}}}{self.tag}")
        for s, t in self.entries:
            text = (lambda v: ("true" if v else "false")) if self.kind == "Boolean" else str
            etree.SubElement(e, f"{{{SSC}}}MapEntry", source=text(s), target=text(t))
        return e


Transformation = Linear | Mapping


def _bool(text: str) -> bool:
    return text.strip() in ("true", "1")


def read(element: Any, what: str) -> Transformation | None:
    """The transformation held by ``element`` (a connection or mapping entry), or ``None``.

    Raises
    ------
    CosimError
        For a transformation mbfmu does not support (named with ``what``).
    """
    suppress = _bool(element.get("suppressUnitConversion", "false"))
    for child in element:
        if not isinstance(child.tag, str) or not child.tag.startswith(f"{{{SSC}}}"):
            continue
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "LinearTransformation":
            return Linear(float(child.get("factor", "1")), float(child.get("offset", "0")), suppress)
        if tag in ("BooleanMappingTransformation", "IntegerMappingTransformation"):
            kind = tag[: -len("MappingTransformation")]
            conv = _bool if kind == "Boolean" else int
            entries = [(conv(e.get("source")), conv(e.get("target"))) for e in child.findall(f"{{{SSC}}}MapEntry")]
            sources = [s for s, _ in entries]
            if len(set(sources)) != len(sources):
                raise CosimError(f"{what}: {tag} maps a source value twice")
            return Mapping(kind, tuple(entries))
        if tag.endswith("Transformation"):
            raise CosimError(f"{what}: {tag} is not supported")
    return Linear(suppress_units=True) if suppress else None


def check_type(t: Transformation, var_type: str, what: str) -> None:
    """Refuse a transformation applied to a value of the wrong type."""
    if var_type not in VALID_TYPES[t.tag]:
        raise CosimError(f"{what}: {t.tag} is not valid for a value of type {var_type}")


def compose(first: Transformation | None, second: Transformation | None) -> Transformation | None:
    """``first``, then ``second`` (either may be ``None``)."""
    if first is None:
        return second
    if second is None:
        return first
    if type(first) is not type(second) or getattr(first, "kind", None) != getattr(second, "kind", None):
        raise CosimError(f"a {first.tag} cannot be followed by a {second.tag}")
    return first.then(second)


class _Table:
    """``fn(t, u)`` of a :class:`MapUnit` (a module-level class, so that the unit can be sent to a worker)."""

    def __init__(self, mapping: Mapping) -> None:
        self.table = dict(mapping.entries)

    def __call__(self, t: float, u: Any) -> list[float]:
        v = int(round(float(u[0])))
        return [float(self.table.get(v, v))]


def map_unit(mapping: Mapping, target: str) -> Any:
    """A unit applying an Integer ``mapping`` between a connection's ends: input
    ``u``, output ``y`` (direct feedthrough, so the mapped value arrives in the
    same step), named ``<target unit>:<input>:map`` after the input it drives.

    The master moves Integer values unchanged, so an Integer table on a
    connection needs a unit of its own; ``write_ssp`` folds it back into the
    connection's ``IntegerMappingTransformation``.
    """
    import dataclasses

    from ..units import FunctionUnit
    unit = FunctionUnit(target.replace(".", ":") + ":map", _Table(mapping), inputs=["u"], outputs=["y"])
    for n in ("u", "y"):
        unit.variables[n] = dataclasses.replace(unit.variables[n], type="Integer", start=0)
    unit.mapping = mapping
    unit.target = target
    return unit


def is_map_unit(unit: Any) -> bool:
    """Whether ``unit`` was made by :func:`map_unit`."""
    return isinstance(getattr(unit, "mapping", None), Mapping) and isinstance(getattr(unit, "fn", None), _Table)
