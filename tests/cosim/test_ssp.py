"""SSP 1.0: write, read back, identical run; a hand-written SSD after the
standard's examples loads; fmpy.ssp accepts our files; unsupported content
is refused with every problem listed."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, read_ssp, simulate, sources, write_ssp
from mbfmu.errors import CosimError

from .systems import two_mass, without_feedthrough


@pytest.mark.parametrize("suffix", [".ssp", ".ssd"])
def test_written_ssp_read_back_gives_identical_run(mass_fmu, tmp_path, suffix):
    s = two_mass(mass_fmu)
    out = write_ssp(s, tmp_path / f"sys{suffix}", stop_time=1.0, step=0.01, algorithm="gauss-seidel")
    back = read_ssp(out, allow_external=suffix == ".ssd")  # the .ssd names the FMUs in their own folder
    assert back.experiment == {"start_time": 0.0, "stop_time": 1.0, "step": 0.01, "algorithm": "gauss-seidel"}
    assert [str(c) for c in back.connections] == [str(c) for c in s.connections]
    assert back.units["a"].values == s.units["a"].values
    r1, r2 = simulate(s, 1.0, 0.01), simulate(back, 1.0, 0.01)
    assert r1.names == r2.names and np.array_equal(r1.data, r2.data)


def test_written_ssp_is_accepted_by_fmpy_ssp_reader(mass_fmu, tmp_path):
    from fmpy.ssp.ssd import read_ssd
    out = write_ssp(two_mass(mass_fmu), tmp_path / "sys.ssp", stop_time=1.0)
    ssd = read_ssd(str(out), validate=True)  # schema validation inside fmpy
    assert ssd.version == "1.0"
    assert [c.name for c in ssd.system.elements] == ["a", "b"]
    assert len(ssd.system.connections) == 3


HAND_WRITTEN = """<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="Oscillators"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssd:System name="Oscillators" description="two masses and a coupling spring">
    <ssd:ParameterBindings>
      <ssd:ParameterBinding>
        <ssd:ParameterValues>
          <ssv:ParameterSet version="1.0" name="SystemParameters">
            <ssv:Parameters>
              <ssv:Parameter name="Mass2.nsub"><ssv:Integer value="30"/></ssv:Parameter>
            </ssv:Parameters>
          </ssv:ParameterSet>
        </ssd:ParameterValues>
      </ssd:ParameterBinding>
      <ssd:ParameterBinding prefix="Mass1.">
        <ssd:ParameterValues>
          <ssv:ParameterSet version="1.0" name="Mass1Damping">
            <ssv:Parameters>
              <ssv:Parameter name="d"><ssv:Real value="0.1"/></ssv:Parameter>
            </ssv:Parameters>
          </ssv:ParameterSet>
        </ssd:ParameterValues>
      </ssd:ParameterBinding>
    </ssd:ParameterBindings>
    <ssd:Elements>
      <ssd:Component name="Mass1" source="resources/mass.fmu" type="application/x-fmu-sharedlibrary">
        <ssd:Connectors>
          <ssd:Connector name="F" kind="input"><ssc:Real unit="N"/></ssd:Connector>
          <ssd:Connector name="x" kind="output"><ssc:Real unit="m"/></ssd:Connector>
          <ssd:Connector name="v" kind="output"><ssc:Real unit="m/s"/></ssd:Connector>
        </ssd:Connectors>
        <ssd:ElementGeometry x1="10" y1="10" x2="30" y2="30"/>
        <ssd:ParameterBindings>
          <ssd:ParameterBinding>
            <ssd:ParameterValues>
              <ssv:ParameterSet version="1.0" name="Mass1Parameters">
                <ssv:Parameters>
                  <ssv:Parameter name="m"><ssv:Real value="1.0" unit="kg"/></ssv:Parameter>
                  <ssv:Parameter name="k"><ssv:Real value="10.0" unit="N/m"/></ssv:Parameter>
                  <ssv:Parameter name="x0"><ssv:Real value="1.0" unit="m"/></ssv:Parameter>
                </ssv:Parameters>
              </ssv:ParameterSet>
            </ssd:ParameterValues>
          </ssd:ParameterBinding>
        </ssd:ParameterBindings>
      </ssd:Component>
      <ssd:Component name="Mass2" source="resources/mass.fmu">
        <ssd:ParameterBindings>
          <ssd:ParameterBinding source="resources/mass2.ssv"/>
        </ssd:ParameterBindings>
      </ssd:Component>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="Mass1" startConnector="x" endElement="Mass2" endConnector="xin"/>
      <ssd:Connection startElement="Mass1" startConnector="v" endElement="Mass2" endConnector="vin"/>
      <ssd:Connection startElement="Mass2" startConnector="Fc" endElement="Mass1" endConnector="F"/>
    </ssd:Connections>
  </ssd:System>
  <ssd:DefaultExperiment startTime="0.0" stopTime="2.5"/>
</ssd:SystemStructureDescription>
"""

HAND_SSV = """<?xml version="1.0" encoding="UTF-8"?>
<ssv:ParameterSet version="1.0" name="Mass2" xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssv:Parameters>
    <ssv:Parameter name="m"><ssv:Real value="2.0"/></ssv:Parameter>
    <ssv:Parameter name="k"><ssv:Real value="20.0"/></ssv:Parameter>
    <ssv:Parameter name="d"><ssv:Real value="0.2"/></ssv:Parameter>
    <ssv:Parameter name="kc"><ssv:Real value="30.0"/></ssv:Parameter>
    <ssv:Parameter name="dc"><ssv:Real value="0.5"/></ssv:Parameter>
  </ssv:Parameters>
