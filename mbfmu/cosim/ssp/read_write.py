"""System Structure and Parameterization (SSP 1.0): read and write systems.

Supported: systems of FMU components (``application/x-fmu-sharedlibrary``)
with connectors; nested systems, flattened into units named by their path
(``Right/Inner/Mass2``, :mod:`.hierarchy`), with connections through
system connectors followed to the components; parameter bindings on
components and systems (inline ``ssv:ParameterSet`` or an ``.ssv`` file, a
binding's ``prefix`` prepended, hierarchical names on systems, higher levels
winning) with parameter mappings (``.ssm``, inline or a file,
:mod:`.bindings`); linear, Boolean and Integer mapping transformations on
connections and mapping entries (:mod:`.transforms`); and
``DefaultExperiment``. Units follow SSP 1.0: a parameter value given in
another unit than its variable's is converted, and so is a connection between
connectors of different units, through the unit definitions (``ssd:Units``,
the parameter set's ``ssv:Units``, the FMUs' ``UnitDefinitions``),
before any linear transformation; incompatible units are refused by name. The
master's step and algorithm travel in an ``ssc:Annotation`` of type
``org.mbfmu.master``; the Open Simulation Platform's step annotation
(``osp:FixedStepAlgorithm baseStepSize``) is read too. FMI 3.0 clocks: SSP 1.0
has no Clock type, so a clock's connector is written without a type (SSP 1.0:
the FMU variable's type is then used) and marked by an ``ssc:Annotation`` of
type ``org.mbfmu.clock``; on reading, a connector typed Real, Integer, Boolean
or String on an FMU clock is refused by name (the standard calls a type that
differs from the FMU variable's an error), and so is the clock annotation on a
variable that is no clock. Files are validated
against the SSP 1.0 schemas that fmpy ships, on reading and before writing,
so the output loads in ``fmpy.ssp`` and other SSP 1.0 engines. Not supported
(all reported in one error): signal dictionaries, enumeration mappings,
components that are not FMUs, files relative to a component
(``sourceBase="component"``).
"""
from __future__ import annotations

import dataclasses
import os
import weakref
import zipfile
from pathlib import Path
from typing import Any

from ...errors import CosimError, InputError
from ...untrusted.archive import extract
from ...untrusted.limits import limits, size_text
from ...untrusted.scratch import release
from ..system import Connection, System
from ..fmi.fmu_open import open_fmu
from ..fmi.fmu_unit import FmuUnit
from . import bindings, transforms
from .hierarchy import SEP, Hierarchy
from .sources import SourceResolver
from .units import KNOWN, UnitDef, conversion, fmu_units, read_units

NS = {
    "ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
    "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
    "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
    "ssm": "http://ssp-standard.org/SSP1/SystemStructureParameterMapping",
}
MBFMU_NS = "https://mbfmu.org/ssp/master"
CLOCK_TYPE = "org.mbfmu.clock"  # ssc:Annotation type marking a clock's connector
CLOCK_NS = "https://mbfmu.org/ssp/clock"
OSP_TYPE = "com.opensimulationplatform"
FMU_TYPE = "application/x-fmu-sharedlibrary"


def _validate(root, name: str, what: str) -> None:
    bindings.validate(root, name, what)


def _connector_units(comp) -> dict[str, str]:
    out = {}
    for c in comp.findall("ssd:Connectors/ssd:Connector", NS):
        for e in c:
            if e.get("unit"):
                out[c.get("name")] = e.get("unit")
    return out


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _osp_step(annotation) -> float | None:
    """The base step [s] of an OSP ``FixedStepAlgorithm`` annotation, if any."""
    for e in annotation.iter():
        if isinstance(e.tag, str) and _local(e.tag) == "FixedStepAlgorithm":
            value = e.get("baseStepSize") or e.get("stepSize")
            return float(value) if value else None
    return None


