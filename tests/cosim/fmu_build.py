"""Build the small test FMUs of the co-simulation tests (and the benchmark).

* C FMUs (no Python inside) from ``cfmu/*.c`` (``clock`` checks the time it
  is given and can hang inside a step), compiled with the machine's
  ``gcc`` against the FMI 2.0 headers that fmpy installs, with a
  ``modelDescription.xml`` written here;
* pythonfmu FMUs from ``pyfmu/*.py`` with ``pythonfmu build``, given mbfmu's
  loader shim (:func:`mbfmu.fmu.add_loader_shim`: pythonfmu 0.7's own binary
  can crash the process at exit).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import fmpy

from mbfmu.fmu import add_loader_shim
from tooling import zip_folder

HERE = Path(__file__).parent
FMI_HEADERS = Path(fmpy.__file__).parent / "c-code"

# (name, causality, variability, unit, start, type) in value-reference order per type
_P = ("parameter", "fixed")
MASS_VARS = [
    ("m", *_P, "kg", 1.0), ("k", *_P, "N/m", 0.0), ("d", *_P, "N.s/m", 0.0),
    ("kc", *_P, "N/m", 0.0), ("dc", *_P, "N.s/m", 0.0), ("x0", *_P, "m", 0.0),
    ("v0", *_P, "m/s", 0.0), ("fail_time", *_P, "s", 1e300),
    ("F", "input", "continuous", "N", 0.0), ("xin", "input", "continuous", "m", 0.0),
    ("vin", "input", "continuous", "m/s", 0.0),
    ("x", "output", "continuous", "m", None), ("v", "output", "continuous", "m/s", None),
    ("Fc", "output", "continuous", "N", None),
]
MASS_INTS = [("nsub", *_P, None, 20)]
# output -> inputs it depends on directly
MASS_DEPS = {"x": [], "v": [], "Fc": ["xin", "vin"]}

GAIN_VARS = [
    ("k", *_P, "1", 1.0), ("b", *_P, "1", 0.0), ("fail_time", *_P, "s", 1e300),
    ("u", "input", "continuous", "1", 0.0), ("w", "input", "continuous", "1", 0.0),
    ("y", "output", "continuous", "1", None),
]
GAIN_INTS = [("mode", "input", "discrete", None, 0)]
GAIN_DEPS = {"y": ["u", "w"]}

CLOCK_VARS = [
    ("fail_time", *_P, "s", 1e300), ("hang_time", *_P, "s", 1e300),
    ("u", "input", "continuous", "1", 0.0), ("y", "output", "continuous", "1", None),
    ("acc", "output", "continuous", "s", None), ("drift", "output", "continuous", "s", None),
    ("last_t", "output", "continuous", "s", None), ("missed", "output", "continuous", "1", None),
    ("z", "output", "continuous", "1", None), ("restore_error", *_P, "1", 0.0),
]
CLOCK_INTS: list = []
CLOCK_DEPS = {"y": ["u"], "acc": [], "drift": [], "last_t": [], "missed": [], "z": []}

MODELS = {"mass": (MASS_VARS, MASS_INTS, MASS_DEPS), "gain": (GAIN_VARS, GAIN_INTS, GAIN_DEPS),
          "clock": (CLOCK_VARS, CLOCK_INTS, CLOCK_DEPS)}


def _model_description(name: str, guid: str) -> str:
    reals, ints, deps = MODELS[name]
    units = sorted({v[3] for v in reals if v[3]})
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<fmiModelDescription fmiVersion="2.0" modelName="{name}" guid="{{{guid}}}" '
        'generationTool="mbfmu tests" variableNamingConvention="structured" numberOfEventIndicators="0">',
        f'  <CoSimulation modelIdentifier="{name}" canHandleVariableCommunicationStepSize="true" '
        'canInterpolateInputs="true" maxOutputDerivativeOrder="0" canGetAndSetFMUstate="true" '
        'canSerializeFMUstate="true"/>',
        "  <UnitDefinitions>",
        *[f'    <Unit name="{u}"/>' for u in units],
        "  </UnitDefinitions>",
        "  <ModelVariables>",
    ]
    index = {}
    for typ, table in (("Real", reals), ("Integer", ints)):
        for vr, (vname, caus, var, unit, start) in enumerate(table):
            index[vname] = len(index) + 1
            attrs = f'name="{vname}" valueReference="{vr}" causality="{caus}" variability="{var}"'
            if caus == "output":
                attrs += ' initial="calculated"'
            elif caus == "parameter":
                attrs += ' initial="exact"'
            inner = f"<{typ}"
            if unit and typ == "Real":
                inner += f' unit="{unit}"'
            if start is not None:
                inner += f' start="{start!r}"'
            lines.append(f"    <ScalarVariable {attrs}>{inner}/></ScalarVariable>")
    lines.append("  </ModelVariables>")
    lines.append("  <ModelStructure>")
    lines.append("    <Outputs>")
    for out, ins in deps.items():
        d = " ".join(str(index[i]) for i in ins)
        lines.append(f'      <Unknown index="{index[out]}" dependencies="{d}"/>')
    lines.append("    </Outputs>")
    lines.append("    <InitialUnknowns>")
    for out in deps:
        lines.append(f'      <Unknown index="{index[out]}"/>')
    lines.append("    </InitialUnknowns>")
    lines.append("  </ModelStructure>")
    lines.append("</fmiModelDescription>")
    return "\n".join(lines) + "\n"


def compile_c_fmu(source: Path, outdir: Path, fmu_name: str, model_description: str, *,
                  platform: str = "linux64", optimize: str = "-O2") -> Path:
    """Compile the C file ``source`` into ``outdir/<fmu_name>`` with ``model_description``
    as its ``modelDescription.xml`` and return the FMU's path.

    The shared library is named after ``source`` (its model identifier) and goes to
    ``binaries/<platform>/`` (``linux64`` for FMI 2.0, ``x86_64-linux`` for FMI 3.0),
    compiled with gcc at ``optimize`` against fmpy's FMI headers and the headers
    beside ``source``.
    """
    source, outdir = Path(source), Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"_{Path(fmu_name).stem}_build", dir=outdir))
    lib = work / "binaries" / platform / f"{source.stem}.so"
    lib.parent.mkdir(parents=True, exist_ok=True)
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise RuntimeError("no C compiler (gcc or cc) on PATH to build the test C FMUs")
    subprocess.run([cc, "-shared", "-fPIC", optimize, "-Wall", f"-I{FMI_HEADERS}", f"-I{source.parent}",
                    "-o", str(lib), str(source), "-lm"], check=True)
    (work / "modelDescription.xml").write_text(model_description)
    fmu = zip_folder(work, outdir / fmu_name)
    shutil.rmtree(work)
    return fmu


def build_c_fmu(name: str, outdir: Path) -> Path:
    """Compile ``cfmu/<name>.c`` into ``outdir/<name>.fmu`` and return its path."""
    return compile_c_fmu(HERE / "cfmu" / f"{name}.c", outdir, f"{name}.fmu",
                         _model_description(name, str(uuid.uuid4())))


def build_python_fmu(script: str, outdir: Path, *options: str) -> Path:
    """Build ``pyfmu/<script>.py`` with ``pythonfmu build`` into ``outdir``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([sys.executable, "-m", "pythonfmu", "build", "-f", str(HERE / "pyfmu" / f"{script}.py"),
                    "-d", str(outdir), *options], check=True, capture_output=True, env=env)
    fmus = sorted(outdir.glob("*.fmu"), key=lambda p: p.stat().st_mtime)
    return add_loader_shim(fmus[-1])


