"""SSP 1.0 transformations and parameter mappings (issue 25 item 7): linear,
boolean and integer mapping transformations on connections and bindings, and
``.ssm`` parameter mappings inline and inside the ``.ssp``. Each hand-written
SSD is checked against the flat system built by hand (identical run), or against
the value the standard's formula gives; ``write_ssp`` writes what it reads."""
from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, read_ssp, simulate, write_ssp
from mbfmu.errors import CosimError
from tooling import REFERENCE_FMUS

from .systems import without_feedthrough
from .ssp_files import SPEED, mapping_archive, mapping_binding, parameter, with_units

FEEDTHROUGH = REFERENCE_FMUS / "fmi2" / "Feedthrough.fmu"


@pytest.fixture(params=["fmi2", "fmi3"])
def feedthrough(request):
    """The Reference FMUs' Feedthrough, FMI 2 and FMI 3 (Boolean and Int32 inputs and outputs)."""
    return REFERENCE_FMUS / request.param / "Feedthrough.fmu"
def _same_run(a: System, b: System, columns: list[str] | None = None, stop: float = 1.0) -> None:
    r1, r2 = simulate(a, stop, 0.01, progress=False), simulate(b, stop, 0.01, progress=False)
    for c in columns or r2.names:
        assert np.array_equal(r1[c], r2[c]), c


def _round_trip(s: System, tmp_path: Path) -> System:
    """read -> write -> read: the same units, values, connections and input transformations."""
    back = read_ssp(write_ssp(s, tmp_path / "again.ssp", stop_time=1.0))
    assert list(back.units) == list(s.units)
    assert sorted(map(str, back.connections)) == sorted(map(str, s.connections))
    for n, u in s.units.items():
        assert back.units[n].values == u.values, n
        assert getattr(back.units[n], "input_conversion", None) == getattr(u, "input_conversion", None), n
    assert back.transformations == s.transformations
    return back


# -- connections ----------------------------------------------------------------------
def test_linear_transformation_on_a_connection_equals_the_flat_system(mass_fmu, gain_fmu, tmp_path):
    """g.u = 2 m.x + 0.5 is the flat system whose gain has k = 2 and b = 0.5
    (powers of two: the same floats). The gain's u and y are in m here."""
    gm = with_units(gain_fmu, tmp_path / "gm.fmu", {"u": "m", "y": "m", "b": "m"}, {})
    body = f"""<ssd:Elements>
      <ssd:Component name="m" source="resources/mass.fmu">{mapping_binding(parameter("x0", "Real", 1.0) + parameter("k", "Real", 10.0))}</ssd:Component>
      <ssd:Component name="g" source="resources/gain.fmu"/></ssd:Elements>
      <ssd:Connections><ssd:Connection startElement="m" startConnector="x" endElement="g" endConnector="u">
        <ssc:LinearTransformation factor="2.0" offset="0.5"/></ssd:Connection></ssd:Connections>"""
    s = read_ssp(mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu, "resources/gain.fmu": gm}))
    flat = System([FmuUnit(mass_fmu, "m", values=dict(x0=1.0, k=10.0)), FmuUnit(gm, "g", values=dict(k=2.0, b=0.5))],
                  [("m.x", "g.u")])
    _same_run(s, flat, ["m.x", "g.y"])
    assert np.ptp(simulate(s, 1.0, 0.01, progress=False)["g.y"]) > 1.0  # the transformed signal moves
    _same_run(_round_trip(s, tmp_path), s)


def test_unit_conversion_comes_before_the_linear_transformation(gain_fmu, tmp_path):
    """SSP 1.0: target = factor * (source converted to the target's unit) + offset."""
    g1 = with_units(gain_fmu, tmp_path / "g1.fmu", {"y": "rad/s"}, SPEED)
    g2 = with_units(gain_fmu, tmp_path / "g2.fmu", {"u": "rpm"}, SPEED)
    body = f"""<ssd:Elements>
      <ssd:Component name="g1" source="resources/g1.fmu">{mapping_binding(parameter("b", "Real", 10.0))}</ssd:Component>
      <ssd:Component name="g2" source="resources/g2.fmu"/></ssd:Elements>
      <ssd:Connections><ssd:Connection startElement="g1" startConnector="y" endElement="g2" endConnector="u">
        <ssc:LinearTransformation factor="2" offset="1"/></ssd:Connection></ssd:Connections>"""
    s = read_ssp(mapping_archive(tmp_path, body, {"resources/g1.fmu": g1, "resources/g2.fmu": g2}))
    r = simulate(s, 0.1, 0.01, progress=False)
    assert r["g2.y"][-1] == pytest.approx(2 * (10.0 * 60 / (2 * math.pi)) + 1, rel=1e-14)
    back = _round_trip(s, tmp_path)
    assert simulate(back, 0.1, 0.01, progress=False)["g2.y"][-1] == r["g2.y"][-1]


