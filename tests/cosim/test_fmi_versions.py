"""The FMI version table (mbfmu.cosim.fmi.fmi_versions) says what the standards'
own headers say, and it is the only place where the FMI 2.0 and 3.0 units differ.

The headers are the standards' (``fmi2TypesPlatform.h``, ``fmi3PlatformTypes.h``
and the function types, shipped with the native runtime and checked against the
published ones by tests/test_c_sources.py): each value type's C type, whether a
get/set call takes the number of values, the shape of ``DoStep``, and the calls
one version has and the other not.
"""
from __future__ import annotations

import ctypes
import re
from pathlib import Path

import pytest

import mbfmu
from mbfmu.cosim.fmi.fmu3_unit import Fmu3Unit
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.fmi.fmi_versions import FMI2, FMI3
from mbfmu.cosim.fmi.fmu_me import Fmu3MeUnit, FmuMeUnit
from tooling import reference_fmu

HEADERS = Path(mbfmu.__file__).parent / "fmu" / "native" / "fmi_headers"
C_TYPES = {"double": ctypes.c_double, "float": ctypes.c_float, "int": ctypes.c_int, "bool": ctypes.c_bool,
           "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8, "int16_t": ctypes.c_int16, "uint16_t": ctypes.c_uint16,
           "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
           "uint64_t": ctypes.c_uint64, "const fmi2Char*": ctypes.c_char_p, "const fmi3Char*": ctypes.c_char_p}
VERSIONS = {2: (FMI2, "fmi2TypesPlatform.h", "fmi2FunctionTypes.h"), 3: (FMI3, "fmi3PlatformTypes.h",
                                                                         "fmi3FunctionTypes.h")}


def _typedefs(header: str) -> dict[str, str]:
    text = (HEADERS / header).read_text()
    return {m.group(2): " ".join(m.group(1).split()) for m in re.finditer(r"typedef\s+([\w\s*]+?)\s*(fmi\d\w+)\s*;", text)}


def _parameters(header: str, function: str) -> int:
    """The number of parameters of ``functionTYPE`` in a function-types header."""
    m = re.search(rf"typedef\s+fmi\dStatus\s+{function}TYPE\s*\(([^)]*)\)", (HEADERS / header).read_text())
    assert m, function
    return len(m.group(1).split(","))


@pytest.mark.parametrize("number", [2, 3])
def test_each_value_type_has_the_c_type_of_the_standard_header(number):
    fmi, platform, _ = VERSIONS[number]
    typedefs = _typedefs(platform)
    for declared, vt in fmi.types.items():
        c_name = typedefs[f"{fmi.prefix}{vt.api}"]
        assert vt.ctype is C_TYPES[c_name], (declared, c_name)


@pytest.mark.parametrize("number", [2, 3])
def test_the_calls_have_the_shape_of_the_standard_function_types(number):
    fmi, _, functions = VERSIONS[number]
    for vt in fmi.types.values():
        for verb in ("Get", "Set"):
            # instance, value references, their number, values (and FMI 3: the number of values)
            assert _parameters(functions, fmi.call(verb, vt)) == 4 + fmi.values_counted, fmi.call(verb, vt)
    # FMI 3 DoStep returns eventHandlingNeeded, terminateSimulation, earlyReturn, lastSuccessfulTime
    assert _parameters(functions, f"{fmi.prefix}DoStep") == 4 + 4 * fmi.step_flags
    text = (HEADERS / functions).read_text()
    assert (fmi.input_derivatives is not None) == ("SetRealInputDerivativesTYPE" in text)
    assert fmi.terminated_status == ("GetBooleanStatusTYPE" in text)


def test_fmi3_differs_from_fmi2_only_in_its_row_of_the_table():
    """The FMI 3.0 classes add no exchange, step, set-up or rollback code of their
    own: one class runs both versions (a second copy would reappear here)."""
    shared = {"setup", "push", "pull", "do_step", "getter", "push_derivatives", "connect_inputs", "terminate",
              "get_state", "set_state", "free_state", "_bufs", "_groups", "_variables", "_set_values", "_bind"}
    assert not shared & set(vars(Fmu3Unit)), shared & set(vars(Fmu3Unit))
    assert Fmu3Unit.fmi is FMI3 and FmuUnit.fmi is FMI2
    assert set(vars(FmuMeUnit)) <= {"__module__", "__doc__", "__qualname__", "__firstlineno__", "__static_attributes__"}
    assert set(vars(Fmu3MeUnit)) <= set(vars(FmuMeUnit)) | {"__annotations__"}
    assert FmuMeUnit.fmi is FMI2 and Fmu3MeUnit.fmi is FMI3


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
def test_a_recorded_subset_reads_what_the_outputs_read(version):
    """``getter`` and ``pull`` read the same FMU values (Feedthrough: outputs equal
    the inputs set, one call per value type)."""
    u = FmuUnit(reference_fmu(version, "Feedthrough"), "f", values={"Int32_input": 7, "Boolean_input": True})
    u.setup(0.0, 1.0, 0.1)
    try:
        names = [n for n in u.outputs if not n.startswith(("String", "Binary"))]
        got = u.getter(names)()
        assert [got[k] for k in range(len(names))] == [u.y[u.outputs.index(n)] for n in names]
        assert got[names.index("Int32_output")] == 7.0 and got[names.index("Boolean_output")] == 1.0
    finally:
        u.terminate()