TICKER3_XML = """<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="Ticker3" instantiationToken="{token}">
 <CoSimulation modelIdentifier="ticker3" canHandleVariableCommunicationStepSize="true" hasEventMode="true"
               mightReturnEarlyFromDoStep="true"/>
 <ModelVariables>
  <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
  <Float64 name="period" valueReference="1" causality="parameter" variability="fixed" start="0.37"/>
  <Float64 name="first" valueReference="2" causality="parameter" variability="fixed" start="0.1234567891234"/>
  <Float64 name="x" valueReference="3" causality="output" variability="continuous"/>
  <Float64 name="t_event" valueReference="4" causality="output" variability="discrete" clocks="6"/>
  <Int32 name="count" valueReference="5" causality="output" variability="discrete" clocks="6"/>
  <Clock name="tick" valueReference="6" causality="output" intervalVariability="triggered"/>
  <Clock name="kick" valueReference="7" causality="input" intervalVariability="triggered"/>
  <Int32 name="kicks" valueReference="8" causality="output" variability="discrete" clocks="7"/>
  <Float64 name="kick_time" valueReference="9" causality="output" variability="discrete" clocks="7"/>
 </ModelVariables>
 <ModelStructure>
  <Output valueReference="3" dependencies=""/>
  <Output valueReference="4" dependencies=""/>
  <Output valueReference="5" dependencies=""/>
  <Output valueReference="6" dependencies=""/>
  <Output valueReference="8" dependencies="7"/>
  <Output valueReference="9" dependencies="7"/>
  <InitialUnknown valueReference="3"/>
  <InitialUnknown valueReference="6"/>
 </ModelStructure>
</fmiModelDescription>
"""


