"""SSP 1.0 nested systems and system connectors (issue 25 item 7): a hand-written
SSD with two levels of subsystems, whose connections run through system
connectors, loads as the flat system built by hand (units named by their path,
``Right/Inner/Mass2``) and runs identically; bindings on systems reach the
components by hierarchical name, higher levels win; ``write_ssp`` writes the
nesting back and reading that again gives the same system and run."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
from lxml import etree

from mbfmu.cosim import FmuUnit, System, read_ssp, simulate, write_ssp
from mbfmu.errors import CosimError

from .helpers import D1, D2, DC, K1, K2, KC, M1, M2

HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="Nested"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
"""


def _connectors(**kinds: str) -> str:
    return "<ssd:Connectors>" + "".join(
        f'<ssd:Connector name="{n}" kind="{k}"><ssc:Real/></ssd:Connector>' for n, k in kinds.items()) + "</ssd:Connectors>"


def _params(values: dict, prefix: str | None = None) -> str:
    pre = f' prefix="{prefix}"' if prefix else ""
    body = "".join(f'<ssv:Parameter name="{n}"><ssv:{"Integer" if isinstance(v, int) else "Real"} value="{v!r}"/></ssv:Parameter>'
                   for n, v in values.items())
    return (f'<ssd:ParameterBindings><ssd:ParameterBinding{pre}><ssd:ParameterValues><ssv:ParameterSet version="1.0" '
            f'name="p"><ssv:Parameters>{body}</ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues>'
            '</ssd:ParameterBinding></ssd:ParameterBindings>')


def _c(se, sc, ee, ec) -> str:
    s = f'startElement="{se}" ' if se else ""
    e = f'endElement="{ee}" ' if ee else ""
    return f'<ssd:Connection {s}startConnector="{sc}" {e}endConnector="{ec}"/>'


MASS1 = dict(m=M1, k=K1, d=D1, x0=1.0, nsub=7)
MASS2 = dict(m=M2, k=99.0, d=D2, kc=KC, dc=DC)  # k is overridden by the top level

NESTED = HEAD + f"""
  <ssd:System name="Top">
    {_params(dict(k=K2), prefix="Right.Inner.Mass2.")}
    <ssd:Elements>
      <ssd:System name="Left">
        {_connectors(x="output", v="output", F="input")}
        <ssd:Elements>
          <ssd:Component name="Mass1" source="resources/mass.fmu">{_params(MASS1)}</ssd:Component>
        </ssd:Elements>
        <ssd:Connections>{_c("Mass1", "x", None, "x")}{_c("Mass1", "v", None, "v")}{_c(None, "F", "Mass1", "F")}</ssd:Connections>
      </ssd:System>
      <ssd:System name="Right">
        {_connectors(xin="input", vin="input", Fc="output")}
        {_params({f"Inner.Mass2.{k}": v for k, v in MASS2.items()})}
        <ssd:Elements>
          <ssd:System name="Inner">
            {_connectors(xin="input", vin="input", Fc="output")}
            <ssd:Elements><ssd:Component name="Mass2" source="resources/mass.fmu"/></ssd:Elements>
            <ssd:Connections>{_c(None, "xin", "Mass2", "xin")}{_c(None, "vin", "Mass2", "vin")}{_c("Mass2", "Fc", None, "Fc")}</ssd:Connections>
          </ssd:System>
        </ssd:Elements>
        <ssd:Connections>{_c(None, "xin", "Inner", "xin")}{_c(None, "vin", "Inner", "vin")}{_c("Inner", "Fc", None, "Fc")}</ssd:Connections>
      </ssd:System>
    </ssd:Elements>
    <ssd:Connections>{_c("Left", "x", "Right", "xin")}{_c("Left", "v", "Right", "vin")}{_c("Right", "Fc", "Left", "F")}</ssd:Connections>
  </ssd:System>
</ssd:SystemStructureDescription>
"""