def _feedthroughs(mapping: str, f1_bool: str = "true", f1_int: int = 3) -> str:
    params = parameter("Boolean_input", "Boolean", f1_bool) + parameter("Int32_input", "Integer", f1_int)
    return f"""<ssd:Elements>
      <ssd:Component name="f1" source="resources/ft.fmu">{mapping_binding(params)}</ssd:Component>
      <ssd:Component name="f2" source="resources/ft.fmu"/></ssd:Elements>
      <ssd:Connections>{mapping}</ssd:Connections>"""


NOT = ('<ssd:Connection startElement="f1" startConnector="Boolean_output" endElement="f2" endConnector="Boolean_input">'
       '<ssc:BooleanMappingTransformation><ssc:MapEntry source="true" target="false"/>'
       '<ssc:MapEntry source="false" target="true"/></ssc:BooleanMappingTransformation></ssd:Connection>')


@pytest.mark.parametrize("f1_bool,f2_bool", [("true", False), ("false", True)])
def test_boolean_mapping_on_a_connection_equals_the_flat_system(tmp_path, feedthrough, f1_bool, f2_bool):
    s = read_ssp(mapping_archive(tmp_path, _feedthroughs(NOT, f1_bool), {"resources/ft.fmu": feedthrough}))
    flat = System([FmuUnit(feedthrough, "f1", values=dict(Boolean_input=f1_bool == "true", Int32_input=3)),
                   FmuUnit(feedthrough, "f2", values=dict(Boolean_input=f2_bool))])
    _same_run(s, flat, ["f1.Boolean_output", "f2.Boolean_output"])
    assert bool(simulate(s, 0.1, 0.01, progress=False)["f2.Boolean_output"][-1]) is f2_bool
    _same_run(_round_trip(s, tmp_path), s)


INT_MAP = ('<ssd:Connection startElement="f1" startConnector="Int32_output" endElement="f2" endConnector="Int32_input">'
           '<ssc:IntegerMappingTransformation><ssc:MapEntry source="3" target="7"/><ssc:MapEntry source="7" target="-2"/>'
           "</ssc:IntegerMappingTransformation></ssd:Connection>")


@pytest.mark.parametrize("f1_int,f2_int", [(3, 7), (7, -2), (4, 4)])  # 4 is not in the table: it passes unchanged
def test_integer_mapping_on_a_connection_equals_the_flat_system(tmp_path, feedthrough, f1_int, f2_int):
    s = read_ssp(mapping_archive(tmp_path, _feedthroughs(INT_MAP, f1_int=f1_int), {"resources/ft.fmu": feedthrough}))
    flat = System([FmuUnit(feedthrough, "f1", values=dict(Boolean_input=True, Int32_input=f1_int)),
                   FmuUnit(feedthrough, "f2", values=dict(Int32_input=f2_int))])
    _same_run(s, flat, ["f1.Int32_output", "f2.Int32_output"])
    assert simulate(s, 0.1, 0.01, progress=False)["f2.Int32_output"][-1] == f2_int
    back = _round_trip(s, tmp_path)  # written as one connection with the table, read as the same system
    _same_run(back, s)
    text = zipfile.ZipFile(write_ssp(s, tmp_path / "w.ssp")).read("SystemStructure.ssd").decode()
    assert text.count("<ssd:Connection ") == 1 and 'source="7" target="-2"' in text


def test_transformation_of_the_wrong_type_is_refused(tmp_path):
    wrong = NOT.replace("Boolean_output", "Float64_continuous_output").replace("Boolean_input", "Float64_continuous_input")
    with pytest.raises(CosimError, match="BooleanMappingTransformation is not valid for a value of type Real"):
        read_ssp(mapping_archive(tmp_path, _feedthroughs(wrong), {"resources/ft.fmu": FEEDTHROUGH}))