</ssv:ParameterSet>
"""


def test_hand_written_ssp_loads_with_all_bindings(mass_fmu, tmp_path):
    path = tmp_path / "hand.ssp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", HAND_WRITTEN)
        z.writestr("resources/mass2.ssv", HAND_SSV)
        z.write(mass_fmu, "resources/mass.fmu")
    s = read_ssp(path)
    assert s.experiment == {"start_time": 0.0, "stop_time": 2.5}
    assert s.units["Mass1"].values == {"m": 1.0, "k": 10.0, "x0": 1.0, "d": 0.1}
    assert s.units["Mass2"].values == {"m": 2.0, "k": 20.0, "d": 0.2, "kc": 30.0, "dc": 0.5, "nsub": 30}
    r = simulate(s, 2.5, 0.01)
    ref = simulate(two_mass(mass_fmu), 2.5, 0.01)  # same physics written in Python
    np.testing.assert_allclose(r["Mass1.x"], ref["a.x"], atol=1e-9)


def test_unsupported_ssp_content_lists_every_problem(mass_fmu, tmp_path):
    bad = HAND_WRITTEN.replace('<ssd:Connection startElement="Mass1" startConnector="x" endElement="Mass2" endConnector="xin"/>',
                               '<ssd:Connection startConnector="x" endElement="Mass2" endConnector="xin"/>')
    bad = bad.replace('source="resources/mass.fmu">', 'source="resources/missing.fmu">')
    path = tmp_path / "bad.ssp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", bad)
        z.writestr("resources/mass2.ssv", HAND_SSV)
        z.write(mass_fmu, "resources/mass.fmu")
    with pytest.raises(CosimError) as e:
        read_ssp(path)
    assert "source 'resources/missing.fmu' not found" in str(e.value)
    assert "connection (system).x -> Mass2.xin in the top-level system: the top-level system has no connector 'x'" in str(e.value)
    # content mbfmu does not run is named in the same one error
    worse = bad.replace('<ssd:Connection startElement="Mass2" startConnector="Fc" endElement="Mass1" endConnector="F"/>',
                        '<ssd:Connection startElement="Mass2" startConnector="Fc" endElement="Mass1" endConnector="F">'
                        '<ssc:EnumerationMappingTransformation><ssc:MapEntry source="a" target="1"/>'
                        '</ssc:EnumerationMappingTransformation></ssd:Connection>')
    worse = worse.replace("</ssd:Connections>", "</ssd:Connections><ssd:SignalDictionaries><ssd:SignalDictionary "
                          'name="d"><ssd:DictionaryEntry name="e"><ssc:Real/></ssd:DictionaryEntry>'
                          "</ssd:SignalDictionary></ssd:SignalDictionaries>")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", worse)
        z.writestr("resources/mass2.ssv", HAND_SSV)
        z.write(mass_fmu, "resources/mass.fmu")
    with pytest.raises(CosimError) as e:
        read_ssp(path)
    for part in ("source 'resources/missing.fmu' not found", "has no connector 'x'",
                 "EnumerationMappingTransformation is not supported", "signal dictionaries are not supported"):
        assert part in str(e.value)
    (tmp_path / "v2.ssd").write_text(HAND_WRITTEN.replace('version="1.0" name="Oscillators"', 'version="2.0" name="Oscillators"'))
    with pytest.raises(CosimError, match="not valid SSP 1.0"):
        read_ssp(tmp_path / "v2.ssd")


def test_only_fmu_units_can_be_written(mass_fmu, tmp_path):
    s = System([FmuUnit(mass_fmu, "a"), sources.step("ref", 1.0)], [("ref.y", "a.xin")])
    with pytest.raises(CosimError, match="not FMUs: ref"):
        write_ssp(s, tmp_path / "x.ssp")


def test_libcosim_runs_our_ssp_and_agrees(mass_fmu, tmp_path):
    """libcosim (C++, another engine) loads the SSP file mbfmu writes, applies its
    parameter bindings, and its Jacobi run agrees with mbfmu's for a system without
    direct feedthrough. (With feedthrough libcosim does not order the exchange by the
    declared dependencies and lags one step, so the systems differ by design.)"""
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver

    log_output_level(CosimLogLevel.ERROR)
    s = without_feedthrough(mass_fmu)
    ssp = write_ssp(s, tmp_path / "s.ssp", stop_time=1.0, step=0.01)
    ex = CosimExecution.from_ssp_file(str(ssp), step_size=10_000_000)  # ns
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    ia, ib = ex.slave_index_from_instance_name("a"), ex.slave_index_from_instance_name("b")
    vr = {v.name.decode(): v.reference for v in ex.slave_variables(ia)}
    assert ex.simulate_until(1_000_000_000)
    theirs = [*obs.last_real_values(ia, [vr["x"], vr["v"]]), *obs.last_real_values(ib, [vr["x"], vr["v"]])]
    r = simulate(s, 1.0, 0.01)
    ours = [r["a.x"][-1], r["a.v"][-1], r["b.x"][-1], r["b.v"][-1]]
    np.testing.assert_allclose(theirs, ours, rtol=1e-12, atol=1e-12)