def _archive(tmp_path, ssd: str, mass_fmu, name: str = "nested.ssp"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", ssd)
        z.write(mass_fmu, "resources/mass.fmu")
    return path


def flat_by_hand(mass_fmu) -> System:
    """What the nested file means, written flat."""
    return System([FmuUnit(mass_fmu, "Left/Mass1", values=MASS1),
                   FmuUnit(mass_fmu, "Right/Inner/Mass2", values={**MASS2, "k": K2})],
                  [("Left/Mass1.x", "Right/Inner/Mass2.xin"), ("Left/Mass1.v", "Right/Inner/Mass2.vin"),
                   ("Right/Inner/Mass2.Fc", "Left/Mass1.F")])


def _same_run(a: System, b: System) -> None:
    r1, r2 = simulate(a, 1.0, 0.01, progress=False), simulate(b, 1.0, 0.01, progress=False)
    assert r1.names == r2.names
    assert np.array_equal(r1.data, r2.data)


def test_nested_systems_flatten_to_the_system_built_by_hand(mass_fmu, tmp_path):
    s = read_ssp(_archive(tmp_path, NESTED, mass_fmu))
    flat = flat_by_hand(mass_fmu)
    assert list(s.units) == list(flat.units)
    assert sorted(map(str, s.connections)) == sorted(map(str, flat.connections))
    for name in flat.units:
        assert s.units[name].values == flat.units[name].values, name
    assert s.units["Right/Inner/Mass2"].values["k"] == K2  # the top level's binding wins over Right's
    _same_run(s, flat)
    # and the physics is the coupled pair's, not two free masses: the coupling force acts
    r = simulate(s, 1.0, 0.01, progress=False)
    assert np.abs(r["Right/Inner/Mass2.Fc"]).max() > 1.0


@pytest.mark.parametrize("suffix", [".ssp", ".ssd"])
def test_nested_system_is_written_nested_and_read_back_the_same(mass_fmu, tmp_path, suffix):
    s = read_ssp(_archive(tmp_path, NESTED, mass_fmu))
    out = write_ssp(s, tmp_path / f"again{suffix}", stop_time=1.0)
    text = (zipfile.ZipFile(out).read("SystemStructure.ssd") if suffix == ".ssp" else out.read_bytes())
    root = etree.fromstring(text)
    ns = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription"}
    inner = root.find("ssd:System/ssd:Elements/ssd:System[@name='Right']/ssd:Elements/ssd:System[@name='Inner']", ns)
    assert inner is not None and inner.find("ssd:Elements/ssd:Component[@name='Mass2']", ns) is not None
    if suffix == ".ssp":  # another reader takes the nesting too
        from fmpy.ssp.ssd import read_ssd
        assert [e.name for e in read_ssd(str(out), validate=True).system.elements] == ["Left", "Right"]
    back = read_ssp(out, allow_external=suffix == ".ssd")
    assert list(back.units) == list(s.units)
    assert sorted(map(str, back.connections)) == sorted(map(str, s.connections))
    for name in s.units:
        assert back.units[name].values == s.units[name].values
    _same_run(back, s)
    # a flat system built by hand with path names is written nested too, and reads back the same
    again = read_ssp(write_ssp(flat_by_hand(mass_fmu), tmp_path / f"hand{suffix}"), allow_external=suffix == ".ssd")
    _same_run(again, flat_by_hand(mass_fmu))


def test_binding_on_a_system_connector_reaches_the_component_behind_it(mass_fmu, tmp_path):
    ssd = NESTED.replace('<ssd:System name="Left">\n        ' + _connectors(x="output", v="output", F="input"),
                         '<ssd:System name="Left">\n        ' + _connectors(x="output", v="output", F="input")
                         + _params(dict(F=2.5)))
    assert ssd != NESTED
    s = read_ssp(_archive(tmp_path, ssd, mass_fmu))
    assert s.units["Left/Mass1"].values["F"] == 2.5


def test_unknown_names_in_nested_systems_are_listed_together(mass_fmu, tmp_path):
    ssd = NESTED.replace(_c("Left", "v", "Right", "vin"), _c("Left", "w", "Right", "vin"))
    ssd = ssd.replace(_c("Right", "Fc", "Left", "F"), _c("Nobody", "Fc", "Left", "F"))
    ssd = ssd.replace('name="Inner.Mass2.dc"', 'name="Inner.Mass3.dc"')
    with pytest.raises(CosimError) as e:
        read_ssp(_archive(tmp_path, ssd, mass_fmu))
    msg = str(e.value)
    assert "system 'Left' has no connector 'w'" in msg
    assert "no element 'Nobody' there" in msg
    assert "system 'Right' has no parameter, connector or element variable 'Inner.Mass3.dc'" in msg


def test_unit_names_that_cannot_nest_are_refused_by_name(mass_fmu, tmp_path):
    s = System([FmuUnit(mass_fmu, "B"), FmuUnit(mass_fmu, "B/C"), FmuUnit(mass_fmu, "D//E")])
    with pytest.raises(CosimError, match="cannot be written as nested systems .*: B, D//E"):
        write_ssp(s, tmp_path / "x.ssp")


def test_system_connector_driven_twice_is_refused_without_following_it(mass_fmu, tmp_path):
    """A chain of such diamonds would multiply the paths beyond any bound: refused, and fast."""
    ssd = NESTED.replace(_c("Left", "v", "Right", "vin"), _c("Left", "v", "Right", "vin") + _c("Left", "x", "Right", "vin"))
    with pytest.raises(CosimError, match=r"system connector Right.vin is driven by 2 connections \(Left.v -> Right.vin, "
                                         r"Left.x -> Right.vin\)"):
        read_ssp(_archive(tmp_path, ssd, mass_fmu))
