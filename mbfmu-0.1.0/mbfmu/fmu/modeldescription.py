"""Completing pythonfmu's ``modelDescription.xml`` into a conforming one.

pythonfmu 0.7 writes the variables and a bare ``ModelStructure``. This module
adds what other tools need (see FMI 2.0 sections 2.2.2, 2.2.8, 4.3.1):

* ``CoSimulation`` flags: no execution tool, state get/set and serialization,
  variable step size, several instances per process;
* ``UnitDefinitions`` and a ``unit`` attribute on every dimensioned variable,
  ``min``/``max`` on inputs and parameters;
* ``ModelStructure``: ``Outputs`` with their direct dependencies on inputs
  (``dependencies=""`` = no direct feedthrough) and ``InitialUnknowns``
  listing the (calculated) outputs;
* a GUID derived from the content, so a rebuild of the same plant gives the
  same FMU identity.
"""
from __future__ import annotations

import uuid
from typing import Any, Mapping, Sequence
from xml.dom.minidom import parseString
from xml.etree.ElementTree import Element, SubElement, tostring

from ..errors import ModelError
from .slave import INPUT, OUTPUT, PARAMETER
from .units import parse_unit

CO_SIMULATION_FLAGS = {
    "needsExecutionTool": "false",
    "canHandleVariableCommunicationStepSize": "true",
    "canInterpolateInputs": "false",
    "canBeInstantiatedOnlyOncePerProcess": "false",
    "canGetAndSetFMUstate": "true",
    "canSerializeFMUstate": "true",
    "canNotUseMemoryManagementFunctions": "true",
    "providesDirectionalDerivative": "false",
}


def _fmt(v: float) -> str:
    return repr(float(v))


def complete(root: Element, signals: Sequence[tuple[int, Any]], feedthrough: Mapping[str, Sequence[str]],
             model_identifier: str, digest: str, generation_tool: str) -> Element:
    """Complete pythonfmu's model description in place and return it.

    Parameters
    ----------
    root : Element
        ``fmiModelDescription`` from ``Fmi2Slave.to_xml()``.
    signals : sequence of (kind, Signal)
        Every variable in value-reference order (``PlantSlave.signals()``).
    feedthrough : mapping
        Output name -> input names it depends on directly.
    model_identifier : str
        FMI model identifier (binary name).
    digest : str
        Content hash; the GUID is derived from it.
    generation_tool : str
        Written as ``generationTool``.
    """
    root.set("guid", "{%s}" % uuid.uuid5(uuid.NAMESPACE_URL, f"mbfmu:{model_identifier}:{digest}"))
    root.set("generationTool", generation_tool)
    cs = root.find("CoSimulation")
    cs.set("modelIdentifier", model_identifier)
    for k, v in CO_SIMULATION_FLAGS.items():
        cs.set(k, v)

    # units, in order of first use
    units: dict[str, Any] = {}
    for _, sig in signals:
        if sig.unit and sig.unit != "1" and sig.unit not in units:
            units[sig.unit] = parse_unit(sig.unit)
    if units:
        ud = Element("UnitDefinitions")
        for name, definition in units.items():
            u = SubElement(ud, "Unit", name=name)
            attrs = definition.base_unit_attributes()
            if attrs is not None:
                SubElement(u, "BaseUnit", attrs)
        root.insert(list(root).index(cs) + 1, ud)

    variables = root.find("ModelVariables")
    svs = variables.findall("ScalarVariable")
    if len(svs) != len(signals):
        raise ModelError(f"{len(svs)} FMU variables for {len(signals)} signals")
    names = [sv.get("name") for sv in svs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ModelError(f"FMU variable names used twice: {sorted(dup)}")
    index = {}
    for i, ((kind, sig), sv) in enumerate(zip(signals, svs)):
        real = sv.find("Real")
        if sig.unit and sig.unit != "1":
            real.set("unit", sig.unit)
        if kind in (INPUT, PARAMETER):
            real.set("start", _fmt(sig.start))
            if sig.min is not None:
                real.set("min", _fmt(sig.min))
            if sig.max is not None:
                real.set("max", _fmt(sig.max))
        else:
            real.attrib.pop("start", None)
        index[(kind, sig.name)] = i + 1

    structure = root.find("ModelStructure")
    for child in list(structure):
        structure.remove(child)
    outputs = [(sig.name, index[(kind, sig.name)]) for kind, sig in signals if kind == OUTPUT]
    if outputs:
        out_node = SubElement(structure, "Outputs")
        init_node = SubElement(structure, "InitialUnknowns")
        for name, idx in outputs:
            deps = []
            for inp in feedthrough.get(name, ()):
                if (INPUT, inp) not in index:
                    raise ModelError(f"feedthrough of output {name!r} names unknown input {inp!r}")
                deps.append(index[(INPUT, inp)])
            SubElement(out_node, "Unknown", index=str(idx), dependencies=" ".join(map(str, sorted(deps))))
            SubElement(init_node, "Unknown", index=str(idx))
    unknown = set(feedthrough) - {n for n, _ in outputs}
    if unknown:
        raise ModelError(f"feedthrough names unknown outputs {sorted(unknown)}")
    return root


def to_bytes(root: Element) -> bytes:
    """Pretty UTF-8 XML."""
    return parseString(tostring(root, "UTF-8")).toprettyxml(encoding="UTF-8")
