"""System Structure and Parameterization (SSP 1.0): read and write systems.

Supported: one flat system of FMU components (``application/x-fmu-sharedlibrary``)
with connectors, connections between component connectors, parameter
bindings on components and on the system (inline ``ssv:ParameterSet`` or a
referenced ``.ssv`` file; a binding's ``prefix`` is prepended to the names of
its parameters), and ``DefaultExperiment``. Units follow SSP 1.0: a parameter
value given in another unit than its variable's is converted, and so is a
connection between connectors of different units, through the unit
definitions (``ssd:Units``, the parameter set's ``ssv:Units``, the FMUs'
``UnitDefinitions``); incompatible units are refused by name. The master's
step and algorithm travel in an ``ssc:Annotation`` of type
``org.mbfmu.master``; the Open Simulation Platform's step annotation
(``osp:FixedStepAlgorithm baseStepSize``) is read too. Files are validated against the SSP 1.0 schemas that
fmpy ships, on reading and before writing, so the output loads in
``fmpy.ssp`` and other SSP 1.0 engines. Not supported (reported as errors):
nested systems, system-level connectors, connection transformations,
parameter mappings and signal dictionaries.
"""
from __future__ import annotations

import dataclasses
import os
import weakref
import zipfile
from pathlib import Path
from typing import Any

from ..errors import CosimError, InputError
from ..untrusted.archive import extract
from ..untrusted.scratch import release
from .system import System
from .fmu_unit import FmuUnit
from .ssp_sources import SourceResolver
from .ssp_units import KNOWN, UnitDef, conversion, fmu_units, read_units

NS = {
    "ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
    "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
    "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
    "ssm": "http://ssp-standard.org/SSP1/SystemStructureParameterMapping",
}
MBFMU_NS = "https://mbfmu.org/ssp/master"
OSP_TYPE = "com.opensimulationplatform"
FMU_TYPE = "application/x-fmu-sharedlibrary"


def _schema(name: str):
    from lxml import etree
    import fmpy.ssp
    return etree.XMLSchema(file=os.path.join(os.path.dirname(fmpy.ssp.__file__), "schema", name))


def _validate(root, name: str, what: str) -> None:
    schema = _schema(name)
    if not schema.validate(root):
        errs = "\n  - ".join(f"line {e.line}: {e.message}" for e in schema.error_log)
        raise CosimError(f"{what} is not valid SSP 1.0 ({name}):\n  - {errs}")


def _value(p) -> tuple[str, Any, str | None] | None:
    """``(name, value, unit)`` of an ``ssv:Parameter``."""
    for typ, conv in (("Real", float), ("Integer", int), ("Boolean", lambda s: s in ("true", "1")),
                      ("String", str), ("Enumeration", str)):
        e = p.find(f"ssv:{typ}", NS)
        if e is not None:
            return p.get("name"), conv(e.get("value")), e.get("unit")
    return None


def _parameter_sets(binding, open_resource) -> list[tuple[str, Any, str | None, dict[str, UnitDef]]]:
    """``(name, value, unit, unit definitions of its set)`` of every parameter of a binding."""
    from lxml import etree
    out: list[tuple[str, Any, str | None, dict[str, UnitDef]]] = []
    sets = list(binding.findall("ssd:ParameterValues/ssv:ParameterSet", NS))
    src = binding.get("source")
    if src is not None:
        with open_resource(src) as f:
            root = etree.parse(f).getroot()
        _validate(root, "SystemStructureParameterValues.xsd", f"parameter file {src!r}")
        sets.append(root)
    for s in sets:
        defs = read_units(s.find("ssv:Units", NS), NS)
        for p in s.findall("ssv:Parameters/ssv:Parameter", NS):
            v = _value(p)
            if v is not None:
                out.append((*v, defs))
    return out