def test_suppress_unit_conversion_alone_passes_any_type(tmp_path):
    m = INT_MAP.replace("<ssc:IntegerMappingTransformation>", "").replace("</ssc:IntegerMappingTransformation>", "")
    m = m.replace('<ssc:MapEntry source="3" target="7"/><ssc:MapEntry source="7" target="-2"/>', "")
    m = m.replace('endConnector="Int32_input">', 'endConnector="Int32_input" suppressUnitConversion="true">')
    s = read_ssp(mapping_archive(tmp_path, _feedthroughs(m), {"resources/ft.fmu": FEEDTHROUGH}))
    assert simulate(s, 0.1, 0.01, progress=False)["f2.Int32_output"][-1] == 3
    _same_run(_round_trip(s, tmp_path), s)


# -- parameter mappings ---------------------------------------------------------------
SSM = """<?xml version="1.0" encoding="UTF-8"?>
<ssm:ParameterMapping version="1.0" xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssm="http://ssp-standard.org/SSP1/SystemStructureParameterMapping">
  <ssm:MappingEntry source="mass" target="m"/>
  <ssm:MappingEntry source="stiffness" target="k"><ssc:LinearTransformation factor="2"/></ssm:MappingEntry>
  <ssm:MappingEntry source="substeps" target="nsub">
    <ssc:IntegerMappingTransformation><ssc:MapEntry source="3" target="30"/></ssc:IntegerMappingTransformation>
  </ssm:MappingEntry>
  <ssm:MappingEntry source="start" target="x0" suppressUnitConversion="true"/>
</ssm:ParameterMapping>
"""
GRAM = '<ssv:Units><ssc:Unit name="g"><ssc:BaseUnit kg="1" factor="0.001"/></ssc:Unit></ssv:Units>'
PARAMS = (parameter("mass", "Real", 2000.0, "g") + parameter("stiffness", "Real", 10.0) + parameter("substeps", "Integer", 3)
          + parameter("start", "Real", 0.5, "g") + parameter("d", "Real", 0.25))
MAPPED = dict(m=2.0, k=20.0, nsub=30, x0=0.5, d=0.25)  # what the mapping makes of PARAMS


@pytest.mark.parametrize("where", ["file in the ssp", "inline"])
def test_parameter_mapping_renames_converts_and_transforms(mass_fmu, tmp_path, where):
    """Renamed (mass -> m), converted from g then used (2000 g -> 2 kg), transformed
    (stiffness 10 -> k 20, substeps 3 -> nsub 30), not converted with
    suppressUnitConversion (start 0.5 -> x0 0.5), and unmapped names kept (d)."""
    if where == "inline":
        inline = SSM.split("?>", 1)[1]
        mapping = f"<ssd:ParameterMapping>{inline}</ssd:ParameterMapping>"
    else:
        mapping = '<ssd:ParameterMapping source="resources/mass.ssm"/>'
    body = f'<ssd:Elements><ssd:Component name="a" source="resources/mass.fmu">{mapping_binding(PARAMS, mapping, units=GRAM)}</ssd:Component></ssd:Elements>'
    s = read_ssp(mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu, "resources/mass.ssm": SSM}))
    assert s.units["a"].values == MAPPED
    _same_run(s, System([FmuUnit(mass_fmu, "a", values=MAPPED)]))
    _same_run(_round_trip(s, tmp_path), s)


def test_parameter_mapping_on_a_system_binding_targets_hierarchical_names(mass_fmu, tmp_path):
    ssm = SSM.replace('target="m"', 'target="a.m"').replace('target="k"', 'target="a.k"') \
             .replace('target="nsub"', 'target="a.nsub"').replace('target="x0"', 'target="a.x0"')
    binding = mapping_binding(PARAMS.replace('name="d"', 'name="a.d"'), '<ssd:ParameterMapping source="resources/sys.ssm"/>',
                       units=GRAM)
    body = f'{binding}<ssd:Elements><ssd:Component name="a" source="resources/mass.fmu"/></ssd:Elements>'
    s = read_ssp(mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu, "resources/sys.ssm": ssm}))
    assert s.units["a"].values == MAPPED