def read_ssp(path: str | Path, *, allow_external: bool = False) -> System:
    """Load a system from an ``.ssp`` archive or an ``.ssd`` file.

    Parameters
    ----------
    path : str or Path
        The ``.ssp`` archive or the ``.ssd`` file (FMUs referenced from it by
        relative path).
    allow_external : bool
        Accept FMU and parameter files outside the archive (or the ``.ssd``'s
        folder); by default such references are refused
        (:mod:`~mbfmu.cosim.ssp.sources`).

    Returns
    -------
    System
        With FMU units named after the components (``System/Component``
        inside nested systems), a ``<unit>:<input>:map`` unit per Integer
        table on a connection, the flattened connections, the bound
        parameter values, ``system.experiment`` holding
        ``start_time``/``stop_time`` (``DefaultExperiment``) and ``step``,
        ``algorithm`` (mbfmu annotation) where present, and
        ``system.transformations``: ``{"unit.input": transformation}`` for
        the connections that declared one (what :func:`write_ssp` writes back).
        An archive is extracted into a private folder that lives as long as
        the system, so the units' paths exist for the whole run (isolated
        units' workers open them again).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"SSP file {str(path)!r} does not exist")
    if path.suffix == ".ssd":
        return _read_ssd(path, SourceResolver(path.parent, repr(str(path)), allow_external), path)
    if path.suffix != ".ssp":
        raise InputError(f"{str(path)!r}: expected an .ssp or .ssd file")
    base = extract(path, f"SSP {str(path)!r}", "ssp", noun="SSP archive")  # bounded and contained (mbfmu.untrusted.archive)
    try:
        ssd = base / "SystemStructure.ssd"
        if not ssd.exists():
            raise InputError(f"{str(path)!r} has no SystemStructure.ssd")
        system = _read_ssd(path, SourceResolver(base, repr(str(path)), allow_external, path.parent), ssd)
    except BaseException:
        release(base)
        raise
    # the extracted archive lives as long as the system: its units' files stay where
    # their paths say (isolated units' workers open them again), then it goes
    system._archive_dir = base
    weakref.finalize(system, release, base)
    return system


def _bound_expansion(system: System, path: Path) -> None:
    """Refuse the system once its units' extracted FMUs (each folder counted once:
    units of one FMU share it) pass the expansion limit of one archive."""
    folders = {u._unzipdir: u.extracted_bytes for u in system.units.values() if isinstance(u, FmuUnit)}
    total, lim = sum(folders.values()), limits().max_expand_bytes
    if total > lim:
        raise InputError(f"{str(path)!r}: its components' FMUs expand to {size_text(total)} together, above the "
                         f"limit of {size_text(lim)} (MBFMU_MAX_EXPAND_BYTES); refused")


def _read_ssd(path: Path, sources: SourceResolver, ssd: Path) -> System:
    """The system of the SSD file ``ssd``, its references resolved by ``sources``; ``path`` names it in messages."""
    root = bindings.parse(str(ssd), repr(str(path)))
    _validate(root, "SystemStructureDescription.xsd", str(path))
    if not root.get("version", "").startswith("1."):
        raise CosimError(f"{str(path)!r}: SSP version {root.get('version')!r} is not 1.x")

    def open_resource(src: str):
        return open(sources.resolve(src, "parameter binding"), "rb")

    tree = Hierarchy(root.find("ssd:System", NS))
    problems: list[str] = list(tree.problems)
    for spath, sysel in tree.systems.items():
        where = f"system {'.'.join(spath)!r}" if spath else "the top-level system"
        if sysel.find("ssd:SignalDictionaries", NS) is not None or sysel.find("ssd:Elements/ssd:SignalDictionaryReference", NS) is not None:
            problems.append(f"{where}: signal dictionaries are not supported")
    system = System()
    system.transformations = {}
    defs = read_units(root.find("ssd:Units", NS), NS)
    conn_units: dict[str, dict[str, str]] = {}
    for name, comp, _ in tree.components:
        src, typ = comp.get("source"), comp.get("type", FMU_TYPE)
        if typ != FMU_TYPE:
            problems.append(f"component {name!r}: type {typ!r} is not an FMU")
            continue
        try:
            fmu_path = sources.resolve(src, f"component {name!r}")
        except CosimError as exc:
            problems.append(str(exc).partition(": ")[2])
            continue
        unit = system.add(open_fmu(fmu_path, name))
        _bound_expansion(system, path)
        defs = {**fmu_units(unit.md), **defs}  # the SSD's own definitions win
        conn_units[name] = _connector_units(comp)
        problems += _clock_problems(comp, unit, name)
    _apply_bindings(tree, system, open_resource, conn_units, defs, problems)
    refused: set[int] = set()  # hops whose transformation is refused: every one is reported, none followed
    for hop in tree.hops:
        try:
            transforms.read(hop.element, f"connection {hop.label()}")
        except CosimError as exc:
            problems.append(str(exc))
            refused.add(id(hop))
    for src, dst, hops in tree.flat_connections():
        if any(id(h) in refused for h in hops):
            continue
        system.connect(f"{src[1]}.{src[2]}", f"{dst[1]}.{dst[2]}")
        try:
            _transform_connection(system, tree, src, dst, hops, conn_units, defs)
        except CosimError as exc:
            problems.append(str(exc))
    problems.extend(p for p in tree.problems if p not in problems)  # loops found while following
    if problems:
        raise CosimError(f"{str(path)!r} cannot be loaded ({len(problems)} problems):\n  - " + "\n  - ".join(problems))
    system.experiment = _experiment(root)
    return system


def _apply_bindings(tree: Hierarchy, system: System, open_resource, conn_units: dict[str, dict[str, str]],
                    defs: dict[str, UnitDef], problems: list[str]) -> None:
    """Every parameter binding: components first, then systems from the innermost
    out (SSP 1.0: higher levels take precedence); problems are appended."""
    for name, comp, _ in tree.components:
        unit = system.units.get(name)
        if unit is None:
            continue
        resolve = lambda n, u=unit, cn=name: [(u, n, _unit_of(system, cn, n, conn_units))]
        for b in comp.findall("ssd:ParameterBindings/ssd:ParameterBinding", NS):
            bindings.apply(b, open_resource, f"component {name!r}:", resolve, defs, problems)
    for spath in sorted(tree.systems, key=len, reverse=True):
        label = f"system {'.'.join(spath)!r}" if spath else "system"

        def resolve(n: str, spath=spath, label=label):
            keys = tree.resolve(spath, n)
            if not keys:
                raise CosimError(f"{label} has no parameter, connector or element variable {n!r}")
            return [(system.units[k[1]], k[2], _unit_of(system, k[1], k[2], conn_units)) for k in keys
                    if k[1] in system.units]
        for b in tree.systems[spath].findall("ssd:ParameterBindings/ssd:ParameterBinding", NS):
            bindings.apply(b, open_resource, label, resolve, defs, problems)


def _experiment(root) -> dict[str, Any]:
    """``start_time``, ``stop_time`` (``DefaultExperiment``), ``step`` and ``algorithm`` (annotations) of an SSD."""
    exp: dict[str, Any] = {}
    de = root.find("ssd:DefaultExperiment", NS)
    if de is not None:
        for k, key in (("startTime", "start_time"), ("stopTime", "stop_time")):
            if de.get(k) is not None:
                exp[key] = float(de.get(k))
    for a in root.iter(f"{{{NS['ssc']}}}Annotation"):
        if a.get("type") == OSP_TYPE and _osp_step(a) is not None:
            exp.setdefault("step", _osp_step(a))
        if a.get("type") == "org.mbfmu.master":
            m = a.find(f"{{{MBFMU_NS}}}Master")
            if m is not None:
                if m.get("step"):  # mbfmu's own annotation wins over OSP's
                    exp["step"] = float(m.get("step"))
                if m.get("algorithm"):
                    exp["algorithm"] = m.get("algorithm")
    return exp


def _unit_of(system: System, comp: str, var: str, conn_units: dict[str, dict[str, str]]) -> str | None:
    """A component variable's unit: the FMU's declared one, else its SSD connector's."""
    u = system.units.get(comp)
    v = u.variables.get(var) if u is not None else None
    return (v.unit if v is not None else None) or conn_units.get(comp, {}).get(var)