SAMPLER3_XML = """<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="Sampler3" instantiationToken="{token}">
 <ScheduledExecution modelIdentifier="ticker3"/>
 <ModelVariables>
  <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
  <Float64 name="t_event" valueReference="4" causality="output" variability="discrete" clocks="10"/>
  <Int32 name="count" valueReference="5" causality="output" variability="discrete" clocks="10"/>
  <Int32 name="kicks" valueReference="8" causality="output" variability="discrete" clocks="11"/>
  <Float64 name="kick_time" valueReference="9" causality="output" variability="discrete" clocks="11"/>
  <Clock name="sample" valueReference="10" causality="input" intervalVariability="constant" intervalDecimal="0.5"
         priority="0"/>
  <Clock name="later" valueReference="11" causality="input" intervalVariability="countdown" priority="1"/>
  <Float64 name="delay" valueReference="12" causality="parameter" variability="fixed" start="0.25"/>
 </ModelVariables>
 <ModelStructure>
  <Output valueReference="4" dependencies="10"/>
  <Output valueReference="5" dependencies="10"/>
  <Output valueReference="8" dependencies="11"/>
  <Output valueReference="9" dependencies="11"/>
 </ModelStructure>
</fmiModelDescription>
"""


PERIODIC_SAMPLE_XML = """  <Clock name="sample" valueReference="10" causality="input" intervalVariability="constant"
         intervalDecimal="{interval!r}"/>
  <Float64 name="xs" valueReference="13" causality="output" variability="discrete" clocks="10"/>
"""


def build_ticker3(outdir: Path, scheduled: bool = False, model_exchange: bool = False,
                  periodic: float | None = None, asked: bool = False) -> Path:
    """Compile ``cfmu/ticker3.c`` into ``outdir/Ticker3.fmu`` (FMI 3.0 co-simulation with
    event mode and an output clock inside steps) or, with ``scheduled``,
    ``outdir/Sampler3.fmu`` (the same binary as FMI 3.0 Scheduled Execution with a
    periodic and a countdown clock), against fmpy's FMI 3.0 headers. ``model_exchange``
    declares Ticker3's clocks under a Model Exchange interface instead (the binary has
    none). ``periodic`` adds the periodic input clock ``sample`` with that interval [s]
    (constant) and its clocked output ``xs`` to Ticker3. ``asked`` declares Sampler3's
    ``sample`` fixed without an interval (the FMU gives 0.75 s)."""
    xml = SAMPLER3_XML if scheduled else TICKER3_XML
    if periodic is not None:
        xml = xml.replace(" </ModelVariables>", PERIODIC_SAMPLE_XML.format(interval=periodic) + " </ModelVariables>")
        xml = xml.replace('clocks="6"/>', 'clocks="6 10"/>').replace(
            '  <InitialUnknown valueReference="3"/>', '  <Output valueReference="13" dependencies=""/>\n'
                                                      '  <InitialUnknown valueReference="3"/>')
    if asked:
        xml = xml.replace('intervalVariability="constant" intervalDecimal="0.5"', 'intervalVariability="fixed"')
        assert 'intervalVariability="fixed"' in xml
    if model_exchange:
        xml = xml.replace('<CoSimulation modelIdentifier="ticker3"', '<ModelExchange modelIdentifier="ticker3"')
        xml = xml.replace(' hasEventMode="true"\n               mightReturnEarlyFromDoStep="true"', '')
    return compile_c_fmu(HERE / "cfmu" / "ticker3.c", outdir, "Sampler3.fmu" if scheduled else "Ticker3.fmu",
                         xml.format(token=uuid.uuid4()), platform="x86_64-linux")


