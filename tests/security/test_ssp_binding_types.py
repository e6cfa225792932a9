"""Issue 37.13: SSP parameter bindings are type-checked, and degenerate units refused, at load.

An ``ssv:String "3"`` bound to a Real parameter was accepted (the run's
metadata then recorded a string), an ``ssv:Boolean`` became 1.0, ``"abc"``
failed only at initialization (exit 3), and a unit with ``BaseUnit
factor="0"`` ended in ZeroDivisionError. Now each is refused when the SSP is
read, naming the parameter or the unit.
"""
from __future__ import annotations

import zipfile

import pytest
from tooling import reference_fmu

from mbfmu.cosim import read_ssp
from mbfmu.errors import CosimError

HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="s"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
"""


def _ssp(tmp_path, value: str, units: str = "", connector_unit: str = "") -> object:
    """Dahlquist (``der(x) = -k x``, ``k`` a Real parameter) with ``k`` bound to ``value``."""
    binding = f"""<ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues>
      <ssv:ParameterSet version="1.0" name="set"><ssv:Parameters>
        <ssv:Parameter name="k">{value}</ssv:Parameter></ssv:Parameters></ssv:ParameterSet>
      </ssd:ParameterValues></ssd:ParameterBinding></ssd:ParameterBindings>"""
    conn = (f'<ssd:Connectors><ssd:Connector name="k" kind="parameter"><ssc:Real unit="{connector_unit}"/>'
            '</ssd:Connector></ssd:Connectors>') if connector_unit else ""
    ssd = (HEAD + f'<ssd:System name="s"><ssd:Elements><ssd:Component name="d" source="resources/d.fmu">{conn}'
           f'{binding}</ssd:Component></ssd:Elements></ssd:System>{units}</ssd:SystemStructureDescription>\n')
    path = tmp_path / "bind.ssp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", ssd)
        z.write(reference_fmu("fmi2", "Dahlquist"), "resources/d.fmu")
    return path


def test_a_real_bound_to_a_real_parameter_is_applied(tmp_path):
    """The control (an Integer may set a Real)."""
    assert read_ssp(_ssp(tmp_path, '<ssv:Real value="3"/>')).units["d"].values == {"k": 3.0}
    assert read_ssp(_ssp(tmp_path, '<ssv:Integer value="2"/>')).units["d"].values == {"k": 2.0}


@pytest.mark.parametrize("value, typ, shown", [
    ('<ssv:String value="3"/>', "String", "'3'"),
    ('<ssv:String value="abc"/>', "String", "'abc'"),
    ('<ssv:Boolean value="true"/>', "Boolean", "True"),
])
def test_a_value_of_another_type_is_refused_at_load_by_name(tmp_path, value, typ, shown):
    with pytest.raises(CosimError) as e:
        read_ssp(_ssp(tmp_path, value))
    msg = str(e.value)
    assert f"component 'd': parameter binding 'k': ssv:{typ} value {shown} bound to Real variable 'k'" in msg


def test_a_unit_with_factor_zero_is_refused_by_name(tmp_path):
    zero = '<ssd:Units><ssc:Unit name="zero_m"><ssc:BaseUnit m="1" factor="0"/></ssc:Unit></ssd:Units>'
    with pytest.raises(CosimError, match=r"unit 'zero_m': BaseUnit factor=0\.0"):
        read_ssp(_ssp(tmp_path, '<ssv:Real value="3" unit="m"/>', zero, connector_unit="zero_m"))


def test_a_parameter_set_unit_with_factor_zero_is_refused_by_name(tmp_path):
    value = '<ssv:Real value="3" unit="zero_m"/>'
    path = _ssp(tmp_path, value)
    text = zipfile.ZipFile(path).read("SystemStructure.ssd").decode().replace(
        "</ssv:Parameters></ssv:ParameterSet>",
        '</ssv:Parameters><ssv:Units><ssc:Unit name="zero_m"><ssc:BaseUnit m="1" factor="0"/></ssc:Unit>'
        "</ssv:Units></ssv:ParameterSet>")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", text)
        z.write(reference_fmu("fmi2", "Dahlquist"), "resources/d.fmu")
    with pytest.raises(CosimError, match=r"unit 'zero_m': BaseUnit factor=0\.0"):
        read_ssp(path)