def test_boolean_mapping_on_a_binding(tmp_path):
    ssm = ('<ssd:ParameterMapping><ssm:ParameterMapping version="1.0"><ssm:MappingEntry source="on" target="Boolean_input">'
           '<ssc:BooleanMappingTransformation><ssc:MapEntry source="true" target="false"/></ssc:BooleanMappingTransformation>'
           "</ssm:MappingEntry></ssm:ParameterMapping></ssd:ParameterMapping>")
    body = f'<ssd:Elements><ssd:Component name="f" source="resources/ft.fmu">{mapping_binding(parameter("on", "Boolean", "true"), ssm)}</ssd:Component></ssd:Elements>'
    s = read_ssp(mapping_archive(tmp_path, body, {"resources/ft.fmu": FEEDTHROUGH}))
    assert s.units["f"].values == {"Boolean_input": False}
    assert not simulate(s, 0.1, 0.01, progress=False)["f.Boolean_output"][-1]


def _mass_with_mapping(source: str) -> str:
    mapping = f'<ssd:ParameterMapping source="{source}"/>'
    return (f'<ssd:Elements><ssd:Component name="a" source="resources/mass.fmu">'
            f'{mapping_binding(PARAMS, mapping, units=GRAM)}</ssd:Component></ssd:Elements>')


def test_parameter_mapping_outside_the_archive_is_refused(mass_fmu, tmp_path):
    (tmp_path / "outside.ssm").write_text(SSM)
    body = _mass_with_mapping("../outside.ssm")
    with pytest.raises(CosimError, match="source '../outside.ssm' is outside the system's folder"):
        read_ssp(mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu}))


def test_entities_in_a_parameter_mapping_are_not_expanded(mass_fmu, tmp_path):
    """A file from someone else cannot make the reader include a local file."""
    secret = tmp_path / "secret.txt"
    secret.write_text("m")
    evil = SSM.replace("<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                       f'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file://{secret}">]>') \
              .replace('target="m"', 'target="&e;"')
    body = _mass_with_mapping("resources/evil.ssm")
    with pytest.raises(CosimError, match="cannot read parameter mapping file 'resources/evil.ssm': it is not "
                                         "well-formed XML: Attribute references external entity 'e'"):
        read_ssp(mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu, "resources/evil.ssm": evil}))


