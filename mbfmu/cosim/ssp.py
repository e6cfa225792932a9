"""System Structure and Parameterization (SSP 1.0): read and write systems.

Supported: one flat system of FMU components (``application/x-fmu-sharedlibrary``)
with connectors, connections between component connectors, parameter
bindings on components and on the system (inline ``ssv:ParameterSet`` or a
referenced ``.ssv`` file, with ``prefix``), and ``DefaultExperiment``. The
master's step and algorithm travel in an ``ssc:Annotation`` of type
``org.mbfmu.master``. Files are validated against the SSP 1.0 schemas that
fmpy ships, on reading and before writing, so the output loads in
``fmpy.ssp`` and other SSP 1.0 engines. Not supported (reported as errors):
nested systems, system-level connectors, connection transformations,
parameter mappings and signal dictionaries.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ..errors import CosimError, InputError
from .system import System
from .fmu_unit import FmuUnit

NS = {
    "ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
    "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
    "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
    "ssm": "http://ssp-standard.org/SSP1/SystemStructureParameterMapping",
}
MBFMU_NS = "https://mbfmu.org/ssp/master"
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


def _value(p) -> tuple[str, Any] | None:
    for typ, conv in (("Real", float), ("Integer", int), ("Boolean", lambda s: s in ("true", "1")),
                      ("String", str), ("Enumeration", str)):
        e = p.find(f"ssv:{typ}", NS)
        if e is not None:
            return p.get("name"), conv(e.get("value"))
    return None


def _parameter_sets(binding, open_resource) -> list[tuple[str, Any]]:
    from lxml import etree
    out: list[tuple[str, Any]] = []
    sets = list(binding.findall("ssd:ParameterValues/ssv:ParameterSet", NS))
    src = binding.get("source")
    if src is not None:
        with open_resource(src) as f:
            root = etree.parse(f).getroot()
        _validate(root, "SystemStructureParameterValues.xsd", f"parameter file {src!r}")
        sets.append(root)
    for s in sets:
        for p in s.findall("ssv:Parameters/ssv:Parameter", NS):
            v = _value(p)
            if v is not None:
                out.append(v)
    return out


def read_ssp(path: str | Path) -> System:
    """Load a system from an ``.ssp`` archive or an ``.ssd`` file.

    Returns
    -------
    System
        With FMU units named after the components, the connections, the
        bound parameter values, and ``system.experiment`` holding
        ``start_time``/``stop_time`` (``DefaultExperiment``) and ``step``,
        ``algorithm`` (mbfmu annotation) where present.
    """
    from lxml import etree

    path = Path(path)
    if not path.exists():
        raise InputError(f"SSP file {str(path)!r} does not exist")
    if path.suffix == ".ssp":
        base = Path(tempfile.mkdtemp(prefix="mbfmu_ssp_"))
        try:
            with zipfile.ZipFile(path) as z:
                z.extractall(base)
        except zipfile.BadZipFile as exc:
            raise InputError(f"{str(path)!r} is not an SSP archive (zip): {exc}") from exc
        ssd = base / "SystemStructure.ssd"
        if not ssd.exists():
            raise InputError(f"{str(path)!r} has no SystemStructure.ssd")
    elif path.suffix == ".ssd":
        base, ssd = path.parent, path
    else:
        raise InputError(f"{str(path)!r}: expected an .ssp or .ssd file")
    root = etree.parse(str(ssd)).getroot()
    _validate(root, "SystemStructureDescription.xsd", str(path))
    if not root.get("version", "").startswith("1."):
        raise CosimError(f"{str(path)!r}: SSP version {root.get('version')!r} is not 1.x")

    def open_resource(src: str):
        p = (base / src) if not os.path.isabs(src) else Path(src)
        if not p.exists():
            raise CosimError(f"{str(path)!r}: referenced file {src!r} not found")
        return open(p, "rb")

    sysel = root.find("ssd:System", NS)
    problems: list[str] = []
    if sysel.find("ssd:Connectors", NS) is not None:
        problems.append("system-level connectors are not supported")
    if sysel.find("ssd:SignalDictionaries", NS) is not None:
        problems.append("signal dictionaries are not supported")
    if sysel.find("ssd:Elements/ssd:System", NS) is not None:
        problems.append("nested systems are not supported")
    system = System()
    for comp in sysel.findall("ssd:Elements/ssd:Component", NS):
        name, src, typ = comp.get("name"), comp.get("source"), comp.get("type", FMU_TYPE)
        if typ != FMU_TYPE:
            problems.append(f"component {name!r}: type {typ!r} is not an FMU")
            continue
        fmu_path = (base / src) if not os.path.isabs(src) else Path(src)
        if not fmu_path.exists():
            problems.append(f"component {name!r}: source {src!r} not found")
            continue
        unit = system.add(FmuUnit(fmu_path, name))
        for b in comp.findall("ssd:ParameterBindings/ssd:ParameterBinding", NS):
            if b.find("ssd:ParameterMapping", NS) is not None:
                problems.append(f"component {name!r}: parameter mappings are not supported")
            prefix = b.get("prefix") or ""
            for pname, v in _parameter_sets(b, open_resource):
                pname = pname[len(prefix):] if prefix and pname.startswith(prefix) else pname
                try:
                    unit.set(pname, v)
                except Exception as exc:
                    problems.append(f"component {name!r}: parameter binding {pname!r}: {exc}")
    for b in sysel.findall("ssd:ParameterBindings/ssd:ParameterBinding", NS):
        prefix = b.get("prefix") or ""
        for pname, v in _parameter_sets(b, open_resource):
            pname = pname[len(prefix):] if prefix and pname.startswith(prefix) else pname
            try:
                system.set(pname, v)
            except Exception as exc:
                problems.append(f"system parameter binding {pname!r}: {exc}")
    for c in sysel.findall("ssd:Connections/ssd:Connection", NS):
        se, sc, ee, ec = (c.get(k) for k in ("startElement", "startConnector", "endElement", "endConnector"))
        if se is None or ee is None:
            problems.append(f"connection {se}.{sc} -> {ee}.{ec}: connections to system connectors are not supported")
            continue
        if c.find("ssc:LinearTransformation", NS) is not None or len(c.findall("ssc:*", NS)):
            problems.append(f"connection {se}.{sc} -> {ee}.{ec}: transformations are not supported")
        system.connect(f"{se}.{sc}", f"{ee}.{ec}")
    if problems:
        raise CosimError(f"{str(path)!r} cannot be loaded ({len(problems)} problems):\n  - " + "\n  - ".join(problems))
    exp: dict[str, Any] = {}
    de = root.find("ssd:DefaultExperiment", NS)
    if de is not None:
        for k, key in (("startTime", "start_time"), ("stopTime", "stop_time")):
            if de.get(k) is not None:
                exp[key] = float(de.get(k))
    for a in root.iter(f"{{{NS['ssc']}}}Annotation"):
        if a.get("type") == "org.mbfmu.master":
            m = a.find(f"{{{MBFMU_NS}}}Master")
            if m is not None:
                if m.get("step"):
                    exp["step"] = float(m.get("step"))
                if m.get("algorithm"):
                    exp["algorithm"] = m.get("algorithm")
    system.experiment = exp
    return system


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
    used: set[str] = set()
    for u in system.units.values():
        src = u.path.resolve()
        if src not in sources:
            fname = src.name
            i = 1
            while fname in used:
                fname = f"{src.stem}_{i}{src.suffix}"
                i += 1
            used.add(fname)
            if path.suffix == ".ssp":
                sources[src] = f"resources/{fname}"
            else:
                sources[src] = os.path.relpath(src, path.parent.resolve())
        comp = E("ssd:Component", elements, name=u.name, source=sources[src], type=FMU_TYPE)
        conns = E("ssd:Connectors", comp)
        for vname in [*u.inputs, *u.outputs, *[k for k in u.values if k not in u.inputs]]:
            v = u.variables[vname]
            kind = {"input": "input", "output": "output", "parameter": "parameter",
                    "calculatedParameter": "calculatedParameter"}.get(v.causality, "parameter")
            c = E("ssd:Connector", conns, name=vname, kind=kind)
            E(f"ssc:{v.type if v.type in ('Real', 'Integer', 'Boolean', 'String') else 'Real'}", c)
        if u.values:
            pb = E("ssd:ParameterBindings", comp)
            b = E("ssd:ParameterBinding", pb)
            pv = E("ssd:ParameterValues", b)
            ps = E("ssv:ParameterSet", pv, version="1.0", name=f"{u.name}_parameters")
            params = E("ssv:Parameters", ps)
            for k, val in u.values.items():
                p = E("ssv:Parameter", params, name=k)
                _ssv_value(p, val, u.variables[k].type)
    if system.connections:
        cs = E("ssd:Connections", sysel)
        for c in system.connections:
            E("ssd:Connection", cs, startElement=c.src_unit, startConnector=c.src_var,
              endElement=c.dst_unit, endConnector=c.dst_var)
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
            z.write(src, arc)
    return path


def _q(tag: str) -> str:
    prefix, local = tag.split(":")
    return f"{{{NS[prefix]}}}{local}"
