"""FMI 3.0 for the native FMU: the model description and the value-reference
table of ``csrc/fmi3.c``, from the FMI 2.0 description of the same binary.

What FMI 3 adds over the FMI 2 FMU of the same plant:

* **Arrays.** Scalars named ``base[1]`` .. ``base[n]`` of the same kind
  (inputs ``tau``, outputs ``q``, ``tip_position``, states ``states.q``,
  ``states.v``, their derivatives ``der(states.q)``, ...) become one
  ``Float64`` variable with a ``<Dimension>``; their values are read and
  written as one flat block, in element order.
* **Structural parameters.** Each array's length is a ``UInt64``
  structural parameter (``n_q``, ``n_tau``, ...) that its ``<Dimension>``
  references. The binary is compiled for these values: setting another one
  (in configuration mode) is refused with a message naming the parameter and
  saying to rebuild. The plant's own count parameters (the number of panels,
  of modes, ...) are ``UInt64`` calculated parameters, as they are
  ``Integer`` ones in FMI 2: the binary is built for them, a host reads them.
* **Event indicators** are a variable of FMI 3 (``event_indicators``, an
  array) referenced by ``<EventIndicator>``.
* An independent variable ``time``.

Units, the default experiment, start values and bounds are those of the FMI
2 description, and so are the parameters' declarations (:mod:`.declare`: a
parameter the runtime cannot take is a ``calculatedParameter`` in both). Platforms: ``x86_64-linux`` and ``x86_64-windows``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element, SubElement

from ...errors import ModelError

#: FMI 2 platform -> FMI 3 platform tuple
PLATFORM_TUPLES = {"linux64": "x86_64-linux", "win64": "x86_64-windows", "aarch64-linux": "aarch64-linux"}
# rows of the value-reference table (csrc/fmi3.c)
K_TIME, K_FLOAT64, K_SIZE, K_COUNT, K_INDICATORS = 0, 1, 2, 3, 4
_ELEMENT = re.compile(r"^(?P<pre>der\()?(?P<base>.+)\[(?P<i>[0-9]+)\](?P<post>\))?$")
CS_FLAGS = {
    "canHandleVariableCommunicationStepSize": "true",
    "canGetAndSetFMUState": "true",
    "canSerializeFMUState": "true",
    "providesDirectionalDerivatives": "false",
    "providesAdjointDerivatives": "false",
    "hasEventMode": "false",
    "providesIntermediateUpdate": "false",
    "canReturnEarlyAfterIntermediateUpdate": "false",
}
ME_FLAGS = {
    "needsCompletedIntegratorStep": "true",
    "canGetAndSetFMUState": "true",
    "canSerializeFMUState": "true",
    "providesDirectionalDerivatives": "false",
    "providesAdjointDerivatives": "false",
}
_VAR_ATTRS = ("description", "causality", "variability", "initial")
_REAL_ATTRS = ("unit", "min", "max")


@dataclass
class Variable3:
    """One FMI 3 variable: its FMI 2 scalars (value references = scalar
    indices of the runtime) and how it is described."""

    name: str
    scalars: list[int]
    attrs: dict
    real: dict
    array: bool
    starts: list[str] = field(default_factory=list)
    size_name: str = ""   # the structural parameter of its length (arrays)
    descriptions: list[str] = field(default_factory=list)


def _group(svs: list[Element]) -> list[Variable3]:
    """FMI 2 scalar variables grouped into FMI 3 variables (consecutive
    ``base[1..n]`` of one kind become an array)."""
    out: list[Variable3] = []
    for sv in svs:
        real = sv.find("Real") if sv.find("Real") is not None else sv.find("Integer")
        attrs = {k: sv.get(k) for k in _VAR_ATTRS if sv.get(k) is not None and k != "description"}
        reals = {k: real.get(k) for k in _REAL_ATTRS if real.get(k) is not None}
        m = _ELEMENT.match(sv.get("name"))
        vr = int(sv.get("valueReference"))
        if m and bool(m.group("pre")) == bool(m.group("post")):
            name = f"der({m.group('base')})" if m.group("pre") else m.group("base")
            last = out[-1] if out else None
            if (last is not None and last.array and last.name == name and last.attrs == attrs
                    and last.real == reals and int(m.group("i")) == len(last.scalars) + 1):
                last.scalars.append(vr)
                last.starts.append(real.get("start"))
                last.descriptions.append(sv.get("description") or "")
                continue
            if int(m.group("i")) == 1:
                out.append(Variable3(name, [vr], attrs, reals, True, [real.get("start")],
                                     descriptions=[sv.get("description") or ""]))
                continue
        out.append(Variable3(sv.get("name"), [vr], attrs, reals, False, [real.get("start")],
                             descriptions=[sv.get("description") or ""]))
    # a vector whose elements differ in unit or kind (a floating base's [x; quaternion; angles])
    # stays scalars named base[i], as in FMI 2: one FMI 3 array has one unit
    split = {m.group("base") for v in out if not v.array and (m := _ELEMENT.match(v.name))}
    exploded: list[Variable3] = []
    for v in out:
        base = v.name[4:-1] if v.name.startswith("der(") else v.name
        if v.array and base in split:
            for k, (vr, start, desc) in enumerate(zip(v.scalars, v.starts, v.descriptions), start=1):
                name = f"der({base}[{k}])" if v.name.startswith("der(") else f"{base}[{k}]"
                exploded.append(Variable3(name, [vr], dict(v.attrs), dict(v.real), False, [start],
                                          descriptions=[desc]))
        else:
            exploded.append(v)
    out = exploded
    for v in out:
        if v.array and len(v.scalars) == 1:
            v.array = False
            v.name = v.name + "[1]" if not v.name.startswith("der(") else v.name[:-1] + "[1])"
        v.attrs = {"description": _array_description(v.descriptions), **v.attrs} if any(v.descriptions) else v.attrs
    return out


def _array_description(descriptions: list[str]) -> str:
    """One description of an array's elements: theirs when equal, the
    pattern when they differ only by the element's number (``torque of joint
    i (i = 1..3)``), else the first one's with the count."""
    first, n = descriptions[0], len(descriptions)
    if n == 1 or all(d == first for d in descriptions):
        return first
    templates = {re.sub(rf"\b{k + 1}\b", "{i}", d) for k, d in enumerate(descriptions)}
    if len(templates) == 1 and "{i}" in next(iter(templates)):
        return next(iter(templates)).replace("{i}", "i") + f" (i = 1..{n})"
    words = [d.split() for d in descriptions]
    common = 0
    while all(len(w) > common + 1 and w[common] == words[0][common] for w in words):
        common += 1
    if common:
        return " ".join(words[0][:common]) + ": " + ", ".join(" ".join(w[common:]) for w in words)
    return "; ".join(descriptions)


