"""SSP 1.0 parameter bindings: parameter sets (``.ssv``, inline or by
reference) and parameter mappings (``.ssm``, inline or by reference).

A binding's parameter names get its ``prefix`` prepended; a mapping entry
whose ``source`` is that name renames it to its ``target`` and may transform
the value (:mod:`.transforms`); names the mapping does not list keep
their name. A Real value is converted from its unit to the variable's first
(unless the entry has ``suppressUnitConversion``), then transformed. The
names are then resolved by the caller (a component's variables, or a
system's hierarchical names). Files are parsed without entity expansion or
network access (:func:`parser`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...errors import CosimError
from . import transforms
from .units import UnitDef, conversion, read_units

NS = {
    "ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
    "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
    "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
    "ssm": "http://ssp-standard.org/SSP1/SystemStructureParameterMapping",
}
SET_TYPE = "application/x-ssp-parameter-set"
MAPPING_TYPE = "application/x-ssp-parameter-mapping"


def parser() -> Any:
    """An XML parser for files from others: no entities, no network, no huge trees."""
    from lxml import etree
    return etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False)


def parse(f: Any, what: str) -> Any:
    """The root element of the XML file ``f`` (path or binary file object), named ``what`` in messages."""
    from lxml import etree
    try:
        return etree.parse(f, parser()).getroot()
    except etree.XMLSyntaxError as exc:
        raise CosimError(f"cannot read {what}: it is not well-formed XML: {exc}") from None


def validate(root: Any, name: str, what: str) -> None:
    """Check ``root`` against the SSP 1.0 schema ``name`` (fmpy ships them)."""
    import os

    import fmpy.ssp
    from lxml import etree
    schema = etree.XMLSchema(file=os.path.join(os.path.dirname(fmpy.ssp.__file__), "schema", name))
    if not schema.validate(root):
        errs = "\n  - ".join(f"line {e.line}: {e.message}" for e in schema.error_log)
        raise CosimError(f"{what} is not valid SSP 1.0 ({name}):\n  - {errs}")


@dataclass(frozen=True)
class Entry:
    """One ``ssm:MappingEntry``: the target name and the transformation of the value."""

    target: str
    transformation: transforms.Transformation | None
    suppress_units: bool


def _value(p: Any) -> tuple[str, Any, str | None, str] | None:
    """``(name, value, unit, type)`` of an ``ssv:Parameter``."""
    for typ, conv in (("Real", float), ("Integer", int), ("Boolean", lambda s: s.strip() in ("true", "1")),
                      ("String", str), ("Enumeration", str)):
        e = p.find(f"ssv:{typ}", NS)
        if e is not None:
            return p.get("name"), conv(e.get("value")), e.get("unit"), typ
    return None


# the FMI types a parameter of an ssv type may be bound to (FmuUnit reads Enumeration as Integer)
_BINDABLE = {"Real": ("Real",), "Integer": ("Integer", "Enumeration", "Real"), "Boolean": ("Boolean",),
             "String": ("String",), "Enumeration": ("Integer", "Enumeration")}


def _check_binding_type(unit: Any, var: str, typ: str, value: Any) -> None:
    """Refuse a value of ssv type ``typ`` bound to a variable of another type (SSP 1.0:
    a parameter's type is its variable's; an Integer may set a Real); the text ``"3"``
    is not a Real, nor is ``true``."""
    v = getattr(unit, "variables", {}).get(var)
    if v is None or v.type in _BINDABLE.get(typ, ()):
        return
    raise CosimError(f"ssv:{typ} value {repr(value)[:40]} bound to {v.type} variable {var!r}; "
                     f"the types must agree (give an ssv:{v.type})")


def _checked_type(element: Any, default: str, what: str) -> None:
    typ = element.get("type", default)
    if typ != default:
        raise CosimError(f"{what}: type {typ!r} is not supported (only {default})")
    if element.get("sourceBase", "SSD") != "SSD":
        raise CosimError(f"{what}: sourceBase='component' (a file inside the FMU) is not supported")


def parameters(binding: Any, open_resource: Callable[[str], Any]) -> list[tuple[str, Any, str | None, str, dict]]:
    """``(name, value, unit, type, unit definitions of its set)`` of every parameter of a binding."""
    _checked_type(binding, SET_TYPE, "parameter binding")
    sets = list(binding.findall("ssd:ParameterValues/ssv:ParameterSet", NS))
    src = binding.get("source")
    if src:
        with open_resource(src) as f:
            root = parse(f, f"parameter file {src!r}")
        validate(root, "SystemStructureParameterValues.xsd", f"parameter file {src!r}")
        sets.append(root)
    out = []
    for s in sets:
        defs = read_units(s.find("ssv:Units", NS), NS)
        for p in s.findall("ssv:Parameters/ssv:Parameter", NS):
            v = _value(p)
            if v is not None:
                out.append((*v, defs))
    return out


def mapping(binding: Any, open_resource: Callable[[str], Any]) -> dict[str, Entry]:
    """The binding's parameter mapping, ``{source name: Entry}`` (``{}`` without one)."""
    pm = binding.find("ssd:ParameterMapping", NS)
    if pm is None:
        return {}
    _checked_type(pm, MAPPING_TYPE, "parameter mapping")
    src = pm.get("source")
    if src:
        what = f"parameter mapping file {src!r}"
        with open_resource(src) as f:
            root = parse(f, what)
    else:
        root = pm.find("ssm:ParameterMapping", NS)
        what = "inline parameter mapping"
        if root is None:
            raise CosimError("parameter mapping: neither a source nor an inline ssm:ParameterMapping")
    validate(root, "SystemStructureParameterMapping.xsd", what)
    out: dict[str, Entry] = {}
    for e in root.findall("ssm:MappingEntry", NS):
        t = transforms.read(e, f"{what}: entry {e.get('source')!r}")
        suppress = isinstance(t, transforms.Linear) and t.suppress_units
        if isinstance(t, transforms.Linear) and t.factor == 1.0 and t.offset == 0.0:
            t = None
        out[e.get("source")] = Entry(e.get("target"), t, suppress)
    return out