def _transform_connection(system: System, tree: Hierarchy, src: tuple, dst: tuple, hops: list,
                          conn_units: dict[str, dict[str, str]], defs: dict[str, UnitDef]) -> None:
    """Make the end unit convert and transform what the connection brings: along
    each hop, the unit conversion from the value's unit to the hop's end connector's
    (unless ``suppressUnitConversion``), then the hop's transformation (SSP 1.0 order)."""
    (_, se, sc), (_, ee, ec) = src, dst
    su_, du_ = system.units.get(se), system.units.get(ee)
    if su_ is None or du_ is None or sc not in su_.variables or ec not in du_.variables:
        return  # reported by System.validate
    typ = su_.variables[sc].type
    label = f"connection {se}.{sc} -> {ee}.{ec}"
    unit = _unit_of(system, se, sc, conn_units)
    total: transforms.Transformation | None = None
    declared = False
    for hop in hops:
        end = hop.end
        if end[0] == "u":
            end_unit = _unit_of(system, end[1], end[2], conn_units)
        else:
            c = tree.system_connectors.get(end[1], {}).get(end[2])
            end_unit = c.unit if c is not None else None
        t = transforms.read(hop.element, f"connection {hop.label()}")
        suppress = isinstance(t, transforms.Linear) and t.suppress_units
        if suppress and t.affine() == (1.0, 0.0):  # suppressUnitConversion alone: valid for every type
            declared, t = True, None
        if typ == "Real" and unit and end_unit and not suppress:
            conv = conversion(unit, end_unit, defs, label if len(hops) == 1 else f"connection {hop.label()}")
            if conv is not None:
                total = transforms.compose(total, transforms.Linear(*conv))
        unit = end_unit or unit  # a connector without unit passes the value's on
        if t is not None:
            declared = True
            transforms.check_type(t, typ, f"connection {hop.label()}")
            total = transforms.compose(total, transforms.Linear(t.factor, t.offset) if suppress else t)
    if declared and (typ == "Real" or total is not None):  # for write_ssp: the whole path as one transformation
        system.transformations[f"{ee}.{ec}"] = (dataclasses.replace(total or transforms.Linear(), suppress_units=True)
                                                if typ == "Real" else total)
    if total is None:
        return
    aff = total.affine()
    if aff is None:  # an Integer table: a unit of its own between the two ends
        mapper = system.add(transforms.map_unit(total, f"{ee}.{ec}"))
        system.connections = [c for c in system.connections if c.dst != f"{ee}.{ec}"]
        system.connect(f"{se}.{sc}", f"{mapper.name}.u")
        system.connect(f"{mapper.name}.y", f"{ee}.{ec}")
        return
    if aff != (1.0, 0.0):
        du_.convert_input(ec, *aff)
    su = _unit_of(system, se, sc, conn_units)
    if su != du_.variables[ec].unit:  # the input now takes values in the start's unit (what System.validate checks)
        du_.variables[ec] = dataclasses.replace(du_.variables[ec], unit=su)


