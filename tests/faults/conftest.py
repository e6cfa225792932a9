"""Session fixtures of the fault-injection suite: misbehaving FMUs built here.

* ``faulty_c_fmu``: a C FMU (``cfmu/faulty.c``, compiled with gcc) that returns
  fmi2Discard, fmi2Error, fmi2Fatal, dereferences NULL, gives NaN, hangs or
  asks to stop, from ``fail_time`` on, as its ``mode`` parameter says;
* ``faulty_py_fmu``: a pythonfmu FMU (``pyfmu/faulty.py``) that raises, hangs
  or gives NaN.
"""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from cosim.fmu_build import build_python_fmu, compile_c_fmu

HERE = Path(__file__).parent

# name, causality, variability, start[, value reference] (default: the position, as in faulty.c)
FAULTY_VARS = [("fail_time", "parameter", "fixed", 1e300), ("mode", "parameter", "fixed", 0.0),
               ("u", "input", "continuous", 0.0), ("y", "output", "continuous", None),
               ("x", "output", "continuous", None)]
FAULTY_DEPS = {"y": ["u"], "x": []}  # output -> the inputs it depends on directly


def faulty_model_description(guid: str, variables=FAULTY_VARS) -> str:
    """The modelDescription.xml of ``faulty.c`` (``variables`` may be altered by a test)."""
    rows = []
    for k, (name, caus, var, start, *ref) in enumerate(variables):
        vr = ref[0] if ref else k
        init = ' initial="exact"' if caus == "parameter" else (' initial="calculated"' if caus == "output" else "")
        st = "" if start is None else f' start="{start}"'
        rows.append(f'    <ScalarVariable name="{name}" valueReference="{vr}" causality="{caus}" '
                    f'variability="{var}"{init}><Real unit="1"{st}/></ScalarVariable>')
    index = {v[0]: k + 1 for k, v in enumerate(variables)}  # ModelStructure indices are 1-based positions
    outs = "\n".join(f'      <Unknown index="{index[o]}" dependencies="{" ".join(str(index[i]) for i in ins)}"/>'
                     for o, ins in FAULTY_DEPS.items() if o in index)
    inits = "\n".join(f'      <Unknown index="{index[o]}"/>' for o in FAULTY_DEPS if o in index)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="faulty" guid="{{{guid}}}" generationTool="mbfmu fault tests"
  variableNamingConvention="structured" numberOfEventIndicators="0">
  <CoSimulation modelIdentifier="faulty" canHandleVariableCommunicationStepSize="true"/>
  <UnitDefinitions><Unit name="1"/></UnitDefinitions>
  <ModelVariables>
{chr(10).join(rows)}
  </ModelVariables>
  <ModelStructure>
    <Outputs>
{outs}
    </Outputs>
    <InitialUnknowns>
{inits}
    </InitialUnknowns>
  </ModelStructure>
</fmiModelDescription>
"""


def build_faulty_c_fmu(outdir: Path, model_description: str | None = None) -> Path:
    """Compile ``cfmu/faulty.c`` into ``outdir/faulty.fmu`` (optionally with another model description)."""
    return compile_c_fmu(HERE / "cfmu" / "faulty.c", outdir, "faulty.fmu",
                         model_description or faulty_model_description(str(uuid.uuid4())), optimize="-O1")


@pytest.fixture(scope="session")
def faults_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fault_fmus")


@pytest.fixture(scope="session")
def faulty_c_fmu(faults_dir):
    return build_faulty_c_fmu(faults_dir / "c")


@pytest.fixture(scope="session")
def faulty_py_fmu(faults_dir):
    # an absolute script path passes through fmu_build's pyfmu/ folder join
    return build_python_fmu(str(HERE / "pyfmu" / "faulty"), faults_dir / "py")
