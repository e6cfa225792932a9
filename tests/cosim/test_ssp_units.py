"""SSP 1.0 semantics (issue 14 defect 8) on hand-written SSD files in the style of
the standard's examples: the binding prefix is prepended, parameter values and
connections are converted through the unit definitions, incompatible units are
refused by name, ``write_ssp`` writes units, the OSP step annotation is read,
and reading an archive leaves no temporary folder."""
from __future__ import annotations

import math
import tempfile
import zipfile
from pathlib import Path

import pytest
from lxml import etree

from mbfmu.cosim import read_ssp, simulate, write_ssp
from mbfmu.errors import CosimError

from .ssp_files import SPEED, ssd_head, with_units
from .systems import two_mass

HEAD = ssd_head("Units", 'xmlns:osp="http://opensimulationplatform.com/SSP/OSPAnnotations"')


def _binding(params: str, prefix: str | None = None, units: str = "") -> str:
    pre = f' prefix="{prefix}"' if prefix else ""
    return f"""<ssd:ParameterBindings><ssd:ParameterBinding{pre}><ssd:ParameterValues>
      <ssv:ParameterSet version="1.0" name="set"><ssv:Parameters>{params}</ssv:Parameters>{units}</ssv:ParameterSet>
      </ssd:ParameterValues></ssd:ParameterBinding></ssd:ParameterBindings>"""


def _ssp(tmp_path: Path, body: str, fmus: dict[str, Path], tail: str = "") -> Path:
    path = tmp_path / "units.ssp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", HEAD + body + tail + "</ssd:SystemStructureDescription>\n")
        for name, fmu in fmus.items():
            z.write(fmu, f"resources/{name}")
    return path


def _mass(binding: str, name: str = "Mass1") -> str:
    return f"""<ssd:Component name="{name}" source="resources/mass.fmu">{binding}</ssd:Component>"""


GRAM = '<ssv:Units><ssc:Unit name="g"><ssc:BaseUnit kg="1" factor="0.001"/></ssc:Unit></ssv:Units>'
MM = '<ssd:Units><ssc:Unit name="mm"><ssc:BaseUnit m="1" factor="0.001"/></ssc:Unit></ssd:Units>'


def test_parameter_values_are_converted_to_the_variables_units(mass_fmu, tmp_path):
    params = ('<ssv:Parameter name="m"><ssv:Real value="2000" unit="g"/></ssv:Parameter>'
              '<ssv:Parameter name="x0"><ssv:Real value="500" unit="mm"/></ssv:Parameter>'
              '<ssv:Parameter name="k"><ssv:Real value="8" unit="N/m"/></ssv:Parameter>')
    body = f'<ssd:System name="s"><ssd:Elements>{_mass(_binding(params, units=GRAM))}</ssd:Elements></ssd:System>'
    s = read_ssp(_ssp(tmp_path, body, {"mass.fmu": mass_fmu}, MM))
    assert s.units["Mass1"].values == {"m": 2.0, "x0": 0.5, "k": 8.0}
    r = simulate(s, 1.0, 0.001, progress=False)
    assert abs(r["Mass1.x"][-1] - 0.5 * math.cos(2.0)) < 1e-4  # x = x0 cos(sqrt(k/m) t)


@pytest.mark.parametrize("value,message", [
    ('<ssv:Real value="1" unit="kg"/>', "incompatible units 'kg' and 'N.s/m'"),
    ('<ssv:Real value="1" unit="furlong"/>', "unit 'furlong' has no definition"),
])
def test_parameter_in_an_incompatible_unit_is_refused_by_name(mass_fmu, tmp_path, value, message):
    params = f'<ssv:Parameter name="d">{value}</ssv:Parameter>'
    body = f'<ssd:System name="s"><ssd:Elements>{_mass(_binding(params))}</ssd:Elements></ssd:System>'
    with pytest.raises(CosimError, match=f"component 'Mass1': parameter 'd'.*{message}"):
        read_ssp(_ssp(tmp_path, body, {"mass.fmu": mass_fmu}))


def test_binding_prefix_is_prepended(mass_fmu, tmp_path):
    """SSP 1.0: the prefix is prepended to each parameter name of the set."""
    system_level = _binding('<ssv:Parameter name="k"><ssv:Real value="3"/></ssv:Parameter>', prefix="Mass1.")
    body = f'<ssd:System name="s">{system_level}<ssd:Elements>{_mass("")}</ssd:Elements></ssd:System>'
    assert read_ssp(_ssp(tmp_path, body, {"mass.fmu": mass_fmu})).units["Mass1"].values == {"k": 3.0}
    # on a component, "Mass1." + "k" names a variable the FMU does not have
    comp = _binding('<ssv:Parameter name="k"><ssv:Real value="3"/></ssv:Parameter>', prefix="Mass1.")
    body = f'<ssd:System name="s"><ssd:Elements>{_mass(comp)}</ssd:Elements></ssd:System>'
    with pytest.raises(CosimError, match="no variable 'Mass1.k'"):
        read_ssp(_ssp(tmp_path, body, {"mass.fmu": mass_fmu}))