SAMPLER_ME3_XML = """<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="SamplerMe3" instantiationToken="{token}">
 <ModelExchange modelIdentifier="sampler_me3" needsCompletedIntegratorStep="false"/>
 <ModelVariables>
  <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
  <Float64 name="x" valueReference="1" causality="output" variability="continuous" initial="exact" start="1"/>
  <Float64 name="der(x)" valueReference="2" causality="local" variability="continuous" derivative="1"/>
  <Float64 name="v" valueReference="3" causality="local" variability="continuous" initial="exact" start="0"/>
  <Float64 name="der(v)" valueReference="4" causality="local" variability="continuous" derivative="3"/>
  <Float64 name="k" valueReference="5" causality="input" variability="discrete" clocks="10" start="1"/>
  <Float64 name="xs" valueReference="6" causality="output" variability="discrete" clocks="10"/>
  <Int32 name="count" valueReference="7" causality="output" variability="discrete" clocks="10"/>
  <Float64 name="ts" valueReference="8" causality="output" variability="discrete" clocks="10"/>
  <Float64 name="w" valueReference="9" causality="parameter" variability="fixed" start="2"/>
  <Clock name="sample" valueReference="10" causality="input" intervalVariability="constant"
         intervalDecimal="{interval}" shiftDecimal="{shift}"/>
  <Clock name="cross" valueReference="11" causality="output" intervalVariability="triggered"/>
  <Float64 name="t_cross" valueReference="12" causality="output" variability="discrete" clocks="11"/>
  <Clock name="kick" valueReference="13" causality="input" intervalVariability="triggered"/>
  <Int32 name="kicks" valueReference="14" causality="output" variability="discrete" clocks="13"/>
  <Float64 name="kick_time" valueReference="15" causality="output" variability="discrete" clocks="13"/>
 </ModelVariables>
 <ModelStructure>
  <Output valueReference="1" dependencies=""/>
  <Output valueReference="6" dependencies="5 10"/>
  <Output valueReference="7" dependencies="10"/>
  <Output valueReference="8" dependencies="10"/>
  <Output valueReference="11" dependencies=""/>
  <Output valueReference="12" dependencies=""/>
  <Output valueReference="14" dependencies="13"/>
  <Output valueReference="15" dependencies="13"/>
  <ContinuousStateDerivative valueReference="2"/>
  <ContinuousStateDerivative valueReference="4"/>
  <InitialUnknown valueReference="2"/>
  <InitialUnknown valueReference="4"/>
  <EventIndicator valueReference="1"/>
 </ModelStructure>
</fmiModelDescription>
"""


def build_sampler_me3(outdir: Path, interval: float = 0.3, shift: float = 0.1, asked: bool = False) -> Path:
    """Compile ``cfmu/sampler_me3.c`` into ``outdir/SamplerMe3.fmu``: FMI 3.0 Model Exchange
    with a periodic input clock ``sample`` (``interval``, ``shift`` [s]), an output clock
    fired by a state event and a triggered input clock, against fmpy's FMI 3.0 headers.
    ``asked`` declares ``sample`` fixed without interval and shift (the FMU gives 0.3 s
    and 0.1 s)."""
    xml = SAMPLER_ME3_XML.format(token=uuid.uuid4(), interval=interval, shift=shift)
    if asked:
        xml = xml.replace(f'intervalVariability="constant"\n         intervalDecimal="{interval}" shiftDecimal="{shift}"',
                          'intervalVariability="fixed"')
        assert 'intervalVariability="fixed"' in xml
    return compile_c_fmu(HERE / "cfmu" / "sampler_me3.c", outdir, "SamplerMe3.fmu", xml, platform="x86_64-linux")
