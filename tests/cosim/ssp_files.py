"""SSP files written by hand for the SSP tests: an archive of a system with
parameter bindings and mappings, and FMUs whose variables are declared in
other units."""
from __future__ import annotations

import math
import zipfile
from pathlib import Path

from lxml import etree



def ssd_head(name: str, namespace: str) -> str:
    """The opening of an SSD called ``name``: the SSP 1.0 namespaces and ``namespace``
    (one more ``xmlns:`` attribute)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="{name}"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues"
    {namespace}>
"""


MAPPING_HEAD = ssd_head("Maps", 'xmlns:ssm="http://ssp-standard.org/SSP1/SystemStructureParameterMapping"') + \
    '<ssd:System name="s">'


def mapping_archive(tmp_path: Path, body: str, files: dict[str, Path | str], name: str = "maps.ssp", after: str = "") -> Path:
    """An archive of the top-level system ``body`` (``after`` it: units, experiment) and ``files``."""
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", MAPPING_HEAD + body + "</ssd:System>" + after + "</ssd:SystemStructureDescription>\n")
        for arc, f in files.items():
            if isinstance(f, Path):
                z.write(f, arc)
            else:
                z.writestr(arc, f)
    return path


def parameter(name: str, typ: str, value, unit: str | None = None) -> str:
    """An ``ssv:Parameter`` of SSP type ``typ`` (``Real``, ``Integer``, ...)."""
    u = f' unit="{unit}"' if unit else ""
    return f'<ssv:Parameter name="{name}"><ssv:{typ} value="{value}"{u}/></ssv:Parameter>'


def parameter_set(params: str, units: str = "") -> str:
    """An ``ssv:ParameterSet`` of ``params`` (and its unit definitions)."""
    return f'<ssv:ParameterSet version="1.0" name="set"><ssv:Parameters>{params}</ssv:Parameters>{units}</ssv:ParameterSet>'


def mapping_binding(params: str = "", mapping: str = "", source: str | None = None, units: str = "") -> str:
    """An ``ssd:ParameterBindings`` with inline values, a mapping, or a ``source`` file."""
    src = f' source="{source}"' if source else ""
    values = f"<ssd:ParameterValues>{parameter_set(params, units)}</ssd:ParameterValues>" if params else ""
    return f"<ssd:ParameterBindings><ssd:ParameterBinding{src}>{values}{mapping}</ssd:ParameterBinding></ssd:ParameterBindings>"


def with_units(fmu: Path, out: Path, units: dict[str, str], defs: dict[str, dict[str, str]]) -> Path:
    """A copy of ``fmu`` whose variables ``units`` are declared in other units, defined in ``defs``."""
    with zipfile.ZipFile(fmu) as z:
        files = {n: z.read(n) for n in z.namelist()}
    root = etree.fromstring(files["modelDescription.xml"])
    ud = root.find("UnitDefinitions")
    for name, base in defs.items():
        etree.SubElement(etree.SubElement(ud, "Unit", name=name), "BaseUnit", **base)
    for sv in root.iter("ScalarVariable"):
        if sv.get("name") in units:
            sv[0].set("unit", units[sv.get("name")])
    files["modelDescription.xml"] = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    with zipfile.ZipFile(out, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    return out


SPEED = {"rad/s": {"rad": "1", "s": "-1"}, "rpm": {"rad": "1", "s": "-1", "factor": repr(2 * math.pi / 60)}}