def _speed_pair(gain_fmu: Path, tmp_path: Path, end: str = "g2", end_connector: str = "u") -> Path:
    """g1 (gain FMU, output y in rad/s) drives g2 (input u in rpm)."""
    g1 = with_units(gain_fmu, tmp_path / "g1.fmu", {"y": "rad/s"}, SPEED)
    g2 = with_units(gain_fmu, tmp_path / "g2.fmu", {"u": "rpm"}, SPEED)
    b1 = _binding('<ssv:Parameter name="b"><ssv:Real value="10"/></ssv:Parameter>')
    body = f"""<ssd:System name="s"><ssd:Elements>
      <ssd:Component name="g1" source="resources/g1.fmu">
        <ssd:Connectors><ssd:Connector name="y" kind="output"><ssc:Real unit="rad/s"/></ssd:Connector></ssd:Connectors>
        {b1}</ssd:Component>
      <ssd:Component name="g2" source="resources/g2.fmu">
        <ssd:Connectors><ssd:Connector name="u" kind="input"><ssc:Real unit="rpm"/></ssd:Connector></ssd:Connectors>
      </ssd:Component>
      {_mass("", "Mass1")}
      </ssd:Elements><ssd:Connections>
      <ssd:Connection startElement="g1" startConnector="y" endElement="{end}" endConnector="{end_connector}"/>
      </ssd:Connections></ssd:System>"""
    return _ssp(tmp_path, body, {"g1.fmu": g1, "g2.fmu": g2, "mass.fmu": tmp_path / "mass.fmu"})


def test_connection_between_units_is_converted(gain_fmu, mass_fmu, tmp_path):
    (tmp_path / "mass.fmu").write_bytes(Path(mass_fmu).read_bytes())
    s = read_ssp(_speed_pair(gain_fmu, tmp_path))
    r = simulate(s, 0.1, 0.05, progress=False)
    assert r["g1.y"][-1] == 10.0  # rad/s
    assert r["g2.y"][-1] == pytest.approx(10.0 * 60 / (2 * math.pi), rel=1e-14)  # the same speed in rpm


def test_connection_between_incompatible_units_is_refused_by_name(gain_fmu, mass_fmu, tmp_path):
    (tmp_path / "mass.fmu").write_bytes(Path(mass_fmu).read_bytes())
    with pytest.raises(CosimError, match=r"connection g1.y -> Mass1.F: incompatible units 'rad/s' and 'N'"):
        read_ssp(_speed_pair(gain_fmu, tmp_path, "Mass1", "F"))


def test_write_ssp_writes_units_that_read_back(mass_fmu, tmp_path):
    s = two_mass(mass_fmu)
    out = write_ssp(s, tmp_path / "w.ssp", stop_time=1.0)
    with zipfile.ZipFile(out) as z:
        root = etree.fromstring(z.read("SystemStructure.ssd"))
    ns = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
          "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
          "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues"}
    x = root.find(".//ssd:Component[@name='a']/ssd:Connectors/ssd:Connector[@name='x']/ssc:Real", ns)
    assert x.get("unit") == "m"
    kg = root.find("ssd:Units/ssc:Unit[@name='N/m']/ssc:BaseUnit", ns)
    assert (kg.get("kg"), kg.get("s"), kg.get("m")) == ("1", "-2", None)
    m = root.find(".//ssv:Parameter[@name='m']/ssv:Real", ns)
    assert m.get("unit") == "kg"
    back = read_ssp(out)
    assert back.units["a"].values == s.units["a"].values


def test_osp_step_annotation_is_read(mass_fmu, tmp_path):
    tail = """<ssd:DefaultExperiment startTime="0" stopTime="2"><ssd:Annotations>
      <ssc:Annotation type="com.opensimulationplatform"><osp:Algorithm>
      <osp:FixedStepAlgorithm baseStepSize="0.004"/></osp:Algorithm></ssc:Annotation>
      </ssd:Annotations></ssd:DefaultExperiment>"""
    body = f'<ssd:System name="s"><ssd:Elements>{_mass("")}</ssd:Elements></ssd:System>'
    s = read_ssp(_ssp(tmp_path, body, {"mass.fmu": mass_fmu}, tail))
    assert s.experiment == {"start_time": 0.0, "stop_time": 2.0, "step": 0.004}


def test_read_ssp_leaves_no_temporary_folder(mass_fmu, tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    ssp = write_ssp(two_mass(mass_fmu), tmp_path / "s.ssp", stop_time=1.0)
    s = read_ssp(ssp)
    assert not list(temp.glob("mbfmu_ssp_*"))
    r = simulate(s, 0.1, 0.01, progress=False)  # the units still run
    assert len(r) == 11
    again = write_ssp(s, tmp_path / "again.ssp")  # and can be written again without the archive's folder
    assert read_ssp(again).units["a"].values == s.units["a"].values