def _apply_binding(binding, open_resource, target: str, unit_of, set_value, defs: dict[str, UnitDef],
                   problems: list[str]) -> None:
    """Apply one parameter binding: names get the binding's ``prefix`` prepended
    (SSP 1.0), values are converted from their unit to the variable's."""
    prefix = binding.get("prefix") or ""
    for pname, v, unit, set_defs in _parameter_sets(binding, open_resource):
        name = prefix + pname
        try:
            conv = conversion(unit, unit_of(name), {**defs, **set_defs}, f"{target} parameter {name!r}")
            set_value(name, v if conv is None else conv[0] * v + conv[1])
        except Exception as exc:
            problems.append(f"{target} parameter binding {name!r}: {exc}")


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
        (:mod:`.ssp_sources`).

    Returns
    -------
    System
        With FMU units named after the components, the connections, the
        bound parameter values, and ``system.experiment`` holding
        ``start_time``/``stop_time`` (``DefaultExperiment``) and ``step``,
        ``algorithm`` (mbfmu annotation) where present. An archive is
        extracted into a private folder that lives as long as the system, so
        the units' paths exist for the whole run (isolated units' workers
        open them again).
    """
    from lxml import etree

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


def _read_ssd(path: Path, sources: SourceResolver, ssd: Path) -> System:
    """The system of the SSD file ``ssd``, its references resolved by ``sources``; ``path`` names it in messages."""
    from lxml import etree

    root = etree.parse(str(ssd)).getroot()
    _validate(root, "SystemStructureDescription.xsd", str(path))
    if not root.get("version", "").startswith("1."):
        raise CosimError(f"{str(path)!r}: SSP version {root.get('version')!r} is not 1.x")

    def open_resource(src: str):
        return open(sources.resolve(src, "parameter binding"), "rb")

    sysel = root.find("ssd:System", NS)
    problems: list[str] = []
    if sysel.find("ssd:Connectors", NS) is not None:
        problems.append("system-level connectors are not supported")
    if sysel.find("ssd:SignalDictionaries", NS) is not None:
        problems.append("signal dictionaries are not supported")
    if sysel.find("ssd:Elements/ssd:System", NS) is not None:
        problems.append("nested systems are not supported")
    system = System()
    defs = read_units(root.find("ssd:Units", NS), NS)
    conn_units: dict[str, dict[str, str]] = {}
    for comp in sysel.findall("ssd:Elements/ssd:Component", NS):
        name, src, typ = comp.get("name"), comp.get("source"), comp.get("type", FMU_TYPE)
        if typ != FMU_TYPE:
            problems.append(f"component {name!r}: type {typ!r} is not an FMU")
            continue
        try:
            fmu_path = sources.resolve(src, f"component {name!r}")
        except CosimError as exc:
            problems.append(str(exc).partition(": ")[2])
            continue
        unit = system.add(FmuUnit(fmu_path, name))
        defs = {**fmu_units(unit.md), **defs}  # the SSD's own definitions win
        conn_units[name] = _connector_units(comp)
        for b in comp.findall("ssd:ParameterBindings/ssd:ParameterBinding", NS):
            if b.find("ssd:ParameterMapping", NS) is not None:
                problems.append(f"component {name!r}: parameter mappings are not supported")
            _apply_binding(b, open_resource, f"component {name!r}:",
                           lambda n, u=unit, cn=name: _unit_of(system, cn, n, conn_units), unit.set, defs, problems)
    for b in sysel.findall("ssd:ParameterBindings/ssd:ParameterBinding", NS):
        def unit_of(full: str) -> str | None:
            un, _, var = full.partition(".")
            return _unit_of(system, un, var, conn_units)
        _apply_binding(b, open_resource, "system", unit_of, system.set, defs, problems)
    for c in sysel.findall("ssd:Connections/ssd:Connection", NS):
        se, sc, ee, ec = (c.get(k) for k in ("startElement", "startConnector", "endElement", "endConnector"))
        if se is None or ee is None:
            problems.append(f"connection {se}.{sc} -> {ee}.{ec}: connections to system connectors are not supported")
            continue
        if c.find("ssc:LinearTransformation", NS) is not None or len(c.findall("ssc:*", NS)):
            problems.append(f"connection {se}.{sc} -> {ee}.{ec}: transformations are not supported")
        system.connect(f"{se}.{sc}", f"{ee}.{ec}")
        try:
            _convert_connection(system, se, sc, ee, ec, conn_units, defs)
        except CosimError as exc:
            problems.append(str(exc))
    if problems:
        raise CosimError(f"{str(path)!r} cannot be loaded ({len(problems)} problems):\n  - " + "\n  - ".join(problems))
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
    system.experiment = exp
    return system


def _unit_of(system: System, comp: str, var: str, conn_units: dict[str, dict[str, str]]) -> str | None:
    """A component variable's unit: the FMU's declared one, else its SSD connector's."""
    u = system.units.get(comp)
    v = u.variables.get(var) if u is not None else None
    return (v.unit if v is not None else None) or conn_units.get(comp, {}).get(var)