def test_libcosim_applies_our_linear_transformations_alike(mass_fmu, tmp_path):
    """libcosim (C++, another SSP 1.0 engine) runs the same hand-edited SSP with a
    LinearTransformation on a.x -> b.xin and agrees with mbfmu's Jacobi run (a system
    without direct feedthrough, where both masters exchange alike)."""
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver

    log_output_level(CosimLogLevel.ERROR)
    plain = write_ssp(without_feedthrough(mass_fmu), tmp_path / "plain.ssp", stop_time=1.0, step=0.01)
    with zipfile.ZipFile(plain) as z:
        files = {n: z.read(n) for n in z.namelist()}
    old = b'startElement="a" startConnector="x" endElement="b" endConnector="xin"/>'
    assert old in files["SystemStructure.ssd"]
    files["SystemStructure.ssd"] = files["SystemStructure.ssd"].replace(
        old, b'startElement="a" startConnector="x" endElement="b" endConnector="xin">'
             b'<ssc:LinearTransformation factor="0.5" offset="0.1"/></ssd:Connection>')
    ssp = tmp_path / "linear.ssp"
    with zipfile.ZipFile(ssp, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    ex = CosimExecution.from_ssp_file(str(ssp), step_size=10_000_000)  # ns
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    ia, ib = ex.slave_index_from_instance_name("a"), ex.slave_index_from_instance_name("b")
    vr = {v.name.decode(): v.reference for v in ex.slave_variables(ia)}
    assert ex.simulate_until(1_000_000_000)
    theirs = [*obs.last_real_values(ia, [vr["x"], vr["v"]]), *obs.last_real_values(ib, [vr["x"], vr["v"]])]
    r = simulate(read_ssp(ssp), 1.0, 0.01, progress=False)
    assert "python_loop" not in r.meta  # the transformation is applied in the compiled loop
    ours = [r["a.x"][-1], r["a.v"][-1], r["b.x"][-1], r["b.v"][-1]]
    np.testing.assert_allclose(theirs, ours, rtol=1e-12, atol=1e-12)
    untransformed = simulate(read_ssp(plain), 1.0, 0.01, progress=False)
    assert abs(untransformed["b.x"][-1] - ours[2]) > 1e-3  # the transformation matters


def test_conversions_and_transformations_compose_along_system_connectors(gain_fmu, tmp_path):
    """g1.y (rad/s) leaves system S through connector w (rpm) with factor 2, offset 1,
    and reaches g2.u (rad/s) with factor 3: each hop converts, then transforms."""
    g1 = with_units(gain_fmu, tmp_path / "g1.fmu", {"y": "rad/s"}, SPEED)
    g2 = with_units(gain_fmu, tmp_path / "g2.fmu", {"u": "rad/s"}, SPEED)
    rpm = 2 * math.pi / 60
    body = f"""<ssd:Elements>
      <ssd:System name="S">
        <ssd:Connectors><ssd:Connector name="w" kind="output"><ssc:Real unit="rpm"/></ssd:Connector></ssd:Connectors>
        <ssd:Elements><ssd:Component name="g1" source="resources/g1.fmu">{mapping_binding(parameter("b", "Real", 10.0))}</ssd:Component></ssd:Elements>
        <ssd:Connections><ssd:Connection startElement="g1" startConnector="y" endConnector="w">
          <ssc:LinearTransformation factor="2" offset="1"/></ssd:Connection></ssd:Connections>
      </ssd:System>
      <ssd:Component name="g2" source="resources/g2.fmu"/></ssd:Elements>
      <ssd:Connections><ssd:Connection startElement="S" startConnector="w" endElement="g2" endConnector="u">
        <ssc:LinearTransformation factor="3"/></ssd:Connection></ssd:Connections>"""
    units = f'<ssd:Units><ssc:Unit name="rpm"><ssc:BaseUnit rad="1" s="-1" factor="{rpm!r}"/></ssc:Unit></ssd:Units>'
    s = read_ssp(mapping_archive(tmp_path, body, {"resources/g1.fmu": g1, "resources/g2.fmu": g2}, after=units))
    w = 2 * (10.0 / rpm) + 1  # rpm
    r = simulate(s, 0.1, 0.01, progress=False)
    assert r["g2.y"][-1] == pytest.approx(3 * (w * rpm), rel=1e-14)
    back = _round_trip(s, tmp_path)
    assert simulate(back, 0.1, 0.01, progress=False)["g2.y"][-1] == r["g2.y"][-1]


def test_isolated_run_keeps_the_connection_transformations(mass_fmu, tmp_path):
    plain = write_ssp(without_feedthrough(mass_fmu), tmp_path / "plain.ssd", stop_time=1.0, step=0.01)
    text = plain.read_text().replace(
        'startElement="a" startConnector="x" endElement="b" endConnector="xin"/>',
        'startElement="a" startConnector="x" endElement="b" endConnector="xin">'
        '<ssc:LinearTransformation factor="0.5" offset="0.1"/></ssd:Connection>')
    (tmp_path / "linear.ssd").write_text(text)
    s = read_ssp(tmp_path / "linear.ssd", allow_external=True)
    ours = simulate(s, 1.0, 0.01, progress=False)
    isolated = simulate(read_ssp(tmp_path / "linear.ssd", allow_external=True), 1.0, 0.01, progress=False, isolate=True)
    assert np.array_equal(ours["b.x"], isolated["b.x"])


def test_unsupported_binding_content_is_listed_in_one_error(mass_fmu, tmp_path):
    comp = lambda name, binding: f'<ssd:Component name="{name}" source="resources/mass.fmu">{binding}</ssd:Component>'
    in_fmu = '<ssd:ParameterBindings><ssd:ParameterBinding source="resources/p.ssv" sourceBase="component"/></ssd:ParameterBindings>'
    cdf = '<ssd:ParameterBindings><ssd:ParameterBinding source="p.cdf" type="application/x-cdf"/></ssd:ParameterBindings>'
    enum = mapping_binding(PARAMS, '<ssd:ParameterMapping><ssm:ParameterMapping version="1.0"><ssm:MappingEntry source="d" '
                    'target="d"><ssc:EnumerationMappingTransformation><ssc:MapEntry source="a" target="1"/>'
                    "</ssc:EnumerationMappingTransformation></ssm:MappingEntry></ssm:ParameterMapping></ssd:ParameterMapping>",
                    units=GRAM)
    body = f"<ssd:Elements>{comp('a', in_fmu)}{comp('b', cdf)}{comp('c', enum)}</ssd:Elements>"
    with pytest.raises(CosimError) as e:
        read_ssp(mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu}))
    msg = str(e.value)
    assert "(3 problems)" in msg
    assert "component 'a': parameter binding: sourceBase='component' (a file inside the FMU) is not supported" in msg
    assert "component 'b': parameter binding: type 'application/x-cdf' is not supported" in msg
    assert "component 'c': inline parameter mapping: entry 'd': EnumerationMappingTransformation is not supported" in msg