def _size_name(name: str, size: int, taken: dict[str, int]) -> str:
    """The structural parameter of an array's length: ``n_<base>``, shared by
    arrays of one base name and length (``q`` and ``states.q``)."""
    base = name.removeprefix("der(").removesuffix(")").split(".")[-1]
    key = f"n_{re.sub(r'[^A-Za-z0-9_]', '_', base)}"
    candidate, k = key, 2
    while candidate in taken and taken[candidate] != size:
        candidate, k = f"{key}_{k}", k + 1
    taken[candidate] = size
    return candidate


def fmi3_description(root2: Element, counts: set[str], indicators: int, interfaces) -> tuple[Element, list]:
    """The FMI 3.0 model description and the value-reference table.

    Parameters
    ----------
    root2 : Element
        The native FMU's FMI 2.0 description (with Model Exchange).
    counts : set of str
        Names of the plant's count parameters (``UInt64`` in FMI 3).
    indicators : int
        Number of event indicators.
    interfaces : iterable of str
        ``"cs"``, ``"me"``.

    Returns
    -------
    (Element, list of (kind, first, count))
        The description and one table row per FMI 3 value reference (its index).
    """
    svs = root2.find("ModelVariables").findall("ScalarVariable")
    if [int(sv.get("valueReference")) for sv in svs] != list(range(len(svs))):
        raise ModelError("the FMI 2 value references are not the scalar indices 0..n-1")
    groups = _group(svs)
    by_scalar = {}
    rows: list[tuple[int, int, int]] = [(K_TIME, 0, 1)]
    root = Element("fmiModelDescription", fmiVersion="3.0", modelName=root2.get("modelName"),
                   instantiationToken=root2.get("guid"), generationTool=root2.get("generationTool"),
                   generationDateAndTime=root2.get("generationDateAndTime"), variableNamingConvention="structured")
    if root2.get("description"):
        root.set("description", root2.get("description"))
    ident = (root2.find("CoSimulation") if root2.find("CoSimulation") is not None
             else root2.find("ModelExchange")).get("modelIdentifier")
    # exact derivatives where the FMI 2 description claims them (dirder's flag): both FMI 3 kinds
    exact = any(n is not None and n.get("providesDirectionalDerivative") == "true"
                for n in (root2.find("CoSimulation"), root2.find("ModelExchange")))
    derivatives = {"providesDirectionalDerivatives": str(exact).lower(),
                   "providesAdjointDerivatives": str(exact).lower()}
    if "me" in interfaces:
        SubElement(root, "ModelExchange", modelIdentifier=ident, **{**ME_FLAGS, **derivatives})
    if "cs" in interfaces:
        SubElement(root, "CoSimulation", modelIdentifier=ident, **{**CS_FLAGS, **derivatives})
    for tag in ("UnitDefinitions", "LogCategories", "DefaultExperiment"):
        node = root2.find(tag)
        if node is not None:
            root.append(node)
    for category in root.iterfind("LogCategories/Category"):  # "Log messages with fmi2Warning status."
        if category.get("description"):
            category.set("description", category.get("description").replace("fmi2", "fmi3"))
    variables = SubElement(root, "ModelVariables")
    SubElement(variables, "Float64", name="time", valueReference="0", causality="independent",
               variability="continuous", description="simulation time, s")

    # the structural parameters of the array lengths first (a Dimension refers back to them)
    taken: dict[str, int] = {g.name: -1 for g in groups}  # never the name of another variable
    size_vr: dict[str, int] = {}
    for g in groups:
        if g.array:
            sname = _size_name(g.name, len(g.scalars), taken)
            if sname not in size_vr:
                size_vr[sname] = len(rows)
                rows.append((K_SIZE, -1, len(g.scalars)))
                SubElement(variables, "UInt64", name=sname, valueReference=str(size_vr[sname]),
                           description=f"number of elements of the arrays {sname[2:]} (fixed by the build)",
                           causality="structuralParameter", variability="fixed", start=str(len(g.scalars)))
            g.size_name = sname
    if indicators:
        size_vr["n_event_indicators"] = len(rows)
        rows.append((K_SIZE, -1, indicators))
        SubElement(variables, "UInt64", name="n_event_indicators", valueReference=str(len(rows) - 1),
                   description="number of event indicators (fixed by the build)",
                   causality="structuralParameter", variability="fixed", start=str(indicators))

    vr_of: dict[str, int] = {}
    for g in groups:
        vr = len(rows)
        vr_of[g.name] = vr
        for s in g.scalars:
            by_scalar[s] = vr
        if g.name in counts and not g.array:  # FMI 2's Integer calculatedParameter (.declare)
            rows.append((K_COUNT, g.scalars[0], 1))
            SubElement(variables, "UInt64", name=g.name, valueReference=str(vr), **g.attrs)
            continue
        rows.append((K_FLOAT64, g.scalars[0], len(g.scalars)))
        attrs = {"name": g.name, "valueReference": str(vr), **g.attrs, **g.real}
        if g.starts[0] is not None:
            attrs["start"] = " ".join(g.starts)
        node = SubElement(variables, "Float64", attrs)
        if g.array:
            SubElement(node, "Dimension", valueReference=str(size_vr[g.size_name]))
    # derivatives: the state variable each refers to
    index2 = {k + 1: sv for k, sv in enumerate(svs)}
    for node, g in zip(variables.findall("Float64")[1:], [g for g in groups if not (g.name in counts
                                                                                   and not g.array)]):
        first = index2[g.scalars[0] + 1].find("Real").get("derivative")
        if first is not None:
            state_scalar = int(index2[int(first)].get("valueReference"))
            node.set("derivative", str(by_scalar[state_scalar]))
    if indicators:
        vr = len(rows)
        rows.append((K_INDICATORS, 0, indicators))
        z = SubElement(variables, "Float64", name="event_indicators", valueReference=str(vr), causality="local",
                       variability="continuous", initial="calculated",
                       description="the event indicators (distances to the switches of the force elements)")
        SubElement(z, "Dimension", valueReference=str(size_vr["n_event_indicators"]))

    structure = SubElement(root, "ModelStructure")
    s2 = root2.find("ModelStructure")

    def unknowns(tag2: str, tag3: str) -> None:
        node2 = s2.find(tag2)
        if node2 is None:
            return
        seen: dict[int, set[int]] = {}
        for u in node2.findall("Unknown"):
            vr = by_scalar[int(index2[int(u.get("index"))].get("valueReference"))]
            deps = {by_scalar[int(index2[int(i)].get("valueReference"))] for i in u.get("dependencies", "").split()}
            seen.setdefault(vr, set()).update(deps)
        for vr, deps in seen.items():
            SubElement(structure, tag3, valueReference=str(vr), dependencies=" ".join(map(str, sorted(deps))))

    unknowns("Outputs", "Output")
    unknowns("Derivatives", "ContinuousStateDerivative")
    unknowns("InitialUnknowns", "InitialUnknown")
    if indicators:
        SubElement(structure, "EventIndicator", valueReference=str(len(rows) - 1))
    return root, rows