def _convert_connection(system: System, se: str, sc: str, ee: str, ec: str, conn_units: dict[str, dict[str, str]],
                        defs: dict[str, UnitDef]) -> None:
    """Make the end unit convert what the connection brings from the start's unit to its own."""
    src, dst = system.units.get(se), system.units.get(ee)
    if src is None or dst is None or sc not in src.variables or ec not in dst.variables:
        return  # reported by System.validate
    su, du = _unit_of(system, se, sc, conn_units), _unit_of(system, ee, ec, conn_units)
    conv = conversion(su, du, defs, f"connection {se}.{sc} -> {ee}.{ec}")
    if conv is None:
        return
    dst.convert_input(ec, *conv)
    # the input now takes values in the start's unit (what System.validate checks)
    dst.variables[ec] = dataclasses.replace(dst.variables[ec], unit=su)


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
    bad = [u.name for u in system.units.values() if not isinstance(u, FmuUnit)]
    if bad:
        raise CosimError(f"only FMU units can be written to SSP; not FMUs: {', '.join(bad)}")
    system.validate()
    E = lambda tag, parent=None, **attrs: (etree.SubElement(parent, _q(tag), **attrs) if parent is not None
                                          else etree.Element(_q(tag), nsmap={k: NS[k] for k in ("ssd", "ssc", "ssv")}, **attrs))
    root = E("ssd:SystemStructureDescription", name=name, version="1.0", generationTool="mbfmu")
    sysel = E("ssd:System", root, name=name)
    elements = E("ssd:Elements", sysel)
    sources: dict[Path, str] = {}
    names: set[str] = set()
    used: dict[str, UnitDef | None] = {}  # units of the connectors and their definitions
    for u in system.units.values():
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
        comp = E("ssd:Component", elements, name=u.name, source=sources[src], type=FMU_TYPE)
        conns = E("ssd:Connectors", comp)
        for vname in [*u.inputs, *u.outputs, *[k for k in u.values if k not in u.inputs]]:
            v = u.variables[vname]
            kind = {"input": "input", "output": "output", "parameter": "parameter",
                    "calculatedParameter": "calculatedParameter"}.get(v.causality, "parameter")
            c = E("ssd:Connector", conns, name=vname, kind=kind)
            t = E(f"ssc:{v.type if v.type in ('Real', 'Integer', 'Boolean', 'String') else 'Real'}", c)
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
    if system.connections:
        cs = E("ssd:Connections", sysel)
        for c in system.connections:
            E("ssd:Connection", cs, startElement=c.src_unit, startConnector=c.src_var,
              endElement=c.dst_unit, endConnector=c.dst_var)
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
                unit = next(u for u in system.units.values() if u.path.resolve() == src)
                z.writestr(arc, _zip_folder(Path(unit._unzipdir)))
    return path


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


def _q(tag: str) -> str:
    prefix, local = tag.split(":")
    return f"{{{NS[prefix]}}}{local}"