def _ssv_value(parent, value: Any, vtype: str) -> None:
    from lxml import etree
    e = etree.SubElement(parent, f"{{{NS['ssv']}}}{vtype}")
    if vtype == "Boolean":
        e.set("value", "true" if value else "false")
    elif vtype == "Integer":
        e.set("value", str(int(value)))
    elif vtype == "Real":
        e.set("value", repr(float(value)))
    else:
        e.set("value", str(value))


def write_ssp(system: System, path: str | Path, *, stop_time: float | None = None, start_time: float = 0.0,
              step: float | None = None, algorithm: str | None = None, name: str = "system") -> Path:
    """Write ``system`` as SSP 1.0: an ``.ssp`` archive (FMUs under
    ``resources/``) or an ``.ssd`` file (FMUs referenced by relative path).

    Only FMU units can be written; other units are reported in one error.

    Parameters
    ----------
    system : System
        The system (FMU units only), validated first.
    path : str or Path
        ``.ssp`` or ``.ssd`` file to write.
    stop_time, start_time : float, optional
        The ``DefaultExperiment`` interval, s.
    step : float, optional
        Communication step, s (written in an mbfmu annotation).
    algorithm : {"jacobi", "gauss-seidel"}, optional
        Master algorithm (mbfmu annotation).
    name : str
        Name of the system in the SSD.

    Returns
    -------
    Path
        The file written.
    """
    from lxml import etree

    path = Path(path)
    if path.suffix not in (".ssp", ".ssd"):
        raise InputError(f"{str(path)!r}: write an .ssp or .ssd file")
    mappers = {n: u for n, u in system.units.items() if transforms.is_map_unit(u)}
    bad = [u.name for u in system.units.values() if not isinstance(u, FmuUnit) and u.name not in mappers]
    if bad:
        raise CosimError(f"only FMU units can be written to SSP; not FMUs: {', '.join(bad)}")
    systems = {tuple(n.split(SEP)[:k]) for n in system.units for k in range(1, len(n.split(SEP)))}
    clash = [n for n in system.units if tuple(n.split(SEP)) in systems or "" in n.split(SEP)]
    if clash:
        raise CosimError(f"unit names cannot be written as nested systems ({SEP!r} separates a system from what "
                         f"it holds): {', '.join(clash)} (a system of that name holds other units, or a part is empty)")
    system.validate()
    E = lambda tag, parent=None, **attrs: (etree.SubElement(parent, _q(tag), **attrs) if parent is not None
                                          else etree.Element(_q(tag), nsmap={k: NS[k] for k in ("ssd", "ssc", "ssv")}, **attrs))
    root = E("ssd:SystemStructureDescription", name=name, version="1.0", generationTool="mbfmu")
    sysel = E("ssd:System", root, name=name)
    nest = _Nesting(sysel, E)
    sources: dict[Path, str] = {}
    names: set[str] = set()
    used: dict[str, UnitDef | None] = {}  # units of the connectors and their definitions
    for u in system.units.values():
        if u.name in mappers:
            continue
        src = u.path.resolve()
        if src not in sources:
            fname = src.name
            i = 1
            while fname in names:
                fname = f"{src.stem}_{i}{src.suffix}"
                i += 1
            names.add(fname)
            if path.suffix == ".ssp":
                sources[src] = f"resources/{fname}"
            elif not src.exists():  # read from an SSP archive, which is not kept: write it beside
                (path.parent / fname).write_bytes(_zip_folder(Path(u._unzipdir)))
                sources[src] = fname
            else:
                sources[src] = os.path.relpath(src, path.parent.resolve())
        comp = E("ssd:Component", nest.elements(_path(u.name)), name=u.name.split(SEP)[-1], source=sources[src],
                 type=FMU_TYPE)
        conns = E("ssd:Connectors", comp)
        for vname in [*u.inputs, *u.outputs, *[k for k in u.values if k not in u.inputs]]:
            v = u.variables[vname]
            kind = {"input": "input", "output": "output", "parameter": "parameter",
                    "calculatedParameter": "calculatedParameter"}.get(v.causality, "parameter")
            c = E("ssd:Connector", conns, name=vname, kind=kind)
            t = _connector_type(E, c, _vtype(u, vname))
            if v.type == "Real" and v.unit:
                t.set("unit", v.unit)
                used.setdefault(v.unit, _definition(u, v.unit))
        if u.values:
            pb = E("ssd:ParameterBindings", comp)
            b = E("ssd:ParameterBinding", pb)
            pv = E("ssd:ParameterValues", b)
            ps = E("ssv:ParameterSet", pv, version="1.0", name=f"{u.name}_parameters")
            params = E("ssv:Parameters", ps)
            set_units: dict[str, UnitDef | None] = {}
            for k, val in u.values.items():
                p = E("ssv:Parameter", params, name=k)
                v = u.variables[k]
                _ssv_value(p, val, v.type)
                if v.type == "Real" and v.unit:
                    p[0].set("unit", v.unit)
                    set_units.setdefault(v.unit, _definition(u, v.unit))
            _write_units(E("ssv:Units", ps), set_units, ps)
    transformations = getattr(system, "transformations", {})  # from read_ssp
    into = {c.dst_unit: c for c in system.connections if c.dst_unit in mappers}
    for c in system.connections:
        if c.dst_unit in mappers:
            continue
        if c.src_unit in mappers:  # source -> map unit -> input: one connection with the table
            c = Connection(into[c.src_unit].src_unit, into[c.src_unit].src_var, c.dst_unit, c.dst_var)
        nest.connect(system, c, transformations.get(c.dst))
    nest.finish()
    if any(d is not None for d in used.values()):
        _write_units(E("ssd:Units", root), used, root)
    if stop_time is not None:
        E("ssd:DefaultExperiment", root, startTime=repr(float(start_time)), stopTime=repr(float(stop_time)))
    if step is not None or algorithm is not None:
        anns = E("ssd:Annotations", root)
        a = E("ssc:Annotation", anns, type="org.mbfmu.master")
        m = etree.SubElement(a, f"{{{MBFMU_NS}}}Master", nsmap={"mbfmu": MBFMU_NS})
        if step is not None:
            m.set("step", repr(float(step)))
        if algorithm is not None:
            m.set("algorithm", algorithm)
    _validate(root, "SystemStructureDescription.xsd", "the written system")
    xml = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    if path.suffix == ".ssd":
        path.write_bytes(xml)
        return path
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("SystemStructure.ssd", xml)
        for src, arc in sources.items():
            if src.exists():
                z.write(src, arc)
            else:  # a unit read from an SSP archive, which is not kept: zip its extracted FMU again
                unit = next(u for u in system.units.values() if isinstance(u, FmuUnit) and u.path.resolve() == src)
                z.writestr(arc, _zip_folder(Path(unit._unzipdir)))
    return path


