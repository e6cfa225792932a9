"""Issue 37.8: a Model Exchange FMU that returns an error ends the run in one line,
with no call on it afterwards.

fmpy's right-hand-side callback raised inside ctypes: Python printed the
traceback ("Exception ignored on calling ctypes callback function"), CVODE
got a success flag and kept calling the failed FMU (``fmi2SetTime``). Now the
callback keeps the exception and returns CVODE's error flag, the unit makes
no further call on the FMU but its freeing, and the CLI prints one line.

``cfmu/faulty_me.c``: ``dx/dt = -x``, ``x(0) = 1``; ``fmi2GetDerivatives``
returns fmi2Error past ``fail_time`` and the FMU logs every forbidden call
made on it afterwards.
"""
from __future__ import annotations

import math
import shutil
import uuid

import pytest

from cosim.fmu_build import compile_c_fmu
from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.errors import CosimError

from .conftest import HERE
from .helpers import mbfmu_cli, one_line_error

FAIL_AT = 0.5


def _model_description(guid: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="faulty_me" guid="{{{guid}}}" generationTool="mbfmu fault tests"
  numberOfEventIndicators="0">
  <ModelExchange modelIdentifier="faulty_me"/>
  <ModelVariables>
    <ScalarVariable name="fail_time" valueReference="0" causality="parameter" variability="fixed" initial="exact"><Real start="1e300"/></ScalarVariable>
    <ScalarVariable name="x" valueReference="1" causality="output" variability="continuous" initial="exact"><Real start="1"/></ScalarVariable>
    <ScalarVariable name="der(x)" valueReference="2" causality="local" variability="continuous" initial="calculated"><Real derivative="2"/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs><Unknown index="2" dependencies=""/></Outputs>
    <Derivatives><Unknown index="3" dependencies="2"/></Derivatives>
  </ModelStructure>
</fmiModelDescription>
"""


@pytest.fixture(scope="module")
def faulty_me_fmu(tmp_path_factory):
    if not (shutil.which("gcc") or shutil.which("cc")):
        pytest.skip("needs a C compiler (gcc) to build the fault FMU")
    return compile_c_fmu(HERE / "cfmu" / "faulty_me.c", tmp_path_factory.mktemp("faulty_me"), "faulty_me.fmu",
                         _model_description(str(uuid.uuid4())), optimize="-O1")


def test_the_healthy_fmu_integrates_exp_minus_t(faulty_me_fmu):
    """The control: without a fault, x(1) = exp(-1)."""
    unit = FmuUnit(faulty_me_fmu, "m")
    result = simulate(System([unit], []), 1.0, 0.1)
    assert result["m.x"][-1] == pytest.approx(math.exp(-1.0), rel=1e-4)


def test_a_model_exchange_error_stops_the_solver_and_no_call_follows(faulty_me_fmu, capfd):
    unit = FmuUnit(faulty_me_fmu, "m", values={"fail_time": FAIL_AT})
    with pytest.raises(CosimError) as e:
        simulate(System([unit], []), 1.0, 0.1)
    msg = str(e.value)
    assert "unit 'm'" in msg and "fmi2GetDerivatives" in msg
    assert "injected error in fmi2GetDerivatives" in unit.log_text()
    unit.terminate()  # what the master does at the end: freeing only
    assert "called after fmi2Error" not in unit.log_text(), unit.log_text()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    # the rows up to the failing step are right: x = exp(-t). A unit without connected
    # inputs lets CVODE step past a communication point (#35), so the error may come in
    # the step before the one that reaches FAIL_AT
    result = e.value.result
    assert FAIL_AT - 0.1 - 1e-9 <= result.time[-1] <= FAIL_AT + 1e-9
    assert result["m.x"][-1] == pytest.approx(math.exp(-result.time[-1]), rel=1e-4)


def test_the_cli_prints_one_line_for_a_model_exchange_error(faulty_me_fmu):
    p = mbfmu_cli("simulate", str(faulty_me_fmu), "--set", f"fail_time={FAIL_AT}", "--stop-time", "1",
                  "--step", "0.1", "--no-progress")
    assert p.returncode != 0
    line = one_line_error(p)
    assert "unit 'faulty_me'" in line and "fmi2GetDerivatives" in line
    assert "Exception ignored" not in p.stderr and "called after fmi2Error" not in p.stderr, p.stderr