def apply(binding: Any, open_resource: Callable[[str], Any], target: str,
          resolve: Callable[[str], list[tuple[Any, str, str | None]]], defs: dict[str, UnitDef],
          problems: list[str]) -> None:
    """Apply one parameter binding.

    Parameters
    ----------
    binding : lxml element
        The ``ssd:ParameterBinding``.
    open_resource : callable
        ``open_resource(source)`` opens a file of the system (checked by the caller).
    target : str
        How messages name what is bound (``"component 'a':"``, ``"system"``).
    resolve : callable
        ``resolve(name)`` -> ``[(unit, variable name, variable's unit)]`` the
        name stands for; raises for a name that names nothing.
    defs : dict
        Unit definitions of the system.
    problems : list of str
        Where problems are appended (nothing is raised).
    """
    try:
        params = parameters(binding, open_resource)
        entries = mapping(binding, open_resource)
    except CosimError as exc:
        problems.append(f"{target} {exc}")
        return
    prefix = binding.get("prefix") or ""
    for pname, v, unit, typ, set_defs in params:
        name = prefix + pname
        entry = entries.get(name)
        if entry is not None:
            name = entry.target
        try:
            for u, var, var_unit in resolve(name):
                _check_binding_type(u, var, typ, v)
                value = v
                if typ == "Real" and not (entry is not None and entry.suppress_units):
                    conv = conversion(unit, var_unit, {**defs, **set_defs}, f"{target} parameter {name!r}")
                    value = v if conv is None else conv[0] * v + conv[1]
                if entry is not None and entry.transformation is not None:
                    transforms.check_type(entry.transformation, typ, f"{target} parameter {name!r}")
                    value = entry.transformation.apply(value)
                u.set(var, value)
        except Exception as exc:
            problems.append(f"{target} parameter binding {name!r}: {exc}")