def _path(unit: str) -> tuple[str, ...]:
    """The systems holding unit ``unit`` (``"B/C"`` is component ``C`` of system ``B``)."""
    return tuple(unit.split(SEP)[:-1])


class _Nesting:
    """The nested ``ssd:System`` elements of a written system, and the system
    connectors that carry connections between units of different systems."""

    def __init__(self, top: Any, E: Any) -> None:
        self.E = E
        self.parts: dict[tuple[str, ...], dict[str, Any]] = {}
        self._exposed: dict[tuple, str] = {}
        self._make((), top)

    def _make(self, path: tuple[str, ...], el: Any) -> None:
        E = self.E
        self.parts[path] = {"system": el, "connectors": E("ssd:Connectors", el), "elements": E("ssd:Elements", el),
                            "connections": E("ssd:Connections", el)}

    def _part(self, path: tuple[str, ...], what: str) -> Any:
        if path not in self.parts:
            parent = self._part(path[:-1], "elements")
            self._make(path, self.E("ssd:System", parent, name=path[-1]))
        return self.parts[path][what]

    def elements(self, path: tuple[str, ...]) -> Any:
        return self._part(path, "elements")

    def _expose(self, unit: str, var: str, vtype: str, kind: str, common: tuple[str, ...]) -> tuple[str, str]:
        """``(element, connector)`` by which the system ``common`` reaches ``unit.var``,
        adding a connector (named after the inner variable, ``C.x``) on each system in between."""
        path = _path(unit)
        elem, conn = unit.split(SEP)[-1], var
        while len(path) > len(common):
            cname = f"{elem}.{conn}"
            key = (path, cname, kind)
            if key not in self._exposed or kind == "input":
                self._exposed[key] = cname
                c = self.E("ssd:Connector", self._part(path, "connectors"), name=cname, kind=kind)
                _connector_type(self.E, c, vtype)
                ends = ({"startElement": elem, "startConnector": conn, "endConnector": cname} if kind == "output"
                        else {"startConnector": cname, "endElement": elem, "endConnector": conn})
                self.E("ssd:Connection", self._part(path, "connections"), **ends)
            elem, conn, path = path[-1], cname, path[:-1]
        return elem, conn

    def connect(self, system: System, c: Any, transformation: Any) -> None:
        """Write connection ``c``, through system connectors where it crosses systems;
        its transformation goes on the hop that ends at the input."""
        ps, pd = _path(c.src_unit), _path(c.dst_unit)
        n = 0
        while n < min(len(ps), len(pd)) and ps[n] == pd[n]:
            n += 1
        common = ps[:n]
        vtype = _vtype(system.units[c.src_unit], c.src_var)
        se, sc = self._expose(c.src_unit, c.src_var, vtype, "output", common)
        ee, ec = self._expose(c.dst_unit, c.dst_var, vtype, "input", common)
        conn = self.E("ssd:Connection", self._part(common, "connections"), startElement=se, startConnector=sc,
                      endElement=ee, endConnector=ec)
        if transformation is not None:
            last = conn if pd == common else self._part(pd, "connections")[-1]  # written by _expose just now
            if getattr(transformation, "suppress_units", False):
                last.set("suppressUnitConversion", "true")
            transformation.to_xml(last)

    def finish(self) -> None:
        """Drop the empty parts (the schema wants none)."""
        for part in self.parts.values():
            for what in ("connectors", "elements", "connections"):
                if not len(part[what]):
                    part["system"].remove(part[what])


def _zip_folder(folder: Path) -> bytes:
    """The bytes of a zip archive of ``folder`` (an extracted FMU)."""
    import io
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(folder).as_posix())
    return buf.getvalue()


def _definition(unit: FmuUnit, name: str) -> UnitDef | None:
    """The definition of unit symbol ``name``: the FMU's, else a known SI unit's."""
    return fmu_units(unit.md).get(name) or KNOWN.get(name)


def _write_units(parent, defs: dict[str, UnitDef | None], owner) -> None:
    """Fill an ``ssd:Units``/``ssv:Units`` element; drop it when nothing is defined."""
    for name, d in defs.items():
        if d is not None:
            d.to_xml(parent, name, NS["ssc"])
    if not len(parent):
        owner.remove(parent)


def _vtype(unit: Any, var: str) -> str:
    """The SSP type of ``unit.var``: ``"Clock"`` for an FMI 3.0 clock, else the variable's type."""
    return "Clock" if var in getattr(unit, "clocks", {}) else unit.variables[var].type


def _connector_type(E: Any, connector: Any, vtype: str) -> Any:
    """Write the type of ``connector``: its ``ssc:`` type element, or for a clock none
    (SSP 1.0 then takes the FMU variable's type) and the ``org.mbfmu.clock`` annotation."""
    if vtype != "Clock":
        return E(f"ssc:{vtype if vtype in ('Real', 'Integer', 'Boolean', 'String') else 'Real'}", connector)
    from lxml import etree
    a = E("ssc:Annotation", E("ssd:Annotations", connector), type=CLOCK_TYPE)
    return etree.SubElement(a, f"{{{CLOCK_NS}}}Clock", nsmap={"mbfmuclock": CLOCK_NS})


def _clock_problems(comp: Any, unit: FmuUnit, name: str) -> list[str]:
    """What is wrong with the clock connectors of component ``comp`` (its unit ``unit``)."""
    clocks = getattr(unit, "clocks", {})
    problems = []
    for c in comp.findall("ssd:Connectors/ssd:Connector", NS):
        cname = c.get("name")
        typed = [_local(e.tag) for e in c if _local(e.tag) in ("Real", "Integer", "Boolean", "String", "Enumeration",
                                                                 "Binary")]
        marked = any(a.get("type") == CLOCK_TYPE for a in c.findall("ssd:Annotations/ssc:Annotation", NS))
        if cname in clocks and typed:
            problems.append(f"connector {name}.{cname} is typed {typed[0]}, but the FMU variable is a clock (SSP 1.0 "
                            "has no Clock type: leave the type out)")
        elif marked and cname not in clocks:
            problems.append(f"connector {name}.{cname} is marked as a clock ({CLOCK_TYPE}), but the FMU has no "
                            "clock of that name")
    return problems


def _q(tag: str) -> str:
    prefix, local = tag.split(":")
    return f"{{{NS[prefix]}}}{local}"
